package main

import (
	"slices"
	"testing"

	"go.etcd.io/bbolt"
)

func TestUnreadChunks_RoundTripAppendAndMerge(t *testing.T) {
	st := mustOpenStore(t)
	var want []uint64
	for id := uint64(10); id < 10+2500*3; id += 3 {
		want = append(want, id)
	}
	update := func(ids ...uint64) {
		t.Helper()
		if err := st.db.Update(func(tx *bbolt.Tx) error { return addUnread(tx, 1, 2, ids) }); err != nil {
			t.Fatal(err)
		}
	}
	update(want[:1700]...)
	for _, id := range want[1700:] { // one at a time, as sends do
		update(id)
	}
	update(11, 12, want[5]) // older ids, and one already unread
	want = mergeSorted(want, []uint64{11, 12})

	mustView(t, st, func(tx *bbolt.Tx) error {
		got, err := unreadIDs(tx, 1, 2)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("unread ids: got %d ids (err %v), want %d", len(got), err, len(want))
		}
		if n := unreadCount(tx, 1, 2); n != len(want) {
			t.Errorf("unreadCount: got %d, want %d", n, len(want))
		}
		return tx.Bucket(bucketUnread).Bucket(unreadKey(1, 2)).ForEach(func(k, v []byte) error {
			if n := chunkCount(v); n > unreadChunkSize {
				t.Errorf("chunk %d holds %d ids, want at most %d", btoi(k), n, unreadChunkSize)
			}
			return nil
		})
	})
}

// seedUnread makes n messages unread for user 1 in channel 1 of a fresh
// store, straight into the unread bucket (sending a million messages
// would only slow the test).
func seedUnread(t testing.TB, n int) (*store, user, channel) {
	t.Helper()
	st := mustOpenStore(t)
	u, _ := mustCreateUser(t, st, "reader@example.com", roleMember, false)
	ch := mustCreateChannel(t, st, "busy", false)
	mustSubscribe(t, st, u, "busy")
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	if err := st.db.Update(func(tx *bbolt.Tx) error { return addUnread(tx, u.ID, ch.ID, ids) }); err != nil {
		t.Fatal(err)
	}
	return st, u, ch
}

// pagesWrittenBy counts the pages bbolt writes to commit fn's
// transaction: the pages it allocates (data and freelist, overflow pages
// included), each written once; not the meta page every commit writes.
func pagesWrittenBy(t testing.TB, st *store, fn func() error) int64 {
	t.Helper()
	st.janitorOff.Store(true) // its own writes would be counted too
	defer st.janitorOff.Store(false)
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
	pages := map[int]int64{}
	for _, n := range []int{1, 1_000_000} {
		st, u, ch := seedUnread(t, n)
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

func TestAddUnread_OneMoreCostsTheSameHoweverManyAreUnread(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a million unread ids")
	}
	pages := map[int]int64{}
	for _, n := range []int{1, 1_000_000} {
		st, u, ch := seedUnread(t, n)
		pages[n] = pagesWrittenBy(t, st, func() error {
			return st.db.Update(func(tx *bbolt.Tx) error { return addUnread(tx, u.ID, ch.ID, []uint64{uint64(n) + 1}) })
		})
	}
	t.Logf("pages written to add one unread: with 1 unread %d, with 1,000,000 %d", pages[1], pages[1_000_000])
	if pages[1_000_000] > 3*pages[1] {
		t.Errorf("adding one unread to 1,000,000 wrote %d pages, want at most 3x the %d with 1", pages[1_000_000], pages[1])
	}
}

func TestRemoveUnread_RewritesOnlyWhatItMust(t *testing.T) {
	st := mustOpenStore(t)
	var all []uint64
	for id := uint64(1); id <= 2500; id++ {
		all = append(all, id)
	}
	mustUpdate(t, st, func(tx *bbolt.Tx) error { return addUnread(tx, 1, 2, all) })
	gone := []uint64{0, 1, 999, 1000, 1001, 2001, 2500, 9999} // 0 and 9999 were never unread
	var removed []uint64
	err := st.db.Update(func(tx *bbolt.Tx) error {
		var err error
		removed, err = removeUnread(tx, 1, 2, gone)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{1, 999, 1000, 1001, 2001, 2500}; !slices.Equal(removed, want) {
		t.Errorf("removed: got %v, want %v", removed, want)
	}
	want := slices.DeleteFunc(slices.Clone(all), func(id uint64) bool { return slices.Contains(gone, id) })
	mustView(t, st, func(tx *bbolt.Tx) error {
		got, err := unreadIDs(tx, 1, 2)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			t.Errorf("unread after: got %d ids, want %d", len(got), len(want))
		}
		return nil
	})
	err = st.db.Update(func(tx *bbolt.Tx) error {
		_, err := removeUnread(tx, 1, 2, want)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mustView(t, st, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketUnread).Bucket(unreadKey(1, 2)) != nil {
			t.Errorf("an emptied unread set keeps its bucket")
		}
		return nil
	})
}
