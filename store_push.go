package main

// The store's push tokens, keyed by user, kind and token.

import (
	"encoding/json"
	"strings"

	"go.etcd.io/bbolt"
)

func pushTokenKey(userID uint64, kind pushKind, token string) []byte {
	if kind == pushAPNs {
		token = strings.ToLower(token) // Apple tokens are matched case-insensitively
	}
	return append(append(itob(userID), byte(kind)), token...)
}

// addPushToken registers a token for the user; registering it again
// changes nothing.
func (s *store) addPushToken(userID uint64, t pushToken) error {
	return s.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPushTokens)
		k := pushTokenKey(userID, t.Kind, t.Token)
		if b.Get(k) != nil {
			return nil
		}
		t.Created = s.now().Unix()
		if err := s.queueBouncerTx(tx, "register", userID, t); err != nil {
			return err
		}
		return putJSON(b, k, t)
	})
}

// removePushToken removes the user's token; another user's token of the
// same text is not the caller's, so it "does not exist".
func (s *store) removePushToken(userID uint64, kind pushKind, token string) error {
	return s.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPushTokens)
		k := pushTokenKey(userID, kind, token)
		v := b.Get(k)
		if v == nil {
			return errTokenNotFound
		}
		var t pushToken
		if err := json.Unmarshal(v, &t); err != nil {
			return err
		}
		if err := s.queueBouncerTx(tx, "unregister", userID, t); err != nil {
			return err
		}
		return b.Delete(k)
	})
}
