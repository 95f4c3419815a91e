package main

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// send posts content to general's topic as a, through the API.
func (e *testEnv) sendContent(t *testing.T, a *account, topic, content string) response {
	t.Helper()
	return e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {topic}, "content": {content}}, a)
}

// flagsOf is a's flags on one message as GET /messages shows them.
func (e *testEnv) flagsOf(t *testing.T, a *account, id uint64) []string {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {strconv.FormatUint(id, 10)}, "num_before": {"0"}, "num_after": {"0"},
		"narrow": {`[["channel","general"]]`}}, a)
	wantAPISuccess(t, r)
	msgs := r.body["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("GET /messages anchored at %d: got %d messages", id, len(msgs))
	}
	var flags []string
	for _, f := range msgs[0].(map[string]any)["flags"].([]any) {
		flags = append(flags, f.(string))
	}
	return flags
}

func mentionFlagsIn(flags []string) []string {
	var out []string
	for _, f := range flags {
		if strings.Contains(f, "mentioned") {
			out = append(out, f)
		}
	}
	return out
}

// newMentionEnv adds Carol Danvers, a member of general with a name of
// her own.
func newMentionEnv(t *testing.T) (*testEnv, account) {
	e := newTestEnv(t)
	u, key, err := e.st.createUser("carol@example.com", "Carol Danvers", roleMember, false)
	if err != nil {
		t.Fatal(err)
	}
	mustSubscribe(t, e.st, u, "general")
	return e, account{u, key}
}

func TestMentions_FlagsEachRecipientAsZulipDoes(t *testing.T) {
	e, carol := newMentionEnv(t)
	cid := strconv.FormatUint(carol.ID, 10)
	e.sendContent(t, &e.bob, "t", "earlier") // bob takes part in topic t
	for _, c := range []struct {
		rule         string
		content      string
		carol, alice []string
	}{
		{"by name, any case", "hi @**carol danvers**", []string{"mentioned"}, nil},
		{"name and id", "hi @**Carol Danvers|" + cid + "**", []string{"mentioned"}, nil},
		{"id alone", "hi @**|" + cid + "**", []string{"mentioned"}, nil},
		{"a name that is not the id's stays text", "hi @**Alice|" + cid + "**", nil, nil},
		{"silent mentions notify nobody", "hi @_**Carol Danvers**", nil, nil},
		{"in a quote a mention is silent", "> @**Carol Danvers** said", nil, nil},
		{"in code it is no mention", "`@**Carol Danvers**`", nil, nil},
		{"@**all** flags every recipient", "@**all** lunch", []string{"stream_wildcard_mentioned"}, []string{"stream_wildcard_mentioned"}},
		{"@**everyone**", "@**everyone**", []string{"stream_wildcard_mentioned"}, []string{"stream_wildcard_mentioned"}},
		{"@**channel**", "@**channel**", []string{"stream_wildcard_mentioned"}, []string{"stream_wildcard_mentioned"}},
		{"@**stream**", "@**stream**", []string{"stream_wildcard_mentioned"}, []string{"stream_wildcard_mentioned"}},
		{"silent wildcard", "@_**all**", nil, nil},
		{"both", "@**Carol Danvers** @**all**", []string{"mentioned", "stream_wildcard_mentioned"}, []string{"stream_wildcard_mentioned"}},
	} {
		r := e.sendContent(t, &e.alice, "lunch", c.content)
		wantAPISuccess(t, r)
		id := uint64(r.body["id"].(float64))
		if got := mentionFlagsIn(e.flagsOf(t, &carol, id)); !slices.Equal(got, c.carol) {
			t.Errorf("%s: carol's mention flags %v, want %v", c.rule, got, c.carol)
		}
		if got := mentionFlagsIn(e.flagsOf(t, &e.alice, id)); !slices.Equal(got, c.alice) {
			t.Errorf("%s: the sender's mention flags %v, want %v", c.rule, got, c.alice)
		}
	}
	// @**topic** flags the topic's participants only: bob sent to t, the
	// sender is one, carol is not.
	r := e.sendContent(t, &e.alice, "t", "@**topic** done?")
	id := uint64(r.body["id"].(float64))
	for _, c := range []struct {
		who  *account
		want []string
	}{{&e.bob, []string{"topic_wildcard_mentioned"}}, {&e.alice, []string{"topic_wildcard_mentioned"}}, {&carol, nil}} {
		if got := mentionFlagsIn(e.flagsOf(t, c.who, id)); !slices.Equal(got, c.want) {
			t.Errorf("@**topic**: %s's mention flags %v, want %v", c.who.Email, got, c.want)
		}
	}
}

func TestMentions_RenderedWithZulipsClasses(t *testing.T) {
	e, carol := newMentionEnv(t)
	cid := strconv.FormatUint(carol.ID, 10)
	gid := strconv.FormatUint(e.general.ID, 10)
	first := e.sendContent(t, &e.bob, "lunch", "first")
	firstID := strconv.FormatUint(uint64(first.body["id"].(float64)), 10)
	for _, c := range []struct{ content, want string }{
		{"@**carol danvers**", `<p><span class="user-mention" data-user-id="` + cid + `">@Carol Danvers</span></p>`},
		{"@_**Carol Danvers**", `<p><span class="user-mention silent" data-user-id="` + cid + `">Carol Danvers</span></p>`},
		{"@**all**", `<p><span class="user-mention channel-wildcard-mention" data-user-id="*">@all</span></p>`},
		{"@**topic**", `<p><span class="topic-mention">@topic</span></p>`},
		{"@**Nobody**", `<p>@<strong>Nobody</strong></p>`},
		{"#**general**", `<p><a class="stream" data-stream-id="` + gid + `" href="/#narrow/channel/` + gid + `-general">#general</a></p>`},
		{"#**general>lunch**", `<p><a class="stream-topic" data-stream-id="` + gid + `" href="/#narrow/channel/` + gid + `-general/topic/lunch/with/` + firstID + `">#general &gt; lunch</a></p>`},
		{"#**general>new topic**", `<p><a class="stream-topic" data-stream-id="` + gid + `" href="/#narrow/channel/` + gid + `-general/topic/new.20topic">#general &gt; new topic</a></p>`},
		{"#**secret**", `<p>#<strong>secret</strong></p>`},   // bob cannot read it
		{"#**General**", `<p>#<strong>General</strong></p>`}, // names match exactly
		{"http://zulite.test/#narrow/channel/1", `<p><a href="#narrow/channel/1">http://zulite.test/#narrow/channel/1</a></p>`},
	} {
		r := e.sendContent(t, &e.bob, "lunch", c.content)
		wantAPISuccess(t, r)
		id := uint64(r.body["id"].(float64))
		page := e.request(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {strconv.FormatUint(id, 10)}, "num_before": {"0"}, "num_after": {"0"}}, &e.bob)
		got := page.body["messages"].([]any)[0].(map[string]any)["content"]
		if got != c.want {
			t.Errorf("%q: got %q, want %q", c.content, got, c.want)
		}
	}
}

func TestMentions_IsMentionedNarrowAndUnreadMentions(t *testing.T) {
	e, carol := newMentionEnv(t)
	// Carol's topic stays as her channel is: a mention does not follow it
	// (TestAutoFollow_MentionedRecipientFollows has that).
	e.setSetting(t, &carol, "automatically_follow_topics_where_mentioned", "false")
	named := e.sendContent(t, &e.alice, "lunch", "@**Carol Danvers** hi")
	wild := e.sendContent(t, &e.alice, "lunch", "@**all** hi")
	e.sendContent(t, &e.alice, "lunch", "no mention")
	ids := []uint64{uint64(named.body["id"].(float64)), uint64(wild.body["id"].(float64))}

	r := e.request(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {"newest"}, "num_before": {"10"}, "num_after": {"0"},
		"narrow": {`[{"operator":"is","operand":"mentioned"}]`}}, &carol)
	wantAPISuccess(t, r)
	var got []uint64
	for _, m := range r.body["messages"].([]any) {
		got = append(got, uint64(m.(map[string]any)["id"].(float64)))
	}
	if !slices.Equal(got, ids) {
		t.Errorf("is:mentioned: got %v, want %v", got, ids)
	}

	mentions := func() []uint64 {
		reg := e.registerQueue(t, &carol, nil)
		var out []uint64
		for _, m := range reg.body["unread_msgs"].(map[string]any)["mentions"].([]any) {
			out = append(out, uint64(m.(float64)))
		}
		return out
	}
	if got := mentions(); !slices.Equal(got, ids) {
		t.Errorf("unread_msgs.mentions: got %v, want %v", got, ids)
	}
	// A muted channel's wildcard mentions are not counted; a mention by
	// name is.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions/properties", url.Values{"subscription_data": {
		`[{"stream_id":` + strconv.FormatUint(e.general.ID, 10) + `,"property":"is_muted","value":true}]`}}, &carol))
	if got := mentions(); !slices.Equal(got, ids[:1]) {
		t.Errorf("unread_msgs.mentions in a muted channel: got %v, want %v", got, ids[:1])
	}
	// Read messages are no unread mentions.
	mustUpdateFlags(t, e.st, carol.user, ids[:1], flagChange{Flag: "read", Add: true})
	if got := mentions(); len(got) != 0 {
		t.Errorf("unread_msgs.mentions once read: got %v, want none", got)
	}
}

func TestMentions_MessageEventsCarryTheFlags(t *testing.T) {
	e, carol := newMentionEnv(t)
	queue := e.registerQueue(t, &carol, nil).str("queue_id")
	narrowed := e.registerQueue(t, &carol, url.Values{"narrow": {`[["is","mentioned"]]`}}).str("queue_id")
	e.sendContent(t, &e.alice, "lunch", "@**Carol Danvers** @**all**")
	e.sendContent(t, &e.alice, "lunch", "nothing for carol")
	// Mentioned, she follows the topic first (automatically_follow_topics_where_mentioned).
	events := afterAutomaticPolicy(t, e, e.pollNow(t, &carol, queue, -1), "lunch", policyFollowed)
	if len(events) != 2 {
		t.Fatalf("got %d events, want 2", len(events))
	}
	for i, want := range [][]string{{"mentioned", "stream_wildcard_mentioned"}, {}} {
		if !jsonEqual(events[i]["flags"], want) {
			t.Errorf("event %d flags: got %v, want %v", i, events[i]["flags"], want)
		}
	}
	// A narrow filters message events alone (Zulip's accepts_event).
	if events := afterAutomaticPolicy(t, e, e.pollNow(t, &carol, narrowed, -1), "lunch", policyFollowed); len(events) != 1 {
		t.Errorf("an is:mentioned queue: got %d events, want 1", len(events))
	}
}

// crowd subscribes n more members to general.
func crowd(t *testing.T, e *testEnv, n int) []user {
	var list []user
	for i := range n {
		u, _, err := e.st.createUser("crowd"+strconv.Itoa(i)+"@example.com", "Crowd "+strconv.Itoa(i), roleMember, false)
		if err != nil {
			t.Fatal(err)
		}
		mustSubscribe(t, e.st, u, "general")
		list = append(list, u)
	}
	return list
}

func TestMentions_WildcardsInLargeChannelsNeedThePermission(t *testing.T) {
	e, _ := newMentionEnv(t)
	mustSubscribe(t, e.st, e.admin.user, "general")
	e.sendContent(t, &e.alice, "small", "before the crowd")
	crowd(t, e, 12) // alice, bob, carol, admin and 12 more: 16 subscribers
	count := func() uint64 { n, _ := e.st.maxMessageID(); return n }
	for _, c := range []struct {
		rule    string
		who     *account
		content string
		code    string
		msg     string
	}{
		{"a member's @**all** in a channel of over 15", &e.alice, "@**all** lunch", "STREAM_WILDCARD_MENTION_NOT_ALLOWED", "You do not have permission to use channel wildcard mentions in this channel."},
		{"@**everyone** likewise", &e.alice, "hi @**everyone**", "STREAM_WILDCARD_MENTION_NOT_ALLOWED", "You do not have permission to use channel wildcard mentions in this channel."},
	} {
		before := count()
		wantAPIError(t, e.sendContent(t, c.who, "lunch", c.content), http.StatusBadRequest, c.code, c.msg)
		if count() != before {
			t.Errorf("%s: refused, but a message was stored", c.rule)
		}
	}
	// Silent wildcards notify nobody, so anyone may use them; a topic of
	// few participants takes @**topic**; administrators may notify all.
	wantAPISuccess(t, e.sendContent(t, &e.alice, "lunch", "@_**all** lunch"))
	wantAPISuccess(t, e.sendContent(t, &e.alice, "small", "@**topic** lunch"))
	wantAPISuccess(t, e.sendContent(t, &e.admin, "lunch", "@**all** lunch"))
	// The organisation may let members do it (Zulip's
	// can_mention_many_users_group, set by an administrator).
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/realm", url.Values{"can_mention_many_users_group": {`{"new":` + strconv.Itoa(groupMembers) + `}`}}, &e.admin))
	wantAPISuccess(t, e.sendContent(t, &e.alice, "lunch", "@**all** lunch"))
}

func TestMentions_TopicWildcardInALargeTopicNeedsThePermission(t *testing.T) {
	e, _ := newMentionEnv(t)
	for _, u := range crowd(t, e, 14) {
		if _, err := e.st.sendMessage(u, channelRef{ID: e.general.ID}, "busy", "me too", "test"); err != nil {
			t.Fatal(err)
		}
	}
	// 14 senders and alice make 15 participants: still few enough.
	wantAPISuccess(t, e.sendContent(t, &e.alice, "busy", "@**topic** soon"))
	// One more, by a reaction: 16.
	name := "tada"
	if err := e.st.addReaction(e.bob.user, e.st.maxID.Load(), reactionRequest{Name: &name}); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, e.sendContent(t, &e.alice, "busy", "@**topic** stop"), http.StatusBadRequest, "TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
		"You do not have permission to use topic wildcard mentions in this topic.")
	wantAPISuccess(t, e.sendContent(t, &e.alice, "busy", "@_**topic** silently"))
}

// TestMentions_RenderingTooLargeIsRefused holds the bound Zulip sets on a
// rendering (no message of zulite's length reaches it: the renderer's
// own bounds keep it far below).
func TestMentions_RenderingTooLargeIsRefused(t *testing.T) {
	e := newTestEnv(t)
	mustView(t, e.st, func(tx *bbolt.Tx) error {
		for _, c := range []struct {
			size int
			want error
		}{{maxRenderedLength, nil}, {maxRenderedLength + 1, errUnableToRender}} {
			if err := e.st.checkRendering(tx, e.alice.user, e.general, messageRendering{HTML: strings.Repeat("x", c.size)}); err != c.want {
				t.Errorf("a rendering of %d bytes: got %v, want %v", c.size, err, c.want)
			}
		}
		return nil
	})
	if ae := asAPIError(errUnableToRender); ae.status != http.StatusBadRequest || ae.code != "BAD_REQUEST" || ae.msg != "Unable to render message" {
		t.Errorf("errUnableToRender: got %d %s %q, want Zulip's 400 BAD_REQUEST \"Unable to render message\"", ae.status, ae.code, ae.msg)
	}
}

// BenchmarkPostMessage: storing a message as a client sends it, plain
// or with a mention and an @**all** (rendered, resolved, flagged).
func BenchmarkPostMessage(b *testing.B) {
	st := mustOpenStore(b)
	sender, _ := mustCreateUser(b, st, "sender@example.com", roleAdmin, false)
	ch := mustCreateChannel(b, st, "general", false)
	mustSubscribe(b, st, sender, "general")
	for i := range 10 {
		u, _, err := st.createUser("member"+strconv.Itoa(i)+"@example.com", "Member "+strconv.Itoa(i), roleMember, false)
		if err != nil {
			b.Fatal(err)
		}
		mustSubscribe(b, st, u, "general")
	}
	for _, c := range []struct{ name, content string }{
		{"plain", "hello there"},
		{"markdown", "**hello** `there`, see https://example.com :smile:"},
		{"mentions", "@**Member 3** and @**all**: the **build** is green"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := st.postMessage(sender, outgoingMessage{To: channelRef{ID: ch.ID}, Topic: "t", Content: c.content, ReadBySender: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
