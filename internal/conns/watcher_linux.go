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

	mu       sync.Mutex
	next     uint64 // the last id given; never given again
	watches  map[uint64]watch
	awaiting int // watches of answered connections, which idle out
}

// watch is a connection watched, and what to do when it is ready;
// awaiting: an answered one's, waiting for the client's next request,
// closed by the watcher if none comes by idleBy (zero: never).
type watch struct {
	conn     *trackedConn
	ready    func()
	awaiting bool
	idleBy   time.Time
}

// idleSweepEvery is how often the watcher looks for answered connections
// past their idle timeout: a sweep of the set, instead of a timer made
// and stopped for every answer.
const idleSweepEvery = time.Second

// watchState is what a connection keeps for its watches, made at its
// first: its raw connection and the epoll call, so that the watch of
// each answer and each parked request allocates nothing.
type watchState struct {
	raw     syscall.RawConn
	ev      syscall.EpollEvent
	err     error
	control func(fd uintptr)
}

// CanPark tells whether requests can park here: Linux has the epoll set.
const CanPark = true

func newCloseWatcher() (*closeWatcher, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &closeWatcher{epfd: fd, closed: make(chan struct{}), watches: map[uint64]watch{}}
	go w.run()
	return w, nil
}

// watch adds the connection to the set: ready runs (on the watcher's
// goroutine: it must not wait) when the client sends something or goes
// away. It answers the watch's id, for unwatch.
//
// A connection, once added, stays in the set until it is closed (which
// takes it out): each watch is one shot, and the next one re-arms it
// with its own id (EPOLL_CTL_MOD), so a delivery's cycle (parked,
// answered, its next request, parked) costs two epoll calls, not four.
// An id is never used twice, so a one shot left armed by an unwatch
// that did not disarm it tells of nothing but a forgotten id, which the
// watcher drops.
func (w *closeWatcher) watch(conn *trackedConn, awaiting bool, idle time.Duration, ready func()) (uint64, error) {
	select {
	case <-w.closed: // its epoll fd may be closed, its number another file's
		return 0, errors.New("the watcher is closed")
	default:
	}
	ws := &conn.watch
	if ws.raw == nil {
		raw, ok := conn.Conn.(syscall.Conn)
		if !ok {
			return 0, errors.New("not a socket")
		}
		rc, err := raw.SyscallConn()
		if err != nil {
			return 0, err
		}
		ws.raw = rc
		ws.control = func(fd uintptr) {
			// ADD the first time, MOD after; the other when the first
			// says it is not (EEXIST: a watch that fired before it
			// marked the connection; ENOENT: not expected).
			add, mod := syscall.EPOLL_CTL_ADD, syscall.EPOLL_CTL_MOD
			if conn.watched.Load() {
				add, mod = mod, add
			}
			err := syscall.EpollCtl(w.epfd, add, int(fd), &ws.ev)
			if err == syscall.EEXIST || err == syscall.ENOENT {
				err = syscall.EpollCtl(w.epfd, mod, int(fd), &ws.ev)
			}
			if err == nil {
				conn.watched.Store(true)
			}
			ws.err = err
		}
	}
	wt := watch{conn: conn, ready: ready, awaiting: awaiting}
	if awaiting && idle > 0 {
		wt.idleBy = time.Now().Add(idle)
	}
	w.mu.Lock()
	w.next++
	id := w.next
	w.watches[id] = wt
	if awaiting {
		w.awaiting++
	}
	w.mu.Unlock()
	// The id is the event's 64 bits of data (Fd and Pad on every Linux
	// port's EpollEvent). A connection is watched by one goroutine at a
	// time (parked, answered, its next request read, parked again), so
	// its state needs no lock.
	ws.ev = syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
	ws.err = nil
	err := ws.raw.Control(ws.control)
	if err == nil {
		err = ws.err
	}
	if err != nil {
		w.forget(id)
		return 0, err
	}
	return id, nil
}

// unwatch ends the watch; false when it was told already (or is being
// told). The connection stays in the set, its one shot perhaps still
// armed with the forgotten id (watch).
func (w *closeWatcher) unwatch(id uint64) bool {
	_, ok := w.forget(id)
	return ok
}

func (w *closeWatcher) forget(id uint64) (watch, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, ok := w.watches[id]
	if ok {
		delete(w.watches, id)
		if wt.awaiting {
			w.awaiting--
		}
	}
	return wt, ok
}

func (w *closeWatcher) run() {
	defer syscall.Close(w.epfd)
	events := make([]syscall.EpollEvent, 256)
	swept := time.Now()
	for {
		select {
		case <-w.closed:
			return
		default:
		}
		if now := time.Now(); now.Sub(swept) >= idleSweepEvery {
			swept = now
			w.closeIdle(now)
		}
		n, err := syscall.EpollWait(w.epfd, events, int(idleSweepEvery/time.Millisecond)) // to see closed, and to sweep
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			time.Sleep(time.Second) // not expected: parked requests are still answered by their server (events, timeouts)
			continue
		}
		for _, ev := range events[:n] {
			// The connection stays in the set, told no more (one shot)
			// until its next watch re-arms it.
			if wt, ok := w.forget(uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32); ok {
				wt.ready()
			}
		}
	}
}

// closeIdle closes the answered connections whose client sent no next
// request by their idle timeout, as net/http closes an idle one.
func (w *closeWatcher) closeIdle(now time.Time) {
	var idle []*trackedConn
	w.mu.Lock()
	if w.awaiting > 0 {
		for id, wt := range w.watches {
			if wt.awaiting && !wt.idleBy.IsZero() && now.After(wt.idleBy) {
				idle = append(idle, wt.conn)
				delete(w.watches, id)
				w.awaiting--
			}
		}
	}
	w.mu.Unlock()
	for _, c := range idle {
		c.Close()
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
			w.awaiting--
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
