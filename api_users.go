package main

// The server's settings and its accounts: the caller, the user list,
// account creation and password login.

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

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
		PushNotificationsEnabled:      s.pusher != nil,
		RealmURI:                      s.baseURL,
		RealmURL:                      s.baseURL,
		RealmName:                     s.realmName,
		RealmIcon:                     s.baseURL + "/static/images/logo/zulip-icon-128x128.png",
	}, nil
}

// userObject is Zulip's user object at feature level 421 (without
// is_billing_admin, removed at 363; is_imported_stub came only at 433).
// Every address is visible to everyone in zulite, as with Zulip's
// email_address_visibility "everyone": email and delivery_email are the
// account's address, for bots too.
type userObject struct {
	UserID        uint64                   `json:"user_id"`
	Email         string                   `json:"email"`
	DeliveryEmail string                   `json:"delivery_email"`
	FullName      string                   `json:"full_name"`
	IsAdmin       bool                     `json:"is_admin"`
	IsOwner       bool                     `json:"is_owner"`
	IsGuest       bool                     `json:"is_guest"`
	IsBot         bool                     `json:"is_bot"`
	BotType       *int                     `json:"bot_type,omitempty"`
	BotOwnerID    any                      `json:"bot_owner_id,omitempty"` // bots only: null, as zulite's bots have no owner
	IsActive      bool                     `json:"is_active"`
	Role          int                      `json:"role"`
	DateJoined    string                   `json:"date_joined"`
	Timezone      string                   `json:"timezone"`
	AvatarURL     *string                  `json:"avatar_url"`
	AvatarVersion int                      `json:"avatar_version"`
	ProfileData   *map[string]profileValue `json:"profile_data,omitempty"`
	// uploadedAvatar: the avatar is an upload, whose URL clients cannot
	// compute, so it is given even with client_gravatar (avatars.go).
	uploadedAvatar bool
}

// newUserObject is the user object as GET /users/me answers it: the
// avatar URL always there, and profile_data (the custom profile fields
// given a value, store_people.go) for humans.
func newUserObject(u user) userObject {
	avatar := avatarURL(u, false)
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
		// Zulip's isoformat(timespec="minutes") of the UTC time.
		DateJoined:     time.Unix(u.Joined, 0).UTC().Format("2006-01-02T15:04+00:00"),
		AvatarURL:      &avatar,
		AvatarVersion:  avatarVersion(u),
		uploadedAvatar: u.Avatar != "",
	}
	if u.Bot {
		genericBot := 1
		o.BotType, o.BotOwnerID = &genericBot, json.RawMessage("null")
	} else {
		profile := u.Profile
		if profile == nil {
			profile = map[string]profileValue{}
		}
		o.ProfileData = &profile
	}
	return o
}

// forClient shapes a user object as GET /users and GET /users/{user_id}
// answer it: with client_gravatar the client computes the (Gravatar)
// avatar itself, so avatar_url is null; profile_data only when
// include_custom_profile_fields asks for it.
func (o userObject) forClient(clientGravatar, withProfile bool) userObject {
	if clientGravatar && !o.uploadedAvatar {
		o.AvatarURL = nil
	}
	if !withProfile {
		o.ProfileData = nil
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

// userShape reads the two parameters every user-listing route shares.
func userShape(p *params) (clientGravatar, withProfile bool, err error) {
	if clientGravatar, err = p.optionalBool("client_gravatar", true); err != nil {
		return false, false, err
	}
	withProfile, err = p.optionalBool("include_custom_profile_fields", false)
	return clientGravatar, withProfile, err
}

// listUsers serves GET /api/v1/users: every account, or those user_ids
// names (feature level 384; ids of no account are left out, as in
// Zulip), in id order.
func (s *server) listUsers(r *apiRequest) (any, error) {
	clientGravatar, withProfile, err := userShape(r.params)
	if err != nil {
		return nil, err
	}
	var only []int64
	if _, ok := r.params.lookup("user_ids"); ok {
		if only, err = intList(r.params, "user_ids"); err != nil {
			return nil, err
		}
	}
	users, err := s.store.users()
	if err != nil {
		return nil, err
	}
	members := make([]userObject, 0, len(users))
	for _, u := range users {
		if only != nil && !slices.Contains(only, int64(u.ID)) {
			continue
		}
		members = append(members, newUserObject(u).forClient(clientGravatar, withProfile))
	}
	return struct {
		Members []userObject `json:"members"`
	}{members}, nil
}

// getUser serves GET /api/v1/users/{user_id} and GET /api/v1/users/{email}:
// one account, deactivated ones and bots included. As in Zulip's
// routes, a path of digits is an id and anything else an address.
func (s *server) getUser(r *apiRequest) (any, error) {
	clientGravatar, withProfile, err := userShape(r.params)
	if err != nil {
		return nil, err
	}
	key := r.PathValue("user")
	var u user
	if key != "" && strings.Trim(key, "0123456789") == "" {
		id, perr := strconv.ParseUint(key, 10, 64)
		if perr != nil {
			return nil, errNoSuchUser
		}
		u, err = s.store.userByID(id)
	} else {
		u, err = s.store.userByEmail(strings.TrimSpace(key))
	}
	if err != nil {
		return nil, err
	}
	return struct {
		User userObject `json:"user"`
	}{newUserObject(u).forClient(clientGravatar, withProfile)}, nil
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
	if checkEmail(email) != nil {
		return nil, errBadNameOrUsername
	}
	if fullName, err = checkFullName(fullName); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(password) < minPasswordLength {
		return nil, errPasswordTooWeak
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
		return nil, errEmailInUse(email)
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
	u, err := s.passwordLogin(r.Request, username, password)
	if err != nil {
		return nil, err
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

// passwordLogin checks a password login (fetch_api_key, the web page's
// login form) and counts its failure against the account and the client
// address alike, whichever way it came.
func (s *server) passwordLogin(r *http.Request, username, password string) (user, error) {
	addr := s.clientAddress(r)
	if err := s.limits.addressBlocked(addr, time.Now()); err != nil {
		return user{}, err
	}
	if wait := s.logins.reserve(username, time.Now()); wait > 0 {
		return user{}, tooManySignIns(wait)
	}
	u, stored, err := s.store.credentials(username)
	if err != nil && !errors.Is(err, errNoSuchUser) {
		s.logins.finish(username, false, time.Now())
		return user{}, err
	}
	if u.Bot {
		stored = "" // bots do not log in with a password
	}
	ok, err := s.passwords.verify(r.Context(), stored, password) // one hash, known account or not
	s.logins.finish(username, err == nil && !ok, time.Now())
	switch {
	case errors.Is(err, errHasherBusy):
		return user{}, rateLimited(time.Second)
	case err != nil:
		return user{}, err
	case !ok:
		s.limits.failedAuthentication(addr, time.Now())
		return user{}, errLoginFailed
	}
	if !u.Active {
		return user{}, errLoginDeactivated
	}
	return u, nil
}

// nameInvalidChars are the characters Zulip refuses in a full name
// (UserProfile.NAME_INVALID_CHARS): they would break mention syntax.
const nameInvalidChars = "*`\\>\"@"

// endsLikeUserID is a name ending like "|15" (\|\d+$), which sloppy
// mention parsers could take for a user id; Zulip refuses it.
func endsLikeUserID(s string) bool {
	digits := strings.TrimRight(s, "0123456789")
	return len(digits) < len(s) && strings.HasSuffix(digits, "|")
}

// checkFullName is Zulip's check_full_name, in its order: the name
// trimmed, at most 100 characters, at least 1, printable and without
// nameInvalidChars, and not ending like a user id. zulite also counts a
// name made only of invisible characters (spaces and format characters
// such as U+200B) as empty, where Zulip would let it stand.
func checkFullName(raw string) (string, error) {
	name := strings.TrimSpace(raw)
	switch {
	case utf8.RuneCountInString(name) > maxFullNameLength:
		return "", errNameTooLong
	case onlyInvisible(name):
		return "", errNameTooShort
	case strings.ContainsFunc(name, isUnsafeChar) || strings.ContainsAny(name, nameInvalidChars):
		return "", errNameCharacters
	case endsLikeUserID(raw):
		return "", errNameFormat
	}
	return name, nil
}

// maxFullNameLength is Zulip's UserProfile.MAX_NAME_LENGTH.
const maxFullNameLength = 100

// onlyInvisible tells a text that shows nothing: empty, or only spaces
// and format characters (zero-width spaces and joiners, direction marks).
func onlyInvisible(text string) bool {
	return !strings.ContainsFunc(text, func(r rune) bool { return !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) })
}

// deactivateOwnUser serves DELETE /api/v1/users/me: the caller
// deactivates their own account; its keys, sessions and queues end.
func (s *server) deactivateOwnUser(r *apiRequest) (any, error) {
	return nil, s.store.deactivateOwn(r.user)
}
