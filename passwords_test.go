package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

func TestPasswordHasher_Argon2idWithChosenParameters(t *testing.T) {
	h := newPasswordHasher()
	stored, err := h.hash(t.Context(), "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stored, "$argon2id$v=19$m=12288,t=3,p=1$") {
		t.Errorf("stored form: got %q, want argon2id with m=12288,t=3,p=1", stored[:strings.LastIndex(stored, "$")])
	}
	again, err := h.hash(t.Context(), "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if stored == again {
		t.Errorf("two hashes of one password are equal: the salt is not random")
	}
	if !verifies(h, stored, "correct horse") || verifies(h, stored, "correct horsE") || verifies(h, "", "") {
		t.Errorf("verify: right password must pass, wrong and missing ones fail")
	}
	tampered := strings.Replace(stored, "m=12288", "m=1048576", 1) // 1 GiB: refused, not computed
	if verifies(h, tampered, "correct horse") {
		t.Errorf("a stored hash asking for 1 GiB was verified")
	}
}

func TestPasswordHasher_AtMostTwoHashesAtOnce(t *testing.T) {
	h := newPasswordHasher()
	for range passwordSlots { // every slot taken
		h.slots <- struct{}{}
	}
	done := make(chan string)
	go func() { got, _ := h.hash(t.Context(), "waits for a slot"); done <- got }()
	select {
	case <-done:
		t.Fatalf("a hash ran while all %d slots were taken", passwordSlots)
	case <-time.After(100 * time.Millisecond):
	}
	<-h.slots
	if got := <-done; !strings.HasPrefix(got, "$argon2id$") {
		t.Errorf("hash after a slot freed: got %q", got)
	}
}

// loginEnv is a test server where alice has a password.
func loginEnv(t *testing.T) *testEnv {
	t.Helper()
	e := newTestEnv(t)
	if err := e.st.setPassword("alice@example.com", hashOf("alice-password")); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *testEnv) login(t *testing.T, username, password string) response {
	t.Helper()
	return e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/fetch_api_key", url.Values{"username": {username}, "password": {password}}, nil)
}

func TestFetchAPIKey_MintsANewKeyAndKeepsTheOthers(t *testing.T) {
	e := loginEnv(t)
	r := e.login(t, "ALICE@example.com", "alice-password")
	wantAPISuccess(t, r)
	key := r.str("api_key")
	if !isAPIKey(key) || key == e.alice.key || r.body["email"] != e.alice.Email || r.body["user_id"] != float64(e.alice.ID) {
		t.Fatalf("login: got %d-character key, email %v, user_id %v; want a new key for alice", len(key), r.body["email"], r.body["user_id"])
	}
	for _, k := range []string{key, e.alice.key} {
		if _, err := e.st.keys.authenticate(e.alice.Email, k); err != nil {
			t.Errorf("a key after login: got %v, want it to work", err)
		}
	}
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if bytes.Contains(v, []byte("alice-password")) || bytes.Contains(v, []byte(key)) {
					t.Errorf("bucket %s holds the password or the new key in the clear", name)
				}
				return nil
			})
		})
	})
}

func TestFetchAPIKey_Failures(t *testing.T) {
	e := loginEnv(t)
	if err := e.st.setPassword("bob@example.com", hashOf("bob-password")); err != nil {
		t.Fatal(err)
	}
	if err := e.st.setActive("bob@example.com", false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rule, username, password string
		status                   int
		code, msg                string
	}{
		{"wrong password", "alice@example.com", "nope-nope", 401, "AUTHENTICATION_FAILED", "Your username or password is incorrect"},
		{"unknown account", "nobody@example.com", "alice-password", 401, "AUTHENTICATION_FAILED", "Your username or password is incorrect"},
		{"account without a password", "owner@example.com", "", 401, "AUTHENTICATION_FAILED", "Your username or password is incorrect"},
		{"deactivated account", "bob@example.com", "bob-password", 401, "USER_DEACTIVATED", "Account is deactivated"},
	} {
		r := e.login(t, c.username, c.password)
		wantAPIError(t, r, c.status, c.code, c.msg)
		if strings.Contains(r.raw, c.password) && c.password != "" {
			t.Errorf("%s: the answer repeats the password", c.rule)
		}
	}
	r := e.requestAs(t, multipartForm, http.MethodPost, "/api/v1/fetch_api_key", url.Values{"username": {"alice@example.com"}}, nil)
	wantAPIError(t, r, 400, "REQUEST_VARIABLE_MISSING", "Missing 'password' argument")
}

func TestFetchAPIKey_FiveFailuresPerAccountThenRefused(t *testing.T) {
	e := loginEnv(t)
	if err := e.st.setPassword("bob@example.com", hashOf("bob-password")); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		wantAPIError(t, e.login(t, "alice@example.com", "guess"), 401, "AUTHENTICATION_FAILED", "Your username or password is incorrect")
	}
	r := e.login(t, "alice@example.com", "alice-password") // even the right one, for now
	wantAPIError(t, r, 429, "RATE_LIMIT_HIT", signInRefusal(r))
	if secs, _ := r.body["retry-after"].(float64); secs < 1 || secs > 1800 || r.header.Get("Retry-After") == "" {
		t.Errorf("retry-after: got %v and header %q, want 1..1800 seconds", r.body["retry-after"], r.header.Get("Retry-After"))
	}
	wantAPISuccess(t, e.login(t, "bob@example.com", "bob-password")) // other accounts unaffected

	l := newLoginLimiter()
	now := time.Now()
	for range 5 {
		l.reserve("x@example.com", now)
		l.finish("x@example.com", true, now)
	}
	if l.reserve("X@example.com", now.Add(29*time.Minute)) <= 0 || l.reserve("x@example.com", now.Add(30*time.Minute)) != 0 {
		t.Errorf("limiter: want refusal for 30 minutes, then none")
	}
	// Attempts count while they run: parallel guesses cannot pass the limit.
	for i := range 5 {
		if l.reserve("y@example.com", now) != 0 {
			t.Fatalf("attempt %d refused, want 5 allowed", i+1)
		}
	}
	if l.reserve("y@example.com", now) == 0 {
		t.Errorf("a sixth attempt while five run: allowed, want refused")
	}
	l.finish("y@example.com", false, now) // a success gives its place back
	if l.reserve("y@example.com", now) != 0 {
		t.Errorf("after a success: refused, want a place")
	}
}

func TestUsers_AdminsCreateEveryoneLists(t *testing.T) {
	e := newTestEnv(t)
	create := func(a *account, email, password, name string) response {
		return e.request(t, http.MethodPost, "/api/v1/users", url.Values{"email": {email}, "password": {password}, "full_name": {name}}, a)
	}
	wantAPIError(t, create(&e.alice, "new@example.com", "new-password", "New"), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator")
	wantAPIError(t, create(&e.admin, "not an e-mail", "new-password", "New"), 400, "BAD_REQUEST", "Bad name or username")
	wantAPIError(t, create(&e.admin, "new@example.com", "short", "New"), 400, "BAD_REQUEST", "The password is too weak.")
	wantAPIError(t, create(&e.admin, "new@example.com", "new-password", " "), 400, "BAD_REQUEST", "Name too short!")
	wantAPIError(t, create(&e.admin, "ALICE@example.com", "new-password", "A"), 400, "BAD_REQUEST", "Email 'ALICE@example.com' already in use")
	n, err := e.st.userCount()
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("accounts after refused creations: got %d, want 5", n)
	}
	r := create(&e.owner, "new@example.com", "new-password", "New Person")
	wantAPISuccess(t, r)
	if r.body["user_id"] != 6.0 {
		t.Errorf("user_id: got %v, want 6", r.body["user_id"])
	}
	wantAPISuccess(t, e.login(t, "new@example.com", "new-password"))

	r = e.request(t, http.MethodGet, "/api/v1/users", nil, &e.bob)
	wantAPISuccess(t, r)
	members := r.body["members"].([]any)
	if len(members) != 6 {
		t.Fatalf("members: got %d, want 6", len(members))
	}
	last := members[5].(map[string]any)
	for _, f := range []string{"user_id", "email", "full_name", "is_admin", "is_owner", "is_guest", "is_bot", "role", "is_active", "avatar_url", "date_joined", "timezone", "delivery_email"} {
		if _, ok := last[f]; !ok {
			t.Errorf("member lacks %s", f)
		}
	}
	if last["full_name"] != "New Person" || last["role"] != 400.0 {
		t.Errorf("new member: got %v", last)
	}
}

func TestRun_PasswordsFromStandardInput(t *testing.T) {
	db := t.TempDir() + "/z.db"
	runWith := func(stdin string, args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(t.Context(), append(args, "--db", db), func(string) string { return "" }, strings.NewReader(stdin), &out, &errOut)
		if strings.Contains(out.String()+errOut.String(), "s3cret-pass") {
			t.Errorf("%q printed the password", args)
		}
		return out.String(), err
	}
	if out, err := runWith("s3cret-pass\n", "user", "add", "a@example.com", "--password-stdin"); err != nil || !apiKeyLine.MatchString(out) {
		t.Fatalf("user add --password-stdin: got %v", err)
	}
	if _, err := runWith("short\n", "user", "password", "a@example.com"); err == nil {
		t.Errorf("a five-character password: got nil error, want refusal")
	}
	check := func(password string) bool {
		st, err := openStore(db, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer st.close()
		_, stored, err := st.credentials("a@example.com")
		if err != nil {
			t.Fatal(err)
		}
		return verifies(newPasswordHasher(), stored, password)
	}
	if !check("s3cret-pass") {
		t.Errorf("the password from user add does not verify")
	}
	if _, err := runWith("another-s3cret-pass\r\n", "user", "password", "A@example.com"); err != nil {
		t.Fatal(err)
	}
	if !check("another-s3cret-pass") || check("s3cret-pass") {
		t.Errorf("user password: want the new password to verify and the old one not")
	}
}

// signInRefusal is the msg of a login refused by the account's throttle,
// for the wait its answer gives.
func signInRefusal(r response) string {
	return fmt.Sprintf("You're making too many attempts to sign in. Try again in %v seconds or contact your organization administrator for help.", r.body["retry-after"])
}

func hashOf(password string) string {
	hash, err := newPasswordHasher().hash(context.Background(), password)
	if err != nil {
		panic(err)
	}
	return hash
}

func verifies(h *passwordHasher, stored, password string) bool {
	ok, err := h.verify(context.Background(), stored, password)
	return ok && err == nil
}

func TestFetchAPIKey_ParallelGuessesStopAtTheLimit(t *testing.T) {
	e := loginEnv(t)
	var wg sync.WaitGroup
	var refused, failed atomic.Int32
	for range 20 {
		wg.Go(func() {
			r := e.login(t, "alice@example.com", "guess-guess")
			switch r.status {
			case 429:
				refused.Add(1)
			case 401:
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 5 || failed.Load()+refused.Load() != 20 {
		t.Errorf("20 parallel guesses: %d checked, %d refused; want at most 5 checked", failed.Load(), refused.Load())
	}
}

func TestFetchAPIKey_BotsDoNotLogInWithPasswords(t *testing.T) {
	e := newTestEnv(t)
	if err := e.st.setPassword("bot@example.com", hashOf("bot-password")); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, e.login(t, "bot@example.com", "bot-password"), 401, "AUTHENTICATION_FAILED", "Your username or password is incorrect")
	if _, _, err := runCLI(t, nil, "user", "add", "b2@example.com", "--bot", "--password-stdin", "--db", t.TempDir()+"/z.db"); !errors.Is(err, errUsage) {
		t.Errorf("user add --bot --password-stdin: got %v, want a usage error", err)
	}
}

// An unknown account costs the work a wrong password costs, one argon2id
// derivation, even when the first such login met a busy hasher: the
// dummy hash it is checked against could then stay empty, and unknown
// accounts failed without hashing, which told them apart (issue 28,
// item 6). The work is counted, not timed.
func TestPasswordHasher_UnknownAccountCostsOneHashEvenAfterABusyStart(t *testing.T) {
	h := newPasswordHasher()
	stored := hashOf("right-password") // made by another hasher: h's count stays its own
	for range passwordSlots {
		h.slots <- struct{}{}
	}
	h.waiting.Store(passwordQueue)
	if _, err := h.verify(t.Context(), "", "guess-guess"); !errors.Is(err, errHasherBusy) {
		t.Errorf("the first unknown account, hasher busy: got %v, want errHasherBusy", err)
	}
	h.waiting.Store(0)
	for range passwordSlots {
		<-h.slots
	}
	for _, c := range []struct{ rule, stored string }{
		{"unknown account", ""},
		{"wrong password", stored},
		{"unknown account again", ""},
	} {
		before := h.derivations.Load()
		ok, err := h.verify(t.Context(), c.stored, "guess-guess")
		if got := h.derivations.Load() - before; ok || err != nil || got != 1 {
			t.Errorf("%s: got %v, %v and %d derivations; want false, nil and 1", c.rule, ok, err, got)
		}
	}
}

// Through the real binary: a wrong password, an unknown account and an
// account without a password each cost one password hash, as /metrics
// counts them; so does each of a burst of logins of unknown accounts that
// was checked, and one refused because the hasher was busy costs none.
func TestPasswordLogin_UnknownAccountAndWrongPasswordCostOneHashEach(t *testing.T) {
	bin := e2eBuildBinary(t)
	srv := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"))
	defer srv.stop()
	owner := e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey)
	status, body, _ := owner.do(t, http.MethodPost, "/api/v1/users", url.Values{"email": {"alice@example.com"}, "password": {"alice-password"}, "full_name": {"Alice"}}, e2ePython)
	e2eWantSuccess(t, "create alice", status, body)
	hashes := func() int64 {
		t.Helper()
		return e2eMetric(t, srv, "zulite_password_hashes_total")
	}
	anonymous := e2eNewClient(srv.baseURL, "", "")
	login := func(username, password string) int {
		status, _, _ := anonymous.do(t, http.MethodPost, "/api/v1/fetch_api_key", url.Values{"username": {username}, "password": {password}}, e2ePython)
		return status
	}
	for _, c := range []struct {
		rule, username, password string
		status                   int
	}{
		{"wrong password", "alice@example.com", "guess-guess", 401},
		{"unknown account", "nobody@example.com", "guess-guess", 401},
		{"account without a password", srv.ownerEmail, "guess-guess", 401},
		{"right password", "alice@example.com", "alice-password", 200},
	} {
		before := hashes()
		got := login(c.username, c.password)
		if n := hashes() - before; got != c.status || n != 1 {
			t.Errorf("%s: got status %d and %d hashes; want %d and 1", c.rule, got, n, c.status)
		}
	}
	before := hashes()
	var wg sync.WaitGroup
	var checked, busy atomic.Int64
	for i := range 40 {
		wg.Go(func() {
			switch login(fmt.Sprintf("nobody%d@example.com", i), "guess-guess") {
			case 401:
				checked.Add(1)
			case 429:
				busy.Add(1)
			}
		})
	}
	wg.Wait()
	if n := hashes() - before; n != checked.Load() || checked.Load()+busy.Load() != 40 {
		t.Errorf("40 logins of unknown accounts at once: %d checked, %d refused as busy, %d hashes; want one hash per check", checked.Load(), busy.Load(), n)
	}
}

// After 5 wrong passwords an account's password logins are refused for
// the rest of 30 minutes, and the refusal says for how long, in the API
// (Zulip's RATE_LIMIT_HIT and retry-after) and on the web page's login
// form alike, in the words of Zulip's login form (issue 28, item 7).
func TestLoginThrottle_SaysHowLongInTheAPIAndOnTheLoginPage(t *testing.T) {
	bin := e2eBuildBinary(t)
	srv := e2eStartServer(t, bin, filepath.Join(t.TempDir(), "z.db"))
	defer srv.stop()
	owner := e2eNewClient(srv.baseURL, srv.ownerEmail, srv.ownerKey)
	status, body, _ := owner.do(t, http.MethodPost, "/api/v1/users", url.Values{"email": {"alice@example.com"}, "password": {"alice-password"}, "full_name": {"Alice"}}, e2ePython)
	e2eWantSuccess(t, "create alice", status, body)
	anonymous := e2eNewClient(srv.baseURL, "", "")
	login := url.Values{"username": {"alice@example.com"}, "password": {"guess-guess"}}
	for i := range 5 {
		status, body, _ := anonymous.do(t, http.MethodPost, "/api/v1/fetch_api_key", login, e2ePython)
		e2eWantError(t, fmt.Sprintf("wrong password %d", i+1), status, body, 401, "Your username or password is incorrect", "AUTHENTICATION_FAILED")
	}
	wantHowLong := func(what string, status int, body map[string]any, header http.Header) {
		t.Helper()
		secs, ok := jsonInt(body["retry-after"])
		if status != 429 || body["code"] != "RATE_LIMIT_HIT" || !ok || secs < 1790 || secs > 1800 || header.Get("Retry-After") != strconv.FormatInt(secs, 10) {
			t.Errorf("%s: got %d, code %v, retry-after %v, header %q; want 429 RATE_LIMIT_HIT and about 1800 seconds in both", what, status, body["code"], body["retry-after"], header.Get("Retry-After"))
		}
		want := fmt.Sprintf("You're making too many attempts to sign in. Try again in %d seconds or contact your organization administrator for help.", secs)
		if body["msg"] != want {
			t.Errorf("%s: msg: got %q, want %q", what, body["msg"], want)
		}
	}
	login.Set("password", "alice-password") // even the right one, for now
	status, body, header := anonymous.do(t, http.MethodPost, "/api/v1/fetch_api_key", login, e2ePython)
	wantHowLong("fetch_api_key", status, body, header)

	req, err := http.NewRequest(http.MethodPost, srv.baseURL+"/accounts/login", strings.NewReader(login.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body = nil
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("login page: %v", err)
	}
	wantHowLong("the login page's form", resp.StatusCode, body, resp.Header)
}
