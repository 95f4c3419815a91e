package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"zulite/internal/zulipexport"
)

// exportActivity gives newTestEnv's organisation some history: messages
// in two channels and several topics, messages read, starred and marked
// unread again out of order, a reaction, an upload linked from a message,
// an avatar and a deactivated user.
func exportActivity(t *testing.T, e *testEnv) (fileURL string) {
	t.Helper()
	var general, secret []uint64
	for i := range 12 {
		from := []account{e.alice, e.bob, e.owner}[i%3]
		if from.ID == e.owner.ID {
			mustSubscribe(t, e.st, e.owner.user, "general")
		}
		general = append(general, e.sendAs(t, from, e.general, fmt.Sprintf("topic %d", i%4)))
	}
	for range 3 {
		secret = append(secret, e.sendAs(t, e.alice, e.secret, "plans"))
	}
	mustUpdateFlags(t, e.st, e.bob.user, general[:8], flagChange{"read", true})
	mustUpdateFlags(t, e.st, e.bob.user, []uint64{general[2], general[5]}, flagChange{"read", false})
	mustUpdateFlags(t, e.st, e.bob.user, []uint64{general[10]}, flagChange{"read", true})
	mustUpdateFlags(t, e.st, e.bob.user, []uint64{general[1], general[11]}, flagChange{"starred", true})
	mustUpdateFlags(t, e.st, e.alice.user, []uint64{secret[0], general[4]}, flagChange{"starred", true})
	mustUpdateFlags(t, e.st, e.alice.user, []uint64{general[9]}, flagChange{"collapsed", true})
	wantAPISuccess(t, e.request(t, "POST", fmt.Sprintf("/api/v1/messages/%d/reactions", general[3]), url.Values{"emoji_name": {"octopus"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "PATCH", fmt.Sprintf("/api/v1/messages/%d", general[6]), url.Values{"content": {"edited **once**"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "PATCH", fmt.Sprintf("/api/v1/messages/%d", general[7]), url.Values{"topic": {"moved"}}, &e.bob))
	for _, dm := range []struct {
		from *account
		to   []uint64
	}{{&e.alice, []uint64{e.bob.ID}}, {&e.bob, []uint64{e.alice.ID}}, {&e.alice, []uint64{e.bob.ID, e.owner.ID}}, {&e.owner, []uint64{e.owner.ID}}} {
		wantAPISuccess(t, e.request(t, "POST", "/api/v1/messages", url.Values{"type": {"direct"}, "to": {jsonIDs(dm.to...)}, "content": {"psst"}}, dm.from))
	}
	fileURL = e.mustUpload(t, &e.alice, "notes.txt", "the notes")
	e.sendText(t, e.alice, e.general, "[notes.txt]("+fileURL+")")
	wantAPISuccess(t, e.upload(t, &e.bob, "/api/v1/users/me/avatar", uploadPart{"file", "me.png", "image/png", pngOf(t, 300, 200)}))
	if err := e.st.setActive(e.bot.Email, false); err != nil {
		t.Fatal(err)
	}
	return fileURL
}

// mustExport exports e's store into a new directory and answers it.
func mustExport(t *testing.T, st *store) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	if err := prepareExportDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := st.export(dir, st.uploadsDir()); err != nil {
		t.Fatalf("export: %v", err)
	}
	return dir
}

// readJSONFile decodes a file of the export.
func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// The fields import_realm.py (Zulip 9–11) reads from each table, by
// name, with the JSON type it needs: it indexes them (item[field]: a
// missing one is a KeyError), turns dates back with fix_datetime_fields
// (DATE_FIELDS: a number or null), renames foreign keys with
// re_map_foreign_keys (an id, or null where the column is nullable), and
// reads flags_mask with fix_bitfield_keys. A table listed with no fields
// must be present (data[table] is read unconditionally) even when empty.
var importRealmRequires = map[string]map[string]string{
	"zerver_realm": {"id": "number", "deactivated": "bool", "date_created": "number|null",
		"new_stream_announcements_stream": "number|null", "signup_announcements_stream": "number|null", "zulip_update_announcements_stream": "number|null"},
	"zerver_userprofile": {"id": "number", "email": "string", "delivery_email": "string", "realm": "number", "is_bot": "bool", "is_active": "bool",
		"role": "number", "bot_owner": "number|null", "default_sending_stream": "number|null", "default_events_register_stream": "number|null",
		"last_active_message_id": "number|null", "user_permissions": "array", "groups": "array",
		"date_joined": "number|null", "last_login": "number|null", "last_reminder": "number|null"},
	"zerver_userprofile_mirrordummy": {},
	"zerver_userprofile_crossrealm":  {"id": "number", "email": "string", "recipient_id": "number"},
	"zerver_client":                  {"id": "number", "name": "string"},
	"zerver_stream": {"id": "number", "name": "string", "description": "string", "realm": "number", "creator": "number|null",
		"date_created": "number|null"},
	"zerver_recipient":                 {"id": "number", "type": "number", "type_id": "number"},
	"zerver_subscription":              {"id": "number", "user_profile": "number", "recipient": "number"},
	"zerver_huddle":                    {"id": "number"},
	"zerver_defaultstream":             {"id": "number", "realm": "number", "stream": "number"},
	"zerver_realmemoji":                {"id": "number", "realm": "number", "author": "number|null", "name": "string"},
	"zerver_realmdomain":               {"id": "number", "realm": "number"},
	"zerver_realmfilter":               {"id": "number", "realm": "number"},
	"zerver_realmplayground":           {"id": "number", "realm": "number"},
	"zerver_realmauthenticationmethod": {"id": "number", "realm": "number", "name": "string"},
	"zerver_userpresence":              {"id": "number", "user_profile": "number", "realm": "number", "last_active_time": "number|null", "last_connected_time": "number|null"},
	"zerver_useractivity":              {"id": "number", "user_profile": "number", "client": "number", "last_visit": "number|null"},
	"zerver_useractivityinterval":      {"id": "number", "user_profile": "number", "start": "number|null", "end": "number|null"},
	"zerver_customprofilefield":        {"id": "number", "realm": "number"},
	"zerver_customprofilefieldvalue":   {"id": "number", "user_profile": "number", "field": "number"},
	"zerver_reaction": {"id": "number", "message": "number", "user_profile": "number", "emoji_name": "string", "emoji_code": "string",
		"reaction_type": "string"},
}

var importMessagesRequire = map[string]map[string]string{
	"zerver_message": {"id": "number", "sender": "number", "recipient": "number", "realm": "number", "sending_client": "number",
		"date_sent": "number", "last_edit_time": "number|null", "has_attachment": "bool", "content": "string", "rendered_content": "string|null"},
	"zerver_usermessage": {"message": "number", "user_profile": "number", "flags_mask": "number"},
}

var importAttachmentsRequire = map[string]map[string]string{
	"zerver_attachment": {"id": "number", "owner": "number", "realm": "number", "path_id": "string", "create_time": "number|null",
		"messages": "array", "scheduled_messages": "array"},
}

// The fields import_uploads reads from each record of records.json.
var importRecordRequires = map[string]string{"path": "string", "s3_path": "string", "realm_id": "number", "user_profile_id": "number"}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	case []any:
		return "array"
	}
	return "object"
}

// checkTables checks that data has every table of want, as a list, and
// every row each field with a type want allows.
func checkTables(t *testing.T, file string, data map[string]any, want map[string]map[string]string) {
	t.Helper()
	for table, fields := range want {
		rows, ok := data[table].([]any)
		if !ok {
			t.Errorf("%s: table %s: got %s, want a list", file, table, jsonType(data[table]))
			continue
		}
		for i, row := range rows {
			checkRow(t, fmt.Sprintf("%s: %s[%d]", file, table, i), row, fields)
		}
	}
}

func checkRow(t *testing.T, where string, row any, fields map[string]string) {
	t.Helper()
	obj, ok := row.(map[string]any)
	if !ok {
		t.Errorf("%s: got %s, want an object", where, jsonType(row))
		return
	}
	for field, types := range fields {
		v, present := obj[field]
		if !present {
			t.Errorf("%s: no %s (the importer reads it)", where, field)
		} else if !slices.Contains(strings.Split(types, "|"), jsonType(v)) {
			t.Errorf("%s.%s: got %s %v, want %s", where, field, jsonType(v), v, types)
		}
	}
}

func TestExport_HasEveryTableAndFieldImportRealmReads(t *testing.T) {
	e := newTestEnv(t)
	exportActivity(t, e)
	dir := mustExport(t, e.st)

	var realm map[string]any
	readJSONFile(t, filepath.Join(dir, "realm.json"), &realm)
	checkTables(t, "realm.json", realm, importRealmRequires)
	if rows, _ := realm["zerver_realm"].([]any); len(rows) != 1 {
		t.Errorf("zerver_realm: got %d rows, want 1 (the importer reads zerver_realm[0])", len(rows))
	}

	// Foreign keys resolve, and no row carries a credential.
	ids := func(table string) map[float64]bool {
		set := map[float64]bool{}
		rows, _ := realm[table].([]any)
		for _, r := range rows {
			set[r.(map[string]any)["id"].(float64)] = true
		}
		return set
	}
	users, recipients, clients := ids("zerver_userprofile"), ids("zerver_recipient"), ids("zerver_client")
	for _, r := range realm["zerver_userprofile"].([]any) {
		u := r.(map[string]any)
		if u["password"] != nil || u["api_key"] != "" {
			t.Errorf("user %v: password %v, api_key %v; want no credentials", u["email"], u["password"], u["api_key"])
		}
	}
	for _, r := range realm["zerver_subscription"].([]any) {
		s := r.(map[string]any)
		if !users[s["user_profile"].(float64)] || !recipients[s["recipient"].(float64)] {
			t.Errorf("subscription %v: a user or recipient not exported", s)
		}
	}

	messages := map[float64]bool{}
	flagsOf := map[[2]float64]float64{}
	edited := 0
	for n := 1; ; n++ {
		path := filepath.Join(dir, fmt.Sprintf("messages-%06d.json", n))
		if _, err := os.Stat(path); err != nil {
			if n == 1 {
				t.Fatal("no messages-000001.json")
			}
			break
		}
		var file map[string]any
		readJSONFile(t, path, &file)
		checkTables(t, filepath.Base(path), file, importMessagesRequire)
		for _, r := range file["zerver_message"].([]any) {
			m := r.(map[string]any)
			messages[m["id"].(float64)] = true
			if history, ok := m["edit_history"].(string); ok { // Message.edit_history is a JSON text
				var entries []map[string]any
				if err := json.Unmarshal([]byte(history), &entries); err != nil || len(entries) != 1 || m["last_edit_time"] == nil {
					t.Errorf("message %v: edit_history %q (%v), last_edit_time %v", m["id"], history, err, m["last_edit_time"])
				}
				edited++
			}
			if !users[m["sender"].(float64)] || !recipients[m["recipient"].(float64)] || !clients[m["sending_client"].(float64)] {
				t.Errorf("message %v: a sender, recipient or client not exported", m["id"])
			}
		}
		for _, r := range file["zerver_usermessage"].([]any) {
			um := r.(map[string]any)
			if !messages[um["message"].(float64)] { // bulk_import_user_message_data: its message imported already
				t.Errorf("usermessage %v: its message is not in this file or an earlier one", um)
			}
			flagsOf[[2]float64{um["user_profile"].(float64), um["message"].(float64)}] = um["flags_mask"].(float64)
		}
	}
	if edited != 2 {
		t.Errorf("messages with an edit history: got %d, want 2 (one edited, one moved)", edited)
	}
	if len(messages) != 20 {
		t.Errorf("messages exported: got %d, want 20 (4 of them direct)", len(messages))
	}
	if huddles, _ := realm["zerver_huddle"].([]any); len(huddles) != 1 {
		t.Errorf("zerver_huddle: got %v, want the one group", huddles)
	}
	for _, r := range realm["zerver_reaction"].([]any) {
		if !messages[r.(map[string]any)["message"].(float64)] {
			t.Errorf("reaction %v: its message is not exported", r)
		}
	}
	if n := len(realm["zerver_reaction"].([]any)); n != 1 {
		t.Errorf("reactions: got %d, want 1", n)
	}

	// Bob's rows carry his state as Zulip's bitmask (read 1, starred 2);
	// the owner, who joined after two messages, has no row for them.
	unread, starred := mustUnread(t, e.st, e.bob.user, e.general), e.starred(t, e.bob)
	if len(unread) < 3 || len(starred) != 2 {
		t.Fatalf("the activity: bob has %v unread, %v starred", unread, starred)
	}
	var channelIDs []uint64
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		prefix := itob(e.general.ID)
		c := tx.Bucket(bucketChannelMessages).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			channelIDs = append(channelIDs, btoi(k[8:]))
		}
		return nil
	})
	for i, id := range channelIDs {
		want := float64(zulipexport.FlagRead)
		if slices.Contains(unread, id) {
			want = 0
		}
		if slices.Contains(starred, id) {
			want += zulipexport.FlagStarred
		}
		if got, ok := flagsOf[[2]float64{float64(e.bob.ID), float64(id)}]; !ok || got != want {
			t.Errorf("bob's flags_mask for message %d: got %v (row: %v), want %v", id, got, ok, want)
		}
		if _, ok := flagsOf[[2]float64{float64(e.owner.ID), float64(id)}]; ok != (i >= 2) {
			t.Errorf("the owner's row for message %d (the %dth): got %v, want %v", id, i, ok, i >= 2)
		}
	}

	var attachments map[string]any
	readJSONFile(t, filepath.Join(dir, "attachment.json"), &attachments)
	checkTables(t, "attachment.json", attachments, importAttachmentsRequire)
	rows := attachments["zerver_attachment"].([]any)
	if len(rows) != 1 || len(rows[0].(map[string]any)["messages"].([]any)) != 1 {
		t.Errorf("attachments: got %v, want the one file, linked from one message", rows)
	}
	for _, sub := range []string{"uploads", "avatars"} {
		var records []any
		readJSONFile(t, filepath.Join(dir, sub, "records.json"), &records)
		if len(records) == 0 {
			t.Errorf("%s/records.json: empty", sub)
		}
		for i, r := range records {
			checkRow(t, fmt.Sprintf("%s/records.json[%d]", sub, i), r, importRecordRequires)
			if path, _ := r.(map[string]any)["path"].(string); path != "" {
				if _, err := os.Stat(filepath.Join(dir, sub, filepath.FromSlash(path))); err != nil {
					t.Errorf("%s/records.json[%d]: the file: %v", sub, i, err)
				}
			}
		}
	}
}

func TestExportCommand_WhileServingThroughTheSocketThenImportCommand(t *testing.T) {
	dir := t.TempDir()
	db, out := filepath.Join(dir, "z.db"), filepath.Join(dir, "out")
	_, _, stop := startServe(t, db, nil)
	mustRunCLI(t, nil, "user", "add", "alice@example.com", "--db", db)
	mustRunCLI(t, nil, "channel", "add", "general", "--private", "--db", db)
	text, _, err := runCLI(t, nil, "export", out, "--db", db) // serve holds the file: through its socket
	if err != nil || !strings.Contains(text, "exported: 2 users, 1 channels") {
		t.Fatalf("export while serving: got %q, %v", text, err)
	}
	entries, _ := os.ReadDir(out)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"attachment.json", "avatars", "messages-000001.json", "realm.json", "uploads", "zulite-export.txt"}; !slices.Equal(names, want) &&
		!slices.Equal(names, slices.DeleteFunc(slices.Clone(want), func(n string) bool { return n == "messages-000001.json" })) {
		t.Errorf("the export's files: got %v, want %v (the copy it was read from removed)", names, want)
	}
	if _, _, err := runCLI(t, nil, "export", filepath.Join(dir, "other"), "--db", filepath.Join(dir, "typo.db")); err == nil || !os.IsNotExist(errors.Unwrap(err)) {
		t.Errorf("an export of a database that does not exist: got %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "typo.db")); err == nil {
		t.Errorf("an export of a database that does not exist made one")
	}
	if _, _, err := runCLI(t, nil, "export", out, "--db", db); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("an export into a directory with files: got %v, want a refusal", err)
	}
	if _, _, err := runCLI(t, nil, "import", out, "--db", db); err == nil || !strings.Contains(err.Error(), "a server is using") {
		t.Errorf("an import into a served database: got %v, want a refusal", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.db")
	text, _, err = runCLI(t, nil, "import", out, "--db", fresh)
	if err != nil || !strings.Contains(text, "imported: 2 users, 1 channels") || !strings.Contains(text, "nothing left out") {
		t.Fatalf("import: got %q, %v", text, err)
	}
	if list := mustRunCLI(t, nil, "channel", "list", "--db", fresh); !strings.Contains(list, "general\tprivate") {
		t.Errorf("channel list after the import: got %q", list)
	}
	if list := mustRunCLI(t, nil, "user", "list", "--db", fresh); !strings.Contains(list, "alice@example.com\tmember\tactive") || !strings.Contains(list, "owner") {
		t.Errorf("user list after the import: got %q", list)
	}
}
