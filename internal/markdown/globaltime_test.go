package markdown

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestGlobalTime_AsZulipReadsIt: what Zulip 11 makes of each
// <time:...> text in testdata/global_times.json (global_times.py ran
// Zulip's Timestamp reading with python-dateutil 2.9.0 on 2026-11-28):
// the same moment, or the same "Invalid time format". A text whose
// reading raises in Zulip (and so fails the message) is an invalid
// time here.
func TestGlobalTime_AsZulipReadsIt(t *testing.T) {
	raw, err := os.ReadFile("testdata/global_times.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Today string       `json:"today"`
		Cases [][2]*string `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	today, err := time.Parse("2006-01-02", file.Today)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, c := range file.Cases {
		text, want := *c[0], ""
		if c[1] != nil && *c[1] != "raises" {
			want = *c[1]
		}
		got, ok := globalTime(text, today)
		if !ok {
			got = ""
		}
		if got != want {
			failed++
			t.Errorf("<time:%s> read as %q, want %q (\"\": Invalid time format)", text, got, want)
		}
	}
	t.Logf("%d of %d texts read as Zulip reads them", len(file.Cases)-failed, len(file.Cases))
}

// TestMarkdown_GlobalTimes: a global time is a <time> element with its
// moment (a time without a date on the day of sending), an invalid one
// Zulip's timestamp-error span; neither is Markdown inside.
func TestMarkdown_GlobalTimes(t *testing.T) {
	sent := time.Date(2026, 11, 28, 15, 4, 5, 0, time.UTC)
	for _, c := range []struct{ content, want string }{
		{"<time:10:30 pm>", `<p><time datetime="2026-11-28T22:30:00Z">10:30 pm</time></p>`},
		{"<time:2017-06-05T22:30:00+05:30> and <time:1496701800.5>",
			`<p><time datetime="2017-06-05T17:00:00Z">2017-06-05T22:30:00+05:30</time> and <time datetime="2017-06-05T22:30:00.500000Z">1496701800.5</time></p>`},
		{"<time:>", `<p><span class="timestamp-error">Invalid time format: </span></p>`},
		{"<time:1e20>", `<p><span class="timestamp-error">Invalid time format: 1e20</span></p>`},
		{"`<time:10:30>`", "<p><code>&lt;time:10:30&gt;</code></p>"},
		{"<time:a &amp; b>", `<p><span class="timestamp-error">Invalid time format: a &amp; b</span></p>`},
		{"<time:10:30\n>", "<p><time datetime=\"2026-11-28T10:30:00Z\">10:30\n</time></p>"},
	} {
		out, err := RenderWith(c.content, fixtureRealm, nil, Options{Now: sent})
		if err != nil {
			t.Fatal(err)
		}
		if out.HTML != c.want {
			t.Errorf("%q rendered\n %q, want\n %q", c.content, out.HTML, c.want)
		}
	}
}

// TestMarkdown_EmoticonsForTheSenderWhoTranslatesThem: Zulip's twelve
// emoticons become their emoji only for a sender with
// translate_emoticons, and only between white space or punctuation.
func TestMarkdown_EmoticonsForTheSenderWhoTranslatesThem(t *testing.T) {
	em := func(name, code string) string {
		return `<span aria-label="` + name + `" class="emoji emoji-` + code + `" role="img" title="` + name + `">:` + name + `:</span>`
	}
	content := ":) (: :( <3 :| :/ ;) :D :o :O :p :P"
	want := "<p>" + em("smile", "1f642") + " " + em("smile", "1f642") + " " + em("frown", "1f641") + " " +
		em("heart", "2764") + " " + em("neutral", "1f610") + " " + em("confused", "1f615") + " " +
		em("wink", "1f609") + " " + em("grinning", "1f600") + " " + em("open mouth", "1f62e") + " " +
		em("open mouth", "1f62e") + " " + em("stuck out tongue", "1f61b") + " " + em("stuck out tongue", "1f61b") + "</p>"
	want = strings.ReplaceAll(want, ":open mouth:", ":open_mouth:")
	want = strings.ReplaceAll(want, ":stuck out tongue:", ":stuck_out_tongue:")
	out, err := RenderWith(content, fixtureRealm, nil, Options{TranslateEmoticons: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.HTML != want {
		t.Errorf("translated:\n got  %q\n want %q", out.HTML, want)
	}
	if got := renderHTML(t, content, fixtureRealm, nil); got != "<p>:) (: :( &lt;3 :| :/ ;) :D :o :O :p :P</p>" {
		t.Errorf("untranslated: got %q", got)
	}
	for _, c := range []struct{ content, want string }{
		{":):)", "<p>:)" + em("smile", "1f642") + "</p>"},
		{":)(:", "<p>" + em("smile", "1f642") + "(:</p>"},
		{";);)", "<p>" + em("wink", "1f609") + ";)</p>"},
		{"**:)**", "<p><strong>" + em("smile", "1f642") + "</strong></p>"},
		{":smile::)", `<p><span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span>:)</p>`},
		{"(:)", "<p>" + em("smile", "1f642") + ")</p>"},
		{"x :) y", "<p>x " + em("smile", "1f642") + " y</p>"},
	} {
		out, err := RenderWith(c.content, fixtureRealm, nil, Options{TranslateEmoticons: true})
		if err != nil {
			t.Fatal(err)
		}
		if out.HTML != c.want {
			t.Errorf("%q rendered\n %q, want\n %q", c.content, out.HTML, c.want)
		}
	}
}

// FuzzGlobalTime: whatever the text of a <time:...>, reading it does
// not panic, and a moment read is one the datetime attribute may hold.
func FuzzGlobalTime(f *testing.F) {
	raw, err := os.ReadFile("testdata/global_times.json")
	if err != nil {
		f.Fatal(err)
	}
	var file struct {
		Cases [][2]*string `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		f.Fatal(err)
	}
	for _, c := range file.Cases {
		f.Add(*c[0])
	}
	today := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		if got, ok := globalTime(text, today); ok && !renderedDatetime.MatchString(got) {
			t.Fatalf("<time:%s> read as %q", text, got)
		}
	})
}
