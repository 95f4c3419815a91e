package main

import (
	"slices"
	"strconv"
	"sync"
	"testing"

	"go.etcd.io/bbolt"
)

func TestExceptionSet_RoundTripAppendAndMerge(t *testing.T) {
	st := mustOpenStore(t)
	var want []uint64
	for id := uint64(10); id < 10+2500*3; id += 3 {
		want = append(want, id)
	}
	key := unreadKey(1, 2)
	update := func(ids ...uint64) {
		t.Helper()
		mustUpdate(t, st, func(tx *bbolt.Tx) error { return addToSet(tx.Bucket(bucketUnreadBelow), key, ids) })
	}
	update(want[:1700]...)
	for _, id := range want[1700:] { // one at a time, as marks do
		update(id)
	}
	update(11, 12, want[5]) // older ids, and one already there
	want = mergeSorted(want, []uint64{11, 12})

	mustView(t, st, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketUnreadBelow).Bucket(key)
		got, err := chunkIDs(b)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ids: got %d ids (err %v), want %d", len(got), err, len(want))
		}
		return b.ForEach(func(k, v []byte) error {
			if n := chunkCount(v); n > unreadChunkSize {
				t.Errorf("chunk %d holds %d ids, want at most %d", btoi(k), n, unreadChunkSize)
			}
			return nil
		})
	})
}

// seedUnread makes n messages (ids 1 to n) unread for a user of a fresh
// store, subscribed to the channel before them, as sends leave them.
// Only the channel's index is written (sending a million messages would
// only slow the test): it is all that marking read and listing ids walk.
func seedUnread(t testing.TB, n int) (*store, user, channel) {
	t.Helper()
	st := mustOpenStore(t)
	u, _ := mustCreateUser(t, st, "reader@example.com", roleMember, false)
	ch := mustCreateChannel(t, st, "busy", false)
	mustSubscribe(t, st, u, "busy")
	seedIndex(t, st, ch, n, 1)
	return st, u, ch
}

// pagesWrittenBy counts the pages bbolt writes to commit fn's
// transaction: the pages it allocates (data and freelist, overflow pages
// included), each written once; not the meta page every commit writes.
func pagesWrittenBy(t testing.TB, st *store, fn func() error) int64 {
	t.Helper()
	before := st.db.Stats()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	after := st.db.Stats()
	return after.TxStats.GetPageCount() - before.TxStats.GetPageCount()
}

func TestMarkChannelRead_MillionUnreadWritesAboutAsMuchAsOne(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a million unread ids")
	}
	t.Parallel() // independent of the other tests: its own store or server
	pages := map[int]int64{}
	for _, n := range []int{1, 1_000_000} {
		st, u, ch := seedUnread(t, n)
		if got := len(mustUnread(t, st, u, ch)); got != n {
			t.Fatalf("seeded %d unread, got %d", n, got)
		}
		pages[n] = pagesWrittenBy(t, st, func() error { err := st.markChannelRead(u, ch.ID); return err })
		if got := mustUnread(t, st, u, ch); len(got) != 0 {
			t.Fatalf("%d unread: after marking read got %d unread, want 0", n, len(got))
		}
	}
	t.Logf("pages written: 1 unread %d, 1,000,000 unread %d", pages[1], pages[1_000_000])
	if pages[1_000_000] > 3*pages[1] {
		t.Errorf("marking 1,000,000 read wrote %d pages, want at most 3x the %d of marking 1 read", pages[1_000_000], pages[1])
	}
}

// A million messages marked unread one by one below the watermark (every
// other one, so the watermark cannot step down past them) are a million
// exceptions; marking the channel read drops their set without rewriting
// it.
func TestMarkChannelRead_MillionUnreadExceptionsWriteAboutAsMuchAsOne(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a million unread ids")
	}
	t.Parallel() // independent of the other tests: its own store or server
	pages := map[int]int64{}
	for _, n := range []int{1, 1_000_000} {
		st, u, ch := seedUnread(t, 2*n)
		odd := make([]uint64, n)
		for i := range odd {
			odd[i] = uint64(2*i + 1)
		}
		mustUpdate(t, st, func(tx *bbolt.Tx) error { return rewindUnread(tx, u.ID, ch.ID, uint64(2*n), odd) })
		if got := mustUnread(t, st, u, ch); !slices.Equal(got, odd) {
			t.Fatalf("seeded %d unread exceptions, got %d unread", n, len(got))
		}
		pages[n] = pagesWrittenBy(t, st, func() error { err := st.markChannelRead(u, ch.ID); return err })
		if got := mustUnread(t, st, u, ch); len(got) != 0 {
			t.Fatalf("%d unread: after marking read got %d unread, want 0", n, len(got))
		}
	}
	t.Logf("pages written: 1 exception %d, 1,000,000 exceptions %d", pages[1], pages[1_000_000])
	if pages[1_000_000] > 3*pages[1] {
		t.Errorf("marking 1,000,000 exceptions read wrote %d pages, want at most 3x the %d of marking 1 read", pages[1_000_000], pages[1])
	}
}

func TestExceptionSet_OneMoreCostsTheSameHoweverManyItHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a million ids")
	}
	pages := map[int]int64{}
	for _, n := range []int{1, 1_000_000} {
		st := mustOpenStore(t)
		ids := make([]uint64, n)
		for i := range ids {
			ids[i] = uint64(i + 1)
		}
		key := unreadKey(1, 2)
		mustUpdate(t, st, func(tx *bbolt.Tx) error { return addToSet(tx.Bucket(bucketReadAbove), key, ids) })
		pages[n] = pagesWrittenBy(t, st, func() error {
			return st.db.Update(func(tx *bbolt.Tx) error { return addToSet(tx.Bucket(bucketReadAbove), key, []uint64{uint64(n) + 1}) })
		})
	}
	t.Logf("pages written to add one id: to a set of 1 %d, of 1,000,000 %d", pages[1], pages[1_000_000])
	if pages[1_000_000] > 3*pages[1] {
		t.Errorf("adding one id to 1,000,000 wrote %d pages, want at most 3x the %d with 1", pages[1_000_000], pages[1])
	}
}

func TestRemoveFromSet_RewritesOnlyWhatItMust(t *testing.T) {
	st := mustOpenStore(t)
	var all []uint64
	for id := uint64(1); id <= 2500; id++ {
		all = append(all, id)
	}
	key := unreadKey(1, 2)
	mustUpdate(t, st, func(tx *bbolt.Tx) error { return addToSet(tx.Bucket(bucketReadAbove), key, all) })
	gone := []uint64{0, 1, 999, 1000, 1001, 2001, 2500, 9999} // 0 and 9999 were never there
	var removed []uint64
	mustUpdate(t, st, func(tx *bbolt.Tx) error {
		var err error
		removed, err = removeFromSet(tx.Bucket(bucketReadAbove), key, gone)
		return err
	})
	if want := []uint64{1, 999, 1000, 1001, 2001, 2500}; !slices.Equal(removed, want) {
		t.Errorf("removed: got %v, want %v", removed, want)
	}
	want := slices.DeleteFunc(slices.Clone(all), func(id uint64) bool { return slices.Contains(gone, id) })
	mustView(t, st, func(tx *bbolt.Tx) error {
		got, err := chunkIDs(tx.Bucket(bucketReadAbove).Bucket(key))
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			t.Errorf("after: got %d ids, want %d", len(got), len(want))
		}
		return nil
	})
	// A range: whole chunks inside it go, the chunks at its ends keep what
	// lies outside.
	mustUpdate(t, st, func(tx *bbolt.Tx) error { return removeSetRange(tx.Bucket(bucketReadAbove), key, 500, 2200) })
	want = slices.DeleteFunc(want, func(id uint64) bool { return id >= 500 && id <= 2200 })
	mustView(t, st, func(tx *bbolt.Tx) error {
		got, err := chunkIDs(tx.Bucket(bucketReadAbove).Bucket(key))
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			t.Errorf("after removing 500 to 2200: got %d ids, want %d", len(got), len(want))
		}
		return nil
	})
	mustUpdate(t, st, func(tx *bbolt.Tx) error {
		_, err := removeFromSet(tx.Bucket(bucketReadAbove), key, want)
		return err
	})
	mustView(t, st, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketReadAbove).Bucket(key) != nil {
			t.Errorf("an emptied set keeps its bucket")
		}
		return nil
	})
}

// markState is a user's unread state in a channel as stored: the
// watermark and both exception sets.
type markState struct {
	subscribed             bool
	watermark              uint64
	unreadBelow, readAbove []uint64
}

func mustMarkState(t *testing.T, st *store, u user, ch channel) markState {
	t.Helper()
	var s markState
	mustView(t, st, func(tx *bbolt.Tx) error {
		m, ok := loadMark(tx, u.ID, ch.ID)
		if !ok {
			return nil
		}
		s = markState{subscribed: true, watermark: m.watermark}
		var err error
		if b := m.below(); b != nil {
			if s.unreadBelow, err = chunkIDs(b); err != nil {
				return err
			}
		}
		if b := m.above(); b != nil {
			s.readAbove, err = chunkIDs(b)
		}
		return err
	})
	return s
}

// The exceptions hold only what was read or marked unread out of order:
// a sender who has read everything moves their watermark to their own
// message, reading the oldest unread message moves the watermark past
// the read ones that follow, and marking the newest messages unread moves
// it down.
func TestUnreadState_ExceptionsOnlyForWhatIsOutOfOrder(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	general := mustCreateChannel(t, st, "general", false)
	mustSubscribe(t, st, alice, "general")
	mustSubscribe(t, st, bob, "general")
	var ids []uint64
	for range 5 {
		ids = append(ids, mustSend(t, st, alice, general))
	}
	want := func(step string, u user, w uint64, below, above []uint64) {
		t.Helper()
		got := mustMarkState(t, st, u, general)
		if got.watermark != w || !slices.Equal(got.unreadBelow, below) || !slices.Equal(got.readAbove, above) {
			t.Errorf("%s: %s's state got %+v, want watermark %d, unread below %v, read above %v", step, u.Email, got, w, below, above)
		}
	}
	want("alice sent five", alice, ids[4], nil, nil)
	want("alice sent five", bob, 0, nil, nil)

	mustUpdateFlags(t, st, bob, []uint64{ids[4], ids[2]}, flagChange{Flag: "read", Add: true})
	want("bob read the 5th and 3rd", bob, 0, nil, []uint64{ids[2], ids[4]})
	mustUpdateFlags(t, st, bob, []uint64{ids[0]}, flagChange{Flag: "read", Add: true})
	want("bob read the 1st", bob, ids[0], nil, []uint64{ids[2], ids[4]})
	mustUpdateFlags(t, st, bob, []uint64{ids[1]}, flagChange{Flag: "read", Add: true})
	want("bob read the 2nd: the 3rd closes up", bob, ids[2], nil, []uint64{ids[4]})
	mustSend(t, st, bob, general) // bob has not read the 4th: his own message is an exception
	sixth := ids[4] + 1
	want("bob sent the 6th", bob, ids[2], nil, []uint64{ids[4], sixth})
	mustUpdateFlags(t, st, bob, []uint64{ids[3]}, flagChange{Flag: "read", Add: true})
	want("bob read the 4th: all closes up", bob, sixth, nil, nil)

	mustUpdateFlags(t, st, bob, []uint64{sixth, ids[4]}, flagChange{Flag: "read", Add: false})
	want("bob marked the two newest unread", bob, ids[3], nil, nil)
	mustUpdateFlags(t, st, bob, []uint64{ids[1]}, flagChange{Flag: "read", Add: false})
	want("bob marked the 2nd unread", bob, ids[3], []uint64{ids[1]}, nil)
	mustUpdateFlags(t, st, bob, []uint64{ids[3], ids[2]}, flagChange{Flag: "read", Add: false})
	want("bob marked the 3rd and 4th unread: down past the 2nd", bob, ids[0], nil, nil)
	if got, want := mustUnread(t, st, bob, general), append(slices.Clone(ids[1:]), sixth); !slices.Equal(got, want) {
		t.Errorf("bob's unread: got %v, want %v", got, want)
	}
	if err := st.markChannelRead(bob, general.ID); err != nil {
		t.Fatal(err)
	}
	want("bob marked general read", bob, sixth, nil, nil)
}

// Messages sent before a subscription are read, but may be marked unread
// while subscribed; leaving drops the state, and joining again starts
// afresh.
func TestUnreadState_SubscriptionStartsAndEndsIt(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	general := mustCreateChannel(t, st, "general", false)
	mustSubscribe(t, st, alice, "general")
	old := mustSend(t, st, alice, general)
	mustSubscribe(t, st, bob, "general")
	if got := mustMarkState(t, st, bob, general); got.watermark != old {
		t.Errorf("bob's watermark on joining: got %d, want the largest id %d", got.watermark, old)
	}
	fresh := mustSend(t, st, alice, general)
	mustUpdateFlags(t, st, bob, []uint64{old}, flagChange{Flag: "read", Add: false})
	if got := mustUnread(t, st, bob, general); !slices.Equal(got, []uint64{old, fresh}) {
		t.Errorf("bob's unread: got %v, want [%d %d]", got, old, fresh)
	}
	if _, _, _, _, err := st.unsubscribe(bob, []string{"general"}); err != nil {
		t.Fatal(err)
	}
	if got := mustMarkState(t, st, bob, general); got.subscribed || len(got.unreadBelow) > 0 {
		t.Errorf("bob's state after leaving: got %+v, want none", got)
	}
	mustView(t, st, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketUnreadBelow).Bucket(unreadKey(bob.ID, general.ID)) != nil {
			t.Errorf("bob's unread_below set outlives his subscription")
		}
		return nil
	})
	mustUpdateFlags(t, st, bob, []uint64{old}, flagChange{Flag: "read", Add: false}) // not subscribed: nothing
	mustSubscribe(t, st, bob, "general")
	if got := mustUnread(t, st, bob, general); len(got) != 0 {
		t.Errorf("bob's unread on joining again: got %v, want none", got)
	}
}

// A message's recipients are its channel's subscribers when it was sent,
// read when first asked: not those who joined after.
func TestSendMessage_RecipientsAreTheSubscribersWhenSent(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	carol, _ := mustCreateUser(t, st, "carol@example.com", roleMember, false)
	general := mustCreateChannel(t, st, "general", false)
	mustSubscribe(t, st, alice, "general")
	mustSubscribe(t, st, bob, "general")
	sent, err := st.sendMessage(carol, channelRef{ID: general.ID}, "t", "x", "")
	if err != nil {
		t.Fatal(err)
	}
	mustSubscribe(t, st, carol, "general")
	if got, want := sent.Recipients(), []uint64{alice.ID, bob.ID}; !slices.Equal(got, want) {
		t.Errorf("recipients: got %v, want %v", got, want)
	}
}

// A send writes the message and its indexes, never a page per subscriber:
// ten times the subscribers adds at most the one tree level that the
// sender's own watermark (one row per subscription) may gain. Both stores
// first hold 40 messages, so that the message indexes have pages of their
// own, as in any real database: below bbolt's inline limit (a quarter
// page) they live in the root page, and a few bytes more of anything
// there split the root and moved the count by two (10 against 10,000
// subscribers measured that, not the send).
func TestSendMessage_PagesWrittenDoNotGrowWithSubscribers(t *testing.T) {
	pages := map[int]int64{}
	for _, n := range []int{1_000, 10_000} {
		st := mustOpenStore(t)
		alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
		general := mustCreateChannel(t, st, "general", false)
		mustSubscribe(t, st, alice, "general")
		mustUpdate(t, st, func(tx *bbolt.Tx) error {
			for i := range n - 1 {
				id, err := tx.Bucket(bucketUsers).NextSequence()
				if err != nil {
					return err
				}
				if err := putUser(tx, user{ID: id, Email: "m" + strconv.Itoa(i) + "@example.com", Role: roleMember, Active: true}); err != nil {
					return err
				}
				if err := st.addSubscription(tx, id, general.ID); err != nil {
					return err
				}
			}
			return nil
		})
		for range 40 { // the indexes outgrow the root page
			mustSend(t, st, alice, general)
		}
		const sends = 20
		pages[n] = pagesWrittenBy(t, st, func() error {
			for range sends {
				if _, err := st.sendMessage(alice, channelRef{ID: general.ID}, "topic", "hello", ""); err != nil {
					return err
				}
			}
			return nil
		}) / sends
	}
	t.Logf("pages written per send: 1,000 subscribers %d, 10,000 subscribers %d", pages[1_000], pages[10_000])
	if pages[10_000] > pages[1_000]+1 {
		t.Errorf("a send to 10,000 subscribers wrote %d pages, want at most one more than the %d to 1,000", pages[10_000], pages[1_000])
	}
}

// Sends, marks and flag changes of the same unread state in one commit
// group leave a consistent file and the state the last mark made.
func TestUnreadState_ConcurrentSendsAndMarksStayConsistent(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	ch := mustCreateChannel(t, st, "general", false)
	mustSubscribe(t, st, alice, "general")
	mustSubscribe(t, st, bob, "general")
	var wg sync.WaitGroup
	for round := range 20 {
		for i := range 10 {
			wg.Go(func() {
				sent, err := st.sendMessage(alice, channelRef{ID: ch.ID}, "t", "x", "")
				if err != nil {
					t.Error(err)
					return
				}
				if _, _, err := st.updateFlags(bob, []uint64{sent.ID}, flagChange{Flag: "read", Add: (round+i)%2 == 0}); err != nil {
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
