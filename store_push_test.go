package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"go.etcd.io/bbolt"
)

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

	tokens := mustPushTokens(t, st, alice.ID)
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
	if tokens := mustPushTokens(t, st, bob.ID); len(tokens) != 1 {
		t.Errorf("bob's tokens after alice's removal: got %d, want 1", len(tokens))
	}
}

// Without a push bouncer, a removal neither needs nor reads the token's
// record (the committer looks the key up and deletes it), and a token
// that only begins with the one named is another token.
func TestRemovePushToken_LooksUpTheKeyOnly(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	if err := st.addPushToken(alice.ID, pushToken{Kind: pushAPNs, Token: "aabbcc"}); err != nil {
		t.Fatal(err)
	}
	if err := st.removePushToken(alice.ID, pushAPNs, "aabb"); !errors.Is(err, errTokenNotFound) {
		t.Errorf("removing aabb while aabbcc is stored: got %v, want errTokenNotFound", err)
	}
	mustUpdate(t, st, func(tx *bbolt.Tx) error { // a record this zulite cannot decode
		return tx.Bucket(bucketPushTokens).Put(pushTokenKey(alice.ID, pushAPNs, "ddee"), []byte("not json"))
	})
	if err := st.removePushToken(alice.ID, pushAPNs, "ddee"); err != nil {
		t.Errorf("removing a token whose record is not JSON, no bouncer: got %v, want nil", err)
	}
	mustView(t, st, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPushTokens)
		if b.Get(pushTokenKey(alice.ID, pushAPNs, "ddee")) != nil || b.Get(pushTokenKey(alice.ID, pushAPNs, "aabbcc")) == nil {
			t.Errorf("after the removals: got ddee kept or aabbcc gone, want ddee gone and aabbcc kept")
		}
		return nil
	})
}

func (s *store) pushTokens(userID uint64) ([]pushToken, error) {
	var list []pushToken
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := itob(userID)
		c := tx.Bucket(bucketPushTokens).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var t pushToken
			if err := json.Unmarshal(v, &t); err != nil {
				return err
			}
			list = append(list, t)
		}
		return nil
	})
	return list, err
}
