package main

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// flutterRegisterParams is exactly what zulip-flutter's registerQueue
// (lib/api/route/events.dart, zulip-flutter e989e4f6) sends: every value
// JSON-encoded, idle_queue_timeout a quoted string.
func flutterRegisterParams() url.Values {
	return url.Values{
		"idle_queue_timeout": {`"mobile"`},
		"apply_markdown":     {"true"},
		"client_gravatar":    {"false"},
		"slim_presence":      {"true"},
		"client_capabilities": {`{"notification_settings_null":true,"bulk_message_deletion":true,"user_avatar_url_field_optional":true,` +
			`"stream_typing_notifications":true,"user_settings_object":true,"include_deactivated_groups":true,"empty_topic_name":true,"individual_emoji_changes":true}`},
	}
}

// terminalRegisterParams is what zulip-terminal's _register_desired_events
// (zulipterminal/model.py, zulip-terminal 97007b4b) sends through the
// Python bindings, which add narrow=[].
func terminalRegisterParams() url.Values {
	return url.Values{
		"event_types": {`["message","update_message","reaction","submessage","subscription","typing","update_message_flags","user_settings","realm_emoji","realm_user"]`},
		"fetch_event_types": {`["realm","presence","subscription","message","starred_messages","update_message_flags","muted_topics",` +
			`"realm_user","realm_user_groups","user_settings","realm_emoji","custom_profile_fields","zulip_version"]`},
		"client_gravatar":     {"true"},
		"apply_markdown":      {"true"},
		"include_subscribers": {"true"},
		"narrow":              {"[]"},
	}
}

// jsonKind tells whether a decoded JSON value has a kind: "string",
// "int", "bool", "list", "object", "url" (an absolute URL), "int?" (an
// integer or null), "gsv" (a group-setting value: a group id or
// {direct_members, direct_subgroups}).
func jsonKind(v any, kind string) bool {
	switch kind {
	case "string":
		_, ok := v.(string)
		return ok
	case "int":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "int?":
		return v == nil || jsonKind(v, "int")
	case "bool":
		_, ok := v.(bool)
		return ok
	case "list":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "url":
		s, ok := v.(string)
		u, err := url.Parse(s)
		return ok && err == nil && u.IsAbs()
	case "gsv":
		if jsonKind(v, "int") {
			return true
		}
		m, ok := v.(map[string]any)
		return ok && jsonKind(m["direct_members"], "list") && jsonKind(m["direct_subgroups"], "list")
	}
	panic("unknown kind " + kind)
}

// wantKeys checks that obj has every key with its kind.
func wantKeys(t *testing.T, where string, obj map[string]any, keys [][2]string) {
	t.Helper()
	for _, k := range keys {
		v, ok := obj[k[0]]
		if !ok {
			t.Errorf("%s: %s missing", where, k[0])
		} else if !jsonKind(v, k[1]) {
			t.Errorf("%s: %s is %v, want a %s", where, k[0], v, k[1])
		}
	}
}

// decodedIDs is a decoded JSON list of ids; nil when it is none.
func decodedIDs(v any) []uint64 {
	var out []uint64
	list, _ := v.([]any)
	for _, x := range list {
		f, _ := x.(float64)
		out = append(out, uint64(f))
	}
	return out
}

// object is a decoded JSON object, or an empty one.
func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func items(t *testing.T, v any) []map[string]any {
	t.Helper()
	list, _ := v.([]any)
	var out []map[string]any
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			t.Fatalf("list item %v is not an object", item)
		}
		out = append(out, m)
	}
	return out
}

// TestRegister_AppParametersGetEveryKeyTheAppRequires registers with the
// official app's exact parameters and checks the state against what
// zulip-flutter's InitialSnapshot.fromJson (lib/api/model/initial_snapshot.g.dart
// and model.g.dart, zulip-flutter e989e4f6; report 12 §C.5, §C.7, §C.12)
// casts without a default: a missing key or a wrong type there is a
// TypeError and an endless reload.
func TestRegister_AppParametersGetEveryKeyTheAppRequires(t *testing.T) {
	e := newTestEnv(t)
	starred := e.sendAs(t, e.bob, e.general, "lunch")
	if r := e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {fmt.Sprint("[", starred, "]")}, "op": {"add"}, "flag": {"starred"}}, &e.alice); r.status != 200 {
		t.Fatalf("star: %s", r.raw)
	}
	r := e.request(t, http.MethodPost, "/api/v1/register", flutterRegisterParams(), &e.alice)
	wantAPISuccess(t, r)

	// InitialSnapshot's required keys.
	wantKeys(t, "register", r.body, [][2]string{
		{"queue_id", "string"}, {"last_event_id", "int"}, {"zulip_feature_level", "int"}, {"zulip_version", "string"},
		{"zulip_merge_base", "string"}, {"alert_words", "list"}, {"custom_profile_fields", "list"},
		{"max_stream_name_length", "int"}, {"max_topic_length", "int"}, {"server_presence_ping_interval_seconds", "int"},
		{"server_presence_offline_threshold_seconds", "int"}, {"muted_users", "list"}, {"presences", "object"},
		{"realm_emoji", "object"}, {"realm_user_groups", "list"}, {"recent_private_conversations", "list"},
		{"subscriptions", "list"}, {"unread_msgs", "object"}, {"starred_messages", "list"}, {"streams", "list"},
		{"user_status", "object"}, {"user_settings", "object"}, {"user_topics", "list"},
		{"realm_wildcard_mention_policy", "int"}, {"realm_name", "string"}, {"realm_waiting_period_threshold", "int"},
		{"realm_allow_message_editing", "bool"}, {"realm_enable_read_receipts", "bool"}, {"realm_icon_url", "url"},
		{"realm_presence_disabled", "bool"}, {"realm_default_external_accounts", "object"},
		{"max_file_upload_size_mib", "int"}, {"server_emoji_data_url", "url"},
		{"event_queue_longpoll_timeout_seconds", "int"}, {"realm_users", "list"}, {"realm_non_active_users", "list"},
		{"cross_realm_bots", "list"},
	})
	// Keys the app reads with a fallback, which zulite sends anyway: both
	// topics settings (without either the app crashes), the empty topic's
	// name (a debug assert), and the delete permissions as group settings.
	wantKeys(t, "register", r.body, [][2]string{
		{"server_typing_started_expiry_period_milliseconds", "int"}, {"server_typing_stopped_wait_period_milliseconds", "int"},
		{"server_typing_started_wait_period_milliseconds", "int"}, {"saved_snippets", "list"}, {"channel_folders", "list"},
		{"realm_can_delete_any_message_group", "gsv"}, {"realm_can_delete_own_message_group", "gsv"},
		{"realm_topics_policy", "string"}, {"realm_mandatory_topics", "bool"},
		{"realm_message_content_delete_limit_seconds", "int?"}, {"realm_message_content_edit_limit_seconds", "int?"},
		{"server_thumbnail_formats", "list"}, {"realm_moderation_request_channel_id", "int"},
		{"realm_empty_topic_display_name", "string"},
	})
	if r.str("queue_id") == "" {
		t.Errorf("queue_id is empty: the app throws on a missing queue id")
	}
	if p := r.body["realm_wildcard_mention_policy"]; !slices.Contains([]any{1.0, 2.0, 3.0, 5.0, 6.0, 7.0}, p) {
		t.Errorf("realm_wildcard_mention_policy %v: the app accepts only 1, 2, 3, 5, 6, 7", p)
	}
	if p := r.body["realm_topics_policy"]; p != "allow_empty_topic" && p != "disable_empty_topic" {
		t.Errorf("realm_topics_policy %v", p)
	}
	if (r.body["realm_topics_policy"] == "disable_empty_topic") != (r.body["realm_mandatory_topics"] == true) {
		t.Errorf("realm_mandatory_topics %v contradicts realm_topics_policy %v", r.body["realm_mandatory_topics"], r.body["realm_topics_policy"])
	}
	if r.body["realm_empty_topic_display_name"] != "general chat" {
		t.Errorf("realm_empty_topic_display_name: got %v, want Zulip's \"general chat\"", r.body["realm_empty_topic_display_name"])
	}
	if p, ok := r.body["realm_delete_own_message_policy"]; ok && !slices.Contains([]any{1.0, 2.0, 3.0, 4.0, 5.0}, p) {
		t.Errorf("realm_delete_own_message_policy %v", p)
	}
	if r.body["realm_presence_disabled"] != false {
		t.Errorf("realm_presence_disabled: got %v; zulite serves presence, so the app should ping it", r.body["realm_presence_disabled"])
	}
	if timeout, _ := r.body["event_queue_longpoll_timeout_seconds"].(float64); time.Duration(timeout)*time.Second <= pollTimeout {
		t.Errorf("event_queue_longpoll_timeout_seconds %v: a heartbeat (every %v) must come before the app gives up", timeout, pollTimeout)
	}
	if got := r.body["ignored_parameters_unsupported"]; !jsonEqual(got, []any{"idle_queue_timeout"}) {
		t.Errorf("ignored_parameters_unsupported: got %v, want idle_queue_timeout alone (a Zulip 12 parameter)", got)
	}

	// Group settings name groups the state has.
	groupIDs := map[float64]bool{}
	for _, g := range items(t, r.body["realm_user_groups"]) {
		wantKeys(t, "realm_user_groups[]", g, [][2]string{{"id", "int"}, {"members", "list"}, {"direct_subgroup_ids", "list"},
			{"name", "string"}, {"description", "string"}, {"is_system_group", "bool"}, {"deactivated", "bool"}})
		id, _ := g["id"].(float64)
		groupIDs[id] = true
	}
	for key, v := range r.body {
		if regexp.MustCompile(`^realm_(can_.*_group|create_multiuse_invite_group|direct_message_.*_group|can_create_groups|can_manage_all_groups)$`).MatchString(key) {
			if id, ok := v.(float64); !ok || !groupIDs[id] {
				t.Errorf("%s is %v, not a group of realm_user_groups", key, v)
			}
		}
	}

	wantKeys(t, "user_settings", object(r.body["user_settings"]), [][2]string{
		{"twenty_four_hour_time", "bool"}, {"starred_message_counts", "bool"}, {"display_emoji_reaction_users", "bool"},
		{"emojiset", "string"}, {"presence_enabled", "bool"},
	})
	unread := object(r.body["unread_msgs"])
	wantKeys(t, "unread_msgs", unread, [][2]string{{"count", "int"}, {"pms", "list"}, {"streams", "list"}, {"huddles", "list"},
		{"mentions", "list"}, {"old_unreads_missing", "bool"}})
	for _, s := range items(t, unread["streams"]) {
		wantKeys(t, "unread_msgs.streams[]", s, [][2]string{{"topic", "string"}, {"stream_id", "int"}, {"unread_message_ids", "list"}})
	}
	if got := decodedIDs(r.body["starred_messages"]); !slices.Equal(got, []uint64{starred}) {
		t.Errorf("starred_messages: got %v, want [%d]", got, starred)
	}
	for key := range object(r.body["presences"]) {
		if _, err := strconv.Atoi(key); err != nil {
			t.Errorf("presences is keyed by %q; with slim_presence the app parses user ids", key)
		}
	}

	// Users (model.g.dart User.fromJson): the caller among them.
	self := false
	for _, u := range items(t, r.body["realm_users"]) {
		wantKeys(t, "realm_users[]", u, [][2]string{{"user_id", "int"}, {"email", "string"}, {"full_name", "string"},
			{"date_joined", "string"}, {"is_bot", "bool"}, {"role", "int"}, {"timezone", "string"}, {"avatar_version", "int"}})
		if _, err := time.Parse("2006-01-02T15:04Z07:00", fmt.Sprint(u["date_joined"])); err != nil { // Zulip's isoformat(timespec="minutes")
			t.Errorf("date_joined %v is not ISO 8601 to the minute: %v", u["date_joined"], err)
		}
		if u["is_bot"] == false && !jsonKind(u["profile_data"], "object") {
			t.Errorf("realm_users[]: %v has no profile_data", u["email"])
		}
		self = self || u["user_id"] == float64(e.alice.ID)
	}
	if !self {
		t.Errorf("the caller is not in realm_users: the app shows an error and stops")
	}

	// Channels (model.g.dart ZulipStream and Subscription).
	streamKeys := [][2]string{{"stream_id", "int"}, {"name", "string"}, {"description", "string"}, {"rendered_description", "string"},
		{"date_created", "int"}, {"invite_only", "bool"}, {"is_web_public", "bool"}, {"history_public_to_subscribers", "bool"}}
	for _, s := range items(t, r.body["streams"]) {
		wantKeys(t, "streams[]", s, streamKeys)
	}
	for _, s := range items(t, r.body["subscriptions"]) {
		wantKeys(t, "subscriptions[]", s, append(streamKeys, [2]string{"pin_to_top", "bool"}, [2]string{"is_muted", "bool"}, [2]string{"color", "string"}))
		if !regexp.MustCompile(`^#[0-9a-f]{6}$`).MatchString(fmt.Sprint(s["color"])) {
			t.Errorf("subscription color %v is not lowercase #rrggbb", s["color"])
		}
		if p, ok := s["stream_post_policy"]; ok && !slices.Contains([]any{1.0, 2.0, 3.0, 4.0}, p) {
			t.Errorf("stream_post_policy %v", p)
		}
	}

	// server_emoji_data_url answers without credentials, with code_to_names.
	if emojiURL, err := url.Parse(r.str("server_emoji_data_url")); err != nil || !emojiURL.IsAbs() {
		t.Errorf("server_emoji_data_url %q", r.str("server_emoji_data_url"))
	} else if emoji := e.request(t, http.MethodGet, emojiURL.Path, nil, nil); emoji.status != 200 || !jsonKind(emoji.body["code_to_names"], "object") {
		t.Errorf("GET %s without credentials: got %d %s, want code_to_names", emojiURL.Path, emoji.status, emoji.raw)
	}
}

// TestRegister_SystemGroupsHoldUsersByRole checks realm_user_groups:
// Zulip's system groups, nested as Zulip nests them, each with the active
// users of its role as direct members.
func TestRegister_SystemGroupsHoldUsersByRole(t *testing.T) {
	e := newTestEnv(t)
	guest, _ := mustCreateUser(t, e.st, "guest@example.com", roleGuest, false)
	gone, _ := mustCreateUser(t, e.st, "gone@example.com", roleMember, false)
	if err := e.st.setActive(gone.Email, false); err != nil {
		t.Fatal(err)
	}
	r := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["realm_user_groups","realm"]`}})
	members := []uint64{e.alice.ID, e.bob.ID, e.bot.ID}
	want := []struct {
		id          float64
		name        string
		description string
		members     []uint64
		subgroups   []uint64
	}{
		{groupOwners, "role:owners", "Owners of this organization", []uint64{e.owner.ID}, nil},
		{groupAdministrators, "role:administrators", "Administrators of this organization, including owners", []uint64{e.admin.ID}, []uint64{groupOwners}},
		{groupModerators, "role:moderators", "Moderators of this organization, including administrators", nil, []uint64{groupAdministrators}},
		{groupFullMembers, "role:fullmembers", "Members of this organization, not including new accounts and guests", members, []uint64{groupModerators}},
		{groupMembers, "role:members", "Members of this organization, not including guests", members, []uint64{groupFullMembers}},
		{groupEveryone, "role:everyone", "Everyone in this organization, including guests", []uint64{guest.ID}, []uint64{groupMembers}},
		{groupInternet, "role:internet", "Everyone on the Internet", nil, []uint64{groupEveryone}},
		{groupNobody, "role:nobody", "Nobody", nil, nil},
	}
	groups := items(t, r.body["realm_user_groups"])
	if len(groups) != len(want) {
		t.Fatalf("realm_user_groups: got %d groups, want %d", len(groups), len(want))
	}
	for i, w := range want {
		g := groups[i]
		if g["id"] != w.id || g["name"] != w.name || g["description"] != w.description || g["is_system_group"] != true || g["deactivated"] != false {
			t.Errorf("group %d: got %v %v %q system %v deactivated %v, want %v %v %q", i, g["id"], g["name"], g["description"], g["is_system_group"], g["deactivated"], w.id, w.name, w.description)
		}
		if got := decodedIDs(g["members"]); !slices.Equal(got, w.members) {
			t.Errorf("%s members: got %v, want %v", w.name, got, w.members)
		}
		if got := decodedIDs(g["direct_subgroup_ids"]); !slices.Equal(got, w.subgroups) {
			t.Errorf("%s direct_subgroup_ids: got %v, want %v", w.name, got, w.subgroups)
		}
		for _, setting := range []string{"can_add_members_group", "can_join_group", "can_leave_group", "can_manage_group", "can_mention_group", "can_remove_members_group"} {
			if g[setting] != float64(groupNobody) {
				t.Errorf("%s %s: got %v, want role:nobody, as Zulip sets system groups", w.name, setting, g[setting])
			}
		}
	}
	// The permissions zulite has are held by Zulip's default groups; the
	// ones it lacks by nobody.
	for key, want := range map[string]float64{
		"realm_can_access_all_users_group": groupEveryone, "realm_can_create_public_channel_group": groupMembers,
		"realm_can_delete_own_message_group": groupEveryone, "realm_can_delete_any_message_group": groupAdministrators,
		"realm_direct_message_permission_group": groupEveryone, "realm_can_manage_billing_group": groupAdministrators,
	} {
		if r.body[key] != want {
			t.Errorf("%s: got %v, want %v", key, r.body[key], want)
		}
	}
}

// TestRegister_TerminalParametersGetWhatItReads registers as
// zulip-terminal does and checks the keys it reads without a default
// (report 12 §D.1): a KeyError there stops it at start-up.
func TestRegister_TerminalParametersGetWhatItReads(t *testing.T) {
	e := newTestEnv(t)
	lunch := e.sendAs(t, e.bob, e.general, "lunch")
	r := e.request(t, http.MethodPost, "/api/v1/register", terminalRegisterParams(), &e.alice) // urlencoded, as the Python bindings
	wantAPISuccess(t, r)
	if _, ok := r.body["ignored_parameters_unsupported"]; ok {
		t.Errorf("register ignored some of the terminal's parameters: %v", r.body["ignored_parameters_unsupported"])
	}
	wantKeys(t, "register", r.body, [][2]string{
		{"zulip_version", "string"}, {"max_message_id", "int"}, {"queue_id", "string"}, {"last_event_id", "int"},
		{"user_id", "int"}, {"email", "string"}, {"full_name", "string"}, {"realm_name", "string"},
		{"realm_message_retention_days", "int"}, {"realm_allow_message_editing", "bool"},
		{"realm_message_content_edit_limit_seconds", "int?"}, {"realm_allow_edit_history", "bool"},
		{"subscriptions", "list"}, {"muted_topics", "list"}, {"realm_user_groups", "list"}, {"unread_msgs", "object"},
		{"starred_messages", "list"}, {"realm_emoji", "object"}, {"custom_profile_fields", "list"}, {"presences", "object"},
		{"realm_users", "list"}, {"cross_realm_bots", "list"}, {"user_settings", "object"},
	})
	if r.body["user_id"] != float64(e.alice.ID) || r.str("email") != e.alice.Email || r.str("full_name") != e.alice.FullName {
		t.Errorf("self: got %v %v %v", r.body["user_id"], r.body["email"], r.body["full_name"])
	}
	if r.body["max_message_id"] != float64(lunch) {
		t.Errorf("max_message_id: got %v, want %d", r.body["max_message_id"], lunch)
	}
	if _, ok := r.body["user_topics"]; ok {
		t.Errorf("user_topics answered, which the terminal did not ask for")
	}
	for _, s := range items(t, r.body["subscriptions"]) {
		wantKeys(t, "subscriptions[]", s, [][2]string{{"stream_id", "int"}, {"name", "string"}, {"color", "string"},
			{"description", "string"}, {"pin_to_top", "bool"}, {"is_muted", "bool"}, {"invite_only", "bool"},
			{"message_retention_days", "int?"}, {"subscribers", "list"},
			// without notification_settings_null, booleans rather than null
			{"desktop_notifications", "bool"}, {"audible_notifications", "bool"}, {"push_notifications", "bool"}, {"email_notifications", "bool"}})
	}
	for _, g := range items(t, r.body["realm_user_groups"]) {
		wantKeys(t, "realm_user_groups[]", g, [][2]string{{"id", "int"}, {"name", "string"}})
	}
	unread := object(r.body["unread_msgs"])
	wantKeys(t, "unread_msgs", unread, [][2]string{{"mentions", "list"}, {"pms", "list"}, {"streams", "list"}, {"huddles", "list"}})
	for _, u := range items(t, r.body["realm_users"]) {
		wantKeys(t, "realm_users[]", u, [][2]string{{"user_id", "int"}, {"email", "string"}, {"full_name", "string"}, {"is_bot", "bool"}, {"role", "int"}})
		if u["avatar_url"] != nil {
			t.Errorf("with client_gravatar a gravatar avatar_url is null, for the client to compute; got %v", u["avatar_url"])
		}
	}
	wantKeys(t, "user_settings", object(r.body["user_settings"]), [][2]string{
		{"send_private_typing_notifications", "bool"}, {"twenty_four_hour_time", "bool"}, {"pm_content_in_desktop_notifications", "bool"},
	})

	// The Python bindings' own call_on_each_message: event_types and narrow.
	r = e.request(t, http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}, "narrow": {"[]"}}, &e.bot)
	wantAPISuccess(t, r)
	if r.body["max_message_id"] != float64(lunch) || r.body["realm_users"] != nil {
		t.Errorf("register for messages only: got max_message_id %v and realm_users %v", r.body["max_message_id"], r.body["realm_users"])
	}
}

// TestRegister_ParametersAsZulipReadsThem covers the parameters' forms
// and errors, in Zulip's words; a refused register makes no queue.
func TestRegister_ParametersAsZulipReadsThem(t *testing.T) {
	e := newTestEnv(t)
	subscribers := func(r response) any {
		for _, s := range items(t, r.body["subscriptions"]) {
			if s["name"] == "general" {
				return s["subscribers"]
			}
		}
		return "no general"
	}
	everyone := []any{float64(e.alice.ID), float64(e.bob.ID)}
	for _, c := range []struct {
		rule   string
		params url.Values
		want   any
	}{
		{"include_subscribers defaults to false", url.Values{}, nil},
		{"include_subscribers=true lists them", url.Values{"include_subscribers": {"true"}}, everyone},
		{`include_subscribers="partial" may list them all`, url.Values{"include_subscribers": {`"partial"`}}, everyone},
		{"include_subscribers=partial, unquoted, too", url.Values{"include_subscribers": {"partial"}}, everyone},
	} {
		c.params.Set("fetch_event_types", `["subscription"]`)
		r := e.registerQueue(t, &e.alice, c.params)
		if got := subscribers(r); !jsonEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.rule, got, c.want)
		}
	}
	// A channel never subscribed to lists its subscribers too, [] when
	// it has none, as Zulip's gather_subscriptions_helper does; the
	// administrator sees the private channel's too.
	mustCreateChannel(t, e.st, "quiet", false)
	neverSubscribers := func(r response) map[string]any {
		found := map[string]any{}
		for _, s := range items(t, r.body["never_subscribed"]) {
			found[s["name"].(string)] = s["subscribers"]
		}
		return found
	}
	for _, c := range []struct {
		rule   string
		who    *account
		params url.Values
		want   map[string]any
	}{
		{"never_subscribed lists subscribers with include_subscribers", &e.bob, url.Values{"include_subscribers": {"true"}},
			map[string]any{"quiet": []any{}}},
		{"never_subscribed lists none without it", &e.bob, url.Values{}, map[string]any{"quiet": nil}},
		{"an administrator's never_subscribed lists a private channel's", &e.admin, url.Values{"include_subscribers": {"true"}},
			map[string]any{"general": everyone, "secret": []any{float64(e.alice.ID)}, "quiet": []any{}}},
	} {
		c.params.Set("fetch_event_types", `["subscription"]`)
		if got := neverSubscribers(e.registerQueue(t, c.who, c.params)); !jsonEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.rule, got, c.want)
		}
	}
	before := len(e.server.events.queues)
	for _, c := range []struct {
		rule   string
		params url.Values
		msg    string
	}{
		{"include_subscribers is a boolean or partial", url.Values{"include_subscribers": {`"all"`}}, "include_subscribers is not a boolean"},
		{"a capability is a boolean", url.Values{"client_capabilities": {`{"user_settings_object":"yes"}`}}, `client_capabilities["user_settings_object"] is not a boolean`},
		{"client_capabilities is a dict", url.Values{"client_capabilities": {`[]`}}, "client_capabilities is not a dict"},
		{"slim_presence is a boolean", url.Values{"slim_presence": {"1"}}, "slim_presence is not a boolean"},
		{"presence_history_limit_days is an integer", url.Values{"presence_history_limit_days": {"a week"}}, "presence_history_limit_days is not valid JSON"},
	} {
		r := e.request(t, http.MethodPost, "/api/v1/register", c.params, &e.alice)
		wantAPIError(t, r, 400, "BAD_REQUEST", c.msg)
	}
	guest, key := mustCreateUser(t, e.st, "guest@example.com", roleGuest, false)
	r := e.request(t, http.MethodPost, "/api/v1/register", url.Values{"all_public_streams": {"true"}}, &account{guest, key})
	wantAPIError(t, r, 400, "BAD_REQUEST", "User not authorized for this query")
	if after := len(e.server.events.queues); after != before {
		t.Errorf("refused registers made %d queues", after-before)
	}
}

// TestRegister_LegacySettingsForClientsWithoutTheSettingsObject checks
// the top-level copies of the display and notification settings, which
// Zulip answers only to clients without user_settings_object.
func TestRegister_LegacySettingsForClientsWithoutTheSettingsObject(t *testing.T) {
	e := newTestEnv(t)
	fetch := `["update_display_settings","update_global_notifications","user_settings"]`
	r := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {fetch}})
	for key, want := range map[string]any{"twenty_four_hour_time": false, "emojiset": "google", "timezone": "",
		"pm_content_in_desktop_notifications": true, "presence_enabled": true, "notification_sound": "zulip"} {
		if got, ok := r.body[key]; !ok || got != want {
			t.Errorf("legacy %s: got %v (present %v), want %v", key, got, ok, want)
		}
	}
	wantKeys(t, "register", r.body, [][2]string{{"emojiset_choices", "list"}, {"available_notification_sounds", "list"}, {"user_settings", "object"}})
	if _, ok := r.body["display_emoji_reaction_users"]; ok {
		t.Errorf("a setting newer than the legacy lists answered at the top level")
	}
	r = e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {fetch}, "client_capabilities": {`{"notification_settings_null":false,"user_settings_object":true}`}})
	for _, key := range []string{"twenty_four_hour_time", "emojiset", "pm_content_in_desktop_notifications"} {
		if _, ok := r.body[key]; ok {
			t.Errorf("%s at the top level for a client with user_settings_object", key)
		}
	}
}

func TestEmojiData_ServesZulipsNames(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodGet, "/static/generated/emoji/emoji_api.json", nil, nil)
	wantAPISuccess(t, r)
	names := r.body["code_to_names"].(map[string]any)
	for code, want := range map[string][]any{
		"1f642":            {"smile"},
		"1f44d":            {"+1", "thumbs_up", "like"},
		"1f937-200d-2640":  {"woman_shrugging"},
		"1f441-200d-1f5e8": {"eye_in_speech_bubble", "speech", "witness"},
	} {
		if !jsonEqual(names[code], want) {
			t.Errorf("code_to_names[%s]: got %v, want %v", code, names[code], want)
		}
	}
	if len(names) != 1847 {
		t.Errorf("code_to_names holds %d emoji, want Zulip's 1847", len(names))
	}
}
