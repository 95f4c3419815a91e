package main

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// TestIsolation_NoRouteLetsBobSeeOrTouchAlicesThings walks every route
// the router has, as bob, against alice's push tokens, her private
// channel and its messages, and her event queue. A route without a case
// here fails the test, so a new route cannot be forgotten.
func TestIsolation_NoRouteLetsBobSeeOrTouchAlicesThings(t *testing.T) {
	e := newTestEnv(t)
	const secretText = "the secret plan"
	for _, tok := range []pushToken{{Kind: pushAPNs, Token: "aa11bb22"}, {Kind: pushFCM, Token: "alice-fcm-token"}} {
		if err := e.st.addPushToken(e.alice.ID, tok); err != nil {
			t.Fatal(err)
		}
	}
	secretMsg, err := e.st.sendMessage(e.alice.user, channelRef{ID: e.secret.ID}, "plans", secretText, "")
	if err != nil {
		t.Fatal(err)
	}
	smile := "smile"
	if err := e.st.addReaction(e.alice.user, secretMsg.ID, reactionRequest{Name: &smile}); err != nil {
		t.Fatal(err)
	}
	e.sendAs(t, e.bob, e.general, "t") // something unread for alice
	aliceQueue := e.registerQueue(t, &e.alice, nil).str("queue_id")
	secretID := strconv.FormatUint(e.secret.ID, 10)
	generalID := strconv.FormatUint(e.general.ID, 10)
	msgID := strconv.FormatUint(secretMsg.ID, 10)
	plan := e.mustUpload(t, &e.alice, "plan.txt", secretText) // linked in the private channel only
	e.sendText(t, e.alice, e.secret, "[plan]("+plan+")")
	planRecords, _, err := e.st.ownAttachments(e.alice.user)
	if err != nil || len(planRecords) != 1 {
		t.Fatalf("alice's attachments: %v %v", planRecords, err)
	}
	planID := strconv.FormatUint(planRecords[0].ID, 10)
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/status", url.Values{"status_text": {"hers"}}, &e.alice))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.secret, "plans", policyFollowed))
	draftIDs, err := e.st.createDrafts(e.alice.user, []draftInput{{Type: "stream", To: []int64{int64(e.secret.ID)}, Topic: "plans", Content: secretText}})
	if err != nil {
		t.Fatal(err)
	}
	draftPath := "/api/v1/drafts/" + strconv.FormatUint(draftIDs[0], 10)
	snippetID, err := e.st.createSnippet(e.alice.user, "plans", secretText)
	if err != nil {
		t.Fatal(err)
	}
	snippetPath := "/api/v1/saved_snippets/" + strconv.FormatUint(snippetID, 10)
	scheduledID, err := e.st.createScheduled(e.alice.user, storedScheduled{Type: "stream", ChannelID: e.secret.ID, Topic: "plans", Content: secretText,
		Rendered: "<p>" + secretText + "</p>", Due: e.st.now().Unix() + 3600})
	if err != nil {
		t.Fatal(err)
	}
	herScheduled := scheduledPath(scheduledID)
	herReminder := reminderPath(e.remindAt(t, &e.alice, secretMsg.ID, e.st.now().Unix()+3600, secretText))
	later := strconv.FormatInt(e.st.now().Unix()+7200, 10)
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["plans"]`}}, &e.alice))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/muted_users/"+strconv.FormatUint(e.owner.ID, 10), nil, &e.alice))
	// Alice's user group, which she manages alone (Zulip's defaults).
	herGroup := e.createGroup(t, &e.alice, "alices", []uint64{e.alice.ID}, nil)
	herGroupPath := "/api/v1/user_groups/" + strconv.Itoa(herGroup)
	// Her custom emoji; the administrators' linkifier and playground.
	wantAPISuccess(t, e.upload(t, &e.alice, "/api/v1/realm/emoji/hers", uploadPart{"f", "h.png", "image/png", pngOf(t, 8, 8)}))
	linkifierID := strconv.FormatUint(mustID(t, e.request(t, "POST", "/api/v1/realm/filters", url.Values{"pattern": {`#(?P<id>\d+)`}, "url_template": {"https://x.test/{id}"}}, &e.admin)), 10)
	playgroundID := strconv.FormatUint(mustID(t, e.request(t, "POST", "/api/v1/realm/playgrounds", url.Values{"name": {"Py"}, "pygments_language": {"python"}, "url_template": {"https://py.test/?c={code}"}}, &e.admin)), 10)
	// Alice's e-mail invitation to her private channel, and an
	// administrator's reusable link: bob may neither see nor touch them.
	e.server.mailer = offlineMailer() // so that bob's invitations are refused for what they ask, not for want of a relay
	herInvites, _, err := e.st.createInvites(inviteRequest{Caller: e.alice.user, Emails: []string{"friend@example.com"}, As: roleMember,
		Channels: []int64{int64(e.secret.ID)}, ChannelRefusal: errInviteChannel})
	if err != nil || len(herInvites) != 1 {
		t.Fatalf("alice's invitation: %v %v", herInvites, err)
	}
	herInvite := strconv.FormatUint(herInvites[0].ID, 10)
	links, _, err := e.st.createInvites(inviteRequest{Caller: e.admin.user, Multiuse: true, As: roleMember, ChannelRefusal: errInviteChannel})
	if err != nil {
		t.Fatal(err)
	}
	adminLink := strconv.FormatUint(links[0].ID, 10)
	// A direct-message conversation bob is not in, unread for alice, sent
	// while bob listens.
	// A custom profile field alice filled in, set up by an administrator.
	field := e.request(t, "POST", "/api/v1/realm/profile_fields", url.Values{"name": {"Plans"}, "field_type": {"1"}}, &e.admin)
	fieldID := strconv.Itoa(int(field.body["id"].(float64)))
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/users/me/profile_data", url.Values{"data": {`[{"id":` + fieldID + `,"value":"hers"}]`}}, &e.alice))
	herPath := "/api/v1/users/" + strconv.FormatUint(e.alice.ID, 10)
	bobQueue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	dmID := strconv.FormatUint(e.sendDM(t, &e.owner, jsonIDs(e.alice.ID), secretText), 10)
	// The administrators' data export, made (issue 33, item 6).
	exportID := mustID(t, e.request(t, "POST", "/api/v1/export/realm", nil, &e.admin))
	exportURL, _ := e.waitForExport(t, exportID)["export_url"].(string)
	exportPath := strings.TrimPrefix(exportURL, "http://zulite.test")
	exportToken := strings.Split(exportPath, "/")[4]

	aliceState := func() string {
		tokens := mustPushTokens(t, e.st, e.alice.ID)
		subs, err := e.st.subscriptions(e.alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		unreadGeneral := mustUnread(t, e.st, e.alice.user, e.general)
		unreadSecret := mustUnread(t, e.st, e.alice.user, e.secret)
		e.server.events.mu.Lock()
		_, queued := e.server.events.queues[aliceQueue]
		e.server.events.mu.Unlock()
		users, err := e.st.users()
		if err != nil {
			t.Fatal(err)
		}
		settings, err := e.st.userSettings(e.alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		status, err := e.st.statusOf(e.alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		me, err := e.st.userByID(e.alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		var reactions []storedReaction
		var unread []uint64
		e.st.view(func(tx *bbolt.Tx) error {
			reactions = reactionsOf(tx, secretMsg.ID)
			unread, _ = allUnreadIDs(tx, e.alice.ID) // her direct messages too
			return nil
		})
		topics, err := e.st.userTopics(e.alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		drafts, err1 := e.st.drafts(e.alice.ID, false)
		snippets, err2 := e.st.savedSnippets(e.alice.ID)
		words, err3 := e.st.alertWords(e.alice.ID)
		mutes, err4 := e.st.mutedUsers(e.alice.ID)
		attachments, _, err5 := e.st.ownAttachments(e.alice.user)
		scheduled, err6 := e.st.scheduledMessages(e.alice.ID)
		reminders, err7 := e.st.reminders(e.alice.ID)
		channels, err8 := e.st.channels()
		invites, err9 := e.st.invites(e.admin.user) // hers and the administrator's
		if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8, err9); err != nil {
			t.Fatal(err)
		}
		group, _ := e.st.groups().group(herGroup)
		fields := e.request(t, "GET", "/api/v1/realm/profile_fields", nil, &e.alice).raw
		var defaults string
		e.st.view(func(tx *bbolt.Tx) error {
			defaults = string(tx.Bucket(bucketMeta).Get([]byte("realm_user_defaults")))
			return nil
		})
		return fmt.Sprint(tokens, len(subs), unreadGeneral, unreadSecret, e.starred(t, e.alice), queued, len(users), settings, status, plainJSON(me), reactions, unread, topics,
			drafts, snippets, words, mutes, attachments, plainJSON(scheduled), plainJSON(reminders), plainJSON(channels),
			e.st.customEmoji(), linkifiersJSON(e.st.allLinkifiers()), e.st.allPlaygrounds(), invites, fields, defaults,
			plainJSON(group), len(e.st.groups().groups), plainJSON(mustRealmExports(t, e.st)))
	}

	type attempt struct {
		method, path string
		params       url.Values
	}
	// Attempts on these routes aim only at alice's things: each must fail.
	refused := map[string]bool{}
	for _, r := range []string{"GET /api/v1/events", "DELETE /api/v1/events", "POST /api/v1/users", "POST /api/v1/fetch_api_key",
		"DELETE /api/v1/users/me/apns_device_token", "DELETE /api/v1/users/me/android_gcm_reg_id", "POST /api/v1/users/me/subscriptions",
		"GET /api/v1/get_stream_id", "POST /api/v1/messages", "GET /metrics", "GET /metrics", "POST /api/v1/messages/flags", "POST /api/v1/mark_stream_as_read", "POST /api/v1/mark_topic_as_read",
		"POST /api/v1/users/me/subscriptions/properties", "GET /api/v1/users/me/{stream_id}/topics", "GET /api/v1/streams/{stream_id}",
		"PATCH /api/v1/users/me/subscriptions", "GET /api/v1/users/{user_id}/subscriptions/{stream_id}",
		"POST /api/v1/typing", "GET /api/v1/user_uploads/{realm_id}/{path...}", "GET /user_uploads/{realm_id}/{path...}",
		"GET /user_uploads/temporary/{token}/{filename}", "GET /user_avatars/{realm}/{file}", "POST /api/v1/users/me/avatar",
		"POST /api/v1/realm/emoji/{emoji_name}", "DELETE /api/v1/realm/emoji/{emoji_name}", "GET /user_avatars/{realm}/emoji/images/{file}",
		"PATCH /api/v1/realm/linkifiers", "POST /api/v1/realm/filters", "PATCH /api/v1/realm/filters/{filter_id}", "DELETE /api/v1/realm/filters/{filter_id}",
		"POST /api/v1/realm/playgrounds", "DELETE /api/v1/realm/playgrounds/{playground_id}",
		"POST /api/v1/messages/{message_id}/reactions", "DELETE /api/v1/messages/{message_id}/reactions",
		"PATCH /api/v1/messages/{message_id}", "DELETE /api/v1/messages/{message_id}", "GET /api/v1/messages/{message_id}/history", "GET /api/v1/messages/{message_id}",
		"POST /api/v1/submessage", "POST /api/v1/user_groups/create", "PATCH /api/v1/user_groups/{user_group_id}", "POST /api/v1/user_groups/{user_group_id}/deactivate", "POST /api/v1/user_groups/{user_group_id}/members", "POST /api/v1/user_groups/{user_group_id}/subgroups", "PATCH /api/v1/drafts/{draft_id}", "DELETE /api/v1/drafts/{draft_id}",
		"PATCH /api/v1/saved_snippets/{saved_snippet_id}", "DELETE /api/v1/saved_snippets/{saved_snippet_id}",
		"GET /api/v1/messages/{message_id}/read_receipts", "POST /api/v1/messages/{message_id}/typing",
		"DELETE /api/v1/attachments/{attachment_id}", "POST /api/v1/mobile_push/test_notification",
		"PATCH /api/v1/scheduled_messages/{scheduled_message_id}", "DELETE /api/v1/scheduled_messages/{scheduled_message_id}",
		"POST /api/v1/reminders", "DELETE /api/v1/reminders/{reminder_id}",
		"PATCH /api/v1/streams/{stream_id}", "DELETE /api/v1/streams/{stream_id}", "POST /api/v1/streams/{stream_id}/delete_topic",
		"GET /api/v1/streams/{stream_id}/members", "POST /api/v1/default_streams", "DELETE /api/v1/default_streams",
		"POST /api/v1/invites", "POST /api/v1/invites/multiuse", "DELETE /api/v1/invites/{invite_id}",
		"DELETE /api/v1/invites/multiuse/{invite_id}", "POST /api/v1/invites/{invite_id}/resend",
		"PATCH /api/v1/users/{user_id}", "DELETE /api/v1/users/{user_id}", "POST /api/v1/users/{user_id}/reactivate",
		"POST /api/v1/realm/profile_fields", "PATCH /api/v1/realm/profile_fields", "PATCH /api/v1/realm/profile_fields/{field_id}",
		"DELETE /api/v1/realm/profile_fields/{field_id}", "PATCH /api/v1/realm/user_settings_defaults",
		"POST /api/v1/export/realm", "GET /api/v1/export/realm", "DELETE /api/v1/export/realm/{export_id}", "GET /user_avatars/exports/{realm_id}/{token}/{file}", "GET /api/v1/export/realm/consents"} {
		refused[r] = true
	}
	cases := map[string][]attempt{
		"PATCH /api/v1/realm":                            {{"PATCH", "/api/v1/realm", url.Values{"can_create_public_channel_group": {`{"new":8}`}}}},
		"GET /health":                                    {{"GET", "/health", nil}},
		"GET /{$}":                                       {}, // the same page for everyone, not JSON (web_test.go)
		"GET /web/{file}":                                {{"GET", "/web/nope.js", nil}},
		"POST /accounts/login":                           {{"POST", "/accounts/login", url.Values{"username": {"alice@example.com"}, "password": {"wrong-password"}}}},
		"GET /accounts/session":                          {{"GET", "/accounts/session", nil}},
		"POST /accounts/logout":                          {{"POST", "/accounts/logout", nil}},
		"GET /metrics":                                   {{"GET", "/metrics", nil}},
		"GET /api/v1/server_settings":                    {{"GET", "/api/v1/server_settings", nil}},
		"POST /api/v1/fetch_api_key":                     {{"POST", "/api/v1/fetch_api_key", url.Values{"username": {e.alice.Email}, "password": {"not hers"}}}},
		"POST /api/v1/register":                          {{"POST", "/api/v1/register", nil}, {"POST", "/api/v1/register", url.Values{"fetch_event_types": {`["recent_private_conversations","message","update_message_flags"]`}}}},
		"GET /api/v1/events":                             {{"GET", "/api/v1/events", url.Values{"queue_id": {aliceQueue}, "dont_block": {"true"}}}},
		"DELETE /api/v1/events":                          {{"DELETE", "/api/v1/events", url.Values{"queue_id": {aliceQueue}}}},
		"GET /api/v1/users":                              {{"GET", "/api/v1/users", nil}},
		"POST /api/v1/users":                             {{"POST", "/api/v1/users", url.Values{"email": {"new@example.com"}, "password": {"password-1"}, "full_name": {"N"}}}},
		"GET /api/v1/users/me":                           {{"GET", "/api/v1/users/me", nil}},
		"POST /api/v1/users/me/apns_device_token":        {{"POST", "/api/v1/users/me/apns_device_token", url.Values{"token": {"cc33dd44"}}}},
		"DELETE /api/v1/users/me/apns_device_token":      {{"DELETE", "/api/v1/users/me/apns_device_token", url.Values{"token": {"aa11bb22"}}}},
		"POST /api/v1/users/me/android_gcm_reg_id":       {{"POST", "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"bob-fcm-token"}}}},
		"DELETE /api/v1/users/me/android_gcm_reg_id":     {{"DELETE", "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"alice-fcm-token"}}}},
		"GET /api/v1/users/me/subscriptions":             {{"GET", "/api/v1/users/me/subscriptions", url.Values{"include_subscribers": {"true"}}}},
		"POST /api/v1/users/me/subscriptions":            {{"POST", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"secret"}]`}}}, {"POST", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"secret"}]`}, "principals": {"[" + strconv.FormatUint(e.alice.ID, 10) + "]"}}}},
		"DELETE /api/v1/users/me/subscriptions":          {{"DELETE", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["secret","general"]`}}}, {"DELETE", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["secret","general"]`}, "principals": {`["` + e.alice.Email + `"]`}}}},
		"POST /api/v1/users/me/subscriptions/properties": {{"POST", "/api/v1/users/me/subscriptions/properties", url.Values{"subscription_data": {`[{"stream_id":` + secretID + `,"property":"pin_to_top","value":true}]`}}}},
		"GET /api/v1/users/me/{stream_id}/topics":        {{"GET", "/api/v1/users/me/" + secretID + "/topics", nil}},
		"GET /api/v1/streams":                            {{"GET", "/api/v1/streams", url.Values{"include_all_active": {"true"}}}, {"GET", "/api/v1/streams", nil}, {"GET", "/api/v1/streams", url.Values{"include_can_access_content": {"true"}}}},
		"GET /api/v1/streams/{stream_id}":                {{"GET", "/api/v1/streams/" + secretID, nil}},
		"GET /api/v1/get_stream_id":                      {{"GET", "/api/v1/get_stream_id", url.Values{"stream": {"secret"}}}},
		"POST /api/v1/messages":                          {{"POST", "/api/v1/messages", url.Values{"type": {"stream"}, "to": {secretID}, "topic": {"plans"}, "content": {"let me in"}}}},
		"GET /api/v1/messages": {{"GET", "/api/v1/messages", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"}, "narrow": {`[["channel","secret"]]`}}}, {"GET", "/api/v1/messages", url.Values{"anchor": {msgID}, "num_before": {"5"}, "num_after": {"5"}, "narrow": {`[["with","` + msgID + `"]]`}}}, {"GET", "/api/v1/messages", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"}, "narrow": {`[["search","secret"]]`}}},
			// her direct messages, by every narrow that could name them
			{"GET", "/api/v1/messages", url.Values{"anchor": {dmID}, "num_before": {"5"}, "num_after": {"5"}}},
			{"GET", "/api/v1/messages", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"}, "narrow": {`[["id","` + dmID + `"]]`}}},
			{"GET", "/api/v1/messages", url.Values{"anchor": {dmID}, "num_before": {"5"}, "num_after": {"5"}, "narrow": {`[["with","` + dmID + `"]]`}}},
			{"GET", "/api/v1/messages", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"}, "narrow": {`[{"operator":"dm","operand":[` + strconv.FormatUint(e.alice.ID, 10) + `,` + strconv.FormatUint(e.owner.ID, 10) + `]}]`}}},
			{"GET", "/api/v1/messages", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"}, "narrow": {`[{"operator":"dm-including","operand":` + strconv.FormatUint(e.alice.ID, 10) + `}]`}}},
			{"GET", "/api/v1/messages", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"}, "narrow": {`[["is","dm"],["search","secret"]]`}}}},
		"POST /api/v1/messages/flags":                    {{"POST", "/api/v1/messages/flags", url.Values{"messages": {"[" + msgID + "]"}, "op": {"add"}, "flag": {"starred"}}}, {"POST", "/api/v1/messages/flags", url.Values{"messages": {"[" + dmID + "]"}, "op": {"add"}, "flag": {"read"}}}},
		"POST /api/v1/messages/flags/narrow":             {{"POST", "/api/v1/messages/flags/narrow", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"}, "narrow": {`[["channel","` + secretID + `"]]`}, "op": {"add"}, "flag": {"read"}}}, {"POST", "/api/v1/messages/flags/narrow", url.Values{"anchor": {dmID}, "num_before": {"5"}, "num_after": {"5"}, "narrow": {`[["is","dm"]]`}, "op": {"add"}, "flag": {"read"}}}},
		"POST /api/v1/messages/{message_id}/reactions":   {{"POST", "/api/v1/messages/" + msgID + "/reactions", url.Values{"emoji_name": {"octopus"}}}, {"POST", "/api/v1/messages/" + dmID + "/reactions", url.Values{"emoji_name": {"octopus"}}}},
		"DELETE /api/v1/messages/{message_id}/reactions": {{"DELETE", "/api/v1/messages/" + msgID + "/reactions", url.Values{"emoji_name": {"smile"}}}},
		"PATCH /api/v1/messages/{message_id}": {{"PATCH", "/api/v1/messages/" + msgID, url.Values{"content": {"mine now"}}}, {"PATCH", "/api/v1/messages/" + msgID, url.Values{"topic": {"moved"}, "propagate_mode": {"change_all"}}}, {"PATCH", "/api/v1/messages/" + msgID, url.Values{"stream_id": {strconv.FormatUint(e.general.ID, 10)}}},
			{"PATCH", "/api/v1/messages/" + dmID, url.Values{"content": {"mine now"}}}, {"PATCH", "/api/v1/messages/" + dmID, url.Values{"topic": {"moved"}}}},
		"DELETE /api/v1/messages/{message_id}":           {{"DELETE", "/api/v1/messages/" + msgID, nil}, {"DELETE", "/api/v1/messages/" + dmID, nil}},
		"GET /api/v1/messages/{message_id}/history":      {{"GET", "/api/v1/messages/" + msgID + "/history", nil}, {"GET", "/api/v1/messages/" + dmID + "/history", nil}},
		"GET /api/v1/messages/{message_id}":              {{"GET", "/api/v1/messages/" + msgID, nil}, {"GET", "/api/v1/messages/" + dmID, nil}},
		"POST /api/v1/mark_stream_as_read":               {{"POST", "/api/v1/mark_stream_as_read", url.Values{"stream_id": {secretID}}}},
		"POST /api/v1/mark_topic_as_read":                {{"POST", "/api/v1/mark_topic_as_read", url.Values{"stream_id": {secretID}, "topic_name": {"plans"}}}},
		"POST /api/v1/mark_all_as_read":                  {{"POST", "/api/v1/mark_all_as_read", nil}},
		"GET /static/generated/emoji/emoji_api.json":     {{"GET", "/static/generated/emoji/emoji_api.json", nil}},
		"PATCH /api/v1/settings":                         {{"PATCH", "/api/v1/settings", url.Values{"emojiset": {"text"}, "twenty_four_hour_time": {"true"}}}},
		"GET /api/v1/realm/presence":                     {{"GET", "/api/v1/realm/presence", nil}},
		"POST /api/v1/users/me/presence":                 {{"POST", "/api/v1/users/me/presence", url.Values{"status": {"active"}}}},
		"GET /api/v1/users/{user}/presence":              {{"GET", "/api/v1/users/" + strconv.FormatUint(e.alice.ID, 10) + "/presence", nil}},
		"POST /api/v1/users/me/status":                   {{"POST", "/api/v1/users/me/status", url.Values{"status_text": {"bob's"}, "away": {"true"}}}},
		"GET /api/v1/users/{user}/status":                {{"GET", "/api/v1/users/" + strconv.FormatUint(e.alice.ID, 10) + "/status", nil}},
		"POST /api/v1/typing":                            {{"POST", "/api/v1/typing", url.Values{"op": {"start"}, "type": {"channel"}, "stream_id": {secretID}, "topic": {"plans"}}}},
		"POST /api/v1/user_uploads":                      {{"POST", "/api/v1/user_uploads", nil}},
		"GET /api/v1/user_uploads/{realm_id}/{path...}":  {{"GET", "/api/v1" + plan, nil}},
		"GET /user_uploads/{realm_id}/{path...}":         {{"GET", plan, nil}},
		"GET /user_uploads/temporary/{token}/{filename}": {{"GET", "/user_uploads/temporary/" + strings.Repeat("AB", 20) + "/plan.txt", nil}},
		"POST /api/v1/users/me/avatar":                   {{"POST", "/api/v1/users/me/avatar", nil}},
		"DELETE /api/v1/users/me/avatar":                 {{"DELETE", "/api/v1/users/me/avatar", nil}},
		"GET /user_avatars/{realm}/{file}":               {{"GET", "/user_avatars/2/" + strings.Repeat("ab", 32) + ".png", nil}},
		"GET /api/v1/users/{user}":                       {{"GET", "/api/v1/users/" + strconv.FormatUint(e.alice.ID, 10), url.Values{"include_custom_profile_fields": {"true"}}}, {"GET", "/api/v1/users/" + e.alice.Email, nil}},
		// Bob's topic policies are his own: he may not set one in her
		// channel, and removing one there touches only his.
		"POST /api/v1/user_topics": {{"POST", "/api/v1/user_topics", url.Values{"stream_id": {secretID}, "topic": {"plans"}, "visibility_policy": {"1"}}},
			{"POST", "/api/v1/user_topics", url.Values{"stream_id": {secretID}, "topic": {"plans"}, "visibility_policy": {"0"}}}},
		// A vote in her message in a channel he cannot read; her drafts
		// and snippets by their ids; his own alert words and mutes, which
		// touch nothing of hers.
		"POST /api/v1/submessage":                          {{"POST", "/api/v1/submessage", url.Values{"message_id": {msgID}, "msg_type": {"widget"}, "content": {`{"type":"vote","key":"canned,0","vote":1}`}}}},
		"GET /api/v1/drafts":                               {{"GET", "/api/v1/drafts", nil}},
		"POST /api/v1/drafts":                              {{"POST", "/api/v1/drafts", url.Values{"drafts": {`[{"type":"stream","to":[` + secretID + `],"topic":"plans","content":"mine"}]`}}}},
		"PATCH /api/v1/drafts/{draft_id}":                  {{"PATCH", draftPath, url.Values{"draft": {`{"type":"private","to":[],"topic":"","content":"mine"}`}}}},
		"DELETE /api/v1/drafts/{draft_id}":                 {{"DELETE", draftPath, nil}},
		"GET /api/v1/saved_snippets":                       {{"GET", "/api/v1/saved_snippets", nil}},
		"POST /api/v1/saved_snippets":                      {{"POST", "/api/v1/saved_snippets", url.Values{"title": {"mine"}, "content": {"mine"}}}},
		"PATCH /api/v1/saved_snippets/{saved_snippet_id}":  {{"PATCH", snippetPath, url.Values{"content": {"mine"}}}},
		"DELETE /api/v1/saved_snippets/{saved_snippet_id}": {{"DELETE", snippetPath, nil}},
		"GET /api/v1/users/me/alert_words":                 {{"GET", "/api/v1/users/me/alert_words", nil}},
		// Her scheduled message by its id; his own, which is no message
		// to her private channel.
		"GET /api/v1/scheduled_messages": {{"GET", "/api/v1/scheduled_messages", nil}},
		"POST /api/v1/scheduled_messages": {{"POST", "/api/v1/scheduled_messages", url.Values{"type": {"stream"}, "to": {secretID}, "topic": {"plans"}, "content": {"mine"}, "scheduled_delivery_timestamp": {later}}},
			{"POST", "/api/v1/scheduled_messages", url.Values{"type": {"direct"}, "to": {"[" + strconv.FormatUint(e.alice.ID, 10) + "]"}, "content": {"mine"}, "scheduled_delivery_timestamp": {later}}}},
		"PATCH /api/v1/scheduled_messages/{scheduled_message_id}": {{"PATCH", herScheduled, url.Values{"content": {"mine"}}},
			{"PATCH", herScheduled, url.Values{"scheduled_delivery_timestamp": {later}}}},
		"DELETE /api/v1/scheduled_messages/{scheduled_message_id}": {{"DELETE", herScheduled, nil}},
		// Her reminder (of her private channel's message, its note her
		// secret) by its id; reminders of her messages he cannot read.
		"GET /api/v1/reminders": {{"GET", "/api/v1/reminders", nil}},
		"POST /api/v1/reminders": {{"POST", "/api/v1/reminders", url.Values{"message_id": {msgID}, "scheduled_delivery_timestamp": {later}}},
			{"POST", "/api/v1/reminders", url.Values{"message_id": {dmID}, "scheduled_delivery_timestamp": {later}}}},
		"DELETE /api/v1/reminders/{reminder_id}":              {{"DELETE", herReminder, nil}, {"DELETE", herScheduled[:len("/api/v1/")] + "reminders/" + strconv.FormatUint(scheduledID, 10), nil}},
		"POST /api/v1/users/me/alert_words":                   {{"POST", "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["secret"]`}}}},
		"DELETE /api/v1/users/me/alert_words":                 {{"DELETE", "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["plans"]`}}}},
		"POST /api/v1/users/me/muted_users/{muted_user_id}":   {{"POST", "/api/v1/users/me/muted_users/" + strconv.FormatUint(e.alice.ID, 10), nil}},
		"DELETE /api/v1/users/me/muted_users/{muted_user_id}": {{"DELETE", "/api/v1/users/me/muted_users/" + strconv.FormatUint(e.owner.ID, 10), nil}},
		// Rendering her channel's name and her, which tells nothing the
		// renderer keeps from him; whether her messages match a narrow
		// (none is his to read); who read her messages.
		"POST /api/v1/messages/render": {{"POST", "/api/v1/messages/render", url.Values{"content": {"#**secret>plans** @**alice@example.com**"}}}},
		"GET /api/v1/messages/matches_narrow": {{"GET", "/api/v1/messages/matches_narrow", url.Values{"msg_ids": {"[" + msgID + "," + dmID + "]"}, "narrow": {`[]`}}},
			{"GET", "/api/v1/messages/matches_narrow", url.Values{"msg_ids": {"[" + msgID + "," + dmID + "]"}, "narrow": {`[["search","secret"]]`}}}},
		"GET /api/v1/messages/{message_id}/read_receipts": {{"GET", "/api/v1/messages/" + msgID + "/read_receipts", nil}, {"GET", "/api/v1/messages/" + dmID + "/read_receipts", nil}},
		// A test notification to her devices, by their tokens.
		"POST /api/v1/mobile_push/test_notification": {{"POST", "/api/v1/mobile_push/test_notification", url.Values{"token": {"aa11bb22"}}},
			{"POST", "/api/v1/mobile_push/test_notification", url.Values{"token": {"alice-fcm-token"}}}},
		// His own uploads only: her file is neither listed nor removed.
		"GET /api/v1/attachments":                    {{"GET", "/api/v1/attachments", nil}},
		"DELETE /api/v1/attachments/{attachment_id}": {{"DELETE", "/api/v1/attachments/" + planID, nil}},
		// Bob's own deactivation would end his queue, which this test
		// polls last; that it touches nobody else is
		// TestDeactivateOwnUser_EndsTheAccountAndItsQueues'.
		"DELETE /api/v1/users/me": {},
		// Saying he edits her messages, in her channel and her conversation.
		"POST /api/v1/messages/{message_id}/typing": {{"POST", "/api/v1/messages/" + msgID + "/typing", url.Values{"op": {"start"}}}, {"POST", "/api/v1/messages/" + dmID + "/typing", url.Values{"op": {"start"}}}},
		"PATCH /api/v1/users/me/subscriptions/muted_topics": {{"PATCH", "/api/v1/users/me/subscriptions/muted_topics", url.Values{"stream": {"secret"}, "topic": {"plans"}, "op": {"add"}}},
			{"PATCH", "/api/v1/users/me/subscriptions/muted_topics", url.Values{"stream_id": {secretID}, "topic": {"plans"}, "op": {"remove"}}}},
		// The last attempt's add half would subscribe alice; its refused
		// delete half undoes it.
		"PATCH /api/v1/users/me/subscriptions": {{"PATCH", "/api/v1/users/me/subscriptions", url.Values{"add": {`[{"name":"secret"}]`}}},
			{"PATCH", "/api/v1/users/me/subscriptions", url.Values{"add": {`[{"name":"secret"}]`}, "principals": {"[" + strconv.FormatUint(e.alice.ID, 10) + "]"}}},
			{"PATCH", "/api/v1/users/me/subscriptions", url.Values{"delete": {`["secret","general"]`}, "principals": {`["` + e.alice.Email + `"]`}}},
			{"PATCH", "/api/v1/users/me/subscriptions", url.Values{"add": {`[{"name":"bobs-own"}]`}, "delete": {`["general"]`}, "principals": {"[" + strconv.FormatUint(e.alice.ID, 10) + "]"}}}},
		"GET /api/v1/users/{user_id}/subscriptions/{stream_id}": {{"GET", "/api/v1/users/" + strconv.FormatUint(e.alice.ID, 10) + "/subscriptions/" + secretID, nil}},
		// User groups: bob may read them, but not administer alice's, nor
		// make one (a refused create makes nothing: the count is in her
		// state; his own would be, so his attempt names a missing member).
		"GET /api/v1/user_groups":                                   {{"GET", "/api/v1/user_groups", url.Values{"include_deactivated_groups": {"true"}}}},
		"POST /api/v1/user_groups/create":                           {{"POST", "/api/v1/user_groups/create", url.Values{"name": {"bobs"}, "members": {"[999]"}, "description": {""}}}},
		"GET /api/v1/user_groups/{user_group_id}/members":           {{"GET", herGroupPath + "/members", nil}},
		"GET /api/v1/user_groups/{user_group_id}/members/{user_id}": {{"GET", herGroupPath + "/members/" + strconv.FormatUint(e.alice.ID, 10), nil}},
		"GET /api/v1/user_groups/{user_group_id}/subgroups":         {{"GET", herGroupPath + "/subgroups", nil}},
		"PATCH /api/v1/user_groups/{user_group_id}": {{"PATCH", herGroupPath, url.Values{"name": {"bobs now"}}},
			{"PATCH", herGroupPath, url.Values{"can_manage_group": {`{"new":5}`}}}},
		"POST /api/v1/user_groups/{user_group_id}/deactivate": {{"POST", herGroupPath + "/deactivate", nil}},
		"POST /api/v1/user_groups/{user_group_id}/members": {{"POST", herGroupPath + "/members", url.Values{"add": {"[" + strconv.FormatUint(e.bob.ID, 10) + "]"}}},
			{"POST", herGroupPath + "/members", url.Values{"delete": {"[" + strconv.FormatUint(e.alice.ID, 10) + "]"}}},
			{"POST", herGroupPath + "/members", url.Values{"add_subgroups": {"[5]"}}}},
		"POST /api/v1/user_groups/{user_group_id}/subgroups": {{"POST", herGroupPath + "/subgroups", url.Values{"add": {"[5]"}}}},
		// Administering her private channel, and the public one, as a
		// member who administers neither (issue 33).
		"PATCH /api/v1/streams/{stream_id}": {{"PATCH", "/api/v1/streams/" + secretID, url.Values{"new_name": {"bobs"}}},
			{"PATCH", "/api/v1/streams/" + secretID, url.Values{"is_private": {"false"}, "history_public_to_subscribers": {"true"}}},
			{"PATCH", "/api/v1/streams/" + secretID, url.Values{"can_add_subscribers_group": {`{"new":5}`}}},
			{"PATCH", "/api/v1/streams/" + generalID, url.Values{"description": {"bob's"}}}},
		"DELETE /api/v1/streams/{stream_id}":            {{"DELETE", "/api/v1/streams/" + secretID, nil}, {"DELETE", "/api/v1/streams/" + generalID, nil}},
		"POST /api/v1/streams/{stream_id}/delete_topic": {{"POST", "/api/v1/streams/" + secretID + "/delete_topic", url.Values{"topic_name": {"plans"}}}},
		"GET /api/v1/streams/{stream_id}/members":       {{"GET", "/api/v1/streams/" + secretID + "/members", nil}},
		"POST /api/v1/default_streams":                  {{"POST", "/api/v1/default_streams", url.Values{"stream_id": {generalID}}}},
		"DELETE /api/v1/default_streams":                {{"DELETE", "/api/v1/default_streams", url.Values{"stream_id": {generalID}}}},
		// Her custom emoji is hers to deactivate (or an administrator's),
		// and its name hers; a member administers no linkifier or
		// playground.
		"GET /api/v1/realm/emoji":                          {{"GET", "/api/v1/realm/emoji", nil}},
		"POST /api/v1/realm/emoji/{emoji_name}":            {{"POST", "/api/v1/realm/emoji/hers", nil}},
		"DELETE /api/v1/realm/emoji/{emoji_name}":          {{"DELETE", "/api/v1/realm/emoji/hers", nil}},
		"GET /user_avatars/{realm}/emoji/images/{file}":    {{"GET", "/user_avatars/2/emoji/images/" + strings.Repeat("ab", 32) + ".png", nil}},
		"GET /api/v1/realm/linkifiers":                     {{"GET", "/api/v1/realm/linkifiers", nil}},
		"PATCH /api/v1/realm/linkifiers":                   {{"PATCH", "/api/v1/realm/linkifiers", url.Values{"ordered_linkifier_ids": {"[" + linkifierID + "]"}}}},
		"POST /api/v1/realm/filters":                       {{"POST", "/api/v1/realm/filters", url.Values{"pattern": {`x(?P<id>\d+)`}, "url_template": {"https://x.test/{id}"}}}},
		"PATCH /api/v1/realm/filters/{filter_id}":          {{"PATCH", "/api/v1/realm/filters/" + linkifierID, url.Values{"pattern": {`y(?P<id>\d+)`}, "url_template": {"https://y.test/{id}"}}}},
		"DELETE /api/v1/realm/filters/{filter_id}":         {{"DELETE", "/api/v1/realm/filters/" + linkifierID, nil}},
		"POST /api/v1/realm/playgrounds":                   {{"POST", "/api/v1/realm/playgrounds", url.Values{"name": {"Go"}, "pygments_language": {"go"}, "url_template": {"https://go.test/?c={code}"}}}},
		"DELETE /api/v1/realm/playgrounds/{playground_id}": {{"DELETE", "/api/v1/realm/playgrounds/" + playgroundID, nil}},
		// Invitations: bob lists only his own (none); he may not invite
		// to her private channel, make a link, or revoke or resend hers
		// or the administrator's.
		"GET /api/v1/invites": {{"GET", "/api/v1/invites", nil}},
		"POST /api/v1/invites": {{"POST", "/api/v1/invites", url.Values{"invitee_emails": {"spy@example.com"}, "stream_ids": {"[" + secretID + "]"}}},
			{"POST", "/api/v1/invites", url.Values{"invitee_emails": {"spy@example.com"}, "stream_ids": {"[" + secretID + "]"}, "invite_as": {"200"}}}},
		"POST /api/v1/invites/multiuse":               {{"POST", "/api/v1/invites/multiuse", url.Values{"stream_ids": {"[" + secretID + "]"}}}},
		"DELETE /api/v1/invites/{invite_id}":          {{"DELETE", "/api/v1/invites/" + herInvite, nil}},
		"DELETE /api/v1/invites/multiuse/{invite_id}": {{"DELETE", "/api/v1/invites/multiuse/" + adminLink, nil}},
		"POST /api/v1/invites/{invite_id}/resend":     {{"POST", "/api/v1/invites/" + herInvite + "/resend", nil}},
		// The sign-up pages are HTML, not JSON, and open only with an
		// invitation's key, which bob does not have (api_invites_test.go).
		"GET /join/{key}/{$}":             {},
		"POST /join/{key}/{$}":            {},
		"GET /accounts/do_confirm/{key}":  {},
		"POST /accounts/do_confirm/{key}": {},
		// A member administers nobody: not her role, name, profile or
		// activity, not the organisation's fields or defaults; his own
		// profile data is his.
		"PATCH /api/v1/users/{user_id}": {{"PATCH", herPath, url.Values{"full_name": {"Bob's"}}}, {"PATCH", herPath, url.Values{"role": {"600"}}},
			{"PATCH", herPath, url.Values{"profile_data": {`[{"id":` + fieldID + `,"value":null}]`}}}},
		"DELETE /api/v1/users/{user_id}":                 {{"DELETE", herPath, nil}},
		"POST /api/v1/users/{user_id}/reactivate":        {{"POST", herPath + "/reactivate", nil}},
		"PATCH /api/v1/users/me/profile_data":            {{"PATCH", "/api/v1/users/me/profile_data", url.Values{"data": {`[{"id":` + fieldID + `,"value":"his"}]`}}}},
		"DELETE /api/v1/users/me/profile_data":           {{"DELETE", "/api/v1/users/me/profile_data", url.Values{"data": {"[" + fieldID + "]"}}}},
		"GET /api/v1/realm/profile_fields":               {{"GET", "/api/v1/realm/profile_fields", nil}},
		"POST /api/v1/realm/profile_fields":              {{"POST", "/api/v1/realm/profile_fields", url.Values{"name": {"His"}, "field_type": {"1"}}}},
		"PATCH /api/v1/realm/profile_fields":             {{"PATCH", "/api/v1/realm/profile_fields", url.Values{"order": {"[" + fieldID + "]"}}}},
		"PATCH /api/v1/realm/profile_fields/{field_id}":  {{"PATCH", "/api/v1/realm/profile_fields/" + fieldID, url.Values{"name": {"Bob's"}}}},
		"DELETE /api/v1/realm/profile_fields/{field_id}": {{"DELETE", "/api/v1/realm/profile_fields/" + fieldID, nil}},
		"PATCH /api/v1/realm/user_settings_defaults":     {{"PATCH", "/api/v1/realm/user_settings_defaults", url.Values{"enter_sends": {"true"}}}},
		// A member neither starts, lists, deletes nor downloads the
		// administrators' data exports.
		"POST /api/v1/export/realm":                           {{"POST", "/api/v1/export/realm", nil}, {"POST", "/api/v1/export/realm", url.Values{"export_type": {"2"}}}},
		"GET /api/v1/export/realm":                            {{"GET", "/api/v1/export/realm", nil}},
		"DELETE /api/v1/export/realm/{export_id}":             {{"DELETE", "/api/v1/export/realm/" + strconv.FormatUint(exportID, 10), nil}},
		"GET /user_avatars/exports/{realm_id}/{token}/{file}": {{"GET", exportPath, nil}},
		"GET /api/v1/export/realm/consents":                   {{"GET", "/api/v1/export/realm/consents", nil}},
	}
	leaks := []string{secretText, exportToken, e.alice.key, "aa11bb22", "alice-fcm-token", plan[len("/user_uploads/"):], "friend@example.com", herInvites[0].Key, links[0].Key} // the queue id is echoed in BAD_EVENT_QUEUE_ID, as bob sent it
	before := aliceState()
	for _, route := range e.server.routeList() {
		attempts, ok := cases[route]
		if !ok {
			t.Errorf("route %s has no isolation case: add one", route)
			continue
		}
		delete(cases, route)
		for _, a := range attempts {
			r := e.request(t, a.method, a.path, a.params, &e.bob)
			if refused[route] && r.status < 400 {
				t.Errorf("%s %s %v: got %d %s, want a refusal", a.method, a.path, a.params, r.status, r.raw)
			}
			for _, secret := range leaks {
				if strings.Contains(r.raw, secret) {
					t.Errorf("%s %s %v: the answer holds alice's %q", a.method, a.path, a.params, secret)
				}
			}
			if strings.Contains(r.raw, `"name":"secret"`) || strings.Contains(r.raw, `"display_recipient":"secret"`) {
				t.Errorf("%s %s: the answer shows the private channel: %s", a.method, a.path, r.raw)
			}
			if after := aliceState(); after != before {
				t.Errorf("%s %s %v: alice's state changed from %s to %s", a.method, a.path, a.params, before, after)
				before = after
			}
		}
	}
	for route := range cases {
		t.Errorf("isolation case for %s, which the router does not have", route)
	}
	for _, ev := range e.pollNow(t, &e.bob, bobQueue, -1) {
		if s := fmt.Sprint(ev); strings.Contains(s, secretText) || ev["type"] == "message" {
			t.Errorf("bob's queue heard of alice's conversation: %s", s)
		}
	}
}
