package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// postDrafts creates drafts from JSON and answers their ids.
func (e *testEnv) postDrafts(t *testing.T, a *account, drafts string) []uint64 {
	t.Helper()
	r := e.request(t, http.MethodPost, "/api/v1/drafts", url.Values{"drafts": {drafts}}, a)
	wantAPISuccess(t, r)
	var ids []uint64
	for _, v := range asList(r.body["ids"]) {
		ids = append(ids, uint64(v.(float64)))
	}
	return ids
}

// plainJSON is v as a client decodes it, for comparing with what a
// client got.
func plainJSON(v any) any {
	data, _ := json.Marshal(v)
	var out any
	json.Unmarshal(data, &out)
	return out
}

func (e *testEnv) storedDrafts(t *testing.T, a *account) []draftObject {
	t.Helper()
	d, err := e.st.drafts(a.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDrafts_CreateEditDeleteToldToOwnQueuesAndInRegister(t *testing.T) {
	e := newTestEnv(t)
	aliceQueue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["drafts"]`}}).str("queue_id")
	bobQueue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["drafts"]`}}).str("queue_id")
	general := strconv.FormatUint(e.general.ID, 10)
	ids := e.postDrafts(t, &e.alice, `[{"type":"stream","to":[`+general+`],"topic":"  plans ","content":"  hello\n\n","timestamp":1595479019.5},`+
		`{"type":"private","to":[`+idKey(e.bob)+`,`+idKey(e.alice)+`],"topic":"ignored","content":"hi bob","timestamp":1595479020},`+
		`{"type":"private","to":[],"topic":"x","content":"nobody yet","timestamp":1595479021},`+
		`{"type":"private","to":[`+idKey(e.alice)+`],"topic":"","content":"note to self","timestamp":1595479022}]`)
	if len(ids) != 4 {
		t.Fatalf("ids: %v", ids)
	}
	want := []draftObject{
		{ID: ids[0], Type: "stream", To: []uint64{e.general.ID}, Topic: "  plans ", Content: "hello", Timestamp: 1595479019},
		{ID: ids[1], Type: "private", To: []uint64{e.bob.ID}, Topic: "", Content: "hi bob", Timestamp: 1595479020},
		{ID: ids[2], Type: "", To: []uint64{}, Topic: "", Content: "nobody yet", Timestamp: 1595479021},
		{ID: ids[3], Type: "private", To: []uint64{e.alice.ID}, Topic: "", Content: "note to self", Timestamp: 1595479022},
	}
	r := e.request(t, http.MethodGet, "/api/v1/drafts", nil, &e.alice)
	wantAPISuccess(t, r)
	if !jsonEqual(r.body["drafts"], plainJSON(want)) || r.body["count"] != float64(4) {
		t.Errorf("GET drafts: got %s, want %+v", r.raw, want)
	}
	got := e.pollNow(t, &e.alice, aliceQueue, -1)
	if len(got) != 1 || !jsonEqual(got[0], plainJSON(map[string]any{"type": "drafts", "op": "add", "drafts": want, "id": 0})) {
		t.Errorf("alice's add event: got %v", got)
	}
	if got := e.pollNow(t, &e.bob, bobQueue, -1); len(got) != 0 {
		t.Errorf("bob heard of alice's drafts: %v", got)
	}
	// Register: newest first.
	reg := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["drafts"]`}})
	if !jsonEqual(reg.body["drafts"], plainJSON([]draftObject{want[3], want[2], want[1], want[0]})) {
		t.Errorf("register's drafts: got %v", reg.body["drafts"])
	}
	// Edit: the whole draft is replaced.
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/drafts/"+strconv.FormatUint(ids[0], 10), url.Values{"draft": {
		`{"type":"stream","to":[` + strconv.FormatUint(e.secret.ID, 10) + `],"topic":"` + strings.Repeat("t", 70) + `","content":"secret plans","timestamp":1595479100}`}}, &e.alice))
	edited := draftObject{ID: ids[0], Type: "stream", To: []uint64{e.secret.ID}, Topic: strings.Repeat("t", 57) + "...", Content: "secret plans", Timestamp: 1595479100}
	got = e.pollNow(t, &e.alice, aliceQueue, 0)
	if len(got) != 1 || !jsonEqual(got[0], plainJSON(map[string]any{"type": "drafts", "op": "update", "draft": edited, "id": 1})) {
		t.Errorf("update event: got %v", got)
	}
	if d := e.storedDrafts(t, &e.alice); !jsonEqual(d[len(d)-1], edited) {
		t.Errorf("after the edit: %+v", d)
	}
	// Delete.
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/drafts/"+strconv.FormatUint(ids[1], 10), nil, &e.alice))
	got = e.pollNow(t, &e.alice, aliceQueue, 1)
	if len(got) != 1 || !jsonEqual(got[0], plainJSON(map[string]any{"type": "drafts", "op": "remove", "draft_id": ids[1], "id": 2})) {
		t.Errorf("remove event: got %v", got)
	}
	if d := e.storedDrafts(t, &e.alice); len(d) != 3 {
		t.Errorf("after the delete: %+v", d)
	}
	// Someone else's draft does not exist for bob.
	wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/drafts/"+strconv.FormatUint(ids[0], 10), nil, &e.bob), http.StatusNotFound, "BAD_REQUEST", "Draft does not exist")
	if d := e.storedDrafts(t, &e.alice); len(d) != 3 {
		t.Errorf("bob's delete changed alice's drafts: %+v", d)
	}
}

func TestDrafts_RefusalsInZulipsWordsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	general := strconv.FormatUint(e.general.ID, 10)
	secret := strconv.FormatUint(e.secret.ID, 10)
	gone, _ := mustCreateUser(t, e.st, "gone@example.com", roleMember, false)
	e.st.setActive(gone.Email, false)
	ok := `{"type":"stream","to":[` + general + `],"topic":"t","content":"c"}`
	for _, c := range []struct{ rule, drafts, msg string }{
		{"drafts is JSON", `[`, "drafts is not valid JSON"},
		{"drafts is a list", `{}`, "drafts is not a list"},
		{"a draft is a dict", `[` + ok + `,3]`, "Invalid drafts[1]: Input should be a valid dictionary or instance of DraftData"},
		{"type is required", `[{"to":[],"topic":"","content":"c"}]`, `Invalid drafts[0]["type"]: Field required`},
		{"type is one of three", `[{"type":"channel","to":[],"topic":"","content":"c"}]`, `Invalid drafts[0]["type"]`},
		{"to is a list", `[{"type":"","to":5,"topic":"","content":"c"}]`, `drafts[0]["to"] is not a list`},
		{"to holds integers", `[{"type":"","to":[1,"2"],"topic":"","content":"c"}]`, `drafts[0]["to"][1] is not an integer`},
		{"topic is a string", `[{"type":"","to":[],"topic":null,"content":"c"}]`, `drafts[0]["topic"] is not a string`},
		{"content is not blank", `[{"type":"","to":[],"topic":"","content":"  \n "}]`, `drafts[0]["content"] cannot be blank`},
		{"timestamp is a number", `[{"type":"","to":[],"topic":"","content":"c","timestamp":"now"}]`, `drafts[0]["timestamp"]["int"] is not an integer`},
		{"no other keys", `[{"type":"","to":[],"topic":"","content":"c","id":3}]`, `Argument "id" at drafts[0]["id"] is unexpected`},
		{"no null bytes in content", `[{"type":"","to":[],"topic":"","content":"a\u0000b"}]`, "Message must not contain null bytes"},
		{"timestamp not negative", `[{"type":"stream","to":[],"topic":"","content":"c","timestamp":-10.1}]`, "Timestamp must not be negative."},
		{"no null bytes in topic", `[{"type":"stream","to":[` + general + `],"topic":"a\u0000","content":"c"}]`, "Topic must not contain null bytes"},
		{"one channel", `[{"type":"stream","to":[],"topic":"","content":"c"}]`, "Must specify exactly 1 channel ID for channel messages"},
		{"a channel bob may access", `[{"type":"stream","to":[` + secret + `],"topic":"","content":"c"}]`, "Invalid channel ID"},
		{"a channel that exists", `[{"type":"stream","to":[99999],"topic":"","content":"c"}]`, "Invalid channel ID"},
		{"users that exist", `[` + ok + `,{"type":"private","to":[99999],"topic":"","content":"c"}]`, "Invalid user ID 99999"},
		{"users still active", `[{"type":"private","to":[` + strconv.FormatUint(gone.ID, 10) + `],"topic":"","content":"c"}]`, "'gone@example.com' is no longer using Zulip."},
	} {
		t.Run(c.rule, func(t *testing.T) {
			wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/drafts", url.Values{"drafts": {c.drafts}}, &e.bob), http.StatusBadRequest, "BAD_REQUEST", c.msg)
			if d := e.storedDrafts(t, &e.bob); len(d) != 0 {
				t.Errorf("a refused request stored %+v", d)
			}
		})
	}
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/drafts", nil, &e.bob), http.StatusBadRequest, "REQUEST_VARIABLE_MISSING", "Missing 'drafts' argument")
	// PATCH reads one draft, named draft.
	id := e.postDrafts(t, &e.bob, `[`+ok+`]`)[0]
	path := "/api/v1/drafts/" + strconv.FormatUint(id, 10)
	wantAPIError(t, e.request(t, http.MethodPatch, path, url.Values{"draft": {`{"type":"","to":[],"topic":"","content":""}`}}, &e.bob), http.StatusBadRequest, "BAD_REQUEST", `draft["content"] cannot be blank`)
	wantAPIError(t, e.request(t, http.MethodPatch, "/api/v1/drafts/99999", url.Values{"draft": {ok}}, &e.bob), http.StatusNotFound, "BAD_REQUEST", "Draft does not exist")
	wantAPIError(t, e.request(t, http.MethodPatch, path, url.Values{"draft": {ok}}, &e.alice), http.StatusNotFound, "BAD_REQUEST", "Draft does not exist")
	wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/drafts/99999999999999999999999", nil, &e.bob), http.StatusNotFound, "BAD_REQUEST", "Draft does not exist")
	if d := e.storedDrafts(t, &e.bob); len(d) != 1 || d[0].Topic != "t" || d[0].Content != "c" {
		t.Errorf("refused edits changed the draft: %+v", d)
	}
}

func TestDrafts_SynchronizationOffRefusesAndForgets(t *testing.T) {
	e := newTestEnv(t)
	q := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["drafts","user_settings"]`}}).str("queue_id")
	id := e.postDrafts(t, &e.alice, `[{"type":"","to":[],"topic":"","content":"kept on the server"}]`)[0]
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"enable_drafts_synchronization": {"false"}}, &e.alice))
	// The drafts go, told to nobody: the clients keep their own copies.
	got := e.pollNow(t, &e.alice, q, 0)
	if len(got) != 1 || got[0]["type"] != "user_settings" || got[0]["property"] != "enable_drafts_synchronization" {
		t.Errorf("after turning sync off: got %v, want the settings event alone", got)
	}
	if d, _ := e.st.drafts(e.alice.ID, false); len(d) != 0 {
		t.Errorf("drafts kept after sync went off: %+v", d)
	}
	reg := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["drafts"]`}})
	if !jsonEqual(reg.body["drafts"], []any{}) {
		t.Errorf("register's drafts: %v", reg.body["drafts"])
	}
	idPath := "/api/v1/drafts/" + strconv.FormatUint(id, 10)
	for _, c := range []struct {
		method, path string
		params       url.Values
	}{
		{http.MethodGet, "/api/v1/drafts", nil},
		{http.MethodPost, "/api/v1/drafts", url.Values{"drafts": {"[]"}}},
		{http.MethodPatch, idPath, url.Values{"draft": {"{}"}}},
		{http.MethodDelete, idPath, nil},
	} {
		wantAPIError(t, e.request(t, c.method, c.path, c.params, &e.alice), http.StatusBadRequest, "BAD_REQUEST", "User has disabled synchronizing drafts.")
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"enable_drafts_synchronization": {"true"}}, &e.alice))
	e.postDrafts(t, &e.alice, `[{"type":"","to":[],"topic":"","content":"again"}]`)
}

func TestDrafts_PerUserBound(t *testing.T) {
	e := newTestEnv(t)
	var b strings.Builder
	b.WriteString("[")
	for i := range maxDraftsPerUser {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"","to":[],"topic":"","content":"d%d","timestamp":%d}`, i, 1000+i)
	}
	b.WriteString("]")
	e.postDrafts(t, &e.alice, b.String())
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/drafts", url.Values{"drafts": {`[{"type":"","to":[],"topic":"","content":"one more"}]`}}, &e.alice),
		http.StatusBadRequest, "BAD_REQUEST", "You may keep at most 1000 drafts.")
	if d := e.storedDrafts(t, &e.alice); len(d) != maxDraftsPerUser {
		t.Errorf("%d drafts stored, want %d", len(d), maxDraftsPerUser)
	}
}

func TestSavedSnippets_CreateEditDeleteToldToOwnQueuesAndInRegister(t *testing.T) {
	e := newTestEnv(t)
	q := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["saved_snippets"]`}}).str("queue_id")
	bobQueue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["saved_snippets"]`}}).str("queue_id")
	r := e.request(t, http.MethodPost, "/api/v1/saved_snippets", url.Values{"title": {"  Greeting "}, "content": {"\n Hello there! \n"}}, &e.alice)
	wantAPISuccess(t, r)
	id := uint64(r.body["saved_snippet_id"].(float64))
	got := e.pollNow(t, &e.alice, q, -1)
	if len(got) != 1 || got[0]["op"] != "add" {
		t.Fatalf("add event: %v", got)
	}
	sn := object(got[0]["saved_snippet"])
	created := sn["date_created"]
	if !jsonEqual(sn, plainJSON(map[string]any{"id": id, "title": "Greeting", "content": "Hello there!", "date_created": created})) || created.(float64) < 1 {
		t.Errorf("add event's snippet: %v", sn)
	}
	if got := e.pollNow(t, &e.bob, bobQueue, -1); len(got) != 0 {
		t.Errorf("bob heard of alice's snippet: %v", got)
	}
	r = e.request(t, http.MethodGet, "/api/v1/saved_snippets", nil, &e.alice)
	if !jsonEqual(r.body["saved_snippets"], []any{sn}) {
		t.Errorf("GET saved_snippets: %s", r.raw)
	}
	path := "/api/v1/saved_snippets/" + strconv.FormatUint(id, 10)
	// Nothing to change: success, and no event.
	wantAPISuccess(t, e.request(t, http.MethodPatch, path, nil, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPatch, path, url.Values{"content": {" Hi! "}}, &e.alice))
	got = e.pollNow(t, &e.alice, q, 0)
	sn["content"] = "Hi!"
	if len(got) != 1 || !jsonEqual(got[0], plainJSON(map[string]any{"type": "saved_snippets", "op": "update", "saved_snippet": sn, "id": 1})) {
		t.Errorf("update event: %v", got)
	}
	reg := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["saved_snippets"]`}})
	if !jsonEqual(reg.body["saved_snippets"], []any{sn}) {
		t.Errorf("register's saved_snippets: %v", reg.body["saved_snippets"])
	}
	reg = e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["saved_snippets"]`}})
	if !jsonEqual(reg.body["saved_snippets"], []any{}) {
		t.Errorf("bob's register lists %v", reg.body["saved_snippets"])
	}
	wantAPIError(t, e.request(t, http.MethodDelete, path, nil, &e.bob), http.StatusNotFound, "BAD_REQUEST", "Saved snippet does not exist.")
	wantAPISuccess(t, e.request(t, http.MethodDelete, path, nil, &e.alice))
	got = e.pollNow(t, &e.alice, q, 1)
	if len(got) != 1 || !jsonEqual(got[0], plainJSON(map[string]any{"type": "saved_snippets", "op": "remove", "saved_snippet_id": id, "id": 2})) {
		t.Errorf("remove event: %v", got)
	}
	if l, _ := e.st.savedSnippets(e.alice.ID); len(l) != 0 {
		t.Errorf("after the delete: %v", l)
	}
}

func TestSavedSnippets_RefusalsInZulipsWordsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		rule   string
		params url.Values
		code   string
		msg    string
	}{
		{"content is required", url.Values{"title": {"t"}}, "REQUEST_VARIABLE_MISSING", "Missing 'content' argument"},
		{"title is required", url.Values{"content": {"c"}}, "REQUEST_VARIABLE_MISSING", "Missing 'title' argument"},
		{"content is checked first", url.Values{"content": {" "}, "title": {" "}}, "BAD_REQUEST", "content cannot be blank"},
		{"title not blank", url.Values{"content": {"c"}, "title": {" \t"}}, "BAD_REQUEST", "title cannot be blank"},
		{"title of at most 60 characters", url.Values{"content": {"c"}, "title": {strings.Repeat("é", 61)}}, "BAD_REQUEST", "title is too long (limit: 60 characters)"},
		{"content of at most 10000 characters", url.Values{"content": {strings.Repeat("x", 10001)}, "title": {"t"}}, "BAD_REQUEST", "content is too long (limit: 10000 characters)"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/saved_snippets", c.params, &e.alice), http.StatusBadRequest, c.code, c.msg)
			if l, _ := e.st.savedSnippets(e.alice.ID); len(l) != 0 {
				t.Errorf("a refused request stored %v", l)
			}
		})
	}
	r := e.request(t, http.MethodPost, "/api/v1/saved_snippets", url.Values{"content": {strings.Repeat("é", 10000)}, "title": {strings.Repeat("t", 60)}}, &e.alice)
	wantAPISuccess(t, r)
	path := "/api/v1/saved_snippets/" + strconv.FormatUint(uint64(r.body["saved_snippet_id"].(float64)), 10)
	wantAPIError(t, e.request(t, http.MethodPatch, path, url.Values{"title": {""}}, &e.alice), http.StatusBadRequest, "BAD_REQUEST", "title cannot be blank")
	wantAPIError(t, e.request(t, http.MethodPatch, "/api/v1/saved_snippets/99999", url.Values{"title": {"x"}}, &e.alice), http.StatusNotFound, "BAD_REQUEST", "Saved snippet does not exist.")
	if l, _ := e.st.savedSnippets(e.alice.ID); len(l) != 1 || l[0].Title != strings.Repeat("t", 60) {
		t.Errorf("refused edits changed the snippet: %v", l)
	}
}

// Saved snippets go over in an export, as Zulip's zerver_savedsnippet
// (export.py exports it and import_realm.py reads it), and come back with
// their ids; drafts stay behind, as Zulip's export leaves zerver_draft out.
func TestExportImport_SavedSnippetsGoOverDraftsStay(t *testing.T) {
	e := newTestEnv(t)
	for _, p := range []url.Values{{"title": {"Welcome"}, "content": {"Hello **there**"}}, {"title": {"Bye"}, "content": {"See you"}}} {
		wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/saved_snippets", p, &e.alice))
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/saved_snippets", url.Values{"title": {"Mine"}, "content": {"bob's"}}, &e.bob))
	e.postDrafts(t, &e.alice, `[{"type":"","to":[],"topic":"","content":"a draft"}]`)
	dir := filepath.Join(t.TempDir(), "export")
	if err := prepareExportDir(dir); err != nil {
		t.Fatal(err)
	}
	report, err := e.st.export(dir, e.st.uploadsDir())
	if err != nil {
		t.Fatal(err)
	}
	if report.SavedSnippets != 3 || report.Drafts != 1 || !strings.Contains(report.String(), "saved snippets: 3 exported; drafts: 1 not exported") {
		t.Errorf("report: %+v\n%s", report, report)
	}
	var realm map[string]json.RawMessage
	data, err := os.ReadFile(filepath.Join(dir, "realm.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &realm); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	json.Unmarshal(realm["zerver_savedsnippet"], &rows)
	if len(rows) != 3 || rows[0]["title"] != "Welcome" || rows[0]["user_profile"] != float64(e.alice.ID) || rows[0]["realm"] == nil {
		t.Errorf("zerver_savedsnippet: %s", realm["zerver_savedsnippet"])
	}
	if _, ok := realm["zerver_draft"]; ok {
		t.Errorf("the export has zerver_draft")
	}
	st := mustOpenStore(t)
	if _, err := st.importZulip(dir); err != nil {
		t.Fatal(err)
	}
	for _, a := range []account{e.alice, e.bob} {
		want, _ := e.st.savedSnippets(a.ID)
		got, _ := st.savedSnippets(a.ID)
		if !jsonEqual(got, want) {
			t.Errorf("%s's snippets after the round trip: got %v, want %v", a.Email, got, want)
		}
	}
	if d, _ := st.drafts(e.alice.ID, false); len(d) != 0 {
		t.Errorf("drafts came over: %v", d)
	}
	// A new snippet after the import takes an id after the imported ones.
	u, _ := st.userByID(e.alice.ID)
	id, err := st.createSnippet(u, "new", "new")
	if err != nil || id != 4 {
		t.Errorf("a snippet after the import: id %d, %v; want 4", id, err)
	}
}
