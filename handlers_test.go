package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// testEnv is a server on a fresh store with an owner, two members, an
// admin and a bot, and one public and one private channel.
type testEnv struct {
	st                            *store
	server                        *server
	handler                       http.Handler
	owner, admin, alice, bob, bot account
	general, secret               channel
}

type account struct {
	user
	key string
}

func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	st := mustOpenStore(t)
	e := &testEnv{st: st}
	s := newServer(st, discardLogger(), "http://zulite.test", "zulite")
	e.server, e.handler = s, s.routes()
	mk := func(email string, role int, bot bool) account {
		u, key := mustCreateUser(t, st, email, role, bot)
		return account{u, key}
	}
	e.owner = mk("owner@example.com", roleOwner, false)
	e.admin = mk("admin@example.com", roleAdmin, false)
	e.alice = mk("alice@example.com", roleMember, false)
	e.bob = mk("bob@example.com", roleMember, false)
	e.bot = mk("bot@example.com", roleMember, true)
	e.general = mustCreateChannel(t, st, "general", false)
	e.secret = mustCreateChannel(t, st, "secret", true)
	mustSubscribe(t, st, e.alice.user, "general")
	mustSubscribe(t, st, e.bob.user, "general")
	if err := st.addSubscriptionForTest(e.alice.user, e.secret); err != nil {
		t.Fatal(err)
	}
	return e
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// encoding is how a client sends parameters.
type encoding int

const (
	urlencoded    encoding = iota // the Python client: urlencoded bodies
	multipartForm                 // zulip-js: multipart POST bodies
	queryString                   // zulip-js DELETE, and every GET
)

type response struct {
	status int
	header http.Header
	raw    string
	body   map[string]any
}

func (r response) str(name string) string { s, _ := r.body[name].(string); return s }

// request sends params in the usual encoding for the method: the query
// string for GET, an urlencoded body otherwise.
func (e *testEnv) request(t *testing.T, method, path string, params url.Values, creds *account) response {
	t.Helper()
	enc := urlencoded
	if method == http.MethodGet {
		enc = queryString
	}
	return e.requestAs(t, enc, method, path, params, creds)
}

func (e *testEnv) requestAs(t *testing.T, enc encoding, method, path string, params url.Values, creds *account) response {
	t.Helper()
	req := buildRequest(t, enc, method, path, params)
	if creds != nil {
		req.SetBasicAuth(creds.Email, creds.key)
	}
	return e.do(t, req)
}

func buildRequest(t *testing.T, enc encoding, method, path string, params url.Values) *http.Request {
	t.Helper()
	var body io.Reader
	contentType := ""
	switch enc {
	case urlencoded:
		body = strings.NewReader(params.Encode())
		contentType = "application/x-www-form-urlencoded"
	case multipartForm:
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		keys := make([]string, 0, len(params))
		for k := range params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, v := range params[k] {
				w.WriteField(k, v)
			}
		}
		w.Close()
		body = &b
		contentType = w.FormDataContentType()
	case queryString:
		if len(params) > 0 {
			path += "?" + params.Encode()
		}
	}
	req := httptest.NewRequest(method, path, body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req
}

// do serves req and checks what holds for every answer: a JSON envelope
// ending in a newline, with result and msg.
func (e *testEnv) do(t *testing.T, req *http.Request) response {
	t.Helper()
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	r := response{status: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type got %q, want application/json", req.Method, req.URL, ct)
	}
	if !strings.HasSuffix(r.raw, "}\n") {
		t.Errorf("%s %s: body %q does not end in a newline", req.Method, req.URL, r.raw)
	}
	if err := json.Unmarshal([]byte(r.raw), &r.body); err != nil {
		t.Fatalf("%s %s: body %q is not JSON: %v", req.Method, req.URL, r.raw, err)
	}
	wantResult := "success"
	if r.status >= 300 {
		wantResult = "error"
	}
	if r.str("result") != wantResult {
		t.Errorf("%s %s: result got %q, want %q (status %d)", req.Method, req.URL, r.str("result"), wantResult, r.status)
	}
	if _, ok := r.body["msg"].(string); !ok {
		t.Errorf("%s %s: msg missing from %s", req.Method, req.URL, r.raw)
	}
	return r
}

func wantAPIError(t *testing.T, r response, status int, code, msg string) {
	t.Helper()
	if r.status != status || r.str("code") != code || r.str("msg") != msg {
		t.Errorf("got %d %q %q, want %d %q %q (body %s)", r.status, r.str("code"), r.str("msg"), status, code, msg, r.raw)
	}
	if _, ok := r.body["ignored_parameters_unsupported"]; ok {
		t.Errorf("error envelope carries ignored_parameters_unsupported: %s", r.raw)
	}
}

func wantAPISuccess(t *testing.T, r response) {
	t.Helper()
	if r.status != http.StatusOK || r.str("result") != "success" || r.str("msg") != "" {
		t.Errorf("got %d %s, want 200 success", r.status, r.raw)
	}
}

func (e *testEnv) tokens(t *testing.T, a account) []string {
	t.Helper()
	list, err := e.st.pushTokens(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tok := range list {
		out = append(out, string(tok.Kind)+":"+tok.Token)
	}
	return out
}

func basic(email, key string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(email+":"+key))
}

func TestParameters_EveryShapeReachesTheHandler(t *testing.T) {
	for _, enc := range []encoding{urlencoded, multipartForm, queryString} {
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			e := newTestEnv(t)
			if method == http.MethodDelete {
				if err := e.st.addPushToken(e.alice.ID, pushToken{Kind: pushAPNs, Token: "c0ffee"}); err != nil {
					t.Fatal(err)
				}
			}
			r := e.requestAs(t, enc, method, "/api/v1/users/me/apns_device_token", url.Values{"token": {"c0ffee"}}, &e.alice)
			wantAPISuccess(t, r)
			want := map[string]int{http.MethodPost: 1, http.MethodDelete: 0}[method]
			if got := len(e.tokens(t, e.alice)); got != want {
				t.Errorf("encoding %d %s: tokens after got %d, want %d", enc, method, got, want)
			}
		}
	}
}

func TestParameters_BodyWinsOverQueryAndLastValueWins(t *testing.T) {
	e := newTestEnv(t)
	req := buildRequest(t, urlencoded, http.MethodPost, "/api/v1/users/me/apns_device_token?token=dd", url.Values{"token": {"aa", "bb"}})
	req.SetBasicAuth(e.alice.Email, e.alice.key)
	wantAPISuccess(t, e.do(t, req))
	if got := e.tokens(t, e.alice); !slices.Equal(got, []string{"a:bb"}) {
		t.Errorf("tokens: got %v, want [a:bb]", got)
	}
	req = buildRequest(t, queryString, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"ee", "ff"}})
	req.SetBasicAuth(e.alice.Email, e.alice.key)
	wantAPISuccess(t, e.do(t, req))
	if got := e.tokens(t, e.alice); !slices.Equal(got, []string{"a:bb", "a:ff"}) {
		t.Errorf("tokens: got %v, want [a:bb a:ff]", got)
	}
}

func TestParameters_BodyTypesAndCharsets(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		rule, contentType, body string
		wantToken               bool
	}{
		{"urlencoded with a charset", "application/x-www-form-urlencoded; charset=UTF-8", "token=ab", true},
		{"a JSON body contributes no parameters", "application/json", `{"token":"ab"}`, false},
		{"a plain-text body contributes no parameters", "text/plain", "token=ab", false},
		{"an empty multipart body is an empty form", "multipart/form-data; boundary=xyz", "", false},
		{"an empty multipart body needs no boundary", "multipart/form-data", "", false},
	} {
		t.Run(c.rule, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/api/v1/users/me/apns_device_token", strings.NewReader(c.body))
			req.Header.Set("Content-Type", c.contentType)
			req.SetBasicAuth(e.alice.Email, e.alice.key)
			r := e.do(t, req)
			if c.wantToken {
				wantAPISuccess(t, r)
			} else {
				wantAPIError(t, r, 400, "REQUEST_VARIABLE_MISSING", "Missing 'token' argument")
				if r.body["var_name"] != "token" {
					t.Errorf("var_name: got %v, want token", r.body["var_name"])
				}
			}
		})
	}
}

func TestParameters_TypedValueErrors(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct{ value, msg string }{
		{"abc", "stream_id is not valid JSON"},
		{"", "stream_id is not valid JSON"},
		{"7.0", "stream_id is not an integer"},
		{"true", "stream_id is not an integer"},
		{`"7"`, "stream_id is not an integer"},
		{"[7]", "stream_id is not an integer"},
		{"99999999999999999999999", "stream_id is not an integer"},
	} {
		r := e.request(t, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {c.value}}, &e.alice)
		wantAPIError(t, r, 400, "BAD_REQUEST", c.msg)
	}
	id := strconv.FormatUint(e.general.ID, 10)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {" " + id + " "}}, &e.alice))

	r := e.request(t, http.MethodPost, "/api/v1/mark_stream_as_read", nil, &e.alice)
	if want := `{"result":"error","msg":"Missing 'stream_id' argument","var_name":"stream_id","code":"REQUEST_VARIABLE_MISSING"}` + "\n"; r.raw != want || r.status != 400 {
		t.Errorf("missing argument: got %d %s, want 400 %s", r.status, r.raw, want)
	}
	r = e.request(t, http.MethodGet, "/api/v1/users/me/subscriptions", url.Values{"include_subscribers": {"1"}}, &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "include_subscribers is not a boolean")
	r = e.request(t, http.MethodDelete, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`"general"`}}, &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "subscriptions is not a list")
	r = e.request(t, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"ab"}, "appid": {"bad id!"}}, &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "appid has invalid format")
	// Parameters are all read before any is validated.
	r = e.request(t, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {""}, "appid": {"bad id!"}}, &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "appid has invalid format")
	r = e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":""}]`}, "invite_only": {"abc"}}, &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "invite_only is not valid JSON")
}

func TestEnvelope_NotFoundAndMethodNotAllowed(t *testing.T) {
	e := newTestEnv(t)
	for _, path := range []string{"/api/v1/nope", "/api/v1", "/nope", "/json/nope", "/api/v1/users/me/apns_device_token/extra"} {
		r := e.request(t, http.MethodGet, path, nil, &e.alice)
		if want := `{"result":"error","msg":"Not Found","code":"BAD_REQUEST"}` + "\n"; r.status != 404 || r.raw != want {
			t.Errorf("GET %s: got %d %s, want 404 %s", path, r.status, r.raw, want)
		}
	}
	// 405 is decided before authentication: no credentials at all.
	r := e.request(t, http.MethodPut, "/api/v1/users/me/apns_device_token", url.Values{"token": {"ab"}}, nil)
	if want := `{"result":"error","msg":"Method Not Allowed","allowed_methods":["DELETE","POST"]}` + "\n"; r.status != 405 || r.raw != want {
		t.Errorf("PUT: got %d %s, want 405 %s", r.status, r.raw, want)
	}
	if got := r.header.Get("Allow"); got != "DELETE, POST" {
		t.Errorf("Allow: got %q, want %q", got, "DELETE, POST")
	}
	if got := e.tokens(t, e.alice); len(got) != 0 {
		t.Errorf("tokens after 405: got %v, want none", got)
	}
	for path, methods := range map[string]string{
		"/api/v1/mark_stream_as_read":         "POST",
		"/api/v1/users/me/subscriptions":      "DELETE, GET, PATCH, POST",
		"/api/v1/server_settings":             "GET",
		"/api/v1/users/me/android_gcm_reg_id": "DELETE, POST",
	} {
		r := e.request(t, http.MethodPut, path, nil, nil) // no route takes PUT
		if r.status != 405 || r.header.Get("Allow") != methods {
			t.Errorf("PUT %s: got %d, Allow %q; want 405, Allow %q", path, r.status, r.header.Get("Allow"), methods)
		}
	}
}

func TestEnvelope_InternalErrorSaysNothingMore(t *testing.T) {
	e := newTestEnv(t)
	var logs bytes.Buffer
	s := newServer(e.st, slog.New(slog.NewTextHandler(&logs, nil)), "", "")
	h := s.routes()
	path := e.st.db.Path()
	if err := e.st.db.Close(); err != nil { // every transaction now fails
		t.Fatal(err)
	}
	defer func() { // reopen for the consistency check at cleanup
		var err error
		if e.st.db, err = bbolt.Open(path, 0o600, nil); err != nil {
			t.Fatal(err)
		}
	}()
	req := buildRequest(t, urlencoded, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {"1"}})
	req.SetBasicAuth(e.alice.Email, e.alice.key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if want := `{"result":"error","msg":"Internal server error"}` + "\n"; rec.Code != 500 || rec.Body.String() != want {
		t.Errorf("got %d %s, want 500 %s", rec.Code, rec.Body, want)
	}
	if !strings.Contains(logs.String(), "database not open") {
		t.Errorf("log: got %q, want the cause", logs.String())
	}
	if strings.Contains(logs.String(), e.alice.key) {
		t.Errorf("the log holds the API key")
	}
}

func TestEnvelope_DoubleSlashServedNotRedirected(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodPost, "//api/v1//users/me/apns_device_token", url.Values{"token": {"ab"}}, &e.alice)
	wantAPISuccess(t, r)
	if got := e.tokens(t, e.alice); len(got) != 1 {
		t.Errorf("tokens: got %v, want one", got)
	}
}

func TestEnvelope_BodyOverLimitRefused(t *testing.T) {
	e := newTestEnv(t)
	big := "token=ab&pad=" + strings.Repeat("x", defaultMaxBody)
	for _, chunked := range []bool{false, true} {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/users/me/apns_device_token", strings.NewReader(big))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if chunked {
			req.ContentLength = -1 // length unknown: the limit applies while reading
		}
		req.SetBasicAuth(e.alice.Email, e.alice.key)
		r := e.do(t, req)
		if want := `{"result":"error","msg":"Request body too large","code":"BAD_REQUEST"}` + "\n"; r.status != 413 || r.raw != want {
			t.Errorf("chunked=%v: got %d %s, want 413 %s", chunked, r.status, r.raw, want)
		}
	}
	if got := e.tokens(t, e.alice); len(got) != 0 {
		t.Errorf("tokens after 413: got %v, want none", got)
	}
}

func TestEnvelope_IgnoredParametersSortedLastAndClientSilent(t *testing.T) {
	e := newTestEnv(t)
	if err := e.st.addPushToken(e.alice.ID, pushToken{Kind: pushAPNs, Token: "ab"}); err != nil {
		t.Fatal(err)
	}
	req := buildRequest(t, urlencoded, http.MethodDelete, "/api/v1/users/me/apns_device_token?zeta=1&appid=x", url.Values{"token": {"ab"}, "client": {"test"}, "beta": {"1", "2"}, "Alpha": {"1"}, "zeta": {"2"}})
	req.SetBasicAuth(e.alice.Email, e.alice.key)
	r := e.do(t, req)
	want := `{"result":"success","msg":"","ignored_parameters_unsupported":["Alpha","appid","beta","zeta"]}` + "\n"
	if r.raw != want {
		t.Errorf("got %s, want %s", r.raw, want)
	}
	r = e.request(t, http.MethodGet, "/api/v1/server_settings", url.Values{"foo": {"1"}}, nil)
	if _, ok := r.body["ignored_parameters_unsupported"]; ok {
		t.Errorf("server_settings reported ignored parameters: %s", r.raw)
	}
	r = e.request(t, http.MethodGet, "/api/v1/users/me", url.Values{"client": {"x"}}, &e.alice)
	if _, ok := r.body["ignored_parameters_unsupported"]; ok {
		t.Errorf("client was reported as ignored: %s", r.raw)
	}
}

func channelNamed(t *testing.T, e *testEnv, name string) channel {
	t.Helper()
	var ch channel
	err := e.st.db.View(func(tx *bbolt.Tx) error {
		var err error
		ch, err = e.st.channelByName(tx, name)
		return err
	})
	if err != nil {
		t.Fatalf("channel %s: %v", name, err)
	}
	return ch
}
