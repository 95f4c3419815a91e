package main

// Scheduled messages: what a user asked to be sent later, kept until the
// scheduler (scheduler.go) sends it (zerver/models/scheduled_jobs.py,
// zerver/actions/scheduled_messages.py, zerver/lib/scheduled_messages.py).
// scheduled_messages holds each one under user id ‖ id, the id from the
// bucket's sequence as Zulip's are global; scheduled_due indexes those
// still to be sent by due time, so the scheduler finds the next with one
// seek. A sent message leaves both in the transaction that stores it; a
// failed one leaves scheduled_due only, marked failed, as Zulip keeps it.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"slices"

	"go.etcd.io/bbolt"
)

var (
	bucketScheduledMessages = []byte("scheduled_messages")
	bucketScheduledDue      = []byte("scheduled_due")
)

// maxScheduledPerUser is zulite's bound on a user's scheduled messages
// (Zulip has none); failed ones count until edited or deleted.
const maxScheduledPerUser = 1000

// scheduledLateCutoff is Zulip's SCHEDULED_MESSAGE_LATE_CUTOFF_MINUTES: a
// message the scheduler reaches later than this after its time (the
// server was down) fails instead of surprising its readers.
const scheduledLateCutoff = 10 * 60

// storedScheduled is a scheduled message as kept.
type storedScheduled struct {
	Type      string `json:"type"` // "stream" or "private"
	ChannelID uint64 `json:"channel_id,omitempty"`
	// Recipients: a direct message's recipients as named, without repeats.
	Recipients   []uint64 `json:"recipients,omitempty"`
	Topic        string   `json:"topic,omitempty"`
	Content      string   `json:"content"`
	Rendered     string   `json:"rendered"`
	Due          int64    `json:"due"` // Unix seconds
	ReadBySender bool     `json:"read_by_sender,omitempty"`
	Client       string   `json:"client"`
	Failed       bool     `json:"failed,omitempty"`
	// FailureMessage is why the send failed, in Zulip's words (logged;
	// Zulip's Notification Bot tells the sender, zulite has no such bot).
	FailureMessage string `json:"failure_message,omitempty"`
	// Version counts edits, so that the scheduler sends what it read.
	Version int `json:"version,omitempty"`
	// Target: a reminder's message (Zulip's REMIND delivery type and
	// reminder_target_message_id); 0 for a message to be sent later.
	Target uint64 `json:"reminder_target_message_id,omitempty"`
}

// scheduledObject is Zulip's ScheduledMessage.to_dict: To is the
// channel's id for a channel message, the recipients but the sender (or
// the sender alone) for a direct one.
type scheduledObject struct {
	ID       uint64  `json:"scheduled_message_id"`
	Type     string  `json:"type"`
	To       any     `json:"to"`
	Topic    *string `json:"topic,omitempty"`
	Content  string  `json:"content"`
	Rendered string  `json:"rendered_content"`
	Due      int64   `json:"scheduled_delivery_timestamp"`
	Failed   bool    `json:"failed"`
}

func (m storedScheduled) object(id, senderID uint64) scheduledObject {
	o := scheduledObject{ID: id, Type: m.Type, Content: m.Content, Rendered: m.Rendered, Due: m.Due, Failed: m.Failed}
	if m.Type == "stream" {
		topic := m.Topic
		o.To, o.Topic = m.ChannelID, &topic
		return o
	}
	others := slices.DeleteFunc(slices.Clone(m.Recipients), func(id uint64) bool { return id == senderID })
	if len(others) == 0 {
		others = []uint64{senderID}
	}
	slices.Sort(others)
	o.To = others
	return o
}

// toSelf: a direct message to the sender alone.
func (m storedScheduled) toSelf(senderID uint64) bool {
	return m.Type == "private" && !slices.ContainsFunc(m.Recipients, func(id uint64) bool { return id != senderID })
}

// reminderObject is Zulip's ScheduledMessage.to_dict for a reminder.
type reminderObject struct {
	ID       uint64   `json:"reminder_id"`
	Type     string   `json:"type"`
	To       []uint64 `json:"to"`
	Content  string   `json:"content"`
	Rendered string   `json:"rendered_content"`
	Due      int64    `json:"scheduled_delivery_timestamp"`
	Failed   bool     `json:"failed"`
	Target   uint64   `json:"reminder_target_message_id"`
}

// scheduledChanged: a user's scheduled messages were added, updated or
// removed (sent, or deleted), told to that user's queues; Reminder when
// it is a reminder (Message then unused).
type scheduledChanged struct {
	UserID   uint64
	Op       string // "add", "update", "remove"
	Message  scheduledObject
	Reminder *reminderObject
}

// changed is the news of m for its owner's queues.
func (m storedScheduled) changed(userID, id uint64, op string) scheduledChanged {
	c := scheduledChanged{UserID: userID, Op: op, Message: scheduledObject{ID: id}}
	if m.Target != 0 {
		c.Reminder = &reminderObject{ID: id, Type: m.Type, To: []uint64{userID}, Content: m.Content, Rendered: m.Rendered,
			Due: m.Due, Failed: m.Failed, Target: m.Target}
	} else if op != "remove" {
		c.Message = m.object(id, userID)
	}
	return c
}

// scheduledEdit is what PATCH changes; nil: kept. Content and Topic are
// already normalized as a send does; Target reads a new `to` for the
// message's type, new or kept.
type scheduledEdit struct {
	Type     *string
	Target   func(kind string) (channelID uint64, recipients []uint64, err error)
	Topic    *string
	Content  *string
	Rendered string
	Due      *int64
	Client   string
}

// errScheduledGone: the scheduled message changed or went while the
// scheduler was sending it; the send is not made.
var errScheduledGone = &rejection{text: "scheduled message changed"}

func scheduledDueKey(due int64, id uint64) []byte { return append(itob(uint64(due)), itob(id)...) }

// checkScheduled is Zulip's check_message for a message to be sent
// later: the channel exists, the sender may post there and the topic is
// allowed, or the recipients exist, are active and may be written to.
func (s *store) checkScheduled(tx *bbolt.Tx, sender user, m storedScheduled) error {
	if m.Type == "stream" {
		ch, err := s.channelByID(tx, m.ChannelID)
		if err != nil {
			return refusal(noSuchChannel(channelRef{ID: m.ChannelID}))
		}
		err = s.checkChannelSend(tx, sender, ch, m.Topic)
		if errors.Is(err, errChannelForbidden) {
			return refusal(errNotAuthorizedToSend(ch.Name))
		}
		return err
	}
	_, _, _, _, err := s.checkDirectSend(tx, sender, directRecipients{IDs: m.Recipients})
	return err
}

// createScheduled is check_schedule_message: checked as a send would be,
// then stored and told as a scheduled_messages add event.
func (s *store) createScheduled(sender user, m storedScheduled) (uint64, error) {
	var id uint64
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		if err := s.checkScheduled(tx, sender, m); err != nil {
			return err
		}
		b, due := scheduledBuckets(tx)
		if countPrefix(b, itob(sender.ID)) >= maxScheduledPerUser {
			return refusal(errTooManyScheduled)
		}
		var err error
		if id, err = b.NextSequence(); err != nil {
			return err
		}
		if err := putJSON(b, userItemKey(sender.ID, id), m); err != nil {
			return err
		}
		report(m.changed(sender.ID, id, "add"))
		return due.Put(scheduledDueKey(m.Due, id), itob(sender.ID))
	})
	return id, err
}

// scheduledBuckets are the scheduled messages and their due index.
func scheduledBuckets(tx *bbolt.Tx) (messages, due *bbolt.Bucket) {
	return tx.Bucket(bucketScheduledMessages), tx.Bucket(bucketScheduledDue)
}

// scheduledOf reads one of the user's scheduled messages.
func scheduledOf(tx *bbolt.Tx, userID, id uint64) (storedScheduled, error) {
	var m storedScheduled
	v := tx.Bucket(bucketScheduledMessages).Get(userItemKey(userID, id))
	if v == nil {
		return m, refusal(errNoSuchScheduled)
	}
	return m, json.Unmarshal(v, &m)
}

// ownScheduled is one of the user's scheduled messages of the kind
// asked (reminder or not), else notFound: access_scheduled_message and
// access_reminder look only among their own delivery type.
func ownScheduled(tx *bbolt.Tx, userID, id uint64, reminder bool, notFound *apiError) (storedScheduled, error) {
	m, err := scheduledOf(tx, userID, id)
	var no *rejection
	if err == nil && (m.Target != 0) != reminder || errors.As(err, &no) {
		return m, refusal(notFound)
	}
	return m, err
}

// editScheduled is edit_scheduled_message: a failed message needs a new
// time; a new type, recipient or content is checked again as a send; the
// failure is forgotten. Told as an update event.
func (s *store) editScheduled(sender user, id uint64, e scheduledEdit) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		m, err := ownScheduled(tx, sender.ID, id, false, errNoSuchScheduled)
		if err != nil {
			return err
		}
		if m.Failed && e.Due == nil {
			return refusal(errDeliveryNotInFuture)
		}
		old := m
		if e.Type != nil {
			m.Type = *e.Type
		}
		if e.Target != nil {
			if m.ChannelID, m.Recipients, err = e.Target(m.Type); err != nil {
				return refusal(asAPIError(err))
			}
		}
		switch {
		case m.Type == "private":
			m.Topic = ""
		case e.Topic != nil && (e.Target != nil || old.Type == "stream"):
			m.Topic = *e.Topic
		}
		if e.Content != nil {
			m.Content, m.Rendered = *e.Content, e.Rendered
		}
		if e.Type != nil || e.Target != nil || e.Content != nil {
			if err := s.checkScheduled(tx, sender, m); err != nil {
				return err
			}
		}
		if e.Due != nil {
			m.Due = *e.Due
		}
		m.Client, m.Failed, m.FailureMessage, m.Version = e.Client, false, "", m.Version+1
		due := tx.Bucket(bucketScheduledDue)
		if err := due.Delete(scheduledDueKey(old.Due, id)); err != nil {
			return err
		}
		if err := due.Put(scheduledDueKey(m.Due, id), itob(sender.ID)); err != nil {
			return err
		}
		report(m.changed(sender.ID, id, "update"))
		return putJSON(tx.Bucket(bucketScheduledMessages), userItemKey(sender.ID, id), m)
	})
}

// deleteScheduled is delete_scheduled_message, or (reminder)
// do_delete_reminder.
func (s *store) deleteScheduled(sender user, id uint64, reminder bool) error {
	notFound := errNoSuchScheduled
	if reminder {
		notFound = errNoSuchReminder
	}
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		m, err := ownScheduled(tx, sender.ID, id, reminder, notFound)
		if err != nil {
			return err
		}
		return dropScheduled(tx, report, sender.ID, id, m)
	})
}

// dropScheduled removes a scheduled message and tells its owner.
func dropScheduled(tx *bbolt.Tx, report func(any), userID, id uint64, m storedScheduled) error {
	if err := tx.Bucket(bucketScheduledDue).Delete(scheduledDueKey(m.Due, id)); err != nil {
		return err
	}
	report(m.changed(userID, id, "remove"))
	return tx.Bucket(bucketScheduledMessages).Delete(userItemKey(userID, id))
}

// scheduledMessages lists the user's scheduled messages, failed ones
// included, by time and then id (get_undelivered_scheduled_messages).
func (s *store) scheduledMessages(userID uint64) ([]scheduledObject, error) {
	out := []scheduledObject{}
	err := s.scheduledList(userID, false, func(id uint64, m storedScheduled) { out = append(out, m.object(id, userID)) })
	return out, err
}

// reminders lists the user's reminders as scheduledMessages does
// (get_undelivered_reminders).
func (s *store) reminders(userID uint64) ([]reminderObject, error) {
	out := []reminderObject{}
	err := s.scheduledList(userID, true, func(id uint64, m storedScheduled) { out = append(out, *m.changed(userID, id, "").Reminder) })
	return out, err
}

// scheduledList gives the user's reminders or other scheduled messages
// to each, by time and then id.
func (s *store) scheduledList(userID uint64, reminders bool, each func(id uint64, m storedScheduled)) error {
	var list []storedScheduled
	var ids []uint64
	err := s.view(func(tx *bbolt.Tx) error {
		list, ids = nil, nil
		b := tx.Bucket(bucketScheduledMessages)
		prefix := itob(userID)
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var m storedScheduled
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			if (m.Target != 0) == reminders {
				list, ids = append(list, m), append(ids, btoi(k[8:]))
			}
		}
		return nil
	})
	order := make([]int, len(list))
	for i := range order {
		order[i] = i
	}
	sortStableFunc(order, func(a, b int) int { return cmp.Compare(list[a].Due, list[b].Due) }) // ids ascend already
	for _, i := range order {
		each(ids[i], list[i])
	}
	return err
}

// dueScheduled is the next scheduled message to send, its id and its
// sender; ok false when none waits. An index entry whose message is gone
// (none should be) is dropped.
func (s *store) dueScheduled() (m storedScheduled, id uint64, sender user, ok bool, err error) {
	var stray []byte
	err = s.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketScheduledDue)
		k, v := b.Cursor().First()
		if k == nil {
			return nil
		}
		id, ok = btoi(k[8:]), true
		if m, err = scheduledOf(tx, btoi(v), id); err != nil {
			ok, stray = false, slices.Clone(k)
			return nil
		}
		return getJSON(tx.Bucket(bucketUsers), v, &sender)
	})
	if stray != nil {
		err = s.update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketScheduledDue).Delete(stray) })
		ok = err == nil
		if ok {
			return s.dueScheduled()
		}
	}
	return m, id, sender, ok, err
}

// takeScheduled is the scheduler's hold on a message it sends: in the
// send's own transaction it finds the message as it was read (else
// errScheduledGone: edited or deleted meanwhile, and nothing is sent)
// and removes it, so that the send and the removal commit together.
func takeScheduled(userID, id uint64, read storedScheduled) func(tx *bbolt.Tx, report func(any)) error {
	return func(tx *bbolt.Tx, report func(any)) error {
		m, err := scheduledOf(tx, userID, id)
		if err != nil || m.Version != read.Version || m.Failed {
			return errScheduledGone
		}
		return dropScheduled(tx, report, userID, id, m)
	}
}

// failScheduled marks a scheduled message failed with Zulip's words for
// why, unless it changed since it was read; told (tell) as an update.
func (s *store) failScheduled(userID, id uint64, read storedScheduled, why string, tell bool) error {
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		m, err := scheduledOf(tx, userID, id)
		if err != nil || m.Version != read.Version || m.Failed {
			return errScheduledGone
		}
		m.Failed, m.FailureMessage = true, why
		if err := tx.Bucket(bucketScheduledDue).Delete(scheduledDueKey(m.Due, id)); err != nil {
			return err
		}
		if tell && m.Target == 0 { // Zulip has no reminders update event
			report(m.changed(userID, id, "update"))
		}
		return putJSON(tx.Bucket(bucketScheduledMessages), userItemKey(userID, id), m)
	})
	if errors.Is(err, errScheduledGone) {
		return nil
	}
	return err
}
