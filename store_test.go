package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// mustOpenStore opens a fresh database under t.TempDir and, when the test
// ends, runs bbolt's consistency check before closing it.
func mustOpenStore(t testing.TB) *store {
	t.Helper()
	st, err := openStore(filepath.Join(t.TempDir(), "test.db"), time.Second)
	if err != nil {
		t.Fatalf("openStore: %v", err)
	}
	t.Cleanup(func() {
		st.quiesce()
		checkConsistency(t, st.db)
		if err := st.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return st
}

func checkConsistency(t testing.TB, db *bbolt.DB) {
	t.Helper()
	err := db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		t.Errorf("consistency check: %v", err)
	}
}

func mustCreateUser(t testing.TB, st *store, email string, role int, bot bool) (user, string) {
	t.Helper()
	u, key, err := st.createUser(email, email, role, bot)
	if err != nil {
		t.Fatalf("createUser(%s): %v", email, err)
	}
	return u, key
}

func mustCreateChannel(t testing.TB, st *store, name string, private bool) channel {
	t.Helper()
	ch, err := st.createChannel(name, "", private, 0)
	if err != nil {
		t.Fatalf("createChannel(%s): %v", name, err)
	}
	return ch
}

func mustSubscribe(t testing.TB, st *store, u user, names ...string) {
	t.Helper()
	var specs []channelSpec
	for _, n := range names {
		specs = append(specs, channelSpec{Name: n})
	}
	if _, _, _, err := st.subscribe(u, specs, false); err != nil {
		t.Fatalf("subscribe(%s, %v): %v", u.Email, names, err)
	}
}

func mustSend(t testing.TB, st *store, sender user, ch channel) uint64 {
	t.Helper()
	sent, err := st.sendMessage(sender, channelRef{ID: ch.ID}, "topic", "hello", "test")
	if err != nil {
		t.Fatalf("sendMessage: %v", err)
	}
	return sent.ID
}

func mustUnread(t testing.TB, st *store, u user, ch channel) []uint64 {
	t.Helper()
	ids, err := st.unread(u.ID, ch.ID)
	if err != nil {
		t.Fatalf("unread: %v", err)
	}
	return ids
}

func TestOpenStore_CreatesBucketsSchemaVersionAndPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "z.db")
	st, err := openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("file mode: got %o, want 600", got)
	}
	if st.db.NoSync {
		t.Errorf("NoSync: got true, want every commit synced")
	}
	st.db.View(func(tx *bbolt.Tx) error {
		for _, name := range allBuckets {
			if tx.Bucket(name) == nil {
				t.Errorf("bucket %s: missing", name)
			}
		}
		if got := btoi(tx.Bucket(bucketMeta).Get(keySchemaVersion)); got != schemaVersion {
			t.Errorf("schema version: got %d, want %d", got, schemaVersion)
		}
		return nil
	})
}

func TestOpenStore_ExistingFileMadePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "z.db")
	st, err := openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st.close()
	os.Chmod(path, 0o644)
	st, err = openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode after reopening: got %o, want 600", fi.Mode().Perm())
	}
}

func TestOpenStore_RefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "z.db")
	st, err := openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, itob(schemaVersion+1))
	})
	st.close()
	if _, err := openStore(path, time.Second); err == nil {
		t.Fatal("openStore on a newer schema: got nil error, want a refusal")
	}
}

func TestOpenStore_HeldDatabaseFailsFast(t *testing.T) {
	st := mustOpenStore(t)
	start := time.Now()
	_, err := openStore(st.db.Path(), 200*time.Millisecond)
	if !errors.Is(err, errDatabaseLocked) {
		t.Fatalf("second open: got %v, want errDatabaseLocked", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("second open waited %v, want about the lock timeout", waited)
	}
}

func TestAuthenticate_KeysHashedAtRestAndMatchedByEmailCaseInsensitively(t *testing.T) {
	st := mustOpenStore(t)
	alice, key := mustCreateUser(t, st, "Alice@Example.com", roleMember, false)
	mustCreateUser(t, st, "bob@example.com", roleMember, false)

	if got, err := st.authenticate("alice@EXAMPLE.com", key); err != nil || got.ID != alice.ID {
		t.Errorf("right key: got (%d, %v), want (%d, nil)", got.ID, err, alice.ID)
	}
	wrong := newAPIKey()
	for _, c := range []struct{ name, email, key string }{
		{"wrong key", "alice@example.com", wrong},
		{"unknown e-mail", "nobody@example.com", key},
		{"another account's e-mail", "bob@example.com", key},
	} {
		if _, err := st.authenticate(c.email, c.key); !errors.Is(err, errBadCredentials) {
			t.Errorf("%s: got %v, want errBadCredentials", c.name, err)
		}
	}
	st.db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if bytes.Contains(k, []byte(key)) || bytes.Contains(v, []byte(key)) {
					t.Errorf("bucket %s holds the API key in the clear", name)
				}
				return nil
			})
		})
	})
}

func TestRegenerateKey_RevokesEveryKeyAndPushToken(t *testing.T) {
	st := mustOpenStore(t)
	alice, oldKey := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, bobKey := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	st.addPushToken(alice.ID, pushToken{Kind: pushAPNs, Token: "aabb"})
	st.addPushToken(bob.ID, pushToken{Kind: pushAPNs, Token: "aabb"})

	newKey, err := st.regenerateKey("ALICE@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.authenticate("alice@example.com", oldKey); !errors.Is(err, errBadCredentials) {
		t.Errorf("old key after regenerate: got %v, want errBadCredentials", err)
	}
	if _, err := st.authenticate("alice@example.com", newKey); err != nil {
		t.Errorf("new key: got %v, want nil", err)
	}
	if tokens, _ := st.pushTokens(alice.ID); len(tokens) != 0 {
		t.Errorf("alice's tokens after regenerate: got %d, want 0", len(tokens))
	}
	if tokens, _ := st.pushTokens(bob.ID); len(tokens) != 1 {
		t.Errorf("bob's tokens: got %d, want 1", len(tokens))
	}
	if _, err := st.authenticate("bob@example.com", bobKey); err != nil {
		t.Errorf("bob's key: got %v, want nil", err)
	}
}

func TestCreateUser_EmailUniqueCaseInsensitively(t *testing.T) {
	st := mustOpenStore(t)
	mustCreateUser(t, st, "alice@example.com", roleMember, false)
	if _, _, err := st.createUser("ALICE@example.com", "A", roleMember, false); !errors.Is(err, errEmailTaken) {
		t.Errorf("second account with the same e-mail: got %v, want errEmailTaken", err)
	}
	if n, _ := st.userCount(); n != 1 {
		t.Errorf("accounts: got %d, want 1", n)
	}
}

func TestCreateChannel_NameUniqueCaseInsensitively(t *testing.T) {
	st := mustOpenStore(t)
	mustCreateChannel(t, st, "general", false)
	if _, err := st.createChannel("General", "", false, 0); !errors.Is(err, errChannelExists) {
		t.Errorf("second channel named General: got %v, want errChannelExists", err)
	}
	if list, _ := st.channels(); len(list) != 1 {
		t.Errorf("channels: got %d, want 1", len(list))
	}
}

// Rejections inside a shared batch must not undo or repeat the others'
// writes: concurrent successful adds and refused removals all end right.
func TestBatchedWrites_RejectionsLeaveTheOthersCommitted(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	const n = 50
	errs := make(chan error, 2*n)
	for i := range n {
		go func() { errs <- st.addPushToken(alice.ID, pushToken{Kind: pushFCM, Token: "t" + strconv.Itoa(i)}) }()
		go func() { errs <- st.removePushToken(alice.ID, pushFCM, "missing"+strconv.Itoa(i)) }()
	}
	var added, refused int
	for range 2 * n {
		switch err := <-errs; {
		case err == nil:
			added++
		case errors.Is(err, errTokenNotFound):
			refused++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if added != n || refused != n {
		t.Errorf("got %d added and %d refused, want %d and %d", added, refused, n, n)
	}
	if tokens, _ := st.pushTokens(alice.ID); len(tokens) != n {
		t.Errorf("tokens stored: got %d, want %d", len(tokens), n)
	}
}

func TestPushTokens_BelongToTheirOwner(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.addPushToken(alice.ID, pushToken{Kind: pushAPNs, Token: "AABB", AppID: "org.zulip.Zulip"}))
	must(st.addPushToken(alice.ID, pushToken{Kind: pushAPNs, Token: "aabb", AppID: "other"})) // same token: no change
	must(st.addPushToken(bob.ID, pushToken{Kind: pushAPNs, Token: "aabb"}))
	must(st.addPushToken(alice.ID, pushToken{Kind: pushFCM, Token: "Android-Token"}))

	tokens, _ := st.pushTokens(alice.ID)
	if len(tokens) != 2 || tokens[0].Token != "AABB" || tokens[0].AppID != "org.zulip.Zulip" {
		t.Fatalf("alice's tokens: got %+v, want AABB (org.zulip.Zulip) and Android-Token", tokens)
	}
	if err := st.removePushToken(alice.ID, pushFCM, "android-token"); !errors.Is(err, errTokenNotFound) {
		t.Errorf("FCM remove with other case: got %v, want errTokenNotFound", err)
	}
	must(st.removePushToken(alice.ID, pushAPNs, "aAbB")) // APNs: case-insensitive
	if err := st.removePushToken(alice.ID, pushAPNs, "aabb"); !errors.Is(err, errTokenNotFound) {
		t.Errorf("second remove: got %v, want errTokenNotFound", err)
	}
	if tokens, _ := st.pushTokens(bob.ID); len(tokens) != 1 {
		t.Errorf("bob's tokens after alice's removal: got %d, want 1", len(tokens))
	}
}

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
	if maxID, _ := st.maxMessageID(); maxID != 0 {
		t.Errorf("messages after a refused send: got max id %d, want 0", maxID)
	}
	mustSend(t, st, alice, secret)
}

// addSubscriptionForTest subscribes a user to a private channel, as its
// creator would be.
func (s *store) addSubscriptionForTest(u user, ch channel) error {
	return s.db.Update(func(tx *bbolt.Tx) error { return s.addSubscription(tx, u.ID, ch.ID) })
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
	st.addSubscriptionForTest(alice, secret)
	id := mustSend(t, st, alice, secret)
	st.addSubscriptionForTest(bob, secret)
	mustSend(t, st, bob, secret)
	st.db.Update(func(tx *bbolt.Tx) error { // bob leaves, keeping no unread
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

	st.db.View(func(tx *bbolt.Tx) error {
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
	st.db.Update(func(tx *bbolt.Tx) error { return addUnread(tx, 1, 2, all) })
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
	st.db.View(func(tx *bbolt.Tx) error {
		if got, _ := unreadIDs(tx, 1, 2); !slices.Equal(got, want) {
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
	st.db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketUnread).Bucket(unreadKey(1, 2)) != nil {
			t.Errorf("an emptied unread set keeps its bucket")
		}
		return nil
	})
}

func TestMintKey_KeepsAtMostTwentyKeysDroppingTheOldest(t *testing.T) {
	st := mustOpenStore(t)
	clock := time.Unix(1_700_000_000, 0)
	st.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	alice, first := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	var keys []string
	for range maxKeysPerAccount {
		k, err := st.mintKey(alice)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if _, err := st.authenticate(alice.Email, first); !errors.Is(err, errBadCredentials) {
		t.Errorf("the first key after %d more: got %v, want it revoked", maxKeysPerAccount, err)
	}
	for _, k := range keys {
		if _, err := st.authenticate(alice.Email, k); err != nil {
			t.Errorf("a recent key: got %v, want it to work", err)
		}
	}
}

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
				st.db.View(func(tx *bbolt.Tx) error {
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
		st.db.Update(func(tx *bbolt.Tx) error { return addUnread(tx, bob.ID, ch.ID, many) })
		for range 10 {
			wg.Go(func() { st.sendMessage(alice, channelRef{ID: ch.ID}, "t", "x", "") })
			wg.Go(func() { st.markChannelRead(bob, ch.ID) })
		}
		wg.Wait()
	}
	st.markChannelRead(bob, ch.ID)
	if got := mustUnread(t, st, bob, ch); len(got) != 0 {
		t.Errorf("bob's unread after a final mark: got %d", len(got))
	}
	st.quiesce()
	checkConsistency(t, st.db)
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
		st.db.View(func(tx *bbolt.Tx) error {
			got, err = st.channelByID(tx, ch.ID)
			return nil
		})
		return got, err
	}
	for range 2 { // decoded, then remembered
		if got, err := lookup(); err != nil || got != ch {
			t.Fatalf("got %+v, %v; want %+v", got, err, ch)
		}
	}

	changed := ch
	changed.Private, changed.Description = true, "now private"
	if err := st.update(func(tx *bbolt.Tx) error { return putJSON(tx.Bucket(bucketChannels), itob(ch.ID), changed) }); err != nil {
		t.Fatal(err)
	}
	if got, err := lookup(); err != nil || got != changed {
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

// authenticate answers from a cache of credentials: every change to an
// account or its keys must be seen by the next request, with the entry
// already cached when the change is made.
func TestCredentialCache_EveryAccountChangeIsSeenAtOnce(t *testing.T) {
	st := mustOpenStore(t)
	alice, key1 := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	mustAuth := func(what, email, key string) user {
		t.Helper()
		u, err := st.authenticate(email, key)
		if err != nil {
			t.Fatalf("%s: got %v, want success", what, err)
		}
		return u
	}
	mustFail := func(what, email, key string) {
		t.Helper()
		if _, err := st.authenticate(email, key); !errors.Is(err, errBadCredentials) {
			t.Fatalf("%s: got %v, want errBadCredentials", what, err)
		}
	}

	// An e-mail first seen unknown is cached as unknown; then it gets an
	// account.
	mustFail("carol before her account", "carol@example.com", key1)
	_, carolKey := mustCreateUser(t, st, "carol@example.com", roleMember, false)
	mustAuth("carol after user add", "Carol@example.com", carolKey)

	// A second device logs in: a new key, and the first still works.
	mustAuth("alice's first key", "alice@example.com", key1)
	key2, err := st.mintKey(alice)
	if err != nil {
		t.Fatal(err)
	}
	mustAuth("alice's minted key", "alice@example.com", key2)
	mustAuth("alice's first key after a login", "alice@example.com", key1)

	// user key: every earlier key stops working at once.
	key3, err := st.regenerateKey("alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	mustFail("alice's first key after regenerate", "alice@example.com", key1)
	mustFail("alice's minted key after regenerate", "alice@example.com", key2)
	mustAuth("alice's new key", "alice@example.com", key3)

	// user deactivate and activate: the server refuses an inactive account
	// on what authenticate answers.
	if err := st.setActive("alice@example.com", false); err != nil {
		t.Fatal(err)
	}
	if u := mustAuth("alice deactivated", "alice@example.com", key3); u.Active {
		t.Fatal("alice deactivated: authenticate answered an active account")
	}
	if err := st.setActive("ALICE@example.com", true); err != nil {
		t.Fatal(err)
	}
	if u := mustAuth("alice reactivated", "alice@example.com", key3); !u.Active {
		t.Fatal("alice reactivated: authenticate answered an inactive account")
	}
}
