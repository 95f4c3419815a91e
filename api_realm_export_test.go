package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"zulite/internal/zulipexport"
)

// realmExportsOf is GET /export/realm's exports, as a sees them.
func (e *testEnv) realmExportsOf(t *testing.T, a *account) []any {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/export/realm", nil, a)
	wantAPISuccess(t, r)
	return asList(r.body["exports"])
}

// waitForExport polls GET /export/realm until export id is no longer
// pending, and answers it.
func (e *testEnv) waitForExport(t *testing.T, id uint64) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, v := range e.realmExportsOf(t, &e.admin) {
			if x := object(v); x["id"] == float64(id) && x["pending"] == false {
				return x
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("export %d still pending after 30s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRealmExport_AdminStartsDownloadsAndDeletesAPublicExport: an
// administrator starts an export, which is made in the background; once
// done, its URL gives the administrator a tarball that is an export
// Zulip's importer takes, holding the public channels' messages and no
// direct or private-channel message; the administrators hear of each
// change, members of none; deleting it removes the file.
func TestRealmExport_AdminStartsDownloadsAndDeletesAPublicExport(t *testing.T) {
	e := newTestEnv(t)
	exportActivity(t, e)
	plan := e.mustUpload(t, &e.alice, "plan.txt", "the plan")
	e.sendText(t, e.alice, e.secret, "[plan.txt]("+plan+")") // linked in the private channel only
	adminQueue := e.registerQueue(t, &e.admin, url.Values{"event_types": {`["realm_export"]`}}).str("queue_id")
	ownerQueue := e.registerQueue(t, &e.owner, url.Values{"event_types": {`["realm_export"]`}}).str("queue_id")
	aliceQueue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["realm_export"]`}}).str("queue_id")

	r := e.request(t, http.MethodPost, "/api/v1/export/realm", nil, &e.admin)
	wantAPISuccess(t, r)
	id := mustID(t, r)
	x := e.waitForExport(t, id)
	exportURL, _ := x["export_url"].(string)
	if x["acting_user_id"] != float64(e.admin.ID) || x["export_type"] != float64(exportPublic) || x["failed_timestamp"] != nil || x["deleted_timestamp"] != nil ||
		!strings.HasPrefix(exportURL, "http://zulite.test/user_avatars/exports/"+uploadRealmID+"/") || !strings.HasSuffix(exportURL, ".tar.gz") {
		t.Fatalf("the export: got %v", x)
	}
	if _, ok := x["export_time"].(float64); !ok {
		t.Errorf("export_time: got %v, want a number", x["export_time"])
	}
	token := strings.Split(strings.TrimPrefix(exportURL, "http://zulite.test/user_avatars/exports/"+uploadRealmID+"/"), "/")[0]
	if len(token) != 24 {
		t.Errorf("the URL's token %q: got %d characters, want 24 (token_urlsafe(18))", token, len(token))
	}

	// Only an administrator gets the file.
	path := strings.TrimPrefix(exportURL, "http://zulite.test")
	if rec := e.fetch(t, nil, path); rec.Code == http.StatusOK {
		t.Errorf("the tarball without credentials: got 200")
	}
	if rec := e.fetch(t, &e.alice, path); rec.Code == http.StatusOK || strings.Contains(rec.Body.String(), "zulip-export") {
		t.Errorf("the tarball to a member: got %d", rec.Code)
	}
	rec := e.fetch(t, &e.admin, path)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/gzip" {
		t.Fatalf("the tarball to the administrator: got %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	dir, err := zulipexport.Unpack(bytes.NewReader(rec.Body.Bytes()), t.TempDir(), func(int64) error { return nil })
	if err != nil {
		t.Fatalf("unpack the tarball: %v", err)
	}
	checkZulipImportable(t, dir)
	// The public export: the public channel's messages, none of the
	// private channel's nor any direct message.
	var realm map[string]any
	readJSONFile(t, filepath.Join(dir, "realm.json"), &realm)
	public := map[float64]bool{}
	for _, v := range asList(realm["zerver_stream"]) {
		if ch := object(v); ch["invite_only"] == false {
			public[ch["id"].(float64)] = true
		}
	}
	publicRecipients := map[float64]bool{}
	for _, v := range asList(realm["zerver_recipient"]) {
		if rc := object(v); rc["type"] == float64(2) && public[rc["type_id"].(float64)] {
			publicRecipients[rc["id"].(float64)] = true
		}
	}
	exported := 0
	for n := 1; ; n++ {
		path := filepath.Join(dir, fmt.Sprintf("messages-%06d.json", n))
		if _, err := os.Stat(path); err != nil {
			break
		}
		var file map[string]any
		readJSONFile(t, path, &file)
		for _, v := range asList(file["zerver_message"]) {
			exported++
			if m := object(v); !publicRecipients[m["recipient"].(float64)] {
				t.Errorf("message %v to recipient %v is in the public export", m["id"], m["recipient"])
			}
		}
	}
	if exported != 13 {
		t.Errorf("exported messages: got %d, want the public channel's 13", exported)
	}
	var records []any
	readJSONFile(t, filepath.Join(dir, "uploads", "records.json"), &records)
	if len(records) != 1 || !strings.HasSuffix(object(records[0])["path"].(string), "/notes.txt") {
		t.Errorf("uploads in the public export: got %v, want notes.txt alone (plan.txt is linked in a private channel only)", records)
	}
	if snippets := asList(realm["zerver_savedsnippet"]); len(snippets) != 0 {
		t.Errorf("saved snippets in the public export: %v", snippets)
	}

	// Requested, then succeeded: the administrators hear both, the member
	// nothing.
	for _, q := range []struct {
		who   *account
		queue string
	}{{&e.admin, adminQueue}, {&e.owner, ownerQueue}} {
		got := e.pollNow(t, q.who, q.queue, -1)
		if len(got) != 2 || got[0]["type"] != "realm_export" || object(asList(got[0]["exports"])[0])["pending"] != true ||
			object(asList(got[1]["exports"])[0])["export_url"] != exportURL {
			t.Errorf("%s's realm_export events: got %v", q.who.Email, got)
		}
	}
	if got := e.pollNow(t, &e.alice, aliceQueue, -1); len(got) != 0 {
		t.Errorf("a member's realm_export events: got %v, want none", got)
	}

	// Deleting: refused to a member, then done, then Zulip's texts.
	onDisk := filepath.Join(exportsDir(e.st.path), token)
	del := "/api/v1/export/realm/" + strconv.FormatUint(id, 10)
	wantAPIError(t, e.request(t, http.MethodDelete, del, nil, &e.alice), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator")
	if _, err := os.Stat(onDisk); err != nil {
		t.Fatalf("the tarball after a member's delete: %v", err)
	}
	wantAPISuccess(t, e.request(t, http.MethodDelete, del, nil, &e.admin))
	if _, err := os.Stat(onDisk); !os.IsNotExist(err) {
		t.Errorf("the tarball after the delete: got %v, want it gone", err)
	}
	x = object(e.realmExportsOf(t, &e.admin)[0])
	if x["deleted_timestamp"] == nil || x["export_url"] != nil || x["pending"] != false {
		t.Errorf("the deleted export: got %v", x)
	}
	if got := e.pollNow(t, &e.admin, adminQueue, -1); len(got) != 3 || object(asList(got[2]["exports"])[0])["deleted_timestamp"] == nil {
		t.Errorf("the admin's events after the delete: got %v", got)
	}
	if rec := e.fetch(t, &e.admin, path); rec.Code != http.StatusNotFound {
		t.Errorf("the deleted tarball: got %d, want 404", rec.Code)
	}
	wantAPIError(t, e.request(t, http.MethodDelete, del, nil, &e.admin), 400, "BAD_REQUEST", "Export already deleted")
	wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/export/realm/999", nil, &e.admin), 400, "BAD_REQUEST", "Invalid data export ID")
}

// TestRealmExport_RefusedRequestsCreateNothing: a member may neither
// start nor list exports, and an export_type zulite does not make is
// refused; none of them leaves an export or a file.
func TestRealmExport_RefusedRequestsCreateNothing(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		name   string
		method string
		params url.Values
		who    *account
		code   string
		msg    string
	}{
		{"a member starts one", "POST", nil, &e.alice, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator"},
		{"a member lists them", "GET", nil, &e.alice, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator"},
		{"a bot starts one", "POST", nil, &e.bot, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator"},
		{"the standard export, which zulite does not make", "POST", url.Values{"export_type": {"2"}}, &e.admin, "BAD_REQUEST", "Invalid export_type"},
		{"an export_type Zulip does not know", "POST", url.Values{"export_type": {"3"}}, &e.admin, "BAD_REQUEST", "Invalid export_type"},
		{"an export_type that is no integer", "POST", url.Values{"export_type": {"public"}}, &e.admin, "BAD_REQUEST", "export_type is not valid JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantAPIError(t, e.request(t, c.method, "/api/v1/export/realm", c.params, c.who), 400, c.code, c.msg)
		})
	}
	if all, err := e.st.realmExports(); err != nil || len(all) != 0 {
		t.Errorf("exports after refusals: got %v %v, want none", all, err)
	}
	if _, err := os.Stat(exportsDir(e.st.path)); !os.IsNotExist(err) {
		t.Errorf("%s after refusals: got %v, want none", exportsDir(e.st.path), err)
	}
}

// TestRealmExport_OneAtATimeAndZulipsWeeklyLimit: a second export waits
// for the first to end, and at most five are made in a week.
func TestRealmExport_OneAtATimeAndZulipsWeeklyLimit(t *testing.T) {
	st := mustOpenStore(t)
	admin, _ := mustCreateUser(t, st, "admin@example.com", roleAdmin, false)
	now := time.Now()
	for i := range exportLimit {
		e, err := st.requestRealmExport(admin, exportPublic, now)
		if err != nil {
			t.Fatalf("export %d: %v", i+1, err)
		}
		if _, err := st.requestRealmExport(admin, exportPublic, now); !isAPIError(err, errExportInProgress) {
			t.Fatalf("a second export while one is pending: got %v, want %q", err, errExportInProgress.msg)
		}
		if err := st.finishRealmExport(e.ID, "", now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.requestRealmExport(admin, exportPublic, now); !isAPIError(err, errExportRateLimit) {
		t.Fatalf("a sixth export in a week: got %v, want %q", err, errExportRateLimit.msg)
	}
	if _, err := st.requestRealmExport(admin, exportPublic, now.Add(exportLimitWindow+time.Minute)); err != nil {
		t.Fatalf("an export a week later: %v", err)
	}
}

// TestRealmExport_AFailedExportIsMarkedFailed: an export that cannot be
// written ends failed, not pending, and one left pending by a previous
// run is marked failed when the server starts.
func TestRealmExport_AFailedExportIsMarkedFailed(t *testing.T) {
	e := newTestEnv(t)
	if err := os.WriteFile(exportsDir(e.st.path), []byte("in the way"), 0o600); err != nil { // no directory can be made there
		t.Fatal(err)
	}
	r := e.request(t, http.MethodPost, "/api/v1/export/realm", url.Values{"export_type": {"1"}}, &e.admin)
	wantAPISuccess(t, r)
	id := mustID(t, r)
	x := e.waitForExport(t, id)
	if x["failed_timestamp"] == nil || x["export_url"] != nil {
		t.Fatalf("the export that could not be written: got %v", x)
	}
	wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/export/realm/"+strconv.FormatUint(id, 10), nil, &e.admin), 400, "BAD_REQUEST", "Export failed, nothing to delete")

	pending, err := e.st.requestRealmExport(e.admin.user, exportPublic, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/export/realm/"+strconv.FormatUint(pending.ID, 10), nil, &e.admin), 400, "BAD_REQUEST", "Export still in progress")
	if n, err := e.st.failPendingExports(time.Now()); n != 1 || err != nil {
		t.Fatalf("failPendingExports: got %d %v, want 1", n, err)
	}
	if x := object(e.realmExportsOf(t, &e.admin)[1]); x["pending"] != false || x["failed_timestamp"] == nil {
		t.Errorf("the export left pending, after a start: got %v", x)
	}
}

// isAPIError tells an error the client is told as want.
func isAPIError(err error, want *apiError) bool {
	return err != nil && asAPIError(err) == want
}

func mustRealmExports(t *testing.T, st *store) []realmExport {
	t.Helper()
	all, err := st.realmExports()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestRealmExport_ConsentsAreEachHumansSetting: GET /export/realm/consents
// gives an administrator each active human's allow_private_data_export,
// as Zulip's get_users_export_consents; a member is refused.
func TestRealmExport_ConsentsAreEachHumansSetting(t *testing.T) {
	e := newTestEnv(t)
	// PATCH /settings does not change it (zulite makes no export with
	// consent), so the test sets it in the store.
	if err := e.st.updateUserSettings(e.bob.user, []settingChange{{Name: "allow_private_data_export", Value: []byte("true"), Default: []byte("false")}}); err != nil {
		t.Fatal(err)
	}
	r := e.request(t, http.MethodGet, "/api/v1/export/realm/consents", nil, &e.admin)
	wantAPISuccess(t, r)
	got := map[float64]any{}
	for _, v := range asList(r.body["export_consents"]) {
		c := object(v)
		got[c["user_id"].(float64)] = c["consented"]
	}
	want := map[float64]any{float64(e.owner.ID): false, float64(e.admin.ID): false, float64(e.alice.ID): false, float64(e.bob.ID): true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("export_consents: got %v, want %v (no bot)", got, want)
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/export/realm/consents", nil, &e.alice), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator")
	if r := e.request(t, http.MethodPost, "/api/v1/export/realm/consents", nil, &e.admin); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /export/realm/consents: got %d, want 405", r.status)
	}
}

// TestRealmExport_ThroughTheBinary: the real server makes an export in
// the background and serves its tarball to the owner, an export that
// Zulip's importer takes; one left pending by a server that stopped
// (killed while exporting) is marked failed when the server starts.
func TestRealmExport_ThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--rate-limit", "off")
	owner := e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey)
	status, body, _ := owner.do(t, "POST", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}, e2ePython)
	e2eWantSuccess(t, "subscribe", status, body)
	status, body, _ = owner.do(t, "POST", "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"hello"}, "content": {"the first message"}}, e2ePython)
	e2eWantSuccess(t, "send", status, body)
	status, body, _ = owner.do(t, "POST", "/api/v1/export/realm", nil, e2ePython)
	e2eWantSuccess(t, "POST /export/realm", status, body)
	var exportURL string
	for deadline := time.Now().Add(30 * time.Second); exportURL == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the export is still pending after 30s")
		}
		_, body, _ := owner.do(t, "GET", "/api/v1/export/realm", nil, e2ePython)
		if list := asList(body["exports"]); len(list) == 1 && object(list[0])["pending"] == false {
			if exportURL, _ = object(list[0])["export_url"].(string); exportURL == "" {
				t.Fatalf("the export ended without a URL: %v", list[0])
			}
		}
	}
	req, _ := http.NewRequest("GET", exportURL, nil)
	if !strings.HasPrefix(exportURL, srv.baseURL+"/user_avatars/exports/") {
		t.Fatalf("export_url %q is not under %s/user_avatars/exports/", exportURL, srv.baseURL)
	}
	req.SetBasicAuth(srv.ownerEmail, srv.ownerKey)
	resp, err := owner.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	tarball, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the tarball: got %d %v", resp.StatusCode, err)
	}
	dir, err := zulipexport.Unpack(bytes.NewReader(tarball), t.TempDir(), func(int64) error { return nil })
	if err != nil {
		t.Fatalf("unpack the tarball: %v", err)
	}
	checkZulipImportable(t, dir)
	if err := srv.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	st, err := openStore(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.userByEmail(srv.ownerEmail)
	if err == nil {
		_, err = st.requestRealmExport(u, exportPublic, time.Now())
	}
	st.close()
	if err != nil {
		t.Fatal(err)
	}
	srv = e2eRestartServer(t, bin, db, "--rate-limit", "off")
	owner = e2eNewClient(srv.baseURL, owner.email, owner.key)
	_, body, _ = owner.do(t, "GET", "/api/v1/export/realm", nil, e2ePython)
	list := asList(body["exports"])
	if len(list) != 2 || object(list[1])["pending"] != false || object(list[1])["failed_timestamp"] == nil || !strings.HasSuffix(exportURL, object(list[0])["export_url"].(string)[len(srv.baseURL):]) {
		t.Errorf("the exports after a restart: got %v, want the second failed and the first kept", list)
	}
	if logs := srv.logs(); !strings.Contains(logs, "marked failed") {
		t.Errorf("the server's log: got %q, want a line saying the pending export is marked failed", logs)
	}
}

// TestRealmExport_NoRoomAboveTheDiskReserveFails: an export that would
// leave less than the disk reserve (--upload-disk-reserve-mib) free is
// not made: it fails, and the disk keeps its room for the database.
func TestRealmExport_NoRoomAboveTheDiskReserveFails(t *testing.T) {
	if !diskFreeChecked {
		t.Skip("the free disk space is not read on this system")
	}
	e := newTestEnv(t)
	e.server.uploads.reserve = 1 << 62
	r := e.request(t, http.MethodPost, "/api/v1/export/realm", nil, &e.admin)
	wantAPISuccess(t, r)
	if x := e.waitForExport(t, mustID(t, r)); x["failed_timestamp"] == nil || x["export_url"] != nil {
		t.Fatalf("the export with no room: got %v, want it failed", x)
	}
	entries, _ := os.ReadDir(exportsDir(e.st.path))
	if len(entries) != 0 {
		t.Errorf("%s after the failed export: got %d entries, want none", exportsDir(e.st.path), len(entries))
	}
}
