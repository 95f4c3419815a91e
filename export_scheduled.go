package main

// Scheduled messages in the export: Zulip's exporter writes
// zerver_scheduledmessage into realm.json and import_realm.py imports it.

import (
	"encoding/json"
	"slices"

	"go.etcd.io/bbolt"

	"zulite/internal/zulipexport"
)

// exportScheduled is zerver_scheduledmessage's rows, as Zulip's exporter
// writes them and import_realm.py reads them (sender, recipient,
// sending_client, stream and realm remapped; scheduled_timestamp a
// DATE_FIELDS float): a channel message under its channel's recipient, a
// direct one under the other's personal recipient (or the sender's own),
// a group's under its group, when the group has a conversation already
// (export.go exports only those); else it is counted as left out.
func (x *exporter) exportScheduled(tx *bbolt.Tx) ([]map[string]any, error) {
	var rows []map[string]any
	err := tx.Bucket(bucketScheduledMessages).ForEach(func(k, v []byte) error {
		var m storedScheduled
		if err := json.Unmarshal(v, &m); err != nil {
			return err
		}
		senderID := btoi(k[:8])
		row := map[string]any{"id": btoi(k[8:]), "sender": senderID, "subject": m.Topic, "content": m.Content,
			"rendered_content": m.Rendered, "sending_client": x.client(m.Client), "stream": nil, "realm": exportRealmID,
			"scheduled_timestamp": float64(m.Due), "read_by_sender": m.ReadBySender, "delivered": false, "delivered_message": nil,
			"has_attachment": false, "failed": m.Failed, "failure_message": nilIfEmpty(m.FailureMessage), "delivery_type": 1}
		ids := append([]uint64{senderID}, m.Recipients...)
		slices.Sort(ids)
		ids = slices.Compact(ids)
		switch {
		case m.Type == "stream":
			row["recipient"], row["stream"] = recipientID(recipientChannel, m.ChannelID), m.ChannelID
		case len(ids) <= 2:
			other := ids[len(ids)-1]
			if other == senderID {
				other = ids[0]
			}
			row["recipient"] = recipientID(zulipexport.RecipientPersonal, other)
		default:
			conv, ok := conversationOf(tx, ids)
			if !ok {
				x.report.ScheduledLeftOut++
				return nil
			}
			row["recipient"] = recipientID(zulipexport.RecipientHuddle, conv)
		}
		rows = append(rows, row)
		return nil
	})
	x.report.Scheduled = len(rows)
	return rows, err
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
