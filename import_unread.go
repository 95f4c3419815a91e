package main

// The import's per-user message rows: Zulip's UserMessage flags turned
// into zulite's state, read and unread as a watermark plus the unread ids
// below it per (user, channel or conversation), starred and mention bits
// in the flags bucket (import.go reads the files; unread.go defines the
// state).

import (
	"encoding/json"
	"slices"

	"go.etcd.io/bbolt"

	"zulite/internal/zulipexport"
)

// importedRow is one UserMessage row of a channel message, compact.
type importedRow struct {
	userID, channelID, messageID uint64
	flags                        int64
}

// userMessageRows writes the file's personal flags and read state.
func (x *importer) userMessageRows(path string, placed []messageChannel) error {
	var rows []importedRow
	err := zulipexport.ReadTables(x.root, path, func(name string, dec *json.Decoder) (bool, error) {
		if name != "zerver_usermessage" {
			return false, nil
		}
		return true, zulipexport.ReadRows(dec, func(zr zulipexport.UserMessage) error {
			i, found := slices.BinarySearchFunc(placed, zr.Message, func(p messageChannel, old uint64) int { return cmpUint(p.old, old) })
			if !found || !x.users[zr.UserProfile] {
				return nil // a row of a message not imported, reported with it
			}
			rows = append(rows, importedRow{zr.UserProfile, placed[i].channelID, placed[i].id, zr.FlagsMask})
			return nil
		})
	})
	if err != nil {
		return err
	}
	// By subscription, then message: each subscription's read ids go to
	// markRead together, sorted.
	sortFunc(rows, func(a, b importedRow) int {
		if c := cmpUint(a.userID, b.userID); c != 0 {
			return c
		}
		if c := cmpUint(a.channelID, b.channelID); c != 0 {
			return c
		}
		return cmpUint(a.messageID, b.messageID)
	})
	for len(rows) > 0 {
		n := min(len(rows), importBatch)
		// Keep a subscription's rows in one transaction.
		for n < len(rows) && rows[n].userID == rows[n-1].userID && rows[n].channelID == rows[n-1].channelID {
			n++
		}
		if err := x.s.updateGuarded(func(tx *bbolt.Tx) error { return x.writeRows(tx, rows[:n]) }); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

func (x *importer) writeRows(tx *bbolt.Tx, rows []importedRow) error {
	flags := tx.Bucket(bucketFlags)
	for i, r := range rows {
		if b := ourFlags(r.flags); b != 0 {
			if err := flags.Put(append(itob(r.userID), itob(r.messageID)...), []byte{b}); err != nil {
				return err
			}
			x.report.Flags++
		}
		if r.flags&zulipexport.FlagGroupMentioned != 0 {
			x.report.leave("group mentions: kept as mentions", 1)
		}
		pair := x.pairs[[2]uint64{r.userID, r.channelID}]
		if pair == nil && x.private[r.channelID] {
			x.report.leave("messages of private channels their readers have left: zulite shows them to the channel's subscribers only", 1)
		}
		if pair == nil {
			continue
		}
		if r.flags&zulipexport.FlagHistorical != 0 { // from before the subscription: read unless marked unread
			if r.flags&zulipexport.FlagRead == 0 {
				pair.historicalUnread = append(pair.historicalUnread, r.messageID)
			}
			continue
		}
		if err := pair.take(tx, r); err != nil {
			return err
		}
		if last := i == len(rows)-1 || rows[i+1].userID != r.userID || rows[i+1].channelID != r.channelID; last {
			if err := startUnread(tx, r.userID, r.channelID, pair.watermark); err != nil {
				return err
			}
		}
	}
	return nil
}

// take moves the subscription's unread state past one row, its rows
// coming in the order of their messages. The watermark is the newest
// message read; the unread ones below it go to unread_below when a read
// one passes them, the run of unread messages since the last read one
// being the channel's messages from the first of them (pending) up to
// the read one; unread messages above the watermark need no record. A
// subscription with unread messages scattered through its history is
// thus a high watermark and a set of its unread ids, never a set of
// every read one.
func (p *importedPair) take(tx *bbolt.Tx, r importedRow) error {
	if !p.started { // the subscription starts below the first message received
		p.started, p.watermark = true, r.messageID-1
		if isConversationKey(r.channelID) { // a conversation's state starts at 0, with the conversation
			p.watermark = 0
		} else if err := tx.Bucket(bucketSubscribers).Put(append(itob(r.channelID), itob(r.userID)...), itob(r.messageID-1)); err != nil {
			return err
		}
	}
	key := unreadKey(r.userID, r.channelID)
	if r.flags&zulipexport.FlagRead == 0 {
		p.anyUnread = true
		switch {
		case r.messageID <= p.watermark: // out of order: below a read one already
			return addToSet(tx.Bucket(bucketUnreadBelow), key, []uint64{r.messageID})
		case p.pending == 0:
			p.pending = r.messageID
		}
		return nil
	}
	if r.messageID <= p.watermark {
		return nil
	}
	if p.pending != 0 {
		next := recipientIndex(tx, r.channelID).iter(p.pending, true)
		var ids []uint64
		for id, ok := next(); ok && id < r.messageID; id, ok = next() {
			if ids = append(ids, id); len(ids) == unreadChunkSize {
				if err := addToSet(tx.Bucket(bucketUnreadBelow), key, ids); err != nil {
					return err
				}
				ids = ids[:0]
			}
		}
		if err := addToSet(tx.Bucket(bucketUnreadBelow), key, ids); err != nil {
			return err
		}
		p.pending = 0
	}
	p.watermark = r.messageID
	return nil
}

// finishUnread marks read whole every subscription with nothing unread
// (what Zulip did not send a subscriber is not unread for them), and
// starts those that received nothing at the newest message.
func (x *importer) finishUnread() error {
	keys := make([][2]uint64, 0, len(x.pairs))
	for k, p := range x.pairs {
		if !p.anyUnread {
			keys = append(keys, k)
		}
	}
	sortFunc(keys, func(a, b [2]uint64) int {
		if c := cmpUint(a[0], b[0]); c != 0 {
			return c
		}
		return cmpUint(a[1], b[1])
	})
	for len(keys) > 0 {
		n := min(len(keys), importBatch)
		err := x.s.updateGuarded(func(tx *bbolt.Tx) error {
			newest := tx.Bucket(bucketMessages).Sequence()
			for _, k := range keys[:n] {
				if !x.pairs[k].started && !isConversationKey(k[1]) {
					if err := tx.Bucket(bucketSubscribers).Put(append(itob(k[1]), itob(k[0])...), itob(newest)); err != nil {
						return err
					}
				}
				if _, err := readAll(tx, k[0], k[1]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		keys = keys[n:]
	}
	// Messages from before a subscription marked unread: below every
	// watermark, so unread by being in the set.
	var marked [][2]uint64
	for k, p := range x.pairs {
		if len(p.historicalUnread) > 0 {
			marked = append(marked, k)
		}
	}
	for len(marked) > 0 {
		n := min(len(marked), importBatch)
		err := x.s.updateGuarded(func(tx *bbolt.Tx) error {
			for _, k := range marked[:n] {
				if err := addToSet(tx.Bucket(bucketUnreadBelow), unreadKey(k[0], k[1]), x.pairs[k].historicalUnread); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		marked = marked[n:]
	}
	return nil
}
