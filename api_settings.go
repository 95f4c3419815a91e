package main

// Personal settings: register's user_settings (and the legacy top-level
// copies), PATCH /api/v1/settings, and the events a change sends.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"
)

// settingGroup says where, besides user_settings, Zulip also answers a
// setting to clients that do not declare the user_settings_object
// capability (zerver/models/users.py display_settings_legacy and
// notification_settings_legacy).
type settingGroup int

const (
	settingModern             settingGroup = iota
	settingLegacyDisplay                   // update_display_settings
	settingLegacyNotification              // update_global_notifications
)

// userSetting is one of Zulip's personal settings (UserProfile.property_types
// at Zulip 11.0, feature level 421) with its default. Settings clients
// may change through PATCH /settings have changeable set; they are the
// ones whose whole effect lies with the client (display, and how a
// client notifies), so that zulite storing them honours them, and the
// pushes of followed topics, which zulite's pushes honour
// (push_recipients.go), send_read_receipts, which read receipts
// honour (store_read_receipts.go), and the topics sending follows or
// unmutes (store_user_topics.go's followOnSend). The rest describe
// server behaviour zulite does not have (e-mail, digests, drafts...):
// they are answered with Zulip's defaults
// and PATCH /settings reports them in ignored_parameters_unsupported.
type userSetting struct {
	name       string
	def        any // bool, int or string
	group      settingGroup
	changeable bool
	choices    []any // the values a changeable int or string setting may take; nil: any
}

// userSettingsTable is sorted by name: Zulip checks PATCH /settings
// parameters in that order and tells of changes in it.
var userSettingsTable = []userSetting{
	{name: "allow_private_data_export", def: false},
	{name: "automatically_follow_topics_policy", def: 3, changeable: true, choices: autoPolicyChoices},
	{name: "automatically_follow_topics_where_mentioned", def: true, changeable: true},
	{name: "automatically_unmute_topics_in_muted_streams_policy", def: 2, changeable: true, choices: autoPolicyChoices},
	{name: "color_scheme", def: 1, group: settingLegacyDisplay, changeable: true, choices: []any{1, 2, 3}},
	{name: "default_language", def: "en", group: settingLegacyDisplay},
	{name: "demote_inactive_streams", def: 1, group: settingLegacyDisplay, changeable: true, choices: []any{1, 2, 3}},
	{name: "desktop_icon_count_display", def: 1, group: settingLegacyNotification, changeable: true, choices: []any{1, 2, 3, 4}},
	{name: "display_emoji_reaction_users", def: true, changeable: true},
	{name: "email_address_visibility", def: 1},
	{name: "email_notifications_batching_period_seconds", def: 120, group: settingLegacyNotification},
	{name: "emojiset", def: "google", group: settingLegacyDisplay, changeable: true, choices: []any{"google", "twitter", "text", "google-blob"}},
	{name: "enable_desktop_notifications", def: true, group: settingLegacyNotification, changeable: true},
	{name: "enable_digest_emails", def: true, group: settingLegacyNotification},
	{name: "enable_drafts_synchronization", def: true, group: settingLegacyDisplay, changeable: true},
	{name: "enable_followed_topic_audible_notifications", def: true, changeable: true},
	{name: "enable_followed_topic_desktop_notifications", def: true, changeable: true},
	{name: "enable_followed_topic_email_notifications", def: true},
	{name: "enable_followed_topic_push_notifications", def: true, changeable: true},
	{name: "enable_followed_topic_wildcard_mentions_notify", def: true, changeable: true},
	{name: "enable_login_emails", def: true, group: settingLegacyNotification},
	{name: "enable_marketing_emails", def: true, group: settingLegacyNotification},
	{name: "enable_offline_email_notifications", def: true, group: settingLegacyNotification},
	{name: "enable_offline_push_notifications", def: true, group: settingLegacyNotification},
	{name: "enable_online_push_notifications", def: true, group: settingLegacyNotification},
	{name: "enable_sounds", def: true, group: settingLegacyNotification, changeable: true},
	{name: "enable_stream_audible_notifications", def: false, group: settingLegacyNotification, changeable: true},
	{name: "enable_stream_desktop_notifications", def: false, group: settingLegacyNotification, changeable: true},
	{name: "enable_stream_email_notifications", def: false, group: settingLegacyNotification},
	{name: "enable_stream_push_notifications", def: false, group: settingLegacyNotification},
	{name: "enter_sends", def: false, group: settingLegacyDisplay, changeable: true},
	{name: "fluid_layout_width", def: false, group: settingLegacyDisplay, changeable: true},
	{name: "hide_ai_features", def: false, changeable: true},
	{name: "high_contrast_mode", def: false, group: settingLegacyDisplay, changeable: true},
	{name: "left_side_userlist", def: false, group: settingLegacyDisplay, changeable: true},
	{name: "message_content_in_email_notifications", def: true, group: settingLegacyNotification},
	{name: "notification_sound", def: "zulip", group: settingLegacyNotification},
	{name: "pm_content_in_desktop_notifications", def: true, group: settingLegacyNotification, changeable: true},
	{name: "presence_enabled", def: true, group: settingLegacyNotification, changeable: true},
	{name: "realm_name_in_email_notifications_policy", def: 1, group: settingLegacyNotification},
	{name: "receives_typing_notifications", def: true, changeable: true},
	{name: "resolved_topic_notice_auto_read_policy", def: "except_followed"},
	{name: "send_private_typing_notifications", def: true, changeable: true},
	{name: "send_read_receipts", def: true, changeable: true},
	{name: "send_stream_typing_notifications", def: true, changeable: true},
	{name: "starred_message_counts", def: true, group: settingLegacyDisplay, changeable: true},
	{name: "translate_emoticons", def: false, group: settingLegacyDisplay, changeable: true},
	{name: "twenty_four_hour_time", def: false, group: settingLegacyDisplay, changeable: true},
	{name: "user_list_style", def: 3, changeable: true, choices: []any{1, 2, 3}},
	{name: "web_animate_image_previews", def: "on_hover", changeable: true, choices: []any{"always", "on_hover", "never"}},
	{name: "web_channel_default_view", def: 1, changeable: true, choices: []any{1, 2, 3, 4}},
	{name: "web_escape_navigates_to_home_view", def: true, changeable: true},
	{name: "web_font_size_px", def: 16},
	{name: "web_home_view", def: "inbox", group: settingLegacyDisplay, changeable: true, choices: []any{"recent_topics", "inbox", "all_messages"}},
	{name: "web_left_sidebar_show_channel_folders", def: true, changeable: true},
	{name: "web_left_sidebar_unreads_count_summary", def: true, changeable: true},
	{name: "web_line_height_percent", def: 140},
	{name: "web_mark_read_on_scroll_policy", def: 1, changeable: true, choices: []any{1, 2, 3}},
	{name: "web_navigate_to_sent_message", def: true, changeable: true},
	{name: "web_stream_unreads_count_display_policy", def: 2, changeable: true, choices: []any{1, 2, 3}},
	{name: "web_suggest_update_timezone", def: true, changeable: true},
	{name: "wildcard_mentions_notify", def: true, group: settingLegacyNotification},
}

// autoPolicyChoices is Zulip's
// AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_CHOICES (store_user_topics.go).
var autoPolicyChoices = []any{autoOnParticipation, autoOnSend, autoOnInitiation, autoNever}

// emojisetChoices is Zulip's UserProfile.emojiset_choices().
var emojisetChoices = []map[string]string{
	{"key": "google", "text": "Google"}, {"key": "twitter", "text": "Twitter"},
	{"key": "text", "text": "Plain text"}, {"key": "google-blob", "text": "Google blobs"},
}

// personalSettings is every setting's value for a user: the defaults
// overlaid with what they changed.
func personalSettings(overrides map[string]json.RawMessage) map[string]any {
	values := make(map[string]any, len(userSettingsTable))
	for _, s := range userSettingsTable {
		values[s.name] = s.def
		if raw, ok := overrides[s.name]; ok {
			var v any
			if json.Unmarshal(raw, &v) == nil {
				values[s.name] = v
			}
		}
	}
	return values
}

// userSettingsObject is register's user_settings: every setting, the
// choices the server offers, and the time zone (zulite keeps none, "").
// zulite serves no notification sounds, so it offers none.
func userSettingsObject(values map[string]any) map[string]any {
	o := make(map[string]any, len(values)+3)
	for name, v := range values {
		o[name] = v
	}
	o["emojiset_choices"] = emojisetChoices
	o["timezone"] = ""
	o["available_notification_sounds"] = []string{}
	return o
}

// addLegacySettings puts the legacy top-level copies of the settings into
// register's state, for clients without the user_settings_object
// capability, as Zulip's fetch_initial_state_data does for the
// update_display_settings and update_global_notifications types.
func addLegacySettings(state map[string]any, values map[string]any, display, notifications bool) {
	for _, s := range userSettingsTable {
		if (s.group == settingLegacyDisplay && display) || (s.group == settingLegacyNotification && notifications) {
			state[s.name] = values[s.name]
		}
	}
	if display {
		state["emojiset_choices"] = emojisetChoices
		state["timezone"] = ""
	}
	if notifications {
		state["available_notification_sounds"] = []string{}
	}
}

// updateSettings serves PATCH /api/v1/settings (humans only, as Zulip's
// human_users_only): every parameter is checked, in Zulip's order,
// before any is applied; a setting that keeps its value sends nothing.
//
// full_name, old_password and new_password are Zulip's
// json_change_settings (zerver/views/user_settings.py): the old password
// is checked as a login is (failures count against the account and the
// address), then the new one's strength, then the name (check_full_name,
// stripped); all are checked before any is applied. Zulip keeps the
// request's own session on a password change (update_session_auth_hash);
// zulite's setPassword ends every session and event queue of the
// account, the page's too, so the page logs in again with the new
// password. Zulip 11's user_settings.py is not in the stored copy of
// Zulip's source (only an older one is): the texts are those of that
// copy and of Zulip 11 as released ("New password is too weak!", the
// rate limit's).
func (s *server) updateSettings(r *apiRequest) (any, error) {
	var hash string
	if newPassword, ok := r.params.lookup("new_password"); ok {
		oldPassword, _ := r.params.lookup("old_password")
		if _, err := s.passwordLogin(r.Request, r.user.Email, oldPassword); err != nil {
			return nil, wrongPassword(err)
		}
		if utf8.RuneCountInString(newPassword) < minPasswordLength {
			return nil, errNewPasswordTooWeak
		}
		var err error
		if hash, err = s.passwords.hash(r.Context(), newPassword); err != nil {
			if errors.Is(err, errHasherBusy) {
				return nil, rateLimited(time.Second)
			}
			return nil, err
		}
	}
	var rename string
	if name, ok := r.params.lookup("full_name"); ok && name != r.user.FullName {
		// Zulip's check_change_full_name: a blank name is refused.
		if _, err := checkFullName(name); err != nil {
			return nil, err
		}
		rename = name
	}
	changes, err := readSettingChanges(r.params)
	if err != nil {
		return nil, err
	}
	if hash != "" {
		if err := s.store.setPassword(r.user.Email, hash); err != nil {
			return nil, err
		}
	}
	if rename != "" {
		if err := s.store.editAccount(r.user, r.user.ID, accountEdit{FullName: rename}, true); err != nil {
			return nil, err
		}
	}
	if len(changes) == 0 {
		return nil, nil
	}
	return nil, s.store.updateUserSettings(r.user, changes)
}

// wrongPassword is how PATCH /settings answers an old password that does
// not log in: Zulip's "Wrong password!", or its own text for the rate
// limit of password attempts.
func wrongPassword(err error) error {
	var e *apiError
	switch {
	case errors.Is(err, errLoginFailed), errors.Is(err, errLoginDeactivated):
		return errWrongPassword
	case errors.As(err, &e) && e.status == http.StatusTooManyRequests:
		return badRequest(fmt.Sprintf("You're making too many attempts! Try again in %d seconds.", e.retryAfter))
	}
	return err
}

// readSettingChanges reads the changeable settings among the parameters,
// in the table's order, each checked before any is applied.
func readSettingChanges(p *params) ([]settingChange, error) {
	var changes []settingChange
	for _, setting := range userSettingsTable {
		if !setting.changeable {
			continue
		}
		raw, ok := p.lookup(setting.name)
		if !ok {
			continue
		}
		value, err := parseSetting(setting, raw)
		if err != nil {
			return nil, err
		}
		encoded, _ := json.Marshal(value)
		def, _ := json.Marshal(setting.def)
		changes = append(changes, settingChange{Name: setting.name, Value: encoded, Default: def})
	}
	return changes, nil
}

// parseSetting reads one setting's parameter as Zulip's typed_endpoint
// does: booleans and integers are JSON, strings are sent raw.
func parseSetting(setting userSetting, raw string) (any, error) {
	var value any
	switch setting.def.(type) {
	case bool:
		parsed, err := decodeJSON(setting.name, raw)
		if err != nil {
			return nil, err
		}
		b, ok := parsed.(bool)
		if !ok {
			return nil, errNotBoolean(setting.name)
		}
		value = b
	case int:
		n, err := parseInt(setting.name, raw)
		if err != nil {
			return nil, err
		}
		value = int(n)
	case string:
		value = raw
	}
	if setting.choices != nil && !slices.Contains(setting.choices, value) {
		return nil, errNotInPossibleValues(setting.name)
	}
	return value, nil
}

// publishUserSettings tells the user's queues of changed settings: a
// user_settings event each, and to queues of clients without the
// user_settings_object capability the legacy update_display_settings or
// update_global_notifications event too, as Zulip's do_change_user_setting.
func (s *server) publishUserSettings(c userSettingsChanged) {
	owned := ownedBy(c.User.ID)
	legacy := func(q *eventQueue) bool { return owned(q) && !q.userSettingsObject }
	for _, change := range c.Changes {
		var value any
		json.Unmarshal(change.Value, &value)
		e := event{"type": "user_settings", "op": "update", "property": change.Name, "value": value}
		s.events.publish("user_settings", owned, func(*eventQueue) event { return cloneEvent(e) })
		i := slices.IndexFunc(userSettingsTable, func(u userSetting) bool { return u.name == change.Name })
		switch userSettingsTable[i].group {
		case settingLegacyNotification:
			e := event{"type": "update_global_notifications", "user": c.User.Email, "notification_name": change.Name, "setting": value}
			s.events.publish("update_global_notifications", legacy, func(*eventQueue) event { return cloneEvent(e) })
		case settingLegacyDisplay:
			e := event{"type": "update_display_settings", "user": c.User.Email, "setting_name": change.Name, "setting": value}
			s.events.publish("update_display_settings", legacy, func(*eventQueue) event { return cloneEvent(e) })
		}
	}
}
