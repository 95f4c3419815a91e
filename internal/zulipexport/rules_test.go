package zulipexport

import "testing"

func TestHuddleHash_IsZulipsGetHuddleHash(t *testing.T) {
	// hashlib.sha1("10,11,12".encode()).hexdigest()
	if got := HuddleHash([]uint64{10, 11, 12}); got != "2e0ea36a6bc8fb2123ea993a873c08b8eb6b1aa5" {
		t.Errorf("got %s", got)
	}
}

func TestTimestamp_IsSecondsOrNull(t *testing.T) {
	if got := Timestamp(0); got != nil {
		t.Errorf("Timestamp(0): got %v, want nil", got)
	}
	if got := Timestamp(1600000001); got != 1600000001.0 {
		t.Errorf("Timestamp(1600000001): got %v", got)
	}
	half := 1600000001.5
	if got := UnixSeconds(&half); got != 1600000001 {
		t.Errorf("UnixSeconds(1600000001.5): got %d", got)
	}
	if got := UnixSeconds(nil); got != 0 {
		t.Errorf("UnixSeconds(nil): got %d", got)
	}
}

func TestRewriteUploadLinks_PointsKnownLinksToTheirNewPaths(t *testing.T) {
	paths := map[string]string{"5/ab/cdef/plan.txt": "2/XYZ/plan.txt"}
	for text, want := range map[string]string{
		"see /user_uploads/5/ab/cdef/plan.txt.":               "see /user_uploads/2/XYZ/plan.txt.",
		`<a href="/user_uploads/5/ab/cdef/plan.txt">plan</a>`: `<a href="/user_uploads/2/XYZ/plan.txt">plan</a>`,
		"[plan](/user_uploads/5/ab/cdef/plan.txt)!":           "[plan](/user_uploads/2/XYZ/plan.txt)!",
		"another: /user_uploads/5/ab/other/notes.txt":         "another: /user_uploads/5/ab/other/notes.txt",
		"no link at all": "no link at all",
	} {
		if got := RewriteUploadLinks(text, paths); got != want {
			t.Errorf("%q: got %q, want %q", text, got, want)
		}
	}
	if text := "/user_uploads/5/ab/cdef/plan.txt"; RewriteUploadLinks(text, nil) != text {
		t.Errorf("no paths: the text changed")
	}
}
