package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// pushRecorder is a push transport that records who each notification
// went to and its subtitle.
type pushRecorder struct {
	mu   sync.Mutex // the pusher delivers from several goroutines
	sent []string
}

func (p *pushRecorder) perDevice() bool { return true }

func (p *pushRecorder) deliver(_ context.Context, j pushJob, _ []pushToken) pushResult {
	var payload struct {
		Alert struct {
			Subtitle string `json:"subtitle"`
		} `json:"alert"`
	}
	json.Unmarshal(j.APNs, &payload)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, strconv.FormatUint(j.UserID, 10)+" "+payload.Alert.Subtitle)
	return pushResult{}
}

// TestUserTopics_PushFollowsVisibilityPolicy: who a channel message
// pushes to, as Zulip's get_recipient_info and
// UserMessageNotificationsData decide it: a muted topic (or a topic in a
// muted channel, unless unmuted or followed) pushes for personal
// mentions alone; a followed topic pushes by
// enable_followed_topic_push_notifications and its wildcard mentions by
// enable_followed_topic_wildcard_mentions_notify.
func TestUserTopics_PushFollowsVisibilityPolicy(t *testing.T) {
	e, carol := newMentionEnv(t)
	rec := &pushRecorder{}
	p := newPusher(e.st, rec, func(uint64) bool { return true }, discardLogger(), "http://zulite.test", "zulite", 100)
	for _, a := range []account{e.alice, carol} {
		if err := e.st.addPushToken(a.ID, pushToken{Kind: pushAPNs, Token: "aa" + strconv.FormatUint(a.ID, 16)}); err != nil {
			t.Fatal(err)
		}
	}
	// pushedFor sends content to general's topic as bob and answers
	// whom it pushes to and with which subtitle.
	pushedFor := func(t *testing.T, topic, content string) []string {
		t.Helper()
		r := e.sendContent(t, &e.bob, topic, content)
		wantAPISuccess(t, r)
		rec.sent = nil
		if _, err := p.expand(context.Background(), 1, pushJob{Kind: "message", MessageID: uint64(r.body["id"].(float64)), SenderID: e.bob.ID, ReadKey: e.general.ID}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(rec.sent)
		return rec.sent
	}
	alice, carolID := strconv.FormatUint(e.alice.ID, 10), strconv.FormatUint(carol.ID, 10)
	bobName := e.bob.FullName
	setProperty := func(a *account, property, value string) {
		t.Helper()
		wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions/properties", url.Values{
			"subscription_data": {`[{"stream_id":` + strconv.FormatUint(e.general.ID, 10) + `,"property":"` + property + `","value":` + value + `}]`}}, a))
	}
	check := func(t *testing.T, rule string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: pushed %q, want %q", rule, got, want)
		}
	}

	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "followed", policyFollowed))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "muted", policyMuted))
	check(t, "an unmuted topic, channel pushes off", pushedFor(t, "plain", "hello"))
	check(t, "a followed topic", pushedFor(t, "Followed", "hello"), alice+" "+bobName+":")
	check(t, "a muted topic, mentioned by name", pushedFor(t, "muted", "@**alice@example.com**"), alice+" "+bobName+" mentioned you:")
	check(t, "a muted topic, a wildcard mention", pushedFor(t, "muted", "@**all** hello"), carolID+" "+bobName+" mentioned everyone:")
	check(t, "a followed topic, a wildcard mention", pushedFor(t, "followed", "@**all** hello"), alice+" "+bobName+" mentioned everyone:", carolID+" "+bobName+" mentioned everyone:")

	// Channel pushes on: every topic but the muted one.
	setProperty(&e.alice, "push_notifications", "true")
	check(t, "channel pushes on", pushedFor(t, "plain", "hello"), alice+" "+bobName+":")
	check(t, "channel pushes on, a muted topic", pushedFor(t, "muted", "hello"))

	// A muted channel: only its unmuted and followed topics push.
	setProperty(&e.alice, "is_muted", "true")
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "unmuted", policyUnmuted))
	check(t, "a muted channel", pushedFor(t, "plain", "hello"))
	check(t, "a muted channel, a wildcard mention", pushedFor(t, "plain", "@**all**"), carolID+" "+bobName+" mentioned everyone:")
	check(t, "a muted channel, an unmuted topic", pushedFor(t, "unmuted", "hello"), alice+" "+bobName+":")
	check(t, "a muted channel, a followed topic", pushedFor(t, "followed", "hello"), alice+" "+bobName+":")

	// The followed-topic settings.
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"enable_followed_topic_push_notifications": {"false"}, "enable_followed_topic_wildcard_mentions_notify": {"false"}}, &e.alice))
	check(t, "followed-topic pushes off", pushedFor(t, "followed", "hello"))
	check(t, "followed-topic wildcard mentions off, in a muted channel", pushedFor(t, "followed", "@**all**"), carolID+" "+bobName+" mentioned everyone:")
}

// TestUserTopics_UnreadCountLeavesMutedOut: register's unread_msgs
// lists every unread message, but its count and its mentions leave out
// muted topics and the topics of muted channels but unmuted and
// followed ones (Zulip's extract_unread_data_from_um_rows).
func TestUserTopics_UnreadCountLeavesMutedOut(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "muted", policyMuted))
	send := func(topic, content string) {
		t.Helper()
		wantAPISuccess(t, e.sendContent(t, &e.bob, topic, content))
	}
	send("muted", "@**all** one")
	send("MUTED", "two")
	send("plain", "@**all** three")
	unread := func() (int, int, int) {
		t.Helper()
		r := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["message","update_message_flags"]`}})
		msgs := object(r.body["unread_msgs"])
		listed := 0
		for _, s := range msgs["streams"].([]any) {
			listed += len(object(s)["unread_message_ids"].([]any))
		}
		return int(msgs["count"].(float64)), listed, len(msgs["mentions"].([]any))
	}
	if count, listed, mentions := unread(); count != 1 || listed != 3 || mentions != 1 {
		t.Errorf("a muted topic: count %d, listed %d, mentions %d; want 1, 3, 1", count, listed, mentions)
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions/properties", url.Values{
		"subscription_data": {`[{"stream_id":` + strconv.FormatUint(e.general.ID, 10) + `,"property":"is_muted","value":true}]`}}, &e.alice))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "followed", policyFollowed))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "unmuted", policyUnmuted))
	send("followed", "@**all** four")
	send("unmuted", "five")
	if count, listed, mentions := unread(); count != 2 || listed != 5 || mentions != 1 {
		t.Errorf("a muted channel: count %d, listed %d, mentions %d; want 2, 5, 1", count, listed, mentions)
	}
}

// TestUserTopics_NarrowsIsFollowedAndInHome: is:followed finds the
// messages of followed topics, whatever their case; in:home leaves out
// muted topics and muted channels but their unmuted and followed
// topics, which is:muted (feature level 366) finds; in:all leaves out
// nothing.
func TestUserTopics_NarrowsIsFollowedAndInHome(t *testing.T) {
	e := newTestEnv(t)
	// The policies are the ones set below: starting a topic follows none
	// (TestAutoFollow_NewTopicFollowedForItsSender has that).
	for _, a := range []*account{&e.alice, &e.bob} {
		e.setSetting(t, a, "automatically_follow_topics_policy", "4")
	}
	followed := e.sendAs(t, e.bob, e.general, "Followed")
	muted := e.sendAs(t, e.bob, e.general, "muted")
	plain := e.sendAs(t, e.bob, e.general, "plain")
	secretPlain := e.sendAs(t, e.alice, e.secret, "plain")
	secretUnmuted := e.sendAs(t, e.alice, e.secret, "unmuted")
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "followed", policyFollowed))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "muted", policyMuted))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.secret, "unmuted", policyUnmuted))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions/properties", url.Values{
		"subscription_data": {`[{"stream_id":` + strconv.FormatUint(e.secret.ID, 10) + `,"property":"is_muted","value":true}]`}}, &e.alice))
	for _, c := range []struct {
		narrow string
		want   []uint64
	}{
		{narrowOf(map[string]any{"operator": "is", "operand": "followed"}), []uint64{followed}},
		{narrowOf(map[string]any{"operator": "is", "operand": "followed", "negated": true}), []uint64{muted, plain, secretPlain, secretUnmuted}},
		{narrowOf(map[string]any{"operator": "in", "operand": "home"}), []uint64{followed, plain, secretUnmuted}},
		{narrowOf(map[string]any{"operator": "in", "operand": "home", "negated": true}), []uint64{muted, secretPlain}},
		{narrowOf(map[string]any{"operator": "in", "operand": "all"}), []uint64{followed, muted, plain, secretPlain, secretUnmuted}},
		{narrowOf(map[string]any{"operator": "is", "operand": "muted"}), []uint64{muted, secretPlain}},
		{narrowOf(map[string]any{"operator": "is", "operand": "muted", "negated": true}), []uint64{followed, plain, secretUnmuted}},
		{narrowOf(map[string]any{"operator": "channel", "operand": "secret"}, map[string]any{"operator": "is", "operand": "muted"}), []uint64{secretPlain}},
	} {
		r, got := e.page(t, &e.alice, rangeParams("oldest", 0, 100, c.narrow))
		wantAPISuccess(t, r)
		if !slices.Equal(got, c.want) {
			t.Errorf("narrow %s: got %v, want %v", c.narrow, got, c.want)
		}
	}
	// A queue's narrow takes is:muted and, like Zulip's narrow
	// predicate, which has no test for it, lets every message through.
	queue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["message"]`}, "narrow": {`[["is","muted"]]`}}).str("queue_id")
	later := e.sendAs(t, e.bob, e.general, "plain")
	if got := e.pollNow(t, &e.alice, queue, -1); len(got) != 1 {
		t.Errorf("a queue narrowed to is:muted: got %v, want the message", got)
	}
	// Bob follows nothing.
	if _, got := e.page(t, &e.bob, rangeParams("oldest", 0, 100, narrowOf(map[string]any{"operator": "is", "operand": "followed"}))); len(got) != 0 {
		t.Errorf("bob's is:followed: got %v, want none", got)
	}
	// Marking by narrow reads only the followed topic.
	r := e.request(t, http.MethodPost, "/api/v1/messages/flags/narrow", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"},
		"narrow": {narrowOf(map[string]any{"operator": "is", "operand": "followed"})}, "op": {"add"}, "flag": {"read"}}, &e.bob)
	wantAPISuccess(t, r)
	r = e.request(t, http.MethodPost, "/api/v1/messages/flags/narrow", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"},
		"narrow": {narrowOf(map[string]any{"operator": "is", "operand": "followed"})}, "op": {"add"}, "flag": {"read"}}, &e.alice)
	wantAPISuccess(t, r)
	if !jsonEqual(r.body["updated_count"], 1) {
		t.Errorf("marking is:followed read: got %v, want 1 updated", r.raw)
	}
	if _, got := e.page(t, &e.alice, rangeParams("oldest", 0, 100, narrowOf(map[string]any{"operator": "is", "operand": "unread"}))); !slices.Equal(got, []uint64{muted, plain, later}) {
		t.Errorf("alice's unread after marking is:followed: got %v, want %v", got, []uint64{muted, plain, later})
	}
}

// TestUserTopics_PoliciesGoWhereTheTopicMoved: when a whole topic moves
// (change_all, or no message left behind), each user's policy leaves it
// for the new topic, merged with their policy there when that topic
// already has messages (the more visible wins), as Zulip's
// do_update_message; a user who cannot read the new channel loses it;
// a move of part of a topic moves no policy.
func TestUserTopics_PoliciesGoWhereTheTopicMoved(t *testing.T) {
	e := newTestEnv(t)
	policies := func(a *account) map[string]float64 {
		t.Helper()
		out := map[string]float64{}
		for _, item := range e.userTopicsOf(t, a) {
			o := object(item)
			out[strconv.FormatFloat(o["stream_id"].(float64), 'f', -1, 64)+" "+o["topic_name"].(string)] = o["visibility_policy"].(float64)
		}
		return out
	}
	general, secret := strconv.FormatUint(e.general.ID, 10), strconv.FormatUint(e.secret.ID, 10)
	move := func(id uint64, params url.Values) {
		t.Helper()
		wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/messages/"+strconv.FormatUint(id, 10), params, &e.alice))
	}
	first := e.sendAs(t, e.bob, e.general, "lunch")
	e.sendAs(t, e.bob, e.general, "lunch")
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "lunch", policyFollowed))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.bob, e.general, "LUNCH", policyMuted))
	queue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["user_topic","update_message"]`}}).str("queue_id")
	legacy := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["muted_topics"]`}}).str("queue_id")

	// Part of the topic: nothing moves.
	move(first, url.Values{"topic": {"brunch"}, "propagate_mode": {"change_one"}})
	if got, want := policies(&e.alice), map[string]float64{general + " lunch": policyFollowed}; !jsonEqual(got, want) {
		t.Errorf("after moving one message of two: got %v, want %v", got, want)
	}
	// The rest of it, later messages only, leaves nothing behind. The
	// new topic already has a message (the one moved first), so each
	// policy is merged with none: a follow stays, a mute goes.
	move(first+1, url.Values{"topic": {"brunch"}, "propagate_mode": {"change_later"}})
	if got, want := policies(&e.alice), map[string]float64{general + " brunch": policyFollowed}; !jsonEqual(got, want) {
		t.Errorf("alice after the whole topic moved: got %v, want %v", got, want)
	}
	if got := policies(&e.bob); len(got) != 0 {
		t.Errorf("bob after the whole topic moved into one with a message: got %v, want none", got)
	}
	var kinds []string
	for _, ev := range e.pollNow(t, &e.alice, queue, -1) {
		kinds = append(kinds, fmt.Sprint(ev["type"], " ", ev["topic_name"], " ", ev["visibility_policy"]))
	}
	want := []string{"update_message <nil> <nil>", "user_topic lunch 0", "user_topic brunch 3", "update_message <nil> <nil>"}
	if !slices.Equal(kinds, want) {
		t.Errorf("alice's events: got %q, want %q", kinds, want)
	}
	// Leaving the old topic tells no muted_topics (Zulip's
	// skip_muted_topics_event, counting on the new topic's to follow):
	// bob's mute went with none, as in Zulip.
	if got := e.pollNow(t, &e.bob, legacy, -1); len(got) != 0 {
		t.Errorf("bob's muted_topics events: got %v, want none", got)
	}

	// Into a topic with messages: the more visible policy.
	e.sendAs(t, e.bob, e.general, "dinner")
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "dinner", policyMuted))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.bob, e.general, "dinner", policyUnmuted))
	move(first, url.Values{"topic": {"dinner"}, "propagate_mode": {"change_all"}})
	if got, want := policies(&e.alice), map[string]float64{general + " dinner": policyFollowed}; !jsonEqual(got, want) {
		t.Errorf("alice, followed into muted: got %v, want %v", got, want)
	}
	if got, want := policies(&e.bob), map[string]float64{general + " dinner": policyUnmuted}; !jsonEqual(got, want) {
		t.Errorf("bob, muted into unmuted: got %v, want %v", got, want)
	}

	// To a channel bob cannot read: his policy goes, alice's moves.
	wantAPISuccess(t, e.setTopicPolicy(t, &e.bob, e.general, "dinner", policyMuted))
	move(first, url.Values{"stream_id": {secret}, "propagate_mode": {"change_all"}})
	if got, want := policies(&e.alice), map[string]float64{secret + " dinner": policyFollowed}; !jsonEqual(got, want) {
		t.Errorf("alice after the move to secret: got %v, want %v", got, want)
	}
	if got := policies(&e.bob); len(got) != 0 {
		t.Errorf("bob after the move to a channel he cannot read: got %v, want none", got)
	}
}

// sendTo sends content to general's topic as a and answers the send.
func (e *testEnv) sendTo(t *testing.T, a *account, topic, content string) response {
	t.Helper()
	r := e.sendContent(t, a, topic, content)
	wantAPISuccess(t, r)
	return r
}

// policiesOf is register's user_topics for a as "channel topic=policy" each.
func (e *testEnv) policiesOf(t *testing.T, a *account) []string {
	t.Helper()
	var out []string
	for _, item := range e.userTopicsOf(t, a) {
		m := item.(map[string]any)
		out = append(out, fmt.Sprintf("%v %v=%v", m["stream_id"], m["topic_name"], m["visibility_policy"]))
	}
	return out
}

// wantPolicies checks a's user_topics in register, "channel topic=policy"
// each (none: want empty).
func (e *testEnv) wantPolicies(t *testing.T, a *account, want ...string) {
	t.Helper()
	if got := e.policiesOf(t, a); !slices.Equal(got, want) {
		t.Errorf("%s's user_topics: got %v, want %v", a.Email, got, want)
	}
}

// setSetting changes one of a's settings through PATCH /settings.
func (e *testEnv) setSetting(t *testing.T, a *account, name, value string) {
	t.Helper()
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{name: {value}}, a))
}

// afterAutomaticPolicy checks that a user's events open with what a
// send that set their policy for general's topic tells them (Zulip's
// do_set_user_topic_visibility_policy: the legacy muted_topics list,
// then user_topic) and answers the events after those two.
func afterAutomaticPolicy(t *testing.T, e *testEnv, events []map[string]any, topic string, policy int) []map[string]any {
	t.Helper()
	if len(events) < 2 || events[0]["type"] != "muted_topics" || !jsonEqual(events[0]["muted_topics"], []any{}) || events[1]["type"] != "user_topic" ||
		events[1]["stream_id"] != float64(e.general.ID) || events[1]["topic_name"] != topic || events[1]["visibility_policy"] != float64(policy) {
		t.Fatalf("got events %v, want muted_topics [] then user_topic %q policy %d", events, topic, policy)
	}
	return events[2:]
}

// TestAutoFollow_NewTopicFollowedForItsSender: by default
// (automatically_follow_topics_policy on initiation) the first message
// of a topic follows it for its sender: the send answers
// automatic_new_visibility_policy 3, the sender is told (muted_topics,
// user_topic, then the message) and register lists it; a later message
// of the topic, by them or by another, changes and tells nothing.
func TestAutoFollow_NewTopicFollowedForItsSender(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	r := e.sendTo(t, &e.bob, "new", "hi")
	if r.body["automatic_new_visibility_policy"] != float64(policyFollowed) {
		t.Errorf("first send: answered %s, want automatic_new_visibility_policy 3", r.raw)
	}
	events := afterAutomaticPolicy(t, e, e.pollNow(t, &e.bob, queue, -1), "new", policyFollowed)
	if len(events) != 1 || events[0]["type"] != "message" {
		t.Errorf("after the user_topic event: got %v, want the message alone", events)
	}
	followed := fmt.Sprintf("%d new=3", e.general.ID)
	e.wantPolicies(t, &e.bob, followed)
	for _, a := range []*account{&e.bob, &e.alice} {
		if r := e.sendTo(t, a, "New", "again"); r.raw != fmt.Sprintf(`{"result":"success","msg":"","id":%v}`+"\n", r.body["id"]) {
			t.Errorf("%s's later send: answered %s, want the id alone", a.Email, r.raw)
		}
	}
	if events := e.pollNow(t, &e.bob, queue, 2); len(events) != 2 || events[0]["type"] != "message" || events[1]["type"] != "message" {
		t.Errorf("after the later sends: got %v, want their two messages alone", events)
	}
	e.wantPolicies(t, &e.bob, followed)
	e.wantPolicies(t, &e.alice) // she did not start the topic
}

// TestAutoFollow_SettingsChangeWhatSendingSets: the two policies and
// automatically_follow_topics_where_mentioned are PATCH /settings
// settings, a policy one of 1 to 4 (Zulip's check_int_in_validator);
// "never" for both sets nothing; "on send" follows a topic one joins.
func TestAutoFollow_SettingsChangeWhatSendingSets(t *testing.T) {
	e := newTestEnv(t)
	patch := func(name, value string) response {
		return e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{name: {value}}, &e.bob)
	}
	for _, name := range []string{"automatically_follow_topics_policy", "automatically_unmute_topics_in_muted_streams_policy"} {
		r := patch(name, "5")
		wantAPIError(t, r, http.StatusBadRequest, "BAD_REQUEST", "Invalid "+name+": Value error, Not in the list of possible values")
		wantAPISuccess(t, patch(name, "4"))
	}
	r := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["user_settings"]`}})
	settings := r.body["user_settings"].(map[string]any)
	if settings["automatically_follow_topics_policy"] != 4.0 || settings["automatically_unmute_topics_in_muted_streams_policy"] != 4.0 {
		t.Errorf("register after PATCH: got %v and %v, want 4 and 4", settings["automatically_follow_topics_policy"], settings["automatically_unmute_topics_in_muted_streams_policy"])
	}
	if r := e.sendTo(t, &e.bob, "quiet", "hi"); r.body["automatic_new_visibility_policy"] != nil {
		t.Errorf("a send with both policies never: answered %s, want the id alone", r.raw)
	}
	e.wantPolicies(t, &e.bob)
	e.sendTo(t, &e.alice, "joined", "started by alice")
	wantAPISuccess(t, patch("automatically_follow_topics_policy", "2"))
	if r := e.sendTo(t, &e.bob, "joined", "hi"); r.body["automatic_new_visibility_policy"] != float64(policyFollowed) {
		t.Errorf("a send on send: answered %s, want automatic_new_visibility_policy 3", r.raw)
	}
	e.wantPolicies(t, &e.bob, fmt.Sprintf("%d joined=3", e.general.ID))
}

// TestAutoFollow_MentionedRecipientFollows: a recipient mentioned by
// name with automatically_follow_topics_where_mentioned (on by default)
// has the topic followed and is told; one who turned it off, or muted
// the topic, is left as they are.
func TestAutoFollow_MentionedRecipientFollows(t *testing.T) {
	e := newTestEnv(t)
	e.setSetting(t, &e.bob, "automatically_follow_topics_policy", "4")
	queue := e.registerQueue(t, &e.alice, nil).str("queue_id")
	r := e.sendTo(t, &e.bob, "ask", "@**alice@example.com** look")
	if r.body["automatic_new_visibility_policy"] != nil {
		t.Errorf("the send: answered %s, want the id alone (the sender's policy is never)", r.raw)
	}
	events := afterAutomaticPolicy(t, e, e.pollNow(t, &e.alice, queue, -1), "ask", policyFollowed)
	if len(events) != 1 || events[0]["type"] != "message" {
		t.Errorf("alice after the user_topic event: got %v, want the message alone", events)
	}
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "hush", policyMuted))
	e.sendTo(t, &e.bob, "hush", "@**alice@example.com** here")
	e.setSetting(t, &e.alice, "automatically_follow_topics_where_mentioned", "false")
	e.sendTo(t, &e.bob, "off", "@**alice@example.com** there")
	e.wantPolicies(t, &e.alice, fmt.Sprintf("%d ask=3", e.general.ID), fmt.Sprintf("%d hush=1", e.general.ID))
	e.wantPolicies(t, &e.bob)
}

// TestAutoFollow_SendUnmutesInAMutedChannel: in a channel the sender
// muted, a send unmutes its topic for them by
// automatically_unmute_topics_in_muted_streams_policy (on send by
// default), answered as automatic_new_visibility_policy 2.
func TestAutoFollow_SendUnmutesInAMutedChannel(t *testing.T) {
	e := newTestEnv(t)
	e.setSetting(t, &e.bob, "automatically_follow_topics_policy", "4")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions/properties", url.Values{
		"subscription_data": {`[{"stream_id":` + strconv.FormatUint(e.general.ID, 10) + `,"property":"is_muted","value":true}]`}}, &e.bob))
	if r := e.sendTo(t, &e.bob, "heard", "hi"); r.body["automatic_new_visibility_policy"] != float64(policyUnmuted) {
		t.Errorf("the send: answered %s, want automatic_new_visibility_policy 2", r.raw)
	}
	e.wantPolicies(t, &e.bob, fmt.Sprintf("%d heard=2", e.general.ID))
}

// TestAutoFollow_ParticipationFollowsOnReactionAndVote: with a policy
// on participation (1), a reaction or a poll vote counts as taking part
// (Zulip's do_add_reaction and do_add_submessage): the topic is followed,
// told before the reaction; in a muted channel the unmute policy
// unmutes it; the default policies set nothing on a reaction.
func TestAutoFollow_ParticipationFollowsOnReactionAndVote(t *testing.T) {
	e := newTestEnv(t)
	react := func(a *account, id uint64, emoji string) {
		t.Helper()
		wantAPISuccess(t, e.request(t, http.MethodPost, msgPath(id)+"/reactions", url.Values{"emoji_name": {emoji}}, a))
	}
	lunch := uint64(e.sendTo(t, &e.alice, "lunch", "pizza?").body["id"].(float64))
	react(&e.bob, lunch, "octopus")
	e.wantPolicies(t, &e.bob) // by default a reaction sets nothing
	e.setSetting(t, &e.bob, "automatically_follow_topics_policy", "1")
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	react(&e.bob, lunch, "tada")
	if events := afterAutomaticPolicy(t, e, e.pollNow(t, &e.bob, queue, -1), "lunch", policyFollowed); len(events) != 1 || events[0]["type"] != "reaction" {
		t.Errorf("after the user_topic event: got %v, want the reaction alone", events)
	}
	poll := e.sendToGeneral(t, &e.alice, "/poll Where?\nHere\nThere")
	wantAPISuccess(t, e.postSubmessage(t, &e.bob, poll, `{"type":"vote","key":"canned,0","vote":1}`))
	e.wantPolicies(t, &e.bob, fmt.Sprintf("%d lunch=3", e.general.ID), fmt.Sprintf("%d polls=3", e.general.ID))

	e.setSetting(t, &e.bob, "automatically_follow_topics_policy", "4")
	e.setSetting(t, &e.bob, "automatically_unmute_topics_in_muted_streams_policy", "1")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions/properties", url.Values{
		"subscription_data": {`[{"stream_id":` + strconv.FormatUint(e.general.ID, 10) + `,"property":"is_muted","value":true}]`}}, &e.bob))
	react(&e.bob, uint64(e.sendTo(t, &e.alice, "quiet", "hm").body["id"].(float64)), "octopus")
	react(&e.bob, lunch, "heart") // followed stays followed
	e.wantPolicies(t, &e.bob, fmt.Sprintf("%d lunch=3", e.general.ID), fmt.Sprintf("%d polls=3", e.general.ID), fmt.Sprintf("%d quiet=2", e.general.ID))
}
