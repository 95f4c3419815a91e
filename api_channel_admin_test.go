package main

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

func channelPath(ch channel) string { return "/api/v1/streams/" + strconv.FormatUint(ch.ID, 10) }

// channelState is what a refused administration must leave as it was.
func (e *testEnv) channelState(t *testing.T) string {
	t.Helper()
	list, err := e.st.channels()
	if err != nil {
		t.Fatal(err)
	}
	var subs [][]uint64
	e.st.view(func(tx *bbolt.Tx) error {
		for _, ch := range list {
			subs = append(subs, subscriberIDs(tx, ch.ID))
		}
		return nil
	})
	return fmt.Sprint(plainJSON(list), subs)
}

// channelEvents are the events of a type in a queue, polled now.
func (e *testEnv) channelEvents(t *testing.T, a *account, queue, eventType string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range e.pollNow(t, a, queue, -1) {
		if ev["type"] == eventType {
			out = append(out, ev)
		}
	}
	return out
}

// PATCH /streams/{id}: an administrator renames, describes and changes
// a channel's privacy; everyone who may see it hears each change as
// Zulip tells it; a member who may not administer it is refused (told so
// if they can read it, told it does not exist if not), and every refusal
// changes nothing.
func TestUpdateChannel_AdministratorChangesWhatOthersMayNot(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.alice, nil).str("queue_id")
	general, secret := channelPath(e.general), channelPath(e.secret)
	before := e.channelState(t)
	for _, c := range []struct {
		name   string
		who    *account
		path   string
		params url.Values
		code   string
		msg    string
	}{
		{"a member who can read it", &e.alice, general, url.Values{"new_name": {"mine"}}, "BAD_REQUEST", "You do not have permission to administer this channel."},
		{"a member who cannot see it", &e.bob, secret, url.Values{"description": {"mine"}}, "BAD_REQUEST", "Invalid channel ID"},
		{"no such channel", &e.admin, "/api/v1/streams/9999", url.Values{"description": {"x"}}, "BAD_REQUEST", "Invalid channel ID"},
		{"the same name", &e.admin, general, url.Values{"new_name": {" general "}}, "BAD_REQUEST", "Channel already has that name."},
		{"another channel's name", &e.admin, general, url.Values{"new_name": {"Secret"}}, "BAD_REQUEST", "Channel name already in use."},
		{"an empty name", &e.admin, general, url.Values{"new_name": {"  "}}, "BAD_REQUEST", "Channel name can't be empty."},
		{"protected history", &e.admin, general, url.Values{"is_private": {"true"}}, "BAD_REQUEST", "Invalid parameters"},
		{"public without history", &e.admin, general, url.Values{"history_public_to_subscribers": {"false"}}, "BAD_REQUEST", "Invalid parameters"},
		{"web-public", &e.admin, general, url.Values{"is_web_public": {"true"}}, "BAD_REQUEST", "Web-public channels are not enabled."},
		{"a private default", &e.admin, secret, url.Values{"is_default_stream": {"true"}}, "BAD_REQUEST", "A default channel cannot be private."},
		{"retention, not an owner", &e.admin, general, url.Values{"message_retention_days": {"30"}}, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner"},
		{"retention", &e.owner, general, url.Values{"message_retention_days": {"30"}}, "BAD_REQUEST", "Invalid parameters"},
		{"topics policy", &e.admin, general, url.Values{"topics_policy": {"allow_empty_topic"}}, "BAD_REQUEST", "Insufficient permission"},
		{"unarchive an active channel", &e.admin, general, url.Values{"is_archived": {"false"}}, "BAD_REQUEST", "Channel is not currently deactivated"},
		{"a stale old value", &e.admin, general, url.Values{"can_send_message_group": {`{"new":2,"old":5}`}}, "EXPECTATION_MISMATCH", "'old' value does not match the expected value."},
		{"no new value", &e.admin, general, url.Values{"can_send_message_group": {`{"old":6}`}}, "BAD_REQUEST", "new key is missing from can_send_message_group"},
		{"role:internet", &e.admin, general, url.Values{"can_send_message_group": {`{"new":7}`}}, "BAD_REQUEST", "'can_send_message_group' setting cannot be set to 'role:internet' group."},
		{"a name change refused later", &e.admin, general, url.Values{"new_name": {"lobby"}, "can_send_message_group": {`{"new":99}`}}, "BAD_REQUEST", "Invalid user group"},
	} {
		r := e.request(t, http.MethodPatch, c.path, c.params, c.who)
		wantAPIError(t, r, 400, c.code, c.msg)
		if after := e.channelState(t); after != before {
			t.Errorf("%s: channels changed from %s to %s", c.name, before, after)
		}
	}

	wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{"new_name": {"lobby"}, "description": {"Where\nwe meet"}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{"is_private": {"true"}, "history_public_to_subscribers": {"true"}}, &e.admin))
	o := e.streamObject(t, &e.alice, "lobby")
	if o["description"] != "Where we meet" || o["rendered_description"] != "<p>Where we meet</p>" || o["invite_only"] != true || o["history_public_to_subscribers"] != true {
		t.Errorf("lobby: got %v", o)
	}
	var got []string
	for _, ev := range e.channelEvents(t, &e.alice, queue, "stream") {
		got = append(got, fmt.Sprint(ev["op"], " ", ev["property"], "=", ev["value"], " name=", ev["name"], " ", ev["rendered_description"], ev["history_public_to_subscribers"]))
	}
	want := []string{"update description=Where we meet name=general <p>Where we meet</p><nil>", "update name=lobby name=general <nil> <nil>",
		"update invite_only=true name=lobby <nil> true"}
	if !slices.Equal(got, want) {
		t.Errorf("alice's stream events:\n got %q\nwant %q", got, want)
	}
	// Subscribers keep their access to a channel made private; others
	// lose it.
	wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/users/me/"+strconv.FormatUint(e.general.ID, 10)+"/topics", nil, &e.alice))
	if r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"lobby"}, "topic": {"t"}, "content": {"x"}}, &e.owner); r.status != 400 {
		t.Errorf("the owner, not subscribed, posts to the private lobby: got %d %s", r.status, r.raw)
	}
}

// A channel's group settings: who may post, who administers it. A member
// made its administrator may change it; the posting rule holds at once,
// and its legacy stream_post_policy is told beside it.
func TestUpdateChannel_GroupSettingsAreHonoured(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	general := channelPath(e.general)
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{"can_send_message_group": {`{"new":2,"old":6}`}}, &e.admin))
	post := url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"x"}}
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/messages", post, &e.bob), 400, "BAD_REQUEST", "You do not have permission to post in this channel.")
	var props []string
	for _, ev := range e.channelEvents(t, &e.bob, queue, "stream") {
		props = append(props, fmt.Sprint(ev["property"], "=", ev["value"]))
	}
	if want := []string{"can_send_message_group=2", "stream_post_policy=2", "is_announcement_only=true"}; !slices.Equal(props, want) {
		t.Errorf("bob's events: got %q, want %q", props, want)
	}
	admin := url.Values{"can_administer_channel_group": {`{"new":{"direct_members":[` + strconv.FormatUint(e.alice.ID, 10) + `],"direct_subgroups":[]}}`}}
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, admin, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{"can_send_message_group": {`{"new":6}`}, "description": {"alice's now"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", post, &e.bob))
	// Settings zulite acts on since this issue: moving and resolving in
	// the channel; deleting too, but only members of the organisation's
	// can_set_delete_message_policy_group (role:nobody) may widen it.
	for _, name := range []string{"can_delete_own_message_group", "can_delete_any_message_group"} {
		wantAPIError(t, e.request(t, http.MethodPatch, general, url.Values{name: {`{"new":5}`}}, &e.owner), 400, "BAD_REQUEST", "Insufficient permission")
		wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{name: {`{"new":8}`}}, &e.owner))
	}
	for _, name := range []string{"can_move_messages_out_of_channel_group", "can_move_messages_within_channel_group", "can_resolve_topics_group"} {
		wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{name: {`{"new":5}`}}, &e.alice))
		if got := e.streamObject(t, &e.bob, "general")[name]; got != 5.0 {
			t.Errorf("%s: got %v, want 5", name, got)
		}
	}
}

// DELETE /streams/{id} archives a channel: nobody may post in it, it
// leaves the listings but for those who ask for archived channels, and
// clients with archived_channels hear is_archived where the others hear
// of its deletion. PATCH is_archived=false brings it back.
func TestArchiveChannel_StopsPostingAndUnarchiveBringsItBack(t *testing.T) {
	e := newTestEnv(t)
	plain := e.registerQueue(t, &e.bob, nil).str("queue_id")
	capable := e.registerQueue(t, &e.bob, url.Values{"client_capabilities": {`{"archived_channels":true}`}}).str("queue_id")
	general := channelPath(e.general)
	before := e.channelState(t)
	wantAPIError(t, e.request(t, http.MethodDelete, general, nil, &e.bob), 400, "BAD_REQUEST", "You do not have permission to administer this channel.")
	wantAPIError(t, e.request(t, http.MethodDelete, channelPath(e.secret), nil, &e.bob), 400, "BAD_REQUEST", "Invalid channel ID")
	if after := e.channelState(t); after != before {
		t.Errorf("refused archivings changed %s to %s", before, after)
	}
	wantAPISuccess(t, e.request(t, http.MethodDelete, general, nil, &e.admin))
	wantAPIError(t, e.request(t, http.MethodDelete, general, nil, &e.admin), 400, "BAD_REQUEST", "Channel is already deactivated")
	post := url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"x"}}
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/messages", post, &e.bob), 400, "BAD_REQUEST", "Not authorized to send to channel 'general'")
	list := func(params url.Values) []string {
		r := e.request(t, http.MethodGet, "/api/v1/streams", params, &e.bob)
		wantAPISuccess(t, r)
		var names []string
		for _, s := range r.body["streams"].([]any) {
			o := s.(map[string]any)
			names = append(names, fmt.Sprint(o["name"], " ", o["is_archived"]))
		}
		return names
	}
	if got := list(nil); len(got) != 0 {
		t.Errorf("GET /streams: got %v, want none", got)
	}
	if got := list(url.Values{"exclude_archived": {"false"}}); !slices.Equal(got, []string{"general true"}) {
		t.Errorf("GET /streams exclude_archived=false: got %v", got)
	}
	subs := e.request(t, http.MethodGet, "/api/v1/users/me/subscriptions", nil, &e.bob)
	if n := len(subs.body["subscriptions"].([]any)); n != 0 {
		t.Errorf("bob's subscriptions: got %d, want none listed", n)
	}
	for _, c := range []struct {
		queue, want string
	}{{plain, "delete"}, {capable, "update is_archived true"}} {
		var got []string
		for _, ev := range e.channelEvents(t, &e.bob, c.queue, "stream") {
			got = append(got, fmt.Sprint(ev["op"], " ", ev["property"], " ", ev["value"]))
		}
		if len(got) != 1 || got[0] != c.want && got[0] != c.want+" <nil> <nil>" {
			t.Errorf("queue %s: got %q, want %q", c.queue, got, c.want)
		}
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{"is_archived": {"false"}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages", post, &e.bob))
	if got := e.channelEvents(t, &e.bob, plain, "stream"); len(got) != 2 || got[1]["op"] != "create" {
		t.Errorf("plain queue after unarchiving: got %v", got)
	}
}

// POST /streams/{id}/delete_topic deletes a topic's messages in batches,
// each its own write, with their unread state, and answers whether it
// deleted them all in its time; administrators only.
func TestDeleteTopic_DeletesInBatchesAndSaysWhenComplete(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.alice, url.Values{"client_capabilities": {`{"bulk_message_deletion":true}`}}).str("queue_id")
	const n = 2*topicDeleteBatch + 30
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.st.sendMessage(e.bob.user, channelRef{ID: e.general.ID}, "doomed", "m"+strconv.Itoa(i), "test"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	kept := e.sendAs(t, e.bob, e.general, "kept")
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "doomed", policyFollowed))
	path := channelPath(e.general) + "/delete_topic"
	before := e.channelState(t)
	wantAPIError(t, e.request(t, http.MethodPost, path, url.Values{"topic_name": {"doomed"}}, &e.alice), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator")
	wantAPIError(t, e.request(t, http.MethodPost, path, nil, &e.admin), 400, "REQUEST_VARIABLE_MISSING", "Missing 'topic_name' argument")
	if got := len(mustUnread(t, e.st, e.alice.user, e.general)); got != n+1 {
		t.Fatalf("alice's unread before: got %d, want %d", got, n+1)
	}
	if after := e.channelState(t); after != before {
		t.Errorf("refusals changed %s", after)
	}
	e.server.topicDeleteTime = time.Nanosecond // out of time before the first batch
	r := e.request(t, http.MethodPost, path, url.Values{"topic_name": {"doomed"}}, &e.admin)
	wantAPISuccess(t, r)
	if r.body["complete"] != false {
		t.Errorf("out of time: got %v, want complete false", r.body)
	}
	e.server.topicDeleteTime = 0
	r = e.request(t, http.MethodPost, path, url.Values{"topic_name": {"doomed"}}, &e.admin)
	wantAPISuccess(t, r)
	if r.body["complete"] != true {
		t.Errorf("got %v, want complete true", r.body)
	}
	if got := mustUnread(t, e.st, e.alice.user, e.general); !slices.Equal(got, []uint64{kept}) {
		t.Errorf("alice's unread after: got %v, want [%d]", got, kept)
	}
	topics, err := e.st.channelTopics(e.alice.user, e.general.ID)
	if err != nil || len(topics) != 1 || topics[0].Name != "kept" {
		t.Errorf("topics after: %v %v", topics, err)
	}
	var batches []int
	for _, ev := range e.channelEvents(t, &e.alice, queue, "delete_message") {
		batches = append(batches, len(ev["message_ids"].([]any)))
	}
	if !slices.Equal(batches, []int{topicDeleteBatch, topicDeleteBatch, 30}) {
		t.Errorf("delete_message events' sizes: got %v", batches)
	}
	if got := e.channelEvents(t, &e.alice, queue, "user_topic"); len(got) != 2 || got[1]["visibility_policy"] != 0.0 {
		t.Errorf("alice's user_topic events: got %v, want her policy reset", got)
	}
}

// A large topic's deletion shares the writer with everyone: no
// transaction holds it long, and other writes go between its batches.
func TestDeleteTopic_LargeTopicDoesNotStallOtherWriters(t *testing.T) {
	e := newTestEnv(t)
	const n = 20 * topicDeleteBatch
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 16 {
				if _, err := e.st.sendMessage(e.bob.user, channelRef{ID: e.general.ID}, "big", "m", "test"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var mu sync.Mutex
	var longest, total time.Duration
	var commits int
	hooks := *e.st.hooks.Load()
	inner := hooks.commits
	hooks.commits = func(writes int, elapsed time.Duration) {
		mu.Lock()
		longest, total, commits = max(longest, elapsed), total+elapsed, commits+1
		mu.Unlock()
		if inner != nil {
			inner(writes, elapsed)
		}
	}
	e.st.hooks.Store(&hooks)
	done := make(chan bool)
	go func() {
		complete, err := e.st.deleteTopic(e.admin.user, e.general.ID, "big", time.Now().Add(time.Minute))
		if err != nil {
			t.Error(err)
		}
		done <- complete
	}()
	// Another writer while the topic goes: each of its sends is answered
	// while messages of the topic are still left.
	interleaved := 0
	for range 5 {
		e.sendAs(t, e.alice, e.general, "other")
		var left int
		e.st.view(func(tx *bbolt.Tx) error { left = len(newestInTopic(tx, e.general.ID, "big", n)); return nil })
		if left > 0 {
			interleaved++
		}
	}
	if !<-done {
		t.Fatal("deleteTopic: not complete")
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d commits, longest %v, all %v", commits, longest, total)
	if commits < n/topicDeleteBatch {
		t.Errorf("commits: got %d, want at least %d (one a batch)", commits, n/topicDeleteBatch)
	}
	if longest > total/5 {
		t.Errorf("longest transaction %v of %v in all: the work was not split", longest, total)
	}
	if interleaved == 0 {
		t.Errorf("no other write was answered while the topic was being deleted")
	}
}

// GET /streams/{id}/members: the active subscribers, for anyone who may
// see the channel.
func TestChannelMembers_ForThoseWhoMaySeeTheChannel(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		who  *account
		ch   channel
		want []uint64
	}{{&e.bob, e.general, []uint64{e.alice.ID, e.bob.ID}}, {&e.admin, e.secret, []uint64{e.alice.ID}}, {&e.alice, e.secret, []uint64{e.alice.ID}}} {
		r := e.request(t, http.MethodGet, channelPath(c.ch)+"/members", nil, c.who)
		wantAPISuccess(t, r)
		var got []uint64
		for _, id := range r.body["subscribers"].([]any) {
			got = append(got, uint64(id.(float64)))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s, %s: got %v, want %v", c.who.Email, c.ch.Name, got, c.want)
		}
	}
	wantAPIError(t, e.request(t, http.MethodGet, channelPath(e.secret)+"/members", nil, &e.bob), 400, "BAD_REQUEST", "Invalid channel ID")
}

// POST and DELETE /default_streams: administrators choose the channels
// new users join; register and the default_streams event list them.
func TestDefaultChannels_AdministratorsChooseWhatNewUsersJoin(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	id := func(ch channel) url.Values { return url.Values{"stream_id": {strconv.FormatUint(ch.ID, 10)}} }
	before := e.channelState(t)
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/default_streams", id(e.general), &e.bob), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator")
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/default_streams", id(e.secret), &e.owner), 400, "BAD_REQUEST", "Invalid channel ID")
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/default_streams", url.Values{"stream_id": {"9999"}}, &e.admin), 400, "BAD_REQUEST", "Invalid channel ID")
	if err := e.st.addSubscriptionForTest(e.admin.user, e.secret); err != nil {
		t.Fatal(err)
	}
	before = e.channelState(t)
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/default_streams", id(e.secret), &e.admin), 400, "BAD_REQUEST", "Private channels cannot be made default.")
	if after := e.channelState(t); after != before {
		t.Errorf("refusals changed %s", after)
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/default_streams", id(e.general), &e.admin))
	state := e.registerQueue(t, &e.bob, nil)
	if got := fmt.Sprint(state.body["realm_default_streams"]); got != fmt.Sprint([]any{float64(e.general.ID)}) {
		t.Errorf("realm_default_streams: got %s", got)
	}
	if got := e.channelEvents(t, &e.bob, queue, "default_streams"); len(got) != 1 || fmt.Sprint(got[0]["default_streams"]) != fmt.Sprint([]any{float64(e.general.ID)}) {
		t.Errorf("default_streams events: got %v", got)
	}
	newcomer := mustCreateUserAccount(t, e, "new@example.com")
	if !e.subscribed(newcomer, e.general) {
		t.Errorf("a new user did not join the default channel")
	}
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/default_streams", id(e.general), &e.admin))
	state = e.registerQueue(t, &e.bob, nil)
	if got := fmt.Sprint(state.body["realm_default_streams"]); got != "[]" {
		t.Errorf("realm_default_streams after removal: got %s", got)
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, channelPath(e.general), url.Values{"is_default_stream": {"true"}}, &e.admin))
	wantAPIError(t, e.request(t, http.MethodPatch, channelPath(e.general), url.Values{"is_default_stream": {"false"}}, &e.alice), 400, "BAD_REQUEST", "You do not have permission to administer this channel.")
	wantAPISuccess(t, e.request(t, http.MethodDelete, channelPath(e.general), nil, &e.admin)) // archiving ends it
	if ids, _ := e.st.defaultChannels(); len(ids) != 0 {
		t.Errorf("default channels after archiving: got %v", ids)
	}
}

func mustCreateUserAccount(t *testing.T, e *testEnv, email string) user {
	t.Helper()
	u, _, err := e.st.createUser(email, "New", roleMember, false)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (e *testEnv) subscribed(u user, ch channel) bool {
	var yes bool
	e.st.view(func(tx *bbolt.Tx) error { yes = isSubscribed(tx, u.ID, ch.ID); return nil })
	return yes
}

// An export carries an archived channel as Zulip's deactivated stream and
// the default channels as zerver_defaultstream rows, which Zulip's
// importer reads.
func TestExport_CarriesArchivedAndDefaultChannels(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/default_streams", url.Values{"stream_id": {strconv.FormatUint(e.general.ID, 10)}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodDelete, channelPath(e.secret), nil, &e.admin))
	e.sendAs(t, e.bob, e.general, "exported")
	dir := mustExport(t, e.st)
	checkZulipImportable(t, dir)
	var realm map[string]any
	readJSONFile(t, filepath.Join(dir, "realm.json"), &realm)
	if got := fmt.Sprint(realm["zerver_defaultstream"]); got != fmt.Sprintf("[map[id:1 realm:%d stream:%d]]", exportRealmID, e.general.ID) {
		t.Errorf("zerver_defaultstream: got %s", got)
	}
	for _, row := range realm["zerver_stream"].([]any) {
		s := row.(map[string]any)
		if want := s["name"] == "secret"; s["deactivated"] != want {
			t.Errorf("stream %v: deactivated %v, want %v", s["name"], s["deactivated"], want)
		}
	}
}

// A private channel's changes, archiving and default-channel refusals
// reach only those who may see it: bob, outside it, hears nothing of
// them, while alice, inside, hears each.
func TestUpdateChannel_PrivateChannelsChangesReachOnlyThoseWhoSeeIt(t *testing.T) {
	e := newTestEnv(t)
	bobs := e.registerQueue(t, &e.bob, nil).str("queue_id")
	alices := e.registerQueue(t, &e.alice, nil).str("queue_id")
	secret := channelPath(e.secret)
	wantAPISuccess(t, e.request(t, http.MethodPatch, secret, url.Values{"new_name": {"hidden"}, "description": {"the plan"}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodPatch, secret, url.Values{"can_send_message_group": {`{"new":2}`}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodDelete, secret, nil, &e.admin))
	if got := e.channelEvents(t, &e.bob, bobs, "stream"); len(got) != 0 {
		t.Errorf("bob heard of the private channel: %v", got)
	}
	if got := e.channelEvents(t, &e.alice, alices, "stream"); len(got) != 6 { // description, name, three of posting, the deletion
		t.Errorf("alice's stream events: got %d %v, want 6", len(got), got)
	}
}

// An archived channel's messages stay readable but nobody may change
// them, nor mark the channel read, type to it or schedule a message to
// it, as Zulip 11 refuses each: access_message(is_modifying_message=True)
// for an edit, a move out, a deletion, a reaction, a submessage and the
// editing notice ("Invalid message(s)"); access_stream_by_id, which
// wants an active channel, for mark_stream_as_read, mark_topic_as_read,
// typing and a move in ("Invalid channel ID"); and
// access_stream_for_send_message for a scheduled message. Each refusal
// changes nothing.
func TestArchivedChannel_MessagesStayButNothingChangesThem(t *testing.T) {
	e := newTestEnv(t)
	inGeneral := e.sendToGeneral(t, &e.alice, "kept")
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/"+strconv.FormatUint(inGeneral, 10)+"/reactions", url.Values{"emoji_name": {"tada"}}, &e.alice))
	inSecret := e.sendAs(t, e.alice, e.secret, "elsewhere")
	wantAPISuccess(t, e.request(t, http.MethodDelete, channelPath(e.general), nil, &e.admin))
	before := e.channelState(t)
	messageState := func() string {
		var out string
		e.st.view(func(tx *bbolt.Tx) error {
			for _, id := range []uint64{inGeneral, inSecret} {
				m, err := messageByID(tx, id)
				out += fmt.Sprint(m.ChannelID, m.Topic, m.Content, err, plainJSON(reactionsOf(tx, id)), submessagesOf(tx, id))
			}
			out += fmt.Sprint(unreadAmong(tx, e.bob.ID, e.general.ID, []uint64{inGeneral}))
			return nil
		})
		return out
	}
	messages := messageState()
	id := strconv.FormatUint(inGeneral, 10)
	general := strconv.FormatUint(e.general.ID, 10)
	for _, c := range []struct {
		name, method, path string
		params             url.Values
		who                *account
		msg                string
	}{
		{"mark the channel read", http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {general}}, &e.bob, "Invalid channel ID"},
		{"mark a topic read", http.MethodPost, "/api/v1/mark_topic_as_read", url.Values{"stream_id": {general}, "topic_name": {"polls"}}, &e.bob, "Invalid channel ID"},
		{"edit its content", http.MethodPatch, "/api/v1/messages/" + id, url.Values{"content": {"changed"}}, &e.alice, "Invalid message(s)"},
		{"rename its topic", http.MethodPatch, "/api/v1/messages/" + id, url.Values{"topic": {"new"}}, &e.admin, "Invalid message(s)"},
		{"move it out", http.MethodPatch, "/api/v1/messages/" + id, url.Values{"stream_id": {strconv.FormatUint(e.secret.ID, 10)}}, &e.admin, "Invalid message(s)"},
		{"move one in", http.MethodPatch, "/api/v1/messages/" + strconv.FormatUint(inSecret, 10), url.Values{"stream_id": {general}}, &e.alice, "Invalid channel ID"},
		{"delete it", http.MethodDelete, "/api/v1/messages/" + id, nil, &e.admin, "Invalid message(s)"},
		{"react to it", http.MethodPost, "/api/v1/messages/" + id + "/reactions", url.Values{"emoji_name": {"smile"}}, &e.bob, "Invalid message(s)"},
		{"take a reaction back", http.MethodDelete, "/api/v1/messages/" + id + "/reactions", url.Values{"emoji_name": {"tada"}}, &e.alice, "Invalid message(s)"},
		{"add a submessage", http.MethodPost, submessagePath, url.Values{"message_id": {id}, "msg_type": {"widget"}, "content": {`{"type":"vote"}`}}, &e.alice, "Invalid message(s)"},
		{"say it is being edited", http.MethodPost, "/api/v1/messages/" + id + "/typing", url.Values{"op": {"start"}}, &e.alice, "Invalid message(s)"},
		{"type to it", http.MethodPost, "/api/v1/typing", url.Values{"type": {"stream"}, "stream_id": {general}, "topic": {"polls"}, "op": {"start"}}, &e.bob, "Invalid channel ID"},
		{"schedule a message to it", http.MethodPost, "/api/v1/scheduled_messages", channelPost(e.general, "later", "x", time.Now().Unix()+3600), &e.bob, "Not authorized to send to channel 'general'"},
	} {
		wantAPIError(t, e.request(t, c.method, c.path, c.params, c.who), 400, "BAD_REQUEST", c.msg)
		if after := e.channelState(t); after != before {
			t.Errorf("%s: channels changed from %s to %s", c.name, before, after)
		}
		if after := messageState(); after != messages {
			t.Errorf("%s: messages changed from %s to %s", c.name, messages, after)
		}
	}
	if r := e.request(t, http.MethodGet, "/api/v1/scheduled_messages", nil, &e.bob); len(r.body["scheduled_messages"].([]any)) != 0 {
		t.Errorf("bob's scheduled messages: got %s, want none", r.raw)
	}
	// Reading is not modifying: its history and the message itself stay
	// readable.
	wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/messages/"+id+"/history", nil, &e.bob))
	wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/messages/"+id, nil, &e.bob))
}

// A rename to a name already taken is refused as Zulip's
// check_stream_name_available refuses it: the channel's administrator
// who may see the channel holding the name is told it is in use; one who
// may not see it (a private channel they are not in) is told only
// "Insufficient permission", so that its existence does not leak. Both
// change nothing.
func TestUpdateChannel_RenameToATakenNameTellsOnlyThoseWhoMaySeeIt(t *testing.T) {
	e := newTestEnv(t)
	general := channelPath(e.general)
	admin := url.Values{"can_administer_channel_group": {`{"new":{"direct_members":[` + strconv.FormatUint(e.bob.ID, 10) + `],"direct_subgroups":[]}}`}}
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, admin, &e.admin))
	before := e.channelState(t)
	wantAPIError(t, e.request(t, http.MethodPatch, general, url.Values{"new_name": {"SECRET"}}, &e.bob), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPIError(t, e.request(t, http.MethodPatch, general, url.Values{"new_name": {"SECRET"}}, &e.admin), 400, "BAD_REQUEST", "Channel name already in use.")
	if after := e.channelState(t); after != before {
		t.Errorf("refused renames changed %s to %s", before, after)
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{"new_name": {"lobby"}}, &e.bob))
}

// Subscribing to an archived channel by name: Zulip 11's list_to_streams
// finds archived channels by name too (bulk_get_streams with
// include_archived_channels=True), and filter_stream_authorization_for_adding_subscribers
// asks only for content access, so the caller joins the archived channel
// (its subscribers keep it, as archiving keeps them) rather than being
// refused or given a new channel of that name; a private archived channel
// they may not read is refused as an active one is.
func TestSubscribe_ArchivedChannelByNameJoinsIt(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.request(t, http.MethodDelete, channelPath(e.general), nil, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodDelete, channelPath(e.secret), nil, &e.admin))
	before, _ := e.st.channels()
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"secret"}]`}}, &e.bob), 400, "BAD_REQUEST", "Unable to access channel (secret).")
	if e.subscribed(e.bob.user, e.secret) {
		t.Errorf("bob joined the private archived channel he may not read")
	}
	r := e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"General"}]`}}, &e.owner)
	wantAPISuccess(t, r)
	if got := fmt.Sprint(r.body["subscribed"]); got != fmt.Sprintf("map[%d:[general]]", e.owner.ID) {
		t.Errorf("subscribed: got %s", got)
	}
	after, _ := e.st.channels()
	if len(after) != len(before) || !e.subscribed(e.owner.user, e.general) || !after[0].Archived {
		t.Errorf("channels after subscribing: got %s, want %s with the owner in the archived general", plainJSON(after), plainJSON(before))
	}
}
