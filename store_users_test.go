package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

func TestAuthenticate_KeysHashedAtRestAndMatchedByEmailCaseInsensitively(t *testing.T) {
	st := mustOpenStore(t)
	alice, key := mustCreateUser(t, st, "Alice@Example.com", roleMember, false)
	mustCreateUser(t, st, "bob@example.com", roleMember, false)

	if got, err := st.keys.authenticate("alice@EXAMPLE.com", key); err != nil || got.ID != alice.ID {
		t.Errorf("right key: got (%d, %v), want (%d, nil)", got.ID, err, alice.ID)
	}
	wrong := newAPIKey()
	for _, c := range []struct{ name, email, key string }{
		{"wrong key", "alice@example.com", wrong},
		{"unknown e-mail", "nobody@example.com", key},
		{"another account's e-mail", "bob@example.com", key},
	} {
		if _, err := st.keys.authenticate(c.email, c.key); !errors.Is(err, errBadCredentials) {
			t.Errorf("%s: got %v, want errBadCredentials", c.name, err)
		}
	}
	mustView(t, st, func(tx *bbolt.Tx) error {
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
	for _, u := range []user{alice, bob} {
		if err := st.addPushToken(u.ID, pushToken{Kind: pushAPNs, Token: "aabb"}); err != nil {
			t.Fatal(err)
		}
	}

	newKey, err := st.regenerateKey("ALICE@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.keys.authenticate("alice@example.com", oldKey); !errors.Is(err, errBadCredentials) {
		t.Errorf("old key after regenerate: got %v, want errBadCredentials", err)
	}
	if _, err := st.keys.authenticate("alice@example.com", newKey); err != nil {
		t.Errorf("new key: got %v, want nil", err)
	}
	if tokens := mustPushTokens(t, st, alice.ID); len(tokens) != 0 {
		t.Errorf("alice's tokens after regenerate: got %d, want 0", len(tokens))
	}
	if tokens := mustPushTokens(t, st, bob.ID); len(tokens) != 1 {
		t.Errorf("bob's tokens: got %d, want 1", len(tokens))
	}
	if _, err := st.keys.authenticate("bob@example.com", bobKey); err != nil {
		t.Errorf("bob's key: got %v, want nil", err)
	}
}

func TestCreateUser_EmailUniqueCaseInsensitively(t *testing.T) {
	st := mustOpenStore(t)
	mustCreateUser(t, st, "alice@example.com", roleMember, false)
	if _, _, err := st.createUser("ALICE@example.com", "A", roleMember, false); !errors.Is(err, errEmailTaken) {
		t.Errorf("second account with the same e-mail: got %v, want errEmailTaken", err)
	}
	n, err := st.userCount()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("accounts: got %d, want 1", n)
	}
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
	if _, err := st.keys.authenticate(alice.Email, first); !errors.Is(err, errBadCredentials) {
		t.Errorf("the first key after %d more: got %v, want it revoked", maxKeysPerAccount, err)
	}
	for _, k := range keys {
		if _, err := st.keys.authenticate(alice.Email, k); err != nil {
			t.Errorf("a recent key: got %v, want it to work", err)
		}
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
		u, err := st.keys.authenticate(email, key)
		if err != nil {
			t.Fatalf("%s: got %v, want success", what, err)
		}
		return u
	}
	mustFail := func(what, email, key string) {
		t.Helper()
		if _, err := st.keys.authenticate(email, key); !errors.Is(err, errBadCredentials) {
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

func (s *store) userCount() (int, error) {
	n := 0
	err := s.db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketUsers).Stats().KeyN
		return nil
	})
	return n, err
}

// The accounts are decoded once per change: every write of one
// (created, deactivated) is seen by the next read, and a read
// transaction of an older state sees its own accounts, not the copy's,
// while later reads still see the latest.
func TestUserDirectory_EveryChangeIsSeenAndAnOlderReadSeesItsOwn(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	countActive := func() int {
		t.Helper()
		n, err := st.activeUserCount()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := countActive(); got != 1 {
		t.Fatalf("active users: got %d, want 1", got)
	}
	// A read transaction as of one account: a copy of the file now, so
	// that holding it open does not stand in the writer's way.
	snapshot := filepath.Join(t.TempDir(), "snapshot.db")
	if err := st.db.View(func(tx *bbolt.Tx) error { return tx.CopyFile(snapshot, 0o600) }); err != nil {
		t.Fatal(err)
	}
	copyDB, err := bbolt.Open(snapshot, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer copyDB.Close()
	old, err := copyDB.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Rollback()

	mustCreateUser(t, st, "bob@example.com", roleMember, false)
	if got := countActive(); got != 2 {
		t.Fatalf("after a new account: got %d active, want 2", got)
	}
	if users, _, _, err := st.directory.of(old); err != nil || len(users) != 1 {
		t.Fatalf("the older read transaction: got %d accounts (%v), want the 1 it sees", len(users), err)
	}
	if got := countActive(); got != 2 {
		t.Errorf("after the older read decoded: got %d active, want still 2", got)
	}
	if err := st.setActive(alice.Email, false); err != nil {
		t.Fatal(err)
	}
	if got := countActive(); got != 1 {
		t.Errorf("after a deactivation: got %d active, want 1", got)
	}
	users, err := st.users()
	if err != nil || len(users) != 2 || users[0].Active {
		t.Errorf("users after the deactivation: got %+v (%v), want alice inactive", users, err)
	}
}
