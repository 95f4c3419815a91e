package main

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html"
	"log/slog"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// zulite answers as this Zulip release: the newest feature level whose
// documented behaviour matches zulite's on every route it serves (see the
// README for why 278).
const (
	zulipVersion      = "9.2"
	zulipFeatureLevel = 278
)

// server is the HTTP surface. Handlers read parameters, validate, call
// one store method and answer; they never touch bbolt.
type server struct {
	store     *store
	log       *slog.Logger
	baseURL   string // --url, without a trailing slash
	realmName string
	maxBody   int64
	passwords *passwordHasher
	logins    *loginLimiter
	events    *eventHub
	limits    *rateLimiter // nil: no rate limits
	patterns  []string     // every route, as routes registers them
	metrics   *metrics
	// requestIDs and requestLog are the request lines' ids and writer
	// (nil writer: none, as in tests).
	requestIDs *requestIDs
	requestLog *requestLog
}

// routeList is every route's pattern, "METHOD /path", as the router
// registered them (tests walk it, so that no route is forgotten).
func (s *server) routeList() []string {
	if s.patterns == nil {
		s.routes()
	}
	return slices.Clone(s.patterns)
}

// newServer wires a server over an open store.
func newServer(st *store, log *slog.Logger, baseURL, realmName string) *server {
	s := &server{store: st, log: log, baseURL: baseURL, realmName: realmName, maxBody: defaultMaxBody,
		passwords: newPasswordHasher(), logins: newLoginLimiter(), events: newEventHub(), metrics: newMetrics(), requestIDs: newRequestIDs()}
	st.hooks.Store(&storeHooks{changes: s.publishChange, listening: s.events.listening, commits: s.metrics.observeCommit})
	return s
}

// routes is the whole API surface, one line a route.
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	allowed := map[string][]string{} // path → methods, for 405 answers
	s.patterns = nil
	handle := func(pattern string, h http.Handler) {
		s.patterns = append(s.patterns, pattern)
		method, p, _ := strings.Cut(pattern, " ")
		allowed[p] = append(allowed[p], method)
		mux.Handle(pattern, h)
	}

	handle("GET /health", s.public(s.health))
	handle("GET /metrics", s.metricsPage(true))
	handle("GET /api/v1/server_settings", s.public(s.serverSettings))
	handle("POST /api/v1/fetch_api_key", s.public(s.fetchAPIKey))
	handle("POST /api/v1/register", s.api(s.register))
	handle("GET /api/v1/events", s.api(s.getEvents))
	handle("DELETE /api/v1/events", s.api(s.deleteQueue))
	handle("GET /api/v1/users", s.api(s.listUsers))
	handle("POST /api/v1/users", s.api(s.createUser, adminsOnly))
	handle("GET /api/v1/users/me", s.api(s.ownUser))
	handle("POST /api/v1/users/me/apns_device_token", s.api(s.addAPNsToken, humansOnly))
	handle("DELETE /api/v1/users/me/apns_device_token", s.api(s.removeAPNsToken, humansOnly))
	handle("POST /api/v1/users/me/android_gcm_reg_id", s.api(s.addFCMToken, humansOnly))
	handle("DELETE /api/v1/users/me/android_gcm_reg_id", s.api(s.removeFCMToken, humansOnly))
	handle("GET /api/v1/users/me/subscriptions", s.api(s.listSubscriptions))
	handle("POST /api/v1/users/me/subscriptions", s.api(s.subscribe))
	handle("DELETE /api/v1/users/me/subscriptions", s.api(s.unsubscribe))
	handle("GET /api/v1/streams", s.api(s.listChannels))
	handle("GET /api/v1/get_stream_id", s.api(s.channelID))
	handle("POST /api/v1/messages", s.api(s.sendMessage))
	handle("GET /api/v1/messages", s.api(s.getMessages))
	handle("POST /api/v1/messages/flags", s.api(s.updateFlags))
	handle("POST /api/v1/messages/flags/narrow", s.api(s.updateFlagsForNarrow))
	handle("POST /api/v1/mark_stream_as_read", s.api(s.markStreamAsRead))
	handle("POST /api/v1/mark_topic_as_read", s.api(s.markTopicAsRead))
	handle("POST /api/v1/mark_all_as_read", s.api(s.markAllAsRead))

	for p, methods := range allowed {
		mux.Handle(p, methodNotAllowed(methods))
	}
	mux.Handle("/", s.notFound())
	return s.withRequestLog(withCleanPath(mux))
}

// withCleanPath serves //api/v1/x as /api/v1/x instead of letting the mux
// redirect it: a redirected POST hangs zulip-js.
func withCleanPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; !isCleanPath(p) {
			clean := path.Clean("/" + p)
			r2 := *r
			u := *r.URL
			u.Path, u.RawPath = clean, ""
			r2.URL = &u
			r = &r2
		}
		next.ServeHTTP(w, r)
	})
}

// isCleanPath is path.Clean's fixed point, checked without allocating.
func isCleanPath(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.Contains(p, "//") && !strings.Contains(p, "/./") &&
		!strings.Contains(p, "/../") && !strings.HasSuffix(p, "/.") && !strings.HasSuffix(p, "/..") &&
		(p == "/" || !strings.HasSuffix(p, "/"))
}

// methodNotAllowed answers a known path asked with the wrong method,
// before any authentication.
func methodNotAllowed(methods []string) http.Handler {
	methods = slices.Sorted(slices.Values(methods))
	e := &apiError{
		status: http.StatusMethodNotAllowed,
		msg:    "Method Not Allowed",
		extra:  []field{{"allowed_methods", methods}},
	}
	allow := strings.Join(methods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		w.Header().Set("Allow", allow)
		writeError(w, nil, r, e)
	})
}

func (s *server) notFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		writeError(w, s.log, r, errNotFound)
	})
}

// apiRequest is what a handler gets: the caller and the parameters.
type apiRequest struct {
	*http.Request
	user   user
	params *params
}

// apiHandler returns the data of a success envelope, or an error.
type apiHandler func(r *apiRequest) (any, error)

// named records, for the request's log line, the route pattern the
// router matched.
func named(w http.ResponseWriter, r *http.Request) *requestInfo {
	info := infoOf(w)
	if info != nil {
		info.route = r.Pattern
	}
	return info
}

// health serves GET /health without authentication: success when the
// database answers.
func (s *server) health(r *apiRequest) (any, error) {
	r.params.useAll()
	return nil, s.store.ping()
}

// metricsPage serves GET /metrics in Prometheus's text format. On the API
// listener it is for administrators (authenticated); on its own listener
// (--metrics-addr) it is open, as scrapers expect.
func (s *server) metricsPage(authenticated bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		if authenticated {
			if _, err := s.admit(w, r, adminsOnly); err != nil {
				writeError(w, s.log, r, err)
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		s.metrics.write(w, s.store.figures())
	})
}

// roleCheck decides from the caller alone whether a route is open to them.
type roleCheck func(u user) error

// adminsOnly keeps a route to organisation owners and administrators.
func adminsOnly(u user) error {
	if !u.isAdmin() {
		return &apiError{status: http.StatusBadRequest, code: "UNAUTHORIZED_PRINCIPAL", msg: "Must be an organization administrator"}
	}
	return nil
}

// humansOnly refuses bots, as Zulip's push-token routes do.
func humansOnly(u user) error {
	if u.Bot {
		return errBotRequest
	}
	return nil
}

// api serves an authenticated route in SPEC §3's order: authentication,
// role checks, then parameters and the handler; the answer is the Zulip
// envelope either way.
func (s *server) api(h apiHandler, checks ...roleCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.admit(w, r, checks...)
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		s.serve(w, r, u, h)
	})
}

// admit is SPEC §3's order for an authenticated request after the
// method: the client address's failed-authentication throttle,
// authentication, the account's rate limit, then the role checks.
func (s *server) admit(w http.ResponseWriter, r *http.Request, checks ...roleCheck) (user, error) {
	info := named(w, r)
	now := time.Now()
	addr := clientAddress(r)
	if err := s.limits.addressBlocked(addr, now); err != nil {
		return user{}, err
	}
	u, err := s.authenticate(r)
	if isWrongCredential(err) {
		s.limits.failedAuthentication(addr, now)
	}
	if err != nil {
		return user{}, err
	}
	if info != nil {
		info.userID = u.ID
	}
	if err := s.limits.allowAccount(w, u.ID, now); err != nil {
		return user{}, err
	}
	for _, check := range checks {
		if err := check(u); err != nil {
			return user{}, err
		}
	}
	return u, nil
}

// isWrongCredential tells the failures that count against a client
// address: credentials presented and wrong. A request without any, or a
// right key of a deactivated account, is not a guess.
func isWrongCredential(err error) bool {
	return err == errInvalidAPIKey || err == errMalformedAPIKey || err == errBadBasicHeader || err == errLoginFailed
}

// public serves a route without authentication.
func (s *server) public(h apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		s.serve(w, r, user{}, h)
	})
}

func (s *server) serve(w http.ResponseWriter, r *http.Request, u user, h apiHandler) {
	p, err := readParams(w, r, s.maxBody)
	if err != nil {
		writeError(w, s.log, r, err)
		return
	}
	data, err := h(&apiRequest{Request: r, user: u, params: p})
	if err != nil {
		writeError(w, s.log, r, err)
		return
	}
	if err := writeSuccess(w, data, p.ignored()); err != nil {
		writeError(w, s.log, r, internalError(err))
	}
}

// storeErrors maps the store's sentinels to what clients are told, in
// one place. Errors that name a channel are built in channelError.
var storeErrors = map[error]*apiError{
	errTokenNotFound:     badRequest("Token does not exist"),
	errInvalidMessageIDs: errInvalidMessages,
	errNoSuchUser:        badRequest("No such user"),
	errEmailTaken:        badRequest("Email is already in use."),
}

// ---- server settings and the caller ----

type serverSettings struct {
	AuthenticationMethods         map[string]bool `json:"authentication_methods"`
	ExternalAuthenticationMethods []struct{}      `json:"external_authentication_methods"`
	ZulipFeatureLevel             int             `json:"zulip_feature_level"`
	ZulipVersion                  string          `json:"zulip_version"`
	ZulipMergeBase                string          `json:"zulip_merge_base"`
	PushNotificationsEnabled      bool            `json:"push_notifications_enabled"`
	IsIncompatible                bool            `json:"is_incompatible"`
	EmailAuthEnabled              bool            `json:"email_auth_enabled"`
	RequireEmailFormatUsernames   bool            `json:"require_email_format_usernames"`
	RealmURI                      string          `json:"realm_uri"`
	RealmURL                      string          `json:"realm_url"`
	RealmName                     string          `json:"realm_name"`
	RealmIcon                     string          `json:"realm_icon"`
	RealmDescription              string          `json:"realm_description"`
	RealmWebPublicAccessEnabled   bool            `json:"realm_web_public_access_enabled"`
}

// serverSettings serves GET /api/v1/server_settings: what a client needs
// before it logs in, with Zulip's fields and no others (so it never
// reports ignored parameters either). Password login is the one method.
func (s *server) serverSettings(r *apiRequest) (any, error) {
	r.params.useAll()
	methods := map[string]bool{}
	for _, m := range []string{"password", "dev", "email", "ldap", "remoteuser", "github", "azuread", "gitlab", "apple", "google", "saml", "openid connect"} {
		methods[m] = m == "password"
	}
	return serverSettings{
		AuthenticationMethods:         methods,
		ExternalAuthenticationMethods: []struct{}{},
		ZulipFeatureLevel:             zulipFeatureLevel,
		ZulipVersion:                  zulipVersion,
		ZulipMergeBase:                zulipVersion,
		EmailAuthEnabled:              true,
		RequireEmailFormatUsernames:   true,
		RealmURI:                      s.baseURL,
		RealmURL:                      s.baseURL,
		RealmName:                     s.realmName,
		RealmIcon:                     s.baseURL + "/static/images/logo/zulip-icon-128x128.png",
	}, nil
}

// userObject is Zulip's user object, as GET /users lists it.
type userObject struct {
	UserID         uint64          `json:"user_id"`
	Email          string          `json:"email"`
	DeliveryEmail  string          `json:"delivery_email"`
	FullName       string          `json:"full_name"`
	IsAdmin        bool            `json:"is_admin"`
	IsOwner        bool            `json:"is_owner"`
	IsGuest        bool            `json:"is_guest"`
	IsBillingAdmin bool            `json:"is_billing_admin"`
	IsBot          bool            `json:"is_bot"`
	BotType        *int            `json:"bot_type,omitempty"`
	BotOwnerID     *uint64         `json:"bot_owner_id,omitempty"`
	IsActive       bool            `json:"is_active"`
	Role           int             `json:"role"`
	DateJoined     string          `json:"date_joined"`
	Timezone       string          `json:"timezone"`
	AvatarURL      string          `json:"avatar_url"`
	AvatarVersion  int             `json:"avatar_version"`
	ProfileData    *map[string]any `json:"profile_data,omitempty"`
}

func newUserObject(u user) userObject {
	o := userObject{
		UserID:        u.ID,
		Email:         u.Email,
		DeliveryEmail: u.Email,
		FullName:      u.FullName,
		IsAdmin:       u.isAdmin(),
		IsOwner:       u.Role == roleOwner,
		IsGuest:       u.Role == roleGuest,
		IsBot:         u.Bot,
		IsActive:      u.Active,
		Role:          u.Role,
		DateJoined:    time.Unix(u.Joined, 0).UTC().Format("2006-01-02T15:04:05+00:00"),
		AvatarURL:     gravatarURL(u.Email),
		AvatarVersion: 1,
	}
	if u.Bot {
		genericBot := 1
		o.BotType = &genericBot
	} else {
		o.ProfileData = &map[string]any{}
	}
	return o
}

// ownUser serves GET /api/v1/users/me.
func (s *server) ownUser(r *apiRequest) (any, error) {
	maxID, err := s.store.maxMessageID()
	if err != nil {
		return nil, err
	}
	me := struct {
		userObject
		MaxMessageID int64 `json:"max_message_id"`
	}{newUserObject(r.user), -1}
	if maxID > 0 {
		me.MaxMessageID = int64(maxID)
	}
	return me, nil
}

// listUsers serves GET /api/v1/users: every account. profile_data is
// there only when include_custom_profile_fields asks for it, as in Zulip.
func (s *server) listUsers(r *apiRequest) (any, error) {
	if _, err := r.params.optionalBool("client_gravatar", true); err != nil {
		return nil, err
	}
	withProfiles, err := r.params.optionalBool("include_custom_profile_fields", false)
	if err != nil {
		return nil, err
	}
	users, err := s.store.users()
	if err != nil {
		return nil, err
	}
	members := make([]userObject, 0, len(users))
	for _, u := range users {
		o := newUserObject(u)
		if !withProfiles {
			o.ProfileData = nil
		}
		members = append(members, o)
	}
	return struct {
		Members []userObject `json:"members"`
	}{members}, nil
}

// createUser serves POST /api/v1/users (administrators only).
func (s *server) createUser(r *apiRequest) (any, error) {
	email, err := r.params.requiredString("email")
	if err != nil {
		return nil, err
	}
	password, err := r.params.requiredString("password")
	if err != nil {
		return nil, err
	}
	fullName, err := r.params.requiredString("full_name")
	if err != nil {
		return nil, err
	}
	fullName = strings.TrimSpace(fullName)
	switch {
	case checkEmail(email) != nil:
		return nil, badRequest("Bad name or username")
	case fullName == "":
		return nil, badRequest("Name too short!")
	case strings.ContainsFunc(fullName, isUnsafeChar):
		return nil, badRequest("Invalid characters in name!")
	case utf8.RuneCountInString(fullName) > 100:
		return nil, badRequest("Name too long!")
	case utf8.RuneCountInString(password) < minPasswordLength:
		return nil, badRequest("The password is too weak.")
	}
	hash, err := s.passwords.hash(r.Context(), password)
	if errors.Is(err, errHasherBusy) {
		return nil, rateLimited(time.Second)
	}
	if err != nil {
		return nil, err
	}
	u, _, err := s.store.createAccount(email, fullName, roleMember, false, hash)
	if errors.Is(err, errEmailTaken) {
		return nil, badRequest("Email '" + email + "' already in use")
	}
	if err != nil {
		return nil, err
	}
	return struct {
		UserID uint64 `json:"user_id"`
	}{u.ID}, nil
}

// fetchAPIKey serves POST /api/v1/fetch_api_key: a password login. Keys
// are stored only hashed, so each login mints a new key for its client;
// the account's other keys keep working.
func (s *server) fetchAPIKey(r *apiRequest) (any, error) {
	username, err := r.params.requiredString("username")
	if err != nil {
		return nil, err
	}
	password, err := r.params.requiredString("password")
	if err != nil {
		return nil, err
	}
	addr := clientAddress(r.Request)
	if err := s.limits.addressBlocked(addr, time.Now()); err != nil {
		return nil, err
	}
	if wait := s.logins.reserve(username, time.Now()); wait > 0 {
		return nil, rateLimited(wait)
	}
	u, stored, err := s.store.credentials(username)
	if err != nil && !errors.Is(err, errNoSuchUser) {
		s.logins.finish(username, false, time.Now())
		return nil, err
	}
	if u.Bot {
		stored = "" // bots do not log in with a password
	}
	ok, err := s.passwords.verify(r.Context(), stored, password) // one hash, known account or not
	s.logins.finish(username, err == nil && !ok, time.Now())
	switch {
	case errors.Is(err, errHasherBusy):
		return nil, rateLimited(time.Second)
	case err != nil:
		return nil, err
	case !ok:
		s.limits.failedAuthentication(addr, time.Now())
		return nil, errLoginFailed
	}
	if !u.Active {
		return nil, errLoginDeactivated
	}
	key, err := s.store.mintKey(u)
	if err != nil {
		return nil, err
	}
	return struct {
		APIKey string `json:"api_key"`
		Email  string `json:"email"`
		UserID uint64 `json:"user_id"`
	}{key, u.Email, u.ID}, nil
}

var (
	errLoginFailed      = &apiError{status: http.StatusUnauthorized, code: "AUTHENTICATION_FAILED", msg: "Your username or password is incorrect"}
	errLoginDeactivated = &apiError{status: http.StatusUnauthorized, code: "USER_DEACTIVATED", msg: "Account is deactivated"}
)

// rateLimited is SPEC §8's 429 envelope.
func rateLimited(wait time.Duration) *apiError {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	return &apiError{status: http.StatusTooManyRequests, code: "RATE_LIMIT_HIT", msg: "API usage exceeded rate limit",
		extra: []field{{"retry-after", secs}}, retryAfter: secs}
}

// gravatarURL is Zulip's default avatar for an account.
func gravatarURL(email string) string {
	sum := md5.Sum([]byte(strings.ToLower(email)))
	return "https://secure.gravatar.com/avatar/" + hex.EncodeToString(sum[:]) + "?d=identicon&version=1"
}

// ---- push tokens ----

const maxPushTokenLength = 4096

// appIDPattern is what Zulip accepts as an iOS app id.
var appIDPattern = regexp.MustCompile(`^[.a-zA-Z0-9-]+$`)

var errBotRequest = badRequest("This endpoint does not accept bot requests.")

// addAPNsToken serves POST /api/v1/users/me/apns_device_token.
func (s *server) addAPNsToken(r *apiRequest) (any, error) { return s.addPushToken(r, pushAPNs) }

// addFCMToken serves POST /api/v1/users/me/android_gcm_reg_id.
func (s *server) addFCMToken(r *apiRequest) (any, error) { return s.addPushToken(r, pushFCM) }

// removeAPNsToken serves DELETE /api/v1/users/me/apns_device_token.
func (s *server) removeAPNsToken(r *apiRequest) (any, error) { return s.removePushToken(r, pushAPNs) }

// removeFCMToken serves DELETE /api/v1/users/me/android_gcm_reg_id.
func (s *server) removeFCMToken(r *apiRequest) (any, error) { return s.removePushToken(r, pushFCM) }

func (s *server) addPushToken(r *apiRequest, kind pushKind) (any, error) {
	token, err := r.params.requiredString("token")
	if err != nil {
		return nil, err
	}
	t := pushToken{Kind: kind, Token: token}
	if kind == pushAPNs {
		if t.AppID, err = r.params.matchString("appid", appIDPattern, "org.zulip.Zulip"); err != nil {
			return nil, err
		}
	}
	if err := validatePushToken(kind, token); err != nil {
		return nil, err
	}
	return nil, s.store.addPushToken(r.user.ID, t)
}

func (s *server) removePushToken(r *apiRequest, kind pushKind) (any, error) {
	token, err := r.params.requiredString("token")
	if err != nil {
		return nil, err
	}
	if err := validatePushToken(kind, token); err != nil {
		return nil, err
	}
	return nil, s.store.removePushToken(r.user.ID, kind, token)
}

// validatePushToken applies Zulip's checks: a length, and for Apple
// tokens, hex.
func validatePushToken(kind pushKind, token string) error {
	if token == "" || utf8.RuneCountInString(token) > maxPushTokenLength || strings.ContainsRune(token, 0) {
		return badRequest("Empty or invalid length token")
	}
	if kind == pushAPNs && !isHexToken(token) {
		return badRequest("Invalid APNS token")
	}
	return nil
}

// isHexToken is Python's bytes.fromhex, which Zulip uses: pairs of hex
// digits, with ASCII whitespace allowed between pairs and at the ends.
func isHexToken(s string) bool {
	for i := 0; i < len(s); {
		if isASCIISpace(s[i]) {
			i++
			continue
		}
		if i+1 >= len(s) || !isHexDigit(s[i]) || !isHexDigit(s[i+1]) {
			return false
		}
		i += 2
	}
	return true
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// ---- channels and subscriptions ----

const (
	maxChannelNameLength        = 60
	maxChannelDescriptionLength = 1024
)

// streamObject is Zulip's channel object, as GET /streams answers it.
type streamObject struct {
	StreamID                   uint64  `json:"stream_id"`
	Name                       string  `json:"name"`
	Description                string  `json:"description"`
	RenderedDescription        string  `json:"rendered_description"`
	DateCreated                int64   `json:"date_created"`
	CreatorID                  *uint64 `json:"creator_id"`
	InviteOnly                 bool    `json:"invite_only"`
	IsWebPublic                bool    `json:"is_web_public"`
	HistoryPublicToSubscribers bool    `json:"history_public_to_subscribers"`
	FirstMessageID             *uint64 `json:"first_message_id"`
	MessageRetentionDays       *int    `json:"message_retention_days"`
	StreamPostPolicy           int     `json:"stream_post_policy"`
	IsAnnouncementOnly         bool    `json:"is_announcement_only"`
	CanRemoveSubscribersGroup  int     `json:"can_remove_subscribers_group"`
	StreamWeeklyTraffic        *int    `json:"stream_weekly_traffic"`
}

func newStreamObject(ch channel) streamObject {
	o := streamObject{
		StreamID:                   ch.ID,
		Name:                       ch.Name,
		Description:                ch.Description,
		RenderedDescription:        renderDescription(ch.Description),
		DateCreated:                ch.Created,
		InviteOnly:                 ch.Private,
		HistoryPublicToSubscribers: true, // subscribers of a private channel see its history
		StreamPostPolicy:           1,
	}
	if ch.CreatorID != 0 {
		id := ch.CreatorID
		o.CreatorID = &id
	}
	return o
}

// subscriptionObject is Zulip's subscription object.
type subscriptionObject struct {
	streamObject
	Color                  string   `json:"color"`
	IsMuted                bool     `json:"is_muted"`
	InHomeView             bool     `json:"in_home_view"`
	PinToTop               bool     `json:"pin_to_top"`
	DesktopNotifications   *bool    `json:"desktop_notifications"`
	AudibleNotifications   *bool    `json:"audible_notifications"`
	PushNotifications      *bool    `json:"push_notifications"`
	EmailNotifications     *bool    `json:"email_notifications"`
	WildcardMentionsNotify *bool    `json:"wildcard_mentions_notify"`
	Subscribers            []uint64 `json:"subscribers,omitempty"`
}

func newSubscriptionObject(sub subscribedChannel) subscriptionObject {
	return subscriptionObject{streamObject: newStreamObject(sub.channel), Color: sub.Color, InHomeView: true}
}

// listSubscriptions serves GET /api/v1/users/me/subscriptions.
func (s *server) listSubscriptions(r *apiRequest) (any, error) {
	withSubscribers, err := r.params.optionalBool("include_subscribers", false)
	if err != nil {
		return nil, err
	}
	subs, err := s.store.subscriptions(r.user.ID)
	if err != nil {
		return nil, err
	}
	list := make([]subscriptionObject, 0, len(subs))
	for _, sub := range subs {
		o := newSubscriptionObject(sub)
		if withSubscribers {
			o.Subscribers = append([]uint64{}, sub.Subscribers...)
		}
		list = append(list, o)
	}
	return struct {
		Subscriptions []subscriptionObject `json:"subscriptions"`
	}{list}, nil
}

// subscribe serves POST /api/v1/users/me/subscriptions: it subscribes the
// caller, creating channels that do not exist yet.
func (s *server) subscribe(r *apiRequest) (any, error) {
	raw, err := r.params.requiredJSON("subscriptions")
	if err != nil {
		return nil, err
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, badRequest("subscriptions is not a list")
	}
	inviteOnly, err := r.params.optionalBool("invite_only", false)
	if err != nil {
		return nil, err
	}
	specs := make([]channelSpec, 0, len(list))
	for i, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, badRequest("subscriptions[" + strconv.Itoa(i) + "] is not a dict")
		}
		name, ok := obj["name"].(string)
		if !ok {
			return nil, badRequest("name key is missing from subscriptions[" + strconv.Itoa(i) + "]")
		}
		description, _ := obj["description"].(string)
		spec := channelSpec{Name: strings.TrimSpace(name), Description: description}
		if err := validateChannel(spec); err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(specs, func(s channelSpec) bool { return strings.EqualFold(s.Name, spec.Name) }) {
			specs = append(specs, spec)
		}
	}
	subscribed, already, _, err := s.store.subscribe(r.user, specs, inviteOnly)
	if err != nil {
		return nil, channelError(err)
	}
	byEmail := func(names []string) map[string][]string {
		m := map[string][]string{}
		if len(names) > 0 {
			m[r.user.Email] = names
		}
		return m
	}
	return struct {
		Subscribed        map[string][]string `json:"subscribed"`
		AlreadySubscribed map[string][]string `json:"already_subscribed"`
	}{byEmail(subscribed), byEmail(already)}, nil
}

func validateChannel(spec channelSpec) error {
	switch {
	case spec.Name == "":
		return badRequest("Channel name can't be empty.")
	case utf8.RuneCountInString(spec.Name) > maxChannelNameLength:
		return badRequest("Channel name too long (limit: " + strconv.Itoa(maxChannelNameLength) + " characters).")
	case strings.ContainsFunc(spec.Name, isUnsafeChar):
		i := strings.IndexFunc(spec.Name, isUnsafeChar)
		return badRequest("Invalid character in channel name, at position " + runePosition(spec.Name, i) + ".")
	case strings.ContainsRune(spec.Description, 0):
		return badRequest("Invalid character in channel description")
	case utf8.RuneCountInString(spec.Description) > maxChannelDescriptionLength:
		return badRequest("description is too long (limit: " + strconv.Itoa(maxChannelDescriptionLength) + " characters)")
	}
	return nil
}

// isUnsafeChar is what Zulip refuses in names and topics: control
// characters, surrogates and non-characters.
func isUnsafeChar(r rune) bool {
	return unicode.IsControl(r) || r == utf8.RuneError || (r >= 0xfdd0 && r <= 0xfdef) || r&0xfffe == 0xfffe
}

// unsubscribe serves DELETE /api/v1/users/me/subscriptions.
func (s *server) unsubscribe(r *apiRequest) (any, error) {
	names, err := stringList(r.params, "subscriptions")
	if err != nil {
		return nil, err
	}
	for i, name := range names {
		names[i] = strings.TrimSpace(name)
		if err := validateChannel(channelSpec{Name: names[i]}); err != nil {
			return nil, err
		}
	}
	removed, notRemoved, _, _, err := s.store.unsubscribe(r.user, names)
	var named *namedError
	if errors.As(err, &named) && errors.Is(err, errNoSuchChannel) {
		return nil, badRequest("Channel(s) (" + named.name + ") do not exist")
	}
	if err != nil {
		return nil, err
	}
	return struct {
		Removed    []string `json:"removed"`
		NotRemoved []string `json:"not_removed"`
	}{nonNil(removed), nonNil(notRemoved)}, nil
}

// listChannels serves GET /api/v1/streams: the channels the caller may
// see, public and subscribed ones by default.
func (s *server) listChannels(r *apiRequest) (any, error) {
	var f channelFilter
	var err error
	if f.Public, err = r.params.optionalBool("include_public", true); err != nil {
		return nil, err
	}
	if f.Subscribed, err = r.params.optionalBool("include_subscribed", true); err != nil {
		return nil, err
	}
	if f.AllActive, err = r.params.optionalBool("include_all_active", false); err != nil {
		return nil, err
	}
	if f.AllActive && !r.user.isAdmin() {
		return nil, badRequest("User not authorized for this query")
	}
	channels, err := s.store.visibleChannels(r.user, f)
	if err != nil {
		return nil, err
	}
	list := make([]streamObject, 0, len(channels))
	for _, ch := range channels {
		list = append(list, newStreamObject(ch))
	}
	return struct {
		Streams []streamObject `json:"streams"`
	}{list}, nil
}

// channelID serves GET /api/v1/get_stream_id.
func (s *server) channelID(r *apiRequest) (any, error) {
	name, err := r.params.requiredString("stream")
	if err != nil {
		return nil, err
	}
	ch, err := s.store.accessibleChannel(r.user, name)
	if err != nil {
		return nil, channelError(err)
	}
	return struct {
		StreamID uint64 `json:"stream_id"`
	}{ch.ID}, nil
}

// channelError words the store's channel errors as Zulip does.
func channelError(err error) error {
	var named *namedError
	if !errors.As(err, &named) {
		return err
	}
	switch {
	case errors.Is(err, errNoSuchChannel):
		return badRequest("Invalid channel name '" + named.name + "'")
	case errors.Is(err, errChannelExists):
		return badRequest("Channel name already in use.")
	case errors.Is(err, errChannelForbidden):
		return badRequest("Unable to access channel (" + named.name + ").")
	}
	return err
}

// ---- messages and read state ----

const (
	maxTopicLength   = 60
	maxMessageLength = 10000
)

// sendMessage serves POST /api/v1/messages for channel messages, with
// Zulip's checks in Zulip's order.
func (s *server) sendMessage(r *apiRequest) (any, error) {
	kind, err := r.params.requiredString("type")
	if err != nil {
		return nil, err
	}
	switch kind {
	case "stream", "channel":
	case "private", "direct":
		return nil, badRequest("Direct messages are not supported")
	default:
		return nil, badRequest("Invalid message type")
	}
	to, err := messageTarget(r.params)
	if err != nil {
		return nil, err
	}
	topic, ok := r.params.lookup("topic")
	if !ok {
		if topic, ok = r.params.lookup("subject"); !ok {
			return nil, badRequest("Missing topic")
		}
	}
	topic = strings.TrimSpace(topic)
	if topic == "" {
		return nil, badRequest("Topic can't be empty!")
	}
	if i := strings.IndexFunc(topic, isUnsafeChar); i >= 0 {
		return nil, badRequest("Invalid character in topic, at position " + runePosition(topic, i) + "!")
	}
	content, err := r.params.requiredString("content")
	if err != nil {
		return nil, err
	}
	if strings.Contains(content, "\x00") {
		return nil, badRequest("Message must not contain null bytes")
	}
	content = strings.TrimLeft(strings.TrimRightFunc(content, unicode.IsSpace), "\n")
	if content == "" {
		return nil, badRequest("Message must not be empty")
	}
	client, _ := r.params.lookup("client")
	sent, err := s.store.sendMessage(r.user, to, truncateTopic(topic), truncateContent(content), client)
	var named *namedError
	errors.As(err, &named)
	switch {
	case errors.Is(err, errNoSuchChannel):
		return nil, noSuchChannel(to)
	case errors.Is(err, errChannelForbidden):
		return nil, badRequest("Not authorized to send to channel '" + named.name + "'")
	case err != nil:
		return nil, err
	}
	return struct {
		ID uint64 `json:"id"`
	}{sent.ID}, nil
}

// noSuchChannel is Zulip's STREAM_DOES_NOT_EXIST error, by name or by id.
func noSuchChannel(to channelRef) *apiError {
	e := &apiError{status: http.StatusBadRequest, code: "STREAM_DOES_NOT_EXIST"}
	if to.Name != "" {
		e.msg = "Channel '" + html.EscapeString(to.Name) + "' does not exist"
		e.extra = []field{{"stream", to.Name}}
	} else {
		id := to.IDText
		if id == "" {
			id = strconv.FormatUint(to.ID, 10)
		}
		e.msg = "Channel with ID '" + id + "' does not exist"
		e.extra = []field{{"stream_id", json.Number(id)}}
	}
	return e
}

// truncateTopic shortens a topic over the limit as Zulip does, with "...".
func truncateTopic(topic string) string {
	if utf8.RuneCountInString(topic) <= maxTopicLength {
		return topic
	}
	runes := []rune(topic)
	return string(runes[:maxTopicLength-3]) + "..."
}

// truncateContent shortens content over the limit as Zulip does, marking
// the cut. The limit is in bytes, cut at a character boundary.
func truncateContent(content string) string {
	const marker = "\n[message truncated]"
	if len(content) <= maxMessageLength {
		return content
	}
	cut := maxMessageLength - len(marker)
	for cut > 0 && !utf8.RuneStart(content[cut]) {
		cut--
	}
	return content[:cut] + marker
}

// messageTarget reads `to`: a channel id, a name, or a JSON list holding
// exactly one of them. Text that is not JSON is a channel name.
func messageTarget(p *params) (channelRef, error) {
	raw, _ := p.lookup("to")
	if strings.TrimSpace(raw) == "" {
		return channelRef{}, badRequest("Missing channel")
	}
	parsed, err := decodeJSON("to", raw)
	if err != nil {
		return channelRef{Name: strings.TrimSpace(raw)}, nil
	}
	if list, ok := parsed.([]any); ok {
		if len(list) != 1 {
			return channelRef{}, badRequest("Expected exactly one channel")
		}
		parsed = list[0]
	}
	if num, ok := parsed.(json.Number); ok && !strings.ContainsAny(string(num), ".eE") {
		id, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil || id == 0 {
			return channelRef{}, noSuchChannel(channelRef{IDText: string(num)})
		}
		return channelRef{ID: id}, nil
	}
	if name, ok := parsed.(string); ok && strings.TrimSpace(name) != "" {
		return channelRef{Name: strings.TrimSpace(name)}, nil
	}
	return channelRef{}, badRequest("Invalid data type for channel")
}

// runePosition is the 1-based character position of byte offset i.
func runePosition(s string, i int) string {
	return strconv.Itoa(utf8.RuneCountInString(s[:i]) + 1)
}

// markStreamAsRead serves POST /api/v1/mark_stream_as_read (deprecated in
// Zulip in favour of POST /messages/flags/narrow).
func (s *server) markStreamAsRead(r *apiRequest) (any, error) {
	channelID, err := r.params.requiredInt("stream_id")
	if err != nil {
		return nil, err
	}
	if channelID <= 0 {
		return nil, errInvalidChannelID
	}
	err = s.store.markChannelRead(r.user, uint64(channelID))
	if errors.Is(err, errNoSuchChannel) {
		return nil, errInvalidChannelID
	}
	return nil, err
}

var (
	errInvalidChannelID = badRequest("Invalid channel ID")
	errInvalidMessages  = badRequest("Invalid message(s)")
)

// markTopicAsRead serves POST /api/v1/mark_topic_as_read (deprecated in
// Zulip in favour of POST /messages/flags/narrow).
func (s *server) markTopicAsRead(r *apiRequest) (any, error) {
	channelID, err := r.params.requiredInt("stream_id")
	if err != nil {
		return nil, err
	}
	topic, err := r.params.requiredString("topic_name")
	if err != nil {
		return nil, err
	}
	if channelID <= 0 {
		return nil, errInvalidChannelID
	}
	_, err = s.store.markTopicRead(r.user, uint64(channelID), topic)
	switch {
	case errors.Is(err, errNoSuchChannel):
		return nil, errInvalidChannelID
	case errors.Is(err, errNoSuchTopic):
		return nil, badRequest("No such topic '" + topic + "'")
	}
	return nil, err
}

// markAllAsRead serves POST /api/v1/mark_all_as_read. zulite marks
// everything in one transaction, so the answer is always complete.
func (s *server) markAllAsRead(r *apiRequest) (any, error) {
	if err := s.store.markAllRead(r.user); err != nil {
		return nil, err
	}
	return struct {
		Complete bool `json:"complete"`
	}{true}, nil
}

// Zulip's personal message flags: the ones clients may name, and among
// them the ones they may change.
var (
	knownFlags    = []string{"read", "starred", "collapsed", "mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned", "group_mentioned", "has_alert_word", "historical"}
	editableFlags = []string{"read", "starred", "collapsed"}
)

// readFlagChange reads `op` and `flag` and checks them in Zulip's order.
func readFlagChange(p *params) (flagChange, error) {
	op, err := p.requiredString("op")
	if err != nil {
		return flagChange{}, err
	}
	flag, err := p.requiredString("flag")
	if err != nil {
		return flagChange{}, err
	}
	switch {
	case !slices.Contains(knownFlags, flag):
		return flagChange{}, badRequest("Invalid flag: '" + flag + "'")
	case !slices.Contains(editableFlags, flag):
		return flagChange{}, badRequest("Flag not editable: '" + flag + "'")
	case op != "add" && op != "remove":
		return flagChange{}, badRequest("Invalid message flag operation: '" + op + "'")
	}
	return flagChange{Flag: flag, Add: op == "add"}, nil
}

// updateFlags serves POST /api/v1/messages/flags.
func (s *server) updateFlags(r *apiRequest) (any, error) {
	ids, err := intList(r.params, "messages")
	if err != nil {
		return nil, err
	}
	change, err := readFlagChange(r.params)
	if err != nil {
		return nil, err
	}
	valid := make([]uint64, 0, len(ids))
	for _, id := range ids {
		if id <= 0 {
			return nil, errInvalidMessages
		}
		valid = append(valid, uint64(id))
	}
	_, unsubscribed, err := s.store.updateFlags(r.user, valid, change)
	if err != nil {
		return nil, err
	}
	return struct {
		Messages     []int64   `json:"messages"`
		Unsubscribed *[]uint64 `json:"ignored_because_not_subscribed_channels,omitempty"`
	}{ids, skippedChannels(change, unsubscribed)}, nil
}

// ---- helpers ----

// intList reads a required JSON list of integers.
func intList(p *params, name string) ([]int64, error) {
	raw, err := p.requiredJSON(name)
	if err != nil {
		return nil, err
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, badRequest(name + " is not a list")
	}
	out := make([]int64, 0, len(list))
	for i, item := range list {
		n, ok := jsonInt(item)
		if !ok {
			return nil, badRequest(name + "[" + strconv.Itoa(i) + "] is not an integer")
		}
		out = append(out, n)
	}
	return out, nil
}

// stringList reads a required JSON list of strings.
func stringList(p *params, name string) ([]string, error) {
	raw, err := p.requiredJSON(name)
	if err != nil {
		return nil, err
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, badRequest(name + " is not a list")
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			return nil, badRequest(name + "[" + strconv.Itoa(i) + "] is not a string")
		}
		out = append(out, s)
	}
	return out, nil
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// renderDescription is the minimal safe rendering of a description: the
// text HTML-escaped in a paragraph (the binary carries no Markdown).
func renderDescription(text string) string {
	if text == "" {
		return ""
	}
	return "<p>" + htmlEscaper.Replace(text) + "</p>"
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// ---- reading messages ----

// messageObject is Zulip's message object for a channel message, as a
// message event carries it (GET /messages adds the caller's flags).
type messageObject struct {
	AvatarURL        *string    `json:"avatar_url"`
	Client           string     `json:"client"`
	Content          string     `json:"content"`
	ContentType      string     `json:"content_type"`
	DisplayRecipient string     `json:"display_recipient"`
	ID               uint64     `json:"id"`
	IsMeMessage      bool       `json:"is_me_message"`
	Reactions        []struct{} `json:"reactions"`
	RecipientID      uint64     `json:"recipient_id"`
	SenderEmail      string     `json:"sender_email"`
	SenderFullName   string     `json:"sender_full_name"`
	SenderID         uint64     `json:"sender_id"`
	SenderRealmStr   string     `json:"sender_realm_str"`
	StreamID         uint64     `json:"stream_id"`
	Subject          string     `json:"subject"`
	Submessages      []struct{} `json:"submessages"`
	Timestamp        int64      `json:"timestamp"`
	TopicLinks       []struct{} `json:"topic_links"`
	Type             string     `json:"type"`
}

// newMessageObject builds the message object; with clientGravatar the
// avatar is left to the client (null), as Zulip does for Gravatar avatars.
func newMessageObject(m pagedMessage, applyMarkdown, clientGravatar bool) messageObject {
	o := messageObject{
		Client:           m.Client,
		Content:          m.Content,
		ContentType:      "text/x-markdown",
		DisplayRecipient: m.Channel.Name,
		ID:               m.ID,
		IsMeMessage:      strings.HasPrefix(m.Content, "/me "),
		Reactions:        []struct{}{},
		RecipientID:      m.ChannelID,
		SenderEmail:      m.Sender.Email,
		SenderFullName:   m.Sender.FullName,
		SenderID:         m.SenderID,
		SenderRealmStr:   "zulite",
		StreamID:         m.ChannelID,
		Subject:          m.Topic,
		Submessages:      []struct{}{},
		Timestamp:        m.Timestamp,
		TopicLinks:       []struct{}{},
		Type:             "stream",
	}
	if o.Client == "" {
		o.Client = "API"
	}
	if !clientGravatar {
		avatar := gravatarURL(m.Sender.Email)
		o.AvatarURL = &avatar
	}
	if applyMarkdown {
		o.Content, o.ContentType = renderContent(m.Content), "text/html"
	}
	return o
}

// messageFlags lists the caller's flags on a message, in Zulip's words.
// A message of a channel the caller is not subscribed to is "historical".
func messageFlags(m pagedMessage) []string {
	flags := []string{}
	if !m.Unread {
		flags = append(flags, "read")
	}
	if m.Flags&flagStarred != 0 {
		flags = append(flags, "starred")
	}
	if m.Flags&flagCollapsed != 0 {
		flags = append(flags, "collapsed")
	}
	if !m.Subscribed {
		flags = append(flags, "historical")
	}
	return flags
}

// renderContent is the minimal safe rendering of a message, as the binary
// carries no Markdown library: the text HTML-escaped, paragraphs (split
// at blank lines) in <p>, other line breaks as <br>.
func renderContent(text string) string {
	var b strings.Builder
	for _, para := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		para = strings.Trim(para, "\n")
		if para == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("<p>")
		b.WriteString(strings.ReplaceAll(htmlEscaper.Replace(para), "\n", "<br>\n"))
		b.WriteString("</p>")
	}
	return b.String()
}

// maxMessagesPerRequest bounds one page or one flag update, as Zulip's.
const maxMessagesPerRequest = 5000

// narrowOperators maps Zulip's operator names, old ones included, to the
// ones zulite matches on; dm operators match nothing (zulite has no
// direct messages).
var narrowOperators = map[string]string{
	"channel": "channel", "stream": "channel", "topic": "topic", "subject": "topic",
	"is": "is", "sender": "sender", "id": "id", "with": "with", "search": "search", "has": "has",
	"in": "in", "near": "near", "channels": "channels", "streams": "channels",
	"dm": "dm", "pm-with": "dm", "pm_with": "dm", "dm-including": "dm", "group-pm-with": "dm", "group_pm_with": "dm",
}

var narrowOperands = map[string][]string{
	"is":       {"dm", "private", "starred", "unread", "mentioned", "alerted", "resolved", "followed"},
	"has":      {"attachment", "image", "link", "reaction"},
	"in":       {"home", "all"},
	"channels": {"public", "web-public"},
}

func badNarrow(desc string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "BAD_NARROW", msg: "Invalid narrow operator: " + desc, extra: []field{{"desc", desc}}}
}

// readNarrow reads the `narrow` parameter: a JSON list of terms, each an
// object {"operator","operand","negated"} or a legacy [operator, operand].
func readNarrow(p *params, required bool) ([]rawTerm, error) {
	raw, ok := p.lookup("narrow")
	if !ok {
		if required {
			return nil, missingArgument("narrow")
		}
		return nil, nil
	}
	badValue := &apiError{status: http.StatusBadRequest, code: "REQUEST_VARIABLE_INVALID", msg: "Bad value for 'narrow': " + raw,
		extra: []field{{"var_name", "narrow"}, {"bad_value", raw}}}
	parsed, err := decodeJSON("narrow", raw)
	if err != nil {
		return nil, badValue
	}
	list, ok := parsed.([]any)
	if !ok {
		return nil, badValue
	}
	terms := make([]rawTerm, 0, len(list))
	for _, elem := range list {
		var operator string
		var operand any
		negated := false
		switch e := elem.(type) {
		case []any:
			if len(e) != 2 {
				return nil, badValue
			}
			op, ok1 := e[0].(string)
			val, ok2 := e[1].(string)
			if !ok1 || !ok2 {
				return nil, badValue
			}
			operator, operand = op, val
		case map[string]any:
			op, ok := e["operator"]
			if !ok {
				return nil, badRequest("operator key is missing from elem")
			}
			if operator, ok = op.(string); !ok {
				return nil, badRequest(`elem["operator"] is not a string`)
			}
			if operand, ok = e["operand"]; !ok {
				return nil, badRequest("operand key is missing from elem")
			}
			if n, present := e["negated"]; present {
				if negated, ok = n.(bool); !ok {
					return nil, badRequest(`elem["negated"] is not a boolean`)
				}
			}
		default:
			return nil, badValue
		}
		if err := checkOperand(operator, operand); err != nil {
			return nil, err
		}
		terms = append(terms, rawTerm{operator, operand, negated})
	}
	return terms, nil
}

// rawTerm is a narrow term as sent, its operand's type checked.
type rawTerm struct {
	operator string
	operand  any
	negated  bool
}

// checkOperand is the type check of an operand, which depends on the
// operator (Zulip does it while parsing, before any other check).
func checkOperand(operator string, operand any) error {
	switch narrowOperators[operator] {
	case "channel", "sender", "id", "with":
		if _, isString := operand.(string); !isString {
			if _, isInt := jsonInt(operand); !isInt {
				return badRequest(`elem["operand"] is not a string or integer`)
			}
		}
	case "dm":
		if _, isString := operand.(string); isString {
			return nil
		}
		list, isList := operand.([]any)
		if !isList {
			return badRequest(`elem["operand"] is not a string or an integer list`)
		}
		for i, item := range list {
			if _, isInt := jsonInt(item); !isInt {
				return badRequest(`elem["operand"][` + strconv.Itoa(i) + `] is not an integer`)
			}
		}
	case "search":
		if text, isString := operand.(string); !isString {
			return badRequest(`elem["operand"] is not a string`)
		} else if strings.TrimSpace(text) == "" {
			return badRequest(`elem["operand"] cannot be blank.`)
		}
	default:
		if _, isString := operand.(string); !isString {
			return badRequest(`elem["operand"] is not a string`)
		}
	}
	return nil
}

// narrowTerms checks what each term means: known operators and operands,
// and no mix of channel and direct-message terms.
func narrowTerms(raw []rawTerm) ([]narrowTerm, error) {
	terms := make([]narrowTerm, 0, len(raw))
	channelish, dmish := false, false
	for _, r := range raw {
		t, err := narrowTermOf(r.operator, r.operand, r.negated)
		if err != nil {
			return nil, err
		}
		channelish = channelish || t.Operator == "channel" || t.Operator == "topic" || t.Operator == "channels"
		dmish = dmish || t.Operator == "dm" || (t.Operator == "is" && (t.Name == "dm" || t.Name == "private"))
		terms = append(terms, t)
	}
	if channelish && dmish {
		return nil, badNarrow("No message can be both a channel message and direct message")
	}
	return terms, nil
}

// narrowTermOf checks one term's operator and operand.
func narrowTermOf(operator string, operand any, negated bool) (narrowTerm, error) {
	op, known := narrowOperators[operator]
	if !known {
		return narrowTerm{}, badNarrow("unknown operator " + operator)
	}
	t := narrowTerm{Operator: op, Negated: negated}
	switch op {
	case "channel", "sender", "id", "with":
		if id, ok := jsonInt(operand); ok {
			if id <= 0 && (op == "id" || op == "with") {
				return t, badNarrow("Invalid message ID")
			}
			t.ID = uint64(max(id, 0))
			return t, nil
		}
		name, _ := operand.(string)
		if op == "id" || op == "with" {
			id, err := strconv.ParseUint(name, 10, 64)
			if err != nil || id == 0 {
				return t, badNarrow("Invalid message ID")
			}
			t.ID = id
			return t, nil
		}
		t.Name = strings.TrimSpace(name)
		return t, nil
	case "dm":
		return t, nil // zulite has no direct messages: such a term matches nothing
	}
	name, ok := operand.(string)
	if !ok {
		return t, badRequest(`elem["operand"] is not a string`)
	}
	if allowed, listed := narrowOperands[op]; listed && !slices.Contains(allowed, name) {
		if op == "channels" {
			return t, badNarrow("unknown channels operand " + name)
		}
		return t, badNarrow("unknown '" + operator + "' operand " + name)
	}
	t.Name = name
	return t, nil
}

// readRange reads the anchor, the counts and the narrow, shared by GET
// /messages (forFetch: the anchor may come as use_first_unread_anchor,
// and more than 5000 messages are refused) and POST /messages/flags/narrow
// (the anchor and the narrow are required, and the range is clamped).
// The checks run in Zulip's order: every parameter's form, then the
// anchor, the size, the excluded anchor, and what the narrow means.
func readRange(p *params, forFetch bool) (messageRange, error) {
	var q messageRange
	anchor, hasAnchor := p.lookup("anchor")
	if !hasAnchor && !forFetch {
		return q, missingArgument("anchor")
	}
	includeAnchor, err := p.optionalBool("include_anchor", true)
	if err != nil {
		return q, err
	}
	q.IncludeAnchor = includeAnchor
	for _, count := range []struct {
		name string
		into *int
	}{{"num_before", &q.NumBefore}, {"num_after", &q.NumAfter}} {
		n, err := p.requiredInt(count.name)
		if err != nil {
			return q, err
		}
		if n < 0 {
			return q, badRequest(count.name + " is too small")
		}
		*count.into = int(min(n, maxMessagesPerRequest+1))
	}
	raw, err := readNarrow(p, !forFetch)
	if err != nil {
		return q, err
	}
	firstUnread := false
	if forFetch {
		if firstUnread, err = p.optionalBool("use_first_unread_anchor", false); err != nil {
			return q, err
		}
	}
	switch {
	case firstUnread || anchor == "first_unread":
		q.AnchorKind = anchorFirstUnread
	case !hasAnchor:
		return q, badRequest("Missing 'anchor' argument.")
	case anchor == "newest":
		q.AnchorKind = anchorNewest
	case anchor == "oldest":
		q.AnchorKind = anchorOldest
	default:
		q.Anchor, err = parseAnchor(anchor)
		if err != nil {
			return q, err
		}
	}
	if forFetch && q.NumBefore+q.NumAfter > maxMessagesPerRequest {
		return q, badRequest("Too many messages requested (maximum 5000).")
	}
	if !q.IncludeAnchor && q.NumBefore > 0 && q.NumAfter > 0 {
		return q, badRequest("The anchor can only be excluded at an end of the range")
	}
	if q.Narrow, err = narrowTerms(raw); err != nil {
		return q, err
	}
	return q, nil
}

// parseAnchor reads a message id anchor as Zulip's int() would, clamped
// to 0 .. largestMessageID.
func parseAnchor(anchor string) (uint64, error) {
	text := strings.TrimSpace(anchor)
	digits := strings.TrimPrefix(strings.TrimPrefix(text, "-"), "+")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, badRequest("Invalid anchor")
	}
	if strings.HasPrefix(text, "-") {
		return 0, nil
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || n > largestMessageID { // overflow means huge
		return largestMessageID, nil
	}
	return n, nil
}

// narrowError words the store's narrow errors as Zulip does.
func narrowError(err error) error {
	var named *namedError
	switch {
	case errors.As(err, &named) && errors.Is(err, errNarrowUnknownChannel):
		return badNarrow("unknown channel " + named.name)
	case errors.As(err, &named) && errors.Is(err, errNarrowUnknownUser):
		return badNarrow("unknown user " + named.name)
	case errors.Is(err, errNarrowBadWith):
		return badNarrow("Invalid 'with' operand")
	}
	return err
}

// getMessages serves GET /api/v1/messages.
func (s *server) getMessages(r *apiRequest) (any, error) {
	q, err := readRange(r.params, true)
	if err != nil {
		return nil, err
	}
	clientGravatar, err := r.params.optionalBool("client_gravatar", true)
	if err != nil {
		return nil, err
	}
	applyMarkdown, err := r.params.optionalBool("apply_markdown", true)
	if err != nil {
		return nil, err
	}
	page, err := s.store.messages(r.user, q)
	if err != nil {
		return nil, narrowError(err)
	}
	type withFlags struct {
		messageObject
		Flags []string `json:"flags"`
	}
	list := make([]withFlags, 0, len(page.Messages))
	for _, m := range page.Messages {
		list = append(list, withFlags{newMessageObject(m, applyMarkdown, clientGravatar), messageFlags(m)})
	}
	return struct {
		Messages       []withFlags `json:"messages"`
		Anchor         uint64      `json:"anchor"`
		FoundAnchor    bool        `json:"found_anchor"`
		FoundOldest    bool        `json:"found_oldest"`
		FoundNewest    bool        `json:"found_newest"`
		HistoryLimited bool        `json:"history_limited"`
	}{list, page.Anchor, page.FoundAnchor, page.FoundOldest, page.FoundNewest, false}, nil
}

// updateFlagsForNarrow serves POST /api/v1/messages/flags/narrow, the
// replacement for mark_stream_as_read. Like Zulip it clamps the range
// to 5000 messages rather than refusing it.
func (s *server) updateFlagsForNarrow(r *apiRequest) (any, error) {
	q, err := readRange(r.params, false)
	if err != nil {
		return nil, err
	}
	change, err := readFlagChange(r.params)
	if err != nil {
		return nil, err
	}
	q.NumBefore = min(q.NumBefore, max(maxMessagesPerRequest-q.NumAfter, maxMessagesPerRequest/2))
	q.NumAfter = min(q.NumAfter, maxMessagesPerRequest-q.NumBefore)
	result, err := s.store.updateFlagsInRange(r.user, q, change)
	if err != nil {
		return nil, narrowError(err)
	}
	var first, last *uint64
	if n := len(result.Messages); n > 0 {
		first, last = &result.Messages[0].ID, &result.Messages[n-1].ID
	}
	return struct {
		ProcessedCount   int       `json:"processed_count"`
		UpdatedCount     int       `json:"updated_count"`
		FirstProcessedID *uint64   `json:"first_processed_id"`
		LastProcessedID  *uint64   `json:"last_processed_id"`
		FoundOldest      bool      `json:"found_oldest"`
		FoundNewest      bool      `json:"found_newest"`
		Unsubscribed     *[]uint64 `json:"ignored_because_not_subscribed_channels,omitempty"`
	}{len(result.Messages), len(result.Changed), first, last, result.FoundOldest, result.FoundNewest, skippedChannels(change, result.Unsubscribed)}, nil
}

// skippedChannels is ignored_because_not_subscribed_channels: present,
// possibly empty, exactly when read is removed.
func skippedChannels(change flagChange, channels []uint64) *[]uint64 {
	if change.Flag != "read" || change.Add {
		return nil
	}
	if channels == nil {
		channels = []uint64{}
	}
	return &channels
}
