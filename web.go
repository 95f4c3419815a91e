package main

// The web client: hand-written assets in web/, embedded in the binary and
// served at /, and the login session the page runs on. As in Zulip, the
// page never holds an API key: a login form sets an HttpOnly session
// cookie, and the page calls the /json/... twins of the /api/v1/... routes
// with that cookie and a CSRF token in the X-CSRFToken header.

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed web
var webFiles embed.FS

// webAsset is one embedded file, with its gzip form made once.
type webAsset struct {
	name        string
	body, gz    []byte
	etag        string
	contentType string
}

// webAssets reads web/ once: the files are fixed for the binary's life.
var webAssets = sync.OnceValue(func() map[string]*webAsset {
	assets := map[string]*webAsset{}
	fs.WalkDir(webFiles, "web", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := webFiles.ReadFile(p)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(body)
		zw.Close()
		sum := sha256.Sum256(body)
		name := strings.TrimPrefix(p, "web/")
		ctype := mime.TypeByExtension(path.Ext(name))
		if strings.HasSuffix(name, ".js") {
			ctype = "text/javascript; charset=utf-8"
		}
		assets[name] = &webAsset{name: name, body: body, gz: gz.Bytes(), etag: `"` + hex.EncodeToString(sum[:8]) + `"`, contentType: ctype}
		return nil
	})
	return assets
})

// webCSP lets the page run its own scripts and styles only: nothing
// inline, nothing from elsewhere, no frames around it, and HTML set only
// through the page's one Trusted Types policy (the server's rendering of
// a message).
const webCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types zulite"

// setWebHeaders marks a web answer: the policy above, no sniffing, no
// framing (for browsers before frame-ancestors), no referrer.
func setWebHeaders(h http.Header) {
	h.Set("Content-Security-Policy", webCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// webFile serves GET / (index.html) and GET /web/{file}: revalidated by
// ETag on every load (no-cache), gzipped when the browser takes it.
func (s *server) webFile(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		file := name
		if file == "" {
			file = r.PathValue("file")
		}
		s.sendWebAsset(w, r, webAssets()[file])
	})
}

func (s *server) sendWebAsset(w http.ResponseWriter, r *http.Request, a *webAsset) {
	if a == nil {
		writeError(w, s.log, r, errNotFound)
		return
	}
	h := w.Header()
	setWebHeaders(h)
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	h.Set("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if enc, q, _ := strings.Cut(strings.TrimSpace(part), ";"); strings.EqualFold(enc, "gzip") && !strings.Contains(strings.ReplaceAll(q, " ", ""), "q=0") {
			return true
		}
	}
	return false
}

// Sessions last two weeks from login, Zulip's SESSION_COOKIE_AGE.
const (
	sessionCookieName = "zulite_session"
	sessionLifetime   = 14 * 24 * time.Hour
	csrfHeader        = "X-CSRFToken"
)

// newSessionToken is 32 random bytes, URL-safe: a session id or a CSRF
// token.
func newSessionToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// webSessionAnswer is what the page learns of its session: who it is and
// the CSRF token to send; never an API key.
type webSessionAnswer struct {
	UserID    uint64 `json:"user_id"`
	Email     string `json:"email"`
	FullName  string `json:"full_name"`
	CSRFToken string `json:"csrf_token"`
}

// webLogin serves POST /accounts/login: the page's login form. A success
// sets the session cookie; a failure counts as fetch_api_key's do.
func (s *server) webLogin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		setWebHeaders(w.Header())
		if !sameOrigin(r) {
			writeError(w, s.log, r, errCrossOrigin)
			return
		}
		p, err := readParams(w, r, s.maxBody)
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		username, err := p.requiredString("username")
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		password, err := p.requiredString("password")
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		u, err := s.passwordLogin(r, username, password)
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		id, expires := newSessionToken(), s.store.now().Add(sessionLifetime)
		ws := webSession{userID: u.ID, expires: expires.Unix(), csrf: newSessionToken()}
		if err := s.store.startSession(id, ws); err != nil {
			writeError(w, s.log, r, err)
			return
		}
		http.SetCookie(w, s.sessionCookie(r, id, expires))
		if err := writeSuccess(w, webSessionAnswer{u.ID, u.Email, u.FullName, ws.csrf}, p.ignored()); err != nil {
			writeError(w, s.log, r, internalError(err))
		}
	})
}

// webSessionInfo serves GET /accounts/session: the session behind the
// cookie, so that a reloaded page learns its CSRF token (a page of
// another site cannot read the answer).
func (s *server) webSessionInfo() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		setWebHeaders(w.Header())
		w.Header().Set("Cache-Control", "no-store")
		u, ws, err := s.cookieSession(r)
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		writeSuccess(w, webSessionAnswer{u.ID, u.Email, u.FullName, ws.csrf}, nil)
	})
}

// webLogout serves POST /accounts/logout: the session ends on the server
// and its cookie is cleared.
func (s *server) webLogout() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		setWebHeaders(w.Header())
		if _, err := s.sessionAuthenticate(r, true); err != nil {
			writeError(w, s.log, r, err)
			return
		}
		c, _ := r.Cookie(sessionCookieName)
		if err := s.store.endSession(c.Value); err != nil {
			writeError(w, s.log, r, err)
			return
		}
		gone := s.sessionCookie(r, "", time.Unix(0, 0))
		gone.MaxAge = -1
		http.SetCookie(w, gone)
		writeSuccess(w, nil, nil)
	})
}

// sessionCookie is HttpOnly (no script reads it), SameSite=Strict (no
// other site's request carries it) and Secure when the page came over
// TLS or the server's URL is https.
func (s *server) sessionCookie(r *http.Request, id string, expires time.Time) *http.Cookie {
	return &http.Cookie{Name: sessionCookieName, Value: id, Path: "/", Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || strings.HasPrefix(s.baseURL, "https://")}
}

// sameOrigin refuses a form posted from another site (login CSRF): the
// browser says where a request comes from in Sec-Fetch-Site and Origin;
// a client that says neither is not a browser.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// cookieSession answers the account and session of the request's cookie.
func (s *server) cookieSession(r *http.Request) (user, webSession, error) {
	c, err := r.Cookie(sessionCookieName)
	if err != nil || c.Value == "" {
		return user{}, webSession{}, errNotLoggedIn
	}
	u, ws, err := s.store.sessionUser(c.Value, s.store.now())
	if err != nil {
		return user{}, webSession{}, err
	}
	if !u.Active {
		return user{}, webSession{}, errDeactivated
	}
	return u, ws, nil
}

// sessionAuthenticate authenticates a request of the page: its session
// cookie and, where the request could change something (every /json
// route, logout), the session's CSRF token in X-CSRFToken.
func (s *server) sessionAuthenticate(r *http.Request, needCSRF bool) (user, error) {
	u, ws, err := s.cookieSession(r)
	if err != nil {
		return user{}, err
	}
	if needCSRF && subtle.ConstantTimeCompare([]byte(r.Header.Get(csrfHeader)), []byte(ws.csrf)) != 1 {
		return user{}, errCSRF
	}
	return u, nil
}

// wwwAuthenticate is a 401's challenge: Basic for API clients, but
// Session, as Zulip answers its /json routes, for the page's requests,
// so that the browser does not open its own login dialog.
func wwwAuthenticate(r *http.Request) string {
	p := r.URL.Path
	if strings.HasPrefix(p, "/json/") || strings.HasPrefix(p, "/accounts/") || isSessionPath(r) && hasSessionCookie(r) {
		return `Session realm="zulip"`
	}
	return `Basic realm="zulip"`
}

func hasSessionCookie(r *http.Request) bool {
	_, err := r.Cookie(sessionCookieName)
	return err == nil
}

// isSessionPath tells the paths a session may read without a CSRF token
// (an <img> sends none): files, and only when no Authorization is given.
func isSessionPath(r *http.Request) bool {
	p := r.URL.Path
	return r.Header.Get("Authorization") == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(strings.HasPrefix(p, "/user_uploads/") || strings.HasPrefix(p, "/user_avatars/"))
}

// jsonTwin is the page's twin of an API route: /api/v1/x becomes /json/x,
// but for fetch_api_key (the page never holds a key); "" when none.
func jsonTwin(pattern string) string {
	method, p, _ := strings.Cut(pattern, " ")
	rest, ok := strings.CutPrefix(p, "/api/v1/")
	if !ok || rest == "fetch_api_key" {
		return ""
	}
	return method + " /json/" + rest
}
