package main

// The sign-up page an invitation's link opens: /join/KEY/ for a
// reusable link, /accounts/do_confirm/KEY for an e-mail invitation
// (Zulip's confirmation URLs). zulite renders it itself, a plain form
// posted back to the same address, no script, under the web client's
// Content-Security-Policy and its style sheet. The newcomer gives a
// name and a password (and, for a reusable link, an e-mail address);
// the account is made with the invited role and channels, and the page
// logs them in to the web client. Zulip would first mail a reusable
// link's newcomer a confirmation of their address; zulite, which may
// have no relay, takes the address as given, as the invitation's
// creator chose to share the link.

import (
	"errors"
	"html"
	"net/http"
	"strings"
	"unicode/utf8"
)

// signupPage serves GET and POST /join/{key}/ and
// /accounts/do_confirm/{key}.
func (s *server) signupPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		h := w.Header()
		setWebHeaders(h)
		// The form's post must carry its Origin (sameOrigin): under
		// no-referrer a browser sends "Origin: null" for it.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		iv, referrer, err := s.store.inviteByKey(r.PathValue("key"))
		switch {
		case errors.Is(err, errNoSuchInvite):
			s.linkProblem(w, false)
			return
		case err != nil:
			s.log.Error("sign-up page", "err", err)
			writePage(w, http.StatusInternalServerError, "Internal server error", "<h1>Internal server error</h1>")
			return
		case !iv.live(s.store.now().Unix()):
			s.linkProblem(w, true)
			return
		}
		form := signupForm{invite: iv, referrer: referrer}
		if iv.Multiuse {
			form.email = ""
		} else {
			form.email = iv.Email
		}
		if r.Method == http.MethodPost {
			if s.acceptSignup(w, r, &form) {
				return
			}
		}
		status := http.StatusOK
		if form.problem != "" {
			status = http.StatusBadRequest
		}
		writePage(w, status, "Join "+s.realmName, s.signupBody(form))
	})
}

// signupForm is the page's form and what was wrong with its last post.
type signupForm struct {
	invite          invite
	referrer        user
	email, fullName string
	problem         string
}

// acceptSignup handles a posted form: the account, its session and a
// redirect to the web client (true), or the form again with what is
// wrong (false). Texts are Zulip's registration form's.
func (s *server) acceptSignup(w http.ResponseWriter, r *http.Request, form *signupForm) bool {
	if !sameOrigin(r) {
		writePage(w, http.StatusForbidden, "Forbidden", "<h1>CSRF error: Origin checking failed.</h1>")
		return true
	}
	p, err := readParams(w, r, s.maxBody)
	if err != nil {
		form.problem = asAPIError(err).msg
		return false
	}
	if form.invite.Multiuse {
		form.email, _ = p.lookup("email")
		form.email = strings.TrimSpace(form.email)
	}
	form.fullName, _ = p.lookup("full_name")
	password, _ := p.lookup("password")
	name, err := checkFullName(form.fullName)
	switch {
	case form.invite.Multiuse && checkEmail(form.email) != nil:
		form.problem = "Enter a valid email address."
		return false
	case err != nil:
		form.problem = asAPIError(err).msg
		return false
	case utf8.RuneCountInString(password) < minPasswordLength:
		form.problem = errPasswordTooWeak.msg
		return false
	}
	hash, err := s.passwords.hash(r.Context(), password)
	if errors.Is(err, errHasherBusy) {
		form.problem = "Please try again in a moment."
		return false
	}
	if err != nil {
		s.log.Error("sign-up", "err", err)
		form.problem = "Internal server error"
		return false
	}
	u, err := s.store.acceptInvite(signup{Key: form.invite.Key, Email: form.email, FullName: name, Hash: hash})
	switch {
	case errors.Is(err, errEmailTaken):
		form.problem = form.email + " already has an account"
		return false
	case errors.Is(err, errUserDeactivated):
		form.problem = "Account has been deactivated."
		return false
	case errorsIsInvite(err):
		s.linkProblem(w, true)
		return true
	case err != nil:
		s.log.Error("sign-up", "err", err)
		form.problem = "Internal server error"
		return false
	}
	id, expires := newSessionToken(), s.store.now().Add(sessionLifetime)
	if err := s.store.startSession(id, webSession{userID: u.ID, expires: expires.Unix(), csrf: newSessionToken()}); err != nil {
		s.log.Error("sign-up session", "err", err)
	} else {
		http.SetCookie(w, s.sessionCookie(r, id, expires))
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return true
}

// signupBody is the form: the e-mail address fixed for an e-mail
// invitation, asked for with a reusable link.
func (s *server) signupBody(f signupForm) string {
	esc := html.EscapeString
	var b strings.Builder
	b.WriteString(`<form class="card" method="post" aria-labelledby="join-title"><h1 id="join-title">Join ` + esc(s.realmName) + `</h1>`)
	if f.referrer.FullName != "" {
		b.WriteString(`<p>` + esc(f.referrer.FullName) + ` has invited you to join ` + esc(s.realmName) + `.</p>`)
	}
	if f.invite.Multiuse {
		b.WriteString(`<label>E-mail <input name="email" type="email" autocomplete="email" required value="` + esc(f.email) + `"></label>`)
	} else {
		b.WriteString(`<label>E-mail <input name="email" type="email" readonly value="` + esc(f.email) + `"></label>`)
	}
	b.WriteString(`<label>Full name <input name="full_name" autocomplete="name" required maxlength="100" value="` + esc(f.fullName) + `"></label>`)
	b.WriteString(`<label>Password <input name="password" type="password" autocomplete="new-password" required minlength="6"></label>`)
	if f.problem != "" {
		b.WriteString(`<p class="error" role="alert">` + esc(f.problem) + `</p>`)
	}
	b.WriteString(`<button type="submit">Sign up</button></form>`)
	return b.String()
}

// linkProblem is Zulip's confirmation/link_expired.html (used, revoked
// or expired) or link_does_not_exist.html, with a 404.
func (s *server) linkProblem(w http.ResponseWriter, expired bool) {
	if expired {
		writePage(w, http.StatusNotFound, "Confirmation link expired or deactivated",
			`<div class="card"><h1>Whoops. The confirmation link has expired or been deactivated.</h1><p>Please contact your organization administrator for a new link.</p></div>`)
		return
	}
	writePage(w, http.StatusNotFound, "Confirmation link does not exist",
		`<div class="card"><h1>Whoops. We couldn't find your confirmation link in the system.</h1><p>Please contact your organization administrator for a new link.</p></div>`)
}

// writePage writes one of zulite's server-made pages around body.
func writePage(w http.ResponseWriter, status int, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(`<!doctype html><html lang="en"><head><meta charset="utf-8">` +
		`<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark">` +
		`<title>` + html.EscapeString(title) + ` | zulite</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/web/style.css">` +
		`</head><body><main class="login">` + body + `</main></body></html>`))
}
