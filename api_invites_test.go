package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// offlineMailer is a mailer whose queue nobody drains: what POST
// /invites queues stays there for the test to read.
func offlineMailer() *mailer {
	return newMailer(smtpConfig{Host: "127.0.0.1", Port: 1, From: "zulite@example.com"}, "zulite", discardLogger())
}

func queuedMail(t *testing.T, m *mailer) []outgoingMail {
	t.Helper()
	var out []outgoingMail
	for {
		select {
		case msg := <-m.queue:
			out = append(out, msg)
		default:
			return out
		}
	}
}

var linkPattern = regexp.MustCompile(`^http://zulite\.test/join/[a-z2-7]{24}/$`)

// page is a request to the sign-up page, as a browser sends it.
func (e *testEnv) signupRequest(t *testing.T, method, path string, form url.Values) *http.Response {
	t.Helper()
	var req *http.Request
	if method == "POST" {
		req = buildRequest(t, urlencoded, method, path, form)
		req.Header.Set("Origin", "http://zulite.test")
		req.Host = "zulite.test"
	} else {
		req = buildRequest(t, urlencoded, method, path, nil)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	return rec.Result()
}

func pageText(t *testing.T, r *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

func listInvitesOf(t *testing.T, e *testEnv, a *account) []map[string]any {
	t.Helper()
	r := e.request(t, "GET", "/api/v1/invites", nil, a)
	wantAPISuccess(t, r)
	var out []map[string]any
	for _, v := range r.body["invites"].([]any) {
		out = append(out, v.(map[string]any))
	}
	return out
}

func TestInviteLink_NewcomerSignsUpWithRoleAndChannels(t *testing.T) {
	e := newTestEnv(t)
	adminQueue := e.registerQueue(t, &e.admin, url.Values{"event_types": {`["invites_changed"]`}}).str("queue_id")
	general := strconv.FormatUint(e.general.ID, 10)
	r := e.request(t, "POST", "/api/v1/invites/multiuse", url.Values{"stream_ids": {"[" + general + "]"}, "invite_as": {"600"}}, &e.admin)
	wantAPISuccess(t, r)
	link := r.str("invite_link")
	if !linkPattern.MatchString(link) {
		t.Fatalf("invite_link %q, want http://zulite.test/join/<24 base32 characters>/", link)
	}
	if evs := e.pollNow(t, &e.admin, adminQueue, -1); len(evs) != 1 || evs[0]["type"] != "invites_changed" {
		t.Errorf("admin's queue: got %v, want one invites_changed", evs)
	}
	list := listInvitesOf(t, e, &e.admin)
	if len(list) != 1 || list[0]["is_multiuse"] != true || list[0]["link_url"] != link || list[0]["invited_as"] != float64(600) || list[0]["expiry_date"] == nil {
		t.Fatalf("GET /invites: got %v", list)
	}
	path := strings.TrimPrefix(link, "http://zulite.test")
	got := e.signupRequest(t, "GET", path, nil)
	text := pageText(t, got)
	if got.StatusCode != 200 || !strings.Contains(text, `name="email"`) || !strings.Contains(text, `name="full_name"`) || !strings.Contains(text, `type="password"`) {
		t.Fatalf("GET %s: got %d %s", path, got.StatusCode, text)
	}
	if csp := got.Header.Get("Content-Security-Policy"); csp != webCSP {
		t.Errorf("page CSP %q, want the web client's", csp)
	}
	got = e.signupRequest(t, "POST", path, url.Values{"email": {"carol@example.com"}, "full_name": {"Carol"}, "password": {"carols-password"}})
	if got.StatusCode != http.StatusSeeOther || got.Header.Get("Location") != "/" {
		t.Fatalf("POST %s: got %d %s, want 303 to /", path, got.StatusCode, pageText(t, got))
	}
	var session *http.Cookie
	for _, c := range got.Cookies() {
		if c.Name == sessionCookieName {
			session = c
		}
	}
	if session == nil || !session.HttpOnly {
		t.Fatalf("no HttpOnly session cookie: %v", got.Cookies())
	}
	carol, err := e.st.userByEmail("carol@example.com")
	if err != nil || carol.Role != roleGuest || carol.FullName != "Carol" {
		t.Fatalf("carol: %+v %v, want a guest named Carol", carol, err)
	}
	if _, ws, err := e.st.sessionUser(session.Value, e.st.now()); err != nil || ws.userID != carol.ID {
		t.Errorf("the cookie's session: %+v %v, want carol's", ws, err)
	}
	if !isSubscribedTo(t, e, carol.ID, e.general.ID) || isSubscribedTo(t, e, carol.ID, e.secret.ID) {
		t.Errorf("carol's channels: want general only")
	}
	// A reusable link is reusable; a taken address gets Zulip's words.
	got = e.signupRequest(t, "POST", path, url.Values{"email": {"alice@example.com"}, "full_name": {"Not Alice"}, "password": {"whatever-1"}})
	if text := pageText(t, got); got.StatusCode != 400 || !strings.Contains(text, "alice@example.com already has an account") || !strings.Contains(text, `role="alert"`) {
		t.Errorf("a taken address: got %d %s", got.StatusCode, text)
	}
	got = e.signupRequest(t, "POST", path, url.Values{"email": {"dave@example.com"}, "full_name": {"Dave"}, "password": {"short"}})
	if text := pageText(t, got); got.StatusCode != 400 || !strings.Contains(text, "The password is too weak.") {
		t.Errorf("a short password: got %d %s", got.StatusCode, text)
	}
	if _, err := e.st.userByEmail("dave@example.com"); err == nil {
		t.Errorf("a refused sign-up made an account")
	}
	if list := listInvitesOf(t, e, &e.admin); len(list) != 1 {
		t.Errorf("after sign-ups the link is still listed: got %v", list)
	}
}

func isSubscribedTo(t *testing.T, e *testEnv, userID, channelID uint64) bool {
	t.Helper()
	subs, err := e.st.subscriptions(userID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		if s.ID == channelID {
			return true
		}
	}
	return false
}

func TestInviteLink_ExpiresRevokesAndNeverExpires(t *testing.T) {
	e := newTestEnv(t)
	start := time.Unix(1_800_000_000, 0)
	e.st.now = func() time.Time { return start }
	r := e.request(t, "POST", "/api/v1/invites/multiuse", url.Values{"invite_expires_in_minutes": {"1"}}, &e.admin)
	wantAPISuccess(t, r)
	short := strings.TrimPrefix(r.str("invite_link"), "http://zulite.test")
	r = e.request(t, "POST", "/api/v1/invites/multiuse", url.Values{"invite_expires_in_minutes": {"null"}}, &e.admin)
	wantAPISuccess(t, r)
	forever := strings.TrimPrefix(r.str("invite_link"), "http://zulite.test")
	r = e.request(t, "POST", "/api/v1/invites/multiuse", nil, &e.admin)
	wantAPISuccess(t, r)
	list := listInvitesOf(t, e, &e.admin)
	if len(list) != 3 || list[0]["expiry_date"] != float64(start.Unix()+60) || list[1]["expiry_date"] != nil || list[2]["expiry_date"] != float64(start.Unix()+14400*60) {
		t.Fatalf("expiry dates: got %v, want +60s, null, +10 days", list)
	}
	e.st.now = func() time.Time { return start.Add(61 * time.Second) }
	if list := listInvitesOf(t, e, &e.admin); len(list) != 2 {
		t.Errorf("an expired link is listed: %v", list)
	}
	got := e.signupRequest(t, "GET", short, nil)
	if text := pageText(t, got); got.StatusCode != 404 || !strings.Contains(text, "Whoops. The confirmation link has expired or been deactivated.") {
		t.Errorf("expired link: got %d %s", got.StatusCode, text)
	}
	got = e.signupRequest(t, "POST", short, url.Values{"email": {"late@example.com"}, "full_name": {"Late"}, "password": {"late-password"}})
	if got.StatusCode != 404 {
		t.Errorf("sign-up by an expired link: got %d", got.StatusCode)
	}
	if _, err := e.st.userByEmail("late@example.com"); err == nil {
		t.Errorf("an expired link made an account")
	}
	// Revoked: gone from the list, the page refuses, a second revoke is
	// Zulip's error.
	id := strconv.FormatInt(int64(list[1]["id"].(float64)), 10)
	wantAPISuccess(t, e.request(t, "DELETE", "/api/v1/invites/multiuse/"+id, nil, &e.admin))
	wantAPIError(t, e.request(t, "DELETE", "/api/v1/invites/multiuse/"+id, nil, &e.admin), 400, "BAD_REQUEST", "Invitation has already been revoked")
	if got := e.signupRequest(t, "GET", forever, nil); got.StatusCode != 404 {
		t.Errorf("revoked link: got %d, want 404", got.StatusCode)
	}
	wantAPIError(t, e.request(t, "DELETE", "/api/v1/invites/multiuse/9999", nil, &e.admin), 400, "BAD_REQUEST", "No such invitation")
	if got := e.signupRequest(t, "GET", "/join/"+strings.Repeat("a", 24)+"/", nil); got.StatusCode != 404 || !strings.Contains(pageText(t, got), "couldn't find your confirmation link") {
		t.Errorf("unknown key: got %d", got.StatusCode)
	}
}

func TestInvites_PermissionsAreZulipsDefaultsAndRefusalsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	e.server.mailer = offlineMailer()
	guestUser, guestKey := mustCreateUser(t, e.st, "guest@example.com", roleGuest, false)
	guest := account{guestUser, guestKey}
	link := url.Values{}
	for _, c := range []struct {
		name   string
		who    *account
		path   string
		params url.Values
		code   string
		msg    string
	}{
		{"members may not make links (create_multiuse_invite_group: administrators)", &e.bob, "/api/v1/invites/multiuse", link, "BAD_REQUEST", "Insufficient permission"},
		{"guests are refused first", &guest, "/api/v1/invites", url.Values{"invitee_emails": {"x@example.com"}, "stream_ids": {"[]"}}, "BAD_REQUEST", "Not allowed for guest users"},
		{"bots are refused", &e.bot, "/api/v1/invites/multiuse", link, "BAD_REQUEST", "This endpoint does not accept bot requests."},
		{"a member may not invite an administrator", &e.bob, "/api/v1/invites", url.Values{"invitee_emails": {"x@example.com"}, "stream_ids": {"[]"}, "invite_as": {"200"}}, "BAD_REQUEST", "Must be an organization administrator"},
		{"an administrator may not invite an owner", &e.admin, "/api/v1/invites/multiuse", url.Values{"invite_as": {"100"}}, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner"},
		{"invite_as is a role", &e.admin, "/api/v1/invites/multiuse", url.Values{"invite_as": {"500"}}, "BAD_REQUEST", "Invalid invite_as: Value error, Not in the list of possible values"},
		{"no address", &e.bob, "/api/v1/invites", url.Values{"invitee_emails": {""}, "stream_ids": {"[]"}}, "BAD_REQUEST", "You must specify at least one email address."},
		{"a private channel bob cannot reach", &e.bob, "/api/v1/invites", url.Values{"invitee_emails": {"x@example.com"}, "stream_ids": {"[" + strconv.FormatUint(e.secret.ID, 10) + "]"}}, "BAD_REQUEST", "Invalid channel ID " + strconv.FormatUint(e.secret.ID, 10) + ". No invites were sent."},
		{"a channel that does not exist", &e.admin, "/api/v1/invites/multiuse", url.Values{"stream_ids": {"[99999]"}}, "BAD_REQUEST", "Invalid channel ID 99999. No invites were sent."},
		{"a system group", &e.admin, "/api/v1/invites/multiuse", url.Values{"group_ids": {"[5]"}}, "BAD_REQUEST", "Insufficient permission"},
		{"a welcome text needs an administrator", &e.bob, "/api/v1/invites", url.Values{"invitee_emails": {"x@example.com"}, "stream_ids": {"[]"}, "welcome_message_custom_text": {"hi"}}, "BAD_REQUEST", "Must be an organization administrator"},
		{"stream_ids is required", &e.bob, "/api/v1/invites", url.Values{"invitee_emails": {"x@example.com"}}, "REQUEST_VARIABLE_MISSING", "Missing 'stream_ids' argument"},
		{"a member's invitation to another's invitation", &e.bob, "/api/v1/invites/9999/resend", nil, "BAD_REQUEST", "No such invitation"},
	} {
		wantAPIError(t, e.request(t, "POST", c.path, c.params, c.who), 400, c.code, c.msg)
		if list := listInvitesOf(t, e, &e.owner); len(list) != 0 {
			t.Fatalf("%s: a refused request stored %v", c.name, list)
		}
	}
	if mail := queuedMail(t, e.server.mailer); len(mail) != 0 {
		t.Errorf("refusals mailed %v", mail)
	}
	// An invalid address among good ones stores nothing; an existing
	// account is skipped with Zulip's words.
	r := e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"good@example.com, not-an-address"}, "stream_ids": {"[]"}}, &e.bob)
	wantAPIError(t, r, 400, "INVITATION_FAILED", "Some emails did not validate, so we didn't send any invitations.")
	if errs := r.body["errors"].([]any); len(errs) != 1 || errs[0].([]any)[0] != "not-an-address" || errs[0].([]any)[1] != "Invalid address." || r.body["sent_invitations"] != false {
		t.Errorf("errors: got %v", r.raw)
	}
	wantAPIError(t, e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"alice@example.com"}, "stream_ids": {"[]"}}, &e.bob), 400, "INVITATION_FAILED", "We weren't able to invite anyone.")
	if list := listInvitesOf(t, e, &e.owner); len(list) != 0 {
		t.Fatalf("refused invitations stored %v", list)
	}
	r = e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"Carol <carol@example.com>\nalice@example.com"}, "stream_ids": {"[]"}}, &e.bob)
	wantAPIError(t, r, 400, "INVITATION_FAILED", "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!")
	if r.body["sent_invitations"] != true || !strings.Contains(r.raw, `["alice@example.com","Already has an account.",false]`) {
		t.Errorf("skipped: got %s", r.raw)
	}
	if list := listInvitesOf(t, e, &e.bob); len(list) != 1 || list[0]["email"] != "carol@example.com" || list[0]["notify_referrer_on_join"] != true {
		t.Errorf("bob's invitations: got %v", list)
	}
	if mail := queuedMail(t, e.server.mailer); len(mail) != 1 || mail[0].To != "carol@example.com" {
		t.Errorf("mail: got %v, want one to carol", mail)
	}
	// Alice sees none of bob's; she may not revoke or resend it; the
	// administrators may.
	carolID := strconv.FormatInt(int64(listInvitesOf(t, e, &e.bob)[0]["id"].(float64)), 10)
	if list := listInvitesOf(t, e, &e.alice); len(list) != 0 {
		t.Errorf("alice sees bob's invitations: %v", list)
	}
	wantAPIError(t, e.request(t, "DELETE", "/api/v1/invites/"+carolID, nil, &e.alice), 400, "BAD_REQUEST", "Must be an organization administrator")
	wantAPIError(t, e.request(t, "POST", "/api/v1/invites/"+carolID+"/resend", nil, &e.alice), 400, "BAD_REQUEST", "Must be an organization administrator")
	if list := listInvitesOf(t, e, &e.admin); len(list) != 1 {
		t.Errorf("the administrator's list: %v", list)
	}
	// PATCH /realm lets members make links, and takes invitations from them.
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/realm", url.Values{"create_multiuse_invite_group": {`{"new":5}`}}, &e.admin))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites/multiuse", nil, &e.bob))
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/realm", url.Values{"can_invite_users_group": {`{"new":2}`}}, &e.admin))
	wantAPIError(t, e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"x@example.com"}, "stream_ids": {"[]"}}, &e.bob), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPISuccess(t, e.request(t, "DELETE", "/api/v1/invites/"+carolID, nil, &e.admin))
	if list := listInvitesOf(t, e, &e.bob); len(list) != 1 || list[0]["is_multiuse"] != true {
		t.Errorf("after revoking carol's: got %v", list)
	}
}

func TestInvites_EmailInvitationWithoutRelayIsRefused(t *testing.T) {
	e := newTestEnv(t)
	wantAPIError(t, e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"carol@example.com"}, "stream_ids": {"[]"}}, &e.bob), 400, "BAD_REQUEST", errNoMailRelay.msg)
	if !strings.Contains(errNoMailRelay.msg, "--smtp-host") || !strings.Contains(errNoMailRelay.msg, "invitation link") {
		t.Errorf("the refusal does not tell what to do: %q", errNoMailRelay.msg)
	}
	if list := listInvitesOf(t, e, &e.owner); len(list) != 0 {
		t.Errorf("stored %v", list)
	}
}

func TestInvites_EmailInvitationSignUpUsesItUp(t *testing.T) {
	e := newTestEnv(t)
	e.server.mailer = offlineMailer()
	start := time.Unix(1_800_000_000, 0)
	e.st.now = func() time.Time { return start }
	bobQueue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["invites_changed"]`}}).str("queue_id")
	general := strconv.FormatUint(e.general.ID, 10)
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"carol@example.com,carol@example.com"}, "stream_ids": {"[" + general + "]"}, "invite_expires_in_minutes": {"120"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"carol@example.com"}, "stream_ids": {"[]"}}, &e.admin))
	mail := queuedMail(t, e.server.mailer)
	if len(mail) != 2 {
		t.Fatalf("mail: got %v, want two", mail)
	}
	if mail[0].Subject != "bob@example.com has invited you to join zulite" ||
		!strings.Contains(mail[0].Body, "bob@example.com (bob@example.com) wants you to join them on Zulip") {
		t.Errorf("the invitation's text: %q %q", mail[0].Subject, mail[0].Body)
	}
	link := regexp.MustCompile(`<http://zulite\.test(/accounts/do_confirm/[a-z2-7]{24})>`).FindStringSubmatch(mail[0].Body)
	if link == nil {
		t.Fatalf("no activation link in %q", mail[0].Body)
	}
	if evs := e.pollNow(t, &e.bob, bobQueue, -1); len(evs) != 1 {
		t.Errorf("bob, the referrer, heard %v, want one invites_changed", evs)
	}
	// Resend: the same link, the same expiry (Zulip's do_send_user_invite_email).
	id := strconv.FormatInt(int64(listInvitesOf(t, e, &e.bob)[0]["id"].(float64)), 10)
	e.st.now = func() time.Time { return start.Add(time.Hour) }
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites/"+id+"/resend", nil, &e.bob))
	again := queuedMail(t, e.server.mailer)
	if len(again) != 1 || !strings.Contains(again[0].Body, link[1]) {
		t.Errorf("resent: got %v, want the same link", again)
	}
	if list := listInvitesOf(t, e, &e.bob); list[0]["expiry_date"] != float64(start.Unix()+7200) || list[0]["invited"] != float64(start.Unix()) {
		t.Errorf("after resend: %v, want the expiry and time unchanged", list[0])
	}
	got := e.signupRequest(t, "GET", link[1], nil)
	if text := pageText(t, got); got.StatusCode != 200 || !strings.Contains(text, `value="carol@example.com"`) || !strings.Contains(text, "readonly") {
		t.Fatalf("the page: %d %s", got.StatusCode, text)
	}
	got = e.signupRequest(t, "POST", link[1], url.Values{"email": {"mallory@example.com"}, "full_name": {"Carol"}, "password": {"carols-password"}})
	if got.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-up: got %d %s", got.StatusCode, pageText(t, got))
	}
	if _, err := e.st.userByEmail("mallory@example.com"); err == nil {
		t.Errorf("an e-mail invitation's address was changed by the form")
	}
	carol, err := e.st.userByEmail("carol@example.com")
	if err != nil || carol.Role != roleMember || !isSubscribedTo(t, e, carol.ID, e.general.ID) {
		t.Fatalf("carol: %+v %v", carol, err)
	}
	if got := e.signupRequest(t, "GET", link[1], nil); got.StatusCode != 404 {
		t.Errorf("a used invitation: got %d, want 404", got.StatusCode)
	}
	if list := listInvitesOf(t, e, &e.admin); len(list) != 0 {
		t.Errorf("after carol joined, pending: %v (the admin's to her is revoked)", list)
	}
	// Expired: two hours later the invitation is neither listed nor usable.
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"dave@example.com"}, "stream_ids": {"[]"}, "invite_expires_in_minutes": {"60"}}, &e.bob))
	e.st.now = func() time.Time { return start.Add(3 * time.Hour) }
	if list := listInvitesOf(t, e, &e.bob); len(list) != 0 {
		t.Errorf("an expired invitation is listed: %v", list)
	}
}

func TestInviteExpiry_SaturatesAndGoesNegative(t *testing.T) {
	huge, negative := int64(1<<62), int64(-10)
	if got := inviteExpiry(100, &huge); got <= 100 {
		t.Errorf("huge: got %d", got)
	}
	if got := inviteExpiry(1000, &negative); got >= 1000 || got == 0 {
		t.Errorf("negative: got %d, want already past, not never", got)
	}
	if got := inviteExpiry(1000, nil); got != 0 {
		t.Errorf("null: got %d, want 0 (never)", got)
	}
}

func TestInviteeEmails_SplitAsZulipSplits(t *testing.T) {
	got := inviteeEmails("Carol <carol@example.com>, dave@example.com\ndave@example.com,")
	want := []string{"carol@example.com", "dave@example.com", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestInvites_BoundedAndClosedOnesMakeRoom(t *testing.T) {
	e := newTestEnv(t)
	start := time.Unix(1_800_000_000, 0)
	e.st.now = func() time.Time { return start }
	emails := make([]string, maxInviteRecords)
	for i := range emails {
		emails[i] = "n" + strconv.Itoa(i) + "@example.com"
	}
	hour := int64(60)
	made, _, err := e.st.createInvites(inviteRequest{Caller: e.admin.user, Emails: emails, As: roleMember, Minutes: &hour})
	if err != nil || len(made) != maxInviteRecords {
		t.Fatalf("%d invitations: %d %v", maxInviteRecords, len(made), err)
	}
	wantAPIError(t, e.request(t, "POST", "/api/v1/invites/multiuse", nil, &e.admin), 400, "BAD_REQUEST", errTooManyInvites.msg)
	// Expired an hour after they were made, they are dropped 30 days on.
	e.st.now = func() time.Time { return start.Add(time.Hour + deadInviteRetention*time.Second + time.Second) }
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites/multiuse", nil, &e.admin))
	if _, _, err := e.st.inviteByKey(made[0].Key); err != errNoSuchInvite {
		t.Errorf("a dropped invitation's key: got %v, want errNoSuchInvite", err)
	}
}

func TestInvites_DeactivatingTheReferrerEndsTheirInvitations(t *testing.T) {
	e := newTestEnv(t)
	e.server.mailer = offlineMailer()
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"carol@example.com"}, "stream_ids": {"[]"}}, &e.bob))
	link := e.request(t, "POST", "/api/v1/invites/multiuse", nil, &e.admin)
	wantAPISuccess(t, link)
	adminQueue := e.registerQueue(t, &e.admin, url.Values{"event_types": {`["invites_changed"]`}}).str("queue_id")
	if err := e.st.setActive(e.bob.Email, false); err != nil {
		t.Fatal(err)
	}
	if list := listInvitesOf(t, e, &e.admin); len(list) != 1 || list[0]["is_multiuse"] != true {
		t.Errorf("after bob's deactivation: got %v, want the administrator's link only", list)
	}
	if evs := e.pollNow(t, &e.admin, adminQueue, -1); len(evs) != 1 || evs[0]["type"] != "invites_changed" {
		t.Errorf("the administrator heard %v, want invites_changed", evs)
	}
	mail := queuedMail(t, e.server.mailer)
	key := regexp.MustCompile(`do_confirm/([a-z2-7]{24})`).FindStringSubmatch(mail[0].Body)
	if got := e.signupRequest(t, "GET", "/accounts/do_confirm/"+key[1], nil); got.StatusCode != 404 {
		t.Errorf("bob's invitation after his deactivation: got %d, want 404", got.StatusCode)
	}
}
