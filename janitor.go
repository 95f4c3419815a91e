package main

import (
	"go.etcd.io/bbolt"
)

// The janitor deletes unread sets that were marked read (moved to
// bucketUnreadTrash by removeAllUnread), one holder a transaction, through
// the committer like any write. Deleting a set of a million ids visits
// its pages; doing it here keeps that off the request that marked it.

// janitor runs until the store stops, waking when something was trashed
// (and once at start, for what a previous run left).
func (s *store) janitor() {
	defer close(s.swept)
	s.wakeJanitor()
	for {
		select {
		case <-s.stop:
			return
		case <-s.trashed:
		}
		for s.sweepOne() {
			select {
			case <-s.stop:
				return
			default:
			}
		}
	}
}

// wakeJanitor tells the janitor there may be trash, without waiting.
func (s *store) wakeJanitor() {
	select {
	case s.trashed <- struct{}{}:
	default:
	}
}

// sweepOne deletes a trashed holder; false when there was none (or the
// store is closing).
func (s *store) sweepOne() bool {
	if s.janitorOff.Load() {
		return false
	}
	found := false
	s.view(func(tx *bbolt.Tx) error { // most wakes find nothing: no write then
		k, _ := tx.Bucket(bucketUnreadTrash).Cursor().First()
		found = k != nil
		return nil
	})
	if !found {
		return false
	}
	err := s.update(func(tx *bbolt.Tx) error {
		trash := tx.Bucket(bucketUnreadTrash)
		k, _ := trash.Cursor().First()
		found = k != nil
		if !found {
			return nil
		}
		return trash.DeleteBucket(k)
	})
	return err == nil && found
}
