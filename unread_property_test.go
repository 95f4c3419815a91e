package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// unreadModel is the unread state as the rules say it should be, kept
// apart from the server: it shares no code with it.
type unreadModel struct {
	subscribed map[uint64]map[uint64]bool // user → channel → subscribed
	messages   []modelMessage             // in id order
	unread     map[uint64]map[uint64]bool // user → message id → unread
	// policies: user → channel ‖ lower-cased topic → visibility policy
	// (POST /user_topics), which register's unread count weighs.
	policies map[uint64]map[string]int
	// mutes: muter → muted user; a muted user's messages are read for
	// the muter, those there when muting and those sent after.
	mutes map[uint64]map[uint64]bool
}

type modelMessage struct {
	id, channel, sender uint64
	topic               string
	participants        []uint64 // a direct message's, sorted; nil for a channel message
}

// inConversation lists the direct messages among exactly these
// participants.
func (m *unreadModel) inConversation(participants []uint64) []modelMessage {
	var out []modelMessage
	for _, msg := range m.messages {
		if msg.participants != nil && slices.Equal(msg.participants, participants) {
			out = append(out, msg)
		}
	}
	return out
}

func (m *unreadModel) inChannel(channel uint64) []modelMessage {
	var out []modelMessage
	for _, msg := range m.messages {
		if msg.channel == channel {
			out = append(out, msg)
		}
	}
	return out
}

func (m *unreadModel) markRead(user uint64, keep func(modelMessage) bool) {
	for _, msg := range m.messages {
		if keep(msg) {
			delete(m.unread[user], msg.id)
		}
	}
}

func (m *unreadModel) unreadOf(user uint64) []uint64 {
	var ids []uint64
	for id := range m.unread[user] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// storedUnread reads every unread id of the user from the store.
func storedUnread(t *testing.T, st *store, userID uint64) []uint64 {
	t.Helper()
	var ids []uint64
	err := st.db.View(func(tx *bbolt.Tx) error {
		var err error
		ids, err = allUnreadIDs(tx, userID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestUnreadState_MatchesModelOverRandomSequences drives random sends,
// mark-read routes, flag updates, subscription changes and topic
// policies over HTTP and, after every step, compares each user's unread
// set with the model (and, after a policy is set, register's unread
// count, which leaves muted topics out).
func TestUnreadState_MatchesModelOverRandomSequences(t *testing.T) {
	t.Parallel() // independent of the other tests: its own store or server
	steps := 5000
	if testing.Short() {
		steps = 500
	}
	for _, seed := range []uint64{1, 2} {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			runUnreadModel(t, seed, steps)
		})
	}
}

func runUnreadModel(t *testing.T, seed uint64, steps int) {
	e := newTestEnv(t)
	e.st.db.NoSync = true // durability is not under test here; speed is welcome
	rng := rand.New(rand.NewPCG(seed, seed))
	users := []*account{&e.alice, &e.bob, &e.owner, &e.admin}
	var channels []channel
	for _, name := range []string{"one", "two", "three"} {
		channels = append(channels, mustCreateChannel(t, e.st, name, false))
	}
	mustCreateChannel(t, e.st, "vault", true) // private, and nobody is subscribed
	topics := []string{"a", "A", "b", "c"}
	model := &unreadModel{subscribed: map[uint64]map[uint64]bool{}, unread: map[uint64]map[uint64]bool{}, policies: map[uint64]map[string]int{}, mutes: map[uint64]map[uint64]bool{}}
	for _, u := range users {
		model.subscribed[u.ID] = map[uint64]bool{}
		model.unread[u.ID] = map[uint64]bool{}
		model.policies[u.ID] = map[string]int{}
		model.mutes[u.ID] = map[uint64]bool{}
	}
	post := func(u *account, method, path string, params url.Values) response {
		return e.request(t, method, path, params, u)
	}

	for step := range steps {
		u := users[rng.IntN(len(users))]
		ch := channels[rng.IntN(len(channels))]
		chID := strconv.FormatUint(ch.ID, 10)
		var what string
		op := rng.IntN(15)
		if len(model.messages) == 0 || (op == 6 && rng.IntN(4) != 0) {
			op = 0 // every step acts: without messages, or for most mark-all draws, send
		}
		switch op {
		case 0, 1, 2: // send
			topic := topics[rng.IntN(len(topics))]
			params := url.Values{"type": {"stream"}, "to": {ch.Name}, "topic": {topic}, "content": {"m"}}
			readBySender := true // by default; read_by_sender=false leaves it unread for a subscribed sender too
			if say := rng.IntN(3); say > 0 {
				readBySender = say == 1
				params.Set("read_by_sender", strconv.FormatBool(readBySender))
			}
			what = fmt.Sprintf("%s sends to %s/%s (read by sender: %v)", u.Email, ch.Name, topic, readBySender)
			r := post(u, http.MethodPost, "/api/v1/messages", params)
			wantAPISuccess(t, r)
			id := uint64(r.body["id"].(float64))
			model.messages = append(model.messages, modelMessage{id, ch.ID, u.ID, topic, nil})
			for _, other := range users {
				if (other.ID != u.ID || !readBySender) && model.subscribed[other.ID][ch.ID] && !model.mutes[other.ID][u.ID] {
					model.unread[other.ID][id] = true
				}
			}
		case 3: // subscribe or unsubscribe
			switch rng.IntN(8) {
			case 0: // one new channel, named twice with two spellings the name index treats as one
				what = fmt.Sprintf("%s creates İnew%d as inew%d too", u.Email, step, step)
				before := len(e.channelList(t, u))
				subs := fmt.Sprintf(`[{"name":"İnew%d"},{"name":"inew%d"}]`, step, step)
				wantAPISuccess(t, post(u, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {subs}}))
				if after := len(e.channelList(t, u)); after != before+1 {
					t.Fatalf("step %d (%s): the channels went from %d to %d, want one more", step, what, before, after)
				}
			case 1: // a refused subscribe changes nothing, though it names new channels first
				what = u.Email + " asks to join " + ch.Name + ", new channels and the vault"
				before := len(e.channelList(t, u))
				subs := fmt.Sprintf(`[{"name":"%s"},{"name":"İnew%d"},{"name":"inew%d"},{"name":"vault"}]`, ch.Name, step, step)
				r := post(u, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {subs}})
				wantAPIError(t, r, 400, "BAD_REQUEST", "Unable to access channel (vault).")
				if after := len(e.channelList(t, u)); after != before {
					t.Fatalf("step %d (%s): refused, yet the channels went from %d to %d", step, what, before, after)
				}
			case 2, 3, 4, 5, 6, 7:
				if model.subscribed[u.ID][ch.ID] {
					what = u.Email + " leaves " + ch.Name
					wantAPISuccess(t, post(u, http.MethodDelete, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["` + ch.Name + `"]`}}))
					delete(model.subscribed[u.ID], ch.ID)
					model.markRead(u.ID, func(m modelMessage) bool { return m.channel == ch.ID })
				} else {
					what = u.Email + " joins " + ch.Name
					wantAPISuccess(t, post(u, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"` + ch.Name + `"}]`}}))
					model.subscribed[u.ID][ch.ID] = true
				}
			}
		case 4: // mark_stream_as_read
			what = u.Email + " marks " + ch.Name + " read"
			wantAPISuccess(t, post(u, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {chID}}))
			model.markRead(u.ID, func(m modelMessage) bool { return m.channel == ch.ID })
		case 5: // mark_topic_as_read
			topic := topics[rng.IntN(len(topics))]
			what = u.Email + " marks " + ch.Name + "/" + topic + " read"
			r := post(u, http.MethodPost, "/api/v1/mark_topic_as_read", url.Values{"stream_id": {chID}, "topic_name": {topic}})
			exists := slices.ContainsFunc(model.inChannel(ch.ID), func(m modelMessage) bool { return strings.EqualFold(m.topic, topic) })
			if !exists {
				wantAPIError(t, r, 400, "BAD_REQUEST", "No such topic '"+topic+"'")
				break
			}
			wantAPISuccess(t, r)
			model.markRead(u.ID, func(m modelMessage) bool { return m.channel == ch.ID && strings.EqualFold(m.topic, topic) })
		case 6: // mark_all_as_read, now and then
			what = u.Email + " marks all read"
			wantAPISuccess(t, post(u, http.MethodPost, "/api/v1/mark_all_as_read", nil))
			model.markRead(u.ID, func(modelMessage) bool { return true })
		case 7: // flags by id, add or remove read
			var ids []uint64
			foreign := false // a direct message of a conversation the user is not in: refused whole
			for range 1 + rng.IntN(5) {
				msg := model.messages[rng.IntN(len(model.messages))]
				ids = append(ids, msg.id)
				foreign = foreign || msg.participants != nil && !slices.Contains(msg.participants, u.ID)
			}
			add := rng.IntN(2) == 0
			what = fmt.Sprintf("%s flags %v read=%v", u.Email, ids, add)
			body, _ := json.Marshal(ids)
			op := map[bool]string{true: "add", false: "remove"}[add]
			r := post(u, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {string(body)}, "op": {op}, "flag": {"read"}})
			if foreign {
				wantAPIError(t, r, 400, "BAD_REQUEST", "Invalid message(s)")
				break
			}
			wantAPISuccess(t, r)
			for _, id := range ids {
				msg := model.messages[slices.IndexFunc(model.messages, func(m modelMessage) bool { return m.id == id })]
				switch {
				case add:
					delete(model.unread[u.ID], id)
				case msg.participants != nil || model.subscribed[u.ID][msg.channel]: // a participant always received it
					model.unread[u.ID][id] = true
				}
			}
		case 8: // mute or unmute someone: muting reads what they sent
			other := users[rng.IntN(len(users))]
			path := "/api/v1/users/me/muted_users/" + strconv.FormatUint(other.ID, 10)
			switch {
			case other.ID == u.ID:
				what = u.Email + " mutes themselves"
				wantAPIError(t, post(u, http.MethodPost, path, nil), 400, "BAD_REQUEST", "Cannot mute self")
			case model.mutes[u.ID][other.ID] && rng.IntN(4) == 0:
				what = u.Email + " mutes " + other.Email + " again"
				wantAPIError(t, post(u, http.MethodPost, path, nil), 400, "BAD_REQUEST", "User already muted")
			case model.mutes[u.ID][other.ID]:
				what = u.Email + " unmutes " + other.Email
				wantAPISuccess(t, post(u, http.MethodDelete, path, nil))
				delete(model.mutes[u.ID], other.ID)
			default:
				what = u.Email + " mutes " + other.Email
				wantAPISuccess(t, post(u, http.MethodPost, path, nil))
				model.mutes[u.ID][other.ID] = true
				model.markRead(u.ID, func(m modelMessage) bool { return m.sender == other.ID })
			}
		case 9: // a topic's visibility policy, then register's unread count, which leaves muted topics out
			topic := topics[rng.IntN(len(topics))]
			policy := rng.IntN(4)
			what = fmt.Sprintf("%s sets %s/%s's policy to %d", u.Email, ch.Name, topic, policy)
			wantAPISuccess(t, e.setTopicPolicy(t, u, ch, topic, policy))
			key := chID + " " + strings.ToLower(topic)
			if policy == policyInherit {
				delete(model.policies[u.ID], key)
			} else {
				model.policies[u.ID][key] = policy
			}
			want := 0
			for id := range model.unread[u.ID] {
				m := model.messages[slices.IndexFunc(model.messages, func(m modelMessage) bool { return m.id == id })]
				if m.participants != nil || model.policies[u.ID][strconv.FormatUint(m.channel, 10)+" "+strings.ToLower(m.topic)] != policyMuted {
					want++
				}
			}
			r := e.registerQueue(t, u, url.Values{"fetch_event_types": {`["message","update_message_flags"]`}})
			if got := object(r.body["unread_msgs"])["count"]; got != float64(want) {
				t.Fatalf("step %d (%s): register's unread count got %v, want %d", step, what, got, want)
			}
		case 12: // a direct message: one-to-one, to a group of 3, or to oneself
			participants := []uint64{u.ID}
			var to []uint64
			switch kind := rng.IntN(3); kind {
			case 0, 1:
				for len(participants) < 2+kind {
					other := users[rng.IntN(len(users))].ID
					if !slices.Contains(participants, other) {
						participants = append(participants, other)
						to = append(to, other)
					}
				}
			default:
				to = []uint64{u.ID}
			}
			slices.Sort(participants)
			params := url.Values{"type": {"direct"}, "to": {jsonIDs(to...)}, "content": {"dm"}}
			readBySender := true
			if say := rng.IntN(3); say > 0 {
				readBySender = say == 1
				params.Set("read_by_sender", strconv.FormatBool(readBySender))
			}
			what = fmt.Sprintf("%s sends a direct message to %v (read by sender: %v)", u.Email, to, readBySender)
			r := post(u, http.MethodPost, "/api/v1/messages", params)
			wantAPISuccess(t, r)
			id := uint64(r.body["id"].(float64))
			model.messages = append(model.messages, modelMessage{id: id, sender: u.ID, participants: participants})
			for _, p := range participants {
				if (p != u.ID || !readBySender) && !model.mutes[p][u.ID] {
					model.unread[p][id] = true
				}
			}
		case 13: // flags for a conversation's narrow around an anchor
			var mine []modelMessage
			for _, m := range model.messages {
				if slices.Contains(m.participants, u.ID) {
					mine = append(mine, m)
				}
			}
			if len(mine) == 0 {
				what = u.Email + " has no conversation to flag"
				break
			}
			conv := model.inConversation(mine[rng.IntN(len(mine))].participants)
			anchor := conv[rng.IntN(len(conv))].id
			before, after := rng.IntN(6), rng.IntN(6)
			add := rng.IntN(3) != 0
			what = fmt.Sprintf("%s flags conversation %v around %d (-%d +%d) read=%v", u.Email, conv[0].participants, anchor, before, after, add)
			p := url.Values{"anchor": {strconv.FormatUint(anchor, 10)}, "num_before": {strconv.Itoa(before)}, "num_after": {strconv.Itoa(after)},
				"narrow": {`[{"operator":"dm","operand":` + jsonIDs(conv[0].participants...) + `}]`}, "op": {map[bool]string{true: "add", false: "remove"}[add]}, "flag": {"read"}}
			wantAPISuccess(t, post(u, http.MethodPost, "/api/v1/messages/flags/narrow", p))
			i := slices.IndexFunc(conv, func(m modelMessage) bool { return m.id == anchor })
			for _, m := range conv[max(0, i-before):min(len(conv), i+after+1)] {
				if add {
					delete(model.unread[u.ID], m.id)
				} else {
					model.unread[u.ID][m.id] = true
				}
			}
		case 14: // the first unread direct message, through GET /messages
			what = u.Email + " reads unread direct messages"
			want := slices.DeleteFunc(model.unreadOf(u.ID), func(id uint64) bool {
				return model.messages[slices.IndexFunc(model.messages, func(m modelMessage) bool { return m.id == id })].participants == nil
			})
			r := post(u, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {"first_unread"}, "num_before": {"0"}, "num_after": {"2"}, "narrow": {`[["is","dm"],["is","unread"]]`}})
			wantAPISuccess(t, r)
			var got []uint64
			for _, m := range r.body["messages"].([]any) {
				got = append(got, uint64(m.(map[string]any)["id"].(float64)))
			}
			if len(want) > 3 {
				want = want[:3]
			}
			if len(want) == 0 {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d (%s): got %v, want %v", step, what, got, want)
			}
		case 10, 11: // read what is unread, and the first unread, through GET /messages
			what = u.Email + " reads unread in " + ch.Name
			narrow := `[["is","unread"]]`
			want := model.unreadOf(u.ID)
			if rng.IntN(2) == 0 {
				narrow = `[{"operator":"channel","operand":` + chID + `},{"operator":"is","operand":"unread"}]`
				want = slices.DeleteFunc(want, func(id uint64) bool {
					return model.messages[slices.IndexFunc(model.messages, func(m modelMessage) bool { return m.id == id })].channel != ch.ID
				})
			}
			before, after := rng.IntN(4), rng.IntN(4)
			r := post(u, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {"first_unread"}, "num_before": {strconv.Itoa(before)}, "num_after": {strconv.Itoa(after)}, "narrow": {narrow}})
			wantAPISuccess(t, r)
			var got []uint64
			for _, m := range r.body["messages"].([]any) {
				got = append(got, uint64(m.(map[string]any)["id"].(float64)))
			}
			wantAnchor := uint64(largestMessageID)
			if len(want) > 0 {
				wantAnchor = want[0]
			}
			if r.body["anchor"] != float64(wantAnchor) {
				t.Fatalf("step %d (%s): first_unread anchor got %v, want %d", step, what, r.body["anchor"], wantAnchor)
			}
			if len(want) > after+1 {
				want = want[:after+1]
			}
			if len(want) == 0 {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d (%s): got %v, want %v", step, what, got, want)
			}
		default: // flags for a channel narrow around an anchor
			inCh := model.inChannel(ch.ID)
			if len(inCh) == 0 {
				first := slices.IndexFunc(model.messages, func(m modelMessage) bool { return m.participants == nil })
				if first < 0 {
					what = "no channel message to flag"
					break
				}
				inCh = model.messages[first : first+1]
				ch = channels[slices.IndexFunc(channels, func(c channel) bool { return c.ID == inCh[0].channel })]
				chID = strconv.FormatUint(ch.ID, 10)
			}
			anchor := inCh[rng.IntN(len(inCh))].id
			before, after := rng.IntN(6), rng.IntN(6)
			add := rng.IntN(3) != 0
			what = fmt.Sprintf("%s flags narrow %s around %d (-%d +%d) read=%v", u.Email, ch.Name, anchor, before, after, add)
			p := url.Values{"anchor": {strconv.FormatUint(anchor, 10)}, "num_before": {strconv.Itoa(before)}, "num_after": {strconv.Itoa(after)},
				"narrow": {`[{"operator":"channel","operand":` + chID + `}]`}, "op": {map[bool]string{true: "add", false: "remove"}[add]}, "flag": {"read"}}
			wantAPISuccess(t, post(u, http.MethodPost, "/api/v1/messages/flags/narrow", p))
			i := slices.IndexFunc(inCh, func(m modelMessage) bool { return m.id == anchor })
			for _, m := range inCh[max(0, i-before):min(len(inCh), i+after+1)] {
				switch {
				case add:
					delete(model.unread[u.ID], m.id)
				case model.subscribed[u.ID][ch.ID]:
					model.unread[u.ID][m.id] = true
				}
			}
		}
		for _, other := range users {
			if got, want := storedUnread(t, e.st, other.ID), model.unreadOf(other.ID); !slices.Equal(got, want) {
				t.Fatalf("step %d (%s): %s's unread got %v, want %v", step, what, other.Email, got, want)
			}
		}
	}
}

// channelList is GET /streams as the account sees it, with every public
// channel.
func (e *testEnv) channelList(t *testing.T, a *account) []any {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/streams", url.Values{"include_all_active": {"false"}}, a)
	wantAPISuccess(t, r)
	return r.body["streams"].([]any)
}
