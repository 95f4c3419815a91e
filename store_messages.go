package main

// The store's messages, their indexes, and each user's unread state and
// flags.

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"go.etcd.io/bbolt"
)

// channelRef names a channel by id or by name, as the `to` of a send does.
type channelRef struct {
	ID     uint64
	Name   string
	IDText string // an id as the client wrote it, when it names no channel
}

// outgoingMessage is a channel message as POST /messages sends it.
type outgoingMessage struct {
	To      channelRef
	Topic   string // "" is the empty topic
	Content string
	Client  string
	// ReadBySender: the message is read for its sender; otherwise it is
	// unread for them too when they are subscribed to the channel.
	ReadBySender bool
	// QueueID and LocalID: the sender's event queue that should hear the
	// message with local_message_id, and that id (nil when not sent).
	QueueID string
	LocalID *string
	// RealmURL: links in the content to the realm itself are rendered
	// relative (internal/markdown).
	RealmURL string
	// Widget: widget_content, when sent (widgets.go).
	Widget widgetRequest
	// Also runs in the send's transaction once its checks pass: the
	// scheduler's removal of what it sends (store_scheduled_messages.go).
	Also func(tx *bbolt.Tx, report func(any)) error
}

// sentMessage is a stored message with its channel and what the
// sender's queue is told. Who receives it (Recipients) is not worked out
// by the send: that would cost the committer a step per subscriber.
type sentMessage struct {
	message
	Channel      channel
	ReadBySender bool
	QueueID      string
	LocalID      *string
	recipients   *recipients
	Mentions     mentionSet // what its mentions mean for its recipients (mentions.go)
	// Muters: its recipients who muted its sender, sorted; it is read
	// for them (store_mutes.go).
	Muters []uint64
	// Submessages: its widget, when its content asks for one (widgets.go).
	Submessages []storedSubmessage
	// AutomaticPolicy: the policy sending set for its sender's topic
	// (followOnSend), 0 when none.
	AutomaticPolicy int
}

// recipients are a message's recipients, read once, when first asked.
type recipients struct {
	once sync.Once
	read func() []uint64
	ids  []uint64
}

// Recipients are the channel's subscribers when the message was sent,
// sorted: those subscribed now whose subscription started before it. They
// are read from the committed file when first asked (by the event hub,
// off the committer, and only when someone listens), so a subscriber who
// left between the send's commit and that moment is not among them.
func (m sentMessage) Recipients() []uint64 {
	if m.recipients == nil {
		return nil
	}
	m.recipients.once.Do(func() { m.recipients.ids = m.recipients.read() })
	return m.recipients.ids
}

// recipientsOf reads who received message id of the channel.
func (s *store) recipientsOf(channelID, id uint64) func() []uint64 {
	return func() []uint64 {
		var ids []uint64
		s.view(func(tx *bbolt.Tx) error {
			ids = nil
			prefix := itob(channelID)
			c := tx.Bucket(bucketSubscribers).Cursor()
			for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
				if len(v) < 8 || btoi(v) < id {
					ids = append(ids, btoi(k[8:]))
				}
			}
			return nil
		})
		return ids
	}
}

// sendMessage stores a channel message as one of Zulip's own apps
// sends it: read for its sender.
func (s *store) sendMessage(sender user, to channelRef, topic, content, client string) (sentMessage, error) {
	return s.postMessage(sender, outgoingMessage{To: to, Topic: topic, Content: content, Client: client, ReadBySender: true})
}

// topicsPolicy is the channel's topics policy. zulite's channels have
// none of their own yet, so every channel inherits the realm's.
func (ch channel) topicsPolicy() string { return topicsPolicyInherit }

// checkChannelSend is a channel send's checks, in Zulip's order: the
// channel's can_send_message_group, access to a private channel, and
// the topics policy (a send now, or one scheduled: checkScheduled).
func (s *store) checkChannelSend(tx *bbolt.Tx, sender user, ch channel, topic string) error {
	if !s.canPost(sender, ch) {
		return errCannotPost
	}
	if ch.Archived || ch.Private && !s.canAccess(tx, sender, ch) { // Zulip's access_stream_for_send_message
		return errChannelForbidden.about(ch.Name)
	}
	return checkTopicsPolicy(ch.topicsPolicy(), topic)
}

// postMessage stores a channel message, unread for every subscriber
// but, when ReadBySender, the sender, after checking the channel, the
// sender's access and the channel's topics policy. It writes the message
// and its indexes, and the sender's unread state: nothing per subscriber
// (unread.go).
func (s *store) postMessage(sender user, out outgoingMessage) (sentMessage, error) {
	rendering, err := s.renderForSend(sender, out)
	if err != nil {
		return sentMessage{}, err
	}
	_, widget := widgetOf(out.Content)
	if out.Widget.Given {
		widget = out.Widget.Content
	}
	var sent sentMessage
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		var ch channel
		var err error
		if out.To.Name != "" {
			ch, err = s.channelByName(tx, out.To.Name)
		} else {
			ch, err = s.channelByID(tx, out.To.ID)
		}
		if err != nil {
			return err
		}
		if err := s.checkChannelSend(tx, sender, ch, out.Topic); err != nil {
			return err
		}
		if out.Widget.Refused != nil {
			return refusal(out.Widget.Refused)
		}
		if err := s.checkRendering(tx, sender, ch, rendering); err != nil {
			return err
		}
		if out.Also != nil {
			if err := out.Also(tx, report); err != nil {
				return err
			}
		}
		messages := tx.Bucket(bucketMessages)
		id, err := messages.NextSequence()
		if err != nil {
			return err
		}
		m := message{ID: id, SenderID: sender.ID, ChannelID: ch.ID, Topic: out.Topic, Content: out.Content, Timestamp: s.now().Unix(), Client: out.Client,
			Rendered: rendering.HTML}
		sent = sentMessage{message: m, Channel: ch, ReadBySender: out.ReadBySender, QueueID: out.QueueID, LocalID: out.LocalID,
			recipients: &recipients{read: s.recipientsOf(ch.ID, id)}, Mentions: rendering.Mentions}
		if err := putJSON(messages, itob(id), m); err != nil {
			return err
		}
		if err := indexMessage(tx, m); err != nil {
			return err
		}
		if sent.Submessages, err = putWidget(tx, m, widget); err != nil {
			return err
		}
		if out.ReadBySender { // unread for every subscriber: above their watermarks already
			if _, err := markRead(tx, sender.ID, ch.ID, []uint64{id}); err != nil {
				return err
			}
		}
		if err := setMentionFlags(tx, ch.ID, id, rendering.Mentions); err != nil {
			return err
		}
		if sent.Muters, err = readByMuters(tx, m, func(uid uint64) bool { return isSubscribed(tx, uid, ch.ID) }); err != nil {
			return err
		}
		if err := s.outbox.queueTx(tx, m, nil); err != nil {
			return err
		}
		if sent.AutomaticPolicy, err = s.followOnSend(tx, sender, ch, m, rendering.Mentions.UserIDs, report); err != nil {
			return err
		}
		report(messageSent{sent, sender})
		return nil
	})
	if err == nil {
		for old := s.maxID.Load(); old < sent.ID && !s.maxID.CompareAndSwap(old, sent.ID); old = s.maxID.Load() {
		}
	}
	return sent, err
}

// markChannelRead makes every unread message of the channel read for the
// user, after checking that the channel exists and is accessible: one
// watermark moved and the user's exceptions there dropped, however many
// messages were unread. The ids that were unread are collected for
// events only when the user has a queue listening: collecting costs a
// walk over them, and without it the cost does not depend on how many
// there were.
//
// When nothing is unread there is nothing to write: the checks run in a
// read transaction and no commit is made.
func (s *store) markChannelRead(u user, channelID uint64) error {
	nothing := false
	err := s.view(func(tx *bbolt.Tx) error {
		ch, err := s.channelByID(tx, channelID)
		if err != nil {
			return err
		}
		if ch.Archived || !s.canAccess(tx, u, ch) { // Zulip's access_stream_by_id wants an active channel
			return errNoSuchChannel
		}
		m, ok := loadMark(tx, u.ID, ch.ID)
		nothing = !ok || !m.hasUnread()
		return nil
	})
	if err != nil || nothing {
		return err
	}
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		ch, err := s.channelByID(tx, channelID)
		if err != nil {
			return err
		}
		if ch.Archived || !s.canAccess(tx, u, ch) { // Zulip's access_stream_by_id wants an active channel
			return errNoSuchChannel
		}
		change := flagsChanged{User: u, Change: flagChange{Flag: "read", Add: true}}
		listening, seq := s.listens(u.ID)
		if listening {
			if change.IDs, err = unreadIDs(tx, u.ID, ch.ID); err != nil {
				return err
			}
		} else {
			change.Uncollected, change.ListenSeq = true, seq
		}
		if _, err := readAll(tx, u.ID, ch.ID); err != nil {
			return err
		}
		report(change)
		return nil
	})
}

func (s *store) listens(userID uint64) (bool, uint64) {
	if h := s.hooks.Load(); h != nil {
		return h.listening(userID)
	}
	return false, 0
}

// indexMessage records a message in its channel's and its topic's index.
func indexMessage(tx *bbolt.Tx, m message) error {
	if err := tx.Bucket(bucketChannelMessages).Put(append(itob(m.ChannelID), itob(m.ID)...), nil); err != nil {
		return err
	}
	return tx.Bucket(bucketTopicMessages).Put(topicKey(m.ChannelID, m.Topic, m.ID), nil)
}

func topicPrefix(channelID uint64, topic string) []byte {
	return append(append(itob(channelID), foldTopic(topic)...), 0)
}

func topicKey(channelID uint64, topic string, messageID uint64) []byte {
	return append(topicPrefix(channelID, topic), itob(messageID)...)
}

// indexTopics builds topic_messages for a database of schema 1.
func indexTopics(tx *bbolt.Tx) error {
	return tx.Bucket(bucketMessages).ForEach(func(_, v []byte) error {
		var m message
		if err := json.Unmarshal(v, &m); err != nil {
			return err
		}
		return tx.Bucket(bucketTopicMessages).Put(topicKey(m.ChannelID, m.Topic, m.ID), nil)
	})
}

// Personal flags other than read, one bit each in the flags bucket (and
// the mention flags: mentions.go).
const (
	flagStarred   byte = 1 << 0
	flagCollapsed byte = 1 << 1
)

// flagChange is one POST /messages/flags: add or remove one flag.
type flagChange struct {
	Flag string // "read", "starred" or "collapsed"
	Add  bool
}

// updateFlags applies the change to the messages, after checking that
// each exists and is in a channel the user may access. Removing read
// makes a message unread again only in channels the user is subscribed
// to, since unread messages live only there.
// It answers the ids whose flag changed and, when removing read, the
// channels skipped because the user is not subscribed to them.
func (s *store) updateFlags(u user, ids []uint64, change flagChange) (changed, unsubscribed []uint64, err error) {
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		changed, unsubscribed = nil, nil
		byChannel := map[uint64][]uint64{}
		for _, id := range ids { // every check before the first write
			m, err := messageByID(tx, id)
			if err != nil {
				return errInvalidMessageIDs
			}
			if m.isDirect() { // store_dms.go: a conversation is a channel for its participants
				if !isParticipant(tx, u.ID, m.ConversationID) {
					return errInvalidMessageIDs
				}
				byChannel[m.readKey()] = append(byChannel[m.readKey()], id)
				continue
			}
			ch, err := s.channelByID(tx, m.ChannelID)
			if err != nil || !s.canAccess(tx, u, ch) {
				return errInvalidMessageIDs
			}
			byChannel[ch.ID] = append(byChannel[ch.ID], id)
		}
		for channelID, inChannel := range byChannel {
			slices.Sort(inChannel)
			inChannel = slices.Compact(inChannel)
			if change.Flag == "read" && !change.Add && !isConversationKey(channelID) && !isSubscribed(tx, u.ID, channelID) {
				unsubscribed = append(unsubscribed, channelID)
				continue
			}
			done, err := s.applyFlag(tx, u.ID, channelID, inChannel, change)
			if err != nil {
				return err
			}
			changed = append(changed, done...)
		}
		slices.Sort(changed)
		return reportFlags(tx, report, u, change, changed)
	})
	slices.Sort(unsubscribed)
	return changed, unsubscribed, err
}

// applyFlag changes one flag on messages of one channel (ids sorted) and
// answers the ids whose flag really changed.
func (s *store) applyFlag(tx *bbolt.Tx, userID, channelID uint64, ids []uint64, change flagChange) ([]uint64, error) {
	switch {
	case change.Flag == "read" && change.Add:
		return markRead(tx, userID, channelID, ids)
	case change.Flag == "read": // callers skip channels the user is not subscribed to
		return markUnread(tx, userID, channelID, ids)
	}
	bit := flagStarred
	if change.Flag == "collapsed" {
		bit = flagCollapsed
	}
	b := tx.Bucket(bucketFlags)
	var changed []uint64
	for _, id := range ids {
		k := append(itob(userID), itob(id)...)
		var old byte
		if v := b.Get(k); v != nil {
			old = v[0]
		}
		flags := old | bit
		if !change.Add {
			flags = old &^ bit
		}
		if flags == old {
			continue
		}
		var err error
		if flags == 0 {
			err = b.Delete(k)
		} else {
			err = b.Put(k, []byte{flags})
		}
		if err != nil {
			return nil, err
		}
		changed = append(changed, id)
	}
	return changed, nil
}

// markTopicRead marks the user's unread messages of one topic read. The
// topic's unread ids are found in a read transaction (a topic's history
// may be long, and only this caller should wait for it); the commit then
// marks just those ids read, which markRead does only where they are
// still unread.
func (s *store) markTopicRead(u user, channelID uint64, topic string) ([]uint64, error) {
	var unread []uint64
	err := s.view(func(tx *bbolt.Tx) error {
		ch, err := s.channelByID(tx, channelID)
		if err != nil {
			return err
		}
		if ch.Archived || !s.canAccess(tx, u, ch) { // Zulip's access_stream_by_id wants an active channel
			return errNoSuchChannel
		}
		var ids []uint64
		prefix := topicPrefix(ch.ID, topic)
		c := tx.Bucket(bucketTopicMessages).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			ids = append(ids, btoi(k[len(prefix):]))
		}
		if len(ids) == 0 && topic != "" { // Zulip checks only a named topic
			return errNoSuchTopic
		}
		unread, err = unreadAmong(tx, u.ID, ch.ID, ids)
		return err
	})
	if err != nil || len(unread) == 0 {
		return nil, err
	}
	var read []uint64
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		var err error
		if read, err = markRead(tx, u.ID, channelID, unread); err != nil {
			return err
		}
		return reportFlags(tx, report, u, flagChange{Flag: "read", Add: true}, read)
	})
	return read, err
}

// markAllRead marks every message read for the user: in each channel
// they are subscribed to with something unread, the watermark moves and
// the exceptions go.
func (s *store) markAllRead(u user) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		prefix := itob(u.ID)
		var channels []uint64
		c := tx.Bucket(bucketWatermarks).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			channels = append(channels, btoi(k[8:]))
		}
		for _, channelID := range channels { // written after the walk: no writes under a live cursor
			if _, err := readAll(tx, u.ID, channelID); err != nil {
				return err
			}
		}
		report(flagsChanged{User: u, Change: flagChange{Flag: "read", Add: true}, All: true})
		return nil
	})
}

// reportFlags reports a flag change on ids (sorted), with where the
// messages are when read is removed (clients then count them unread).
func reportFlags(tx *bbolt.Tx, report func(any), u user, change flagChange, ids []uint64) error {
	if len(ids) == 0 {
		return nil
	}
	c := flagsChanged{User: u, Change: change, IDs: ids}
	if change.Flag == "read" && !change.Add {
		for _, id := range ids {
			m, err := messageByID(tx, id)
			if err != nil {
				return err
			}
			c.Details = append(c.Details, m)
			if m.isDirect() { // store_dms.go
				if c.Conversations == nil {
					c.Conversations = map[uint64][]uint64{}
				}
				c.Conversations[m.ConversationID], _ = conversationParticipants(tx, m.ConversationID)
			}
		}
	}
	report(c)
	return nil
}

// unreadSummary is the user's unread messages grouped by channel and
// topic, at most max of them (the newest); Truncated says some are left out.
type unreadSummary struct {
	Topics    []unreadTopic
	Truncated bool
	Direct    []unreadConversation // direct messages, by conversation (store_dms.go)
}

type unreadTopic struct {
	ChannelID uint64
	Topic     string
	IDs       []uint64
}

// unreadSummary walks the user's unread messages down from the newest,
// every channel's at once, and stops after max: its cost is what it
// answers (and the read exceptions it passes over), not the user's
// history, however many messages are unread.
func (s *store) unreadSummary(userID uint64, max int) (unreadSummary, error) {
	var sum unreadSummary
	err := s.view(func(tx *bbolt.Tx) error {
		sum = unreadSummary{}
		var ids []uint64
		next := userUnread(tx, userID).iter(largestMessageID, false)
		for id, ok := next(); ok; id, ok = next() {
			if len(ids) == max {
				sum.Truncated = true
				break
			}
			ids = append(ids, id)
		}
		slices.Reverse(ids)
		index := map[string]int{}
		conversations := map[uint64]int{}
		for _, id := range ids {
			m, err := messageByID(tx, id)
			if err != nil {
				return err
			}
			if m.isDirect() {
				sum.addDirect(tx, m, conversations)
				continue
			}
			key := strconv.FormatUint(m.ChannelID, 10) + "\x00" + m.Topic
			i, ok := index[key]
			if !ok {
				i = len(sum.Topics)
				index[key] = i
				sum.Topics = append(sum.Topics, unreadTopic{ChannelID: m.ChannelID, Topic: m.Topic})
			}
			sum.Topics[i].IDs = append(sum.Topics[i].IDs, id)
		}
		return nil
	})
	return sum, err
}

func messageByID(tx *bbolt.Tx, id uint64) (message, error) {
	var m message
	v := tx.Bucket(bucketMessages).Get(itob(id))
	if v == nil {
		return m, errInvalidMessageIDs
	}
	return m, json.Unmarshal(v, &m)
}

func (s *store) unread(userID, channelID uint64) ([]uint64, error) {
	var ids []uint64
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		ids, err = unreadIDs(tx, userID, channelID)
		return err
	})
	return ids, err
}

// maxMessageID is the largest message id, kept in memory.
func (s *store) maxMessageID() (uint64, error) { return s.maxID.Load(), nil }
