package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.etcd.io/bbolt"

	"zulite/internal/zulipexport"
)

// importedEnv serves an imported store, as newTestEnv serves its own.
func importedEnv(t *testing.T, st *store) *testEnv {
	e := &testEnv{st: st}
	s := newServer(st, discardLogger(), "http://zulite.test", "zulite")
	e.server, e.handler = s, s.routes()
	return e
}

// keyed is the imported account with the e-mail, with a new API key.
func keyed(t *testing.T, st *store, email string) account {
	t.Helper()
	u, err := st.userByEmail(email)
	if err != nil {
		t.Fatal(err)
	}
	key, err := st.regenerateKey(email)
	if err != nil {
		t.Fatal(err)
	}
	return account{u, key}
}

// viewOf is what a user sees: their subscriptions and every message they
// can fetch, with its flags (read, starred, …) and reactions.
func viewOf(t *testing.T, e *testEnv, a *account) (subs, messages []any) {
	t.Helper()
	r := e.request(t, "GET", "/api/v1/users/me/subscriptions", nil, a)
	wantAPISuccess(t, r)
	subs, _ = r.body["subscriptions"].([]any)
	r = e.request(t, "GET", "/api/v1/messages", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"1000"}}, a)
	wantAPISuccess(t, r)
	messages, _ = r.body["messages"].([]any)
	return subs, messages
}

func TestExportImport_RoundTripKeepsEveryUsersView(t *testing.T) {
	e := newTestEnv(t)
	fileURL := exportActivity(t, e)
	// A default channel stays one and an archived channel stays archived.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/default_streams", url.Values{"stream_id": {strconv.FormatUint(e.general.ID, 10)}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodDelete, channelPath(e.secret), nil, &e.admin))
	dir := mustExport(t, e.st)

	st := mustOpenStore(t)
	report, err := st.importZulip(dir)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if !strings.Contains(report.String(), "nothing left out") {
		t.Errorf("the report of a zulite export's import: got %q, want nothing left out", report)
	}
	imported := importedEnv(t, st)
	kinds := func(s *store) string {
		list, err := s.channels()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ch := range list {
			out = append(out, fmt.Sprint(ch.ID, " ", ch.Name, " default=", ch.Default, " archived=", ch.Archived))
		}
		return strings.Join(out, ", ")
	}
	if got, want := kinds(st), kinds(e.st); got != want || !strings.Contains(want, "general default=true") || !strings.Contains(want, "secret default=false archived=true") {
		t.Errorf("channels after the round trip:\n got %s\nwant %s", got, want)
	}

	before, _ := e.st.users()
	after, _ := st.users()
	strip := func(list []user) []user {
		out := []user{}
		for _, u := range list {
			out = append(out, user{ID: u.ID, Email: u.Email, FullName: u.FullName, Role: u.Role, Bot: u.Bot, Active: u.Active, Joined: u.Joined,
				Avatar: u.Avatar, AvatarMedium: u.AvatarMedium, Profile: u.Profile})
		}
		return out
	}
	if !reflect.DeepEqual(strip(before), strip(after)) {
		t.Errorf("users:\n got %+v\nwant %+v", strip(after), strip(before))
	}
	defaultsBefore, _ := e.st.realmUserDefaults()
	defaultsAfter, _ := st.realmUserDefaults()
	if len(defaultsBefore) != 2 || !reflect.DeepEqual(defaultsAfter, defaultsBefore) {
		t.Errorf("the settings new users start with:\n got %s\nwant %s", defaultsAfter, defaultsBefore)
	}
	fieldsBefore, _ := e.st.profileFields()
	fieldsAfter, _ := st.profileFields()
	if len(fieldsBefore) != 2 || !reflect.DeepEqual(fieldsAfter, fieldsBefore) {
		t.Errorf("custom profile fields:\n got %+v\nwant %+v", fieldsAfter, fieldsBefore)
	}
	for _, a := range []*account{&e.owner, &e.admin, &e.alice, &e.bob} {
		wantSubs, wantMessages := viewOf(t, e, a)
		again := keyed(t, st, a.Email)
		gotSubs, gotMessages := viewOf(t, imported, &again)
		if len(wantMessages) == 0 && a.ID != e.admin.ID {
			t.Fatalf("%s sees no messages", a.Email)
		}
		if !reflect.DeepEqual(gotSubs, wantSubs) {
			t.Errorf("%s's subscriptions:\n got %s\nwant %s", a.Email, asJSON(gotSubs), asJSON(wantSubs))
		}
		if got, want := ownViewOf(t, imported, &again), ownViewOf(t, e, a); got != want {
			t.Errorf("%s's topics, muted users and alert words:\n got %s\nwant %s", a.Email, got, want)
		}
		if !reflect.DeepEqual(gotMessages, wantMessages) {
			t.Errorf("%s's messages (id: flags):\n got %s\nwant %s", a.Email, flagsByID(gotMessages), flagsByID(wantMessages))
			for i := range min(len(gotMessages), len(wantMessages)) {
				if !reflect.DeepEqual(gotMessages[i], wantMessages[i]) {
					t.Errorf("%s's message %d:\n got %s\nwant %s", a.Email, i, asJSON(gotMessages[i]), asJSON(wantMessages[i]))
					break
				}
			}
		}
	}
	alice := keyed(t, st, e.alice.Email)
	if rec := imported.fetch(t, &alice, fileURL); rec.Code != 200 || rec.Body.String() != "the notes" {
		t.Errorf("the uploaded file after the round trip: got %d %q", rec.Code, rec.Body.String())
	}

	// A second import into the same file is refused, and changes nothing.
	if _, err := st.importZulip(dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("an import into a database with data: got %v, want a refusal", err)
	}
}

// ownViewOf is what register tells a of their own view: user_topics,
// muted_users and alert_words, as JSON.
func ownViewOf(t *testing.T, e *testEnv, a *account) string {
	t.Helper()
	r := e.registerQueue(t, a, url.Values{"fetch_event_types": {`["user_topic","muted_users","alert_words"]`},
		"client_capabilities": {`{"empty_topic_name":true}`}})
	return asJSON([]any{r.body["user_topics"], r.body["muted_users"], r.body["alert_words"]})
}

func flagsByID(messages []any) string {
	var parts []string
	for _, m := range messages {
		parts = append(parts, fmt.Sprintf("%v:%v", object(m)["id"], object(m)["flags"]))
	}
	return strings.Join(parts, " ")
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// zulipCorpus copies testdata/zulip-export, an export of Zulip 11 written
// by hand from Zulip's export code (testdata/zulip-export.md says what it
// holds), into a new directory, which a test may change.
func zulipCorpus(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "zulip-export")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "zulip-export"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestImport_HandWrittenZulipExport: the corpus, a real Zulip export,
// imports whole (it stopped at realm.json's "import_source"), with each
// kind zulite cannot hold named in the report.
func TestImport_HandWrittenZulipExport(t *testing.T) {
	dir := zulipCorpus(t)
	st := mustOpenStore(t)
	report, err := st.importZulip(dir)
	if err != nil {
		t.Fatalf("import: %v", err)
	}

	users, _ := st.users()
	type who struct {
		email  string
		role   int
		bot    bool
		active bool
	}
	var got []who
	for _, u := range users {
		got = append(got, who{u.Email, u.Role, u.Bot, u.Active})
	}
	want := []who{
		{"notification-bot@zulip.com", roleMember, true, false}, // a system bot of Zulip's: kept, deactivated, for its messages
		{"emailgateway@zulip.com", roleMember, true, false},
		{"welcome-bot@zulip.com", roleMember, true, false},
		{"iago@acme.example", roleOwner, false, true}, // the delivery e-mail, not the shown one
		{"hamlet@acme.example", roleMember, false, true},
		{"prospero@acme.example", roleMember, false, true}, // a moderator
		{"cordelia@acme.example", roleGuest, false, false},
		{"welcome-bot@acme.example", roleMember, true, true},
		{"desdemona@acme.example", roleAdmin, false, true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("users:\n got %v\nwant %v", got, want)
	}
	mustView(t, st, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketAPIKeys).Stats().KeyN != 0 || tx.Bucket(bucketPasswords).Stats().KeyN != 0 {
			t.Errorf("credentials were imported")
		}
		return nil
	})

	channels, _ := st.channels()
	var names []string
	for _, ch := range channels {
		names = append(names, fmt.Sprintf("%d %s private=%v %q", ch.ID, ch.Name, ch.Private, ch.Description))
	}
	if want := []string{`20 Denmark private=false "A city"`, `21 Verona private=true ""`, `22 Old private=false "gone"`}; !reflect.DeepEqual(names, want) {
		t.Errorf("channels: got %q, want %q", names, want)
	}

	hamlet, iago, prospero := keyed(t, st, "hamlet@acme.example"), keyed(t, st, "iago@acme.example"), keyed(t, st, "prospero@acme.example")
	// Messages are numbered anew, in order: 100 to 110 are 1 to 11 (103
	// is the group's direct message, 106 and 107 hamlet's and iago's).
	denmark, verona := channel{ID: 20}, channel{ID: 21}
	for _, c := range []struct {
		who     account
		ch      channel
		unread  []uint64
		starred []uint64
	}{
		{hamlet, denmark, []uint64{5, 9}, []uint64{2, 7}},
		{hamlet, verona, []uint64{3}, []uint64{2, 7}},
		{iago, denmark, []uint64{6, 10}, nil},
		{prospero, denmark, nil, nil}, // his first row is 104: 100 and 101 came before he joined
		{prospero, verona, nil, nil},  // left
	} {
		e := importedEnv(t, st)
		if got := mustUnread(t, st, c.who.user, c.ch); !reflect.DeepEqual(got, c.unread) {
			t.Errorf("%s's unread in %d: got %v, want %v", c.who.Email, c.ch.ID, got, c.unread)
		}
		if got := e.starred(t, c.who); !reflect.DeepEqual(got, c.starred) {
			t.Errorf("%s's starred: got %v, want %v", c.who.Email, got, c.starred)
		}
	}

	e := importedEnv(t, st)
	subs, messages := viewOf(t, e, &hamlet)
	var subText []string
	for _, s := range subs {
		o := s.(map[string]any)
		subText = append(subText, fmt.Sprintf("%v %v muted=%v pinned=%v desktop=%v", o["name"], o["color"], o["is_muted"], o["pin_to_top"], o["desktop_notifications"]))
	}
	if want := []string{"Denmark #76ce90 muted=false pinned=true desktop=true", "Verona #e79ab5 muted=true pinned=false desktop=<nil>"}; !reflect.DeepEqual(subText, want) {
		t.Errorf("hamlet's subscriptions: got %q, want %q", subText, want)
	}
	var msgText []string
	for _, m := range messages {
		o := m.(map[string]any)
		to := o["display_recipient"]
		if list, ok := to.([]any); ok {
			var ids []any
			for _, u := range list {
				ids = append(ids, object(u)["id"])
			}
			to = fmt.Sprint("dm", ids)
		}
		msgText = append(msgText, fmt.Sprintf("%v %v/%v %v %v %v", o["id"], to, o["subject"], o["content"], o["timestamp"], o["client"]))
	}
	wantMsgs := []string{
		"1 Denmark/castle <p>Who's there?</p> 1.600001e+09 website",
		"2 Denmark/castle <p>Nay, answer me</p> 1.600001001e+09 ZulipMobile",
		"3 Verona/balcony <p>But soft: <a href=\"/user_uploads/PATH\">plan.txt</a>.</p> 1.600001002e+09 website",
		"4 dm[10 11 12]/ <p>a group secret</p> 1.600001003e+09 website",
		"5 Denmark/ghost <p><strong>Mark</strong> me</p> 1.600001004e+09 website",
		"6 Denmark/castle <p>Long live the king</p> 1.600001005e+09 website",
		"7 dm[10 11]/ <p>Meet me at the platform: <a href=\"/user_uploads/IMAGE\">castle.png</a></p>\n<div class=\"message_inline_image\"><a href=\"/user_uploads/IMAGE\" title=\"castle.png\"><img src=\"/user_uploads/thumbnail/5/3f/Xq2-Lm9_Rt4Vw8Yz1Bc6Dh0K/castle.png/840x560.webp\"></a></div> 1.600001006e+09 website",
		"8 dm[10 11]/ <p><span class=\"user-mention\" data-user-id=\"10\">@Iago</span> I will come</p> 1.600001007e+09 ZulipMobile",
		"9 Denmark/castle <p><span class=\"user-mention channel-wildcard-mention\" data-user-id=\"*\">@all</span> the gates close at dusk</p> 1.600001008e+09 website",
		"10 Denmark/general chat <p>general chat works too</p> 1.600001009e+09 website",
		"11 Denmark/channel events <p><span class=\"user-mention silent\" data-user-id=\"10\">Iago</span> created this channel.</p> 1.60000101e+09 Internal",
	}
	paths := map[string]string{} // the uploaded files' path ids here, by name
	mustView(t, st, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketAttachments).ForEach(func(k, _ []byte) error {
			paths[filepath.Base(string(k))] = string(k)
			return nil
		})
	})
	path := paths["plan.txt"]
	wantMsgs[2] = strings.Replace(wantMsgs[2], "PATH", path, 1)
	wantMsgs[6] = strings.ReplaceAll(wantMsgs[6], "IMAGE", paths["castle.png"])
	if !reflect.DeepEqual(msgText, wantMsgs) {
		t.Errorf("hamlet's messages:\n got %q\nwant %q", msgText, wantMsgs)
	}
	if got := asJSON(object(messages[0])["reactions"]); got != `[{"emoji_code":"1f419","emoji_name":"octopus","reaction_type":"unicode_emoji","user_id":11}]` {
		t.Errorf("reactions on 100: got %s", got)
	}
	if got := asJSON(object(messages[1])["reactions"]); got != `[{"emoji_code":"3","emoji_name":"partyparrot","reaction_type":"realm_emoji","user_id":10}]` {
		t.Errorf("reactions on 101 (a custom emoji's, imported with it): got %s", got)
	}
	if got := asJSON(object(messages[1])["edit_history"]); got != `[{"prev_content":"Nay","prev_rendered_content":"\u003cp\u003eNay\u003c/p\u003e","timestamp":1600001100,"user_id":11}]` ||
		object(messages[1])["last_edit_timestamp"] != 1600001100.0 {
		t.Errorf("101's edit history: got %s, last edited %v", got, object(messages[1])["last_edit_timestamp"])
	}
	if got := asJSON(object(messages[3])["reactions"]); !strings.Contains(got, `"emoji_name":"heart"`) || asJSON(object(messages[3])["flags"]) != `[]` {
		t.Errorf("the group's message for hamlet: reactions %s, flags %s; want the heart, unread", got, asJSON(object(messages[3])["flags"]))
	}
	_, iagos := viewOf(t, e, &iago)
	if flags := asJSON(object(iagos[slices.IndexFunc(iagos, func(m any) bool { return object(m)["id"] == 4.0 })])["flags"]); flags != `["read"]` {
		t.Errorf("iago's flags on the group's message: got %s, want read", flags)
	}
	if flags := asJSON(object(iagos[1])["flags"]); flags != `["read","mentioned"]` {
		t.Errorf("iago's flags on 101 (a group mention): got %s", flags)
	}
	if realm, rest, _ := strings.Cut(path, "/"); !validUploadPath(realm, rest) {
		t.Errorf("the uploaded file's path here: got %q, want one of zulite's shape", path)
	}
	if rec := e.fetch(t, &hamlet, "/user_uploads/"+path); rec.Code != 200 || rec.Body.String() != "the plans" {
		t.Errorf("the uploaded file: got %d %q", rec.Code, rec.Body.String())
	}

	// zerver_defaultstream's channel (Denmark) is a default channel, and
	// the deactivated one (Old) is archived, neither left out.
	importedChannels, _ := st.channels()
	var kinds []string
	for _, ch := range importedChannels {
		kinds = append(kinds, fmt.Sprint(ch.Name, " default=", ch.Default, " archived=", ch.Archived))
	}
	if want := []string{"Denmark default=true archived=false", "Verona default=false archived=false", "Old default=false archived=true"}; !slices.Equal(kinds, want) {
		t.Errorf("the channels imported:\n got %q\nwant %q", kinds, want)
	}
	text := report.String()
	for _, gone := range []string{"archived channels", "zerver_defaultstream"} {
		if strings.Contains(text, gone) {
			t.Errorf("the report leaves out %q, which the import reads:\n%s", gone, text)
		}
	}
	for _, left := range []string{
		"1 moderators",
		"also imported: 1 custom emoji",
		"3 system bots",
		"1 group mentions",
	} {
		if !strings.Contains(text, left) {
			t.Errorf("the report lacks %q:\n%s", left, text)
		}
	}
	for _, bookkeeping := range []string{"zerver_usergroup", "zerver_realmauditlog", "zerver_presencesequence", "import_source"} {
		if strings.Contains(text, bookkeeping) {
			t.Errorf("the report lists %s, bookkeeping zulite derives or needs not:\n%s", bookkeeping, text)
		}
	}
	for _, imported := range []string{"zerver_usertopic", "zerver_muteduser", "zerver_alertword", "topic settings", "muted users", "alert words"} {
		if strings.Contains(text, imported) {
			t.Errorf("the report lists %s, which the import brings over whole:\n%s", imported, text)
		}
	}
}

// TestImport_GenerateLargeExport writes a Zulip export of
// $ZULITE_GENERATE_MESSAGES messages (default 1,000,000) into
// $ZULITE_GENERATE_EXPORT, for measuring an import's time and memory
// with the binary (the notes give the command); it is skipped without
// the variable. 40 users, 8 channels of 10 subscribers each, 1000
// messages a file as Zulip writes them, each message with a row for
// each subscriber: read but for the newest 1% and one in 97, one in
// 211 starred, one in 53 mentioning.
func TestImport_GenerateLargeExport(t *testing.T) {
	dir := os.Getenv("ZULITE_GENERATE_EXPORT")
	if dir == "" {
		t.Skip("set ZULITE_GENERATE_EXPORT=DIR (and ZULITE_GENERATE_MESSAGES=N) to write a large export")
	}
	total := 1_000_000
	if n := os.Getenv("ZULITE_GENERATE_MESSAGES"); n != "" {
		fmt.Sscan(n, &total)
	}
	writeSyntheticExport(t, dir, total)
}

// The synthetic export's shape: 40 users, 8 channels of 10 subscribers.
const synthUsers, synthChannels, synthPerChannel = 40, 8, 10

// synthSubscriber is the kth subscriber of channel c.
func synthSubscriber(c, k int) int { return (c*7+k*3)%synthUsers + 1 }

// synthRead tells whether message m is read by channel's kth subscriber.
func synthRead(total, m, k int) bool { return !(m > total-total/100 || (m+k)%97 == 0) }

// writeSyntheticExport writes an export of total messages into dir.
func writeSyntheticExport(t testing.TB, dir string, total int) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const users, channels, perChannel = synthUsers, synthChannels, synthPerChannel
	var realm strings.Builder
	realm.WriteString(`{"zerver_realm":[{"id":2,"string_id":"big","deactivated":false,"date_created":1500000000}],"zerver_client":[{"id":1,"name":"website"}],"zerver_userprofile":[`)
	for u := 1; u <= users; u++ {
		role := 400
		if u == 1 {
			role = 100
		}
		fmt.Fprintf(&realm, `%s{"id":%d,"email":"user%d@big.example","delivery_email":"user%d@big.example","full_name":"User %d","role":%d,"is_bot":false,"is_active":true,"date_joined":1500000000}`,
			map[bool]string{true: "", false: ","}[u == 1], u, u, u, u, role)
	}
	realm.WriteString(`],"zerver_stream":[`)
	for c := 1; c <= channels; c++ {
		fmt.Fprintf(&realm, `%s{"id":%d,"name":"channel %d","description":"","invite_only":false,"date_created":1500000000}`, map[bool]string{true: "", false: ","}[c == 1], c, c)
	}
	realm.WriteString(`],"zerver_recipient":[`)
	for c := 1; c <= channels; c++ {
		fmt.Fprintf(&realm, `%s{"id":%d,"type":2,"type_id":%d}`, map[bool]string{true: "", false: ","}[c == 1], 100+c, c)
	}
	realm.WriteString(`],"zerver_subscription":[`)
	subscriber := synthSubscriber
	first := true
	for c := 1; c <= channels; c++ {
		seen := map[int]bool{}
		for k := 0; k < perChannel; k++ {
			u := subscriber(c, k)
			if seen[u] {
				continue
			}
			seen[u] = true
			fmt.Fprintf(&realm, `%s{"user_profile":%d,"recipient":%d,"active":true,"color":"#76ce90"}`, map[bool]string{true: "", false: ","}[first], u, 100+c)
			first = false
		}
	}
	realm.WriteString(`],"zerver_reaction":[`)
	for i := 1; i <= total/100; i++ {
		fmt.Fprintf(&realm, `%s{"message":%d,"user_profile":%d,"emoji_name":"octopus","emoji_code":"1f419","reaction_type":"unicode_emoji"}`,
			map[bool]string{true: "", false: ","}[i == 1], i*100, subscriber(i*100%channels+1, 0))
	}
	realm.WriteString(`]}`)
	if err := os.WriteFile(filepath.Join(dir, "realm.json"), []byte(realm.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, id := 1, 1; id <= total; file++ {
		var b strings.Builder
		b.WriteString(`{"zerver_message":[`)
		from := id
		for ; id <= total && id < from+1000; id++ {
			c := id%channels + 1
			fmt.Fprintf(&b, `%s{"id":%d,"sender":%d,"recipient":%d,"subject":"topic %d","content":"message number %d, with some words to make it a typical length","rendered_content":"<p>message number %d, with some words to make it a typical length</p>","date_sent":%d,"sending_client":1,"last_edit_time":null}`,
				map[bool]string{true: "", false: ","}[id == from], id, subscriber(c, id%perChannel), 100+c, id%50, id, id, 1500000000+id)
		}
		b.WriteString(`],"zerver_usermessage":[`)
		for m := from; m < id; m++ {
			c := m%channels + 1
			for k := 0; k < perChannel; k++ {
				flags := 0
				if synthRead(total, m, k) {
					flags = 1
				}
				if (m+k)%211 == 0 {
					flags |= 2
				}
				if (m+k)%53 == 0 {
					flags |= 8
				}
				fmt.Fprintf(&b, `%s{"user_profile":%d,"message":%d,"flags_mask":%d}`, map[bool]string{true: "", false: ","}[m == from && k == 0], subscriber(c, k), m, flags)
			}
		}
		b.WriteString(`]}`)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("messages-%06d.json", file)), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestImport_ScatteredUnreadIsAWatermarkAndTheUnreadIDs(t *testing.T) {
	t.Parallel() // independent of the other tests: its own store or server

	const total = importRemapFiles*zulipexport.MessagesPerFile + 1 // the database is remapped once on the way
	dir := filepath.Join(t.TempDir(), "synthetic")
	writeSyntheticExport(t, dir, total)
	st := mustOpenStore(t)
	if _, err := st.importZulip(dir); err != nil {
		t.Fatal(err)
	}
	for c := 1; c <= synthChannels; c++ {
		for k := range synthPerChannel {
			u := synthSubscriber(c, k)
			var want []uint64
			for m := 1; m <= total; m++ {
				if m%synthChannels+1 == c && !synthRead(total, m, k) {
					want = append(want, uint64(m))
				}
			}
			if got := mustUnread(t, st, user{ID: uint64(u)}, channel{ID: uint64(c)}); !reflect.DeepEqual(got, want) {
				t.Fatalf("user %d's unread in channel %d: got %d ids %v…, want %d ids %v…", u, c, len(got), got[:min(5, len(got))], len(want), want[:min(5, len(want))])
			}
		}
	}
	mustView(t, st, func(tx *bbolt.Tx) error {
		if k, _ := tx.Bucket(bucketReadAbove).Cursor().First(); k != nil {
			t.Errorf("read_above holds sets: the read messages were listed instead of the unread ones")
		}
		return nil
	})
}

// importThroughBinary runs `zulite import DIR --db DB` with the built
// binary, DB in a new directory of its own, and answers the run and that
// directory's names afterwards.
func importThroughBinary(t *testing.T, bin, dir string) (e2eCLIResult, []string) {
	t.Helper()
	dbDir := t.TempDir()
	r := e2eRunCLI(t, bin, "import", dir, "--db", filepath.Join(dbDir, "z.db"))
	return r, dirNames(t, dbDir)
}

// dirNames is the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestImport_FilesOutsideTheExportAreRefusedAndLeaveNothing: a hostile
// export names a file outside it in uploads/ or avatars/records.json,
// by a path with .. or an absolute one, or reaches one through a
// symlink (to an absolute or a relative target, of the file or of a
// directory on its way) or a hard link; the import copied it, and it was
// served as the upload or the avatar. Now the import refuses, naming the
// record, and leaves no database behind.
func TestImport_FilesOutsideTheExportAreRefusedAndLeaveNothing(t *testing.T) {
	bin := e2eBuildBinary(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "zuliprc")
	if err := os.WriteFile(secret, []byte("another server's credentials\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const plan = "5/ab/cdefghijklmnopqrstuvwxyz/plan.txt"
	uploadRecord := func(path string) string {
		return fmt.Sprintf(`[{"path": %q, "s3_path": %q, "realm_id": 5, "user_profile_id": 11, "content_type": "text/plain", "size": 9}]`, path, plan)
	}
	avatarRecord := func(path string) string {
		return fmt.Sprintf(`[{"path": %q, "s3_path": "5/avatar", "realm_id": 5, "user_profile_id": 11, "content_type": "image/png"}]`, path)
	}
	// relTo is the secret's path relative to the export's folder sub.
	relTo := func(dir, sub string) string {
		rel, err := filepath.Rel(filepath.Join(dir, sub), secret)
		if err != nil {
			t.Fatal(err)
		}
		return rel
	}
	symlink := func(t *testing.T, target, link string) {
		if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		// hostile makes the export in dir hostile.
		hostile func(t *testing.T, dir string)
		want    string
	}{
		{"an upload record's path climbs out with ..", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "uploads", "records.json"), uploadRecord(relTo(dir, "uploads")))
		}, `uploads/records.json: record 1: path "../`},
		{"an upload record's path is absolute", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "uploads", "records.json"), uploadRecord(secret))
		}, fmt.Sprintf(`uploads/records.json: record 1: path %q is not inside the export`, secret)},
		{"an avatar record's path climbs out with ..", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "avatars", "records.json"), avatarRecord(relTo(dir, "avatars")))
		}, `avatars/records.json: record 1: path "../`},
		{"an upload is a symlink to an absolute path outside", func(t *testing.T, dir string) {
			symlink(t, secret, filepath.Join(dir, "uploads", plan))
		}, `uploads/records.json: record 2: path "` + plan + `": path escapes from parent`},
		{"an upload is a symlink to a relative path outside", func(t *testing.T, dir string) {
			link := filepath.Join(dir, "uploads", plan)
			symlink(t, relTo(dir, filepath.Join("uploads", filepath.Dir(plan))), link)
		}, `uploads/records.json: record 2: path "` + plan + `": path escapes from parent`},
		{"a directory on an upload's way is a symlink outside", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(outside, "ab", "cdefghijklmnopqrstuvwxyz", "plan.txt"), "outside")
			if err := os.RemoveAll(filepath.Join(dir, "uploads", "5")); err != nil {
				t.Fatal(err)
			}
			symlink(t, outside, filepath.Join(dir, "uploads", "5"))
		}, `uploads/records.json: record 2: path "` + plan + `": path escapes from parent`},
		{"an avatar is a symlink to an absolute path outside", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "avatars", "records.json"), avatarRecord("5/avatar.png"))
			symlink(t, secret, filepath.Join(dir, "avatars", "5", "avatar.png"))
		}, `avatars/records.json: record 1: path "5/avatar.png": path escapes from parent`},
		{"an upload is a hard link to a file outside", func(t *testing.T, dir string) {
			path := filepath.Join(dir, "uploads", plan)
			os.Remove(path)
			if err := os.Link(secret, path); err != nil {
				t.Skipf("no hard link from the export to %s: %v", outside, err)
			}
		}, `uploads/records.json: record 2: path "` + plan + `": a hard link (2 names): it may be a file outside the export`},
		{"an upload is a named pipe", func(t *testing.T, dir string) {
			path := filepath.Join(dir, "uploads", plan)
			os.Remove(path)
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, `uploads/records.json: record 2: path "` + plan + `": not a regular file`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := zulipCorpus(t)
			c.hostile(t, dir)
			r, left := importThroughBinary(t, bin, dir)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("got exit %d, stderr %q; want a non-zero exit and one line with %q", r.code, r.stderr, c.want)
			}
			if len(left) != 0 {
				t.Errorf("files left beside the database: got %v, want none", left)
			}
		})
	}

	// A symlink that stays inside the export is followed: it reads no
	// more than the export's author could have copied in.
	dir := zulipCorpus(t)
	writeFile(t, filepath.Join(dir, "elsewhere", "plan.txt"), "the plans")
	symlink(t, "../../../../elsewhere/plan.txt", filepath.Join(dir, "uploads", plan))
	r, _ := importThroughBinary(t, bin, dir)
	r.wantOK(t, "an import with a symlink inside the export")
	if !strings.Contains(r.stdout, "2 uploaded files") {
		t.Errorf("an import with a symlink inside the export: got %q, want 2 uploaded files", r.stdout)
	}
}

// An import that panics leaves no half-made database either: its error
// is nil then, and the cleanup used to look only at the error.
func TestImport_APanicLeavesNothingAndGoesOn(t *testing.T) {
	db := filepath.Join(t.TempDir(), "z.db")
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		var err error
		defer removeFailedImport(db, &err)
		writeFile(t, db, "half a database")
		writeFile(t, filepath.Join(uploadsDir(db), "tmp", "upload-1"), "half a file")
		panic("an importer's bug")
	}()
	if recovered != "an importer's bug" {
		t.Errorf("the panic: got %v, want it to go on", recovered)
	}
	for _, path := range []string{db, uploadsDir(db)} {
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after a panic: got %v, want it removed", filepath.Base(path), err)
		}
	}
}

// writeFile writes text to path, making its directories.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestImport_AFailedImportLeavesNothing: an import that fails, at its
// first file or after it has written messages and uploaded files, leaves
// neither a database file nor an upload directory, so that the next
// attempt starts from nothing.
func TestImport_AFailedImportLeavesNothing(t *testing.T) {
	bin := e2eBuildBinary(t)
	for _, broken := range []string{"realm.json", "messages-000002.json"} {
		t.Run(broken, func(t *testing.T) {
			dir := zulipCorpus(t)
			writeFile(t, filepath.Join(dir, broken), `{"zerver_message": [{"id": 200,`)
			r, left := importThroughBinary(t, bin, dir)
			if r.code == 0 || !strings.Contains(r.stderr, broken) {
				t.Errorf("got exit %d, stderr %q; want a non-zero exit naming %s", r.code, r.stderr, broken)
			}
			if len(left) != 0 {
				t.Errorf("files left beside the database: got %v, want none", left)
			}
		})
	}
}

// TestImport_AnExistingDatabaseIsRefusedUntouched: the import makes its
// database file and upload directory; one already there, even empty, is
// refused before anything is written, so that a failed import can remove
// what it made and nothing else.
func TestImport_AnExistingDatabaseIsRefusedUntouched(t *testing.T) {
	bin := e2eBuildBinary(t)
	dir := zulipCorpus(t)
	dbDir := t.TempDir()
	db := filepath.Join(dbDir, "z.db")
	// makes an empty database, and says so on stderr
	if r := e2eRunCLI(t, bin, "user", "list", "--db", db); r.code != 0 || !strings.HasPrefix(r.stderr, "Created a new database: "+db+" (") {
		t.Fatalf("user list on no file: got exit %d, stderr %q; want exit 0 and the new database announced", r.code, r.stderr)
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	r := e2eRunCLI(t, bin, "import", dir, "--db", db)
	if r.code == 0 || !strings.Contains(r.stderr, db+" exists") {
		t.Errorf("an import into an empty database: got exit %d, stderr %q; want a non-zero exit saying %s exists", r.code, r.stderr, db)
	}
	if after, err := os.ReadFile(db); err != nil || !slices.Equal(after, before) {
		t.Errorf("the database changed (%v)", err)
	}
	if got := dirNames(t, dbDir); !slices.Equal(got, []string{"z.db"}) {
		t.Errorf("files beside the database: got %v, want [z.db]", got)
	}

	// An upload directory without its database is another's blobs.
	fresh := filepath.Join(dbDir, "fresh.db")
	if err := os.Mkdir(uploadsDir(fresh), 0o700); err != nil {
		t.Fatal(err)
	}
	r = e2eRunCLI(t, bin, "import", dir, "--db", fresh)
	if r.code == 0 || !strings.Contains(r.stderr, uploadsDir(fresh)+" exists") {
		t.Errorf("an import beside an upload directory: got exit %d, stderr %q; want a non-zero exit saying it exists", r.code, r.stderr)
	}
	if got := dirNames(t, dbDir); !slices.Equal(got, []string{"fresh.db.uploads", "z.db"}) {
		t.Errorf("files beside the database: got %v, want [fresh.db.uploads z.db]", got)
	}
}

// TestImport_OwnViewRowsOfNoOneImportedAreReported: rows of
// zerver_usertopic, zerver_muteduser and zerver_alertword that name a
// user or channel the import did not bring, or no policy, are named in
// the report and write nothing; a topic or word there twice in other
// cases is kept once, as the API keeps it.
func TestImport_OwnViewRowsOfNoOneImportedAreReported(t *testing.T) {
	dir := zulipCorpus(t)
	path := filepath.Join(dir, "realm.json")
	var realm map[string]any
	readJSONFile(t, path, &realm)
	add := func(table string, rows ...map[string]any) {
		for _, r := range rows {
			realm[table] = append(asList(realm[table]), any(r))
		}
	}
	add("zerver_usertopic",
		map[string]any{"id": 10, "user_profile": 99, "stream": 20, "recipient": 40, "topic_name": "x", "last_updated": 1.0, "visibility_policy": 1},
		map[string]any{"id": 11, "user_profile": 11, "stream": 77, "recipient": 99, "topic_name": "x", "last_updated": 1.0, "visibility_policy": 1},
		map[string]any{"id": 12, "user_profile": 11, "stream": 20, "recipient": 40, "topic_name": "y", "last_updated": 1.0, "visibility_policy": 0},
		map[string]any{"id": 13, "user_profile": 11, "stream": 20, "recipient": 40, "topic_name": "CASTLE", "last_updated": 1.0, "visibility_policy": 3})
	add("zerver_muteduser",
		map[string]any{"id": 10, "user_profile": 11, "muted_user": 11, "date_muted": 1.0},
		map[string]any{"id": 11, "user_profile": 11, "muted_user": 99, "date_muted": 1.0})
	add("zerver_alertword",
		map[string]any{"id": 10, "realm": 5, "user_profile": 99, "word": "lost"},
		map[string]any{"id": 11, "realm": 5, "user_profile": 11, "word": "DUSK"})
	data, err := json.Marshal(realm)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	st := mustOpenStore(t)
	report, err := st.importZulip(dir)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	for _, left := range []string{
		"2 topic settings (muted, unmuted, followed) of channels not imported, or of no policy",
		"2 topic settings, muted users and alert words of users not imported",
		"2 mutes of oneself or of users not imported",
	} {
		if !strings.Contains(report.String(), left) {
			t.Errorf("the report lacks %q:\n%s", left, report)
		}
	}
	rows, _ := st.userTopics(11)
	words, _ := st.alertWords(11)
	mutes, _ := st.mutedUsers(11)
	if got := fmt.Sprint(rows, words, mutes); got != "[{20 castle 1 1600000500} {21 balcony 2 1600000502}] [dusk king] [{13 1600000701}]" {
		t.Errorf("hamlet's topics, alert words and mutes: got %s", got)
	}
	mustView(t, st, func(tx *bbolt.Tx) error {
		checkUserTopicIndexes(t, tx)
		return nil
	})
}
