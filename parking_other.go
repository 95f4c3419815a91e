//go:build !linux

package main

import "errors"

// Parking needs to be told when a parked poll's client goes away
// (parking_linux.go's epoll set); elsewhere a waiting poll waits in its
// handler.
const canPark = false

type closeWatcher struct{}

func newCloseWatcher(func(*parkedPoll)) (*closeWatcher, error) {
	return nil, errors.New("parking polls needs Linux")
}

func (*closeWatcher) watch(*parkedPoll) error { return errors.New("parking polls needs Linux") }
func (*closeWatcher) unwatch(*parkedPoll)     {}
func (*closeWatcher) close()                  {}
