//go:build linux

package conns

import (
	"errors"
	"sync"
	"syscall"
	"time"
)

// closeWatcher is an epoll set of connections zulite holds without a
// goroutine (parking.go), waited on by one goroutine: a parked request's,
// to be told when its client goes away (or sends anything), as net/http's
// background read tells a waiting handler; an answered one's, to be told
// when the client's next request comes. Each watch is told once.
type closeWatcher struct {
	epfd   int
	closed chan struct{}

	mu      sync.Mutex
	next    uint32
	watches map[uint32]watch
}

// watch is a connection watched, and what to do when it is ready;
// awaiting: an answered one's, waiting for the client's next request.
type watch struct {
	conn     *trackedConn
	ready    func()
	awaiting bool
}

// CanPark tells whether requests can park here: Linux has the epoll set.
const CanPark = true

func newCloseWatcher() (*closeWatcher, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &closeWatcher{epfd: fd, closed: make(chan struct{}), watches: map[uint32]watch{}}
	go w.run()
	return w, nil
}

// watch adds the connection to the set: ready runs (on the watcher's
// goroutine: it must not wait) when the client sends something or goes
// away. It answers the watch's id, for unwatch.
func (w *closeWatcher) watch(conn *trackedConn, awaiting bool, ready func()) (uint32, error) {
	select {
	case <-w.closed: // its epoll fd may be closed, its number another file's
		return 0, errors.New("the watcher is closed")
	default:
	}
	raw, ok := conn.Conn.(syscall.Conn)
	if !ok {
		return 0, errors.New("not a socket")
	}
	rc, err := raw.SyscallConn()
	if err != nil {
		return 0, err
	}
	w.mu.Lock()
	w.next++
	for _, taken := w.watches[w.next]; taken || w.next == 0; _, taken = w.watches[w.next] {
		w.next++
	}
	id := w.next
	w.watches[id] = watch{conn, ready, awaiting}
	w.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(id)}
	if cerr := rc.Control(func(fd uintptr) { err = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		w.forget(id)
		return 0, err
	}
	return id, nil
}

// unwatch takes the connection out of the set; false when its watch was
// told already (or is being told).
func (w *closeWatcher) unwatch(id uint32) bool {
	wt, ok := w.forget(id)
	if !ok {
		return false
	}
	select {
	case <-w.closed:
		return true
	default:
	}
	w.remove(wt.conn)
	return true
}

// remove takes the connection out of the epoll set.
func (w *closeWatcher) remove(conn *trackedConn) {
	if rc, err := conn.Conn.(syscall.Conn).SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil) })
	}
}

func (w *closeWatcher) forget(id uint32) (watch, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, ok := w.watches[id]
	delete(w.watches, id)
	return wt, ok
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
			time.Sleep(time.Second) // not expected: parked requests are still answered by their server (events, timeouts)
			continue
		}
		for _, ev := range events[:n] {
			// The connection stays in the set, told no more (one shot),
			// until whoever it is handed to takes it out.
			if wt, ok := w.forget(uint32(ev.Fd)); ok {
				w.remove(wt.conn)
				wt.ready()
			}
		}
	}
}

// awaitingConns answers the connections watched for a next request, taken
// out of the set, for shutdown to close.
func (w *closeWatcher) awaitingConns() []*trackedConn {
	w.mu.Lock()
	var conns []*trackedConn
	for id, wt := range w.watches {
		if wt.awaiting {
			conns = append(conns, wt.conn)
			delete(w.watches, id)
		}
	}
	w.mu.Unlock()
	return conns
}

func (w *closeWatcher) close() {
	select {
	case <-w.closed:
	default:
		close(w.closed)
	}
}
