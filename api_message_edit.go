package main

// Editing, moving and deleting messages (zerver/views/message_edit.py):
// PATCH and DELETE /messages/{message_id}, GET
// /messages/{message_id}/history, and the update_message and
// delete_message events.

import (
	"maps"
	"net/http"
	"slices"
	"strings"
)

// messageEditHistoryVisibility is the realm's
// message_edit_history_visibility_policy: Zulip's default, "all".
const messageEditHistoryVisibility = "all"

// readEdit reads PATCH /messages/{message_id}'s parameters as Zulip's
// update_message_backend types them.
func readEdit(r *apiRequest) (messageEdit, error) {
	var e messageEdit
	id, err := pathMessageID(r)
	if err != nil {
		return e, err
	}
	e.MessageID = id
	if content, ok := r.params.lookup("content"); ok {
		content, err := normalizeBody(content)
		if err != nil {
			return e, err
		}
		// build_message_edit_request: an empty edit leaves "(deleted)".
		if content == "" {
			content = "(deleted)"
		}
		content = truncateContent(content)
		e.Content = &content
	}
	topic, ok := r.params.lookup("topic")
	if !ok {
		topic, ok = r.params.lookup("subject")
	}
	if ok {
		topic = storedTopic(strings.TrimSpace(topic))
		if i := strings.IndexFunc(topic, isUnsafeChar); i >= 0 {
			return e, errTopicCharacter(topic, i)
		}
		topic = truncateTopic(topic)
		e.Topic = &topic
	}
	e.Propagate = changeOne
	if mode, ok := r.params.lookup("propagate_mode"); ok {
		if mode != changeOne && mode != changeLater && mode != changeAll {
			return e, badRequest("Invalid propagate_mode: Input should be 'change_later', 'change_one' or 'change_all'")
		}
		e.Propagate = mode
	}
	if v, ok := r.params.lookup("stream_id"); ok {
		n, err := decodeJSONInt("stream_id", v)
		if err != nil {
			return e, err
		}
		if n < 0 {
			return e, errTooSmall("stream_id")
		}
		channelID := uint64(n)
		e.ChannelID = &channelID
	}
	// Accepted, as Zulip's are, and then unused: zulite sends no
	// Notification Bot messages about moves.
	for _, name := range []string{"send_notification_to_old_thread", "send_notification_to_new_thread"} {
		if _, err := r.params.optionalBool(name, false); err != nil {
			return e, err
		}
	}
	if sum, ok := r.params.lookup("prev_content_sha256"); ok {
		e.PrevContentSHA256 = &sum
	}
	return e, nil
}

// updateMessage serves PATCH /api/v1/messages/{message_id}.
func (s *server) updateMessage(r *apiRequest) (any, error) {
	e, err := readEdit(r)
	if err != nil {
		return nil, err
	}
	e.RealmURL = s.baseURL
	if _, err := s.store.editMessage(r.user, e); err != nil {
		return nil, err
	}
	// detached_uploads: the uploads the edit unlinked that no other
	// message links; zulite's sweep finds those itself, so it names none.
	return map[string]any{"detached_uploads": []any{}}, nil
}

// deleteMessage serves DELETE /api/v1/messages/{message_id}.
func (s *server) deleteMessage(r *apiRequest) (any, error) {
	id, err := pathMessageID(r)
	if err != nil {
		return nil, err
	}
	return nil, s.store.deleteMessage(r.user, id)
}

// historyEntry is one entry of GET /messages/{id}/history: the message
// as it was after the change the entry records (Zulip's
// FormattedEditHistoryEvent).
type historyEntry struct {
	Content         string  `json:"content"`
	RenderedContent string  `json:"rendered_content"`
	Timestamp       int64   `json:"timestamp"`
	Topic           string  `json:"topic"`
	UserID          uint64  `json:"user_id"`
	PrevTopic       *string `json:"prev_topic,omitempty"`
	PrevContent     *string `json:"prev_content,omitempty"`
	PrevRendered    *string `json:"prev_rendered_content,omitempty"`
	ContentHTMLDiff *string `json:"content_html_diff,omitempty"`
	PrevStream      uint64  `json:"prev_stream,omitempty"`
	Stream          uint64  `json:"stream,omitempty"`
}

// messageHistory serves GET /api/v1/messages/{message_id}/history, as
// Zulip's fill_edit_history_entries builds it, oldest first.
func (s *server) messageHistory(r *apiRequest) (any, error) {
	id, err := pathMessageID(r)
	if err != nil {
		return nil, err
	}
	allowEmpty, err := r.params.optionalBool("allow_empty_topic_name", false)
	if err != nil {
		return nil, err
	}
	m, err := s.store.messageHistory(r.user, id)
	if err != nil {
		return nil, err
	}
	return map[string]any{"message_history": historyOf(m, allowEmpty)}, nil
}

func historyOf(m message, allowEmpty bool) []historyEntry {
	content, rendered, topic := m.Content, renderedContent(m), displayTopic(m.Topic, allowEmpty)
	list := make([]historyEntry, 0, len(m.EditHistory)+1)
	for _, e := range m.EditHistory {
		h := historyEntry{Content: content, RenderedContent: rendered, Timestamp: e.Timestamp, Topic: topic, UserID: e.UserID,
			PrevStream: e.PrevStream, Stream: e.Stream}
		if e.PrevTopic != nil {
			topic = displayTopic(*e.PrevTopic, allowEmpty)
			h.PrevTopic = ptr(topic)
		}
		if e.PrevContent != nil {
			// Zulip's highlight_html_differences marks the words that
			// changed; zulite gives the new rendering unmarked.
			h.PrevContent, h.PrevRendered, h.ContentHTMLDiff = e.PrevContent, e.PrevRendered, ptr(rendered)
			content = *e.PrevContent
			if e.PrevRendered != nil {
				rendered = *e.PrevRendered
			}
		}
		list = append(list, h)
	}
	list = append(list, historyEntry{Content: content, RenderedContent: rendered, Timestamp: m.Timestamp, Topic: topic, UserID: m.SenderID})
	slices.Reverse(list)
	return list
}

// editHistoryObjects is a message object's edit_history, newest first,
// its topics shown as the client asked; nil for a message never edited.
func editHistoryObjects(m message, allowEmpty bool) []editEntry {
	if len(m.EditHistory) == 0 {
		return nil
	}
	out := slices.Clone(m.EditHistory)
	for i, e := range out {
		if e.PrevTopic != nil {
			out[i].PrevTopic = ptr(displayTopic(*e.PrevTopic, allowEmpty))
		}
		if e.Topic != nil {
			out[i].Topic = ptr(displayTopic(*e.Topic, allowEmpty))
		}
	}
	return out
}

// publishEdit gives the update_message event to its audience, each user
// with their flags on the edited message (Zulip's do_update_message),
// and a delete_message event to those who lost access to moved messages.
func (s *server) publishEdit(c messageEdited) {
	m := c.Message
	base := event{"type": "update_message", "user_id": c.Editor.ID, "edit_timestamp": c.Timestamp, "message_id": m.ID,
		"rendering_only": false, "message_ids": nonNilIDs(c.IDs)}
	if !c.Direct { // Zulip's event for a direct message names no channel
		base["stream_name"], base["stream_id"] = c.OrigChannel.Name, c.OrigChannel.ID
	}
	if c.ContentEdit {
		base["orig_content"] = c.Orig.Content
		base["orig_rendered_content"] = renderedContent(c.Orig)
		base["content"] = m.Content
		base["rendered_content"] = renderedContent(m)
		base["is_me_message"] = strings.HasPrefix(m.Content, "/me ")
	}
	moved := c.NewChannel.ID != c.OrigChannel.ID
	if c.TopicEdit || moved {
		base["propagate_mode"] = c.Propagate
	}
	if moved {
		base["new_stream_id"] = c.NewChannel.ID
	}
	withTopics := func(e event, emptyTopicName bool) {
		if c.TopicEdit || moved {
			e["orig_subject"] = displayTopic(c.Orig.Topic, emptyTopicName)
		}
		if c.TopicEdit {
			e["subject"] = displayTopic(m.Topic, emptyTopicName)
			e["topic_links"] = []topicLink{}
		}
	}
	encoded := map[string]*sharedEvent{}
	s.events.offer("update_message", audience{recipients: c.Audience}, func(q *eventQueue, recipient bool) (queuedEvent, bool) {
		if !recipient {
			return queuedEvent{}, false
		}
		flags := c.Flags[q.userID]
		key := strings.Join(flags, ",") + "|" + strings.Repeat("e", b2i(q.emptyTopicName))
		if encoded[key] == nil {
			e := cloneEvent(base)
			withTopics(e, q.emptyTopicName)
			e["flags"] = nonNil(flags)
			encoded[key] = encodeEvent(e)
		}
		return queuedEvent{shared: encoded[key]}, true
	})
	if len(c.LosingAccess) > 0 {
		s.publishDelete(messagesDeleted{IDs: c.IDs, ChannelID: c.OrigChannel.ID, Topic: c.Orig.Topic, Audience: c.LosingAccess})
	}
}

// publishDelete tells the audience that messages were deleted: one
// event with message_ids to a client that declared
// bulk_message_deletion, one event per message with message_id to
// others (Zulip's DeleteMessagesEvent); a direct message's event has
// message_type "private" and no channel or topic.
func (s *server) publishDelete(c messagesDeleted) {
	var bulk [2]*sharedEvent     // by empty_topic_name
	var single [2][]*sharedEvent // by empty_topic_name, one per message
	where := func(e event, emptyTopicName bool) event {
		if c.Direct {
			e["message_type"] = "private"
			return e
		}
		e["message_type"], e["stream_id"], e["topic"] = "stream", c.ChannelID, displayTopic(c.Topic, emptyTopicName)
		return e
	}
	singles := func(emptyTopicName bool) []*sharedEvent {
		r := &single[b2i(emptyTopicName)]
		if *r == nil {
			for _, id := range c.IDs {
				*r = append(*r, encodeEvent(where(event{"type": "delete_message", "message_id": id}, emptyTopicName)))
			}
		}
		return *r
	}
	for i := range c.IDs {
		s.events.offer("delete_message", audience{recipients: c.Audience}, func(q *eventQueue, recipient bool) (queuedEvent, bool) {
			switch {
			case !recipient:
				return queuedEvent{}, false
			case !q.bulkMessageDeletion:
				return queuedEvent{shared: singles(q.emptyTopicName)[i]}, true
			case i > 0: // the one bulk event went with the first offer
				return queuedEvent{}, false
			}
			r := &bulk[b2i(q.emptyTopicName)]
			if *r == nil {
				*r = encodeEvent(where(event{"type": "delete_message", "message_ids": nonNilIDs(c.IDs)}, q.emptyTopicName))
			}
			return queuedEvent{shared: *r}, true
		})
	}
}

// byMethod serves one path's methods, and answers 405 for the others.
func byMethod(handlers map[string]http.Handler) http.Handler {
	other := methodNotAllowed(slices.Collect(maps.Keys(handlers)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := handlers[r.Method]; ok {
			h.ServeHTTP(w, r)
			return
		}
		other.ServeHTTP(w, r)
	})
}
