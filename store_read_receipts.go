package main

import (
	"bytes"
	"encoding/json"
	"slices"

	"go.etcd.io/bbolt"
)

// messagesMatching answers which of ids the user may read match the
// narrow, in one read transaction: each id is looked up with the
// narrow and an id term, as GET /messages/{message_id} looks it up.
func (s *store) messagesMatching(u user, ids []uint64, narrow []narrowTerm) ([]pagedMessage, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	var out []pagedMessage
	err := s.view(func(tx *bbolt.Tx) error {
		for _, id := range ids {
			terms := append(slices.Clone(narrow), narrowTerm{Operator: opID, ID: id})
			page, err := s.selectRange(tx, u, messageRange{Narrow: terms, AnchorKind: anchorID, Anchor: id, IncludeAnchor: true})
			if err != nil {
				return err
			}
			if len(page.Messages) == 1 && page.Messages[0].ID == id {
				out = append(out, page.Messages[0])
			}
		}
		return nil
	})
	return out, err
}

// readReceipts is read_receipts.py's list: of the message's recipients
// (a channel message's subscribers who received it, those who joined
// before it was sent; a direct message's participants), those who have
// it read, leaving out its sender, deactivated users, those whose
// send_read_receipts is off, those the caller muted and those who muted
// the caller. The caller must be able to read the message, else
// "Invalid message(s)"; the organisation must have read receipts on.
// zulite keeps read state only while a user is subscribed, so one who
// read a message and left the channel is not listed (Zulip keeps their
// UserMessage row); one who joined after the message was sent did not
// receive it, and is not listed either.
func (s *store) readReceipts(u user, id uint64) ([]uint64, error) {
	out := []uint64{}
	err := s.view(func(tx *bbolt.Tx) error {
		page, err := s.selectRange(tx, u, messageRange{Narrow: []narrowTerm{{Operator: opID, ID: id}}, AnchorKind: anchorID, Anchor: id, IncludeAnchor: true})
		if err != nil {
			return err
		}
		if len(page.Messages) != 1 || page.Messages[0].ID != id {
			return errInvalidMessages
		}
		if !realmReadReceipts {
			return errReadReceiptsDisabled
		}
		m := page.Messages[0]
		hidden := map[uint64]bool{m.SenderID: true}
		for _, muted := range mutesOf(tx, u.ID) {
			hidden[muted.ID] = true
		}
		for _, muter := range mutingUsers(tx, u.ID) {
			hidden[muter] = true
		}
		for _, r := range messageRecipients(tx, m.message) {
			if hidden[r] || !sendsReadReceipts(tx, r) {
				continue
			}
			if ru, err := lookUpUser(tx, r); err != nil || !ru.Active {
				continue
			}
			if _, subscribed := loadMark(tx, r, m.readKey()); !subscribed {
				continue
			}
			unread, err := unreadAmong(tx, r, m.readKey(), []uint64{m.ID})
			if err != nil {
				return err
			}
			if len(unread) == 0 {
				out = append(out, r)
			}
		}
		return nil
	})
	return out, err
}

// messageRecipients is who received the message: a direct message's
// participants, or the channel's subscribers whose subscription began
// before it (subscribers holds the largest message id when they
// joined), by id.
func messageRecipients(tx *bbolt.Tx, m message) []uint64 {
	if m.isDirect() {
		ids, _ := conversationParticipants(tx, m.ConversationID)
		return ids
	}
	var ids []uint64
	prefix := itob(m.ChannelID)
	c := tx.Bucket(bucketSubscribers).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(v) == 8 && btoi(v) < m.ID {
			ids = append(ids, btoi(k[8:]))
		}
	}
	return ids
}

// sendsReadReceipts is the user's send_read_receipts setting (on unless
// they turned it off).
func sendsReadReceipts(tx *bbolt.Tx, userID uint64) bool {
	var settings struct {
		SendReadReceipts *bool `json:"send_read_receipts"`
	}
	if v := tx.Bucket(bucketUserSettings).Get(itob(userID)); v != nil {
		json.Unmarshal(v, &settings) // a setting that is not a bool is the default
	}
	return settings.SendReadReceipts == nil || *settings.SendReadReceipts
}
