package main

// The state POST /register answers, grouped by the fetch type that asks
// for it, as Zulip's fetch_initial_state_data (zerver/lib/events.py,
// Zulip 11.0) groups it. Where zulite lacks a feature the state says so:
// an empty list, a setting that is off, a permission nobody has.

import (
	"net/url"
	"slices"
	"strconv"

	"zulite/internal/emoji"
)

// Limits and intervals register announces. The lengths are what zulite
// enforces (api_channels.go, api_messages.go); the rest are Zulip's
// settings (zproject/default_settings.py), which zulite keeps.
const (
	eventQueueLongpollTimeoutSeconds = 90 // clients wait this long for a poll; pollTimeout is shorter
	presencePingIntervalSeconds      = 60
	presenceOfflineThresholdSeconds  = 200
	typingStartedExpiryMilliseconds  = 45000
	typingStoppedWaitMilliseconds    = 12000
	typingStartedWaitMilliseconds    = 30000
	maxBulkNewSubscriptionMessages   = 100
	maxChannelFolderNameLength       = 60
	maxChannelFolderDescriptionLen   = 1024
	passwordMaxLength                = 100
	defaultMessageLimitSeconds       = 600    // Zulip's default edit and delete limits
	defaultMoveLimitSeconds          = 604800 // Zulip's default limit for moving messages
)

// clientCapabilities are the client_capabilities register reads
// (zerver/lib/events.py ClientCapabilities); unknown ones are ignored.
type clientCapabilities struct {
	notificationSettingsNull   bool
	bulkMessageDeletion        bool
	userAvatarURLFieldOptional bool
	streamTypingNotifications  bool
	userSettingsObject         bool
	linkifierURLTemplate       bool
	userListIncomplete         bool
	includeDeactivatedGroups   bool
	archivedChannels           bool
	emptyTopicName             bool
	simplifiedPresenceEvents   bool
}

// registerOptions are register's parameters, checked before a queue is made.
type registerOptions struct {
	eventTypes          []string // nil: every type
	fetchTypes          []string // nil: every type
	narrow              []narrowTerm
	applyMarkdown       bool
	clientGravatar      bool
	allPublic           bool
	includeSubscribers  bool // true, or "partial", which zulite answers in full
	slimPresence        bool
	presenceHistoryDays *int64 // presence_history_limit_days; nil: Zulip's two weeks
	capabilities        clientCapabilities
}

func (o registerOptions) want(fetchType string) bool {
	return o.fetchTypes == nil || slices.Contains(o.fetchTypes, fetchType)
}

// initialState builds the state for a registered queue.
func (s *server) initialState(u user, queueID string, o registerOptions) (map[string]any, error) {
	state := map[string]any{
		"queue_id":            queueID,
		"last_event_id":       -1,
		"zulip_version":       zulipVersion,
		"zulip_feature_level": zulipFeatureLevel,
		"zulip_merge_base":    zulipVersion,
	}
	want := o.want
	var users []user // shared: never modified
	var usersVersion uint64
	if want("realm_user") || want("realm_user_groups") || want("realm") {
		var err error
		if users, usersVersion, err = s.store.usersAt(); err != nil {
			return nil, err
		}
	}
	if want("alert_words") {
		if err := s.addAlertWordsState(state, u); err != nil { // api_mutes.go
			return nil, err
		}
	}
	if want("custom_profile_fields") {
		fields, err := s.store.profileFields() // api_profile_fields.go
		if err != nil {
			return nil, err
		}
		state["custom_profile_fields"] = fields
		state["custom_profile_field_types"] = customProfileFieldTypes
	}
	if want("onboarding_steps") {
		state["onboarding_steps"] = []struct{}{}
		state["navigation_tour_video_url"] = nil
	}
	if want("message") {
		maxID, err := s.store.maxMessageID()
		if err != nil {
			return nil, err
		}
		state["max_message_id"] = int64(maxID)
		if maxID == 0 {
			state["max_message_id"] = -1
		}
	}
	for _, empty := range []struct{ fetchType, key string }{
		{"navigation_views", "navigation_views"},
		{"realm_domains", "realm_domains"}, {"realm_filters", "realm_filters"}, // realm_filters: always empty, as Zulip's since feature level 176
		{"realm_bot", "realm_bots"}, {"realm_embedded_bots", "realm_embedded_bots"},
		{"realm_incoming_webhook_bots", "realm_incoming_webhook_bots"},
		{"channel_folders", "channel_folders"},
		{"default_stream_groups", "realm_default_stream_groups"}, {"stop_words", "stop_words"},
	} {
		if want(empty.fetchType) {
			state[empty.key] = []struct{}{}
		}
	}
	if want("default_streams") {
		ids := []uint64{} // guests are told of none, as in Zulip
		if u.Role != roleGuest {
			var err error
			if ids, err = s.store.defaultChannels(); err != nil { // store_channel_admin.go
				return nil, err
			}
		}
		state["realm_default_streams"] = ids
	}
	if err := s.addScheduledState(state, u, want); err != nil { // api_scheduled_messages.go
		return nil, err
	}
	if err := s.addDraftsState(state, u, want); err != nil { // api_drafts.go
		return nil, err
	}
	if want("muted_users") { // api_mutes.go
		if err := s.addMutedUsersState(state, u); err != nil {
			return nil, err
		}
	}
	if want("recent_private_conversations") {
		recent, err := s.store.recentConversations(u.ID) // store_dms.go
		if err != nil {
			return nil, err
		}
		state["recent_private_conversations"] = recent
	}
	if err := s.addUserTopicState(state, u, o); err != nil { // api_user_topics.go
		return nil, err
	}
	if want("presence") {
		if err := s.addPresenceState(state, o); err != nil {
			return nil, err
		}
	}
	if want("realm_user_groups") {
		// The user groups are part of the key: a write of groups counts
		// up users_version too, and the directory's own version names
		// the groups it holds.
		d, deactivated := s.store.groups(), o.capabilities.includeDeactivatedGroups
		name := "realm_user_groups:" + strconv.FormatUint(d.version, 10) + ":" + strconv.FormatBool(deactivated)
		groups, err := s.sharedUsers.get(usersVersion, name, func() any { return newRealmUserGroups(users, d, deactivated) })
		if err != nil {
			return nil, err
		}
		state["realm_user_groups"] = groups
	}
	if want("realm") {
		s.addRealmState(state, users)
	}
	if want("realm_user_settings_defaults") {
		defaults, err := s.realmUserSettingsDefaults() // api_people.go
		if err != nil {
			return nil, err
		}
		state["realm_user_settings_defaults"] = defaults
	}
	if want("realm_emoji") {
		state["realm_emoji"] = emojiMap(s.store.customEmoji()) // api_realm_emoji.go
	}
	s.addLinkifierState(state, o, want) // api_linkifiers.go
	if want("realm_billing") {
		state["realm_billing"] = map[string]bool{"has_pending_sponsorship_request": false}
	}
	if want("realm_user") {
		if err := s.addRealmUserState(state, u, users, usersVersion, o); err != nil {
			return nil, err
		}
	}
	// The subscriptions, the channels never subscribed to and the
	// streams, in one reading of the channels (their subscribers
	// counted once for all three).
	var subs []subscribedChannel
	var channels [][]channelView // the never subscribed's candidates, the streams
	if want("subscription") || want("stream") {
		var err error
		subs, channels, err = s.store.subscriptionsAndChannels(u, o.includeSubscribers, // store_channels.go
			channelFilter{Public: true, All: u.isAdmin(), Archived: o.capabilities.archivedChannels, Subscribers: o.includeSubscribers},
			channelFilter{Public: true, Subscribed: true, All: u.isAdmin(), Archived: o.capabilities.archivedChannels})
		if err != nil {
			return nil, err
		}
	}
	if want("subscription") {
		if err := s.addSubscriptionState(state, u, o, subs, channels[0]); err != nil {
			return nil, err
		}
	}
	if want("update_message_flags") && want("message") { // Zulip needs both for unread_msgs
		unread, err := s.store.unreadSummary(u.ID, maxUnreadMessages)
		if err != nil {
			return nil, err
		}
		msgs := newUnreadMsgs(unread, o.capabilities.emptyTopicName)
		addUnreadDirect(&msgs, unread.Direct, u.ID) // dms.go
		// What the user muted is listed but not counted (store_user_topics.go).
		muted, err := s.store.mutedUnread(u.ID, unread.Topics)
		if err != nil {
			return nil, err
		}
		msgs.Count -= muted
		var ids []uint64
		for _, t := range unread.Topics {
			ids = append(ids, t.IDs...)
		}
		for _, c := range unread.Direct {
			ids = append(ids, c.IDs...)
		}
		slices.Sort(ids)
		if msgs.Mentions, err = s.store.unreadMentions(u.ID, ids); err != nil {
			return nil, err
		}
		state["unread_msgs"] = msgs
	}
	if want("starred_messages") {
		ids, err := s.store.starredMessageIDs(u.ID)
		if err != nil {
			return nil, err
		}
		state["starred_messages"] = nonNilIDs(ids)
	}
	if want("stream") {
		streams := make([]streamObject, 0, len(channels[1]))
		for _, ch := range channels[1] {
			streams = append(streams, newStreamObject(ch))
		}
		state["streams"] = streams
	}
	legacyDisplay := want("update_display_settings") && !o.capabilities.userSettingsObject
	legacyNotifications := want("update_global_notifications") && !o.capabilities.userSettingsObject
	if legacyDisplay || legacyNotifications || want("user_settings") {
		overrides, err := s.store.userSettings(u.ID)
		if err != nil {
			return nil, err
		}
		values := personalSettings(overrides)
		addLegacySettings(state, values, legacyDisplay, legacyNotifications)
		if want("user_settings") {
			state["user_settings"] = userSettingsObject(values)
		}
	}
	if want("user_status") {
		if err := s.addUserStatusState(state); err != nil {
			return nil, err
		}
	}
	if want("video_calls") {
		state["has_zoom_token"] = false
	}
	if want("giphy") {
		state["giphy_api_key"] = ""
	}
	if want("push_device") {
		state["push_devices"] = map[string]any{}
	}
	return state, nil
}

// customProfileFieldTypes is Zulip's custom_profile_field_types: the
// types of field an administrator may define (api_profile_fields.go).
var customProfileFieldTypes = map[string]map[string]any{
	"SHORT_TEXT":       {"id": 1, "name": "Text (short)"},
	"LONG_TEXT":        {"id": 2, "name": "Text (long)"},
	"SELECT":           {"id": 3, "name": "List of options"},
	"DATE":             {"id": 4, "name": "Date"},
	"URL":              {"id": 5, "name": "Link"},
	"USER":             {"id": 6, "name": "Users"},
	"EXTERNAL_ACCOUNT": {"id": 7, "name": "External account"},
	"PRONOUNS":         {"id": 8, "name": "Pronouns"},
}

// registerUser is a user object as register lists it: Zulip drops
// is_active there (the list it is in says it), and with client_gravatar
// a gravatar avatar_url is null, for the client to compute.
type registerUser struct {
	userObject
	IsActive *bool `json:"is_active,omitempty"`
}

func newRegisterUser(u user, clientGravatar bool) registerUser {
	o := registerUser{userObject: newUserObject(u)}
	if clientGravatar && u.Avatar == "" {
		o.AvatarURL = nil
	}
	return o
}

// addRealmUserState adds the realm_user fetch type: every user (users,
// as they are at usersVersion), and the caller as Zulip describes them
// at the top level.
func (s *server) addRealmUserState(state map[string]any, u user, users []user, usersVersion uint64, o registerOptions) error {
	for _, list := range []struct {
		key    string
		active bool
	}{{"realm_users", true}, {"realm_non_active_users", false}} {
		name := list.key
		if o.clientGravatar {
			name += " client_gravatar"
		}
		encoded, err := s.sharedUsers.get(usersVersion, name, func() any {
			listed := []registerUser{}
			for _, other := range users {
				if other.Active == list.active {
					listed = append(listed, newRegisterUser(other, o.clientGravatar))
				}
			}
			return listed
		})
		if err != nil {
			return err
		}
		state[list.key] = encoded
	}
	state["cross_realm_bots"] = []registerUser{} // zulite has no system bots
	avatarState(state, u)
	canCreatePrivate := s.store.allowed(u, realmCanCreatePrivateChannelGroup)
	canCreatePublic := s.store.allowed(u, realmCanCreatePublicChannelGroup)
	canCreateWebPublic := s.store.allowed(u, realmCanCreateWebPublicChannelGroup)
	state["can_create_private_streams"] = canCreatePrivate
	state["can_create_public_streams"] = canCreatePublic
	state["can_create_web_public_streams"] = canCreateWebPublic
	state["can_create_streams"] = canCreatePrivate || canCreatePublic || canCreateWebPublic
	state["can_invite_others_to_realm"] = s.store.allowed(u, realmCanInviteUsersGroup)
	state["is_admin"] = u.isAdmin()
	state["is_owner"] = u.Role == roleOwner
	state["is_moderator"] = u.Role <= roleModerator // administrators too, since feature level 380
	state["is_guest"] = u.Role == roleGuest
	state["user_id"] = u.ID
	state["email"] = u.Email
	state["delivery_email"] = u.Email
	state["full_name"] = u.FullName
	return nil
}

// addSubscriptionState adds the subscription fetch type, of the user's
// subscriptions and the channels they may see. zulite forgets a
// subscription when it ends, so unsubscribed is empty; never_subscribed
// holds the other channels the user may see. Clients without the
// notification_settings_null capability get the user's defaults instead
// of null notification settings, as Zulip's post_process_state gives them.
func (s *server) addSubscriptionState(state map[string]any, u user, o registerOptions, subs []subscribedChannel, visible []channelView) error {
	var defaults map[string]any
	if !o.capabilities.notificationSettingsNull {
		overrides, err := s.store.userSettings(u.ID)
		if err != nil {
			return err
		}
		defaults = personalSettings(overrides)
	}
	subscribed := make([]subscriptionObject, 0, len(subs))
	for _, sub := range subs {
		if sub.Archived && !o.capabilities.archivedChannels {
			continue
		}
		so := newSubscriptionObject(sub)
		if o.includeSubscribers {
			so.Subscribers = append([]uint64{}, sub.Subscribers...)
		}
		if defaults != nil {
			for _, n := range []struct {
				field   **bool
				setting string
			}{
				{&so.DesktopNotifications, "enable_stream_desktop_notifications"},
				{&so.AudibleNotifications, "enable_stream_audible_notifications"},
				{&so.PushNotifications, "enable_stream_push_notifications"},
				{&so.EmailNotifications, "enable_stream_email_notifications"},
			} {
				if *n.field == nil {
					v, _ := defaults[n.setting].(bool)
					*n.field = &v
				}
			}
		}
		subscribed = append(subscribed, so)
	}
	// A channel never subscribed to lists its subscribers too when asked,
	// as Zulip's gather_subscriptions_helper does.
	type neverSubscribed struct {
		streamObject
		Subscribers *[]uint64 `json:"subscribers,omitempty"` // [] when it has none
	}
	never := []neverSubscribed{}
	for _, ch := range visible {
		if !slices.ContainsFunc(subs, func(sc subscribedChannel) bool { return sc.ID == ch.ID }) {
			n := neverSubscribed{streamObject: newStreamObject(ch)}
			if o.includeSubscribers {
				ids := nonNilIDs(ch.Subscribers)
				n.Subscribers = &ids
			}
			never = append(never, n)
		}
	}
	state["subscriptions"], state["unsubscribed"], state["never_subscribed"] = subscribed, []subscriptionObject{}, never
	return nil
}

// maxUnreadMessages is how many unread ids register answers at most, as
// Zulip's; beyond it old_unreads_missing is true.
const maxUnreadMessages = 50_000

type unreadMsgs struct {
	Count             int                `json:"count"`
	PMs               []unreadDMState    `json:"pms"`
	Streams           []unreadTopicState `json:"streams"`
	Huddles           []unreadGroupState `json:"huddles"`
	Mentions          []uint64           `json:"mentions"`
	OldUnreadsMissing bool               `json:"old_unreads_missing"`
}

type unreadTopicState struct {
	StreamID         uint64   `json:"stream_id"`
	Topic            string   `json:"topic"`
	UnreadMessageIDs []uint64 `json:"unread_message_ids"`
}

// unreadDMState and unreadGroupState are the shapes of pms and huddles
// (dms.go fills them). sender_id is the deprecated name of
// other_user_id, which Zulip still sends.
type unreadDMState struct {
	OtherUserID      uint64   `json:"other_user_id"`
	SenderID         uint64   `json:"sender_id"`
	UnreadMessageIDs []uint64 `json:"unread_message_ids"`
}

type unreadGroupState struct {
	UserIDsString    string   `json:"user_ids_string"`
	UnreadMessageIDs []uint64 `json:"unread_message_ids"`
}

// newUnreadMsgs is unread_msgs; a client without the empty_topic_name
// capability is shown the empty topic under realm_empty_topic_display_name.
func newUnreadMsgs(summary unreadSummary, emptyTopicName bool) unreadMsgs {
	out := unreadMsgs{PMs: []unreadDMState{}, Streams: []unreadTopicState{}, Huddles: []unreadGroupState{}, Mentions: []uint64{}, OldUnreadsMissing: summary.Truncated}
	for _, t := range unreadTopicsShown(summary.Topics, emptyTopicName) {
		out.Streams = append(out.Streams, unreadTopicState{t.ChannelID, t.Topic, t.IDs})
		out.Count += len(t.IDs)
	}
	return out
}

// realmIconURL is the organization's icon, as server_settings gives it.
func (s *server) realmIconURL() string {
	return s.baseURL + "/static/images/logo/zulip-icon-128x128.png"
}

// uploadQuotaMiB is realm_upload_quota_mib: Zulip's organisation quota,
// which is zulite's --upload-total-mib; nil when there is none.
func (s *server) uploadQuotaMiB() any {
	if s.uploads.quota.total == 0 {
		return nil
	}
	return s.uploads.quota.total >> 20
}

// emojiDataPath serves server_emoji_data_url.
const emojiDataPath = "/static/generated/emoji/emoji_api.json"

// addRealmState adds the realm fetch type: the organization's settings
// and the server's, as zulite has them.
func (s *server) addRealmState(state map[string]any, users []user) {
	realm := map[string]any{
		// Realm.property_types, at zulite's values.
		"allow_message_editing":                          true,
		"avatar_changes_disabled":                        false,
		"default_code_block_language":                    "",
		"default_language":                               "en",
		"description":                                    "",
		"digest_emails_enabled":                          false, // nor send e-mail
		"digest_weekday":                                 1,
		"disallow_disposable_email_addresses":            true,
		"email_changes_disabled":                         true, // nor change e-mail addresses,
		"emails_restricted_to_domains":                   false,
		"enable_guest_user_dm_warning":                   true,
		"enable_guest_user_indicator":                    true,
		"enable_read_receipts":                           realmReadReceipts,
		"enable_spectator_access":                        false,
		"giphy_rating":                                   0, // GIPHY disabled
		"inline_image_preview":                           false,
		"inline_url_embed_preview":                       false,
		"invite_required":                                true,
		"jitsi_server_url":                               nil,
		"message_content_allowed_in_email_notifications": true,
		"message_content_edit_limit_seconds":             defaultMessageLimitSeconds,
		"message_content_delete_limit_seconds":           defaultMessageLimitSeconds,
		"message_edit_history_visibility_policy":         messageEditHistoryVisibility,
		"move_messages_between_streams_limit_seconds":    defaultMoveLimitSeconds,
		"move_messages_within_stream_limit_seconds":      defaultMoveLimitSeconds,
		"message_retention_days":                         -1, // messages are kept forever
		"name":                                           s.realmName,
		"name_changes_disabled":                          false, // PATCH settings takes full_name
		"push_notifications_enabled":                     s.pusher != nil,
		"require_e2ee_push_notifications":                false,
		"require_unique_names":                           false,
		"send_welcome_emails":                            false,
		"topics_policy":                                  "allow_empty_topic",
		"video_chat_provider":                            0, // none
		"waiting_period_threshold":                       0,
		"want_advertise_in_communities_directory":        false,
		"welcome_message_custom_text":                    "",
		// Settings Zulip adds by hand.
		"allow_edit_history":             true,
		"mandatory_topics":               false,
		"presence_disabled":              false,
		"upload_quota_mib":               s.uploadQuotaMiB(),
		"icon_url":                       s.realmIconURL(),
		"icon_source":                    "G",
		"logo_url":                       s.baseURL + "/static/images/logo/zulip-org-logo.svg?version=0",
		"logo_source":                    "D",
		"night_logo_url":                 s.baseURL + "/static/images/logo/zulip-org-logo.svg?version=0",
		"night_logo_source":              "D",
		"url":                            s.baseURL,
		"uri":                            s.baseURL,
		"bot_domain":                     realmHost(s.baseURL),
		"available_video_chat_providers": map[string]any{"disabled": map[string]any{"name": "None", "id": 0}},
		"email_auth_enabled":             true,
		"password_auth_enabled":          true,
		"authentication_methods":         map[string]any{"Email": map[string]bool{"enabled": true, "available": true}},
		"is_zephyr_mirror_realm":         false,
		"org_type":                       0,
		"plan_type":                      1, // self-hosted
		"push_notifications_enabled_end_timestamp": nil,
		"default_external_accounts":                defaultExternalAccounts, // api_profile_fields.go
		"moderation_request_channel_id":            -1,
		"new_stream_announcements_stream_id":       -1,
		"signup_announcements_stream_id":           -1,
		"zulip_update_announcements_stream_id":     -1,
		"date_created":                             realmCreated(users),
		"empty_topic_display_name":                 emptyTopicDisplayName,
		"create_public_stream_policy":              legacyPolicy(realmCanCreatePublicChannelGroup, s.store.realmGroup(realmCanCreatePublicChannelGroup)),
		"create_private_stream_policy":             legacyPolicy(realmCanCreatePrivateChannelGroup, s.store.realmGroup(realmCanCreatePrivateChannelGroup)),
		"create_web_public_stream_policy":          legacyPolicy(realmCanCreateWebPublicChannelGroup, s.store.realmGroup(realmCanCreateWebPublicChannelGroup)),
		"wildcard_mention_policy":                  legacyPolicy(realmCanMentionManyUsersGroup, s.store.realmGroup(realmCanMentionManyUsersGroup)),
	}
	for name, v := range realm {
		state["realm_"+name] = v
	}
	for p := range realmPermissionCount {
		state["realm_"+p.name()] = s.store.realmGroup(p)
	}
	server := map[string]any{
		"max_avatar_file_size_mib":                         5,
		"max_file_upload_size_mib":                         s.uploads.maxMiB,
		"max_icon_file_size_mib":                           5,
		"max_logo_file_size_mib":                           5,
		"settings_send_digest_emails":                      false,
		"server_generation":                                s.started.Unix(),
		"development_environment":                          false,
		"zulip_plan_is_not_limited":                        true,
		"upgrade_text_for_wide_organization_logo":          "Available on Zulip Cloud Standard. Upgrade to access.",
		"password_min_length":                              minPasswordLength,
		"password_max_length":                              passwordMaxLength,
		"password_min_guesses":                             0, // zulite asks a minimum length only
		"server_inline_image_preview":                      false,
		"server_inline_url_embed_preview":                  false,
		"server_thumbnail_formats":                         []struct{}{},
		"server_avatar_changes_disabled":                   false,
		"server_name_changes_disabled":                     false,
		"server_web_public_streams_enabled":                false,
		"giphy_rating_options":                             giphyRatingOptions,
		"server_emoji_data_url":                            s.baseURL + emojiDataPath,
		"server_needs_upgrade":                             false,
		"event_queue_longpoll_timeout_seconds":             eventQueueLongpollTimeoutSeconds,
		"server_jitsi_server_url":                          nil,
		"jitsi_server_url":                                 nil,
		"server_can_summarize_topics":                      false,
		"max_stream_name_length":                           maxChannelNameLength,
		"max_stream_description_length":                    maxChannelDescriptionLength,
		"max_bulk_new_subscription_messages":               maxBulkNewSubscriptionMessages,
		"max_topic_length":                                 maxTopicLength,
		"max_message_length":                               maxMessageLength,
		"max_channel_folder_name_length":                   maxChannelFolderNameLength,
		"max_channel_folder_description_length":            maxChannelFolderDescriptionLen,
		"max_reminder_note_length":                         maxReminderNoteLength,
		"server_presence_ping_interval_seconds":            presencePingIntervalSeconds,
		"server_presence_offline_threshold_seconds":        presenceOfflineThresholdSeconds,
		"server_typing_started_expiry_period_milliseconds": typingStartedExpiryMilliseconds,
		"server_typing_stopped_wait_period_milliseconds":   typingStoppedWaitMilliseconds,
		"server_typing_started_wait_period_milliseconds":   typingStartedWaitMilliseconds,
		"server_supported_permission_settings":             supportedPermissionSettings(),
		"server_min_deactivated_realm_deletion_days":       14,
		"server_max_deactivated_realm_deletion_days":       nil,
	}
	for name, v := range server {
		state[name] = v
	}
}

// realmHost is the host of the server's URL, which Zulip's bot e-mail
// domain is made of.
func realmHost(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// realmCreated is when the organization began: when its first account
// was made (zulite keeps no date of its own).
func realmCreated(users []user) int64 {
	var first int64
	for _, u := range users {
		if first == 0 || u.Joined < first {
			first = u.Joined
		}
	}
	return first
}

// giphyRatingOptions is Zulip's Realm.GIPHY_RATING_OPTIONS.
var giphyRatingOptions = map[string]map[string]any{
	"disabled": {"name": "GIPHY integration disabled", "id": 0},
	"y":        {"name": "Allow GIFs rated Y (Very young audience)", "id": 1},
	"g":        {"name": "Allow GIFs rated G (General audience)", "id": 2},
	"pg":       {"name": "Allow GIFs rated PG (Parental guidance)", "id": 3},
	"pg-13":    {"name": "Allow GIFs rated PG-13 (Parental guidance - under 13)", "id": 4},
	"r":        {"name": "Allow GIFs rated R (Restricted)", "id": 5},
}

// emojiData serves server_emoji_data_url (emojiDataPath) without
// authentication: the table of Unicode emoji codes and their names
// (canonical name first) that clients fetch once (zulip-flutter's
// ServerEmojiData), Zulip's emoji_api.json from the same table the
// renderer and reactions use (internal/emoji). The envelope's result and msg
// ride along; clients read code_to_names only.
func (s *server) emojiData(r *apiRequest) (any, error) {
	r.params.useAll()
	return struct {
		CodeToNames map[string][]string `json:"code_to_names"`
	}{emoji.CodeToNames()}, nil
}
