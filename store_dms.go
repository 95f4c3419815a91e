package main

// Direct messages in the store: conversations (one-to-one, group, or
// with oneself), sending, and what reading, flagging and register need
// of them. The buckets are in store.go's layout comment.
//
// A conversation is its set of participants, the sender included: the
// same set is the same conversation whoever writes, so a one-to-one
// conversation is one whichever side sends. For unread state a
// conversation is a channel for its participants (unread.go): its key
// is conversationKey(id), in the space of channel ids but above any of
// them, and every participant's watermark there starts at 0 when the
// conversation is made. A send then writes the message, its two indexes
// and one entry per participant in dm_messages; nothing else per
// participant, as for a channel.

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/bbolt"
)

// conversationBit marks a conversation's key where unread state and
// flag updates key a channel by its id.
const conversationBit = 1 << 63

func conversationKey(id uint64) uint64 { return conversationBit | id }

func isConversationKey(key uint64) bool { return key&conversationBit != 0 }

// isDirect tells a direct message from a channel message.
func (m message) isDirect() bool { return m.ConversationID != 0 }

// readKey is the key of the message's channel or conversation in unread
// state (unread.go) and in flag updates.
func (m message) readKey() uint64 {
	if m.isDirect() {
		return conversationKey(m.ConversationID)
	}
	return m.ChannelID
}

// recipientIndex is the message index of a channel or a conversation,
// by its read key.
func recipientIndex(tx *bbolt.Tx, key uint64) indexSource {
	if isConversationKey(key) {
		return indexSource{tx.Bucket(bucketConversationMessages), itob(key &^ conversationBit)}
	}
	return indexSource{tx.Bucket(bucketChannelMessages), itob(key)}
}

func encodeIDs(ids []uint64) []byte {
	out := make([]byte, 0, 8*len(ids))
	for _, id := range ids {
		out = append(out, itob(id)...)
	}
	return out
}

func decodeIDs(v []byte) []uint64 {
	ids := make([]uint64, 0, len(v)/8)
	for ; len(v) >= 8; v = v[8:] {
		ids = append(ids, btoi(v))
	}
	return ids
}

// conversationParticipants answers a conversation's participants, sorted.
func conversationParticipants(tx *bbolt.Tx, id uint64) ([]uint64, bool) {
	v := tx.Bucket(bucketConversations).Get(itob(id))
	if v == nil {
		return nil, false
	}
	return decodeIDs(v), true
}

// conversationOf finds the conversation of exactly these participants
// (sorted, without repeats).
func conversationOf(tx *bbolt.Tx, participants []uint64) (uint64, bool) {
	v := tx.Bucket(bucketConversationIDs).Get(encodeIDs(participants))
	if v == nil {
		return 0, false
	}
	return btoi(v), true
}

// isParticipant tells whether the user is in the conversation.
func isParticipant(tx *bbolt.Tx, userID, conversationID uint64) bool {
	ids, ok := conversationParticipants(tx, conversationID)
	if !ok {
		return false
	}
	_, found := slices.BinarySearch(ids, userID)
	return found
}

// newConversation makes the conversation of the participants (sorted),
// with each one's unread state in it.
func newConversation(tx *bbolt.Tx, participants []uint64) (uint64, error) {
	b := tx.Bucket(bucketConversations)
	id, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	if err := b.Put(itob(id), encodeIDs(participants)); err != nil {
		return 0, err
	}
	if err := tx.Bucket(bucketConversationIDs).Put(encodeIDs(participants), itob(id)); err != nil {
		return 0, err
	}
	for _, p := range participants {
		if err := startUnread(tx, p, conversationKey(id), 0); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// directRecipients are the recipients of a send as the client named
// them: by e-mail or by id, never both (the handler refuses a mix).
type directRecipients struct {
	Emails []string
	IDs    []uint64
}

// outgoingDirect is a direct message as POST /messages sends it.
type outgoingDirect struct {
	To           directRecipients
	Content      string
	Client       string
	ReadBySender bool
	QueueID      string
	LocalID      *string
	RealmURL     string
	Widget       widgetRequest                              // widget_content, when sent (widgets.go)
	Also         func(tx *bbolt.Tx, report func(any)) error // as outgoingMessage's
}

// checkDirectSend is a direct send's checks: the recipients exist and
// are active, and the settings let the sender write to them. It gives
// the conversation's members and their ids, sorted, and its id when it
// exists (a send now, or one scheduled: checkScheduled).
func (s *store) checkDirectSend(tx *bbolt.Tx, sender user, to directRecipients) (members []user, ids []uint64, convID uint64, exists bool, err error) {
	named, err := directRecipientUsers(tx, to)
	if err != nil {
		return nil, nil, 0, false, err
	}
	for _, u := range named {
		if !u.Active {
			return nil, nil, 0, false, errDMRecipientDeactivated.about(u.Email)
		}
	}
	members = append(slices.Clone(named), sender)
	sortFunc(members, func(a, b user) int { return cmp.Compare(a.ID, b.ID) })
	members = slices.CompactFunc(members, func(a, b user) bool { return a.ID == b.ID })
	ids = make([]uint64, len(members))
	for i, u := range members {
		ids[i] = u.ID
	}
	convID, exists = conversationOf(tx, ids)
	if err := s.checkDirectPermission(sender, named, exists); err != nil {
		return nil, nil, 0, false, err
	}
	return members, ids, convID, exists, nil
}

// postDirect stores a direct message after Zulip's checks, in Zulip's
// order: every recipient exists, none is deactivated, the realm's
// direct-message settings allow it (check_can_send_direct_message).
// The conversation is made by its first message.
func (s *store) postDirect(sender user, out outgoingDirect) (directSent, error) {
	rendering, err := s.renderForSend(sender, outgoingMessage{Content: out.Content, RealmURL: out.RealmURL})
	if err != nil {
		return directSent{}, err
	}
	_, widget := widgetOf(out.Content)
	if out.Widget.Given {
		widget = out.Widget.Content
	}
	var sent directSent
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		members, ids, convID, exists, err := s.checkDirectSend(tx, sender, out.To)
		if err != nil {
			return err
		}
		if out.Widget.Refused != nil {
			return refusal(out.Widget.Refused)
		}
		if len(rendering.HTML) > maxRenderedLength {
			return errUnableToRender
		}
		if err := s.checkGroupMentions(sender, rendering.Mentions); err != nil {
			return err
		}
		if out.Also != nil {
			if err := out.Also(tx, report); err != nil {
				return err
			}
		}
		if !exists {
			if convID, err = newConversation(tx, ids); err != nil {
				return err
			}
		}
		messages := tx.Bucket(bucketMessages)
		id, err := messages.NextSequence()
		if err != nil {
			return err
		}
		m := message{ID: id, SenderID: sender.ID, ConversationID: convID, Content: out.Content, Timestamp: s.now().Unix(),
			Client: out.Client, Rendered: rendering.HTML}
		if err := putJSON(messages, itob(id), m); err != nil {
			return err
		}
		if err := tx.Bucket(bucketConversationMessages).Put(append(itob(convID), itob(id)...), nil); err != nil {
			return err
		}
		widgets, err := putWidget(tx, m, widget)
		if err != nil {
			return err
		}
		flags := tx.Bucket(bucketFlags)
		for _, p := range ids {
			if err := tx.Bucket(bucketDMMessages).Put(append(itob(p), itob(id)...), itob(convID)); err != nil {
				return err
			}
			if f := rendering.Mentions.flagsFor(p); f != 0 {
				if err := flags.Put(append(itob(p), itob(id)...), []byte{f}); err != nil {
					return err
				}
			}
		}
		if out.ReadBySender {
			if _, err := markRead(tx, sender.ID, conversationKey(convID), []uint64{id}); err != nil {
				return err
			}
		}
		muters, err := readByMuters(tx, m, func(uid uint64) bool { return slices.Contains(ids, uid) }) // store_mutes.go
		if err != nil {
			return err
		}
		if err := s.outbox.queueTx(tx, m, ids); err != nil { // push_outbox.go
			return err
		}
		sent = directSent{sentMessage: sentMessage{message: m, ReadBySender: out.ReadBySender, QueueID: out.QueueID, LocalID: out.LocalID,
			recipients: &recipients{read: func() []uint64 { return ids }}, Mentions: rendering.Mentions, Submessages: widgets, Muters: muters}, Sender: sender, Participants: members}
		report(sent)
		return nil
	})
	if err == nil {
		for old := s.maxID.Load(); old < sent.ID && !s.maxID.CompareAndSwap(old, sent.ID); old = s.maxID.Load() {
		}
	}
	return sent, err
}

// directRecipientUsers finds the named recipients, in the order named,
// refusing the first unknown one as Zulip's Addressee does.
func directRecipientUsers(tx *bbolt.Tx, to directRecipients) ([]user, error) {
	var out []user
	for _, email := range to.Emails {
		u, err := userByEmail(tx, email)
		if err != nil {
			return nil, errDMInvalidEmail.about(email)
		}
		out = append(out, u)
	}
	users := tx.Bucket(bucketUsers)
	for _, id := range to.IDs {
		var u user
		if users.Get(itob(id)) == nil || getJSON(users, itob(id), &u) != nil {
			return nil, errDMInvalidUserID.about(strconv.FormatUint(id, 10))
		}
		out = append(out, u)
	}
	return out, nil
}

// checkDirectPermission is Zulip's check_can_send_direct_message: bots
// send freely, and anyone may write to bots and to themselves; otherwise
// someone in the conversation must be in direct_message_permission_group,
// and a conversation without messages may be started only by a member
// of direct_message_initiator_group.
func (s *store) checkDirectPermission(sender user, recipients []user, exists bool) error {
	if sender.Bot || !slices.ContainsFunc(recipients, func(u user) bool { return !u.Bot && u.ID != sender.ID }) {
		return nil
	}
	g, groups := s.realmGroup(realmDirectMessagePermissionGroup), s.groups()
	if !groups.has(sender, g) && !slices.ContainsFunc(recipients, func(u user) bool { return groups.has(u, g) }) {
		if g == groupNobody {
			return errDMsDisabled
		}
		return errDMNotAuthorized
	}
	if exists || s.allowed(sender, realmDirectMessageInitiatorGroup) {
		return nil
	}
	return errDMInitiation
}

// unreadConversation is the user's unread messages in one conversation.
type unreadConversation struct {
	Participants []uint64 // sorted, the user included
	IDs          []uint64
}

// addDirect adds an unread direct message to the summary.
func (sum *unreadSummary) addDirect(tx *bbolt.Tx, m message, index map[uint64]int) {
	i, ok := index[m.ConversationID]
	if !ok {
		ids, _ := conversationParticipants(tx, m.ConversationID)
		i = len(sum.Direct)
		index[m.ConversationID] = i
		sum.Direct = append(sum.Direct, unreadConversation{Participants: ids})
	}
	sum.Direct[i].IDs = append(sum.Direct[i].IDs, m.ID)
}

// recentConversation is one of register's recent_private_conversations.
type recentConversation struct {
	MaxMessageID uint64   `json:"max_message_id"`
	UserIDs      []uint64 `json:"user_ids"` // the others, sorted
}

// recentConversationsLimit is Zulip's RECENT_CONVERSATIONS_LIMIT: the
// conversations are those of the user's latest 1000 direct messages.
const recentConversationsLimit = 1000

// recentConversations is register's recent_private_conversations: the
// conversations of the user's latest direct messages, newest first, each
// with its newest message id and the other participants.
func (s *store) recentConversations(userID uint64) ([]recentConversation, error) {
	out := []recentConversation{}
	err := s.view(func(tx *bbolt.Tx) error {
		out = out[:0]
		seen := map[uint64]bool{}
		prefix := itob(userID)
		c := tx.Bucket(bucketDMMessages).Cursor()
		k, v := c.Seek(itob(userID + 1))
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for n := 0; k != nil && bytes.HasPrefix(k, prefix) && n < recentConversationsLimit; k, v = c.Prev() {
			n++
			conv := btoi(v)
			if seen[conv] {
				continue
			}
			seen[conv] = true
			ids, _ := conversationParticipants(tx, conv)
			others := slices.DeleteFunc(ids, func(id uint64) bool { return id == userID })
			out = append(out, recentConversation{MaxMessageID: btoi(k[8:]), UserIDs: others})
		}
		return nil
	})
	return out, err
}

// messageAudience is who hears of a change to a message: a direct
// message's participants, or reactionAudience for a channel message.
func messageAudience(tx *bbolt.Tx, m message, channelID, userID uint64) []uint64 {
	if m.isDirect() {
		ids, _ := conversationParticipants(tx, m.ConversationID)
		return ids
	}
	return reactionAudience(tx, channelID, userID)
}

// ---- reading ----

// seeDirect fills a direct message's participants for the reading user
// and answers false when they are not one of them.
func (r *rangeReader) seeDirect(m *pagedMessage) bool {
	if r.conversations == nil {
		r.conversations = map[uint64][]uint64{}
	}
	ids, seen := r.conversations[m.ConversationID]
	if !seen {
		ids, _ = conversationParticipants(r.tx, m.ConversationID)
		r.conversations[m.ConversationID] = ids
	}
	if _, ok := slices.BinarySearch(ids, r.user.ID); !ok {
		return false
	}
	m.Participants = make([]user, 0, len(ids))
	for _, id := range ids {
		u, err := r.sender(id)
		if err != nil {
			return false
		}
		m.Participants = append(m.Participants, u)
	}
	m.Subscribed = true // a participant received it
	return true
}

// resolveDirect resolves a direct-message term's users: dm's to the
// exact participant set (the reader added, sorted), dm-including's and
// group-pm-with's to one user id.
func (r *rangeReader) resolveDirect(t narrowTerm) (narrowTerm, error) {
	if t.Operator != opDM {
		if t.Name != "" {
			u, err := userByEmail(r.tx, t.Name)
			if err != nil {
				return t, errNarrowUnknownUser.about(t.Name)
			}
			t.ID, t.Name = u.ID, ""
		} else if _, err := r.sender(t.ID); err != nil {
			return t, errNarrowUnknownUser.about(idText(t))
		}
		return t, nil
	}
	ids := slices.Clone(t.IDs)
	if t.Name != "" || ids == nil {
		for _, email := range splitEmails(t.Name) {
			u, err := userByEmail(r.tx, email)
			if err != nil {
				return t, errNarrowUnknownDMUser.about(t.Name)
			}
			ids = append(ids, u.ID)
		}
	} else {
		for _, id := range ids {
			if _, err := r.sender(id); err != nil {
				return t, errNarrowUnknownDMUser.about(pythonList(t.IDs))
			}
		}
	}
	ids = append(ids, r.user.ID)
	slices.Sort(ids)
	t.IDs, t.Name = slices.Compact(ids), ""
	return t, nil
}

// directSource picks the index a direct-message narrow walks: the
// conversation's for dm (its unread messages with is:unread), else the
// user's direct messages; ok is false when no dm-ish term asks.
func (r *rangeReader) directSource(unread bool) (idSource, bool) {
	var exact *narrowTerm
	any := false
	for i, t := range r.terms {
		if t.Negated {
			continue
		}
		switch t.Operator {
		case opDM:
			exact = &r.terms[i]
		case opDMIncluding, opGroupPMWith, opIsDM:
			any = true
		}
	}
	switch {
	case exact != nil:
		conv, ok := conversationOf(r.tx, exact.IDs)
		if !ok {
			return idList{}, true
		}
		if unread {
			if m, ok := loadMark(r.tx, r.user.ID, conversationKey(conv)); ok {
				return m.unread(), true
			}
			return idList{}, true
		}
		return recipientIndex(r.tx, conversationKey(conv)), true
	case any && !unread:
		return r.userDirect(), true
	}
	return nil, false
}

// userDirect is every direct message of the user.
func (r *rangeReader) userDirect() idSource {
	return indexSource{r.tx.Bucket(bucketDMMessages), itob(r.user.ID)}
}

// splitEmails splits a dm narrow's operand, e-mails joined by commas.
func splitEmails(text string) []string {
	var out []string
	for _, e := range strings.Split(text, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// pythonList is an id list as Python prints it, for Zulip's narrow
// error texts ("unknown user in [1, 2]").
func pythonList(ids []uint64) string {
	text := make([]string, len(ids))
	for i, id := range ids {
		text[i] = strconv.FormatUint(id, 10)
	}
	return "[" + strings.Join(text, ", ") + "]"
}
