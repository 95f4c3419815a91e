package main

// The web page's login sessions (web.go): kept in the database, so that
// a browser stays logged in across a restart of the server, and stored
// by a hash of their id, so that a copy of the file logs nobody in.

import (
	"encoding/binary"
	"slices"
	"time"

	"go.etcd.io/bbolt"
)

// webSession is a session's stored value.
type webSession struct {
	userID  uint64
	expires int64  // Unix seconds
	csrf    string // the token the page sends in X-CSRFToken
}

func (ws webSession) encode() []byte {
	v := make([]byte, 16, 16+len(ws.csrf))
	binary.BigEndian.PutUint64(v, ws.userID)
	binary.BigEndian.PutUint64(v[8:], uint64(ws.expires))
	return append(v, ws.csrf...)
}

func decodeWebSession(v []byte) (webSession, bool) {
	if len(v) < 16 {
		return webSession{}, false
	}
	return webSession{binary.BigEndian.Uint64(v), int64(binary.BigEndian.Uint64(v[8:])), string(v[16:])}, true
}

// startSession stores a new session for the account, dropping the
// sessions that have expired (a login is rare; the bucket stays small).
func (s *store) startSession(id string, ws webSession) error {
	now := s.now().Unix()
	return s.update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketUsers).Get(itob(ws.userID)) == nil {
			return errNoSuchUser
		}
		b := tx.Bucket(bucketWebSessions)
		var stale [][]byte
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if old, ok := decodeWebSession(v); !ok || old.expires <= now {
				stale = append(stale, slices.Clone(k))
			}
		}
		for _, k := range stale {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return b.Put(s.keys.hash(id), ws.encode())
	})
}

// sessionUser answers the account and session behind a session id;
// errNoSuchSession when it is unknown or expired.
func (s *store) sessionUser(id string, now time.Time) (user, webSession, error) {
	var u user
	var ws webSession
	err := s.view(func(tx *bbolt.Tx) error {
		var ok bool
		ws, ok = decodeWebSession(tx.Bucket(bucketWebSessions).Get(s.keys.hash(id)))
		if !ok || ws.expires <= now.Unix() {
			return errNoSuchSession
		}
		return getJSON(tx.Bucket(bucketUsers), itob(ws.userID), &u)
	})
	return u, ws, err
}

// endSession forgets a session (logout); an unknown one is already gone.
func (s *store) endSession(id string) error {
	key := s.keys.hash(id)
	return s.update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketWebSessions).Delete(key) })
}

// endUserSessionsTx forgets every web session of the account: a new
// password or a new key logs every browser out, as a stolen session
// must not outlive the credentials it was opened with. Sessions are
// stored by a hash of their id, so this walks them all (a login is rare;
// the bucket stays small).
func endUserSessionsTx(tx *bbolt.Tx, userID uint64) error {
	b := tx.Bucket(bucketWebSessions)
	var gone [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if ws, ok := decodeWebSession(v); !ok || ws.userID == userID {
			gone = append(gone, slices.Clone(k))
		}
	}
	for _, k := range gone {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
