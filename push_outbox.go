package main

// Mobile push notifications, durably: the outbox (store side) and the
// worker that delivers it.
//
// A message that may push is written to the push_outbox bucket in the
// transaction that stores it: one small entry ("message") per message,
// whatever the channel's size, so that a send costs the committer the
// same with pushes on as off. The worker, off the committer, walks the
// message's recipients a slice at a time, keeps those Zulip would notify
// (mentions, wildcard mentions, channels with push notifications on;
// for direct messages every recipient), who are idle (--push-idle),
// have not read it and have a device, and delivers to them; then, in
// one commit, it records where the walk stopped in the entry (removing
// it at the end), remembers each delivered push in push_sent, and
// queues a "notify" entry of its own for each delivery to retry. A
// retry, a remove and a bouncer registration are entries too, each
// removed only once the provider has acknowledged it (or refused it for
// good). So a restart or a SIGKILL loses no push; what was acknowledged
// but not yet committed (one slice) is sent again, the duplicate the
// protocols cannot rule out. When a user reads a pushed message, the
// worker queues Zulip's "remove" notification for their devices.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
)

var (
	bucketPushOutbox = []byte("push_outbox")
	bucketPushSent   = []byte("push_sent")
)

const (
	// defaultPushIdle is Zulip's OFFLINE_THRESHOLD_SECS: a user none of
	// whose event queues has been polled for this long is idle, and gets
	// pushes.
	defaultPushIdle = 140 * time.Second
	// defaultPushOutboxMax bounds the outbox; a message past it is not
	// queued (counted as dropped).
	defaultPushOutboxMax = 100_000
	// pushMaxAttempts: a delivery that fails this many times is given up
	// (counted as failed). The waits double from pushRetryBase, at most
	// pushRetryMax: about 25 minutes in all.
	pushMaxAttempts = 10
	pushRetryBase   = time.Second
	pushRetryMax    = 5 * time.Minute
	// maxRemoveIDs is Zulip's MAX_APNS_MESSAGE_IDS: a remove notification
	// names the newest 200 messages read.
	maxRemoveIDs = 200
)

// pushJob is one outbox entry.
type pushJob struct {
	// Kind: "message" (to expand into notify entries), "notify" (a message
	// to one device, or to the bouncer for all the user's devices),
	// "remove" or "test" (POST /mobile_push/test_notification, to one
	// device).
	Kind      string   `json:"kind"`
	MessageID uint64   `json:"message_id,omitempty"`
	SenderID  uint64   `json:"sender_id,omitempty"`
	Users     []uint64 `json:"users,omitempty"` // a direct message's recipients (pushOutbox.queueTx)
	Next      uint64   `json:"next,omitempty"`  // a message: the recipients from this id on are still to go
	UserID    uint64   `json:"user_id,omitempty"`
	// ReadKey is where the message's unread state is kept: its channel,
	// or a direct message's conversation (pushReadKey).
	ReadKey uint64 `json:"read_key,omitempty"`
	// Device is the token a direct delivery goes to; nil: the bouncer,
	// with every device of the user.
	Device *pushToken `json:"device,omitempty"`
	// APNs and FCM are Zulip's payloads (internal/push); FCMPriority
	// its gcm_options' priority.
	APNs        json.RawMessage `json:"apns,omitempty"`
	FCM         json.RawMessage `json:"fcm,omitempty"`
	FCMPriority string          `json:"fcm_priority,omitempty"`
	Attempts    int             `json:"attempts,omitempty"`
	Due         int64           `json:"due,omitempty"` // Unix ms; 0: now
}

// pushStats are the push metrics.
type pushStats struct {
	queued, sent, failed, dropped atomic.Int64
}

// pushOutbox is the store's side of pushes: whether messages are queued
// at all (on: a way out is configured) and the bound.
type pushOutbox struct {
	max   atomic.Int64 // 0: pushes are off, nothing is queued
	stats pushStats
}

// queueTx queues the pushes a stored message may cause, in the
// transaction that stores it: one entry, or none when pushes are off or
// no device is registered at all. recipients are a direct message's
// recipients (the sender among them or not); nil for a channel message,
// whose recipients the worker reads. The direct-message send path calls
// it too.
func (o *pushOutbox) queueTx(tx *bbolt.Tx, m message, recipients []uint64) error {
	max := o.max.Load()
	if max == 0 {
		return nil
	}
	if k, _ := tx.Bucket(bucketPushTokens).Cursor().First(); k == nil {
		return nil
	}
	b := tx.Bucket(bucketPushOutbox)
	if outboxLen(b) >= uint64(max) {
		o.stats.dropped.Add(1) // counted again if the commit group is rerun: rare
		return nil
	}
	return putJob(b, pushJob{Kind: "message", MessageID: m.ID, SenderID: m.SenderID, ReadKey: pushReadKey(m), Users: recipients})
}

// pushReadKey is the key of the message's unread state (unread.go): its
// channel, or a direct message's conversation.
func pushReadKey(m message) uint64 { return m.readKey() }

// outboxLen is at least the outbox's entries: keys run from the first
// one left to the last sequence given, so it costs a seek, not a count.
func outboxLen(b *bbolt.Bucket) uint64 {
	k, _ := b.Cursor().First()
	if k == nil {
		return 0
	}
	return b.Sequence() - btoi(k) + 1
}

func putJob(b *bbolt.Bucket, j pushJob) error {
	id, err := b.NextSequence()
	if err != nil {
		return err
	}
	return putJSON(b, itob(id), j)
}

// pushDevices is the user's registered tokens.
func pushDevices(tx *bbolt.Tx, userID uint64) []pushToken {
	var out []pushToken
	prefix := itob(userID)
	c := tx.Bucket(bucketPushTokens).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var t pushToken
		if json.Unmarshal(v, &t) == nil {
			out = append(out, t)
		}
	}
	return out
}

func hasPushDevice(tx *bbolt.Tx, userID uint64) bool {
	prefix := itob(userID)
	k, _ := tx.Bucket(bucketPushTokens).Cursor().Seek(prefix)
	return k != nil && bytes.HasPrefix(k, prefix)
}

// forDevice is the job for one device, with its provider's payload.
func (j pushJob) forDevice(d pushToken, apns, fcm json.RawMessage) pushJob {
	j.Device = &d
	if d.Kind == pushAPNs {
		j.APNs = apns
	} else {
		j.FCM = fcm
	}
	return j
}

// pushTransport is one way out: direct (APNs and FCM) or the bouncer.
type pushTransport interface {
	// deliver sends a notify or remove job; its answer says what became
	// of it.
	deliver(ctx context.Context, j pushJob, devices []pushToken) pushResult
	// perDevice: jobs go to one device each (direct) rather than to the
	// user (bouncer).
	perDevice() bool
}

// pushResult is a provider's answer.
type pushResult struct {
	err error // nil: acknowledged
	// retry: a failure that may pass (network, 429, 5xx).
	retry bool
	// dead are tokens the provider says no longer exist: removed as the
	// seed's DELETE does.
	dead []pushToken
	// after: the provider's Retry-After, when it gave one.
	after time.Duration
}

// pusher is the worker.
type pusher struct {
	st        *store
	out       pushTransport
	idleFor   func(userID uint64) bool
	log       *slog.Logger
	baseURL   string
	realmName string
	now       func() time.Time

	wake chan struct{} // capacity 1

	mu    sync.Mutex
	reads map[uint64]bool // users who read something since the last look
}

func newPusher(st *store, out pushTransport, idle func(uint64) bool, log *slog.Logger, baseURL, realmName string, outboxMax int) *pusher {
	st.outbox.max.Store(int64(max(outboxMax, 1)))
	return &pusher{st: st, out: out, idleFor: idle, log: log, baseURL: baseURL, realmName: realmName, now: time.Now,
		wake: make(chan struct{}, 1), reads: map[uint64]bool{}}
}

// poke wakes the worker.
func (p *pusher) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// readChanged: the user read messages (any route); their pushed
// messages are looked at for a remove notification.
func (p *pusher) readChanged(userID uint64) {
	p.mu.Lock()
	p.reads[userID] = true
	p.mu.Unlock()
	p.poke()
}

// run delivers until ctx ends. At start it looks at every user with
// pushed messages: a read whose remove was not yet queued when the
// process stopped is found then.
func (p *pusher) run(ctx context.Context) {
	err := p.st.view(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketPushSent).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Seek(itob(btoi(k[:8]) + 1)) {
			p.reads[btoi(k[:8])] = true
		}
		return nil
	})
	if err != nil { // its reads are looked at again when they next change
		p.log.Error("push: finding the reads to remove at start", "err", err)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-timer.C:
		}
		p.removeRead()
		next := p.drain(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// pushBatch is how many outbox entries the worker takes at a time: their
// outcomes are written in one commit. pushParallel bounds the users
// whose deliveries are in flight at once (a user's go in order).
const (
	pushBatch     = 256
	pushParallel  = 16
	pushCommitGap = 500 * time.Millisecond
)

// pushOutcome is what became of one outbox entry.
type pushOutcome struct {
	key   uint64
	keep  *pushJob    // rewritten for a retry; nil: the entry goes
	jobs  []pushJob   // entries that replace it (a message expanded)
	sent  []pushJob   // delivered notifications, remembered in push_sent
	dead  []pushToken // tokens to remove
	count func()      // the metrics, once committed
}

// drain handles every job due now and answers how long to wait for the
// next one (at most a second: a direct message's entry is not poked).
func (p *pusher) drain(ctx context.Context) time.Duration {
	wait := time.Second
	var after uint64
	for ctx.Err() == nil {
		var batch []pushEntry
		p.st.view(func(tx *bbolt.Tx) error {
			c := tx.Bucket(bucketPushOutbox).Cursor()
			for k, v := c.Seek(itob(after + 1)); k != nil && len(batch) < pushBatch; k, v = c.Next() {
				var j pushJob
				if json.Unmarshal(v, &j) == nil {
					batch = append(batch, pushEntry{key: btoi(k), job: j})
				}
			}
			return nil
		})
		if len(batch) == 0 {
			return wait
		}
		now := p.now().UnixMilli()
		var outcomes []pushOutcome
		var sends []pushEntry
		for _, e := range batch {
			after = e.key
			switch {
			case e.job.Due > now:
				wait = min(wait, time.Duration(e.job.Due-now)*time.Millisecond)
			case e.job.Kind == "message":
				o, err := p.expand(ctx, e.key, e.job)
				if err != nil {
					p.log.Error("push: expanding a message", "message_id", e.job.MessageID, "err", err)
					continue
				}
				if o.keep != nil {
					wait = 0 // more of its recipients to go
				}
				outcomes = append(outcomes, o)
			case !slices.Contains([]string{"notify", "remove", "test", "register", "unregister"}, e.job.Kind),
				p.out.perDevice() && (e.job.Kind == "register" || e.job.Kind == "unregister"):
				outcomes = append(outcomes, pushOutcome{key: e.key}) // from a later version, or for a bouncer not used: dropped
			default:
				sends = append(sends, e)
			}
		}
		if p.apply(append(outcomes, p.sendAll(ctx, sends)...)) {
			// The worker shares the committer with every writer: a send
			// that arrives during the worker's commit waits for it. At
			// most one worker commit per pushCommitGap keeps that rare.
			select {
			case <-ctx.Done():
			case <-time.After(pushCommitGap):
			}
		}
	}
	return wait
}

// pushEntry is an outbox entry and its key (0: a delivery not yet in
// the outbox).
type pushEntry struct {
	key uint64
	job pushJob
	// devices: the user's devices, read with the recipient's checks just
	// now (a fresh delivery from expand); nil: read them, and check again.
	devices []pushToken
}

// sendAll delivers the entries, in parallel across users and in order
// for each.
func (p *pusher) sendAll(ctx context.Context, entries []pushEntry) []pushOutcome {
	byUser := map[uint64][]pushEntry{}
	var users []uint64
	for _, e := range entries {
		if byUser[e.job.UserID] == nil {
			users = append(users, e.job.UserID)
		}
		byUser[e.job.UserID] = append(byUser[e.job.UserID], e)
	}
	results := make([][]pushOutcome, len(users))
	slots := make(chan struct{}, pushParallel)
	var wg sync.WaitGroup
	for i, uid := range users {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			for _, e := range byUser[uid] {
				results[i] = append(results[i], p.send(ctx, e))
			}
		})
	}
	wg.Wait()
	var out []pushOutcome
	for _, r := range results {
		out = append(out, r...)
	}
	return out
}

// send delivers a notify, remove, register or unregister job, after
// checking that a notification still stands: the device still
// registered, the message still unread.
func (p *pusher) send(ctx context.Context, e pushEntry) pushOutcome {
	key, j, devices := e.key, e.job, e.devices
	stands := true
	p.st.view(func(tx *bbolt.Tx) error {
		if j.Kind == "register" || j.Kind == "unregister" || devices != nil {
			return nil // forwarded whatever became of the token since; or checked just now
		}
		devices = pushDevices(tx, j.UserID)
		if j.Device != nil {
			stands = slices.ContainsFunc(devices, func(d pushToken) bool {
				return bytes.Equal(pushTokenKey(j.UserID, d.Kind, d.Token), pushTokenKey(j.UserID, j.Device.Kind, j.Device.Token))
			})
		} else if len(devices) == 0 {
			stands = false
		}
		if stands && j.Kind == "notify" {
			unread, _ := unreadAmong(tx, j.UserID, j.ReadKey, []uint64{j.MessageID})
			stands = len(unread) > 0
		}
		return nil
	})
	if !stands {
		return pushOutcome{key: key}
	}
	res := p.out.deliver(ctx, j, devices)
	switch {
	case res.err == nil:
		o := pushOutcome{key: key, dead: res.dead, count: func() { p.st.outbox.stats.sent.Add(1) }}
		if j.Kind == "notify" {
			o.sent = []pushJob{j}
		}
		return o
	case res.retry && j.Attempts+1 < pushMaxAttempts && ctx.Err() == nil:
		wait := max(min(pushRetryBase<<j.Attempts, pushRetryMax), res.after)
		p.log.Warn("push: delivery failed, will retry", "user_id", j.UserID, "attempt", j.Attempts+1, "in", wait.String(), "err", res.err)
		j.Attempts++
		j.Due = p.now().Add(wait).UnixMilli()
		return pushOutcome{key: key, keep: &j}
	case ctx.Err() != nil: // shutting down: the entry stays for the next start
		return pushOutcome{key: key, keep: &j}
	}
	p.log.Warn("push: delivery failed", "user_id", j.UserID, "err", res.err)
	return pushOutcome{key: key, dead: res.dead, count: func() { p.st.outbox.stats.failed.Add(1) }}
}

// apply writes a batch's outcomes in one commit: entries removed, or
// moved to the end when they stay (one already gone is left alone), their replacements queued,
// delivered messages remembered, dead tokens removed.
func (p *pusher) apply(outcomes []pushOutcome) bool {
	if len(outcomes) == 0 {
		return false
	}
	removed := 0
	err := p.st.update(func(tx *bbolt.Tx) error {
		removed = 0
		b := tx.Bucket(bucketPushOutbox)
		for _, o := range outcomes {
			if b.Get(itob(o.key)) == nil {
				continue
			}
			if err := b.Delete(itob(o.key)); err != nil {
				return err
			}
			if o.keep != nil { // to the end: the first key stays recent, which outboxLen needs
				if err := putJob(b, *o.keep); err != nil {
					return err
				}
			}
			for _, nj := range o.jobs {
				if err := putJob(b, nj); err != nil {
					return err
				}
			}
			for _, sent := range o.sent {
				if err := tx.Bucket(bucketPushSent).Put(append(itob(sent.UserID), itob(sent.MessageID)...), itob(sent.ReadKey)); err != nil {
					return err
				}
			}
			for _, d := range o.dead {
				if err := removeDeadToken(tx, d); err != nil {
					return err
				}
				removed++
			}
		}
		return nil
	})
	if err != nil {
		if !errors.Is(err, errStoreClosed) {
			p.log.Error("push: writing delivery outcomes", "err", err)
		}
		return true
	}
	for _, o := range outcomes {
		if o.count != nil {
			o.count()
		}
	}
	if removed > 0 {
		p.log.Info("push: removed tokens the provider says are gone", "count", removed)
	}
	return true
}

// removeDeadToken removes a token wherever it is registered, as the
// seed's DELETE removes it (store_push.go).
func removeDeadToken(tx *bbolt.Tx, d pushToken) error {
	b := tx.Bucket(bucketPushTokens)
	var keys [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var t pushToken
		if json.Unmarshal(v, &t) == nil && t.Kind == d.Kind && bytes.Equal(k[9:], pushTokenKey(0, d.Kind, d.Token)[9:]) {
			keys = append(keys, slices.Clone(k))
		}
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// entries counts the outbox, for the metrics.
func (o *pushOutbox) entries(db transactor) (int, error) {
	n := 0
	err := db.view(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketPushOutbox).Stats().KeyN
		return nil
	})
	return n, err
}

// idleFor is Zulip's idle rule on zulite's event queues: a user is idle
// when none of their queues has been polled within window (a poll
// waiting counts as now); a user without queues is idle.
func (h *eventHub) idleFor(window time.Duration) func(userID uint64) bool {
	return func(userID uint64) bool {
		h.mu.RLock()
		defer h.mu.RUnlock()
		now := h.now()
		for _, q := range h.byUser[userID] {
			q.mu.Lock()
			active := q.polls > 0 || now.Sub(q.lastPoll) < window
			q.mu.Unlock()
			if active {
				return false
			}
		}
		return true
	}
}

// writePushMetrics renders the push metrics in Prometheus's text format.
func writePushMetrics(b io.Writer, st *store) {
	stats := &st.outbox.stats
	if n, err := st.outbox.entries(st); err == nil { // unread: the gauge is left out
		fmt.Fprintln(b, "# HELP zulite_push_outbox_entries Push deliveries waiting in the outbox (messages not yet expanded count one).")
		fmt.Fprintln(b, "# TYPE zulite_push_outbox_entries gauge")
		fmt.Fprintf(b, "zulite_push_outbox_entries %d\n", n)
	}
	for _, c := range []struct {
		name, help string
		v          int64
	}{
		{"zulite_push_queued_total", "Push deliveries queued (a notification or a remove, per device or, through the bouncer, per user).", stats.queued.Load()},
		{"zulite_push_sent_total", "Push deliveries the provider acknowledged.", stats.sent.Load()},
		{"zulite_push_failed_total", "Push deliveries given up: refused, or failing after every retry.", stats.failed.Load()},
		{"zulite_push_dropped_total", "Messages not queued for push because the outbox was full.", stats.dropped.Load()},
	} {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", c.name, c.help, c.name, c.name, c.v)
	}
}

// testPushDevices are the devices POST /mobile_push/test_notification
// sends to: the user's, or the one with the token given, of either
// kind, as Zulip's send_test_push_notification_api finds it.
func (s *store) testPushDevices(userID uint64, token *string) ([]pushToken, error) {
	var devices []pushToken
	err := s.view(func(tx *bbolt.Tx) error {
		devices = pushDevices(tx, userID)
		if token != nil {
			i := slices.IndexFunc(devices, func(d pushToken) bool { return d.Token == *token })
			if i < 0 {
				return errInvalidPushDevice
			}
			devices = devices[i : i+1]
		}
		return nil
	})
	return devices, err
}

// queueTest queues Zulip's test notification for each device, one
// entry each, through whichever way out is configured.
func (p *pusher) queueTest(userID uint64, devices []pushToken) error {
	apns, fcm := p.realm().TestPayloads(userID, p.now().Unix())
	base := pushJob{Kind: "test", UserID: userID, FCMPriority: "high"}
	err := p.st.update(func(tx *bbolt.Tx) error {
		for _, d := range devices {
			j := base.forDevice(d, apns, fcm)
			if !p.out.perDevice() { // the bouncer takes both payloads
				j.APNs, j.FCM = apns, fcm
			}
			if err := putJob(tx.Bucket(bucketPushOutbox), j); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		p.st.outbox.stats.queued.Add(int64(len(devices)))
		p.poke()
	}
	return err
}
