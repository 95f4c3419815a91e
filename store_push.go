package main

// The store's push tokens, keyed by user, kind and token.

import (
	"bytes"
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
// changes nothing. The key and the record are made before the commit,
// which only looks the key up and writes.
func (s *store) addPushToken(userID uint64, t pushToken) error {
	k := pushTokenKey(userID, t.Kind, t.Token)
	t.Created = s.now().Unix()
	record, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return s.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPushTokens)
		if b.Get(k) != nil {
			return nil
		}
		if err := s.queueBouncerTx(tx, "register", userID, t); err != nil {
			return err
		}
		return b.Put(k, record)
	})
}

// removePushToken removes the user's token; another user's token of the
// same text is not the caller's, so it "does not exist". The committer
// runs one lookup and one delete: the key is made before, and the
// token's record is decoded only when its removal is to be forwarded to
// the push bouncer.
func (s *store) removePushToken(userID uint64, kind pushKind, token string) error {
	k := pushTokenKey(userID, kind, token)
	return s.update(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketPushTokens).Cursor()
		if found, v := c.Seek(k); !bytes.Equal(found, k) {
			return errTokenNotFound
		} else if bouncerRegistered(tx) {
			var t pushToken
			if err := json.Unmarshal(v, &t); err != nil {
				return err
			}
			if err := s.queueBouncerTx(tx, "unregister", userID, t); err != nil {
				return err
			}
		}
		return c.Delete()
	})
}
