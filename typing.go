package main

// Typing notifications: POST /typing and the typing events, in memory
// only (zerver/views/typing.py, zerver/actions/typing.py). Nothing is
// kept: clients time out a "start" themselves, after register's
// server_typing_started_expiry_period_milliseconds.

import "strings"

// typingPerson is Zulip's TypingPerson.
type typingPerson struct {
	UserID uint64 `json:"user_id"`
	Email  string `json:"email"`
}

// sendTyping serves POST /api/v1/typing: "start" or "stop" typing to a
// channel's topic (type "channel", or the older "stream"), told to its
// subscribers, or to a direct conversation (type "direct", the default),
// told to its participants, the sender included. Parameters are read in
// Zulip's order: to, op, type, stream_id, topic.
func (s *server) sendTyping(r *apiRequest) (any, error) {
	var to []int64
	if _, ok := r.params.lookup("to"); ok {
		var err error
		if to, err = intList(r.params, "to"); err != nil {
			return nil, err
		}
	}
	op, err := typingOp(r)
	if err != nil {
		return nil, err
	}
	kind, ok := r.params.lookup("type")
	if !ok {
		kind = "direct"
	}
	if kind != "direct" && kind != "stream" && kind != "channel" {
		return nil, errInvalidTypingType
	}
	var channelID *int64
	if channelID, err = optionalInt(r.params, "stream_id"); err != nil {
		return nil, err
	}
	topic, hasTopic := r.params.lookup("topic")
	if kind == "direct" {
		if to == nil {
			return nil, errTypingMissingTo
		}
		if len(to) == 0 {
			return nil, errTypingEmptyTo
		}
		participants, audience, err := s.store.directTyping(r.user, to)
		if err != nil {
			return nil, err
		}
		s.publishDirectTyping(r.user, op, participants, audience)
		return nil, nil
	}
	if channelID == nil {
		return nil, errTypingMissingChannel
	}
	if !hasTopic {
		return nil, errMissingTopic
	}
	audience, err := s.store.channelTyping(r.user, uint64(*channelID))
	if err != nil {
		return nil, err
	}
	s.publishChannelTyping(r.user, op, uint64(*channelID), storedTopic(strings.TrimSpace(topic)), audience)
	return nil, nil
}

// sendEditTyping serves POST /api/v1/messages/{message_id}/typing:
// "start" or "stop" editing a message's content, told as a
// typing_edit_message event to those a saved edit would tell (Zulip's
// send_message_edit_notification_backend).
func (s *server) sendEditTyping(r *apiRequest) (any, error) {
	id, err := pathMessageID(r)
	if err != nil {
		return nil, err
	}
	op, err := typingOp(r)
	if err != nil {
		return nil, err
	}
	t, err := s.store.messageEditTyping(r.user, id)
	if err != nil {
		return nil, err
	}
	e := event{"type": "typing_edit_message", "op": op, "sender_id": r.user.ID, "message_id": id}
	if t.Message.isDirect() {
		e["recipient"] = map[string]any{"type": "direct", "user_ids": append([]uint64{}, t.Audience...)}
		s.events.tell("typing_edit_message", usersAudience(t.Audience...), e, nil)
		return nil, nil
	}
	s.offerTyping("typing_edit_message", e, t.Audience, func(qe event, emptyTopicName bool) {
		qe["recipient"] = map[string]any{"type": "channel", "channel_id": t.Message.ChannelID, "topic": displayTopic(t.Message.Topic, emptyTopicName)}
	}, false)
	return nil, nil
}

// typingOp reads op: "start" or "stop".
func typingOp(r *apiRequest) (string, error) {
	op, err := r.params.requiredString("op")
	if err == nil && op != "start" && op != "stop" {
		err = errInvalidTypingOp
	}
	return op, err
}

// publishDirectTyping tells the participants who listen, naming every
// participant as a recipient.
func (s *server) publishDirectTyping(sender user, op string, participants []user, audience []uint64) {
	recipients := make([]typingPerson, 0, len(participants))
	for _, u := range participants {
		recipients = append(recipients, typingPerson{u.ID, u.Email})
	}
	e := event{"type": "typing", "op": op, "message_type": "direct", "sender": typingPerson{sender.ID, sender.Email}, "recipients": recipients}
	s.events.tell("typing", usersAudience(audience...), e, nil)
}

// publishChannelTyping tells the channel's listening subscribers whose
// clients declared stream_typing_notifications (Zulip sends channel
// typing to no other client), the empty topic by name to those without
// empty_topic_name.
func (s *server) publishChannelTyping(sender user, op string, channelID uint64, topic string, audience []uint64) {
	e := event{"type": "typing", "op": op, "message_type": "stream", "sender": typingPerson{sender.ID, sender.Email}, "stream_id": channelID}
	s.offerTyping("typing", e, audience, func(qe event, emptyTopicName bool) { qe["topic"] = displayTopic(topic, emptyTopicName) }, true)
}

// offerTyping offers a channel's typing event to the audience's queues,
// its topic put in by withTopic for each queue's empty_topic_name, one
// encoding for each; onlyStreamTyping keeps it from queues without the
// stream_typing_notifications capability.
func (s *server) offerTyping(eventType string, e event, audience []uint64, withTopic func(event, bool), onlyStreamTyping bool) {
	var shared [2]*sharedEvent // by empty_topic_name
	s.events.offer(eventType, usersAudience(audience...), func(q *eventQueue, _ bool) (queuedEvent, bool) {
		if onlyStreamTyping && !q.streamTyping {
			return queuedEvent{}, false
		}
		r := &shared[b2i(q.emptyTopicName)]
		if *r == nil {
			qe := cloneEvent(e)
			withTopic(qe, q.emptyTopicName)
			*r = encodeEvent(qe)
		}
		return queuedEvent{shared: *r}, true
	})
}
