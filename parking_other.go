//go:build !linux

package main

import "errors"

// Parking needs to be told when a parked poll's client goes away
// (parking_linux.go's epoll set); elsewhere a waiting poll waits in its
// handler.
const canPark = false

type closeWatcher struct{}

func newCloseWatcher() (*closeWatcher, error) {
	return nil, errors.New("parking polls needs Linux")
}

func (*closeWatcher) watch(*trackedConn, bool, func()) (uint32, error) {
	return 0, errors.New("parking polls needs Linux")
}
func (*closeWatcher) unwatch(uint32) bool           { return false }
func (*closeWatcher) awaitingConns() []*trackedConn { return nil }
func (*closeWatcher) close()                        {}
