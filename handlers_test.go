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
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

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

// ---- SPEC §3: HTTP conventions ----

func TestParameters_EveryShapeReachesTheHandler(t *testing.T) {
	for _, enc := range []encoding{urlencoded, multipartForm, queryString} {
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			e := newTestEnv(t)
			if method == http.MethodDelete {
				e.st.addPushToken(e.alice.ID, pushToken{Kind: pushAPNs, Token: "c0ffee"})
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
	for _, path := range []string{"/api/v1/nope", "/api/v1", "/", "/api/v1/users/me/apns_device_token/extra"} {
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
		"/api/v1/users/me/subscriptions":      "DELETE, GET, POST",
		"/api/v1/server_settings":             "GET",
		"/api/v1/users/me/android_gcm_reg_id": "DELETE, POST",
	} {
		r := e.request(t, http.MethodPatch, path, nil, nil)
		if r.status != 405 || r.header.Get("Allow") != methods {
			t.Errorf("PATCH %s: got %d, Allow %q; want 405, Allow %q", path, r.status, r.header.Get("Allow"), methods)
		}
	}
}

func TestEnvelope_InternalErrorSaysNothingMore(t *testing.T) {
	e := newTestEnv(t)
	var logs bytes.Buffer
	s := newServer(e.st, slog.New(slog.NewTextHandler(&logs, nil)), "", "")
	h := s.routes()
	path := e.st.db.Path()
	e.st.db.Close() // every transaction now fails
	defer func() {  // reopen for the consistency check at cleanup
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
	e.st.addPushToken(e.alice.ID, pushToken{Kind: pushAPNs, Token: "ab"})
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

// ---- SPEC §4: authentication ----

func TestAuthentication_EveryFailure(t *testing.T) {
	e := newTestEnv(t)
	deactivated := account{}
	deactivated.user, deactivated.key = mustCreateUser(t, e.st, "gone@example.com", roleMember, false)
	e.st.setActive("gone@example.com", false)

	for _, c := range []struct {
		rule, header string
		status       int
		code, msg    string
	}{
		{"no header", "", 401, "UNAUTHORIZED", "Not logged in: API authentication or user session required"},
		{"another scheme", "Bearer " + e.alice.key, 400, "BAD_REQUEST", "This endpoint requires HTTP basic authentication."},
		{"not base64", "Basic !!!", 401, "UNAUTHORIZED", "Invalid authorization header for basic auth"},
		{"no colon", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice@example.com")), 401, "UNAUTHORIZED", "Invalid authorization header for basic auth"},
		{"key too short", basic(e.alice.Email, "abc"), 401, "UNAUTHORIZED", "Malformed API key"},
		{"key too long", basic(e.alice.Email, strings.Repeat("a", 33)), 401, "UNAUTHORIZED", "Malformed API key"},
		{"key not alphanumeric", basic(e.alice.Email, strings.Repeat("-", 32)), 401, "UNAUTHORIZED", "Malformed API key"},
		{"wrong key", basic(e.alice.Email, newAPIKey()), 401, "UNAUTHORIZED", "Invalid API key"},
		{"another account's key", basic(e.alice.Email, e.bob.key), 401, "UNAUTHORIZED", "Invalid API key"},
		{"unknown e-mail", basic("nobody@example.com", e.alice.key), 401, "UNAUTHORIZED", "Invalid API key"},
		{"deactivated account", basic(deactivated.Email, deactivated.key), 401, "UNAUTHORIZED", "Account is deactivated"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			req := buildRequest(t, urlencoded, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"ab"}})
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			r := e.do(t, req)
			wantAPIError(t, r, c.status, c.code, c.msg)
			wantHeader := ""
			if c.status == 401 {
				wantHeader = `Basic realm="zulip"`
			}
			if got := r.header.Get("WWW-Authenticate"); got != wantHeader {
				t.Errorf("WWW-Authenticate: got %q, want %q", got, wantHeader)
			}
			if strings.Contains(r.raw, e.alice.key) {
				t.Errorf("the answer repeats the API key")
			}
			for _, a := range []account{e.alice, deactivated} {
				if got := e.tokens(t, a); len(got) != 0 {
					t.Errorf("%s's tokens after a refused request: got %v, want none", a.Email, got)
				}
			}
		})
	}
	r := e.request(t, http.MethodGet, "/api/v1/users/me", nil, &account{user{Email: "ALICE@example.COM"}, e.alice.key})
	wantAPISuccess(t, r)
	if r.body["user_id"] != float64(e.alice.ID) {
		t.Errorf("e-mail matched case-insensitively: got user %v, want %d", r.body["user_id"], e.alice.ID)
	}
}

// ---- SPEC §5: push tokens ----

func TestPushTokens_Validation(t *testing.T) {
	long := strings.Repeat("ab", maxPushTokenLength/2)
	for _, c := range []struct {
		rule, path, token string
		msg               string // empty: success
	}{
		{"empty APNs token", "apns_device_token", "", "Empty or invalid length token"},
		{"empty FCM token", "android_gcm_reg_id", "", "Empty or invalid length token"},
		{"4096 characters is the limit", "apns_device_token", long, ""},
		{"4097 characters is too long", "apns_device_token", long + "a", "Empty or invalid length token"},
		{"4097 characters FCM", "android_gcm_reg_id", strings.Repeat("x", 4097), "Empty or invalid length token"},
		{"APNs must be hex", "apns_device_token", "xyz1", "Invalid APNS token"},
		{"odd length is not hex", "apns_device_token", "abc", "Invalid APNS token"},
		{"0x prefix is not hex", "apns_device_token", "0xab", "Invalid APNS token"},
		{"space inside a pair is not hex", "apns_device_token", "a bcd", "Invalid APNS token"},
		{"whitespace between pairs and at the ends", "apns_device_token", " ab cd\tEF\n", ""},
		{"FCM tokens need not be hex", "android_gcm_reg_id", "not:hex-token_1", ""},
	} {
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			t.Run(c.rule+" "+method, func(t *testing.T) {
				e := newTestEnv(t)
				r := e.request(t, method, "/api/v1/users/me/"+c.path, url.Values{"token": {c.token}}, &e.alice)
				switch {
				case c.msg != "":
					wantAPIError(t, r, 400, "BAD_REQUEST", c.msg)
				case method == http.MethodDelete:
					wantAPIError(t, r, 400, "BAD_REQUEST", "Token does not exist")
				default:
					wantAPISuccess(t, r)
				}
				wantTokens := 0
				if c.msg == "" && method == http.MethodPost {
					wantTokens = 1
				}
				if got := e.tokens(t, e.alice); len(got) != wantTokens {
					t.Errorf("tokens after: got %d, want %d", len(got), wantTokens)
				}
			})
		}
	}
}

func TestPushTokens_BotsRefusedBeforeParameters(t *testing.T) {
	e := newTestEnv(t)
	for _, path := range []string{"apns_device_token", "android_gcm_reg_id"} {
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			for _, req := range []*http.Request{
				buildRequest(t, urlencoded, method, "/api/v1/users/me/"+path, nil),
				buildRequest(t, urlencoded, method, "/api/v1/users/me/"+path+"?token=%zz", url.Values{"token": {"ab"}}),
				buildRequest(t, urlencoded, method, "/api/v1/users/me/"+path, url.Values{"pad": {strings.Repeat("x", defaultMaxBody)}}),
			} {
				req.SetBasicAuth(e.bot.Email, e.bot.key)
				wantAPIError(t, e.do(t, req), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.")
			}
		}
	}
	if got := e.tokens(t, e.bot); len(got) != 0 {
		t.Errorf("bot's tokens: got %v, want none", got)
	}
}

func TestPushTokens_AddTwiceRemoveAndOwnership(t *testing.T) {
	e := newTestEnv(t)
	add := func(a *account, path string, params url.Values) response {
		return e.request(t, http.MethodPost, "/api/v1/users/me/"+path, params, a)
	}
	remove := func(a *account, path, token string) response {
		return e.requestAs(t, queryString, http.MethodDelete, "/api/v1/users/me/"+path, url.Values{"token": {token}}, a)
	}
	since := time.Now().Unix()
	wantAPISuccess(t, add(&e.alice, "apns_device_token", url.Values{"token": {"AABB"}}))
	wantAPISuccess(t, add(&e.alice, "apns_device_token", url.Values{"token": {"AABB"}, "appid": {"com.example.other"}}))
	wantAPISuccess(t, add(&e.bob, "apns_device_token", url.Values{"token": {"aabb"}, "appid": {"org.zulip.flutter"}}))
	wantAPISuccess(t, add(&e.alice, "android_gcm_reg_id", url.Values{"token": {"Fcm-Token"}}))

	list, _ := e.st.pushTokens(e.alice.ID)
	if len(list) != 2 || list[0].AppID != "org.zulip.Zulip" || list[0].Token != "AABB" {
		t.Fatalf("alice's tokens: got %+v, want AABB with the default app id, and the FCM token", list)
	}
	for _, tok := range list { // stored with its kind and time (SPEC §5)
		if want := map[string]pushKind{"AABB": pushAPNs, "Fcm-Token": pushFCM}[tok.Token]; tok.Kind != want || tok.Created < since || tok.Created > time.Now().Unix() {
			t.Errorf("token %s: kind %v, created %d; want %v, created from %d to now", tok.Token, tok.Kind, tok.Created, want, since)
		}
	}
	wantAPIError(t, remove(&e.alice, "android_gcm_reg_id", "fcm-token"), 400, "BAD_REQUEST", "Token does not exist")
	wantAPISuccess(t, remove(&e.alice, "android_gcm_reg_id", "Fcm-Token"))
	wantAPISuccess(t, remove(&e.alice, "apns_device_token", "aabb")) // APNs matches case-insensitively
	wantAPIError(t, remove(&e.alice, "apns_device_token", "AABB"), 400, "BAD_REQUEST", "Token does not exist")
	if got := e.tokens(t, e.bob); !slices.Equal(got, []string{"a:aabb"}) {
		t.Errorf("bob's tokens after alice's removals: got %v, want [a:aabb]", got)
	}
	r := e.request(t, http.MethodPost, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"x"}, "appid": {"a"}}, &e.alice)
	if got := r.body["ignored_parameters_unsupported"]; !reflect.DeepEqual(got, []any{"appid"}) {
		t.Errorf("FCM add with appid: ignored got %v, want [appid]", got)
	}
}

// ---- SPEC §6: channels, messages, unread ----

func TestSendMessage_TargetsAndUnread(t *testing.T) {
	e := newTestEnv(t)
	send := func(a *account, params url.Values) response {
		return e.request(t, http.MethodPost, "/api/v1/messages", params, a)
	}
	id := strconv.FormatUint(e.general.ID, 10)
	var sent []uint64
	for _, to := range []string{id, "general", `["general"]`, "[" + id + "]", "GENERAL"} {
		r := send(&e.bob, url.Values{"type": {"stream"}, "to": {to}, "topic": {"lunch"}, "content": {"hi"}})
		wantAPISuccess(t, r)
		msgID, _ := r.body["id"].(float64)
		sent = append(sent, uint64(msgID))
	}
	r := send(&e.bob, url.Values{"type": {"channel"}, "to": {"general"}, "subject": {"legacy"}, "content": {"hi"}})
	wantAPISuccess(t, r)
	sent = append(sent, uint64(r.body["id"].(float64)))
	if !slices.IsSorted(sent) {
		t.Errorf("message ids: got %v, want increasing", sent)
	}
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, sent) {
		t.Errorf("alice's unread: got %v, want %v", got, sent)
	}
	if got := mustUnread(t, e.st, e.bob.user, e.general); len(got) != 0 {
		t.Errorf("sender's unread: got %v, want none", got)
	}
	if got := mustUnread(t, e.st, e.owner.user, e.general); len(got) != 0 {
		t.Errorf("non-subscriber's unread: got %v, want none", got)
	}
	// Anyone may post to a public channel, subscribed or not.
	r = send(&e.owner, url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"from outside"}})
	wantAPISuccess(t, r)
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != len(sent)+1 {
		t.Errorf("alice's unread after a non-subscriber's post: got %d, want %d", len(got), len(sent)+1)
	}
}

func TestSendMessage_Errors(t *testing.T) {
	e := newTestEnv(t)
	base := url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"hi"}}
	with := func(k, v string) url.Values {
		p := url.Values{}
		for key, vs := range base {
			p[key] = vs
		}
		if v == "<absent>" {
			delete(p, k)
		} else {
			p.Set(k, v)
		}
		return p
	}
	for _, c := range []struct {
		rule      string
		params    url.Values
		code, msg string
		sender    *account
	}{
		{"type is required", with("type", "<absent>"), "REQUEST_VARIABLE_MISSING", "Missing 'type' argument", nil},
		{"unknown type", with("type", "carrier-pigeon"), "BAD_REQUEST", "Invalid message type", nil},
		{"content is required", with("content", "<absent>"), "REQUEST_VARIABLE_MISSING", "Missing 'content' argument", nil},
		{"to is required", with("to", "<absent>"), "BAD_REQUEST", "Missing channel", nil},
		{"unknown channel name", with("to", "nope"), "STREAM_DOES_NOT_EXIST", "Channel 'nope' does not exist", nil},
		{"unknown channel id", with("to", "999"), "STREAM_DOES_NOT_EXIST", "Channel with ID '999' does not exist", nil},
		{"two channels", with("to", `["general","secret"]`), "BAD_REQUEST", "Expected exactly one channel", nil},
		{"channel id zero", with("to", "0"), "STREAM_DOES_NOT_EXIST", "Channel with ID '0' does not exist", nil},
		{"negative channel id", with("to", "[-5]"), "STREAM_DOES_NOT_EXIST", "Channel with ID '-5' does not exist", nil},
		{"to of the wrong type", with("to", `{"a":1}`), "BAD_REQUEST", "Invalid data type for channel", nil},
		{"topic is required", with("topic", "<absent>"), "BAD_REQUEST", "Missing topic", nil},
		{"empty topic", with("topic", "  "), "BAD_REQUEST", "Topic can't be empty!", nil},
		{"control character in topic", with("topic", "a\x01b"), "BAD_REQUEST", "Invalid character in topic, at position 2!", nil},
		{"empty content", with("content", " \n "), "BAD_REQUEST", "Message must not be empty", nil},
		{"NUL in content", with("content", "a\x00b"), "BAD_REQUEST", "Message must not contain null bytes", nil},
		{"private channel, not subscribed", with("to", "secret"), "BAD_REQUEST", "Not authorized to send to channel 'secret'", &e.bob},
	} {
		t.Run(c.rule, func(t *testing.T) {
			sender := c.sender
			if sender == nil {
				sender = &e.alice
			}
			r := e.request(t, http.MethodPost, "/api/v1/messages", c.params, sender)
			wantAPIError(t, r, 400, c.code, c.msg)
			if maxID, _ := e.st.maxMessageID(); maxID != 0 {
				t.Errorf("a refused send stored a message (max id %d)", maxID)
			}
		})
	}
}

func TestSendMessage_LongTopicAndContentTruncatedAsZulipDoes(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {strings.Repeat("é", 70)}, "content": {strings.Repeat("x", 20000)}}, &e.alice)
	wantAPISuccess(t, r)
	var m message
	e.st.db.View(func(tx *bbolt.Tx) error { return getJSON(tx.Bucket(bucketMessages), itob(1), &m) })
	if want := strings.Repeat("é", 57) + "..."; m.Topic != want {
		t.Errorf("topic: got %d characters, want 57 and an ellipsis", len([]rune(m.Topic)))
	}
	if len(m.Content) != maxMessageLength || !strings.HasSuffix(m.Content, "\n[message truncated]") {
		t.Errorf("content: got %d bytes ending %q, want %d ending in the marker", len(m.Content), m.Content[len(m.Content)-20:], maxMessageLength)
	}
}

func TestMarkStreamAsRead(t *testing.T) {
	e := newTestEnv(t)
	mustSend(t, e.st, e.bob.user, e.general)
	mustSend(t, e.st, e.bob.user, e.general)
	secretMsg := mustSend(t, e.st, e.alice.user, e.secret)
	mark := func(a *account, id uint64) response {
		return e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.FormatUint(id, 10)}}, a)
	}
	for _, c := range []struct {
		rule string
		who  *account
		id   uint64
	}{
		{"unknown channel", &e.alice, 999},
		{"channel id zero", &e.alice, 0},
		{"private channel the caller is not subscribed to", &e.bob, e.secret.ID},
	} {
		wantAPIError(t, mark(c.who, c.id), 400, "BAD_REQUEST", "Invalid channel ID")
	}
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != 2 {
		t.Fatalf("alice's unread before: got %v, want 2", got)
	}
	wantAPISuccess(t, mark(&e.alice, e.general.ID))
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != 0 {
		t.Errorf("alice's unread after: got %v, want none", got)
	}
	wantAPISuccess(t, mark(&e.alice, e.general.ID)) // already read
	wantAPISuccess(t, mark(&e.owner, e.general.ID)) // public, not subscribed, nothing unread
	wantAPISuccess(t, mark(&e.alice, e.secret.ID))  // private, subscribed
	_ = secretMsg
}

func TestSubscriptions_SubscribeListUnsubscribe(t *testing.T) {
	e := newTestEnv(t)
	r := e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/users/me/subscriptions",
		url.Values{"subscriptions": {`[{"name":"general"},{"name":"new one","description":"fresh"}]`}}, &e.alice)
	wantAPISuccess(t, r)
	if got, want := r.body["subscribed"], map[string]any{"alice@example.com": []any{"new one"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("subscribed: got %v, want %v", got, want)
	}
	if got, want := r.body["already_subscribed"], map[string]any{"alice@example.com": []any{"general"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("already_subscribed: got %v, want %v", got, want)
	}
	r = e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"dup"},{"name":" DUP "}]`}, "invite_only": {"true"}}, &e.bob)
	if got, want := r.body["subscribed"], map[string]any{"bob@example.com": []any{"dup"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("a name given twice: subscribed got %v, want %v", got, want)
	}
	if got := channelNamed(t, e, "dup"); !got.Private || got.CreatorID != e.bob.ID {
		t.Errorf("created channel: got %+v, want private, created by bob", got)
	}

	r = e.request(t, http.MethodGet, "/api/v1/users/me/subscriptions", url.Values{"include_subscribers": {"true"}}, &e.alice)
	wantAPISuccess(t, r)
	subs, _ := r.body["subscriptions"].([]any)
	var names []string
	for _, s := range subs {
		sub := s.(map[string]any)
		names = append(names, sub["name"].(string))
		for _, f := range []string{"stream_id", "description", "rendered_description", "invite_only", "color", "is_muted", "in_home_view", "pin_to_top", "subscribers", "date_created", "stream_post_policy", "history_public_to_subscribers"} {
			if _, ok := sub[f]; !ok {
				t.Errorf("subscription %s lacks %s", sub["name"], f)
			}
		}
	}
	if want := []string{"general", "new one", "secret"}; !slices.Equal(names, want) {
		t.Errorf("subscriptions: got %v, want %v", names, want)
	}
	for _, s := range subs {
		sub := s.(map[string]any)
		want := channelNamed(t, e, sub["name"].(string))
		if sub["stream_id"] != float64(want.ID) || sub["invite_only"] != want.Private || sub["description"] != want.Description ||
			!slices.Contains(sub["subscribers"].([]any), any(float64(e.alice.ID))) {
			t.Errorf("subscription %s: got %v, want stream_id %d, invite_only %v, description %q, alice among subscribers",
				sub["name"], sub, want.ID, want.Private, want.Description)
		}
	}
	if nc := channelNamed(t, e, "new one"); nc.Description != "fresh" {
		t.Errorf("new one's description: got %q, want fresh", nc.Description)
	}

	// A refused request changes nothing (SPEC §3), even when a channel
	// before the bad one in the list would have been created.
	before, err := e.st.channels()
	if err != nil {
		t.Fatal(err)
	}
	r = e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"brand new"},{"name":"secret"}]`}}, &e.bob)
	wantAPIError(t, r, 400, "BAD_REQUEST", "Unable to access channel (secret).")
	for _, c := range []struct{ subs, msg string }{
		{`[{"name":"brand new"},{"name":""}]`, "Channel name can't be empty."},
		{`[{"name":"brand new"},{"name":"` + strings.Repeat("n", 61) + `"}]`, "Channel name too long (limit: 60 characters)."},
		{`[{"name":"brand new"},{"description":"no name"}]`, "name key is missing from subscriptions[1]"},
		{`["general"]`, "subscriptions[0] is not a dict"},
	} {
		wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {c.subs}}, &e.bob), 400, "BAD_REQUEST", c.msg)
	}
	if after, err := e.st.channels(); err != nil || len(after) != len(before) {
		t.Errorf("channels after refused subscribes: got %d (%v), want %d", len(after), err, len(before))
	}

	mustSend(t, e.st, e.bob.user, e.general)
	r = e.requestAs(t, queryString, http.MethodDelete, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["general","secret"]`}}, &e.bob)
	wantAPISuccess(t, r)
	if !reflect.DeepEqual(r.body["removed"], []any{"general"}) || !reflect.DeepEqual(r.body["not_removed"], []any{"secret"}) {
		t.Errorf("unsubscribe: got %s, want removed [general], not_removed [secret]", r.raw)
	}
	r = e.request(t, http.MethodDelete, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["general","nope"]`}}, &e.alice)
	wantAPIError(t, r, 400, "BAD_REQUEST", "Channel(s) (nope) do not exist")
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != 1 {
		t.Errorf("alice's unread after a refused unsubscribe: got %v, want one", got)
	}
}

func TestChannels_ListAndLookUp(t *testing.T) {
	e := newTestEnv(t)
	names := func(a *account, params url.Values) []string {
		r := e.request(t, http.MethodGet, "/api/v1/streams", params, a)
		wantAPISuccess(t, r)
		var out []string
		for _, s := range r.body["streams"].([]any) {
			out = append(out, s.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := names(&e.alice, nil); !slices.Equal(got, []string{"general", "secret"}) {
		t.Errorf("alice sees %v, want [general secret]", got)
	}
	if got := names(&e.bob, nil); !slices.Equal(got, []string{"general"}) {
		t.Errorf("bob sees %v, want [general]", got)
	}
	if got := names(&e.admin, url.Values{"include_all_active": {"true"}}); !slices.Equal(got, []string{"general", "secret"}) {
		t.Errorf("admin with include_all_active sees %v, want both", got)
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/streams", url.Values{"include_all_active": {"true"}}, &e.bob), 400, "BAD_REQUEST", "User not authorized for this query")

	// Each channel as Zulip describes it: its id, and whether it is private.
	r0 := e.request(t, http.MethodGet, "/api/v1/streams", nil, &e.alice)
	wantAPISuccess(t, r0)
	for _, raw := range r0.body["streams"].([]any) {
		st := raw.(map[string]any)
		want := map[string]channel{"general": e.general, "secret": e.secret}[st["name"].(string)]
		if st["stream_id"] != float64(want.ID) || st["invite_only"] != want.Private || st["description"] != want.Description {
			t.Errorf("%s: got stream_id %v, invite_only %v, description %q; want %d, %v, %q",
				st["name"], st["stream_id"], st["invite_only"], st["description"], want.ID, want.Private, want.Description)
		}
	}

	r := e.request(t, http.MethodGet, "/api/v1/get_stream_id", url.Values{"stream": {"General"}}, &e.bob)
	wantAPISuccess(t, r)
	if r.body["stream_id"] != float64(e.general.ID) {
		t.Errorf("stream_id: got %v, want %d", r.body["stream_id"], e.general.ID)
	}
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/get_stream_id", url.Values{"stream": {"secret"}}, &e.bob), 400, "BAD_REQUEST", "Invalid channel name 'secret'")
	wantAPIError(t, e.request(t, http.MethodGet, "/api/v1/get_stream_id", nil, &e.bob), 400, "REQUEST_VARIABLE_MISSING", "Missing 'stream' argument")
}

// ---- SPEC §7 ----

func TestServerSettings_ZulipFieldsAndNoOthers(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodGet, "/api/v1/server_settings", nil, nil)
	wantAPISuccess(t, r)
	want := []string{"authentication_methods", "email_auth_enabled", "external_authentication_methods", "is_incompatible", "msg",
		"push_notifications_enabled", "realm_description", "realm_icon", "realm_name", "realm_uri", "realm_url",
		"realm_web_public_access_enabled", "require_email_format_usernames", "result", "zulip_feature_level", "zulip_merge_base", "zulip_version"}
	var got []string
	for k := range r.body {
		got = append(got, k)
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("fields: got %v, want %v", got, want)
	}
	if level := r.body["zulip_feature_level"].(float64); level < 277 {
		t.Errorf("feature level: got %v, want at least 277", level)
	}
	if r.body["realm_url"] != "http://zulite.test" || r.body["realm_uri"] != "http://zulite.test" || r.body["push_notifications_enabled"] != false {
		t.Errorf("realm_url/realm_uri/push: got %s", r.raw)
	}
	// The values a client decides on before it logs in: a compatible
	// Zulip 9.2 (feature level 278, a real release's pair), e-mail and
	// password login only, and the realm as configured.
	for field, want := range map[string]any{
		"is_incompatible": false, "zulip_version": "9.2", "zulip_merge_base": "9.2", "zulip_feature_level": float64(278),
		"email_auth_enabled": true, "require_email_format_usernames": true, "realm_web_public_access_enabled": false,
		"realm_name": "zulite", "realm_description": "",
	} {
		if r.body[field] != want {
			t.Errorf("%s: got %#v, want %#v", field, r.body[field], want)
		}
	}
	methods, _ := r.body["authentication_methods"].(map[string]any)
	for method, enabled := range methods {
		if enabled != (method == "password") {
			t.Errorf("authentication_methods.%s: got %v, want %v", method, enabled, method == "password")
		}
	}
	if methods["password"] != true {
		t.Errorf("authentication_methods: got %v, want password enabled", methods)
	}
	if !strings.Contains(r.raw, `"external_authentication_methods":[]`) { // a list, never null
		t.Errorf("external_authentication_methods: got %s", r.raw)
	}
	if icon, _ := r.body["realm_icon"].(string); !strings.HasPrefix(icon, "http://zulite.test/") {
		t.Errorf("realm_icon: got %q, want a URL on the realm", r.body["realm_icon"])
	}
}

func TestOwnUser_RolesAsZulipNumbersThem(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		who            *account
		role           float64
		isAdmin, isBot bool
	}{
		{&e.owner, 100, true, false},
		{&e.admin, 200, true, false},
		{&e.alice, 400, false, false},
		{&e.bot, 400, false, true},
	} {
		r := e.request(t, http.MethodGet, "/api/v1/users/me", nil, c.who)
		wantAPISuccess(t, r)
		if r.body["role"] != c.role || r.body["is_admin"] != c.isAdmin || r.body["is_bot"] != c.isBot ||
			r.body["email"] != c.who.Email || r.body["user_id"] != float64(c.who.ID) || r.body["full_name"] != c.who.FullName {
			t.Errorf("%s: got %s, want role %v, is_admin %v, is_bot %v", c.who.Email, r.raw, c.role, c.isAdmin, c.isBot)
		}
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

// ---- personal flags and the other mark-read routes ----

func (e *testEnv) sendAs(t *testing.T, a account, ch channel, topic string) uint64 {
	t.Helper()
	sent, err := e.st.sendMessage(a.user, channelRef{ID: ch.ID}, topic, "hi", "test")
	if err != nil {
		t.Fatal(err)
	}
	return sent.ID
}

func jsonIDs(ids ...uint64) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

func (e *testEnv) starred(t *testing.T, a account) []uint64 {
	t.Helper()
	var ids []uint64
	e.st.db.View(func(tx *bbolt.Tx) error {
		prefix := itob(a.ID)
		c := tx.Bucket(bucketFlags).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if v[0]&flagStarred != 0 {
				ids = append(ids, btoi(k[8:]))
			}
		}
		return nil
	})
	return ids
}

func TestUpdateFlags_ValidationChangesNothing(t *testing.T) {
	e := newTestEnv(t)
	m1 := e.sendAs(t, e.bob, e.general, "t")
	secret := e.sendAs(t, e.alice, e.secret, "t")
	for _, c := range []struct {
		rule, messages, op, flag string
		code, msg                string
	}{
		{"messages not JSON", "abc", "add", "read", "BAD_REQUEST", "messages is not valid JSON"},
		{"messages not a list", "7", "add", "read", "BAD_REQUEST", "messages is not a list"},
		{"an element not an integer", `[1,"a"]`, "add", "read", "BAD_REQUEST", "messages[1] is not an integer"},
		{"unknown flag", jsonIDs(m1), "add", "bogus", "BAD_REQUEST", "Invalid flag: 'bogus'"},
		{"flag the user cannot set", jsonIDs(m1), "add", "mentioned", "BAD_REQUEST", "Flag not editable: 'mentioned'"},
		{"unknown operation", jsonIDs(m1), "toggle", "read", "BAD_REQUEST", "Invalid message flag operation: 'toggle'"},
		{"a message that does not exist", jsonIDs(m1, 9999), "add", "read", "BAD_REQUEST", "Invalid message(s)"},
		{"a message in a private channel", jsonIDs(m1, secret), "add", "starred", "BAD_REQUEST", "Invalid message(s)"},
		{"message id zero", "[0]", "add", "read", "BAD_REQUEST", "Invalid message(s)"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			r := e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {c.messages}, "op": {c.op}, "flag": {c.flag}}, &e.bob)
			wantAPIError(t, r, 400, c.code, c.msg)
		})
	}
	r := e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {"[1]"}, "op": {"add"}}, &e.bob)
	wantAPIError(t, r, 400, "REQUEST_VARIABLE_MISSING", "Missing 'flag' argument")
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, []uint64{m1}) {
		t.Errorf("alice's unread after refused calls: got %v, want [%d]", got, m1)
	}
	if got := e.starred(t, e.bob); len(got) != 0 {
		t.Errorf("bob's starred after refused calls: got %v, want none", got)
	}
}

func TestUpdateFlags_ReadAndStarred(t *testing.T) {
	e := newTestEnv(t)
	m1, m2, m3 := e.sendAs(t, e.bob, e.general, "a"), e.sendAs(t, e.bob, e.general, "b"), e.sendAs(t, e.bob, e.general, "a")
	flags := func(a *account, op, flag string, ids ...uint64) {
		t.Helper()
		r := e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(ids...)}, "op": {op}, "flag": {flag}}, a)
		wantAPISuccess(t, r)
		if got := r.body["messages"]; !reflect.DeepEqual(got, toAny(ids)) {
			t.Errorf("messages: got %v, want %v", got, ids)
		}
	}
	flags(&e.alice, "add", "read", m3, m1, m1)
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, []uint64{m2}) {
		t.Errorf("after add read: got %v, want [%d]", got, m2)
	}
	flags(&e.alice, "remove", "read", m1)
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, []uint64{m1, m2}) {
		t.Errorf("after remove read: got %v, want [%d %d]", got, m1, m2)
	}
	flags(&e.owner, "remove", "read", m1) // not subscribed: nothing becomes unread
	if got := mustUnread(t, e.st, e.owner.user, e.general); len(got) != 0 {
		t.Errorf("non-subscriber's unread: got %v, want none", got)
	}
	flags(&e.alice, "add", "starred", m2, m3)
	flags(&e.alice, "remove", "starred", m3)
	flags(&e.alice, "add", "collapsed", m3)
	if got := e.starred(t, e.alice); !slices.Equal(got, []uint64{m2}) {
		t.Errorf("starred: got %v, want [%d]", got, m2)
	}
	if got := e.starred(t, e.bob); len(got) != 0 {
		t.Errorf("bob's starred: got %v, want none", got)
	}
}

func toAny(ids []uint64) []any {
	out := []any{}
	for _, id := range ids {
		out = append(out, float64(id))
	}
	return out
}

func TestMarkTopicAsRead(t *testing.T) {
	e := newTestEnv(t)
	lunch1, dinner, lunch2 := e.sendAs(t, e.bob, e.general, "lunch"), e.sendAs(t, e.bob, e.general, "dinner"), e.sendAs(t, e.bob, e.general, "Lunch")
	id := strconv.FormatUint(e.general.ID, 10)
	mark := func(a *account, channelID, topic string) response {
		return e.request(t, http.MethodPost, "/api/v1/mark_topic_as_read", url.Values{"stream_id": {channelID}, "topic_name": {topic}}, a)
	}
	wantAPIError(t, mark(&e.alice, id, "nope"), 400, "BAD_REQUEST", "No such topic 'nope'")
	wantAPIError(t, mark(&e.alice, id, " lunch "), 400, "BAD_REQUEST", "No such topic ' lunch '")
	wantAPISuccess(t, mark(&e.alice, id, "")) // Zulip checks only a named topic
	wantAPIError(t, mark(&e.alice, "999", "lunch"), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, mark(&e.bob, strconv.FormatUint(e.secret.ID, 10), "t"), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/mark_topic_as_read", url.Values{"stream_id": {id}}, &e.alice), 400, "REQUEST_VARIABLE_MISSING", "Missing 'topic_name' argument")
	if got := mustUnread(t, e.st, e.alice.user, e.general); len(got) != 3 {
		t.Fatalf("unread after refused calls: got %v, want 3", got)
	}
	wantAPISuccess(t, mark(&e.alice, id, "LUNCH"))
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, []uint64{dinner}) {
		t.Errorf("after marking lunch read: got %v, want [%d] (not %d, %d)", got, dinner, lunch1, lunch2)
	}
}

func TestMarkAllAsRead(t *testing.T) {
	e := newTestEnv(t)
	e.sendAs(t, e.bob, e.general, "a")
	e.sendAs(t, e.alice, e.general, "a")
	mustSubscribe(t, e.st, e.bob.user, "general")
	e.st.addSubscriptionForTest(e.bob.user, e.secret)
	e.sendAs(t, e.bob, e.secret, "s")
	r := e.request(t, http.MethodPost, "/api/v1/mark_all_as_read", nil, &e.alice)
	if want := `{"result":"success","msg":"","complete":true}` + "\n"; r.raw != want {
		t.Errorf("got %s, want %s", r.raw, want)
	}
	for _, ch := range []channel{e.general, e.secret} {
		if got := mustUnread(t, e.st, e.alice.user, ch); len(got) != 0 {
			t.Errorf("alice's unread in %s: got %v, want none", ch.Name, got)
		}
	}
	if got := mustUnread(t, e.st, e.bob.user, e.general); len(got) != 1 {
		t.Errorf("bob's unread: got %v, want his one", got)
	}
}
