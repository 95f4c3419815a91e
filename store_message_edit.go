package main

// Editing, moving and deleting messages, as Zulip's
// zerver/actions/message_edit.py and message_delete.py do them: the
// permission rules and time limits, each message's edit history, the
// indexes and each subscriber's unread state and flags carried along.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"go.etcd.io/bbolt"
)

// Zulip's realm limits, in seconds, at their defaults (zulite's realm
// keeps them; register reports them): content edits and deletes within
// ten minutes of the send, moves within a week. Edits and moves get
// Zulip's edit_limit_buffer of 20 seconds more; deletes none.
const (
	editLimitBuffer = 20
	resolvedPrefix  = "✔ " // Zulip's RESOLVED_TOPIC_PREFIX
)

// Propagate modes of a topic or channel move.
const (
	changeOne   = "change_one"
	changeLater = "change_later"
	changeAll   = "change_all"
)

// editEntry is one entry of a message's edit history as Zulip stores it
// (EditHistoryEvent) and sends it in message objects: who, when, and
// what changed. The stored history is newest first.
type editEntry struct {
	UserID       uint64  `json:"user_id"`
	Timestamp    int64   `json:"timestamp"`
	PrevContent  *string `json:"prev_content,omitempty"`
	PrevRendered *string `json:"prev_rendered_content,omitempty"`
	PrevTopic    *string `json:"prev_topic,omitempty"`
	Topic        *string `json:"topic,omitempty"`
	PrevStream   uint64  `json:"prev_stream,omitempty"`
	Stream       uint64  `json:"stream,omitempty"`
}

// messageEdit is a PATCH /messages/{id} as the handler read it: nil
// fields are not changed.
type messageEdit struct {
	MessageID uint64
	Content   *string // normalized; "(deleted)" for an empty one
	Topic     *string // trimmed, as stored
	ChannelID *uint64
	Propagate string
	RealmURL  string
	// PrevContentSHA256: the SHA-256 (hex) of the content the client
	// edits, when it gives one; the edit is refused if that changed.
	PrevContentSHA256 *string
}

// messageEdited: messages were edited or moved. The event goes to
// Audience, each with their flags on the edited message; LosingAccess
// are told the moved messages are deleted for them.
type messageEdited struct {
	Editor       user
	Message      message // the edited message, as it is now
	Orig         message // as it was
	ContentEdit  bool
	TopicEdit    bool
	OrigChannel  channel
	NewChannel   channel // == OrigChannel when not moved between channels
	IDs          []uint64
	Propagate    string
	Timestamp    int64
	Audience     []uint64
	Flags        map[uint64][]string
	LosingAccess []uint64
	Direct       bool // a direct message's content edit: no channel, topic or move (store_dm_edit.go)
}

// messagesDeleted: messages of one channel and topic were deleted.
type messagesDeleted struct {
	IDs       []uint64
	ChannelID uint64
	Topic     string
	Audience  []uint64
	Direct    bool // a direct message: no channel or topic (store_dm_edit.go)
}

// isMoveLimited says whether u is held to the realm's move limits:
// Zulip spares moderators (zulite: administrators).
func isModerator(u user) bool { return u.isAdmin() }

// canEditTopic is Zulip's can_edit_topic: the realm's
// can_move_messages_between_topics_group, or the channel's (either end)
// can_move_messages_within_channel_group, or its administrators.
func (s *store) canEditTopic(u user, from, to channel) bool {
	if s.allowed(u, realmCanMoveMessagesBetweenTopicsGroup) {
		return true
	}
	within := func(ch channel) bool {
		return u.isAdmin() || s.includes(ch.groupSetting(channelCanAdministerChannelGroup), u) ||
			s.includes(ch.groupSetting(channelCanMoveMessagesWithinChannelGroup), u)
	}
	return within(from) || (from.ID != to.ID && within(to))
}

// canResolveTopics is Zulip's can_resolve_topics.
func (s *store) canResolveTopics(u user, from, to channel) bool {
	if s.allowed(u, realmCanResolveTopicsGroup) {
		return true
	}
	return s.includes(from.groupSetting(channelCanResolveTopicsGroup), u) ||
		(from.ID != to.ID && s.includes(to.groupSetting(channelCanResolveTopicsGroup), u))
}

// canMoveOutOf is Zulip's can_move_messages_out_of_channel.
func (s *store) canMoveOutOf(u user, ch channel) bool {
	return u.isAdmin() || s.allowed(u, realmCanMoveMessagesBetweenChannelsGroup) ||
		s.includes(ch.groupSetting(channelCanAdministerChannelGroup), u) ||
		s.includes(ch.groupSetting(channelCanMoveMessagesOutOfChannelGroup), u)
}

// olderThan says whether a message sent at sent is past a limit of
// seconds at now.
func olderThan(now, sent, seconds int64) bool { return now-sent > seconds }

// isResolve says whether renaming from to to resolves or unresolves the
// topic (Zulip's topic_resolved and topic_unresolved).
func isResolve(from, to string) bool {
	resolved := strings.HasPrefix(to, resolvedPrefix) && !strings.HasPrefix(from, resolvedPrefix) && to[len(resolvedPrefix):] == from
	unresolved := strings.HasPrefix(from, resolvedPrefix) && !strings.HasPrefix(to, resolvedPrefix) &&
		strings.TrimLeft(from, resolvedPrefix) == to
	return resolved || unresolved
}

// readForEdit reads the message to edit, for rendering new content
// before the write: the message must be one the user may modify (or,
// for its history, only read: modifying false).
func (s *store) readForEdit(u user, id uint64, modifying bool) (message, channel, error) {
	var m message
	var ch channel
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		if !modifying {
			m, ch, err = s.readableMessage(tx, u, id)
			return err
		}
		m, ch, err = s.reactableMessage(tx, u, id)
		return err
	})
	return m, ch, err
}

// editMessage is Zulip's check_update_message and do_update_message for
// a channel message: every check first, then the edited message and
// the others its propagate mode takes along (their history, indexes,
// unread state and flags), in one transaction.
func (s *store) editMessage(u user, e messageEdit) (int, error) {
	orig, origCh, err := s.readForEdit(u, e.MessageID, true)
	if err != nil {
		return 0, err
	}
	if orig.isDirect() {
		return s.editDirect(u, e, orig) // store_dm_edit.go
	}
	var rendering messageRendering
	if e.Content != nil {
		if orig.SenderID != u.ID { // checked again below; no rendering for others
			return 0, errCannotEditMessage
		}
		topic := orig.Topic
		if e.Topic != nil {
			topic = *e.Topic
		}
		rendering, err = s.renderForSend(u, outgoingMessage{To: channelRef{ID: origCh.ID}, Topic: topic, Content: *e.Content, RealmURL: e.RealmURL})
		if err != nil {
			return 0, err
		}
	}
	changed := 0
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		m, from, err := s.reactableMessage(tx, u, e.MessageID)
		if err != nil {
			return err
		}
		now := s.now().Unix()
		if e.Content != nil { // validate_user_can_edit_message
			if m.SenderID != u.ID {
				return errCannotEditMessage
			}
			if olderThan(now, m.Timestamp, defaultMessageLimitSeconds+editLimitBuffer) {
				return errEditTimeLimit
			}
		}
		topic := e.Topic
		if topic != nil && *topic == m.Topic {
			topic = nil
		}
		to := from
		if e.ChannelID != nil && *e.ChannelID != from.ID {
			if to, err = s.channelByID(tx, *e.ChannelID); err != nil || to.Archived || !s.canAccess(tx, u, to) { // access_stream_by_id_for_message wants an active channel
				return errNoSuchChannelID
			}
		}
		moved := to.ID != from.ID
		// validate_message_edit_payload
		if topic == nil && e.Content == nil && !moved {
			return errNothingToChange
		}
		if e.Propagate != changeOne && topic == nil && !moved {
			return errPropagateWithoutTopic
		}
		if topic != nil && (*topic == strings.TrimSpace(resolvedPrefix) || *topic == resolvedPrefix+emptyTopicDisplayName) {
			return errResolveGeneralChat
		}
		if moved && e.Content != nil {
			return errContentWhileMoving
		}
		if e.Content != nil && hasSubmessages(tx, m.ID) { // a widget (store_submessages.go)
			return refusal(errWidgetEdit)
		}
		if e.PrevContentSHA256 != nil {
			if sum := sha256.Sum256([]byte(m.Content)); *e.PrevContentSHA256 != hex.EncodeToString(sum[:]) {
				return errContentMismatch
			}
		}
		target := m.Topic
		if topic != nil {
			target = *topic
		}
		if topic != nil || moved {
			if err := checkTopicsPolicy(to.topicsPolicy(), target); err != nil {
				return err
			}
		}
		resolving := topic != nil && isResolve(m.Topic, *topic)
		if topic != nil {
			if resolving {
				if !s.canResolveTopics(u, from, to) {
					return errCannotResolve
				}
			} else {
				if !s.canEditTopic(u, from, to) {
					return errCannotEditMessage
				}
				if !isModerator(u) && olderThan(now, m.Timestamp, defaultMoveLimitSeconds+editLimitBuffer) {
					return errTopicTimeLimit
				}
			}
		}
		if e.Content != nil {
			if err := s.checkRendering(tx, u, from, rendering); err != nil {
				return err
			}
		}
		if moved {
			if !s.canMoveOutOf(u, from) {
				return errCannotMoveMessage
			}
			if !s.canPost(u, to) {
				return errCannotPost
			}
			if !isModerator(u) && olderThan(now, m.Timestamp, defaultMoveLimitSeconds+editLimitBuffer) {
				return errChannelTimeLimit
			}
		}
		// The messages that move with it.
		ids := []uint64{m.ID}
		if (topic != nil || moved) && e.Propagate != changeOne {
			ids = topicIDs(tx, from.ID, m.Topic)
			if e.Propagate == changeLater {
				ids = ids[slices.Index(ids, m.ID):]
			}
			if e.Propagate == changeAll && !isModerator(u) && !resolving {
				if err := checkMoveAllLimit(tx, ids, now); err != nil {
					return err
				}
			}
		}
		// Every check is made: the writes.
		var oldUnread map[uint64][]uint64
		fromSubs, toSubs := subscriberIDs(tx, from.ID), subscriberIDs(tx, to.ID)
		if moved {
			oldUnread = map[uint64][]uint64{}
			for _, uid := range fromSubs {
				if unread, err := unreadAmong(tx, uid, from.ID, ids); err != nil {
					return err
				} else if len(unread) > 0 {
					oldUnread[uid] = unread
				}
			}
		}
		change := messageEdited{Editor: u, Orig: m, ContentEdit: e.Content != nil, TopicEdit: topic != nil,
			OrigChannel: from, NewChannel: to, IDs: ids, Propagate: e.Propagate, Timestamp: now}
		messages := tx.Bucket(bucketMessages)
		for _, id := range ids {
			cur := m
			if id != m.ID {
				if cur, err = messageByID(tx, id); err != nil {
					return err
				}
			}
			entry := editEntry{UserID: u.ID, Timestamp: now}
			if topic != nil {
				entry.PrevTopic, entry.Topic = ptr(cur.Topic), ptr(*topic)
			}
			if moved {
				entry.PrevStream, entry.Stream = from.ID, to.ID
			}
			if id == m.ID && e.Content != nil {
				entry.PrevContent, entry.PrevRendered = ptr(cur.Content), ptr(renderedContent(cur))
				if err := s.relinkUploads(tx, cur, *e.Content); err != nil {
					return err
				}
				cur.Content, cur.Rendered, cur.LastEdit = *e.Content, rendering.HTML, now
			}
			if topic != nil || moved {
				if err := unindexMessage(tx, cur, moved); err != nil {
					return err
				}
				cur.Topic, cur.ChannelID, cur.LastMoved = target, to.ID, now
				if err := indexMessage(tx, cur); err != nil {
					return err
				}
			}
			cur.EditHistory = append([]editEntry{entry}, cur.EditHistory...)
			if err := putJSON(messages, itob(id), cur); err != nil {
				return err
			}
			if id == m.ID {
				change.Message = cur
			}
		}
		if e.Content != nil {
			if err := resetMentionFlags(tx, mentionConcerned(tx, m, from.ID, fromSubs, rendering.Mentions), m.ID, rendering.Mentions); err != nil {
				return err
			}
		}
		audience := fromSubs
		if moved {
			losing, err := moveUnread(tx, ids, from, to, fromSubs, toSubs, oldUnread)
			if err != nil {
				return err
			}
			change.LosingAccess = losing
			audience = mergeSorted(minus(fromSubs, losing), toSubs)
		}
		if !slices.Contains(audience, u.ID) {
			audience = mergeSorted(audience, []uint64{u.ID})
		}
		change.Audience = audience
		change.Flags = map[uint64][]string{}
		for _, uid := range audience { // only those listening are told: a walk of the subscribers, not a read each
			if listening, _ := s.listens(uid); listening {
				change.Flags[uid] = userFlags(tx, uid, change.Message)
			}
		}
		if topic != nil || moved { // topic policies go where the whole topic went (store_user_topics.go)
			if err := s.moveTopicPolicies(tx, from, to, m.Topic, target, ids, e.Propagate == changeAll, report); err != nil {
				return err
			}
		}
		changed = len(ids)
		report(change)
		return nil
	})
	return changed, err
}

func ptr[T any](v T) *T { return &v }

// topicIDs are the ids of a topic's messages, ascending.
func topicIDs(tx *bbolt.Tx, channelID uint64, topic string) []uint64 {
	var ids []uint64
	prefix := topicPrefix(channelID, topic)
	c := tx.Bucket(bucketTopicMessages).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, btoi(k[len(prefix):]))
	}
	return ids
}

// checkMoveAllLimit is Zulip's check_time_limit_for_change_all_propagate_mode
// with the realm's one move limit: every message of the topic must be
// young enough to move.
func checkMoveAllLimit(tx *bbolt.Tx, ids []uint64, now int64) error {
	var allowed []uint64
	for _, id := range ids {
		m, err := messageByID(tx, id)
		if err != nil {
			return err
		}
		if !olderThan(now, m.Timestamp, defaultMoveLimitSeconds+editLimitBuffer) {
			allowed = append(allowed, id)
		}
	}
	if len(allowed) == len(ids) {
		return nil
	}
	first := uint64(0)
	if len(allowed) > 0 {
		first = allowed[0]
	}
	return &moveTimeLimit{first, len(ids), len(allowed)}
}

// unindexMessage removes a message from its topic's index, and from its
// channel's when it leaves the channel.
func unindexMessage(tx *bbolt.Tx, m message, channelToo bool) error {
	if err := tx.Bucket(bucketTopicMessages).Delete(topicKey(m.ChannelID, m.Topic, m.ID)); err != nil {
		return err
	}
	if !channelToo {
		return nil
	}
	return tx.Bucket(bucketChannelMessages).Delete(append(itob(m.ChannelID), itob(m.ID)...))
}

// resetMentionFlags sets the mention flags (and has_alert_word) of an
// edited message anew for each subscriber of its channel, as Zulip's
// update_user_message_flags does for each UserMessage: a mention that
// went is cleared, a new one set.
func resetMentionFlags(tx *bbolt.Tx, subscribers []uint64, messageID uint64, m mentionSet) error {
	b := tx.Bucket(bucketFlags)
	for _, uid := range subscribers {
		k := append(itob(uid), itob(messageID)...)
		var old byte
		if v := b.Get(k); v != nil {
			old = v[0]
		}
		f := old&^flagsAtSend | m.flagsFor(uid)
		switch {
		case f == old:
		case f == 0:
			if err := b.Delete(k); err != nil {
				return err
			}
		default:
			if err := b.Put(k, []byte{f}); err != nil {
				return err
			}
		}
	}
	return nil
}

// mentionConcerned are the subscribers whose mention flags on message m
// an edit to mentions may change: every subscriber when the old
// rendering held a mention (its flags were set from it: mentions.go) or
// the new one mentions the channel; otherwise only those the new one
// mentions, and those who have had alert words (store_mutes.go).
func mentionConcerned(tx *bbolt.Tx, m message, channelID uint64, subscribers []uint64, mentions mentionSet) []uint64 {
	if mentions.Channel || strings.Contains(m.Rendered, "mention") {
		return subscribers
	}
	var concerned []uint64
	for _, uid := range slices.Concat(mentions.UserIDs, mentions.Participants, alertWordHolders(tx)) {
		if isSubscribed(tx, uid, channelID) {
			concerned = append(concerned, uid)
		}
	}
	return concerned
}

// moveUnread carries the unread state of messages moved (ids, sorted,
// already in to's index and out of from's) from one channel to another,
// as Zulip keeps UserMessage rows: a subscriber of both keeps each
// message read or unread as it was (oldUnread), a subscriber of the new
// channel only finds them read, and a subscriber of the old channel only
// loses them, with their flags on them. It answers who loses access:
// those of the old channel not in the new one when it is private, the
// guests among them when it is public.
func moveUnread(tx *bbolt.Tx, ids []uint64, from, to channel, fromSubs, toSubs []uint64, oldUnread map[uint64][]uint64) ([]uint64, error) {
	var losing []uint64
	flags := tx.Bucket(bucketFlags)
	for _, uid := range fromSubs {
		if err := forgetInChannel(tx, uid, from.ID, ids); err != nil {
			return nil, err
		}
		if _, stays := slices.BinarySearch(toSubs, uid); stays {
			continue
		}
		for _, id := range ids { // Zulip deletes their UserMessage rows
			if err := flags.Delete(append(itob(uid), itob(id)...)); err != nil {
				return nil, err
			}
		}
		if to.Private {
			losing = append(losing, uid)
		} else if u, err := lookUpUser(tx, uid); err == nil && u.Role == roleGuest {
			losing = append(losing, uid)
		}
	}
	for _, uid := range toSubs {
		want := oldUnread[uid]
		now, err := unreadAmong(tx, uid, to.ID, ids)
		if err != nil {
			return nil, err
		}
		if read := minus(now, want); len(read) > 0 {
			if _, err := markRead(tx, uid, to.ID, read); err != nil {
				return nil, err
			}
		}
		if unread := minus(want, now); len(unread) > 0 {
			if _, err := markUnread(tx, uid, to.ID, unread); err != nil {
				return nil, err
			}
		}
	}
	return losing, nil
}

// forgetInChannel drops messages that left a channel (ids, sorted) from
// the user's exception sets there, then keeps rule 1 (unread.go): the
// first message above the watermark is never in read_above.
func forgetInChannel(tx *bbolt.Tx, userID, channelID uint64, ids []uint64) error {
	m, ok := loadMark(tx, userID, channelID)
	if !ok || (m.below() == nil && m.above() == nil) {
		return nil
	}
	if _, err := removeFromSet(m.belowSets(), m.key, ids); err != nil {
		return err
	}
	if _, err := removeFromSet(m.aboveSets(), m.key, ids); err != nil {
		return err
	}
	if m.above() == nil {
		return nil
	}
	return m.raise(nil)
}

// userFlags is a user's flags on a message, in Zulip's words; a direct
// message's are a participant's.
func userFlags(tx *bbolt.Tx, userID uint64, m message) []string {
	p := pagedMessage{message: m, Subscribed: m.isDirect() || isSubscribed(tx, userID, m.ChannelID)}
	if v := tx.Bucket(bucketFlags).Get(append(itob(userID), itob(m.ID)...)); v != nil {
		p.Flags = v[0]
	}
	if unread, _ := unreadAmong(tx, userID, m.readKey(), []uint64{m.ID}); len(unread) > 0 {
		p.Unread = true
	}
	return messageFlags(p)
}

// relinkUploads moves the message's attachment links from its old
// content to new content, as Zulip's check_attachment_reference_change.
// Links of messages the index has not reached yet are left to it.
func (s *store) relinkUploads(tx *bbolt.Tx, m message, content string) error {
	if m.ID > s.refsThrough.Load() {
		return nil
	}
	refs := tx.Bucket(bucketAttachmentRefs)
	for _, p := range linkedPaths(m.Content) {
		if err := refs.Delete(append(refPrefix(p), itob(m.ID)...)); err != nil {
			return err
		}
	}
	sender, err := lookUpUser(tx, m.SenderID)
	if err != nil {
		return nil
	}
	for _, p := range linkedPaths(content) {
		raw := tx.Bucket(bucketAttachments).Get([]byte(p))
		if raw == nil {
			continue
		}
		var a attachment
		if err := json.Unmarshal(raw, &a); err != nil {
			return err
		}
		if a.Owner != m.SenderID && !s.canSeeLinked(tx, sender, p) {
			continue
		}
		if err := refs.Put(append(refPrefix(p), itob(m.ID)...), nil); err != nil {
			return err
		}
	}
	return nil
}

// deleteMessage is Zulip's validate_can_delete_message and
// do_delete_messages for one channel message: the message, its indexes,
// reactions, attachment links, and each subscriber's flags and unread
// exceptions go.
func (s *store) deleteMessage(u user, id uint64) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		m, ch, err := s.reactableMessage(tx, u, id)
		if err != nil {
			return err
		}
		if m.isDirect() {
			return s.deleteDirect(tx, u, m, report) // store_dm_edit.go
		}
		if !s.canDelete(u, m, ch) {
			return errCannotDeleteMessage
		}
		if !s.allowed(u, realmCanDeleteAnyMessageGroup) && !s.includes(ch.groupSetting(channelCanDeleteAnyMessageGroup), u) &&
			olderThan(s.now().Unix(), m.Timestamp, defaultMessageLimitSeconds) {
			return errDeleteTimeLimit
		}
		subs, err := deleteChannelMessages(tx, ch, []message{m}) // store_channel_admin.go
		if err != nil {
			return err
		}
		audience := subs
		if !slices.Contains(audience, u.ID) {
			audience = mergeSorted(audience, []uint64{u.ID})
		}
		report(messagesDeleted{IDs: []uint64{id}, ChannelID: ch.ID, Topic: m.Topic, Audience: audience})
		return nil
	})
}

// canDelete is Zulip's validate_can_delete_message but for its time
// limit: anyone in can_delete_any_message_group (the realm's or the
// channel's), or the sender when in can_delete_own_message_group.
func (s *store) canDelete(u user, m message, ch channel) bool {
	if s.allowed(u, realmCanDeleteAnyMessageGroup) || s.includes(ch.groupSetting(channelCanDeleteAnyMessageGroup), u) {
		return true
	}
	if m.SenderID != u.ID {
		return false
	}
	return s.allowed(u, realmCanDeleteOwnMessageGroup) || s.includes(ch.groupSetting(channelCanDeleteOwnMessageGroup), u)
}

// messageHistory is a message's edit history for GET
// /messages/{id}/history, with the message as it is now.
func (s *store) messageHistory(u user, id uint64) (message, error) {
	m, _, err := s.readForEdit(u, id, false)
	return m, err
}

// minus returns the ids of a (sorted) not in b (sorted); unlike
// without, b need not be part of a.
func minus(a, b []uint64) []uint64 {
	var out []uint64
	for _, id := range a {
		if _, found := slices.BinarySearch(b, id); !found {
			out = append(out, id)
		}
	}
	return out
}
