package main

// The scheduler sends scheduled messages at their time, off the request
// path (Zulip's deliver_scheduled_messages worker and
// try_deliver_one_scheduled_message). It sleeps until the earliest time
// in scheduled_due (woken sooner when a schedule changes), then sends
// each message due through the send path a request takes (postMessage,
// postDirect: unread state, mentions, pushes and events alike), with the
// scheduled message's removal in the send's own transaction: a restart
// or a SIGKILL either finds it still waiting, and sends it then, or
// finds it sent and gone, so it is sent exactly once. At start it sends
// what fell due while the server was down, unless that is later than
// Zulip's cutoff; a send that fails marks the message failed and keeps
// it, as Zulip does.

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// scheduler delivers scheduled messages; its clock is the store's.
type scheduler struct {
	st      *store
	log     *slog.Logger
	baseURL string
	wake    chan struct{} // capacity 1
}

func newScheduler(st *store, log *slog.Logger, baseURL string) *scheduler {
	return &scheduler{st: st, log: log, baseURL: baseURL, wake: make(chan struct{}, 1)}
}

// poke makes the scheduler look at the next due time again.
func (sc *scheduler) poke() {
	select {
	case sc.wake <- struct{}{}:
	default:
	}
}

// run delivers until ctx ends.
func (sc *scheduler) run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		wait := sc.deliverDue()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-sc.wake:
		case <-timer.C:
		}
	}
}

// deliverDue sends every scheduled message whose time has come, oldest
// first, and tells how long to sleep until the next one.
func (sc *scheduler) deliverDue() time.Duration {
	for {
		m, id, sender, ok, err := sc.st.dueScheduled()
		if errors.Is(err, errStoreClosed) {
			return time.Hour
		}
		if err != nil {
			sc.log.Error("scheduled messages: reading the next", "err", err)
			return time.Second
		}
		if !ok {
			return time.Hour
		}
		now := sc.st.now()
		if at := time.Unix(m.Due, 0); at.After(now) {
			return at.Sub(now)
		}
		if err := sc.deliver(now, m, id, sender); err != nil {
			sc.log.Error("scheduled messages: sending", "id", id, "err", err)
			return time.Second
		}
	}
}

// deliver sends one scheduled message, or marks it failed.
func (sc *scheduler) deliver(now time.Time, m storedScheduled, id uint64, sender user) error {
	userID := sender.ID
	switch {
	case !sender.Active: // UserDeactivatedError: failed, and nobody told
		return sc.fail(userID, id, m, "Account is deactivated.", false)
	case now.Unix() > m.Due+scheduledLateCutoff:
		return sc.fail(userID, id, m, "Message could not be sent at the scheduled time.", true)
	}
	take := takeScheduled(userID, id, m)
	var err error
	if m.Type == "stream" {
		_, err = sc.st.postMessage(sender, outgoingMessage{To: channelRef{ID: m.ChannelID}, Topic: m.Topic, Content: m.Content,
			Client: m.Client, ReadBySender: m.ReadBySender, RealmURL: sc.baseURL, Also: take})
	} else {
		_, err = sc.st.postDirect(sender, outgoingDirect{To: directRecipients{IDs: m.Recipients}, Content: m.Content,
			Client: m.Client, ReadBySender: m.ReadBySender, RealmURL: sc.baseURL, Also: take})
	}
	switch {
	case err == nil, errors.Is(err, errScheduledGone):
		return nil
	case errors.Is(err, errStoreClosed):
		return err
	case errors.Is(err, errNoSuchChannel):
		return sc.fail(userID, id, m, noSuchChannel(channelRef{ID: m.ChannelID}).msg, true)
	case errors.Is(err, errChannelForbidden):
		return sc.fail(userID, id, m, errNotAuthorizedToSend(nameOf(err)).msg, true)
	}
	return sc.fail(userID, id, m, asAPIError(err).msg, true)
}

// fail marks the message failed. Zulip's Notification Bot then writes
// to the sender; zulite has no such bot, and tells the sender's clients
// with the update event (failed: true) alone.
func (sc *scheduler) fail(userID, id uint64, m storedScheduled, why string, tell bool) error {
	sc.log.Info("scheduled message not sent", "id", id, "user_id", userID, "why", why)
	return sc.st.failScheduled(userID, id, m, why, tell)
}
