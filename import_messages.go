package main

// The import's messages: each messages-NNNNNN.json read in batches,
// its ids mapped, its channels and conversations found, indexed with
// its edit history, then the reactions that point at them.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"go.etcd.io/bbolt"
	"zulite/internal/zulipexport"
)

// messageChannel is a message of the file being imported: its Zulip id,
// its id here and its channel.
type messageChannel struct{ old, id, channelID uint64 }

// newID is the id here of the message with the Zulip id old.
func (x *importer) newID(old uint64) (uint64, bool, error) {
	if err := x.written.Flush(); err != nil {
		return 0, false, err
	}
	var buf [8]byte
	var readErr error
	n := int(x.nextID)
	i := sort.Search(n, func(i int) bool {
		if _, err := x.oldIDs.ReadAt(buf[:], int64(i)*8); err != nil {
			readErr = err
			return true
		}
		return btoi(buf[:]) >= old
	})
	if readErr != nil || i == n {
		return 0, false, readErr
	}
	x.oldIDs.ReadAt(buf[:], int64(i)*8)
	return uint64(i) + 1, btoi(buf[:]) == old, nil
}

// importRemapFiles is how many message files are imported between two
// remappings of the database (remapFile).
const importRemapFiles = 16

// remapFile closes the database and opens it again, which unmaps every
// page of it bbolt had mapped. Pages just written are in the page cache,
// and each read fault maps their neighbours too, so that without it a
// long import's resident memory grew with the file (289 MB for a million
// messages) although its heap stays small. Only the import calls it,
// while nothing else uses the store.
func (s *store) remapFile() error {
	noSync := s.db.NoSync
	if err := s.db.Close(); err != nil {
		return err
	}
	db, err := bbolt.Open(s.path, 0o600, &bbolt.Options{Timeout: lockTimeout})
	if err != nil {
		return fmt.Errorf("open store %s again: %w", s.path, err)
	}
	db.NoSync = noSync
	s.db = db
	return nil
}

// messages imports each message file: its messages, then its per-user rows.
func (x *importer) messages() error {
	for n, path := range zulipexport.MessageFiles(x.root) {
		if n > 0 && n%importRemapFiles == 0 {
			if err := x.s.remapFile(); err != nil {
				return err
			}
		}
		placed, err := x.messageRows(path)
		if err != nil {
			return err
		}
		if err := x.userMessageRows(path, placed); err != nil {
			return err
		}
	}
	return nil
}

// messageRows writes the file's channel messages and answers their
// channels, sorted by message id.
func (x *importer) messageRows(path string) ([]messageChannel, error) {
	var placed []messageChannel
	var batch []message
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := x.s.updateGuarded(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketMessages)
			for _, m := range batch {
				if b.Get(itob(m.ID)) != nil {
					return fmt.Errorf("message %d appears twice", m.ID)
				}
				if err := putJSON(b, itob(m.ID), m); err != nil {
					return err
				}
				if err := x.index(tx, m); err != nil {
					return err
				}
				if m.ID > b.Sequence() {
					if err := b.SetSequence(m.ID); err != nil {
						return err
					}
				}
			}
			return nil
		})
		x.report.Messages += len(batch)
		batch = batch[:0]
		return err
	}
	err := zulipexport.ReadTables(x.root, path, func(name string, dec *json.Decoder) (bool, error) {
		if name != "zerver_message" {
			return false, nil
		}
		return true, zulipexport.ReadRows(dec, func(zm zulipexport.Message) error {
			channelID, isChannel := x.channelOf[zm.Recipient]
			var conversationID uint64
			switch {
			case !x.users[zm.Sender]:
				return fmt.Errorf("message %d: unknown sender %d", zm.ID, zm.Sender)
			case !isChannel:
				var err error
				if conversationID, err = x.conversation(zm); err != nil {
					return err
				}
				if conversationID == 0 {
					x.report.leave("messages to an unknown recipient", 1)
					return nil
				}
			}
			if zm.ID <= x.lastOld {
				return fmt.Errorf("message %d comes after message %d: the export's messages must be in the order of their ids", zm.ID, x.lastOld)
			}
			x.lastOld = zm.ID
			x.nextID++
			if _, err := x.written.Write(itob(zm.ID)); err != nil {
				return err
			}
			m := message{ID: x.nextID, SenderID: zm.Sender, ChannelID: channelID, ConversationID: conversationID, Topic: zm.Subject, Content: zm.Content,
				Timestamp: int64(zm.DateSent), Client: x.clients[zm.SendingClient]}
			if conversationID != 0 {
				m.Topic = ""
			}
			if zm.RenderedContent != nil {
				m.Rendered = *zm.RenderedContent
			}
			m.Content, m.Rendered = zulipexport.RewriteUploadLinks(m.Content, x.paths), zulipexport.RewriteUploadLinks(m.Rendered, x.paths)
			if err := x.editHistory(&m, zm); err != nil {
				return err
			}
			placed = append(placed, messageChannel{zm.ID, m.ID, m.readKey()})
			batch = append(batch, m)
			if len(batch) == importBatch {
				return flush()
			}
			return nil
		})
	})
	if err == nil {
		err = flush()
	}
	return placed, err // in the order of their ids, old and new
}

// conversation is the conversation of a direct message, made on its
// first message: its sender and the user of a personal recipient (Zulip
// files a one-to-one message under the other's recipient), or the
// members of a group's (its subscribers). 0: an unknown recipient.
func (x *importer) conversation(zm zulipexport.Message) (uint64, error) {
	r, ok := x.recipients[zm.Recipient]
	var ids []uint64
	switch {
	case !ok:
		return 0, nil
	case r.Type == zulipexport.RecipientPersonal && x.users[r.TypeID]:
		ids = []uint64{zm.Sender, r.TypeID}
	case r.Type == zulipexport.RecipientHuddle && len(x.huddles[zm.Recipient]) > 0:
		ids = append(slices.Clone(x.huddles[zm.Recipient]), zm.Sender)
	default:
		return 0, nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	key := string(encodeIDs(ids))
	if id, ok := x.conversations[key]; ok {
		return id, nil
	}
	var id uint64
	err := x.s.updateGuarded(func(tx *bbolt.Tx) (err error) {
		id, err = newConversation(tx, ids)
		return err
	})
	if err != nil {
		return 0, err
	}
	x.conversations[key] = id
	for _, p := range ids {
		x.pairs[[2]uint64{p, conversationKey(id)}] = &importedPair{}
	}
	return id, nil
}

// index writes a message's indexes: its channel's and topic's, or its
// conversation's and each participant's.
func (x *importer) index(tx *bbolt.Tx, m message) error {
	if !m.isDirect() {
		return indexMessage(tx, m)
	}
	if err := tx.Bucket(bucketConversationMessages).Put(append(itob(m.ConversationID), itob(m.ID)...), nil); err != nil {
		return err
	}
	participants, _ := conversationParticipants(tx, m.ConversationID)
	for _, p := range participants {
		if err := tx.Bucket(bucketDMMessages).Put(append(itob(p), itob(m.ID)...), itob(m.ConversationID)); err != nil {
			return err
		}
	}
	return nil
}

// editHistory takes a message's edit history: Zulip keeps it as a JSON
// text, newest first, in the shape zulite keeps it (editEntry); the last
// content edit and the last move are read from it.
func (x *importer) editHistory(m *message, zm zulipexport.Message) error {
	var text string
	if len(zm.EditHistory) == 0 || json.Unmarshal(zm.EditHistory, &text) != nil || text == "" {
		if zm.LastEditTime != nil {
			x.report.leave("edited messages without an edit history: their current content is imported", 1)
		}
		return nil
	}
	if err := json.Unmarshal([]byte(text), &m.EditHistory); err != nil {
		return fmt.Errorf("message %d: edit history: %w", zm.ID, err)
	}
	for _, e := range m.EditHistory {
		if e.PrevContent != nil && m.LastEdit == 0 {
			m.LastEdit = e.Timestamp
		}
		if (e.PrevTopic != nil || e.PrevStream != 0) && m.LastMoved == 0 {
			m.LastMoved = e.Timestamp
		}
	}
	return nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// reactions reads realm.json's zerver_reaction.
func (x *importer) reactions() error {
	var batch []zulipexport.Reaction
	flush := func() error {
		err := x.s.updateGuarded(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketReactions)
			for _, r := range batch {
				x.report.Reactions++
				seq, err := b.NextSequence()
				if err != nil {
					return err
				}
				if err := putJSON(b, append(itob(r.Message), itob(seq)...), storedReaction{UserID: r.UserProfile, EmojiName: r.EmojiName,
					EmojiCode: r.EmojiCode, ReactionType: r.ReactionType}); err != nil {
					return err
				}
			}
			return nil
		})
		batch = batch[:0]
		return err
	}
	err := zulipexport.ReadTables(x.root, "realm.json", func(name string, dec *json.Decoder) (bool, error) {
		if name != "zerver_reaction" {
			return false, nil
		}
		return true, zulipexport.ReadRows(dec, func(r zulipexport.Reaction) error {
			switch {
			case r.ReactionType == reactionRealm && !x.emojiIDs[r.EmojiCode]:
				x.report.leave("reactions with custom emoji not imported", 1)
				return nil
			case !x.users[r.UserProfile]:
				return nil
			}
			id, found, err := x.newID(r.Message)
			if err != nil {
				return err
			}
			if !found {
				x.report.leave("reactions to messages not imported", 1)
				return nil
			}
			r.Message = id
			batch = append(batch, r)
			if len(batch) == importBatch {
				return flush()
			}
			return nil
		})
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	return err
}
