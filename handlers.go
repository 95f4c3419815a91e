package main

import (
	"log/slog"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"zulite/internal/conns"
)

// zulite answers as this Zulip release: Zulip 11.0, feature level 421,
// the newest release level whose API changes zulite honours on every
// route it serves (the README's compatibility section lists each change
// from 279 on, and why not 468, where the official app moves to push
// registration that zulite does not serve).
const (
	zulipVersion      = "11.0"
	zulipFeatureLevel = 421
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
	// parking takes waiting polls' connections from net/http and keeps
	// them (parking.go); nil when polls do not park.
	parking *conns.Parking
	parked  atomic.Int64 // parked polls not yet answered
	// bodyWait is --read-timeout: an account's request body may take
	// that long, a stranger's less (conns.Serving).
	bodyWait time.Duration
	limits   *rateLimiter // nil: no rate limits
	walks    *walkSlots   // one message walk at a time per account
	// channelBudget bounds the channels an account creates in an hour.
	channelBudget *channelBudget
	listings      chan struct{} // listingSlots: channel-listing answers being built
	// trustedProxies are the peers whose X-Forwarded-For is believed
	// (--trusted-proxies).
	trustedProxies []netip.Prefix
	patterns       []string // every route, as routes registers them
	metrics        *metrics
	// requestIDs and requestLog are the request lines' ids and writer
	// (nil writer: none, as in tests).
	requestIDs *requestIDs
	requestLog *requestLog
	started    time.Time // register's server_generation
	uploads    uploadLimits
	// presenceEventsLimit: above this many active users, nobody is told
	// of a user coming online (--presence-events-limit; presence.go).
	presenceEventsLimit int
	// pusher delivers mobile push notifications; nil: pushes are off
	// (push_outbox.go).
	pusher *pusher
	// scheduler sends scheduled messages at their time (scheduler.go).
	scheduler *scheduler
	// topicDeleteTime bounds a topic's deletion (0: topicDeleteTime,
	// api_channel_admin.go; tests shorten it).
	topicDeleteTime time.Duration
	// mailer sends invitation e-mails; nil: no SMTP relay is
	// configured, and POST /invites is refused (mail.go).
	mailer *mailer
	// sharedUsers is register's state made of the accounts alone,
	// encoded once per change of any (register_shared.go).
	sharedUsers sharedUserState
}

// routeList is every route's pattern, "METHOD /path", as the router
// registered them (tests walk it, so that no route is forgotten). The
// /json/... twins of the /api/v1/... routes are the same handlers and
// are not listed again (jsonTwin).
func (s *server) routeList() []string {
	if s.patterns == nil {
		s.routes()
	}
	return slices.Clone(s.patterns)
}

// newServer wires a server over an open store.
func newServer(st *store, log *slog.Logger, baseURL, realmName string) *server {
	s := &server{store: st, log: log, baseURL: baseURL, realmName: realmName, maxBody: defaultMaxBody,
		passwords: newPasswordHasher(), logins: newLoginLimiter(), events: newEventHub(), walks: newWalkSlots(), channelBudget: newChannelBudget(), listings: make(chan struct{}, listingSlots), metrics: newMetrics(), requestIDs: newRequestIDs(), started: time.Now(), uploads: defaultUploadLimits(), presenceEventsLimit: defaultPresenceEventsLimit}
	s.metrics.passwordHashes = &s.passwords.derivations
	s.scheduler = newScheduler(st, log, baseURL)
	st.hooks.Store(&storeHooks{changes: s.publishChange, listening: s.events.listening, commits: s.metrics.observeCommit})
	return s
}

// routes is the whole API surface, one line a route.
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	allowed := map[string][]string{} // path → methods, for 405 answers
	s.patterns = nil
	// handle registers a route and, for /api/v1/x, its twin /json/x that
	// the web page calls with its session (web.go).
	handle := func(pattern string, h http.Handler) {
		s.patterns = append(s.patterns, pattern)
		for _, p := range []string{pattern, jsonTwin(pattern)} {
			if p == "" {
				continue
			}
			method, p, _ := strings.Cut(p, " ")
			allowed[p] = append(allowed[p], method)
			mux.Handle(method+" "+p, h)
		}
	}

	handle("GET /{$}", s.webFile("index.html"))
	handle("GET /web/{file}", s.webFile(""))
	handle("POST /accounts/login", s.webLogin())
	handle("GET /accounts/session", s.webSessionInfo())
	handle("POST /accounts/logout", s.webLogout())
	handle("GET /join/{key}/{$}", s.signupPage())
	handle("POST /join/{key}/{$}", s.signupPage())
	handle("GET /accounts/do_confirm/{key}", s.signupPage())
	handle("POST /accounts/do_confirm/{key}", s.signupPage())
	handle("GET /health", s.public(s.health))
	handle("GET /metrics", s.metricsPage(true))
	handle("GET /api/v1/server_settings", s.public(s.serverSettings))
	handle("POST /api/v1/fetch_api_key", s.public(s.fetchAPIKey))
	handle("GET /static/generated/emoji/emoji_api.json", s.public(s.emojiData))
	handle("POST /api/v1/register", s.api(s.register))
	handle("GET /api/v1/events", s.api(s.getEvents))
	handle("DELETE /api/v1/events", s.api(s.deleteQueue))
	handle("GET /api/v1/users", s.api(s.listUsers))
	handle("POST /api/v1/users", s.api(s.createUser, adminsOnly))
	handle("GET /api/v1/users/me", s.api(s.ownUser))
	handle("DELETE /api/v1/users/me", s.api(s.deactivateOwnUser))
	handle("POST /api/v1/users/me/apns_device_token", s.api(s.addAPNsToken, humansOnly))
	handle("DELETE /api/v1/users/me/apns_device_token", s.api(s.removeAPNsToken, humansOnly))
	handle("POST /api/v1/users/me/android_gcm_reg_id", s.api(s.addFCMToken, humansOnly))
	handle("DELETE /api/v1/users/me/android_gcm_reg_id", s.api(s.removeFCMToken, humansOnly))
	handle("POST /api/v1/mobile_push/test_notification", s.api(s.testPushNotification, humansOnly))
	handle("PATCH /api/v1/settings", s.api(s.updateSettings, humansOnly))
	handle("PATCH /api/v1/realm", s.api(s.updateRealm, adminsOnly))
	handle("GET /api/v1/users/me/subscriptions", s.api(s.listSubscriptions))
	handle("POST /api/v1/users/me/subscriptions", s.api(s.subscribe))
	handle("DELETE /api/v1/users/me/subscriptions", s.api(s.unsubscribe))
	handle("PATCH /api/v1/users/me/subscriptions", s.api(s.updateSubscriptions))
	handle("POST /api/v1/users/me/subscriptions/properties", s.api(s.setSubscriptionProperties))
	handle("PATCH /api/v1/users/me/subscriptions/muted_topics", s.api(s.updateMutedTopic))
	handle("POST /api/v1/user_topics", s.api(s.updateUserTopic))
	handle("GET /api/v1/streams", s.api(s.listChannels))
	handle("GET /api/v1/streams/{stream_id}", s.api(s.channelByID))
	handle("PATCH /api/v1/streams/{stream_id}", s.api(s.updateChannel))
	handle("DELETE /api/v1/streams/{stream_id}", s.api(s.archiveChannel))
	handle("POST /api/v1/streams/{stream_id}/delete_topic", s.api(s.deleteTopic, adminsOnly))
	handle("GET /api/v1/streams/{stream_id}/members", s.api(s.channelMembers))
	handle("POST /api/v1/default_streams", s.api(s.addDefaultChannel, adminsOnly))
	handle("DELETE /api/v1/default_streams", s.api(s.removeDefaultChannel, adminsOnly))
	handle("GET /api/v1/get_stream_id", s.api(s.channelID))
	handle("POST /api/v1/messages", s.api(s.sendMessage))
	handle("GET /api/v1/messages", s.api(s.getMessages))
	handle("POST /api/v1/messages/flags", s.api(s.updateFlags))
	handle("GET /api/v1/messages/{message_id}/history", s.api(s.messageHistory))
	handle("POST /api/v1/messages/{message_id}/reactions", s.api(s.addReaction))
	handle("DELETE /api/v1/messages/{message_id}/reactions", s.api(s.removeReaction))
	handle("POST /api/v1/messages/render", s.api(s.renderMessage))
	handle("GET /api/v1/messages/matches_narrow", s.api(s.messagesMatchNarrow))
	handle("GET /api/v1/messages/{message_id}/read_receipts", s.api(s.readReceipts))
	handle("POST /api/v1/messages/{message_id}/typing", s.api(s.sendEditTyping))
	handle("POST /api/v1/submessage", s.api(s.addSubmessage))
	handle("GET /api/v1/drafts", s.api(s.listDrafts))
	handle("POST /api/v1/drafts", s.api(s.createDrafts))
	handle("PATCH /api/v1/drafts/{draft_id}", s.api(s.editDraft))
	handle("DELETE /api/v1/drafts/{draft_id}", s.api(s.deleteDraft))
	handle("GET /api/v1/saved_snippets", s.api(s.listSnippets))
	handle("POST /api/v1/saved_snippets", s.api(s.createSnippet))
	handle("PATCH /api/v1/saved_snippets/{saved_snippet_id}", s.api(s.editSnippet))
	handle("DELETE /api/v1/saved_snippets/{saved_snippet_id}", s.api(s.deleteSnippet))
	handle("GET /api/v1/scheduled_messages", s.api(s.listScheduled))
	handle("POST /api/v1/scheduled_messages", s.api(s.createScheduled))
	handle("PATCH /api/v1/scheduled_messages/{scheduled_message_id}", s.api(s.editScheduled))
	handle("DELETE /api/v1/scheduled_messages/{scheduled_message_id}", s.api(s.deleteScheduled))
	handle("GET /api/v1/reminders", s.api(s.listReminders))
	handle("POST /api/v1/reminders", s.api(s.createReminder))
	handle("DELETE /api/v1/reminders/{reminder_id}", s.api(s.deleteReminder))
	handle("POST /api/v1/messages/flags/narrow", s.api(s.updateFlagsForNarrow))
	handle("POST /api/v1/mark_stream_as_read", s.api(s.markStreamAsRead))
	handle("POST /api/v1/mark_topic_as_read", s.api(s.markTopicAsRead))
	handle("POST /api/v1/mark_all_as_read", s.api(s.markAllAsRead))
	handle("GET /api/v1/realm/presence", s.api(s.realmPresence))
	handle("POST /api/v1/typing", s.api(s.sendTyping))
	handle("POST /api/v1/user_uploads", s.uploadFile())
	handle("GET /api/v1/attachments", s.api(s.listAttachments))
	handle("DELETE /api/v1/attachments/{attachment_id}", s.api(s.removeAttachment))
	handle("GET /api/v1/user_uploads/{realm_id}/{path...}", s.api(s.uploadURL))
	handle("POST /api/v1/users/me/avatar", s.setAvatar())
	handle("DELETE /api/v1/users/me/avatar", s.api(s.deleteAvatar))
	handle("GET /api/v1/invites", s.api(s.listInvites, membersOnly))
	handle("POST /api/v1/invites", s.api(s.sendInvites, membersOnly))
	handle("GET /api/v1/users/me/alert_words", s.api(s.listAlertWords))
	handle("POST /api/v1/users/me/alert_words", s.api(s.addAlertWords))
	handle("DELETE /api/v1/users/me/alert_words", s.api(s.removeAlertWords))
	handle("GET /api/v1/user_groups", s.api(s.listUserGroups, membersOnly))
	handle("POST /api/v1/user_groups/create", s.api(s.createUserGroup, membersOnly))
	handle("POST /api/v1/user_groups/{user_group_id}/deactivate", s.api(s.deactivateUserGroup))
	handle("GET /api/v1/user_groups/{user_group_id}/members", s.api(s.userGroupMembers, membersOnly))
	handle("POST /api/v1/user_groups/{user_group_id}/members", s.api(s.updateGroupMembers, membersOnly))
	handle("GET /api/v1/user_groups/{user_group_id}/members/{user_id}", s.api(s.isUserGroupMember, membersOnly))
	handle("GET /api/v1/user_groups/{user_group_id}/subgroups", s.api(s.userGroupSubgroups, membersOnly))
	handle("POST /api/v1/user_groups/{user_group_id}/subgroups", s.api(s.updateGroupSubgroups, membersOnly))
	handle("GET /api/v1/realm/emoji", s.api(s.listEmoji))
	handle("POST /api/v1/realm/emoji/{emoji_name}", s.uploadEmoji())
	handle("DELETE /api/v1/realm/emoji/{emoji_name}", s.api(s.deactivateEmoji))
	handle("GET /api/v1/realm/linkifiers", s.api(s.listLinkifiers))
	handle("PATCH /api/v1/realm/linkifiers", s.api(s.reorderLinkifiers, adminsOnly))
	handle("POST /api/v1/realm/filters", s.api(s.addLinkifier, adminsOnly))
	handle("PATCH /api/v1/realm/filters/{filter_id}", s.api(s.updateLinkifier, adminsOnly))
	handle("DELETE /api/v1/realm/filters/{filter_id}", s.api(s.removeLinkifier, adminsOnly))
	handle("POST /api/v1/realm/playgrounds", s.api(s.addPlayground, adminsOnly))
	handle("DELETE /api/v1/realm/playgrounds/{playground_id}", s.api(s.removePlayground, adminsOnly))
	handle("POST /api/v1/users/{user_id}/reactivate", s.api(s.reactivateUser))
	handle("PATCH /api/v1/users/me/profile_data", s.api(s.updateOwnProfileData, humansOnly))
	handle("DELETE /api/v1/users/me/profile_data", s.api(s.removeOwnProfileData, humansOnly))
	handle("GET /api/v1/realm/profile_fields", s.api(s.listProfileFields))
	handle("POST /api/v1/realm/profile_fields", s.api(s.createProfileField, adminsOnly))
	handle("PATCH /api/v1/realm/profile_fields", s.api(s.reorderProfileFields, adminsOnly))
	handle("PATCH /api/v1/realm/profile_fields/{field_id}", s.api(s.updateProfileField, adminsOnly))
	handle("DELETE /api/v1/realm/profile_fields/{field_id}", s.api(s.deleteProfileField, adminsOnly))
	handle("PATCH /api/v1/realm/user_settings_defaults", s.api(s.updateRealmUserDefaults, adminsOnly))
	handle("POST /api/v1/export/realm", s.api(s.startRealmExport, adminsOnly))
	handle("GET /api/v1/export/realm", s.api(s.listRealmExports, adminsOnly))

	for p, methods := range allowed {
		mux.Handle(p, methodNotAllowed(methods))
	}
	// GET /api/v1/users/{user_id} and /api/v1/users/{email}, PATCH and
	// DELETE /api/v1/users/{user_id}: one pattern for every method, which
	// answers 405 itself (method patterns would conflict with the 405
	// pattern of /api/v1/users/me). As in Zulip's URL patterns, only an
	// id takes PATCH and DELETE.
	s.patterns = append(s.patterns, "GET /api/v1/users/{user}", "PATCH /api/v1/users/{user_id}", "DELETE /api/v1/users/{user_id}")
	byAddress := onlyGET(s.api(s.getUser))
	byID := byMethod(map[string]http.Handler{http.MethodGet: byAddress, http.MethodPatch: s.api(s.updateUser), http.MethodDelete: s.api(s.deactivateUser)})
	for _, prefix := range []string{"/api/v1", "/json"} {
		mux.Handle(prefix+"/users/{user}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if key := r.PathValue("user"); isUserID(key) && r.Method != http.MethodHead {
				r.SetPathValue("user_id", key)
				byID.ServeHTTP(w, r)
				return
			}
			byAddress.ServeHTTP(w, r)
		}))
	}
	// GET, PATCH and DELETE /api/v1/messages/{message_id}: one pattern,
	// which answers 405 itself (method patterns would conflict with the
	// 405 pattern of /api/v1/messages/flags).
	s.patterns = append(s.patterns, "GET /api/v1/messages/{message_id}", "PATCH /api/v1/messages/{message_id}", "DELETE /api/v1/messages/{message_id}")
	for _, prefix := range []string{"/api/v1", "/json"} {
		mux.Handle(prefix+"/messages/{message_id}", byMethod(map[string]http.Handler{
			http.MethodGet: s.api(s.getMessage), http.MethodPatch: s.api(s.updateMessage), http.MethodDelete: s.api(s.deleteMessage)}))
	}
	// PATCH /api/v1/user_groups/{user_group_id}: one pattern, which
	// answers 405 itself (a method pattern would conflict with the 405
	// pattern of /api/v1/user_groups/create).
	s.patterns = append(s.patterns, "PATCH /api/v1/user_groups/{user_group_id}")
	for _, prefix := range []string{"/api/v1", "/json"} {
		mux.Handle(prefix+"/user_groups/{user_group_id}", byMethod(map[string]http.Handler{http.MethodPatch: s.api(s.updateUserGroup, membersOnly)}))
	}
	// POST /api/v1/invites/multiuse and DELETE /api/v1/invites/{invite_id},
	// then DELETE /api/v1/invites/multiuse/{invite_id} and POST
	// /api/v1/invites/{invite_id}/resend: one pattern each pair, which
	// tells them apart and answers 405 itself (their own patterns would
	// conflict with each other's 405 patterns).
	s.patterns = append(s.patterns, "POST /api/v1/invites/multiuse", "DELETE /api/v1/invites/{invite_id}",
		"DELETE /api/v1/invites/multiuse/{invite_id}", "POST /api/v1/invites/{invite_id}/resend")
	newLink := byMethod(map[string]http.Handler{http.MethodPost: s.api(s.createInviteLink, membersOnly)})
	revoke := byMethod(map[string]http.Handler{http.MethodDelete: s.api(s.revokeInvite, membersOnly)})
	revokeLink := byMethod(map[string]http.Handler{http.MethodDelete: s.api(s.revokeInviteLink, membersOnly)})
	resend := byMethod(map[string]http.Handler{http.MethodPost: s.api(s.resendInvite, membersOnly)})
	inviteNotFound := s.notFound()
	for _, prefix := range []string{"/api/v1", "/json"} {
		mux.Handle(prefix+"/invites/{invite_id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.PathValue("invite_id") == "multiuse" {
				newLink.ServeHTTP(w, r)
			} else {
				revoke.ServeHTTP(w, r)
			}
		}))
		mux.Handle(prefix+"/invites/{first}/{second}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch first, second := r.PathValue("first"), r.PathValue("second"); {
			case first == "multiuse":
				r.SetPathValue("invite_id", second)
				revokeLink.ServeHTTP(w, r)
			case second == "resend":
				r.SetPathValue("invite_id", first)
				resend.ServeHTTP(w, r)
			default:
				inviteNotFound.ServeHTTP(w, r)
			}
		}))
	}
	// DELETE /api/v1/export/realm/{export_id} and GET
	// /api/v1/export/realm/consents: one pattern, which tells them apart
	// and answers 405 itself (their own would conflict with each other's
	// 405 pattern).
	s.patterns = append(s.patterns, "DELETE /api/v1/export/realm/{export_id}", "GET /api/v1/export/realm/consents")
	exportItem := byMethod(map[string]http.Handler{http.MethodDelete: s.api(s.deleteRealmExport, adminsOnly)})
	exportConsents := onlyGET(s.api(s.exportConsents, adminsOnly))
	for _, prefix := range []string{"/api/v1", "/json"} {
		mux.Handle(prefix+"/export/realm/{export_id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.PathValue("export_id") == "consents" {
				exportConsents.ServeHTTP(w, r)
				return
			}
			exportItem.ServeHTTP(w, r)
		}))
	}
	// POST /api/v1/users/me/X and GET /api/v1/users/{user}/X: one pattern
	// each, for the same reason, that serves "me" with POST and anyone
	// else with GET.
	for _, r := range []struct {
		suffix      string
		own, others http.Handler
	}{
		{"presence", s.api(s.updatePresence, humansOnly), s.api(s.userPresence)},
		{"status", s.api(s.setStatus, humansOnly), s.api(s.userStatus)},
	} {
		s.patterns = append(s.patterns, "POST /api/v1/users/me/"+r.suffix, "GET /api/v1/users/{user}/"+r.suffix)
		for _, prefix := range []string{"/api/v1", "/json"} {
			mux.Handle(prefix+"/users/{user}/"+r.suffix, meOrOthers(r.own, r.others))
		}
	}
	// GET /api/v1/users/me/{stream_id}/topics, POST and DELETE
	// /api/v1/users/me/muted_users/{muted_user_id} and GET
	// /api/v1/users/{user_id}/subscriptions/{stream_id}: one pattern,
	// which tells them apart (their own patterns would conflict: neither
	// is more specific) and answers 405 itself.
	s.patterns = append(s.patterns, "GET /api/v1/users/me/{stream_id}/topics",
		"POST /api/v1/users/me/muted_users/{muted_user_id}", "DELETE /api/v1/users/me/muted_users/{muted_user_id}",
		"GET /api/v1/users/{user_id}/subscriptions/{stream_id}")
	topics := onlyGET(s.api(s.channelTopics))
	mutes := byMethod(map[string]http.Handler{http.MethodPost: s.api(s.muteUser), http.MethodDelete: s.api(s.unmuteUser)})
	subscriptionStatus := onlyGET(s.api(s.subscriptionStatus))
	notFound := s.notFound()
	for _, prefix := range []string{"/api/v1", "/json"} {
		mux.Handle(prefix+"/users/{user}/{first}/{second}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch user, first, second := r.PathValue("user"), r.PathValue("first"), r.PathValue("second"); {
			case user != "me" && first == "subscriptions":
				r.SetPathValue("user_id", user)
				r.SetPathValue("stream_id", second)
				subscriptionStatus.ServeHTTP(w, r)
			case user != "me":
				notFound.ServeHTTP(w, r)
			case first == "muted_users":
				r.SetPathValue("muted_user_id", second)
				mutes.ServeHTTP(w, r)
			case second == "topics":
				r.SetPathValue("stream_id", first)
				topics.ServeHTTP(w, r)
			default:
				notFound.ServeHTTP(w, r)
			}
		}))
	}
	// Files, outside /api/v1 as in Zulip: each pattern answers 405 itself
	// (the temporary URL's path is also an upload's path).
	// /user_avatars/{realm}/emoji/images/{file} and
	// /user_avatars/exports/{realm_id}/{token}/{file} (api_realm_export.go)
	// share one pattern, which tells them apart (theirs would conflict).
	s.patterns = append(s.patterns, "GET /user_uploads/{realm_id}/{path...}", "GET /user_uploads/temporary/{token}/{filename}", "GET /user_avatars/{realm}/{file}",
		"GET /user_avatars/{realm}/emoji/images/{file}", "GET /user_avatars/exports/{realm_id}/{token}/{file}")
	mux.Handle("/user_avatars/{realm}/{file}", onlyGET(s.serveAvatar()))
	emojiImages := s.serveEmoji()
	mux.Handle("/user_avatars/{realm}/{first}/{second}/{file}", onlyGET(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.PathValue("realm") == "exports":
			s.serveRealmExport(w, r)
		case r.PathValue("first") == "emoji" && r.PathValue("second") == "images":
			emojiImages.ServeHTTP(w, r)
		default:
			notFound.ServeHTTP(w, r)
		}
	})))
	mux.Handle("/user_uploads/{realm_id}/{path...}", onlyGET(s.serveUpload()))
	mux.Handle("/user_uploads/temporary/{token}/{filename}", onlyGET(s.serveTemporaryUpload()))
	mux.Handle("/", s.notFound())
	return s.withRequestLog(withCleanPath(mux))
}

// withCleanPath serves //api/v1/x as /api/v1/x instead of letting the mux
// redirect it: a redirected POST hangs zulip-js.
func withCleanPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; !isCleanPath(p) {
			clean := path.Clean("/" + p)
			if strings.HasPrefix(clean, "/join/") && strings.HasSuffix(p, "/") {
				clean += "/" // an invitation link's form, /join/KEY/ (signup.go)
			}
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

// onlyGET serves GET (and so HEAD) with h and answers 405 otherwise.
func onlyGET(h http.Handler) http.Handler {
	other := methodNotAllowed([]string{http.MethodGet})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			h.ServeHTTP(w, r)
			return
		}
		other.ServeHTTP(w, r)
	})
}

// meOrOthers serves /api/v1/users/me/X with POST (own) and
// /api/v1/users/{user}/X with GET (others), and answers 405 otherwise.
func meOrOthers(own, others http.Handler) http.Handler {
	notPOST := methodNotAllowed([]string{http.MethodPost})
	onlyOthers := onlyGET(others)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("user") != "me" {
			onlyOthers.ServeHTTP(w, r)
		} else if r.Method == http.MethodPost {
			own.ServeHTTP(w, r)
		} else {
			notPOST.ServeHTTP(w, r)
		}
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
	writer http.ResponseWriter // for a poll that parks (parking.go)
	user   user
	params *params
	// answered runs once the answer is written (or refused): what a
	// handler holds until its answer is out, such as a listing slot.
	answered []func()
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
		figures, err := s.store.figures()
		if err != nil {
			writeError(w, s.log, r, internalError(err))
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		s.metrics.write(w, figures)
	})
}

// roleCheck decides from the caller alone whether a route is open to them.
type roleCheck func(u user) error

// adminsOnly keeps a route to organisation owners and administrators.
func adminsOnly(u user) error {
	if !u.isAdmin() {
		return errNotAdmin
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
	return &apiRoute{s, h, checks}
}

// apiRoute is a route api serves: a type, not a closure, because routes
// inlines api, and a closure was compiled again at every call inlined
// (28 KB of code for the binary's size budget).
type apiRoute struct {
	s      *server
	h      apiHandler
	checks []roleCheck
}

func (a *apiRoute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, err := a.s.admit(w, r, a.checks...)
	if err != nil {
		writeError(w, a.s.log, r, err)
		return
	}
	a.s.serve(w, r, u, a.h)
}

// admit is SPEC §3's order for an authenticated request after the
// method: the client address's failed-authentication throttle,
// authentication, the account's rate limit, then the role checks.
func (s *server) admit(w http.ResponseWriter, r *http.Request, checks ...roleCheck) (user, error) {
	info := named(w, r)
	now := time.Now()
	addr := s.clientAddress(r)
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
	if !conns.Admitted(w, r, s.bodyWait) {
		return user{}, errClosedForRoom
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
	ar := &apiRequest{Request: r, writer: w, user: u, params: p}
	defer func() {
		for _, f := range ar.answered {
			f()
		}
	}()
	data, err := h(ar)
	if err == errParked { // its answer is written when its queue has events
		return
	}
	if err != nil {
		writeError(w, s.log, r, err)
		return
	}
	if err := writeSuccess(w, data, p.ignored()); err != nil {
		writeError(w, s.log, r, internalError(err))
	}
}

// takeListing waits for one of the listing slots (or for the request to
// go away), held until the answer is written.
func (s *server) takeListing(r *apiRequest) error {
	select {
	case s.listings <- struct{}{}:
		r.answered = append(r.answered, func() { <-s.listings })
		return nil
	case <-r.Context().Done():
		return r.Context().Err()
	}
}
