package main

// Submessages (zerver/actions/submessage.py, zerver/lib/widget.py,
// zerver/models/messages.py's SubMessage): small texts attached to a
// message, oldest first. A widget message's first is its widget, made
// when the message is sent (widgets.go); the rest are what its readers
// did with it: a vote, an option, a task. They are stored under their
// message, so that a message's are one walk, and go with it.

import (
	"bytes"
	"encoding/json"
	"slices"

	"go.etcd.io/bbolt"
)

// storedSubmessage is one submessage as the submessages bucket holds it
// (its id is the key's second half).
type storedSubmessage struct {
	ID       uint64 `json:"-"`
	SenderID uint64 `json:"sender_id"`
	MsgType  string `json:"msg_type"`
	Content  string `json:"content"`
}

// submessageAdded: a user added a submessage to a message; Audience is
// who hears of it.
type submessageAdded struct {
	MessageID  uint64
	Submessage storedSubmessage
	Audience   []uint64
}

// submessagesOf is a message's submessages, oldest first.
func submessagesOf(tx *bbolt.Tx, messageID uint64) []storedSubmessage {
	var list []storedSubmessage
	prefix := itob(messageID)
	c := tx.Bucket(bucketSubmessages).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var s storedSubmessage
		if len(k) == 16 && json.Unmarshal(v, &s) == nil {
			s.ID = btoi(k[8:])
			list = append(list, s)
		}
	}
	return list
}

// attachSubmessages gives each message of a page its submessages.
func attachSubmessages(tx *bbolt.Tx, page []pagedMessage) {
	for i := range page {
		page[i].Submessages = submessagesOf(tx, page[i].ID)
	}
}

// hasSubmessages is Zulip's is_widget_message: the message has a
// submessage.
func hasSubmessages(tx *bbolt.Tx, messageID uint64) bool {
	k, _ := tx.Bucket(bucketSubmessages).Cursor().Seek(itob(messageID))
	return k != nil && bytes.HasPrefix(k, itob(messageID))
}

// putSubmessage stores a new submessage of a message, with the next id.
func putSubmessage(tx *bbolt.Tx, messageID uint64, s storedSubmessage) (storedSubmessage, error) {
	b := tx.Bucket(bucketSubmessages)
	id, err := b.NextSequence()
	if err != nil {
		return s, err
	}
	s.ID = id
	return s, putJSON(b, append(itob(messageID), itob(id)...), s)
}

// putWidget is do_widget_post_save_actions for a message just stored:
// the widget its content asks for (widgetOf), as its first submessage,
// sent by its sender; none when it asks for none.
func putWidget(tx *bbolt.Tx, m message, widget string) ([]storedSubmessage, error) {
	if widget == "" {
		return nil, nil
	}
	s, err := putSubmessage(tx, m.ID, storedSubmessage{SenderID: m.SenderID, MsgType: "widget", Content: widget})
	if err != nil {
		return nil, err
	}
	return []storedSubmessage{s}, nil
}

// dropSubmessages deletes a deleted message's submessages.
func dropSubmessages(tx *bbolt.Tx, messageID uint64) error {
	var gone [][]byte
	prefix := itob(messageID)
	b := tx.Bucket(bucketSubmessages)
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		gone = append(gone, slices.Clone(k))
	}
	for _, k := range gone { // after the walk: no writes under a live cursor
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// submessageRequest is a POST /submessage: its content, and that
// content read as JSON (Data), or why it is not JSON (NotJSON), read
// once before the transaction, which may run more than once.
type submessageRequest struct {
	MessageID uint64
	MsgType   string
	Content   string
	Data      any
	NotJSON   bool
}

// addSubmessage is process_submessage and do_add_submessage, with
// Zulip's checks in Zulip's order: the message is one the user may read
// (access_message); its sender attaches the first submessage
// (verify_submessage_sender); the content is JSON; for a poll or a
// to-do list it is one of that widget's events (validate_poll_data,
// validate_todo_data). Then zulite's bound: the message's submessages
// hold at most maxSubmessageBytes together. Those who hear of it are
// the message's audience (messageAudience).
func (s *store) addSubmessage(u user, req submessageRequest) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		m, ch, err := s.reactableMessage(tx, u, req.MessageID)
		if err != nil {
			return err
		}
		list := submessagesOf(tx, m.ID)
		if m.SenderID != u.ID && !slices.ContainsFunc(list, func(x storedSubmessage) bool { return x.SenderID == m.SenderID }) {
			return refusal(errSubmessageNotAllowed)
		}
		if req.NotJSON {
			return refusal(errSubmessageNotJSON)
		}
		if e := validateWidgetData(widgetTypeOf(list), req.Data, m.SenderID == u.ID); e != nil {
			return refusal(e)
		}
		total := len(req.Content)
		for _, x := range list {
			total += len(x.Content)
		}
		if total > maxSubmessageBytes {
			return refusal(errSubmessagesFull)
		}
		added, err := putSubmessage(tx, m.ID, storedSubmessage{SenderID: u.ID, MsgType: req.MsgType, Content: req.Content})
		if err != nil {
			return err
		}
		if err := s.followOnParticipation(tx, u, ch, m, report); err != nil {
			return err
		}
		report(submessageAdded{MessageID: m.ID, Submessage: added, Audience: messageAudience(tx, m, ch.ID, u.ID)})
		return nil
	})
}

// isWidget is hasSubmessages in a transaction of its own.
func (s *store) isWidget(messageID uint64) bool {
	widget := false
	s.view(func(tx *bbolt.Tx) error {
		widget = hasSubmessages(tx, messageID)
		return nil
	})
	return widget
}
