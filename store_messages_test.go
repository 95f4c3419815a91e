package main

import (
	"errors"
	"slices"
	"testing"

	"go.etcd.io/bbolt"
)

func TestSendMessage_UnreadForEverySubscriberButTheSender(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	carol, _ := mustCreateUser(t, st, "carol@example.com", roleMember, false)
	general := mustCreateChannel(t, st, "general", false)
	mustSubscribe(t, st, alice, "general")
	mustSubscribe(t, st, bob, "general")

	first := mustSend(t, st, alice, general)
	second := mustSend(t, st, bob, general)
	mustSubscribe(t, st, carol, "general") // subscribes later: gets nothing old
	third := mustSend(t, st, bob, general)

	if got, want := mustUnread(t, st, bob, general), []uint64{first}; !slices.Equal(got, want) {
		t.Errorf("bob's unread: got %v, want %v", got, want)
	}
	if got, want := mustUnread(t, st, alice, general), []uint64{second, third}; !slices.Equal(got, want) {
		t.Errorf("alice's unread: got %v, want %v", got, want)
	}
	if got, want := mustUnread(t, st, carol, general), []uint64{third}; !slices.Equal(got, want) {
		t.Errorf("carol's unread: got %v, want %v", got, want)
	}
}

func TestSendMessage_PrivateChannelOnlyForSubscribers(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	secret := mustCreateChannel(t, st, "secret", true)
	if err := st.addSubscriptionForTest(alice, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := st.sendMessage(bob, channelRef{ID: secret.ID}, "t", "x", ""); !errors.Is(err, errChannelForbidden) {
		t.Errorf("non-subscriber send: got %v, want errChannelForbidden", err)
	}
	maxID, err := st.maxMessageID()
	if err != nil {
		t.Fatal(err)
	}
	if maxID != 0 {
		t.Errorf("messages after a refused send: got max id %d, want 0", maxID)
	}
	mustSend(t, st, alice, secret)
}

func TestMarkChannelRead_TouchesOnlyThatUserAndChannel(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	general := mustCreateChannel(t, st, "general", false)
	random := mustCreateChannel(t, st, "random", false)
	mustSubscribe(t, st, alice, "general", "random")
	mustSubscribe(t, st, bob, "general", "random")
	mustSend(t, st, alice, general)
	inRandom := mustSend(t, st, alice, random)
	mustSend(t, st, bob, general)

	if err := st.markChannelRead(bob, general.ID); err != nil {
		t.Fatal(err)
	}
	if got := mustUnread(t, st, bob, general); len(got) != 0 {
		t.Errorf("bob's unread in general: got %v, want none", got)
	}
	if got := mustUnread(t, st, bob, random); !slices.Equal(got, []uint64{inRandom}) {
		t.Errorf("bob's unread in random: got %v, want [%d]", got, inRandom)
	}
	if got := mustUnread(t, st, alice, general); len(got) != 1 {
		t.Errorf("alice's unread in general: got %v, want one message", got)
	}
	if err := st.markChannelRead(bob, general.ID); err != nil {
		t.Errorf("marking an already-read channel: got %v, want nil", err)
	}
}

func TestMarkChannelRead_UnknownOrPrivateChannelIsNotFound(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	secret := mustCreateChannel(t, st, "secret", true)
	if err := st.addSubscriptionForTest(alice, secret); err != nil {
		t.Fatal(err)
	}
	id := mustSend(t, st, alice, secret)
	if err := st.addSubscriptionForTest(bob, secret); err != nil {
		t.Fatal(err)
	}
	mustSend(t, st, bob, secret)
	mustUpdate(t, st, func(tx *bbolt.Tx) error { // bob leaves, keeping no unread
		return tx.Bucket(bucketSubscriptions).Delete(append(itob(bob.ID), itob(secret.ID)...))
	})
	if err := st.markChannelRead(bob, secret.ID); !errors.Is(err, errNoSuchChannel) {
		t.Errorf("private channel, not subscribed: got %v, want errNoSuchChannel", err)
	}
	if err := st.markChannelRead(alice, 999); !errors.Is(err, errNoSuchChannel) {
		t.Errorf("unknown channel: got %v, want errNoSuchChannel", err)
	}
	if got := mustUnread(t, st, alice, secret); len(got) != 1 || got[0] <= id {
		t.Errorf("alice's unread after refused calls: got %v, want bob's message", got)
	}
}
