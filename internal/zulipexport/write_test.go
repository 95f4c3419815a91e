package zulipexport

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// writeWhole writes a file once write has written all of it, as the
// core's writeFileAtomically leaves it.
func writeWhole(path string, write func(w io.Writer) error) error {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o600)
}

// newWriter starts an export into a new directory.
func newWriter(t *testing.T) (*Writer, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(dir, writeWhole)
	if err != nil {
		t.Fatal(err)
	}
	return w, dir
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, e := range entries {
		list = append(list, e.Name())
	}
	return list
}

// TestWriter_WritesAnExportTheReaderReadsBack: messages in numbered
// files, reactions added with them and written in realm.json with every
// table the importer requires, uploaded files with their records; the
// temporary file of reactions is gone after Close.
func TestWriter_WritesAnExportTheReaderReadsBack(t *testing.T) {
	w, dir := newWriter(t)
	for file := range 2 {
		id := uint64(100 + file)
		err := w.WriteMessages([]MessageRow{{ID: id, Sender: 10, Recipient: 4, Realm: 2, Subject: "castle", Content: "hi", DateSent: Timestamp(1600000000 + int64(file))}},
			[]UserMessageRow{{ID: id, UserProfile: 11, Message: id, FlagsMask: FlagRead | FlagStarred}})
		if err != nil {
			t.Fatal(err)
		}
		for n := range 2 {
			if err := w.AddReaction(ReactionRow{ID: uint64(2*file + n + 1), Message: id, UserProfile: 11, EmojiName: "octopus", EmojiCode: "1f419", ReactionType: "unicode_emoji"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	blob := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(blob, []byte("the plans"), 0o600); err != nil {
		t.Fatal(err)
	}
	const pathID = "2/ab/plan.txt"
	if err := w.CopyFile("uploads", pathID, blob); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecords("uploads", []RecordRow{{Path: pathID, S3Path: pathID, RealmID: 2, UserProfileID: 11, ContentType: "text/plain", Size: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteAttachments([]AttachmentRow{{ID: 1, FileName: "plan.txt", PathID: pathID, Owner: 11, Realm: 2, Size: 9, Messages: []uint64{100}, ScheduledMessages: []uint64{}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecords("avatars", []RecordRow{}); err != nil {
		t.Fatal(err)
	}
	err := w.WriteRealm(map[string]any{
		"zerver_realm":       []any{map[string]any{"id": 2}},
		"zerver_userprofile": []map[string]any{{"id": 10}, {"id": 11}},
		"zerver_usertopic":   []any{map[string]any{"id": 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, dir), []string{"attachment.json", "avatars", "messages-000001.json", "messages-000002.json", "realm.json", "uploads"}; !slices.Equal(got, want) {
		t.Errorf("the export's files: got %v, want %v (the reactions' file removed)", got, want)
	}

	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	data, err := os.ReadFile(filepath.Join(dir, "realm.json"))
	if err != nil {
		t.Fatal(err)
	}
	var realm map[string]any
	if err := json.Unmarshal(data, &realm); err != nil {
		t.Fatalf("realm.json: %v\n%s", err, data)
	}
	for _, table := range append(slices.Clone(realmTables), "zerver_reaction", "zerver_usertopic") {
		if _, ok := realm[table].([]any); !ok {
			t.Errorf("realm.json: %s: got %v, want a list", table, realm[table])
		}
	}
	if got := len(realm["zerver_userprofile"].([]any)); got != 2 {
		t.Errorf("zerver_userprofile: got %d rows, want the 2 given", got)
	}
	var reactions []uint64
	err = ReadTables(root, "realm.json", func(table string, dec *json.Decoder) (bool, error) {
		if table != "zerver_reaction" {
			return false, nil
		}
		return true, ReadRows(dec, func(r ReactionRow) error { reactions = append(reactions, r.ID); return nil })
	})
	if err != nil || !slices.Equal(reactions, []uint64{1, 2, 3, 4}) {
		t.Errorf("zerver_reaction: got ids %v (%v), want 1 to 4, in order", reactions, err)
	}

	var messages []Message
	var userMessages []UserMessage
	for _, name := range MessageFiles(root) {
		err := ReadTables(root, name, func(table string, dec *json.Decoder) (bool, error) {
			switch table {
			case "zerver_message":
				return true, ReadRows(dec, func(m Message) error { messages = append(messages, m); return nil })
			case "zerver_usermessage":
				return true, ReadRows(dec, func(um UserMessage) error { userMessages = append(userMessages, um); return nil })
			}
			return false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(messages) != 2 || messages[0].ID != 100 || messages[1].ID != 101 || messages[1].DateSent != 1600000001 || messages[0].Subject != "castle" {
		t.Errorf("messages read back: got %+v", messages)
	}
	if want := []UserMessage{{UserProfile: 11, Message: 100, FlagsMask: 3}, {UserProfile: 11, Message: 101, FlagsMask: 3}}; !reflect.DeepEqual(userMessages, want) {
		t.Errorf("user messages read back: got %+v, want %+v", userMessages, want)
	}

	records, err := ReadRecords(root, "uploads")
	if err != nil || len(records) != 1 || records[0].Path != pathID {
		t.Fatalf("uploads/records.json: got %+v, %v", records, err)
	}
	f, err := OpenRecord(root, "uploads", 1, records[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, _ := io.ReadAll(f); string(got) != "the plans" {
		t.Errorf("the uploaded file: got %q", got)
	}
	if avatars, err := ReadRecords(root, "avatars"); err != nil || avatars == nil || len(avatars) != 0 {
		t.Errorf("avatars/records.json: got %v, %v; want an empty list", avatars, err)
	}
	text, _ := os.ReadFile(filepath.Join(dir, "attachment.json"))
	if !strings.Contains(string(text), `"messages":[100],"scheduled_messages":[]`) {
		t.Errorf("attachment.json: got %s", text)
	}
}

func TestWriteRealm_WithoutReactionsWritesAnEmptyList(t *testing.T) {
	w, dir := newWriter(t)
	defer w.Close()
	if err := w.WriteRealm(map[string]any{"zerver_realm": []any{map[string]any{"id": 2}}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "realm.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("\"zerver_reaction\":[]}\n")) || !bytes.Contains(data, []byte("\"zerver_realm\":[{\"id\":2}],\n")) ||
		!bytes.Contains(data, []byte("\"zerver_huddle\":[],\n")) {
		t.Errorf("realm.json: got %s", data)
	}
	if !json.Valid(data) {
		t.Errorf("realm.json is not JSON: %s", data)
	}
}
