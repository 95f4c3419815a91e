//go:build !linux

package conns

import (
	"errors"
	"time"
)

// CanPark tells whether requests can park here: parking needs to be
// told when a parked request's client goes away (watcher_linux.go's epoll
// set); elsewhere a waiting request waits in its handler.
const CanPark = false

type closeWatcher struct{}

func newCloseWatcher() (*closeWatcher, error) {
	return nil, errors.New("parking needs Linux")
}

// watchState is what a connection keeps for its watches: nothing here.
type watchState struct{}

func (*closeWatcher) watch(*trackedConn, bool, time.Duration, func()) (uint64, error) {
	return 0, errors.New("parking needs Linux")
}
func (*closeWatcher) unwatch(uint64) bool           { return false }
func (*closeWatcher) awaitingConns() []*trackedConn { return nil }
func (*closeWatcher) close()                        {}
