package main

// Scheduled messages in the export: Zulip's exporter writes
// zerver_scheduledmessage into realm.json and import_realm.py imports it.

import (
	"encoding/json"
	"slices"

	"go.etcd.io/bbolt"

	"zulite/internal/zulipexport"
)

// scheduledRow is a zerver_scheduledmessage row.
type scheduledRow struct {
	ID               uint64  `json:"id"`
	Sender           uint64  `json:"sender"`
	Recipient        uint64  `json:"recipient"`
	Subject          string  `json:"subject"`
	Content          string  `json:"content"`
	Rendered         string  `json:"rendered_content"`
	Client           int     `json:"sending_client"`
	Stream           *uint64 `json:"stream"`
	Realm            int     `json:"realm"`
	Due              float64 `json:"scheduled_timestamp"`
	ReadBySender     bool    `json:"read_by_sender"`
	Delivered        bool    `json:"delivered"`
	DeliveredMessage *uint64 `json:"delivered_message"`
	HasAttachment    bool    `json:"has_attachment"`
	Failed           bool    `json:"failed"`
	FailureMessage   *string `json:"failure_message"`
	DeliveryType     int     `json:"delivery_type"` // 1: SEND_LATER, 2: REMIND
}

// exportScheduled is zerver_scheduledmessage's rows, as Zulip's exporter
// writes them and import_realm.py reads them (sender, recipient,
// sending_client, stream and realm remapped; scheduled_timestamp a
// DATE_FIELDS float): a channel message under its channel's recipient, a
// direct one under the other's personal recipient (or the sender's own),
// a group's under its group, when the group has a conversation already
// (export.go exports only those); else it is counted as left out.
func (x *exporter) exportScheduled(tx *bbolt.Tx) ([]scheduledRow, error) {
	rows := []scheduledRow{}
	b := tx.Bucket(bucketScheduledMessages)
	if b == nil {
		return rows, nil
	}
	err := b.ForEach(func(k, v []byte) error {
		var m storedScheduled
		if err := json.Unmarshal(v, &m); err != nil {
			return err
		}
		senderID := btoi(k[:8])
		row := scheduledRow{ID: btoi(k[8:]), Sender: senderID, Subject: m.Topic, Content: m.Content, Rendered: m.Rendered,
			Client: x.client(m.Client), Realm: exportRealmID, Due: float64(m.Due), ReadBySender: m.ReadBySender, Failed: m.Failed, DeliveryType: 1}
		if m.FailureMessage != "" {
			row.FailureMessage = &m.FailureMessage
		}
		if m.Target != 0 {
			row.DeliveryType = 2
		}
		ids := append([]uint64{senderID}, m.Recipients...)
		slices.Sort(ids)
		ids = slices.Compact(ids)
		switch {
		case m.Type == "stream":
			row.Recipient, row.Stream = recipientID(recipientChannel, m.ChannelID), &m.ChannelID
		case len(ids) <= 2:
			other := ids[len(ids)-1]
			if other == senderID {
				other = ids[0]
			}
			row.Recipient = recipientID(zulipexport.RecipientPersonal, other)
		default:
			conv, ok := conversationOf(tx, ids)
			if !ok {
				x.report.ScheduledLeftOut++
				return nil
			}
			row.Recipient = recipientID(zulipexport.RecipientHuddle, conv)
		}
		rows = append(rows, row)
		return nil
	})
	x.report.Scheduled = len(rows)
	return rows, err
}
