package main

import (
	"testing"

	"go.etcd.io/bbolt"
)

// TestQueuePushes_OneSmallEntryPerMessageBounded checks what a send
// writes for pushes: nothing while pushes are off or no device is
// registered, then one entry per message whatever the channel's size,
// and nothing past the outbox's bound (counted as dropped).
func TestQueuePushes_OneSmallEntryPerMessageBounded(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	general := mustCreateChannel(t, st, "general", false)
	mustSubscribe(t, st, alice, "general")
	mustSubscribe(t, st, bob, "general")
	entries := func() int {
		n := 0
		if err := st.view(func(tx *bbolt.Tx) error { n = tx.Bucket(bucketPushOutbox).Stats().KeyN; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	send := func() {
		t.Helper()
		if _, err := st.sendMessage(alice, channelRef{ID: general.ID}, "t", "hello", "test"); err != nil {
			t.Fatal(err)
		}
	}
	send() // pushes off
	if n := entries(); n != 0 {
		t.Fatalf("pushes off: got %d outbox entries, want 0", n)
	}
	st.outbox.max.Store(3)
	send() // on, but no device anywhere
	if n := entries(); n != 0 {
		t.Fatalf("no device registered: got %d outbox entries, want 0", n)
	}
	if err := st.addPushToken(bob.ID, pushToken{Kind: pushFCM, Token: "bob-token"}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		send()
	}
	if n := entries(); n != 3 {
		t.Errorf("5 sends, bound 3: got %d outbox entries, want 3", n)
	}
	if got := st.outbox.stats.dropped.Load(); got != 2 {
		t.Errorf("dropped: got %d, want 2", got)
	}
}
