//go:build linux

package main

import (
	"errors"
	"sync"
	"syscall"
	"time"
)

// closeWatcher tells when a parked poll's client goes away (or sends
// anything), as net/http's background read tells a waiting handler: an
// epoll set of the parked connections, waited on by one goroutine. The
// hub then answers the poll at once, so that its queue no longer counts
// as polled (push notifications go to a user whose app has gone) and its
// connection is closed.
type closeWatcher struct {
	epfd   int
	gone   func(*parkedPoll)
	closed chan struct{}

	mu    sync.Mutex
	next  uint32
	polls map[uint32]*parkedPoll
}

const canPark = true

func newCloseWatcher(gone func(*parkedPoll)) (*closeWatcher, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &closeWatcher{epfd: fd, gone: gone, closed: make(chan struct{}), polls: map[uint32]*parkedPoll{}}
	go w.run()
	return w, nil
}

// watch adds a parked poll's connection to the set.
func (w *closeWatcher) watch(p *parkedPoll) error {
	raw, ok := p.tracked.Conn.(syscall.Conn)
	if !ok {
		return errors.New("not a socket")
	}
	rc, err := raw.SyscallConn()
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.next++
	for w.polls[w.next] != nil || w.next == 0 {
		w.next++
	}
	p.watchID = w.next
	w.polls[p.watchID] = p
	w.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(p.watchID)}
	if cerr := rc.Control(func(fd uintptr) { err = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		w.forget(p)
	}
	return err
}

// unwatch takes the connection out of the set, before it is answered.
func (w *closeWatcher) unwatch(p *parkedPoll) {
	if !w.forget(p) {
		return // the watcher has it, or had it: it left the set then
	}
	if raw, ok := p.tracked.Conn.(syscall.Conn); ok {
		if rc, err := raw.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil) })
		}
	}
}

// forget drops the poll from the map; false when it was not there.
func (w *closeWatcher) forget(p *parkedPoll) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.polls[p.watchID] != p {
		return false
	}
	delete(w.polls, p.watchID)
	return true
}

func (w *closeWatcher) run() {
	defer syscall.Close(w.epfd)
	events := make([]syscall.EpollEvent, 256)
	for {
		select {
		case <-w.closed:
			return
		default:
		}
		n, err := syscall.EpollWait(w.epfd, events, 1000) // a second at most, to see closed
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			time.Sleep(time.Second) // not expected: polls are still answered by events and heartbeats
			continue
		}
		for _, ev := range events[:n] {
			w.mu.Lock()
			p := w.polls[uint32(ev.Fd)]
			delete(w.polls, uint32(ev.Fd))
			w.mu.Unlock()
			if p != nil {
				w.gone(p)
			}
		}
	}
}

func (w *closeWatcher) close() {
	select {
	case <-w.closed:
	default:
		close(w.closed)
	}
}
