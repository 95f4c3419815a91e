package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func pngOf(t *testing.T, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, h/2, color.RGBA{200, 0, 0, 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestAvatars_DefaultIsServedWithoutAnyOutsideCall(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.alice)
	avatar := r.str("avatar_url")
	if !strings.HasPrefix(avatar, "/user_avatars/default/") {
		t.Fatalf("avatar_url %q: want the served default", avatar)
	}
	rec := e.fetch(t, nil, avatar)
	img, err := png.Decode(rec.Body)
	if rec.Code != 200 || err != nil || img.Bounds().Dx() != defaultAvatarPixel {
		t.Fatalf("the default avatar: got %d, %v", rec.Code, err)
	}
	// client_gravatar: null, for the client to compute, as Zulip answers.
	r = e.request(t, http.MethodGet, "/api/v1/users/"+idKey(e.alice), url.Values{"client_gravatar": {"true"}}, &e.bob)
	if u := object(r.body["user"]); u["avatar_url"] != nil {
		t.Errorf("client_gravatar true: avatar_url %v, want null", u["avatar_url"])
	}
	// Nothing of the server names Gravatar any more.
	for _, params := range []url.Values{{"client_gravatar": {"false"}}, nil} {
		r := e.registerQueue(t, &e.alice, params)
		if strings.Contains(r.raw, "gravatar.com") {
			t.Errorf("register %v names gravatar.com", params)
		}
	}
}

func TestAvatars_UploadThenEveryoneSeesIt(t *testing.T) {
	e := newTestEnv(t)
	bobQueue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["realm_user"]`}}).str("queue_id")
	r := e.upload(t, &e.alice, "/api/v1/users/me/avatar", uploadPart{"file", "me.png", "image/png", pngOf(t, 300, 200)})
	wantAPISuccess(t, r)
	small := r.str("avatar_url")
	if !strings.HasPrefix(small, "/user_avatars/2/") || !strings.HasSuffix(small, ".png?version=2") {
		t.Fatalf("avatar_url: got %q", small)
	}
	rec := e.fetch(t, nil, small) // served without credentials, as Zulip's avatars
	img, err := png.Decode(rec.Body)
	if rec.Code != 200 || err != nil || img.Bounds().Dx() != avatarSize || img.Bounds().Dy() != avatarSize {
		t.Fatalf("the uploaded avatar: got %d %v", rec.Code, err)
	}
	got := e.pollNow(t, &e.bob, bobQueue, -1)
	if len(got) != 1 || object(got[0]["person"])["avatar_url"] != small || object(got[0]["person"])["avatar_source"] != "U" || object(got[0]["person"])["avatar_version"] != 2.0 {
		t.Errorf("bob's realm_user event: got %v", got)
	}
	// Uploaded avatars are given even to client_gravatar clients.
	r = e.request(t, http.MethodGet, "/api/v1/users/"+idKey(e.alice), url.Values{"client_gravatar": {"true"}}, &e.bob)
	if u := object(r.body["user"]); u["avatar_url"] != small || u["avatar_version"] != 2.0 {
		t.Errorf("GET the user after the upload: got %v", u)
	}
	reg := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["realm_user"]`}})
	if reg.body["avatar_source"] != "U" || reg.body["avatar_url"] != small || !strings.HasPrefix(reg.str("avatar_url_medium"), "/user_avatars/2/") {
		t.Errorf("register's own avatar: %v %v %v", reg.body["avatar_source"], reg.body["avatar_url"], reg.body["avatar_url_medium"])
	}
	// Back to the default.
	r = e.request(t, http.MethodDelete, "/api/v1/users/me/avatar", nil, &e.alice)
	wantAPISuccess(t, r)
	if !strings.HasPrefix(r.str("avatar_url"), "/user_avatars/default/") {
		t.Errorf("after DELETE: avatar_url %q", r.str("avatar_url"))
	}
	if rec := e.fetch(t, nil, small); rec.Code != http.StatusNotFound {
		t.Errorf("an avatar nobody shows any more: got %d, want 404", rec.Code)
	}
}

func TestAvatars_Refusals(t *testing.T) {
	t.Parallel() // independent of the other tests: its own store or server
	e := newTestEnv(t)
	for _, c := range []struct {
		rule  string
		parts []uploadPart
		msg   string
	}{
		{"one avatar", nil, "You must upload exactly one avatar."},
		{"not two", []uploadPart{{"a", "a.png", "image/png", pngOf(t, 10, 10)}, {"b", "b.png", "image/png", pngOf(t, 10, 10)}}, "You must upload exactly one avatar."},
		{"at most 5 MiB", []uploadPart{{"file", "big.png", "image/png", strings.Repeat("x", 5<<20+1)}}, "Uploaded file is larger than the allowed limit of 5 MiB"},
		{"an image type", []uploadPart{{"file", "a.svg", "image/svg+xml", "<svg/>"}}, "Invalid image format"},
		{"an image", []uploadPart{{"file", "a.png", "image/png", "not a png"}}, "Could not decode image; did you upload an image file?"},
		{"not too many pixels", []uploadPart{{"file", "huge.png", "image/png", pngOf(t, 5000, 4000)}}, "Image size exceeds limit."},
	} {
		t.Run(c.rule, func(t *testing.T) {
			wantAPIError(t, e.upload(t, &e.alice, "/api/v1/users/me/avatar", c.parts...), http.StatusBadRequest, "BAD_REQUEST", c.msg)
			if u, _ := e.st.userByID(e.alice.ID); u.Avatar != "" || u.AvatarVersion != 0 {
				t.Errorf("a refused avatar changed the account: %+v", u)
			}
		})
	}
	if rec := e.fetch(t, nil, "/user_avatars/2/"+strings.Repeat("0", 64)+".png"); rec.Code != http.StatusNotFound {
		t.Errorf("a blob no user shows: got %d, want 404", rec.Code)
	}
}

// solidPNG is a w×h image of one colour, as a PNG.
func solidPNG(t *testing.T, w, h int, c color.RGBA) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Below --upload-disk-reserve-mib an avatar is refused as an upload is,
// with Zulip's quota error (Zulip's avatars have no error of their own
// for it), and writes nothing: its two images were written regardless.
func TestAvatars_RefusedBelowTheDiskReserve(t *testing.T) {
	t.Parallel() // its own server
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--upload-disk-reserve-mib", strconv.Itoa(1<<30)) // 1 PiB: a full disk
	owner := e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey)
	status, body := e2ePostFile(t, owner, "/api/v1/users/me/avatar", uploadPart{"file", "me.png", "image/png", pngOf(t, 300, 200)})
	wantQuotaRefusal(t, "an avatar with less free disk than the reserve", status, body)
	if blobs, temporary := storedUploads(t, db); blobs != 0 || temporary != 0 {
		t.Errorf("after the refusal: got %d blobs and %d temporary files, want none", blobs, temporary)
	}
	status, body, _ = owner.do(t, http.MethodGet, "/api/v1/users/me", nil, e2ePython)
	if status != 200 || !strings.HasPrefix(fmt.Sprint(body["avatar_url"]), "/user_avatars/default/") {
		t.Errorf("the owner after the refusal: got %d, avatar_url %v, want the default", status, body["avatar_url"])
	}
}

// A replaced or removed avatar's two images are deleted at once, not
// after the uploads' grace period, unless something still uses their
// bytes: another user's avatar, or an uploaded file.
func TestAvatars_ReplacedImagesSweptWithinTheHourUnlessStillUsed(t *testing.T) {
	t.Parallel() // its own server
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db)
	owner := e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey)
	r := e2eRunCLI(t, bin, "user", "add", "bob@example.com", "--db", db)
	r.wantOK(t, "user add")
	bob := e2eNewClient(srv.baseURL, "bob@example.com", strings.TrimSpace(r.stdout))
	red, blue := solidPNG(t, 120, 120, color.RGBA{200, 0, 0, 255}), solidPNG(t, 120, 120, color.RGBA{0, 0, 200, 255})
	setAvatar := func(c *client, who, image string) string {
		t.Helper()
		status, body := e2ePostFile(t, c, "/api/v1/users/me/avatar", uploadPart{"file", "me.png", "image/png", image})
		if status != 200 {
			t.Fatalf("%s: got %d %v, want 200", who, status, body["msg"])
		}
		return fmt.Sprint(body["avatar_url"])
	}
	// A blob let go of stays on disk (a backup copying the blobs after
	// the database still finds it), timed to fall due for the sweeper
	// within the hour instead of after the week's grace.
	wantBlobs := func(after string, kept, retired int) {
		t.Helper()
		if k, r := keptAndRetiredBlobs(t, db); k != kept || r != retired {
			t.Errorf("after %s: got %d blobs kept and %d due within the hour, want %d and %d", after, k, r, kept, retired)
		}
		if _, temporary := storedUploads(t, db); temporary != 0 {
			t.Errorf("after %s: got %d temporary files, want none", after, temporary)
		}
	}
	removeAvatar := func(c *client, who string) {
		t.Helper()
		if status, body, _ := c.do(t, http.MethodDelete, "/api/v1/users/me/avatar", nil, e2ePython); status != 200 {
			t.Fatalf("%s: got %d %v, want 200", who, status, body["msg"])
		}
	}

	setAvatar(owner, "the owner's red avatar", red)
	wantBlobs("the owner's red avatar (two sizes)", 2, 0)
	setAvatar(owner, "the owner's blue avatar", blue)
	wantBlobs("the owner's blue avatar replaced the red one", 2, 2)

	bobsURL := setAvatar(bob, "bob's blue avatar", blue) // the same images as the owner's
	wantBlobs("bob chose the owner's images", 2, 2)
	removeAvatar(owner, "the owner's DELETE")
	wantBlobs("the owner's DELETE, while bob shows the same images", 2, 2)
	resp, err := http.Get(srv.baseURL + bobsURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("bob's avatar after the owner's DELETE: got %d, want 200", resp.StatusCode)
	}

	// bob uploads his small avatar's bytes as a file: that blob stays.
	resp, err = http.Get(srv.baseURL + bobsURL)
	if err != nil {
		t.Fatal(err)
	}
	small, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if status, body := e2eUpload(t, bob, "avatar.png", small); status != 200 {
		t.Fatalf("bob's upload of his avatar's bytes: got %d %v", status, body["msg"])
	}
	removeAvatar(bob, "bob's DELETE")
	wantBlobs("bob's DELETE, while an uploaded file has his small image's bytes", 1, 3)
}

// keptAndRetiredBlobs counts the database's blobs written or used lately
// and those timed to fall due for the sweeper within the hour (older
// than the grace period less an hour: --upload-grace is a week here).
func keptAndRetiredBlobs(t *testing.T, db string) (kept, retired int) {
	t.Helper()
	shards, err := os.ReadDir(uploadsDir(db))
	if err != nil {
		t.Fatal(err)
	}
	for _, shard := range shards {
		if shard.Name() == "tmp" {
			continue
		}
		files, err := os.ReadDir(filepath.Join(uploadsDir(db), shard.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			info, err := f.Info()
			if err != nil {
				t.Fatal(err)
			}
			switch age := time.Since(info.ModTime()); {
			case age < time.Hour:
				kept++
			case age > defaultUploadGrace-2*time.Hour:
				retired++
			default:
				t.Errorf("blob %s: %v old, neither kept nor retired", f.Name(), age)
			}
		}
	}
	return kept, retired
}
