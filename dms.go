package main

// Direct messages on the API surface: sending (POST /messages with type
// "direct" or the legacy "private"), their message objects, their
// events, and register's unread and recent-conversation state for them.
// The store's side is store_dms.go.

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// recipientDirectGroup is Zulip's Recipient type of a direct-message
// group. Zulip gives one-to-one conversations a user's recipient (type
// 1) and is moving them to groups; zulite gives every conversation a
// group's recipient id, so a conversation has one id whoever sends.
const recipientDirectGroup = 3

// sendDirect serves POST /messages for direct messages, after the type.
// Zulip reads content and read_by_sender with the other parameters,
// then the recipients (zerver/views/message_send.py,
// extract_private_recipients), then the content's form.
func (s *server) sendDirect(r *apiRequest) (any, error) {
	content, err := r.params.requiredString("content")
	if err != nil {
		return nil, err
	}
	readBySender, err := r.params.optionalBool("read_by_sender", defaultReadBySender)
	if err != nil {
		return nil, err
	}
	to, err := directTarget(r.params)
	if err != nil {
		return nil, err
	}
	if content, err = sentContent(content); err != nil {
		return nil, err
	}
	queueID, localID := localEcho(r.params)
	out := outgoingDirect{To: to, Content: content, Client: clientName(r), ReadBySender: readBySender,
		QueueID: queueID, LocalID: localID, RealmURL: s.baseURL, Widget: readWidgetContent(r.params)}
	sent, err := s.store.postDirect(r.user, out)
	if err != nil {
		return nil, err
	}
	return struct {
		ID uint64 `json:"id"`
	}{sent.ID}, nil
}

// directTarget reads a direct message's `to` as Zulip's
// extract_private_recipients does: JSON (a list of e-mails or of user
// ids, or a string), or else text, which is a comma-separated list of
// e-mails. E-mails are trimmed, empty ones dropped; repeats count once.
func directTarget(p *params) (directRecipients, error) {
	raw, ok := p.lookup("to")
	if !ok {
		return directRecipients{}, errNoRecipients
	}
	var data any = raw
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var parsed any
	if json.Valid([]byte(raw)) && dec.Decode(&parsed) == nil {
		data = parsed
	}
	if text, isText := data.(string); isText {
		parts := strings.Split(text, ",")
		data = make([]any, len(parts))
		for i, part := range parts {
			data.([]any)[i] = part
		}
	}
	list, isList := data.([]any)
	if !isList {
		return directRecipients{}, errRecipientsDataType
	}
	if len(list) == 0 {
		return directRecipients{}, errNoRecipients
	}
	var to directRecipients
	switch list[0].(type) {
	case string:
		for _, item := range list {
			email, isText := item.(string)
			if !isText {
				return to, errRecipientsMixed
			}
			if email = strings.TrimSpace(email); email != "" && !slices.Contains(to.Emails, email) {
				to.Emails = append(to.Emails, email)
			}
		}
		if len(to.Emails) == 0 {
			return to, errNoRecipients
		}
	case json.Number:
		if _, isInt := jsonInt(list[0]); !isInt {
			return to, errRecipientsDataType
		}
		for _, item := range list {
			id, isInt := jsonInt(item)
			if !isInt {
				return to, errRecipientsMixed
			}
			if id <= 0 {
				return to, errDMInvalidUserID.about(strconv.FormatInt(id, 10))
			}
			if !slices.Contains(to.IDs, uint64(id)) {
				to.IDs = append(to.IDs, uint64(id))
			}
		}
	default:
		return to, errRecipientsDataType
	}
	return to, nil
}

// dmRecipient is one element of a direct message's display_recipient.
type dmRecipient struct {
	ID            uint64 `json:"id"`
	Email         string `json:"email"`
	FullName      string `json:"full_name"`
	IsMirrorDummy bool   `json:"is_mirror_dummy"`
}

// direct makes a message object one of a direct message: the
// participants, sender included, by id as display_recipient, the type
// "private" (Zulip still names it so in message objects), no channel and
// an empty subject.
func (o *messageObject) direct(m pagedMessage) {
	list := make([]dmRecipient, 0, len(m.Participants))
	for _, u := range m.Participants {
		list = append(list, dmRecipient{ID: u.ID, Email: u.Email, FullName: u.FullName})
	}
	o.DisplayRecipient = list
	o.RecipientID = recipientID(recipientDirectGroup, m.ConversationID)
	o.StreamID = 0
	o.Subject = ""
	o.Type = "private"
}

// publishDirect gives a new direct message to its participants' queues,
// each with that user's flags. The event is encoded once per rendering
// and shared, as a channel message's is (publishMessage).
func (s *server) publishDirect(c directSent) {
	sender := c.Sender.ID
	ids := c.Recipients()
	// Tails by the queue's user's mention flags and whether they sent it;
	// then the sender's with local_message_id.
	// (and whether they muted the sender: store_mutes.go)
	tail := func(mentions byte, muted, isSender bool) int {
		return (int(mentions/flagMentioned)*2+b2i(muted))*2 + b2i(isSender)
	}
	localTail := tail(flagsAtSend, true, true) + 1
	tails := make([]string, localTail+1)
	for mentions := byte(0); mentions <= flagsAtSend; mentions += flagMentioned {
		for muted := range 2 {
			for isSender := range 2 {
				m := pagedMessage{Subscribed: true, Flags: mentions, Unread: (isSender == 0 || !c.ReadBySender) && muted == 0}
				raw, _ := json.Marshal(messageFlags(m))
				tails[tail(mentions, muted == 1, isSender == 1)] = `,"flags":` + string(raw)
			}
		}
	}
	if c.LocalID != nil {
		raw, _ := json.Marshal(*c.LocalID)
		tails[localTail] = tails[tail(c.Mentions.flagsFor(sender), false, true)] + `,"local_message_id":` + string(raw)
	}
	var rendered [2][2]*sharedEvent // by apply_markdown, client_gravatar
	s.events.offer("message", usersAudience(ids...), func(q *eventQueue, recipient bool) (queuedEvent, bool) {
		if !recipient {
			return queuedEvent{}, false
		}
		isSender := q.userID == sender
		mentions := c.Mentions.flagsFor(q.userID)
		_, muted := slices.BinarySearch(c.Muters, q.userID)
		m := c.paged()
		m.Flags, m.Unread = mentions, (!isSender || !c.ReadBySender) && !muted
		if q.narrow != nil && !matchesNarrow(q.narrow, m) {
			return queuedEvent{}, false
		}
		r := &rendered[b2i(q.applyMarkdown)][b2i(q.clientGravatar)]
		if *r == nil {
			object, err := marshalUnescaped(newMessageObject(m, q.applyMarkdown, q.clientGravatar, true))
			if err != nil {
				return queuedEvent{}, false
			}
			*r = &sharedEvent{raw: append([]byte(`{"type":"message","message":`), object...), tails: tails}
		}
		e := queuedEvent{shared: *r, tail: uint8(tail(mentions, muted, isSender))}
		if c.LocalID != nil && q.id == c.QueueID && isSender {
			e.tail = uint8(localTail)
		}
		return e, true
	})
}

// paged is the sent message as its participants see it.
func (c directSent) paged() pagedMessage {
	return pagedMessage{message: c.message, Sender: c.Sender, Participants: c.Participants, Subscribed: true, Submessages: c.Submessages}
}

// directDetails is update_message_flags' message_details entry of a
// direct message: the other participants.
func directDetails(participants []uint64, userID uint64) map[string]any {
	others := slices.DeleteFunc(slices.Clone(participants), func(id uint64) bool { return id == userID })
	return map[string]any{"type": "private", "user_ids": nonNilIDs(others)}
}

// addUnreadDirect adds the user's unread direct messages to unread_msgs
// as Zulip's aggregate_pms and aggregate_huddles shape them: one-to-one
// conversations (and the one with oneself) in pms by the other user's
// id, groups in huddles by their participants' ids joined with commas,
// each list sorted by that key and each id list ascending.
func addUnreadDirect(out *unreadMsgs, direct []unreadConversation, userID uint64) {
	for _, c := range direct {
		ids := slices.Sorted(slices.Values(c.IDs))
		out.Count += len(ids)
		switch len(c.Participants) {
		case 1, 2:
			other := userID
			for _, p := range c.Participants {
				if p != userID {
					other = p
				}
			}
			out.PMs = append(out.PMs, unreadDMState{OtherUserID: other, SenderID: other, UnreadMessageIDs: ids})
		default:
			text := make([]string, len(c.Participants))
			for i, p := range c.Participants {
				text[i] = strconv.FormatUint(p, 10)
			}
			out.Huddles = append(out.Huddles, unreadGroupState{UserIDsString: strings.Join(text, ","), UnreadMessageIDs: ids})
		}
	}
	sortFunc(out.PMs, func(a, b unreadDMState) int { return cmp.Compare(a.OtherUserID, b.OtherUserID) })
	sortFunc(out.Huddles, func(a, b unreadGroupState) int { return strings.Compare(a.UserIDsString, b.UserIDsString) })
}
