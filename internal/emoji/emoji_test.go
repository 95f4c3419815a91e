package emoji

import (
	"os"
	"testing"
)

// The binary embeds emoji.txt gzipped; the two must say the same, or an
// edit of emoji.txt (or of generate.py) never reached the binary.
func TestEmbeddedTable_IsEmojiTxt(t *testing.T) {
	want, err := os.ReadFile("emoji.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := emojiTable(); got != string(want) {
		t.Fatalf("emoji.txt.gz unpacks to %d bytes that differ from emoji.txt's %d; run generate.py", len(got), len(want))
	}
}

func TestCodeForName_FindsNamesAndAliases(t *testing.T) {
	for name, want := range map[string]string{"grinning": "1f600", "hash": "0023-20e3", "thumbs_up": "1f44d", "+1": "1f44d"} {
		if got, ok := CodeForName(name); !ok || got != want {
			t.Errorf("CodeForName(%q) = %q, %v; want %q, true", name, got, ok, want)
		}
	}
	if got, ok := CanonicalName("1f44d"); !ok || got != "+1" {
		t.Errorf(`CanonicalName("1f44d") = %q, %v; want "+1", true`, got, ok)
	}
}
