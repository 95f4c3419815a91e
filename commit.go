package main

import (
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
)

// Group commit: one goroutine commits every write. It takes the first
// waiting write, then whatever else is already waiting (no timer: while a
// commit syncs the disk, the next group gathers), runs them all in one
// transaction and answers each caller once that transaction is synced.
// A function that fails is taken out and run alone, and the rest of its
// group runs again, so functions must be safe to run twice.

// maxCommitGroup bounds how many writes share one transaction.
const maxCommitGroup = 256

var errStoreClosed = errors.New("store is closed")

// commitStats counts groups and the writes in them, for tests and metrics.
type commitStats struct {
	groups, writes atomic.Int64
}

type commitRequest struct {
	fn   func(tx *bbolt.Tx) error
	done chan error
	// after runs in the committer once fn's change is committed, in
	// commit order: the store reports its changes through it.
	after func()
}

// committer runs until stop is closed, then closes finished.
func (s *store) committer() {
	defer close(s.finished)
	for {
		var first commitRequest
		select {
		case first = <-s.commits:
		case <-s.stop:
			return
		}
		group := []commitRequest{first}
		runtime.Gosched() // with one P, let writers that are ready queue up first
	gather:
		for len(group) < maxCommitGroup {
			select {
			case req := <-s.commits:
				group = append(group, req)
			default:
				break gather
			}
		}
		s.commitGroup(group)
	}
}

func (s *store) commitGroup(group []commitRequest) {
	s.commitStats.groups.Add(1)
	s.commitStats.writes.Add(int64(len(group)))
	if h := s.hooks.Load(); h != nil && h.commits != nil {
		start, writes := time.Now(), len(group)
		defer func() { h.commits(writes, time.Since(start)) }()
	}
	for len(group) > 0 {
		failed := -1
		err := s.updateGuarded(func(tx *bbolt.Tx) error {
			for i, req := range group {
				if err := req.fn(tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 { // committed (or the commit itself failed): everyone has the answer
			for _, req := range group {
				if err == nil && req.after != nil {
					req.after()
				}
				req.done <- err
			}
			return
		}
		alone := group[failed]
		err = s.updateGuarded(alone.fn)
		if err == nil && alone.after != nil {
			alone.after()
		}
		alone.done <- err
		group = append(group[:failed:failed], group[failed+1:]...)
	}
}

// commit hands fn to the committer and waits for its transaction; after
// (may be nil) runs in the committer once it is committed.
func (s *store) commit(fn func(tx *bbolt.Tx) error, after func()) error {
	req := commitRequest{fn: fn, done: make(chan error, 1), after: after}
	select {
	case s.commits <- req:
	case <-s.finished:
		return errStoreClosed
	}
	select {
	case err := <-req.done:
		return err
	case <-s.finished:
		// The committer may have answered just before it stopped.
		select {
		case err := <-req.done:
			return err
		default:
			return errStoreClosed
		}
	}
}
