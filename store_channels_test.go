package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"go.etcd.io/bbolt"
)

func TestCreateChannel_NameUniqueCaseInsensitively(t *testing.T) {
	st := mustOpenStore(t)
	mustCreateChannel(t, st, "general", false)
	if _, err := st.createChannel("General", "", false, 0); !errors.Is(err, errChannelExists) {
		t.Errorf("second channel named General: got %v, want errChannelExists", err)
	}
	list, err := st.channels()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Errorf("channels: got %d, want 1", len(list))
	}
}

// addSubscriptionForTest subscribes a user to a private channel, as its
// creator would be.
func (s *store) addSubscriptionForTest(u user, ch channel) error {
	return s.db.Update(func(tx *bbolt.Tx) error { return s.addSubscription(tx, u.ID, ch.ID) })
}

func TestUnsubscribe_DropsUnreadAndReportsNotSubscribed(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	general := mustCreateChannel(t, st, "general", false)
	mustCreateChannel(t, st, "random", false)
	mustSubscribe(t, st, alice, "general")
	mustSubscribe(t, st, bob, "general")
	mustSend(t, st, alice, general)

	removed, notRemoved, _, _, err := st.unsubscribe(bob, []string{"GENERAL", "random"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{"general"}) || !slices.Equal(notRemoved, []string{"random"}) {
		t.Errorf("got removed %v, not removed %v; want [general], [random]", removed, notRemoved)
	}
	if got := mustUnread(t, st, bob, general); len(got) != 0 {
		t.Errorf("bob's unread after unsubscribing: got %v, want none", got)
	}
	if _, _, _, _, err := st.unsubscribe(bob, []string{"general", "nope", "neither"}); err == nil || err.Error() != "no such channel: nope, neither" {
		t.Errorf("unknown channels: got %v, want no such channel: nope, neither", err)
	}
}

// channelByID answers from the store's memo only while a channel's stored
// bytes are those it decoded: a channel that changes (as an edit would
// change it) or goes is seen as it now is, in every transaction after.
func TestChannelByID_SeesAChangedChannelAsItIsNow(t *testing.T) {
	st := mustOpenStore(t)
	ch := mustCreateChannel(t, st, "general", false)
	lookup := func() (channel, error) {
		var got channel
		var err error
		mustView(t, st, func(tx *bbolt.Tx) error {
			got, err = st.channelByID(tx, ch.ID)
			return nil
		})
		return got, err
	}
	for range 2 { // decoded, then remembered
		if got, err := lookup(); err != nil || !reflect.DeepEqual(got, ch) {
			t.Fatalf("got %+v, %v; want %+v", got, err, ch)
		}
	}

	changed := ch
	changed.Private, changed.Description = true, "now private"
	if err := st.update(func(tx *bbolt.Tx) error { return putJSON(tx.Bucket(bucketChannels), itob(ch.ID), changed) }); err != nil {
		t.Fatal(err)
	}
	if got, err := lookup(); err != nil || !reflect.DeepEqual(got, changed) {
		t.Fatalf("after a change: got %+v, %v; want %+v", got, err, changed)
	}

	if err := st.update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketChannels).Delete(itob(ch.ID)) }); err != nil {
		t.Fatal(err)
	}
	if got, err := lookup(); !errors.Is(err, errNoSuchChannel) {
		t.Fatalf("after deletion: got %+v, %v; want errNoSuchChannel", got, err)
	}
}

// The memo holds at most channelMemoBytes of stored channels: when full it
// starts afresh, so a channel looked up later is remembered again.
func TestChannelMemo_IsBoundedAndStartsAfreshWhenFull(t *testing.T) {
	var memo channelMemo
	stored := bytes.Repeat([]byte("x"), 1000)
	n := uint64(channelMemoBytes / len(stored))
	for id := range n {
		memo.put(id, stored, channel{ID: id})
	}
	if len(memo.m) != int(n) || memo.bytes != int(n)*len(stored) {
		t.Fatalf("after %d channels: holds %d, %d bytes", n, len(memo.m), memo.bytes)
	}
	if ch, ok := memo.get(7, stored); !ok || ch.ID != 7 {
		t.Fatalf("get(7): got %+v, %v", ch, ok)
	}
	if _, ok := memo.get(7, stored[1:]); ok {
		t.Fatal("get(7) with other bytes: answered from the memo")
	}
	memo.put(7, stored, channel{ID: 7}) // again: replaces, does not grow
	if memo.bytes != int(n)*len(stored) {
		t.Fatalf("after putting a channel again: %d bytes, want %d", memo.bytes, int(n)*len(stored))
	}
	memo.put(n, stored, channel{ID: n}) // over the budget
	if len(memo.m) != 1 || memo.bytes != len(stored) {
		t.Fatalf("over the budget: holds %d, %d bytes; want it to start afresh with the new one", len(memo.m), memo.bytes)
	}
	if ch, ok := memo.get(n, stored); !ok || ch.ID != n {
		t.Fatalf("get(%d) after starting afresh: got %+v, %v", n, ch, ok)
	}
}

// Two names the name index treats as one (strings.ToLower("İx") is "ix",
// though strings.EqualFold says they differ) are one channel, created
// once; before, the second was refused after the first was written, and
// the refused request still left a channel behind.
func TestSubscribe_NamesTheIndexTreatsAsOneMakeOneChannel(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	subscribed, _, _, err := st.subscribe(alice, []channelSpec{{Name: "İx"}, {Name: "ix"}}, false)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if !slices.Equal(subscribed, []string{"İx"}) {
		t.Errorf("subscribed: got %q, want [İx]", subscribed)
	}
	channels, err := st.channels()
	if err != nil {
		t.Fatal(err)
	}
	if len(channels) != 1 || channels[0].Name != "İx" {
		t.Errorf("channels: got %v, want İx alone", channels)
	}
}

// Zulip's round_to_2_significant_digits: Python's round, half to even.
func TestRoundToTwoDigits_AsPythonRounds(t *testing.T) {
	for n, want := range map[int]int{0: 0, 7: 7, 99: 99, 100: 100, 104: 100, 105: 100, 115: 120, 125: 120, 126: 130, 1234: 1200, 1250: 1200, 1350: 1400, 99999: 100000} {
		if got := roundToTwoDigits(n); got != want {
			t.Errorf("roundToTwoDigits(%d): got %d, want %d", n, got, want)
		}
	}
}

// A group-setting value reads and writes as Zulip's API writes it, and
// is kept as Zulip keeps it.
func TestGroupSetting_JSONAndCanonicalForm(t *testing.T) {
	for _, c := range []struct{ in, canonical string }{
		{`5`, `5`},
		{`{"direct_members":[],"direct_subgroups":[2]}`, `2`},
		{`{"direct_members":[],"direct_subgroups":[]}`, `8`},
		{`{"direct_members":[3,1,3],"direct_subgroups":[]}`, `{"direct_members":[1,3],"direct_subgroups":[]}`},
	} {
		var g groupSetting
		if err := json.Unmarshal([]byte(c.in), &g); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		out, err := json.Marshal(g.canonical())
		if err != nil || string(out) != c.canonical {
			t.Errorf("%s: got %s, %v; want %s", c.in, out, err, c.canonical)
		}
	}
	owner, member, guest := user{ID: 1, Role: roleOwner, Active: true}, user{ID: 2, Role: roleMember, Active: true}, user{ID: 3, Role: roleGuest, Active: true}
	for _, c := range []struct {
		g    groupSetting
		u    user
		want bool
	}{
		{systemGroupSetting(groupAdministrators), owner, true},
		{systemGroupSetting(groupAdministrators), member, false},
		{systemGroupSetting(groupMembers), member, true},
		{systemGroupSetting(groupMembers), guest, false},
		{systemGroupSetting(groupEveryone), guest, true},
		{systemGroupSetting(groupNobody), owner, false},
		{groupSetting{Anonymous: true, Members: []uint64{3}}, guest, true},
		{groupSetting{Anonymous: true, Subgroups: []int{groupOwners}}, owner, true},
		{systemGroupSetting(groupEveryone), user{ID: 4, Role: roleMember}, false}, // deactivated
	} {
		if got := (&groupDirectory{}).includes(c.g, c.u); got != c.want {
			t.Errorf("%+v includes %+v: got %v, want %v", c.g, c.u, got, c.want)
		}
	}
}

// Register answers booleans for inherited notification settings to
// clients without notification_settings_null, as Zulip does: the four
// channel notification settings take the user's default (off), while
// wildcard_mentions_notify stays null.
func TestSubscriptionObject_NotificationDefaults(t *testing.T) {
	on := true
	o := newSubscriptionObject(subscribedChannel{subscription: subscription{PushNotifications: &on}})
	o.withNotificationDefaults()
	if *o.DesktopNotifications || *o.AudibleNotifications || !*o.PushNotifications || *o.EmailNotifications || o.WildcardMentionsNotify != nil {
		t.Errorf("got desktop %v audible %v push %v email %v wildcard %v", *o.DesktopNotifications, *o.AudibleNotifications, *o.PushNotifications, *o.EmailNotifications, o.WildcardMentionsNotify)
	}
}

// BenchmarkChannelTopics_ThousandTopicsMillionMessages: listing topics
// costs a few seeks and a decode per topic, whatever the messages.
func BenchmarkChannelTopics_ThousandTopicsMillionMessages(b *testing.B) {
	st := mustOpenStore(b)
	u, _ := mustCreateUser(b, st, "a@example.com", roleMember, false)
	ch := mustCreateChannel(b, st, "big", false)
	const messages, topics = 1_000_000, 1000
	for start := 0; start < messages; start += 50_000 {
		err := st.db.Update(func(tx *bbolt.Tx) error {
			for i := start; i < start+50_000; i++ {
				id, _ := tx.Bucket(bucketMessages).NextSequence()
				m := message{ID: id, SenderID: u.ID, ChannelID: ch.ID, Topic: "topic " + strconv.Itoa(i%topics), Content: "x", Timestamp: int64(i)}
				if err := putJSON(tx.Bucket(bucketMessages), itob(id), m); err != nil {
					return err
				}
				if err := indexMessage(tx, m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		list, err := st.channelTopics(u, ch.ID)
		if err != nil || len(list) != topics {
			b.Fatalf("got %d topics, %v", len(list), err)
		}
	}
}

// withNotificationDefaults fills the inherited channel notification
// settings with the user's defaults, as Zulip's register does for
// clients that do not declare the notification_settings_null capability
// (handle_stream_notifications_compatibility; wildcard_mentions_notify
// stays null). zulite has no user-level settings: Zulip's defaults, all
// off, are every user's.
func (o *subscriptionObject) withNotificationDefaults() {
	for _, setting := range []**bool{&o.DesktopNotifications, &o.AudibleNotifications, &o.PushNotifications, &o.EmailNotifications} {
		if *setting == nil {
			off := false
			*setting = &off
		}
	}
}
