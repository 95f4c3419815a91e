package main

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// setTopicPolicy sets a's visibility policy for a topic of ch through
// POST /user_topics.
func (e *testEnv) setTopicPolicy(t *testing.T, a *account, ch channel, topic string, policy int) response {
	t.Helper()
	return e.request(t, http.MethodPost, "/api/v1/user_topics", url.Values{
		"stream_id": {strconv.FormatUint(ch.ID, 10)}, "topic": {topic}, "visibility_policy": {strconv.Itoa(policy)}}, a)
}

// userTopicsOf is register's user_topics for a, for a client that
// understands empty topics.
func (e *testEnv) userTopicsOf(t *testing.T, a *account) []any {
	t.Helper()
	r := e.registerQueue(t, a, url.Values{"fetch_event_types": {`["user_topic"]`}, "client_capabilities": {`{"notification_settings_null":true,"empty_topic_name":true}`}})
	list, ok := r.body["user_topics"].([]any)
	if !ok {
		t.Fatalf("register: no user_topics list: %s", r.raw)
	}
	return list
}

func topicItem(ch channel, topic string, updated int64, policy int) map[string]any {
	return map[string]any{"stream_id": float64(ch.ID), "topic_name": topic, "last_updated": float64(updated), "visibility_policy": float64(policy)}
}

// TestUserTopics_EveryPolicyToldAndInRegister: each policy is stored,
// told to the user's queues as Zulip tells it (user_topic, and the
// legacy muted_topics with the whole list of muted topics to queues
// that did not ask for user_topic), and listed by register; a request
// that changes nothing tells nothing; a topic is one whatever its case.
func TestUserTopics_EveryPolicyToldAndInRegister(t *testing.T) {
	e := newTestEnv(t)
	now := time.Unix(1_700_000_000, 0)
	e.st.now = func() time.Time { return now }
	modern := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["user_topic","muted_topics"]`}}).str("queue_id")
	everything := e.registerQueue(t, &e.alice, nil).str("queue_id")
	legacy := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["muted_topics"]`}}).str("queue_id")
	bobs := e.registerQueue(t, &e.bob, nil).str("queue_id")
	general := float64(e.general.ID)

	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "lunch", policyMuted))
	userTopic := map[string]any{"type": "user_topic", "stream_id": general, "topic_name": "lunch", "last_updated": float64(now.Unix()), "visibility_policy": float64(policyMuted), "id": float64(0)}
	mutedTopics := map[string]any{"type": "muted_topics", "muted_topics": []any{[]any{"general", "lunch", float64(now.Unix())}}, "id": float64(0)}
	if got := e.pollNow(t, &e.alice, modern, -1); len(got) != 1 || !jsonEqual(got[0], userTopic) {
		t.Errorf("a queue that asked for user_topic: got %v, want only %v", got, userTopic)
	}
	if got := e.pollNow(t, &e.alice, legacy, -1); len(got) != 1 || !jsonEqual(got[0], mutedTopics) {
		t.Errorf("a queue of muted_topics alone: got %v, want %v", got, mutedTopics)
	}
	got := e.pollNow(t, &e.alice, everything, -1)
	userTopic["id"] = float64(1)
	if len(got) != 2 || !jsonEqual(got[0], mutedTopics) || !jsonEqual(got[1], userTopic) {
		t.Errorf("a queue of every type: got %v, want muted_topics then user_topic", got)
	}
	if got := e.pollNow(t, &e.bob, bobs, -1); len(got) != 0 {
		t.Errorf("bob's queue heard alice's topic: %v", got)
	}

	// The same policy again: nothing changes, nothing is told.
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "Lunch", policyMuted))
	if got := e.pollNow(t, &e.alice, modern, 0); len(got) != 0 {
		t.Errorf("setting the policy it had: got events %v", got)
	}

	// Another case of the name is the same topic; the event names it as
	// asked, the row keeps its first name.
	now = now.Add(time.Hour)
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "LUNCH", policyFollowed))
	got = e.pollNow(t, &e.alice, modern, 0)
	want := map[string]any{"type": "user_topic", "stream_id": general, "topic_name": "LUNCH", "last_updated": float64(now.Unix()), "visibility_policy": float64(policyFollowed), "id": float64(1)}
	if len(got) != 1 || !jsonEqual(got[0], want) {
		t.Errorf("following it: got %v, want %v", got, want)
	}
	if got := e.pollNow(t, &e.alice, legacy, 0); len(got) != 1 || !jsonEqual(got[0]["muted_topics"], []any{}) {
		t.Errorf("muted_topics once nothing is muted: got %v, want an empty list", got)
	}
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.secret, "plans", policyUnmuted))
	if got, want := e.userTopicsOf(t, &e.alice), []any{topicItem(e.general, "lunch", now.Unix(), policyFollowed), topicItem(e.secret, "plans", now.Unix(), policyUnmuted)}; !jsonEqual(got, want) {
		t.Errorf("register's user_topics: got %v, want %v", got, want)
	}
	if got := e.userTopicsOf(t, &e.bob); len(got) != 0 {
		t.Errorf("bob's user_topics: got %v, want none", got)
	}

	// register answers muted_topics unless user_topic is asked for too.
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "noise", policyMuted))
	r := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["muted_topics"]`}})
	if want := []any{[]any{"general", "noise", float64(now.Unix())}}; !jsonEqual(r.body["muted_topics"], want) {
		t.Errorf("register's muted_topics: got %v, want %v", r.body["muted_topics"], want)
	}
	r = e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["muted_topics","user_topic"]`}})
	if _, ok := r.body["muted_topics"]; ok {
		t.Errorf("register with user_topic asked for answered muted_topics too")
	}

	// Inherit removes the row; removing what is not there tells nothing.
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "lunch", policyInherit))
	if got := e.pollNow(t, &e.alice, modern, 1); len(got) != 3 || got[2]["visibility_policy"] != float64(policyInherit) || got[2]["topic_name"] != "lunch" {
		t.Errorf("inherit: got %v, want a user_topic event of policy 0 last", got)
	}
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "lunch", policyInherit))
	if got := e.pollNow(t, &e.alice, modern, 4); len(got) != 0 {
		t.Errorf("inherit without a policy: got events %v", got)
	}
	if got, want := e.userTopicsOf(t, &e.alice), []any{topicItem(e.general, "noise", now.Unix(), policyMuted), topicItem(e.secret, "plans", now.Unix(), policyUnmuted)}; !jsonEqual(got, want) {
		t.Errorf("user_topics after inherit: got %v, want %v", got, want)
	}
}

// TestUserTopics_EmptyTopicByName: the empty topic may be named by its
// display name; clients without the empty_topic_name capability are
// told it by that name, in events and in register.
func TestUserTopics_EmptyTopicByName(t *testing.T) {
	e := newTestEnv(t)
	capable := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["user_topic"]`}, "client_capabilities": {`{"notification_settings_null":true,"empty_topic_name":true}`}}).str("queue_id")
	named := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["user_topic"]`}}).str("queue_id")
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, emptyTopicDisplayName, policyFollowed))
	if got := e.pollNow(t, &e.alice, capable, -1); len(got) != 1 || got[0]["topic_name"] != "" {
		t.Errorf("a client that understands empty topics: got %v, want topic_name \"\"", got)
	}
	if got := e.pollNow(t, &e.alice, named, -1); len(got) != 1 || got[0]["topic_name"] != emptyTopicDisplayName {
		t.Errorf("a client that does not: got %v, want topic_name %q", got, emptyTopicDisplayName)
	}
	if got := e.userTopicsOf(t, &e.alice); len(got) != 1 || object(got[0])["topic_name"] != "" {
		t.Errorf("register, empty_topic_name: got %v, want the topic \"\"", got)
	}
	r := e.registerQueue(t, &e.alice, url.Values{"fetch_event_types": {`["user_topic"]`}})
	if list, _ := r.body["user_topics"].([]any); len(list) != 1 || object(list[0])["topic_name"] != emptyTopicDisplayName {
		t.Errorf("register without the capability: got %v, want %q", r.body["user_topics"], emptyTopicDisplayName)
	}
	// "" and the display name are one topic.
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "", policyInherit))
	if got := e.userTopicsOf(t, &e.alice); len(got) != 0 {
		t.Errorf("after inheriting \"\": got %v, want none", got)
	}
}

// TestUserTopics_RefusalsChangeNothing: every bad request gets Zulip's
// words and leaves the user's topics and queues as they were.
func TestUserTopics_RefusalsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	guest, guestKey := mustCreateUser(t, e.st, "guest@example.com", roleGuest, false)
	guestAcct := account{guest, guestKey}
	general, secret := strconv.FormatUint(e.general.ID, 10), strconv.FormatUint(e.secret.ID, 10)
	queues := map[*account]string{}
	for _, a := range []*account{&e.alice, &e.bob, &guestAcct} {
		queues[a] = e.registerQueue(t, a, nil).str("queue_id")
	}
	for _, c := range []struct {
		rule   string
		who    *account
		params url.Values
		code   string
		msg    string
	}{
		{"stream_id is required", &e.alice, url.Values{"topic": {"t"}, "visibility_policy": {"1"}}, "REQUEST_VARIABLE_MISSING", "Missing 'stream_id' argument"},
		{"stream_id is JSON", &e.alice, url.Values{"stream_id": {"general"}, "topic": {"t"}, "visibility_policy": {"1"}}, "BAD_REQUEST", "stream_id is not valid JSON"},
		{"stream_id is an integer", &e.alice, url.Values{"stream_id": {`"` + general + `"`}, "topic": {"t"}, "visibility_policy": {"1"}}, "BAD_REQUEST", "stream_id is not an integer"},
		{"topic is required", &e.alice, url.Values{"stream_id": {general}, "visibility_policy": {"1"}}, "REQUEST_VARIABLE_MISSING", "Missing 'topic' argument"},
		{"a topic of at most 60 characters", &e.alice, url.Values{"stream_id": {general}, "topic": {strings.Repeat("é", 61)}, "visibility_policy": {"1"}}, "BAD_REQUEST", "topic is too long (limit: 60 characters)"},
		{"visibility_policy is required", &e.alice, url.Values{"stream_id": {general}, "topic": {"t"}}, "REQUEST_VARIABLE_MISSING", "Missing 'visibility_policy' argument"},
		{"visibility_policy is one of four", &e.alice, url.Values{"stream_id": {general}, "topic": {"t"}, "visibility_policy": {"4"}}, "BAD_REQUEST", "Invalid visibility_policy: Value error, Not in the list of possible values"},
		{"visibility_policy is JSON", &e.alice, url.Values{"stream_id": {general}, "topic": {"t"}, "visibility_policy": {"muted"}}, "BAD_REQUEST", "visibility_policy is not valid JSON"},
		{"parameters in Zulip's order", &e.alice, url.Values{"topic": {strings.Repeat("x", 61)}, "visibility_policy": {"9"}}, "REQUEST_VARIABLE_MISSING", "Missing 'stream_id' argument"},
		{"a channel that exists", &e.alice, url.Values{"stream_id": {"999999"}, "topic": {"t"}, "visibility_policy": {"1"}}, "BAD_REQUEST", "Invalid channel ID"},
		{"inherit too needs a channel that exists", &e.alice, url.Values{"stream_id": {"999999"}, "topic": {"t"}, "visibility_policy": {"0"}}, "BAD_REQUEST", "Invalid channel ID"},
		{"a private channel one may not read", &e.bob, url.Values{"stream_id": {secret}, "topic": {"t"}, "visibility_policy": {"3"}}, "BAD_REQUEST", "Invalid channel ID"},
		{"a guest reads only the channels they are in", &guestAcct, url.Values{"stream_id": {general}, "topic": {"t"}, "visibility_policy": {"1"}}, "BAD_REQUEST", "Invalid channel ID"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/user_topics", c.params, c.who), http.StatusBadRequest, c.code, c.msg)
			if got := e.userTopicsOf(t, c.who); len(got) != 0 {
				t.Errorf("a refused request left user_topics %v", got)
			}
			if got := e.pollNow(t, c.who, queues[c.who], -1); len(got) != 0 {
				t.Errorf("a refused request told %v", got)
			}
		})
	}
	// Removing a policy needs only the channel to exist (Zulip's
	// access_stream_to_remove_visibility_policy_by_id): nothing to remove,
	// nothing told.
	wantAPISuccess(t, e.setTopicPolicy(t, &e.bob, e.secret, "t", policyInherit))
	if got := e.pollNow(t, &e.bob, queues[&e.bob], -1); len(got) != 0 {
		t.Errorf("inheriting a topic of an unreadable channel: got %v", got)
	}
}

// TestUserTopics_BoundedPerUser: a user keeps at most maxUserTopics
// topics; past it a new one is refused, while changing or removing one
// still works.
func TestUserTopics_BoundedPerUser(t *testing.T) {
	e := newTestEnv(t)
	defer func(n int) { maxUserTopics = n }(maxUserTopics)
	maxUserTopics = 2
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "a", policyMuted))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.secret, "b", policyFollowed))
	wantAPIError(t, e.setTopicPolicy(t, &e.alice, e.general, "c", policyMuted), http.StatusBadRequest, "BAD_REQUEST", errTooManyUserTopics.msg)
	if got := e.userTopicsOf(t, &e.alice); len(got) != 2 {
		t.Errorf("past the bound: got %d topics, want 2", len(got))
	}
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "A", policyFollowed))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.secret, "b", policyInherit))
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "c", policyMuted))
	if got := e.userTopicsOf(t, &e.alice); len(got) != 2 {
		t.Errorf("after a change, a removal and a new one: got %v, want 2 topics", got)
	}
	// Bob's count is his own.
	wantAPISuccess(t, e.setTopicPolicy(t, &e.bob, e.general, "a", policyMuted))
	// The topic_users index holds exactly the rows.
	e.st.view(func(tx *bbolt.Tx) error {
		checkUserTopicIndexes(t, tx)
		for _, c := range []struct {
			topic string
			want  []uint64
		}{{"A", []uint64{e.alice.ID, e.bob.ID}}, {"c", []uint64{e.alice.ID}}, {"b", nil}} {
			if got := topicUsers(tx, e.general.ID, c.topic); !slices.Equal(got, c.want) {
				t.Errorf("topic_users of general > %s: got %v, want %v", c.topic, got, c.want)
			}
		}
		if got := topicUsers(tx, e.secret.ID, "b"); len(got) != 0 {
			t.Errorf("topic_users of secret > b after inherit: got %v", got)
		}
		return nil
	})
}

// TestUserTopics_LegacyMutedTopicsRoute: PATCH
// /users/me/subscriptions/muted_topics mutes (add) and removes any
// policy (remove), by channel name or id, with Zulip's words.
func TestUserTopics_LegacyMutedTopicsRoute(t *testing.T) {
	e := newTestEnv(t)
	const path = "/api/v1/users/me/subscriptions/muted_topics"
	general := strconv.FormatUint(e.general.ID, 10)
	queue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["user_topic"]`}}).str("queue_id")
	policies := func() map[string]float64 {
		out := map[string]float64{}
		for _, item := range e.userTopicsOf(t, &e.alice) {
			out[object(item)["topic_name"].(string)] = object(item)["visibility_policy"].(float64)
		}
		return out
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, path, url.Values{"stream": {"General"}, "topic": {"lunch"}, "op": {"add"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPatch, path, url.Values{"stream_id": {general}, "topic": {"lunch"}, "op": {"add"}}, &e.alice))
	if got := policies(); !jsonEqual(got, map[string]float64{"lunch": policyMuted}) {
		t.Errorf("after add: got %v, want lunch muted", got)
	}
	if got := e.pollNow(t, &e.alice, queue, -1); len(got) != 1 || got[0]["visibility_policy"] != float64(policyMuted) {
		t.Errorf("add twice: got %v, want one user_topic event", got)
	}
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "dinner", policyFollowed))
	wantAPISuccess(t, e.request(t, http.MethodPatch, path, url.Values{"stream_id": {general}, "topic": {"dinner"}, "op": {"remove"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPatch, path, url.Values{"stream": {"general"}, "topic": {"never-muted"}, "op": {"remove"}}, &e.alice))
	if got := policies(); !jsonEqual(got, map[string]float64{"lunch": policyMuted}) {
		t.Errorf("remove takes any policy away: got %v", got)
	}
	secret := strconv.FormatUint(e.secret.ID, 10)
	for _, c := range []struct {
		rule   string
		who    *account
		params url.Values
		code   string
		msg    string
	}{
		{"a channel is named", &e.alice, url.Values{"topic": {"t"}, "op": {"add"}}, "BAD_REQUEST", "Missing 'stream_id' argument"},
		{"by name or by id, not both", &e.alice, url.Values{"stream_id": {general}, "stream": {"general"}, "topic": {"t"}, "op": {"add"}}, "BAD_REQUEST", "Unsupported parameter combination: stream_id, stream"},
		{"topic is required", &e.alice, url.Values{"stream": {"general"}, "op": {"add"}}, "REQUEST_VARIABLE_MISSING", "Missing 'topic' argument"},
		{"a topic of at most 60 characters", &e.alice, url.Values{"stream": {"general"}, "topic": {strings.Repeat("x", 61)}, "op": {"add"}}, "BAD_REQUEST", "topic is too long (limit: 60 characters)"},
		{"op is required", &e.alice, url.Values{"stream": {"general"}, "topic": {"t"}}, "REQUEST_VARIABLE_MISSING", "Missing 'op' argument"},
		{"op is add or remove", &e.alice, url.Values{"stream": {"general"}, "topic": {"t"}, "op": {"toggle"}}, "BAD_REQUEST", "Invalid op: Input should be 'add' or 'remove'"},
		{"stream_id is an integer", &e.alice, url.Values{"stream_id": {"[1]"}, "topic": {"t"}, "op": {"add"}}, "BAD_REQUEST", "stream_id is not an integer"},
		{"add: a channel by a name that exists", &e.alice, url.Values{"stream": {"nowhere"}, "topic": {"t"}, "op": {"add"}}, "BAD_REQUEST", "Invalid channel name 'nowhere'"},
		{"add: a channel by an id that exists", &e.alice, url.Values{"stream_id": {"999999"}, "topic": {"t"}, "op": {"add"}}, "BAD_REQUEST", "Invalid channel ID"},
		{"add: a channel one may read", &e.bob, url.Values{"stream": {"secret"}, "topic": {"t"}, "op": {"add"}}, "BAD_REQUEST", "Invalid channel name 'secret'"},
		{"add: a channel one may read, by id", &e.bob, url.Values{"stream_id": {secret}, "topic": {"t"}, "op": {"add"}}, "BAD_REQUEST", "Invalid channel ID"},
		{"remove: a channel by a name that exists", &e.alice, url.Values{"stream": {"nowhere"}, "topic": {"lunch"}, "op": {"remove"}}, "BAD_REQUEST", "Topic is not muted"},
		{"remove: a channel by an id that exists", &e.alice, url.Values{"stream_id": {"999999"}, "topic": {"lunch"}, "op": {"remove"}}, "BAD_REQUEST", "Topic is not muted"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			r := e.request(t, http.MethodPatch, path, c.params, c.who)
			wantAPIError(t, r, http.StatusBadRequest, c.code, c.msg)
			if c.rule == "by name or by id, not both" && r.body["parameters"] != "stream_id, stream" {
				t.Errorf("parameters: got %v, want \"stream_id, stream\"", r.body["parameters"])
			}
			if got := policies(); !jsonEqual(got, map[string]float64{"lunch": policyMuted}) {
				t.Errorf("a refused request changed alice's topics: %v", got)
			}
		})
	}
	if got := e.pollNow(t, &e.alice, queue, 0); len(got) != 2 {
		t.Errorf("events after the first: got %v, want follow and remove of dinner alone", got)
	}
}

// checkUserTopicIndexes checks that the user_topics rows, each user's
// count of them and the topic_users index agree.
func checkUserTopicIndexes(t *testing.T, tx *bbolt.Tx) {
	t.Helper()
	counts, rows := map[uint64]uint64{}, map[string]bool{}
	tx.Bucket(bucketUserTopics).ForEach(func(k, v []byte) error {
		if len(k) == 8 {
			counts[btoi(k)] = btoi(v)
			return nil
		}
		row, ok := decodeUserTopic(k, v)
		if !ok || row.Policy < policyMuted || row.Policy > policyFollowed {
			t.Errorf("user_topics: a malformed row %x → %x", k, v)
			return nil
		}
		counts[btoi(k)]--
		rows[string(append(topicUsersPrefix(row.ChannelID, row.Topic), k[:8]...))] = true
		return nil
	})
	for user, n := range counts {
		if n != 0 {
			t.Errorf("user_topics: user %d's count is off by %d", user, int64(n))
		}
	}
	tx.Bucket(bucketTopicUsers).ForEach(func(k, _ []byte) error {
		if !rows[string(k)] {
			t.Errorf("topic_users: %x names no row", k)
		}
		delete(rows, string(k))
		return nil
	})
	for k := range rows {
		t.Errorf("topic_users: the row %x is not indexed", k)
	}
}
