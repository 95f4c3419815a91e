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
// unread again out of order, messages starred by users who were not
// subscribed when they came, a reaction, an upload linked from a message,
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
	// Messages starred by users who did not receive them: the admin, not
	// subscribed to the public channel, and the owner, who joined it
	// after general[1].
	mustUpdateFlags(t, e.st, e.admin.user, []uint64{general[3]}, flagChange{"starred", true})
	mustUpdateFlags(t, e.st, e.owner.user, []uint64{general[0]}, flagChange{"starred", true})
	mustUpdateFlags(t, e.st, e.owner.user, []uint64{general[1]}, flagChange{"read", false}) // from before they joined
	wantAPISuccess(t, e.request(t, "POST", fmt.Sprintf("/api/v1/messages/%d/reactions", general[3]), url.Values{"emoji_name": {"octopus"}}, &e.bob))
	// Custom emoji (one deactivated), a reaction with one, a linkifier and
	// a code playground.
	wantAPISuccess(t, e.uploadEmoji(t, &e.alice, "zulite_parrot", uploadPart{"f", "p.png", "image/png", pngOf(t, 20, 20)}))
	wantAPISuccess(t, e.uploadEmoji(t, &e.alice, "zulite_gone", uploadPart{"f", "g.png", "image/png", pngOf(t, 30, 30)}))
	wantAPISuccess(t, e.request(t, "DELETE", "/api/v1/realm/emoji/zulite_gone", nil, &e.alice))
	wantAPISuccess(t, e.request(t, "POST", fmt.Sprintf("/api/v1/messages/%d/reactions", general[3]), url.Values{"emoji_name": {"zulite_parrot"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/realm/filters", url.Values{"pattern": {`#(?P<id>\d+)`}, "url_template": {"https://x.test/{id}"}}, &e.admin))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/realm/playgrounds", url.Values{"name": {"Py"}, "pygments_language": {"python"}, "url_template": {"https://py.test/?c={code}"}}, &e.admin))
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
	// Each user's own view: topics muted, unmuted and followed, muted
	// users (who sent nothing: no flag changes) and alert words.
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "topic 1", policyMuted))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "topic 3", policyUnmuted))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.bob, e.general, "Topic 2", policyFollowed))
	wantAPISuccess(t, e.request(t, "POST", fmt.Sprintf("/api/v1/users/me/muted_users/%d", e.admin.ID), nil, &e.bob))
	wantAPISuccess(t, e.request(t, "POST", fmt.Sprintf("/api/v1/users/me/muted_users/%d", e.bot.ID), nil, &e.owner))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["plans","Lunch"]`}}, &e.alice))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["notes"]`}}, &e.bob))
	// The settings new users start with.
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/realm/user_settings_defaults", url.Values{"enter_sends": {"true"}, "web_home_view": {"recent_topics"}}, &e.admin))
	// Custom profile fields and values: a text, rendered, and a list of users.
	for _, f := range []url.Values{{"name": {"Phone"}, "field_type": {"1"}}, {"name": {"Manager"}, "field_type": {"6"}, "editable_by_user": {"false"}}} {
		wantAPISuccess(t, e.request(t, "POST", "/api/v1/realm/profile_fields", f, &e.admin))
	}
	wantAPISuccess(t, e.request(t, "PATCH", fmt.Sprintf("/api/v1/users/%d", e.alice.ID), url.Values{"profile_data": {fmt.Sprintf(`[{"id":1,"value":"**555**"},{"id":2,"value":[%d]}]`, e.owner.ID)}}, &e.admin))
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

// TestExport_PassesEveryRuleOfZulipsImporter runs the checker
// (export_checker_test.go: every table and field import_realm.py reads,
// each rule naming its line of Zulip) on an export of some history, and
// checks that what was exported is that history.
func TestExport_PassesEveryRuleOfZulipsImporter(t *testing.T) {
	e := newTestEnv(t)
	exportActivity(t, e)
	dir := mustExport(t, e.st)
	checkZulipImportable(t, dir)

	var realm map[string]any
	readJSONFile(t, filepath.Join(dir, "realm.json"), &realm)
	messages := map[float64]bool{}
	flagsOf := map[[2]float64]float64{}
	edited := 0
	for n := 1; ; n++ {
		path := filepath.Join(dir, fmt.Sprintf("messages-%06d.json", n))
		if _, err := os.Stat(path); err != nil {
			break
		}
		var file map[string]any
		readJSONFile(t, path, &file)
		for _, r := range asList(file["zerver_message"]) {
			m := object(r)
			messages[m["id"].(float64)] = true
			if _, ok := m["edit_history"].(string); ok {
				edited++
			}
		}
		for _, r := range asList(file["zerver_usermessage"]) {
			um := object(r)
			flagsOf[[2]float64{um["user_profile"].(float64), um["message"].(float64)}] = um["flags_mask"].(float64)
		}
	}
	if edited != 2 {
		t.Errorf("messages with an edit history: got %d, want 2 (one edited, one moved)", edited)
	}
	if len(messages) != 20 {
		t.Errorf("messages exported: got %d, want 20 (4 of them direct)", len(messages))
	}
	if huddles := asList(realm["zerver_huddle"]); len(huddles) != 1 {
		t.Errorf("zerver_huddle: got %v, want the one group", huddles)
	}
	if n := len(asList(realm["zerver_reaction"])); n != 2 {
		t.Errorf("reactions: got %d, want 2 (one with a custom emoji)", n)
	}
	if d := asList(realm["zerver_realmuserdefault"]); len(d) != 1 || object(d[0])["enter_sends"] != true || object(d[0])["web_home_view"] != "recent_topics" || object(d[0])["emojiset"] != "google" {
		t.Errorf("zerver_realmuserdefault: got %v, want the defaults set", d)
	}
	fields, values := asList(realm["zerver_customprofilefield"]), asList(realm["zerver_customprofilefieldvalue"])
	if len(fields) != 2 || object(fields[1])["field_type"] != float64(6) || object(fields[1])["editable_by_user"] != false {
		t.Errorf("zerver_customprofilefield: got %v, want Phone and Manager", fields)
	}
	if len(values) != 2 || object(values[0])["rendered_value"] != "<p><strong>555</strong></p>" || object(values[1])["value"] != fmt.Sprintf("[%d]", e.owner.ID) {
		t.Errorf("zerver_customprofilefieldvalue: got %v, want alice's two values", values)
	}

	// Bob's rows carry his state as Zulip's bitmask (read 1, starred 2);
	// the owner, who joined after two messages, has a row of the first
	// only, which he starred: historical (1024), as Zulip makes one.
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
	historicalStar := float64(zulipexport.FlagHistorical | zulipexport.FlagRead | zulipexport.FlagStarred)
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
		got, ok := flagsOf[[2]float64{float64(e.owner.ID), float64(id)}]
		switch {
		case i == 0 && (!ok || got != historicalStar):
			t.Errorf("the owner's row for message %d, starred before he joined: got %v (row: %v), want %v", id, got, ok, historicalStar)
		case i == 1 && (!ok || got != zulipexport.FlagHistorical):
			t.Errorf("the owner's row for message %d, from before he joined, marked unread: got %v (row: %v), want %v (historical, not read)", id, got, ok, zulipexport.FlagHistorical)
		case i >= 2 && (!ok || int64(got)&zulipexport.FlagHistorical != 0):
			t.Errorf("the owner's row for message %d: got %v (row: %v), want one, not historical", id, got, ok)
		}
	}
	if got, ok := flagsOf[[2]float64{float64(e.admin.ID), float64(channelIDs[3])}]; !ok || got != historicalStar {
		t.Errorf("the admin's row for the message he starred without being subscribed: got %v (row: %v), want %v", got, ok, historicalStar)
	}

	var attachments map[string]any
	readJSONFile(t, filepath.Join(dir, "attachment.json"), &attachments)
	rows := asList(attachments["zerver_attachment"])
	if len(rows) != 1 || len(asList(object(rows[0])["messages"])) != 1 {
		t.Errorf("attachments: got %v, want the one file, linked from one message", rows)
	}
	for _, sub := range []string{"uploads", "avatars"} {
		var records []any
		readJSONFile(t, filepath.Join(dir, sub, "records.json"), &records)
		if len(records) == 0 {
			t.Errorf("%s/records.json: empty", sub)
		}
	}
}

// exportedFlags reads every zerver_usermessage row of an export:
// (user, message) → flags_mask.
func exportedFlags(t *testing.T, dir string) map[[2]uint64]int64 {
	t.Helper()
	rows := map[[2]uint64]int64{}
	for n := 1; ; n++ {
		path := filepath.Join(dir, fmt.Sprintf("messages-%06d.json", n))
		if _, err := os.Stat(path); err != nil {
			return rows
		}
		var file struct {
			Rows []zulipexport.UserMessageRow `json:"zerver_usermessage"`
		}
		readJSONFile(t, path, &file)
		for _, r := range file.Rows {
			rows[[2]uint64{r.UserProfile, r.Message}] = r.FlagsMask
		}
	}
}

// A message a user sees without having received it (starred, marked
// unread or mentioned where they were not subscribed then) is a
// historical row, as Zulip's create_historical_user_messages makes one
// (zerver/lib/user_message.py: historical and read, less what the user
// changed): without it Zulip's import loses the message from their view.
// A flag left on a message of a private channel the user can no longer
// read gives no row, which would give them the message in Zulip.
func TestExport_MessagesSeenWithoutBeingReceivedGetHistoricalRows(t *testing.T) {
	e := newTestEnv(t)
	before := e.sendAs(t, e.alice, e.general, "before") // the owner joins after it
	hidden := e.sendAs(t, e.alice, e.secret, "plans")
	mustSubscribe(t, e.st, e.owner.user, "general")
	after := e.sendAs(t, e.alice, e.general, "after")
	mustUpdateFlags(t, e.st, e.admin.user, []uint64{after}, flagChange{"starred", true}) // not subscribed
	mustUpdateFlags(t, e.st, e.owner.user, []uint64{before}, flagChange{"read", false})  // before he joined
	mustUpdateFlags(t, e.st, e.alice.user, []uint64{hidden}, flagChange{"starred", true})
	wantAPISuccess(t, e.request(t, "DELETE", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["secret"]`}}, &e.alice))
	if unread := mustUnread(t, e.st, e.owner.user, e.general); !slices.Contains(unread, before) {
		t.Fatalf("the owner's unread messages: got %v, want %d among them", unread, before)
	}

	rows := exportedFlags(t, mustExport(t, e.st))
	for _, c := range []struct {
		name          string
		user, message uint64
		want          int64 // -1: no row
	}{
		{"starred by a non-subscriber", e.admin.ID, after, zulipexport.FlagHistorical | zulipexport.FlagRead | zulipexport.FlagStarred},
		{"marked unread before joining", e.owner.ID, before, zulipexport.FlagHistorical},
		{"received after joining", e.owner.ID, after, 0},
		{"starred in a private channel since left", e.alice.ID, hidden, -1},
		{"neither received nor flagged", e.admin.ID, before, -1},
	} {
		got, ok := rows[[2]uint64{c.user, c.message}]
		if !ok {
			got = -1
		}
		if got != c.want {
			t.Errorf("%s: flags_mask of user %d on message %d: got %d, want %d", c.name, c.user, c.message, got, c.want)
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
	if want := []string{"attachment.json", "avatars", "messages-000001.json", "migration_status.json", "realm.json", "uploads", "zulite-export.txt"}; !slices.Equal(names, want) &&
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
