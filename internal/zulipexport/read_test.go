package zulipexport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// exportDir writes files (name with slashes → text) into a new
// directory, and answers it and a root on it.
func exportDir(t *testing.T, files map[string]string) (string, *os.Root) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return dir, root
}

func TestReadTables_ReadsTheTablesAskedForAndSkipsTheRest(t *testing.T) {
	_, root := exportDir(t, map[string]string{"realm.json": `{
 "zerver_realm": [{"id": 5, "nested": {"a": [1, {"b": []}]}}],
 "zerver_userprofile": [{"id": 10, "email": "a@x", "delivery_email": "iago@x", "role": 100, "is_active": true, "date_joined": 1600000001.5, "extra": [1, 2]},
   {"id": 11, "email": "b@x", "full_name": "Hamlet", "is_bot": true}],
 "zerver_usertopic": [{"id": 1}, {"id": 2}, {"id": 3}],
 "zerver_odd": {"not": ["a", "list"]},
 "zerver_stream": [{"id": 20, "name": "Denmark", "creator": null, "date_created": 1600000010.0}]
}`})
	var users []User
	var streams []Stream
	var seen []string
	counted := 0
	err := ReadTables(root, "realm.json", func(table string, dec *json.Decoder) (bool, error) {
		seen = append(seen, table)
		switch table {
		case "zerver_userprofile":
			return true, ReadRows(dec, func(u User) error { users = append(users, u); return nil })
		case "zerver_stream":
			return true, ReadRows(dec, func(s Stream) error { streams = append(streams, s); return nil })
		case "zerver_usertopic":
			n, err := CountRows(dec)
			counted = n
			return true, err
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"zerver_realm", "zerver_userprofile", "zerver_usertopic", "zerver_stream"}; !slices.Equal(seen, want) {
		t.Errorf("tables: got %v, want %v", seen, want)
	}
	joined := 1600000001.5
	if want := []User{{ID: 10, Email: "a@x", DeliveryEmail: "iago@x", Role: 100, IsActive: true, DateJoined: &joined},
		{ID: 11, Email: "b@x", FullName: "Hamlet", IsBot: true}}; !reflect.DeepEqual(users, want) {
		t.Errorf("users: got %+v, want %+v", users, want)
	}
	if len(streams) != 1 || streams[0].Name != "Denmark" || streams[0].Creator != nil || UnixSeconds(streams[0].DateCreated) != 1600000010 {
		t.Errorf("streams: got %+v", streams)
	}
	if counted != 3 {
		t.Errorf("rows counted in zerver_usertopic: got %d, want 3", counted)
	}
}

func TestReadTables_ErrorsNameTheFileAndTable(t *testing.T) {
	_, root := exportDir(t, map[string]string{
		"messages-000001.json": `{"zerver_message": [{"id": 100, "sender": "ten"}]}`,
		"messages-000002.json": `{"zerver_message": [{"id": 100},`,
		"messages-000003.json": `["not", "an", "object"]`,
	})
	for name, want := range map[string]string{
		"messages-000001.json": "messages-000001.json: zerver_message: json: cannot unmarshal",
		"messages-000002.json": "messages-000002.json: zerver_message: ",
		"messages-000003.json": "messages-000003.json: expected {, found [",
	} {
		err := ReadTables(root, name, func(table string, dec *json.Decoder) (bool, error) {
			return true, ReadRows(dec, func(Message) error { return nil })
		})
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %v, want an error starting %q", name, err, want)
		}
	}
	stop := errors.New("stop")
	err := ReadTables(root, "messages-000001.json", func(string, *json.Decoder) (bool, error) { return false, stop })
	if !errors.Is(err, stop) || err.Error() != "messages-000001.json: zerver_message: stop" {
		t.Errorf("fn's error: got %v, want it wrapped with the file and table", err)
	}
}

// realmWithKeysBesideTables is a realm.json with keys whose values are no
// lists of rows, as Zulip writes them beside its tables: "import_source"
// (do_export_realm), "sort_by_date" (its converters; import_realm.py reads
// it), an object, a null, a number; one value starts 100 spaces and 100
// newlines after its key, past what is read ahead of the key.
var realmWithKeysBesideTables = `{
  "zerver_realm": [{"id": 5}],
  "sort_by_date"` + strings.Repeat(" ", 100) + `:` + strings.Repeat("\n", 100) + `true,
  "zerver_odd": {"not": ["a", "list"], "deeper": {"x": [[1], {"y": []}]}},
  "zerver_usertopic": [{"id": 1}, {"id": 2}],
  "nothing": null, "count": 5,
  "import_source": "zulip"
}`

// TestReadTables_KeysThatAreNotTablesAreSkipped: a reader that counts the
// rows of every table it does not read stopped at Zulip's "import_source":
// "zulip" (realm.json: import_source: expected [, found zulip).
func TestReadTables_KeysThatAreNotTablesAreSkipped(t *testing.T) {
	_, root := exportDir(t, map[string]string{"realm.json": realmWithKeysBesideTables})
	counted := map[string]int{}
	err := ReadTables(root, "realm.json", func(table string, dec *json.Decoder) (bool, error) {
		n, err := CountRows(dec)
		counted[table] = n
		return true, err
	})
	if want := map[string]int{"zerver_realm": 1, "zerver_usertopic": 2}; err != nil || !maps.Equal(counted, want) {
		t.Errorf("got %v, %v; want the two tables counted, %v", counted, err, want)
	}
}

// TestReadTablesAndValues_NamesTheKeysThatAreNotTables: the import reports
// what it leaves, so the keys that are no tables are named to it, with
// their values (an object's is skipped a member at a time).
func TestReadTablesAndValues_NamesTheKeysThatAreNotTables(t *testing.T) {
	_, root := exportDir(t, map[string]string{"realm.json": realmWithKeysBesideTables})
	var tables, values []string
	err := ReadTablesAndValues(root, "realm.json", func(table string, dec *json.Decoder) (bool, error) {
		tables = append(tables, table)
		return false, nil
	}, func(key string, value json.Token) error {
		values = append(values, fmt.Sprintf("%s=%v", key, value))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"zerver_realm", "zerver_usertopic"}; !slices.Equal(tables, want) {
		t.Errorf("tables: got %q, want %q", tables, want)
	}
	if want := []string{"sort_by_date=true", "zerver_odd={", "nothing=<nil>", "count=5", "import_source=zulip"}; !slices.Equal(values, want) {
		t.Errorf("values: got %q, want %q", values, want)
	}
	stop := errors.New("stop")
	err = ReadTablesAndValues(root, "realm.json", func(string, *json.Decoder) (bool, error) { return false, nil },
		func(string, json.Token) error { return stop })
	if !errors.Is(err, stop) || err.Error() != "realm.json: sort_by_date: stop" {
		t.Errorf("value's error: got %v, want it wrapped with the file and key", err)
	}
}

// TestReadTables_OpensOnlyRegularFilesInsideTheExport: a name that
// leads out of the export, by .. or through a symlink, is refused by the
// root; a named pipe is refused before it is read (it would block).
func TestReadTables_OpensOnlyRegularFilesInsideTheExport(t *testing.T) {
	dir, root := exportDir(t, map[string]string{"realm.json": `{}`})
	outside := filepath.Join(filepath.Dir(dir), "outside.json")
	if err := os.WriteFile(outside, []byte(`{"zerver_realm": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "messages-000001.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "attachment.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func(string, *json.Decoder) (bool, error) { return false, nil }
	for name, want := range map[string]string{
		"../outside.json":      "path escapes from parent",
		"messages-000001.json": "path escapes from parent",
		"attachment.json":      "not a regular file",
	} {
		if err := ReadTables(root, name, read); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error saying %q", name, err, want)
		}
	}
	if err := ReadTables(root, "realm.json", read); err != nil {
		t.Errorf("realm.json: %v", err)
	}
}

func TestMessageFiles_AreNumberedFromOneWithoutAGap(t *testing.T) {
	_, root := exportDir(t, map[string]string{
		"messages-000001.json": `{}`, "messages-000002.json": `{}`, "messages-000004.json": `{}`, "realm.json": `{}`,
	})
	if got, want := MessageFiles(root), []string{"messages-000001.json", "messages-000002.json"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestReadRecords_RefusesAPathOutsideTheExport(t *testing.T) {
	dir, root := exportDir(t, map[string]string{
		"uploads/records.json": `[{"path": "5/ab/plan.txt", "s3_path": "5/ab/plan.txt", "realm_id": 5, "user_profile_id": 11, "content_type": "text/plain", "size": 9}]`,
	})
	records, err := ReadRecords(root, "uploads")
	if want := []Record{{Path: "5/ab/plan.txt", S3Path: "5/ab/plan.txt", UserProfileID: 11, ContentType: "text/plain"}}; err != nil || !reflect.DeepEqual(records, want) {
		t.Errorf("uploads: got %+v, %v; want %+v", records, err, want)
	}
	if records, err := ReadRecords(root, "avatars"); records != nil || err != nil {
		t.Errorf("no avatars/records.json: got %v, %v; want no records", records, err)
	}
	for _, c := range []struct{ records, want string }{
		{`[{"path": "5/a.png"}, {"path": "../../zuliprc"}]`, `avatars/records.json: record 2: path "../../zuliprc" is not inside the export`},
		{`[{"path": "/etc/zulip/zulip-secrets.conf"}]`, `avatars/records.json: record 1: path "/etc/zulip/zulip-secrets.conf" is not inside the export`},
		{`{"path": "5/a.png"}`, `avatars/records.json: json: cannot unmarshal object`},
	} {
		if err := os.MkdirAll(filepath.Join(dir, "avatars"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "avatars", "records.json"), []byte(c.records), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadRecords(root, "avatars"); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.records, err, c.want)
		}
	}
}

func TestOpenRecord_NamesTheRecordOfAFileItRefuses(t *testing.T) {
	dir, root := exportDir(t, map[string]string{"uploads/5/ab/plan.txt": "the plans", "elsewhere/notes.txt": "the notes"})
	outside := filepath.Join(filepath.Dir(dir), "zuliprc")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "uploads", "5", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../elsewhere/notes.txt", filepath.Join(dir, "uploads", "5", "in")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "uploads", "5", "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"5/ab/plan.txt": "the plans", "5/in": "the notes"} {
		f, err := OpenRecord(root, "uploads", 1, path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		data, _ := io.ReadAll(f)
		f.Close()
		if string(data) != want {
			t.Errorf("%s: got %q, want %q", path, data, want)
		}
	}
	if _, err := OpenRecord(root, "uploads", 2, "5/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: got %v, want fs.ErrNotExist", err)
	}
	for path, want := range map[string]string{
		"5/out":  `uploads/records.json: record 3: path "5/out": path escapes from parent`,
		"5/pipe": `uploads/records.json: record 3: path "5/pipe": not a regular file`,
	} {
		if f, err := OpenRecord(root, "uploads", 3, path); f != nil || err == nil || err.Error() != want || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: got %v, want %q", path, err, want)
		}
	}
}
