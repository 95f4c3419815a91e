package main

import (
	"encoding/json"
	"slices"
	"strconv"
)

// The real-time surface: POST /register, GET and DELETE /events, and the
// events the other handlers publish after their change is committed.

// optionalStringList reads an optional JSON list of strings; nil when absent.
func optionalStringList(p *params, name string) ([]string, error) {
	if _, ok := p.lookup(name); !ok {
		return nil, nil
	}
	list, err := stringList(p, name)
	if list == nil && err == nil {
		list = []string{}
	}
	return list, err
}

// register serves POST /api/v1/register: a new event queue and the state
// the client asked for, so that the two together are complete. The queue
// is made first: an event that happens while the state is read is then
// delivered (perhaps once more than needed) instead of lost.
func (s *server) register(r *apiRequest) (any, error) {
	eventTypes, err := optionalStringList(r.params, "event_types")
	if err != nil {
		return nil, err
	}
	rawNarrow, err := readNarrow(r.params, false)
	if err != nil {
		return nil, err
	}
	if err := checkNarrowForEvents(rawNarrow); err != nil {
		return nil, err
	}
	narrow, err := narrowTerms(rawNarrow)
	if err != nil {
		return nil, err
	}
	applyMarkdown, err := r.params.optionalBool("apply_markdown", false)
	if err != nil {
		return nil, err
	}
	clientGravatar, err := r.params.optionalBool("client_gravatar", false)
	if err != nil {
		return nil, err
	}
	allPublic, err := r.params.optionalBool("all_public_streams", false)
	if err != nil {
		return nil, err
	}
	if _, err := r.params.optionalBool("include_subscribers", true); err != nil {
		return nil, err
	}
	if raw, ok := r.params.lookup("client_capabilities"); ok { // unknown capabilities are ignored
		parsed, err := decodeJSON("client_capabilities", raw)
		if err != nil {
			return nil, err
		}
		if _, isDict := parsed.(map[string]any); !isDict {
			return nil, errNotDict("client_capabilities")
		}
	}
	fetchTypes, err := optionalStringList(r.params, "fetch_event_types")
	if err != nil {
		return nil, err
	}
	if fetchTypes == nil {
		fetchTypes = eventTypes
	}
	fetch := func(t string) bool { return fetchTypes == nil || slices.Contains(fetchTypes, t) }

	q := &eventQueue{userID: r.user.ID, types: eventTypes, narrow: narrow, applyMarkdown: applyMarkdown, clientGravatar: clientGravatar, allPublic: allPublic}
	s.events.register(q)
	registered := false
	defer func() { // a queue whose state could not be read is of no use
		if !registered {
			s.events.remove(q.userID, q.id)
		}
	}()
	state := map[string]any{
		"queue_id":            q.id,
		"last_event_id":       -1,
		"zulip_version":       zulipVersion,
		"zulip_feature_level": zulipFeatureLevel,
		"zulip_merge_base":    zulipVersion,
	}
	maxID, err := s.store.maxMessageID()
	if err != nil {
		return nil, err
	}
	state["max_message_id"] = int64(maxID)
	if maxID == 0 {
		state["max_message_id"] = -1
	}
	if fetch("subscription") {
		subscribed, never, err := s.subscriptionState(r.user)
		if err != nil {
			return nil, err
		}
		state["subscriptions"], state["unsubscribed"], state["never_subscribed"] = subscribed, []subscriptionObject{}, never
	}
	if fetch("update_message_flags") && fetch("message") { // Zulip needs both for unread_msgs
		unread, err := s.store.unreadSummary(r.user.ID, maxUnreadMessages)
		if err != nil {
			return nil, err
		}
		state["unread_msgs"] = newUnreadMsgs(unread)
	}
	if fetch("realm_user") {
		users, err := s.store.users()
		if err != nil {
			return nil, err
		}
		active, inactive := []userObject{}, []userObject{}
		for _, u := range users {
			if u.Active {
				active = append(active, newUserObject(u))
			} else {
				inactive = append(inactive, newUserObject(u))
			}
		}
		state["realm_users"], state["realm_non_active_users"] = active, inactive
	}
	if fetch("realm") {
		state["realm_name"] = s.realmName
		state["realm_description"] = ""
		state["realm_url"] = s.baseURL
		state["realm_uri"] = s.baseURL
		state["realm_icon_url"] = s.baseURL + "/static/images/logo/zulip-icon-128x128.png"
		state["realm_push_notifications_enabled"] = false
	}
	registered = true
	return state, nil
}

// subscriptionState is register's subscriptions and never_subscribed.
func (s *server) subscriptionState(u user) ([]subscriptionObject, []streamObject, error) {
	subs, err := s.store.subscriptions(u.ID)
	if err != nil {
		return nil, nil, err
	}
	subscribed := make([]subscriptionObject, 0, len(subs))
	for _, sub := range subs {
		o := newSubscriptionObject(sub)
		o.Subscribers = append([]uint64{}, sub.Subscribers...)
		subscribed = append(subscribed, o)
	}
	visible, err := s.store.visibleChannels(u, channelFilter{Public: true})
	if err != nil {
		return nil, nil, err
	}
	never := []streamObject{}
	for _, ch := range visible {
		if !slices.ContainsFunc(subs, func(sc subscribedChannel) bool { return sc.ID == ch.ID }) {
			never = append(never, newStreamObject(ch))
		}
	}
	return subscribed, never, nil
}

// maxUnreadMessages is how many unread ids register answers at most, as
// Zulip's; beyond it old_unreads_missing is true.
const maxUnreadMessages = 50_000

type unreadMsgs struct {
	Count             int                `json:"count"`
	PMs               []struct{}         `json:"pms"`
	Streams           []unreadTopicState `json:"streams"`
	Huddles           []struct{}         `json:"huddles"`
	Mentions          []uint64           `json:"mentions"`
	OldUnreadsMissing bool               `json:"old_unreads_missing"`
}

type unreadTopicState struct {
	StreamID         uint64   `json:"stream_id"`
	Topic            string   `json:"topic"`
	UnreadMessageIDs []uint64 `json:"unread_message_ids"`
}

func newUnreadMsgs(summary unreadSummary) unreadMsgs {
	out := unreadMsgs{PMs: []struct{}{}, Streams: []unreadTopicState{}, Huddles: []struct{}{}, Mentions: []uint64{}, OldUnreadsMissing: summary.Truncated}
	for _, t := range summary.Topics {
		out.Streams = append(out.Streams, unreadTopicState{t.ChannelID, t.Topic, t.IDs})
		out.Count += len(t.IDs)
	}
	return out
}

// getEvents serves GET /api/v1/events: a long poll of the caller's queue.
func (s *server) getEvents(r *apiRequest) (any, error) {
	id, err := r.params.requiredString("queue_id")
	if err != nil {
		return nil, err
	}
	lastEventID := int64(-1)
	if raw, ok := r.params.lookup("last_event_id"); ok {
		if lastEventID, err = parseInt("last_event_id", raw); err != nil {
			return nil, err
		}
	}
	dontBlock, err := r.params.optionalBool("dont_block", false)
	if err != nil {
		return nil, err
	}
	events, ok := s.events.poll(r.Context(), r.user.ID, id, lastEventID, dontBlock)
	if !ok {
		return nil, badQueue(id)
	}
	if events == nil {
		events = []json.RawMessage{}
	}
	return struct {
		Events  []json.RawMessage `json:"events"`
		QueueID string            `json:"queue_id"`
	}{events, id}, nil
}

// deleteQueue serves DELETE /api/v1/events.
func (s *server) deleteQueue(r *apiRequest) (any, error) {
	id, err := r.params.requiredString("queue_id")
	if err != nil {
		return nil, err
	}
	if !s.events.remove(r.user.ID, id) {
		return nil, badQueue(id)
	}
	return nil, nil
}

// ---- publishing ----

// publishChange turns a committed change into events. The store calls it
// in commit order from its publisher goroutine, never the committer's,
// so queues hear changes in the order they happened and a slow fan-out
// holds no writer; it only touches memory.
func (s *server) publishChange(change any) {
	switch c := change.(type) {
	case messageSent:
		s.publishMessage(c)
	case flagsChanged:
		if c.Uncollected {
			s.events.dropNewerThan(c.User.ID, c.ListenSeq)
			return
		}
		s.publishFlags(c)
	case subscriptionsChanged:
		s.publishSubscriptions(c)
	case subscriptionPropertyChanged:
		s.publishSubscriptionProperty(c)
	}
}

// publishMessage gives a new message to the queues of its recipients
// (the channel's subscribers and the sender) and of all_public_streams
// queues for a public channel, each with that user's flags. The message
// object is encoded once per rendering the queues ask for.
func (s *server) publishMessage(c messageSent) {
	rendered := map[[2]bool]json.RawMessage{}
	render := func(q *eventQueue) json.RawMessage {
		key := [2]bool{q.applyMarkdown, q.clientGravatar}
		if raw, ok := rendered[key]; ok {
			return raw
		}
		m := pagedMessage{message: c.message, Channel: c.Channel, Sender: c.Sender}
		raw, _ := json.Marshal(newMessageObject(m, q.applyMarkdown, q.clientGravatar))
		rendered[key] = raw
		return raw
	}
	receives := func(q *eventQueue) bool {
		return q.userID == c.Sender.ID || slices.Contains(c.Recipients, q.userID) || (q.allPublic && !c.Channel.Private)
	}
	s.events.publish("message", receives, func(q *eventQueue) event {
		m := pagedMessage{message: c.message, Channel: c.Channel, Sender: c.Sender, Subscribed: slices.Contains(c.Recipients, q.userID)}
		m.Unread = q.userID != c.Sender.ID && m.Subscribed
		if !matchesNarrow(q.narrow, m) {
			return nil
		}
		return event{"type": "message", "message": render(q), "flags": messageFlags(m)}
	})
}

// publishFlags tells the user's queues that a flag changed on messages.
func (s *server) publishFlags(c flagsChanged) {
	if len(c.IDs) == 0 && !c.All {
		return
	}
	op := "remove"
	if c.Change.Add {
		op = "add"
	}
	e := event{"type": "update_message_flags", "op": op, "operation": op, "flag": c.Change.Flag, "messages": nonNilIDs(c.IDs), "all": c.All}
	if c.Details != nil {
		byID := map[string]any{}
		for _, m := range c.Details {
			byID[strconv.FormatUint(m.ID, 10)] = map[string]any{"type": "stream", "stream_id": m.ChannelID, "topic": m.Topic, "unmuted_stream_msg": true}
		}
		e["message_details"] = byID
	}
	s.events.publish("update_message_flags", ownedBy(c.User.ID), func(*eventQueue) event { return cloneEvent(e) })
}

func ownedBy(userID uint64) func(q *eventQueue) bool {
	return func(q *eventQueue) bool { return q.userID == userID }
}

func cloneEvent(e event) event {
	c := make(event, len(e)+1)
	for k, v := range e {
		c[k] = v
	}
	return c
}

func nonNilIDs(ids []uint64) []uint64 {
	if ids == nil {
		return []uint64{}
	}
	return ids
}
