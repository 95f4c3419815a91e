package main

// Remove on read: when a user reads messages that were pushed to them
// (push_sent), their devices get Zulip's "remove" notification so that
// phones clear them (push_outbox.go's worker queues it).

import (
	"bytes"
	"errors"

	"go.etcd.io/bbolt"
)

// removeRead queues a remove notification for each user who read pushed
// messages, and forgets those messages. What was read is found in a
// read transaction; only a user with something to remove costs a commit.
func (p *pusher) removeRead() {
	p.mu.Lock()
	users := make([]uint64, 0, len(p.reads))
	for u := range p.reads {
		users = append(users, u)
	}
	clear(p.reads)
	p.mu.Unlock()
	for _, uid := range users {
		var ids []uint64
		p.st.view(func(tx *bbolt.Tx) error {
			ids = readPushed(tx, uid)
			return nil
		})
		if len(ids) == 0 {
			continue
		}
		queued := 0
		err := p.st.update(func(tx *bbolt.Tx) error {
			queued = 0
			ids := readPushed(tx, uid) // again: the worker alone writes push_sent, but a run may repeat
			if len(ids) == 0 {
				return nil
			}
			for _, id := range ids {
				if err := tx.Bucket(bucketPushSent).Delete(append(itob(uid), itob(id)...)); err != nil {
					return err
				}
			}
			ids = ids[max(0, len(ids)-maxRemoveIDs):]
			var u user
			if err := getJSON(tx.Bucket(bucketUsers), itob(uid), &u); err != nil {
				return nil
			}
			apns, fcm := p.realm().RemovePayloads(u.ID, ids)
			base := pushJob{Kind: "remove", UserID: uid, FCMPriority: "normal"}
			b := tx.Bucket(bucketPushOutbox)
			if !p.out.perDevice() {
				base.APNs, base.FCM = apns, fcm
				queued = 1
				return putJob(b, base)
			}
			for _, d := range pushDevices(tx, uid) {
				if err := putJob(b, base.forDevice(d, apns, fcm)); err != nil {
					return err
				}
				queued++
			}
			return nil
		})
		p.st.outbox.stats.queued.Add(int64(queued))
		if err != nil && !errors.Is(err, errStoreClosed) {
			p.log.Error("push: queueing a remove", "user_id", uid, "err", err)
		}
	}
}

// readPushed is the user's pushed messages that are read now (or no
// longer theirs to read), sorted.
func readPushed(tx *bbolt.Tx, userID uint64) []uint64 {
	var ids []uint64
	prefix := itob(userID)
	c := tx.Bucket(bucketPushSent).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		id := btoi(k[8:])
		if unread, _ := unreadAmong(tx, userID, btoi(v), []uint64{id}); len(unread) == 0 {
			ids = append(ids, id)
		}
	}
	return ids
}
