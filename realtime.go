package main

import (
	"bytes"
	"encoding/json"
	"errors"
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
		emptyTopicName: o.capabilities.emptyTopicName, simplifiedPresence: o.capabilities.simplifiedPresenceEvents,
		streamTyping: o.capabilities.streamTypingNotifications, bulkMessageDeletion: o.capabilities.bulkMessageDeletion,
		includeDeactivatedGroups: o.capabilities.includeDeactivatedGroups,
		archivedChannels:         o.capabilities.archivedChannels, linkifierURLTemplate: o.capabilities.linkifierURLTemplate}
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
	return stateMembers(state) // register_shared.go
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
	if o.presenceHistoryDays, err = optionalInt(r.params, "presence_history_limit_days"); err != nil {
		return o, err
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
	events, ok, parked := s.events.poll(r.Context(), r.user.ID, id, lastEventID, dontBlock, func() *parkedPoll { return s.parkPoll(r, id) })
	if parked {
		return nil, errParked
	}
	if !ok {
		return nil, badQueue(id)
	}
	return pollMembers(events, id), nil
}

// errParked tells serve that the poll parked (parking.go): its answer is
// written later, not now.
var errParked = errors.New("parked")

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
func (s *server) publishChange(change any, release func()) {
	switch c := change.(type) {
	case messageSent:
		s.publishMessage(c, release)
		if s.pusher != nil {
			s.pusher.poke()
		}
	case directSent:
		s.publishDirect(c) // dms.go
		if s.pusher != nil {
			s.pusher.poke()
		}
	case flagsChanged:
		if s.pusher != nil && c.Change.Flag == "read" && c.Change.Add {
			s.pusher.readChanged(c.User.ID)
		}
		if c.Uncollected {
			s.events.dropNewerThan(c.User.ID, c.ListenSeq)
			return
		}
		s.publishFlags(c)
	case subscriptionsChanged:
		s.publishSubscriptions(c)
	case realmGroupChanged:
		s.publishRealmGroup(c)
	case userGroupChanged:
		s.publishUserGroup(c) // api_user_groups.go
	case accountCreated:
		s.publishAccountCreated(c)
	case invitesChanged:
		s.events.tell("invites_changed", usersAudience(c.Audience...), event{"type": "invites_changed"}, nil)
	case accountEdited:
		s.publishAccountEdited(c) // api_people.go
	case groupsRejoined:
		s.publishGroupsRejoined(c)
	case profileFieldsChanged:
		s.publishProfileFields(c) // api_profile_fields.go
	case realmDefaultsChanged:
		s.publishRealmDefaults(c)
	case accountChanged:
		if c.EndsSessions {
			s.events.removeAll(c.UserID)
		}
	case userSettingsChanged:
		s.publishUserSettings(c)
	case subscriptionPropertyChanged:
		s.publishSubscriptionProperty(c)
	case userStatusChanged:
		s.publishUserStatus(c)
	case mutedUsersChanged:
		s.publishMutedUsers(c) // api_mutes.go
	case alertWordsChanged:
		s.publishAlertWords(c)
	case attachmentChanged:
		s.publishAttachment(c) // api_attachments.go
	case avatarChanged:
		s.publishAvatar(c)
	case realmEmojiChanged:
		s.publishRealmEmoji(c) // api_realm_emoji.go
	case linkifiersChanged:
		s.publishLinkifiers(c) // api_linkifiers.go
	case playgroundsChanged:
		s.publishPlaygrounds(c)
	case realmExportsChanged:
		s.publishRealmExports(c) // api_realm_export.go
	case reactionChanged:
		s.publishReaction(c)
	case submessageAdded:
		s.publishSubmessage(c)
	case draftsChanged:
		s.publishDrafts(c) // api_drafts.go
	case snippetsChanged:
		s.publishSnippets(c)
	case scheduledChanged:
		s.publishScheduled(c) // api_scheduled_messages.go
	case messageEdited:
		s.publishEdit(c)
	case messagesDeleted:
		s.publishDelete(c)
	case userTopicChanged:
		s.publishUserTopic(c)
	case channelUpdated:
		s.publishChannelUpdate(c) // channel_events.go
	case channelArchived:
		s.publishChannelArchived(c)
	case defaultChannelsChanged:
		s.publishDefaultChannels(c.IDs, c.NonGuests)
	}
}

// publishMessage gives a new message to the queues of its recipients
// (the channel's subscribers and the sender) and of all_public_streams
// queues for a public channel, each with that user's flags (none for a
// queue whose user does not receive it). The message event is encoded
// once per rendering (Markdown or not, gravatar or not) and shared by
// every queue that asks for it; a queue's flags, the empty topic's name
// for a queue without empty_topic_name, and local_message_id for the
// sender's queue named in the send (queue_id) are written around those
// bytes when the queue is polled.
func (s *server) publishMessage(c messageSent, release func()) {
	sender := c.Sender.ID
	senderSubscribed := slices.Contains(c.Recipients(), sender)
	// The send answers before the polls it wakes do (or, to a big
	// channel, once its own queues have the message).
	to := audience{recipients: c.Recipients(), allPublic: !c.Channel.Private, release: release, first: sender, firstRecipient: senderSubscribed}
	if !senderSubscribed {
		to.others = []uint64{sender}
	}
	// The queues' own members: their flags, by the queue's user's flags
	// set at send (mentions.go; four bits), whether they muted the sender
	// (store_mutes.go: then it is read for them), whether they are
	// subscribed and whether they are the sender; then the sender's with
	// local_id.
	tail := func(mentions byte, muted, subscribed, isSender bool) int {
		return (int(mentions/flagMentioned)*2+b2i(muted))*4 + b2i(subscribed)*2 + b2i(isSender)
	}
	localTail := tail(flagsAtSend, true, true, true) + 1
	tails := make([]string, localTail+1)
	most := byte(0) // a message without mentions needs the tails without them only
	if len(c.Mentions.UserIDs) > 0 || c.Mentions.Channel || c.Mentions.Topic || len(c.Mentions.Alerted) > 0 {
		most = flagsAtSend
	}
	for mentions := byte(0); mentions <= most; mentions += flagMentioned {
		for muted := range 1 + b2i(len(c.Muters) > 0) {
			for subscribed := range 2 {
				for isSender := range 2 {
					flags := []string{}
					if subscribed == 1 || isSender == 1 {
						m := pagedMessage{Subscribed: subscribed == 1}
						if m.Subscribed {
							m.Flags = mentions
						}
						m.Unread = m.Subscribed && (isSender == 0 || !c.ReadBySender) && muted == 0
						flags = messageFlags(m)
					}
					raw, _ := json.Marshal(flags)
					tails[tail(mentions, muted == 1, subscribed == 1, isSender == 1)] = `,"flags":` + string(raw)
				}
			}
		}
	}
	if c.LocalID != nil {
		raw, _ := json.Marshal(*c.LocalID)
		tails[localTail] = tails[tail(c.Mentions.flagsFor(sender), false, senderSubscribed, true)] + `,"local_message_id":` + string(raw)
	}
	var rendered [2][2]*sharedEvent // by apply_markdown, client_gravatar
	s.events.offer("message", to, func(q *eventQueue, recipient bool) (queuedEvent, bool) {
		isSender := q.userID == sender
		var mentions byte
		var muted bool
		if recipient {
			mentions = c.Mentions.flagsFor(q.userID)
			_, muted = slices.BinarySearch(c.Muters, q.userID)
		}
		if q.narrow != nil {
			m := pagedMessage{message: c.message, Channel: c.Channel, Sender: c.Sender, Subscribed: recipient, Flags: mentions}
			m.Unread = recipient && (!isSender || !c.ReadBySender) && !muted
			m.Topic = displayTopic(m.Topic, q.emptyTopicName) // a narrow matches the topic the client is shown
			if !matchesNarrow(q.narrow, m) {
				return queuedEvent{}, false
			}
		}
		r := &rendered[b2i(q.applyMarkdown)][b2i(q.clientGravatar)]
		if *r == nil {
			*r = encodeMessageEvent(c, q.applyMarkdown, q.clientGravatar, tails)
		}
		e := queuedEvent{shared: *r, tail: uint8(tail(mentions, muted, recipient, isSender)), named: !q.emptyTopicName}
		if c.LocalID != nil && q.id == c.QueueID && isSender {
			e.tail = uint8(localTail)
		}
		return e, true
	})
}

// encodeMessageEvent encodes a message event but for each queue's own
// members: {"type":"message","message":{...}. The subject of a message
// whose topic is empty is encoded as "" and its place kept, so that a
// queue without empty_topic_name is shown the topic's name there.
func encodeMessageEvent(c messageSent, applyMarkdown, clientGravatar bool, tails []string) *sharedEvent {
	m := pagedMessage{message: c.message, Channel: c.Channel, Sender: c.Sender, Submessages: c.Submessages}
	object, err := marshalUnescaped(newMessageObject(m, applyMarkdown, clientGravatar, true))
	if err != nil {
		return nil
	}
	e := &sharedEvent{raw: append([]byte(`{"type":"message","message":`), object...), tails: tails}
	if c.Topic == "" {
		// Only the key can hold "subject": unescaped: quotes inside
		// strings are escaped.
		if at := bytes.Index(e.raw, []byte(`"subject":""`)); at > 0 {
			e.subject = at + len(`"subject":`)
		}
	}
	return e
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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
	if c.Details == nil {
		s.events.tell("update_message_flags", usersAudience(c.User.ID), e, nil)
		return
	}
	var encoded [2]*sharedEvent // by empty_topic_name
	s.events.offer("update_message_flags", usersAudience(c.User.ID), func(q *eventQueue, _ bool) (queuedEvent, bool) {
		r := &encoded[b2i(q.emptyTopicName)]
		if *r == nil {
			byID := map[string]any{}
			for _, m := range c.Details {
				if m.isDirect() {
					byID[strconv.FormatUint(m.ID, 10)] = directDetails(c.Conversations[m.ConversationID], c.User.ID) // dms.go
					continue
				}
				byID[strconv.FormatUint(m.ID, 10)] = map[string]any{"type": "stream", "stream_id": m.ChannelID, "topic": displayTopic(m.Topic, q.emptyTopicName), "unmuted_stream_msg": true}
			}
			qe := cloneEvent(e)
			qe["message_details"] = byID
			*r = encodeEvent(qe)
		}
		return queuedEvent{shared: *r}, true
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

// publishAccountCreated tells every queue of a new account, as Zulip's
// realm_user add (zerver/actions/create_user.py notify_created_user):
// the person as register's realm_users lists them, with is_active
// (format_user_row has it; register's lists leave it to the list, and
// zulip-flutter's User requires it in the event), its avatar_url null
// for queues with client_gravatar while it has no uploaded avatar.
func (s *server) publishAccountCreated(c accountCreated) {
	type person struct {
		registerUser
		IsActive bool `json:"is_active"`
	}
	variants := make([]event, 2)
	for i, gravatar := range []bool{false, true} {
		variants[i] = event{"type": "realm_user", "op": "add", "person": person{newRegisterUser(c.User, gravatar), c.User.Active}}
	}
	s.events.tellEveryone("realm_user", func(q *eventQueue) int { return b2i(q.clientGravatar) }, variants...)
}
