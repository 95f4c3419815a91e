package main

import (
	"sync"
	"sync/atomic"
)

// The changes the store reports once they are committed, in commit order
// (store.updateReporting); the server turns them into events.

// messageSent: a channel message was stored.
type messageSent struct {
	sentMessage
	Sender user
}

// directSent: a direct message was stored (store_dms.go); Participants
// are its conversation's, sorted by id, the sender among them.
type directSent struct {
	sentMessage
	Sender       user
	Participants []user
}

// flagsChanged: a personal flag changed on some of the user's messages.
type flagsChanged struct {
	User    user
	Change  flagChange
	IDs     []uint64  // exactly the ids whose flag changed, sorted
	All     bool      // every message (mark_all_as_read)
	Details []message // the messages, when read was removed
	// Conversations: the participants of the direct messages among
	// Details, by conversation id.
	Conversations map[uint64][]uint64
	// Uncollected: nobody listened when the change was made, so its ids
	// were not collected; queues registered after ListenSeq may have
	// missed it.
	Uncollected bool
	ListenSeq   uint64
}

// subscriptionsChanged: users joined ("add") or left ("remove")
// channels, and who is told what: the store decides the audiences in
// the transaction that made the change (store_channels.go).
type subscriptionsChanged struct {
	Op      string
	Members []membership // who joined or left which channels
	// Created: channels that became visible to their audience (new ones,
	// and private ones joined from outside); Deleted: channels left that
	// their audience can no longer see.
	Created, Deleted []channelNews
	Peers            []peerNews // who follows each channel's subscribers
}

type membership struct {
	User     user
	Channels []channel
}

// userSettingsChanged: a user changed personal settings (only those whose
// value changed, in the order they were set).
type userSettingsChanged struct {
	User    user
	Changes []settingChange
}

type channelNews struct {
	Channel  channelView
	Audience []uint64
}

type peerNews struct {
	ChannelID uint64
	UserIDs   []uint64 // who joined or left
	Audience  []uint64
}

// subscriptionPropertyChanged: the user changed a setting of their
// subscription (Bool, or Color for "color").
type subscriptionPropertyChanged struct {
	User      user
	ChannelID uint64
	Property  string
	Bool      bool
	Color     string
}

// realmGroupChanged: an administrator set an organisation permission
// setting to a system group.
type realmGroupChanged struct {
	Setting string
	Group   int
}

// accountChanged: an account, its keys or its password changed. The
// store forgets the account's cached credentials in the commit itself
// (store.updateReporting), so no caller has to remember to. EndsSessions
// (keys revoked, account deactivated) ends the account's event queues
// and their waiting polls at once: a poll must not outlive its key.
type accountChanged struct {
	Email        string
	UserID       uint64
	EndsSessions bool
}

// invitesChanged: an invitation was made, revoked or used; Audience
// (the administrators and its referrer) hear invites_changed.
type invitesChanged struct{ Audience []uint64 }

// accountCreated is a new account: everyone's queues hear of it
// (realtime.go's publishAccountCreated).
type accountCreated struct{ User user }

// changeFeed hands committed changes on, in commit order, from a
// goroutine of its own (run): the committer only appends to it, so
// however slow their receiver (the event hub), no writer waits.
type changeFeed struct {
	mu      sync.Mutex
	pending []publication
	wake    chan struct{} // capacity 1
	stopped chan struct{} // closed when run has handed on everything and returned
}

func newChangeFeed() changeFeed {
	return changeFeed{wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// publication is one write's changes; done is closed once they are
// handed on, which the writer waits for before it answers, so a client's
// own change is in its queues when its request returns.
type publication struct {
	changes []any
	done    chan struct{}
}

func (f *changeFeed) push(p publication) {
	f.mu.Lock()
	f.pending = append(f.pending, p)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *changeFeed) take() []publication {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pending
	f.pending = nil
	return p
}

// run hands the feed's changes to hooks' receiver (none when unset)
// until finished is closed (the committer has stopped) and the feed is
// drained, then closes stopped.
func (f *changeFeed) run(finished <-chan struct{}, hooks *atomic.Pointer[storeHooks]) {
	defer close(f.stopped)
	for {
		stopping := false
		select {
		case <-f.wake:
		case <-finished:
			stopping = true
		}
		for _, p := range f.take() {
			released := false
			release := func() {
				if !released {
					released = true
					close(p.done)
				}
			}
			if h := hooks.Load(); h != nil {
				for i, c := range p.changes {
					if i == len(p.changes)-1 {
						h.changes(c, release)
					} else {
						h.changes(c, func() {})
					}
				}
			}
			release()
		}
		if stopping {
			return
		}
	}
}
