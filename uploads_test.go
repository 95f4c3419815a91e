package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// uploadPart is one part of a multipart upload: a file when name is set.
type uploadPart struct {
	field, name, contentType, content string
}

func multipartBody(t testing.TB, parts ...uploadPart) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p.name != "" {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.field, p.name))
		} else {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, p.field))
		}
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(pw, p.content)
	}
	w.Close()
	return &b, w.FormDataContentType()
}

// upload posts parts to path as a's multipart request.
func (e *testEnv) upload(t *testing.T, a *account, path string, parts ...uploadPart) response {
	t.Helper()
	body, contentType := multipartBody(t, parts...)
	req := httptest.NewRequest(http.MethodPost, path, body)
	req.Header.Set("Content-Type", contentType)
	if a != nil {
		req.SetBasicAuth(a.Email, a.key)
	}
	return e.do(t, req)
}

// mustUpload uploads one file and answers its URL.
func (e *testEnv) mustUpload(t *testing.T, a *account, name, content string) string {
	t.Helper()
	r := e.upload(t, a, "/api/v1/user_uploads", uploadPart{"file", name, "", content})
	wantAPISuccess(t, r)
	return r.str("url")
}

// fetch GETs a file route (not JSON) as a, or without credentials.
func (e *testEnv) fetch(t *testing.T, a *account, target string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if a != nil {
		req.SetBasicAuth(a.Email, a.key)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	return rec
}

func (e *testEnv) sendText(t *testing.T, a account, ch channel, content string) uint64 {
	t.Helper()
	sent, err := e.st.sendMessage(a.user, channelRef{ID: ch.ID}, "files", content, "test")
	if err != nil {
		t.Fatal(err)
	}
	return sent.ID
}

func TestUploads_StoredContentAddressedAndAnswered(t *testing.T) {
	e := newTestEnv(t)
	content := "hello, files\n"
	r := e.upload(t, &e.alice, "/api/v1/user_uploads", uploadPart{"file", "My Notes (1).txt", "text/plain", content}, uploadPart{"extra", "", "", "x"})
	wantAPISuccess(t, r)
	link := r.str("url")
	if !strings.HasPrefix(link, "/user_uploads/2/") || !strings.HasSuffix(link, "/My-Notes-1.txt") || r.str("uri") != link || r.str("filename") != "My Notes (1).txt" {
		t.Errorf("answer: got %s", r.raw)
	}
	if got := r.body["ignored_parameters_unsupported"]; !jsonEqual(got, []any{"extra"}) {
		t.Errorf("ignored_parameters_unsupported: got %v, want [extra]", got)
	}
	sum := sha256.Sum256([]byte(content))
	blob := blobPath(e.st.uploadsDir(), hex.EncodeToString(sum[:]))
	fi, err := os.Stat(blob)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("blob %s: %v, mode %v; want a 0600 file named by its SHA-256", blob, err, fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(blob)); di.Mode().Perm() != 0o700 {
		t.Errorf("blob directory mode %v, want 0700", di.Mode().Perm())
	}
	if leftovers, _ := os.ReadDir(filepath.Join(e.st.uploadsDir(), "tmp")); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	rec := e.fetch(t, &e.alice, link)
	if rec.Code != 200 || rec.Body.String() != content || rec.Header().Get("Content-Type") != "text/plain" ||
		!strings.HasPrefix(rec.Header().Get("Content-Disposition"), "inline") || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("the uploader fetches it: got %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
	// The same bytes again: a second record, one blob.
	again := e.mustUpload(t, &e.bob, "copy.txt", content)
	if again == link {
		t.Errorf("a second upload got the same URL")
	}
	if rec := e.fetch(t, &e.bob, again); rec.Code != 200 || rec.Body.String() != content {
		t.Errorf("the second uploader: got %d", rec.Code)
	}
	// HTML is served as a download, never run.
	page := e.mustUpload(t, &e.alice, "page.html", "<script>alert(1)</script>")
	rec = e.fetch(t, &e.alice, page)
	if !strings.HasPrefix(rec.Header().Get("Content-Disposition"), "attachment") || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("an HTML upload: got %v, want an attachment in a sandbox", rec.Header())
	}
}

func TestUploads_VisibleToTheUploaderAndReadersOfALinkingMessage(t *testing.T) {
	e := newTestEnv(t)
	public := e.mustUpload(t, &e.alice, "public.txt", "for everyone")
	private := e.mustUpload(t, &e.alice, "private.txt", "for the secret channel")
	unsent := e.mustUpload(t, &e.alice, "draft.txt", "not sent yet")

	// Nobody but alice sees a file no message links.
	for _, link := range []string{public, private, unsent} {
		if rec := e.fetch(t, &e.bob, link); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "You are not authorized to view this file.") {
			t.Errorf("bob before any message, %s: got %d %q, want 403", link, rec.Code, rec.Body.String())
		}
	}
	e.sendText(t, e.alice, e.general, "see [public.txt]("+public+")")
	e.sendText(t, e.alice, e.secret, "and [private](http://zulite.test"+private+")")
	for _, c := range []struct {
		who  *account
		link string
		want int
	}{
		{&e.bob, public, 200},       // subscribed to general
		{&e.owner, public, 200},     // not subscribed, but general is public
		{&e.bob, private, 403},      // not in secret
		{&e.alice, private, 200},    // in secret, and the uploader
		{&e.bob, unsent, 403},       // no message links it
		{&e.alice, unsent, 200},     // the uploader
		{&e.bob, public + "x", 404}, // no such file
		{&e.bob, "/user_uploads/2/x/y", 404},
	} {
		if rec := e.fetch(t, c.who, c.link); rec.Code != c.want {
			t.Errorf("%s fetches %s: got %d %q, want %d", c.who.Email, c.link, rec.Code, rec.Body.String(), c.want)
		}
	}
	// Bob cannot make alice's private file public by linking it: as in
	// Zulip, a link counts only when its sender could see the file.
	e.sendText(t, e.bob, e.general, "leak ["+private+"]("+private+") and ["+unsent+"]("+unsent+")")
	for _, link := range []string{private, unsent} {
		if rec := e.fetch(t, &e.owner, link); rec.Code != http.StatusForbidden {
			t.Errorf("after bob linked alice's %s in general: the owner gets %d, want 403", link, rec.Code)
		}
	}
	if rec := e.fetch(t, nil, public); rec.Code != http.StatusUnauthorized {
		t.Errorf("no credentials: got %d, want 401", rec.Code)
	}
}

func TestUploads_Refusals(t *testing.T) {
	e := newTestEnv(t)
	e.server.uploads.maxMiB = 1
	big := strings.Repeat("x", 1<<20+1)
	for _, c := range []struct {
		rule  string
		parts []uploadPart
		code  string
		msg   string
	}{
		{"a file is required", []uploadPart{{"note", "", "", "no file"}}, "BAD_REQUEST", "You must specify a file to upload"},
		{"one file at a time", []uploadPart{{"a", "a.txt", "", "1"}, {"b", "b.txt", "", "2"}}, "BAD_REQUEST", "You may only upload one file at a time"},
		{"at most max_file_upload_size_mib", []uploadPart{{"file", "big.bin", "", big}}, "BAD_REQUEST", "File is larger than this server's configured maximum upload size (1 MiB)."},
	} {
		t.Run(c.rule, func(t *testing.T) {
			wantAPIError(t, e.upload(t, &e.alice, "/api/v1/user_uploads", c.parts...), http.StatusBadRequest, c.code, c.msg)
		})
	}
	// A body larger than any allowed upload is refused before it is read.
	req := httptest.NewRequest(http.MethodPost, "/api/v1/user_uploads", strings.NewReader(""))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	req.ContentLength = 5 << 20
	req.SetBasicAuth(e.alice.Email, e.alice.key)
	wantAPIError(t, e.do(t, req), http.StatusBadRequest, "BAD_REQUEST", "File is larger than this server's configured maximum upload size (1 MiB).")
	// Not multipart: no file.
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/user_uploads", url.Values{"file": {"x"}}, &e.alice), http.StatusBadRequest, "BAD_REQUEST", "You must specify a file to upload")
	wantAPIError(t, e.upload(t, nil, "/api/v1/user_uploads", uploadPart{"file", "a.txt", "", "x"}), http.StatusUnauthorized, "UNAUTHORIZED", "Not logged in: API authentication or user session required")

	// The per-user quota: Zulip's error once a user's files would pass it.
	e.server.uploads.quota.perUser = 10
	e.mustUpload(t, &e.alice, "six.txt", "123456")
	wantAPIError(t, e.upload(t, &e.alice, "/api/v1/user_uploads", uploadPart{"file", "five.txt", "", "12345"}), http.StatusBadRequest, "REALM_UPLOAD_QUOTA", "Upload would exceed your organization's upload quota.")
	e.mustUpload(t, &e.bob, "five.txt", "12345") // another user's quota is their own

	var records int
	e.st.view(func(tx *bbolt.Tx) error { records = tx.Bucket(bucketAttachments).Stats().KeyN; return nil })
	if records != 2 {
		t.Errorf("after the refusals: %d records, want the two accepted uploads", records)
	}
	if leftovers, _ := os.ReadDir(filepath.Join(e.st.uploadsDir(), "tmp")); len(leftovers) != 0 {
		t.Errorf("temporary files left by refused uploads: %v", leftovers)
	}
}

// A path that leaves the upload directory, however it is spelled, never
// reaches a file: paths are keys of the attachments bucket, and bytes are
// found by the hash stored there.
func TestUploads_PathTraversalRefusedInEveryEncoding(t *testing.T) {
	e := newTestEnv(t)
	link := e.mustUpload(t, &e.alice, "a.txt", "fine")
	token := strings.Split(link, "/")[3]
	secret, err := os.ReadFile(e.st.db.Path())
	if err != nil {
		t.Fatal(err)
	}
	marker := string(secret[:16])
	for _, target := range []string{
		"/user_uploads/2/../../test.db",
		"/user_uploads/2/%2e%2e/%2e%2e/test.db",
		"/user_uploads/2/" + token + "/..%2f..%2f..%2ftest.db",
		"/user_uploads/2/" + token + "/%2e%2e",
		"/user_uploads/2/" + token + "/%252e%252e%252ftest.db",
		"/user_uploads/2/" + token + "/..%5c..%5ctest.db",
		"/user_uploads/2/" + token + "/%c0%ae%c0%ae%c0%aftest.db",
		"/user_uploads/2/" + token + "/a.txt%00.png",
		"/user_uploads/2/" + token + "/%2Fetc%2Fpasswd",
		"/user_uploads/..%2f..%2f/test.db",
		"/user_uploads/2/" + strings.Repeat("a", 24) + "/a.txt",
		"/user_uploads/3/" + token + "/a.txt",
		"/api/v1/user_uploads/2/" + token + "/..%2f..%2ftest.db",
		"/user_uploads/temporary/" + strings.Repeat("2E", 30) + "/test.db",
	} {
		rec := e.fetch(t, &e.alice, target)
		if rec.Code == http.StatusOK || strings.Contains(rec.Body.String(), marker) {
			t.Errorf("%s: got %d %q, want a refusal", target, rec.Code, rec.Body.String())
		}
	}
	// A name with a path in it is kept only as a name.
	r := e.upload(t, &e.alice, "/api/v1/user_uploads", uploadPart{"file", "..%2F..%2Fevil.sh", "", "x"})
	wantAPISuccess(t, r)
	if u := r.str("url"); strings.Count(u, "/") != 4 || !strings.HasSuffix(u, "/....evil.sh") || r.str("filename") != "../../evil.sh" {
		t.Errorf("a name holding ../: got %s, want the path's slashes dropped from the URL, the name kept as given", r.raw)
	}
}

func TestUploads_TemporaryURLNeedsNoCredentialsForAMinute(t *testing.T) {
	e := newTestEnv(t)
	link := e.mustUpload(t, &e.alice, "photo.png", "\x89PNG not really")
	r := e.request(t, http.MethodGet, "/api/v1"+link, nil, &e.alice)
	wantAPISuccess(t, r)
	temporary := r.str("url")
	if !strings.HasPrefix(temporary, "/user_uploads/temporary/") || !strings.HasSuffix(temporary, "/photo.png") {
		t.Fatalf("temporary url: got %q", temporary)
	}
	if rec := e.fetch(t, nil, temporary); rec.Code != 200 || rec.Body.String() != "\x89PNG not really" || rec.Header().Get("Content-Type") != "image/png" {
		t.Errorf("temporary URL without credentials: got %d %q", rec.Code, rec.Body.String())
	}
	parts := strings.Split(temporary, "/")
	tokenOf := parts[3]
	wantFileError := func(target, msg string) {
		t.Helper()
		rec := e.fetch(t, nil, target)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"msg":"`+msg+`"`) {
			t.Errorf("%s: got %d %q, want 400 %q", target, rec.Code, rec.Body.String(), msg)
		}
	}
	wantFileError("/user_uploads/temporary/"+tokenOf+"/other.png", "Invalid filename")
	forged := tokenOf[:len(tokenOf)-2] + "41"
	if forged == tokenOf { // a token that already ends in 41: change it to something else
		forged = tokenOf[:len(tokenOf)-2] + "42"
	}
	wantFileError("/user_uploads/temporary/"+forged+"/photo.png", "Invalid token")
	pathID := strings.TrimPrefix(link, "/user_uploads/")
	old := e.st.uploadToken(pathID, time.Now().Add(-2*time.Minute))
	wantFileError("/user_uploads/temporary/"+old+"/photo.png", "Invalid token")
	// Bob may not have a URL for alice's unlinked file.
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1"+link, nil, &e.bob), http.StatusForbidden, "BAD_REQUEST", "You are not authorized to view this file.")
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/user_uploads/2/"+strings.Repeat("b", 24)+"/photo.png", nil, &e.alice), http.StatusNotFound, "BAD_REQUEST", "This file does not exist or has been deleted.")
}

func TestUploads_SweepDeletesWhatNoMessageLinksAfterTheGrace(t *testing.T) {
	e := newTestEnv(t)
	kept := e.mustUpload(t, &e.alice, "kept.txt", "linked")
	dropped := e.mustUpload(t, &e.alice, "dropped.txt", "never linked")
	e.sendText(t, e.alice, e.general, "["+kept+"]("+kept+")")
	orphan, _, err := e.st.writeBlob(strings.NewReader("a blob with no record"), 100)
	if err != nil {
		t.Fatal(err)
	}
	e.st.releaseBlob(orphan) // written and let go of, as an upload that failed does
	grace := time.Hour
	if records, blobs, err := e.st.sweepUploads(time.Now(), grace); err != nil || records != 0 || blobs != 0 {
		t.Errorf("within the grace: swept %d records, %d blobs (%v), want none", records, blobs, err)
	}
	later := time.Now().Add(grace + time.Minute)
	records, blobs, err := e.st.sweepUploads(later, grace)
	if err != nil || records != 1 || blobs != 2 {
		t.Errorf("after the grace: swept %d records, %d blobs (%v), want 1 record and 2 blobs (its own and the orphan)", records, blobs, err)
	}
	if _, err := os.Stat(blobPath(e.st.uploadsDir(), orphan)); err == nil {
		t.Errorf("the orphan blob is still there")
	}
	if rec := e.fetch(t, &e.alice, dropped); rec.Code != http.StatusNotFound {
		t.Errorf("the unlinked upload: got %d, want 404 once swept", rec.Code)
	}
	if rec := e.fetch(t, &e.bob, kept); rec.Code != 200 || rec.Body.String() != "linked" {
		t.Errorf("the linked upload: got %d", rec.Code)
	}
}

func TestUploads_RegisterTellsTheLimit(t *testing.T) {
	e := newTestEnv(t)
	r := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["realm"]`}})
	if r.body["max_file_upload_size_mib"] != float64(defaultMaxUploadMiB) {
		t.Errorf("max_file_upload_size_mib: got %v, want %d", r.body["max_file_upload_size_mib"], defaultMaxUploadMiB)
	}
}

func TestUploads_SanitizedNames(t *testing.T) {
	for in, want := range map[string]string{
		"photo.png":            "photo.png",
		"My  Notes -- v2.txt":  "My-Notes-v2.txt",
		"../../etc/passwd":     "....etcpasswd",
		"..":                   "uploaded-file",
		"":                     "uploaded-file",
		"ｆｕｌｌｗｉｄｔｈ.txt":        "fullwidth.txt",
		"café\x00<script>.txt": "caféscript.txt",
		"a\\b.txt":             "ab.txt",
	} {
		if got := sanitizeUploadName(in); got != want {
			t.Errorf("sanitizeUploadName(%q): got %q, want %q", in, got, want)
		}
	}
}

func TestBackup_CopiesUploadsAndRestoresWithOneCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "z.db")
	st, err := openStore(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	sum, size, err := st.writeBlob(strings.NewReader("kept in the backup"), 100)
	if err != nil {
		t.Fatal(err)
	}
	pathID := uploadRealmID + "/" + randomPathToken() + "/notes.txt"
	if err := st.addAttachment(alice, attachment{PathID: pathID, Owner: alice.ID, Name: "notes.txt", Size: size, SHA256: sum, ContentType: "text/plain", Created: time.Now().Unix()}, uploadQuota{}); err != nil {
		t.Fatal(err)
	}
	st.close()

	direct := filepath.Join(dir, "direct.db")
	mustRunCLI(t, nil, "backup", direct, "--db", db) // no server: the command copies both itself
	_, _, stop := startServe(t, db, nil)
	served := filepath.Join(dir, "served.db")
	mustRunCLI(t, nil, "backup", served, "--db", db) // through the server's socket
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, backup := range []string{direct, served} {
		fi, err := os.Stat(blobPath(uploadsDir(backup), sum))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: the blob %v, mode %v; want a 0600 copy beside the backup", backup, err, fi)
		}
	}
	// A second backup to the same place copies nothing again and succeeds.
	mustRunCLI(t, nil, "backup", direct, "--db", db)

	// The README's restore command, into a fresh place.
	restored := filepath.Join(dir, "restored", "zulite.db")
	os.MkdirAll(filepath.Dir(restored), 0o700)
	cmd := fmt.Sprintf("cp -a %s.uploads/. %s.uploads/ && cp -a %s %s", served, restored, served, restored)
	if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	back, err := openStore(restored, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer back.close()
	a, err := back.attachmentByPath(pathID)
	if err != nil {
		t.Fatal(err)
	}
	f, err := back.openBlob(a.SHA256)
	if err != nil {
		t.Fatalf("the restored database's file: %v", err)
	}
	defer f.Close()
	if got, _ := io.ReadAll(f); string(got) != "kept in the backup" {
		t.Errorf("restored bytes: got %q", got)
	}
}

// e2eUpload posts one file to a running server as the client's account
// and answers the status and the envelope.
func e2eUpload(t *testing.T, c *client, name string, content []byte) (int, map[string]any) {
	t.Helper()
	return e2ePostFile(t, c, "/api/v1/user_uploads", uploadPart{"file", name, "application/octet-stream", string(content)})
}

// e2ePostFile posts a multipart request of one file to path, as the
// client's account, and answers the status and the envelope.
func e2ePostFile(t *testing.T, c *client, path string, file uploadPart) (int, map[string]any) {
	t.Helper()
	name := file.name
	body, contentType := multipartBody(t, file)
	req, err := http.NewRequest(http.MethodPost, c.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.SetBasicAuth(c.email, c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("upload %s: %v", name, err)
	}
	defer resp.Body.Close()
	var envelope map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&envelope); err != nil {
		t.Fatalf("upload %s: %d, body not JSON: %v", name, resp.StatusCode, err)
	}
	return resp.StatusCode, envelope
}

// storedUploads counts the blobs beside the database and the temporary
// files an upload left: what a refused upload must not add to.
func storedUploads(t *testing.T, db string) (blobs, temporary int) {
	t.Helper()
	shards, err := os.ReadDir(uploadsDir(db))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, shard := range shards {
		files, err := os.ReadDir(filepath.Join(uploadsDir(db), shard.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if shard.Name() == "tmp" {
			temporary += len(files)
		} else {
			blobs += len(files)
		}
	}
	return blobs, temporary
}

// wantQuotaRefusal checks Zulip's answer to an upload past a quota.
func wantQuotaRefusal(t *testing.T, what string, status int, body map[string]any) {
	t.Helper()
	if status != http.StatusBadRequest || body["result"] != "error" || body["code"] != "REALM_UPLOAD_QUOTA" || body["msg"] != "Upload would exceed your organization's upload quota." {
		t.Errorf("%s: got %d %v %q, want 400 REALM_UPLOAD_QUOTA %q", what, status, body["code"], body["msg"], "Upload would exceed your organization's upload quota.")
	}
}

// The upload limits are on by default: each user's quota, the server's
// total and the free-disk reserve have defaults sized for a small
// device, the help says them, and register tells the total as Zulip's
// realm_upload_quota_mib (issue 28, item 4).
func TestUploadLimits_OnByDefault(t *testing.T) {
	bin := e2eBuildBinary(t)
	help := e2eRunCLI(t, bin, "serve", "--help")
	for _, want := range []string{`-upload-quota-mib int\n[^\n]*\(default 1024\)`, `-upload-total-mib int\n[^\n]*\(default 5120\)`, `-upload-disk-reserve-mib int\n[^\n]*\(default 512\)`} {
		if !regexp.MustCompile(want).MatchString(help.stdout) {
			t.Errorf("serve --help: got no match for %q in\n%s", want, help.stdout)
		}
	}
	srv := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"))
	owner := e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey)
	status, reg, _ := owner.do(t, http.MethodPost, "/api/v1/register", url.Values{"fetch_event_types": {`["realm"]`}}, e2ePython)
	if status != 200 || fmt.Sprint(reg["realm_upload_quota_mib"]) != "5120" || fmt.Sprint(reg["max_file_upload_size_mib"]) != "25" {
		t.Errorf("register: got %d, realm_upload_quota_mib %v, max_file_upload_size_mib %v; want 5120 and 25", status, reg["realm_upload_quota_mib"], reg["max_file_upload_size_mib"])
	}
}

// An upload past its user's quota is refused with Zulip's quota error
// and leaves nothing on disk; another user's quota is their own.
func TestUploadQuota_PerUserRefusalKeepsNothing(t *testing.T) {
	db, owner, bob := ownerAndBob(t, "--upload-quota-mib", "1")

	if status, body := e2eUpload(t, owner, "a.bin", bytes.Repeat([]byte("a"), 600<<10)); status != 200 {
		t.Fatalf("first 600 KiB: got %d %v, want 200", status, body["msg"])
	}
	status, body := e2eUpload(t, owner, "b.bin", bytes.Repeat([]byte("b"), 600<<10))
	wantQuotaRefusal(t, "the next 600 KiB past 1 MiB", status, body)
	if blobs, temporary := storedUploads(t, db); blobs != 1 || temporary != 0 {
		t.Errorf("after the refusal: got %d blobs and %d temporary files, want 1 and 0", blobs, temporary)
	}
	status, body = e2eUpload(t, owner, "big.bin", bytes.Repeat([]byte("c"), 2<<20)) // refused before it is read
	wantQuotaRefusal(t, "2 MiB past 1 MiB", status, body)
	if status, body := e2eUpload(t, bob, "b.bin", bytes.Repeat([]byte("b"), 600<<10)); status != 200 {
		t.Errorf("another user's 600 KiB: got %d %v, want 200", status, body["msg"])
	}
	if blobs, temporary := storedUploads(t, db); blobs != 2 || temporary != 0 {
		t.Errorf("at the end: got %d blobs and %d temporary files, want 2 and 0", blobs, temporary)
	}
}

// --upload-total-mib bounds every user's files together: past it, anyone's
// upload is refused with Zulip's quota error, and nothing is kept.
func TestUploadTotal_RefusesAcrossUsers(t *testing.T) {
	db, owner, bob := ownerAndBob(t, "--upload-total-mib", "1")

	if status, body := e2eUpload(t, owner, "a.bin", bytes.Repeat([]byte("a"), 600<<10)); status != 200 {
		t.Fatalf("the owner's 600 KiB: got %d %v, want 200", status, body["msg"])
	}
	status, body := e2eUpload(t, bob, "b.bin", bytes.Repeat([]byte("b"), 600<<10))
	wantQuotaRefusal(t, "bob's 600 KiB past the server's 1 MiB", status, body)
	if blobs, temporary := storedUploads(t, db); blobs != 1 || temporary != 0 {
		t.Errorf("after the refusal: got %d blobs and %d temporary files, want 1 and 0", blobs, temporary)
	}
	if status, body := e2eUpload(t, bob, "small.bin", bytes.Repeat([]byte("s"), 100<<10)); status != 200 {
		t.Errorf("bob's 100 KiB within the total: got %d %v, want 200", status, body["msg"])
	}
	status, reg, _ := bob.do(t, http.MethodPost, "/api/v1/register", url.Values{"fetch_event_types": {`["realm"]`}}, e2ePython)
	if status != 200 || fmt.Sprint(reg["realm_upload_quota_mib"]) != "1" {
		t.Errorf("register: got %d, realm_upload_quota_mib %v, want 1", status, reg["realm_upload_quota_mib"])
	}
}

// Below --upload-disk-reserve-mib of free space on the uploads'
// filesystem, uploads are refused with Zulip's quota error and leave
// nothing behind, while messages are still sent: the reserve is the
// database's. A reserve larger than any disk stands for a full one.
func TestUploadDiskReserve_RefusesUploadsWhileMessagesWork(t *testing.T) {
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--upload-disk-reserve-mib", strconv.Itoa(1<<30)) // 1 PiB
	owner := e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey)
	status, body := e2eUpload(t, owner, "note.txt", []byte("a small file"))
	wantQuotaRefusal(t, "an upload with less free disk than the reserve", status, body)
	if blobs, temporary := storedUploads(t, db); blobs != 0 || temporary != 0 {
		t.Errorf("after the refusal: got %d blobs and %d temporary files, want none", blobs, temporary)
	}
	if status, body, _ := owner.do(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}, e2ePython); status != 200 {
		t.Fatalf("subscribe: got %d %v", status, body["msg"])
	}
	status, body, _ = owner.do(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"still here"}}, e2ePython)
	if status != 200 {
		t.Errorf("a message below the reserve: got %d %v, want 200", status, body["msg"])
	}
}

// Uploads streamed at the same time cannot together pass a quota: each
// takes its room as it starts, before its body is read, so exactly as
// many succeed as fit, the others are refused with Zulip's quota error,
// and only the accepted files stay on disk (before, each of them was
// measured against the recorded files alone, and every refused one
// left its blob for the sweeper's week).
func TestUploadQuota_ConcurrentUploadsTogetherStayWithinIt(t *testing.T) {
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--upload-quota-mib", "1")
	owner := e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey)
	const uploads, size, fit = 8, 300 << 10, 3 // three of 300 KiB fit in 1 MiB
	var started sync.WaitGroup
	started.Add(uploads)
	bodiesGo := make(chan struct{})
	type answer struct {
		status int
		body   map[string]any
		err    error
	}
	answers := make([]answer, uploads)
	var done sync.WaitGroup
	for i := range uploads {
		done.Add(1)
		go func() {
			defer done.Done()
			content := bytes.Repeat([]byte{byte('a' + i)}, size)
			status, body, err := e2eUploadSlowly(owner, "/api/v1/user_uploads", fmt.Sprintf("%d.bin", i), content, func() {
				started.Done()
				<-bodiesGo
			})
			answers[i] = answer{status, body, err}
		}()
	}
	started.Wait()
	time.Sleep(500 * time.Millisecond) // every request's head has arrived: each measured its room
	close(bodiesGo)
	done.Wait()
	accepted := 0
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Fatalf("upload %d: %v", i, a.err)
		case a.status == 200:
			accepted++
		default:
			wantQuotaRefusal(t, fmt.Sprintf("upload %d of %d at once", i, uploads), a.status, a.body)
		}
	}
	if accepted != fit {
		t.Errorf("%d uploads of 300 KiB at once under a 1 MiB quota: got %d accepted, want %d", uploads, accepted, fit)
	}
	if blobs, temporary := storedUploads(t, db); blobs != accepted || temporary != 0 {
		t.Errorf("after %d accepted uploads: got %d blobs and %d temporary files, want %d and 0", accepted, blobs, temporary, accepted)
	}
}

// A blob an upload wrote and could not record is deleted at once, but
// only when nothing uses it: not while another upload in flight holds
// the same bytes, nor while a record or an avatar uses them.
func TestDiscardBlob_DeletesOnlyWhatNothingUses(t *testing.T) {
	e := newTestEnv(t)
	write := func(content string) string {
		t.Helper()
		sum, _, err := e.st.writeBlob(strings.NewReader(content), 100)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	there := func(sum string) bool {
		_, err := os.Stat(blobPath(e.st.uploadsDir(), sum))
		return err == nil
	}
	discard := func(sum string) {
		t.Helper()
		if err := e.st.discardBlob(sum); err != nil {
			t.Fatal(err)
		}
	}

	refused := write("refused")
	again := write("refused") // a second upload of the same bytes, in flight
	e.st.releaseBlob(refused)
	discard(refused)
	if !there(refused) {
		t.Fatalf("a blob another upload in flight holds: got it deleted, want it kept")
	}
	e.st.releaseBlob(again)
	discard(again)
	if there(again) {
		t.Errorf("a blob nothing uses or holds: got it kept, want it deleted")
	}

	recorded := write("recorded")
	a := attachment{PathID: "2/" + strings.Repeat("r", 24) + "/kept.txt", Owner: e.alice.ID, Size: 8, SHA256: recorded}
	if err := e.st.addAttachment(e.alice.user, a, uploadQuota{}); err != nil {
		t.Fatal(err)
	}
	e.st.releaseBlob(recorded)
	discard(recorded) // another upload of the same bytes, refused
	if !there(recorded) {
		t.Errorf("a blob a record uses: got it deleted, want it kept")
	}
	wantAPISuccess(t, e.upload(t, &e.alice, "/api/v1/users/me/avatar", uploadPart{"file", "me.png", "image/png", pngOf(t, 30, 30)}))
	small := strings.TrimSuffix(strings.TrimPrefix(e.request(t, http.MethodGet, "/api/v1/users/me", nil, &e.alice).str("avatar_url"), "/user_avatars/2/"), ".png?version=2")
	discard(small)
	if !there(small) {
		t.Errorf("a blob an avatar uses: got it deleted, want it kept")
	}
}

// e2eUploadSlowly posts one file as the client's account with its body
// sent in two steps: the first kilobyte, then, once between returns, the
// rest. It answers the status and the envelope, or what went wrong (it
// runs beside other uploads, off the test's goroutine).
func e2eUploadSlowly(c *client, path, name string, content []byte, between func()) (int, map[string]any, error) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
	h.Set("Content-Type", "application/octet-stream")
	pw, err := w.CreatePart(h)
	if err != nil {
		return 0, nil, err
	}
	pw.Write(content)
	w.Close()
	whole := b.Bytes()
	pr, pwr := io.Pipe()
	go func() {
		pwr.Write(whole[:1024])
		between()
		pwr.Write(whole[1024:])
		pwr.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, c.base+path, pr)
	if err != nil {
		return 0, nil, err
	}
	req.ContentLength = int64(len(whole))
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.SetBasicAuth(c.email, c.key)
	slow := &http.Client{Timeout: time.Minute}
	resp, err := slow.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("upload %s: %w", name, err)
	}
	defer resp.Body.Close()
	var envelope map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&envelope); err != nil {
		return 0, nil, fmt.Errorf("upload %s: %d, body not JSON: %w", name, resp.StatusCode, err)
	}
	return resp.StatusCode, envelope, nil
}

// The server's total is kept as one count beside the records, so that
// an upload need not add up every file: each record adds its size, and
// each sweep makes the count exact again (what it deleted gone, and any
// drift, as from a database an older zulite wrote to, mended).
func TestUploads_TotalCountedAndMadeExactBySweeps(t *testing.T) {
	e := newTestEnv(t)
	e.server.uploads.quota = uploadQuota{total: 10}
	e.mustUpload(t, &e.alice, "six.txt", "123456")
	wantAPIError(t, e.upload(t, &e.bob, "/api/v1/user_uploads", uploadPart{"file", "five.txt", "", "12345"}), http.StatusBadRequest, "REALM_UPLOAD_QUOTA", "Upload would exceed your organization's upload quota.")
	e.mustUpload(t, &e.bob, "four.txt", "1234")
	total := func() int64 {
		t.Helper()
		_, all, err := e.st.uploadUsage(e.alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	if got := total(); got != 10 {
		t.Errorf("after two uploads of 6 and 4 bytes: got a total of %d, want 10", got)
	}
	// The store refuses too, for uploads that finished after the room was measured.
	if err := e.st.addAttachment(e.bob.user, attachment{PathID: "2/" + strings.Repeat("r", 24) + "/late.txt", Owner: e.bob.ID, Size: 1}, uploadQuota{total: 10}); !errors.Is(err, errUploadQuota) {
		t.Errorf("a record past the total: got %v, want the quota error", err)
	}
	e.st.update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyAttachmentBytes, itob(999)) }) // drift
	if _, _, err := e.st.sweepUploads(time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := total(); got != 10 {
		t.Errorf("after a sweep within the grace: got a total of %d, want 10 again", got)
	}
	if _, _, err := e.st.sweepUploads(time.Now().Add(2*time.Hour), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := total(); got != 0 {
		t.Errorf("after the sweep deleted both unlinked files: got a total of %d, want 0", got)
	}
	e.mustUpload(t, &e.bob, "ten.txt", "0123456789")
}

// ownerAndBob serves a new database with flags, with bob added: the
// database's path and a client for each.
func ownerAndBob(t *testing.T, flags ...string) (db string, owner, bob *client) {
	t.Helper()
	bin := e2eBuildBinary(t)
	db = filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, flags...)
	r := e2eRunCLI(t, bin, "user", "add", "bob@example.com", "--db", db)
	r.wantOK(t, "user add")
	return db, e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey), e2eNewClient(srv.baseURL, "bob@example.com", strings.TrimSpace(r.stdout))
}

// The sweeper leaves a blob an upload in flight holds, however old its
// file: an upload of the same bytes found it, and is about to record it.
func TestUploads_SweepLeavesABlobAnUploadHolds(t *testing.T) {
	e := newTestEnv(t)
	sum, _, err := e.st.writeBlob(strings.NewReader("bytes an upload is recording"), 100)
	if err != nil {
		t.Fatal(err)
	}
	path := blobPath(e.st.uploadsDir(), sum)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(path, old, old)
	if _, blobs, err := e.st.sweepUploads(time.Now(), time.Hour); err != nil || blobs != 0 {
		t.Errorf("while held: swept %d blobs (%v), want none", blobs, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the held blob: got %v, want it on disk", err)
	}
	e.st.releaseBlob(sum)
	if _, blobs, err := e.st.sweepUploads(time.Now(), time.Hour); err != nil || blobs != 1 {
		t.Errorf("once let go of: swept %d blobs (%v), want 1", blobs, err)
	}
}
