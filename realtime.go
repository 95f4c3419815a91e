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
	o, err := readRegisterOptions(r)
	if err != nil {
		return nil, err
	}
	q := &eventQueue{userID: r.user.ID, types: o.eventTypes, narrow: o.narrow, applyMarkdown: o.applyMarkdown,
		clientGravatar: o.clientGravatar, allPublic: o.allPublic, userSettingsObject: o.capabilities.userSettingsObject,
		emptyTopicName: o.capabilities.emptyTopicName}
	s.events.register(q)
	if err := s.takeListing(r); err != nil {
		s.events.remove(q.userID, q.id)
		return nil, err
	}
	state, err := s.initialState(r.user, q.id, o)
	if err != nil { // a queue whose state could not be read is of no use
		s.events.remove(q.userID, q.id)
		return nil, err
	}
	return state, nil
}

// readRegisterOptions reads register's parameters in Zulip's order
// (zerver/views/events_register.py). Parameters Zulip 11.0 does not know,
// such as the app's idle_queue_timeout (Zulip 12), are left unread and so
// reported in ignored_parameters_unsupported, as Zulip 11.0 reports them.
func readRegisterOptions(r *apiRequest) (registerOptions, error) {
	var o registerOptions
	var err error
	if o.allPublic, err = r.params.optionalBool("all_public_streams", false); err != nil {
		return o, err
	}
	if o.applyMarkdown, err = r.params.optionalBool("apply_markdown", false); err != nil {
		return o, err
	}
	if o.capabilities, err = readClientCapabilities(r.params); err != nil {
		return o, err
	}
	// client_gravatar defaults to true for a logged-in user, as in Zulip.
	if o.clientGravatar, err = r.params.optionalBool("client_gravatar", true); err != nil {
		return o, err
	}
	if o.eventTypes, err = optionalStringList(r.params, "event_types"); err != nil {
		return o, err
	}
	if o.fetchTypes, err = optionalStringList(r.params, "fetch_event_types"); err != nil {
		return o, err
	}
	if o.fetchTypes == nil {
		o.fetchTypes = o.eventTypes
	}
	if o.includeSubscribers, err = readIncludeSubscribers(r.params); err != nil {
		return o, err
	}
	rawNarrow, err := readNarrow(r.params, false)
	if err != nil {
		return o, err
	}
	if raw, ok := r.params.lookup("presence_history_limit_days"); ok { // no presence history to limit
		if _, err := parseInt("presence_history_limit_days", raw); err != nil {
			return o, err
		}
	}
	if o.slimPresence, err = r.params.optionalBool("slim_presence", false); err != nil {
		return o, err
	}
	if o.allPublic && r.user.Role == roleGuest {
		return o, errNotAuthorizedForQuery
	}
	if err := checkNarrowForEvents(rawNarrow); err != nil {
		return o, err
	}
	if o.narrow, err = narrowTerms(rawNarrow); err != nil {
		return o, err
	}
	return o, nil
}

// readIncludeSubscribers reads include_subscribers: a JSON boolean or,
// since feature level 412, "partial", which lets the server send fewer
// subscribers for large channels; zulite sends them all. The string is
// taken JSON-quoted, as Zulip's clients send it, or bare.
func readIncludeSubscribers(p *params) (bool, error) {
	raw, ok := p.lookup("include_subscribers")
	if !ok {
		return false, nil
	}
	if raw == "partial" {
		return true, nil
	}
	parsed, err := decodeJSON("include_subscribers", raw)
	if err != nil {
		return false, err
	}
	switch v := parsed.(type) {
	case bool:
		return v, nil
	case string:
		if v == "partial" {
			return true, nil
		}
	}
	return false, errNotBoolean("include_subscribers")
}

// readClientCapabilities reads client_capabilities, a JSON object of
// booleans; capabilities zulite does not know are ignored, as Zulip
// ignores them.
func readClientCapabilities(p *params) (clientCapabilities, error) {
	var c clientCapabilities
	raw, ok := p.lookup("client_capabilities")
	if !ok {
		return c, nil
	}
	parsed, err := decodeJSON("client_capabilities", raw)
	if err != nil {
		return c, err
	}
	dict, isDict := parsed.(map[string]any)
	if !isDict {
		return c, errNotDict("client_capabilities")
	}
	for _, k := range []struct {
		name string
		to   *bool
	}{
		{"notification_settings_null", &c.notificationSettingsNull},
		{"bulk_message_deletion", &c.bulkMessageDeletion},
		{"user_avatar_url_field_optional", &c.userAvatarURLFieldOptional},
		{"stream_typing_notifications", &c.streamTypingNotifications},
		{"user_settings_object", &c.userSettingsObject},
		{"linkifier_url_template", &c.linkifierURLTemplate},
		{"user_list_incomplete", &c.userListIncomplete},
		{"include_deactivated_groups", &c.includeDeactivatedGroups},
		{"archived_channels", &c.archivedChannels},
		{"empty_topic_name", &c.emptyTopicName},
		{"simplified_presence_events", &c.simplifiedPresenceEvents},
	} {
		v, present := dict[k.name]
		if !present {
			continue
		}
		b, isBool := v.(bool)
		if !isBool {
			return c, errNotBoolean(`client_capabilities["` + k.name + `"]`)
		}
		*k.to = b
	}
	return c, nil
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
	case realmGroupChanged:
		s.publishRealmGroup(c)
	case accountChanged:
		if c.EndsSessions {
			s.events.removeAll(c.UserID)
		}
	case userSettingsChanged:
		s.publishUserSettings(c)
	case subscriptionPropertyChanged:
		s.publishSubscriptionProperty(c)
	case reactionChanged:
		s.publishReaction(c)
	}
}

// publishMessage gives a new message to the queues of its recipients
// (the channel's subscribers and the sender) and of all_public_streams
// queues for a public channel, each with that user's flags (none for a
// queue whose user does not receive it). The message object is encoded
// once per rendering the queues ask for. The sender's queue named in
// the send (queue_id) hears the send's local_id as local_message_id.
func (s *server) publishMessage(c messageSent) {
	rendered := map[[3]bool]json.RawMessage{}
	render := func(q *eventQueue) json.RawMessage {
		key := [3]bool{q.applyMarkdown, q.clientGravatar, q.emptyTopicName}
		if raw, ok := rendered[key]; ok {
			return raw
		}
		m := pagedMessage{message: c.message, Channel: c.Channel, Sender: c.Sender}
		raw, _ := json.Marshal(newMessageObject(m, q.applyMarkdown, q.clientGravatar, q.emptyTopicName))
		rendered[key] = raw
		return raw
	}
	receives := func(q *eventQueue) bool {
		return q.userID == c.Sender.ID || slices.Contains(c.Recipients, q.userID) || (q.allPublic && !c.Channel.Private)
	}
	s.events.publish("message", receives, func(q *eventQueue) event {
		m := pagedMessage{message: c.message, Channel: c.Channel, Sender: c.Sender, Subscribed: slices.Contains(c.Recipients, q.userID)}
		if m.Subscribed {
			m.Flags = c.Mentions.flagsFor(q.userID)
		}
		m.Unread = m.Subscribed && (q.userID != c.Sender.ID || !c.ReadBySender)
		m.Topic = displayTopic(m.Topic, q.emptyTopicName) // a narrow matches the topic the client is shown
		if !matchesNarrow(q.narrow, m) {
			return nil
		}
		flags := []string{}
		if m.Subscribed || q.userID == c.Sender.ID {
			flags = messageFlags(m)
		}
		e := event{"type": "message", "message": render(q), "flags": flags}
		if c.LocalID != nil && q.id == c.QueueID && q.userID == c.Sender.ID {
			e["local_message_id"] = *c.LocalID
		}
		return e
	})
}

// publishFlags tells the user's queues that a flag changed on messages.
// When read is removed, message_details says where each message is, its
// empty topic shown by name to queues without empty_topic_name.
func (s *server) publishFlags(c flagsChanged) {
	if len(c.IDs) == 0 && !c.All {
		return
	}
	op := "remove"
	if c.Change.Add {
		op = "add"
	}
	e := event{"type": "update_message_flags", "op": op, "operation": op, "flag": c.Change.Flag, "messages": nonNilIDs(c.IDs), "all": c.All}
	details := func(allowEmptyTopic bool) map[string]any {
		byID := map[string]any{}
		for _, m := range c.Details {
			byID[strconv.FormatUint(m.ID, 10)] = map[string]any{"type": "stream", "stream_id": m.ChannelID, "topic": displayTopic(m.Topic, allowEmptyTopic), "unmuted_stream_msg": true}
		}
		return byID
	}
	s.events.publish("update_message_flags", ownedBy(c.User.ID), func(q *eventQueue) event {
		qe := cloneEvent(e)
		if c.Details != nil {
			qe["message_details"] = details(q.emptyTopicName)
		}
		return qe
	})
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
