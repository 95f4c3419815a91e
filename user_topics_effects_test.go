package main

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
)

// TestUserTopics_NarrowsIsFollowedAndInHome: is:followed finds the
// messages of followed topics, whatever their case; in:home leaves out
// muted topics and muted channels but their unmuted and followed
// topics, which is:muted (feature level 366) finds; in:all leaves out
// nothing.
func TestUserTopics_NarrowsIsFollowedAndInHome(t *testing.T) {
	e := newTestEnv(t)
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
