package main

import (
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// Marking read (a channel, or everything) and unsubscribing move a large
// unread set aside; each wakes the janitor, which deletes it after, and
// the file stays consistent throughout.
func TestJanitor_DeletesWhatMarkingReadSetAside(t *testing.T) {
	for _, c := range []struct {
		name string
		op   func(st *store, u user, ch channel) error
	}{
		{"mark_stream_as_read", func(st *store, u user, ch channel) error { return st.markChannelRead(u, ch.ID) }},
		{"mark_all_as_read", func(st *store, u user, _ channel) error { return st.markAllRead(u) }},
		{"unsubscribe", func(st *store, u user, ch channel) error {
			_, _, _, _, err := st.unsubscribe(u, []string{ch.Name})
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, u, ch := seedUnread(t, 100_000)
			if err := c.op(st, u, ch); err != nil {
				t.Fatal(err)
			}
			if got := mustUnread(t, st, u, ch); len(got) != 0 {
				t.Fatalf("unread after %s: got %d, want 0", c.name, len(got))
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				empty := false
				mustView(t, st, func(tx *bbolt.Tx) error {
					k, _ := tx.Bucket(bucketUnreadTrash).Cursor().First()
					empty = k == nil
					return nil
				})
				if empty {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the janitor left the trash for 10 s")
				}
				time.Sleep(10 * time.Millisecond)
			}
			st.quiesce()
			checkConsistency(t, st.db)
		})
	}
}

// A send and a mark-read of the same unread set in one commit group must
// leave a consistent file: the move takes the set as the group left it.
func TestJanitor_MoveInsideACommitGroupStaysConsistent(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	ch := mustCreateChannel(t, st, "general", false)
	mustSubscribe(t, st, alice, "general")
	mustSubscribe(t, st, bob, "general")
	many := make([]uint64, 5000) // large enough for pages of its own: marking read moves it
	for i := range many {
		many[i] = uint64(i + 1)
	}
	var wg sync.WaitGroup
	for range 20 {
		mustUpdate(t, st, func(tx *bbolt.Tx) error { return addUnread(tx, bob.ID, ch.ID, many) })
		for range 10 {
			wg.Go(func() {
				if _, err := st.sendMessage(alice, channelRef{ID: ch.ID}, "t", "x", ""); err != nil {
					t.Error(err)
				}
			})
			wg.Go(func() {
				if err := st.markChannelRead(bob, ch.ID); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if err := st.markChannelRead(bob, ch.ID); err != nil {
		t.Fatal(err)
	}
	if got := mustUnread(t, st, bob, ch); len(got) != 0 {
		t.Errorf("bob's unread after a final mark: got %d", len(got))
	}
	st.quiesce()
	checkConsistency(t, st.db)
}
