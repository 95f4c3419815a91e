package main

// Scheduled messages: GET/POST /scheduled_messages, PATCH/DELETE
// /scheduled_messages/{scheduled_message_id}, register's
// scheduled_messages and the scheduled_messages events
// (zerver/views/scheduled_messages.py). The store's side is
// store_scheduled_messages.go, the sending scheduler.go.

import (
	"slices"
	"strconv"
	"strings"
)

// recipientType reads a type as check_string_in_validator does over
// Message.API_RECIPIENT_TYPES, and names it as Zulip stores it.
func recipientType(v string) (string, error) {
	switch v {
	case "stream", "channel":
		return "stream", nil
	case "private", "direct":
		return "private", nil
	}
	return "", errInvalidSetting("type")
}

// scheduledTo reads `to` as Json[int | list[int]]: an id (list false) or
// a list of ids.
func scheduledTo(raw string) (ids []int64, list bool, err error) {
	parsed, err := decodeJSON("to", raw)
	if err != nil {
		return nil, false, err
	}
	if n, ok := jsonInt(parsed); ok {
		return []int64{n}, false, nil
	}
	items, ok := parsed.([]any)
	if !ok {
		return nil, false, errNotInteger(`to["int"]`)
	}
	for _, item := range items {
		n, ok := jsonInt(item)
		if !ok {
			return nil, false, errNotInteger(`to["int"]`)
		}
		ids = append(ids, n)
	}
	return ids, true, nil
}

// scheduledTarget is extract_stream_id or
// extract_direct_message_recipient_ids: a channel's id alone, or a list
// of user ids, repeats dropped.
func scheduledTarget(kind string, ids []int64, list bool) (channelID uint64, users []uint64, err error) {
	if kind == "stream" {
		if list {
			return 0, nil, errChannelIDDataType
		}
		if ids[0] <= 0 {
			return 0, nil, noSuchChannel(channelRef{IDText: strconv.FormatInt(ids[0], 10)})
		}
		return uint64(ids[0]), nil, nil
	}
	if !list {
		return 0, nil, errRecipientsDataType
	}
	if len(ids) == 0 {
		return 0, nil, errNoRecipients
	}
	for _, id := range ids {
		if id <= 0 {
			return 0, nil, errDMInvalidUserID.about(strconv.FormatInt(id, 10))
		}
		if !slices.Contains(users, uint64(id)) {
			users = append(users, uint64(id))
		}
	}
	return 0, users, nil
}

// scheduledTopic is a channel message's topic as a send takes it.
func scheduledTopic(topic string) (string, error) {
	topic = storedTopic(strings.TrimSpace(topic))
	if i := strings.IndexFunc(topic, isUnsafeChar); i >= 0 {
		return "", errTopicCharacter(topic, i)
	}
	return truncateTopic(topic), nil
}

// optionalTopic is OptionalTopic: topic, or its old name subject.
func optionalTopic(p *params) (string, bool) {
	if v, ok := p.lookup("topic"); ok {
		return v, true
	}
	return p.lookup("subject")
}

// futureTime reads scheduled_delivery_timestamp and refuses a time that
// is not after now.
func (s *server) futureTime(raw string) (int64, error) {
	due, err := parseInt("scheduled_delivery_timestamp", raw)
	if err != nil {
		return 0, err
	}
	if due <= s.store.now().Unix() {
		return 0, errDeliveryNotInFuture
	}
	return due, nil
}

// listScheduled serves GET /api/v1/scheduled_messages.
func (s *server) listScheduled(r *apiRequest) (any, error) {
	list, err := s.store.scheduledMessages(r.user.ID)
	if err != nil {
		return nil, err
	}
	return struct {
		ScheduledMessages []scheduledObject `json:"scheduled_messages"`
	}{list}, nil
}

// createScheduled serves POST /api/v1/scheduled_messages, reading
// typed_endpoint's parameters in its order, then as
// check_schedule_message checks the message.
func (s *server) createScheduled(r *apiRequest) (any, error) {
	content, err := r.params.requiredString("content")
	if err != nil {
		return nil, err
	}
	var readBySender *bool
	if _, given := r.params.lookup("read_by_sender"); given {
		v, err := r.params.optionalBool("read_by_sender", false)
		if err != nil {
			return nil, err
		}
		readBySender = &v
	}
	rawTo, err := r.params.requiredString("to")
	if err != nil {
		return nil, err
	}
	ids, list, err := scheduledTo(rawTo)
	if err != nil {
		return nil, err
	}
	kind, err := r.params.requiredString("type")
	if err != nil {
		return nil, err
	}
	if kind, err = recipientType(kind); err != nil {
		return nil, err
	}
	rawDue, err := r.params.requiredString("scheduled_delivery_timestamp")
	if err != nil {
		return nil, err
	}
	topic, hasTopic := optionalTopic(r.params)
	due, err := s.futureTime(rawDue)
	if err != nil {
		return nil, err
	}
	m := storedScheduled{Type: kind, Due: due, Client: clientName(r)}
	if m.ChannelID, m.Recipients, err = scheduledTarget(kind, ids, list); err != nil {
		return nil, err
	}
	if kind == "stream" {
		if !hasTopic {
			return nil, errMissingTopic
		}
		if m.Topic, err = scheduledTopic(topic); err != nil {
			return nil, err
		}
	}
	if m.Content, m.Rendered, err = s.scheduledContent(r.user, content); err != nil {
		return nil, err
	}
	// Zulip's default: read for the sender from its own apps (zulite:
	// every client, defaultReadBySender), unless sent to oneself alone.
	m.ReadBySender = defaultReadBySender && !m.toSelf(r.user.ID)
	if readBySender != nil {
		m.ReadBySender = *readBySender
	}
	id, err := s.store.createScheduled(r.user, m)
	if err != nil {
		return nil, err
	}
	return struct {
		ID uint64 `json:"scheduled_message_id"`
	}{id}, nil
}

// scheduledContent is content as a send takes it, and its rendering.
func (s *server) scheduledContent(sender user, content string) (string, string, error) {
	content, err := sentContent(content)
	if err != nil {
		return "", "", err
	}
	rendering, err := s.store.renderForSend(sender, outgoingMessage{Content: content, RealmURL: s.baseURL})
	if err != nil {
		return "", "", err
	}
	if len(rendering.HTML) > maxRenderedLength {
		return "", "", errUnableToRender
	}
	return content, rendering.HTML, nil
}

// editScheduled serves PATCH
// /api/v1/scheduled_messages/{scheduled_message_id}
// (update_scheduled_message_backend).
func (s *server) editScheduled(r *apiRequest) (any, error) {
	id, err := pathDigits(r, "scheduled_message_id", errNoSuchScheduled)
	if err != nil {
		return nil, err
	}
	content, hasContent := r.params.lookup("content")
	var e scheduledEdit
	if kind, ok := r.params.lookup("type"); ok {
		if kind, err = recipientType(kind); err != nil {
			return nil, err
		}
		e.Type = &kind
	}
	rawDue, hasDue := r.params.lookup("scheduled_delivery_timestamp")
	var due int64
	if hasDue {
		if due, err = parseInt("scheduled_delivery_timestamp", rawDue); err != nil {
			return nil, err
		}
	}
	rawTo, hasTo := r.params.lookup("to")
	var ids []int64
	var list bool
	if hasTo {
		if ids, list, err = scheduledTo(rawTo); err != nil {
			return nil, err
		}
	}
	topic, hasTopic := optionalTopic(r.params)
	switch {
	case e.Type == nil && !hasTo && !hasTopic && !hasContent && !hasDue:
		return nil, errNothingToChange
	case e.Type != nil && !hasTo:
		return nil, errScheduledRecipientRequired
	case e.Type != nil && *e.Type == "stream" && !hasTopic:
		return nil, errScheduledTopicRequired
	}
	if hasDue {
		if due, err = s.futureTime(rawDue); err != nil {
			return nil, err
		}
		e.Due = &due
	}
	if hasTopic {
		if topic, err = scheduledTopic(topic); err != nil {
			return nil, err
		}
		e.Topic = &topic
	}
	if hasContent {
		c, rendered, err := s.scheduledContent(r.user, content)
		if err != nil {
			return nil, err
		}
		e.Content, e.Rendered = &c, rendered
	}
	e.Client = clientName(r)
	if hasTo { // read as the message's type, which the store knows
		e.Target = func(kind string) (uint64, []uint64, error) { return scheduledTarget(kind, ids, list) }
	}
	return nil, s.store.editScheduled(r.user, id, e)
}

// deleteScheduled serves DELETE
// /api/v1/scheduled_messages/{scheduled_message_id}.
func (s *server) deleteScheduled(r *apiRequest) (any, error) {
	id, err := pathDigits(r, "scheduled_message_id", errNoSuchScheduled)
	if err != nil {
		return nil, err
	}
	return nil, s.store.deleteScheduled(r.user, id, false)
}

// addScheduledState is register's scheduled_messages and reminders.
func (s *server) addScheduledState(state map[string]any, u user, want func(string) bool) error {
	if want("scheduled_messages") {
		list, err := s.store.scheduledMessages(u.ID)
		state["scheduled_messages"] = list
		if err != nil {
			return err
		}
	}
	if !want("reminders") {
		return nil
	}
	reminders, err := s.store.reminders(u.ID)
	state["reminders"] = reminders
	return err
}

// publishScheduled tells the user's queues, as Zulip's
// scheduled_messages events or, for a reminder, its reminders events
// (add and remove: Zulip has no reminders update), and wakes the
// scheduler.
func (s *server) publishScheduled(c scheduledChanged) {
	e := event{"type": "scheduled_messages", "op": c.Op}
	switch {
	case c.Reminder != nil && c.Op == "add":
		e = event{"type": "reminders", "op": "add", "reminders": []reminderObject{*c.Reminder}}
	case c.Reminder != nil:
		e = event{"type": "reminders", "op": "remove", "reminder_id": c.Reminder.ID}
	case c.Op == "add":
		e["scheduled_messages"] = []scheduledObject{c.Message}
	case c.Op == "update":
		e["scheduled_message"] = c.Message
	case c.Op == "remove":
		e["scheduled_message_id"] = c.Message.ID
	}
	s.events.publish(e["type"].(string), ownedBy(c.UserID), func(*eventQueue) event { return cloneEvent(e) })
	s.scheduler.poke()
}
