package main

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Open connections are bounded (--max-connections): each costs a
// goroutine and buffers, and one client holding thousands with partial
// headers used to cost hundreds of MiB. Past the bound, or past an
// address's share of it, the oldest connection that no handler is
// serving (silent since accepted, still sending its headers, or idle
// between requests) is closed to make room; when there is none, the
// newcomer is. A request being served, a waiting long poll among them,
// is never cut off for room. Trusted proxies (--trusted-proxies) carry
// many clients, so they count only against the bound, not against an
// address's share.

const defaultMaxConnections = 4096

// connShare is how many connections one address may hold: a quarter of
// the bound (an office behind one NAT address may hold hundreds: an app
// keeps 1 or 2 and a browser up to 6), and at least 16.
func connShare(bound int) int { return max(16, bound/4) }

type trackedConn struct {
	net.Conn
	addr    netip.Addr
	opened  time.Time
	serving atomic.Int32 // handlers running on it (HTTP/2 runs several)
	limiter *connLimiter
	once    sync.Once
	// parked: a poll on it has parked (parking.go): when net/http lets
	// go of it (Hijack), it stays counted here. pending is what the
	// client sent after the poll, read again first.
	parked  atomic.Bool
	pending []byte
}

func (c *trackedConn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.limiter.forget(c) })
	return c.Conn.Close()
}

// connLimiter is a listener that admits connections within the bounds.
type connLimiter struct {
	net.Listener
	max, share int
	trusted    func(netip.Addr) bool
	refused    atomic.Int64 // newcomers closed, and quiet ones closed for room

	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	byAddr map[netip.Addr]int
}

func newConnLimiter(ln net.Listener, max int, trusted func(netip.Addr) bool) *connLimiter {
	return &connLimiter{Listener: ln, max: max, share: connShare(max), trusted: trusted,
		open: map[*trackedConn]struct{}{}, byAddr: map[netip.Addr]int{}}
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &trackedConn{Conn: conn, opened: time.Now(), limiter: l}
		if ap, err := netip.ParseAddrPort(conn.RemoteAddr().String()); err == nil {
			c.addr = ap.Addr().Unmap()
		}
		if l.admit(c) {
			return c, nil
		}
		l.refused.Add(1)
		conn.Close()
	}
}

// admit counts c in, closing the oldest quiet connection to make room
// when a bound is reached; false when there is no room to make.
func (l *connLimiter) admit(c *trackedConn) bool {
	l.mu.Lock()
	var evict *trackedConn
	ok := true
	if !l.trusted(c.addr) && l.byAddr[c.addr] >= l.share {
		evict = l.oldestQuiet(func(o *trackedConn) bool { return o.addr == c.addr })
		ok = evict != nil
	} else if len(l.open) >= l.max {
		evict = l.oldestQuiet(func(*trackedConn) bool { return true })
		ok = evict != nil
	}
	if evict != nil {
		l.removeLocked(evict)
	}
	if ok {
		l.open[c] = struct{}{}
		l.byAddr[c.addr]++
	}
	l.mu.Unlock()
	if evict != nil {
		l.refused.Add(1)
		evict.Close()
	}
	return ok
}

// oldestQuiet is the longest-open connection among those picked that no
// handler is serving.
func (l *connLimiter) oldestQuiet(pick func(*trackedConn) bool) *trackedConn {
	var oldest *trackedConn
	for c := range l.open {
		if c.serving.Load() == 0 && pick(c) && (oldest == nil || c.opened.Before(oldest.opened)) {
			oldest = c
		}
	}
	return oldest
}

// count is how many connections are open: parked polls' and those
// waiting for their next request included (parking.go).
func (l *connLimiter) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

func (l *connLimiter) forget(c *trackedConn) {
	l.mu.Lock()
	l.removeLocked(c)
	l.mu.Unlock()
}

func (l *connLimiter) removeLocked(c *trackedConn) {
	if _, ok := l.open[c]; !ok {
		return
	}
	delete(l.open, c)
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
}

// connState is http.Server.ConnState's hook: a hijacked connection is
// no longer the server's to count, unless it is a parked poll's.
func (l *connLimiter) connState(conn net.Conn, state http.ConnState) {
	if c := trackedOf(conn); c != nil && state == http.StateHijacked && !c.parked.Load() {
		c.once.Do(func() { l.forget(c) })
	}
}

func trackedOf(conn net.Conn) *trackedConn {
	if t, ok := conn.(*tls.Conn); ok {
		conn = t.NetConn()
	}
	c, _ := conn.(*trackedConn)
	return c
}

type connKey struct{}

// connContext is http.Server.ConnContext's hook: it lets serving find a
// request's connection.
func connContext(ctx context.Context, conn net.Conn) context.Context {
	if c := trackedOf(conn); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// serving marks a request's connection busy while next serves it, from
// the moment the whole request has arrived: until its body is read to
// the end, the connection is as quiet as one still sending its headers,
// and may be closed for room. Its body is given strangerBodyWait (or
// bodyWait, if shorter) until the request proves an account (bodyTrusted).
func serving(next http.Handler, bodyWait time.Duration) http.Handler {
	wait := strangerBodyWait
	if bodyWait > 0 {
		wait = min(wait, bodyWait)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().Value(connKey{}).(*trackedConn)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			c.serving.Add(1)
			defer c.serving.Add(-1)
			next.ServeHTTP(w, r)
			return
		}
		b := &arrivingBody{ReadCloser: r.Body, conn: c, left: r.ContentLength, start: time.Now()}
		defer b.served()
		http.NewResponseController(w).SetReadDeadline(b.start.Add(wait))
		r.Body = b
		next.ServeHTTP(w, r)
	})
}

// strangerBodyWait is how long a request without credentials may take to
// send its body, --read-timeout if shorter.
const strangerBodyWait = 10 * time.Second

// arrivingBody is a request body still on its way: its connection counts
// as served once the body has been read to its end.
type arrivingBody struct {
	io.ReadCloser
	conn    *trackedConn
	left    int64 // bytes still to come; -1 when the length is not known
	start   time.Time
	arrived atomic.Bool
}

func (b *arrivingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.left > 0 {
		b.left -= int64(min(int64(n), b.left))
	}
	if err == io.EOF || b.left == 0 {
		b.arrive()
	}
	return n, err
}

func (b *arrivingBody) arrive() {
	if b.arrived.CompareAndSwap(false, true) {
		b.conn.serving.Add(1)
	}
}

// served ends the request: the connection is no longer served for it.
func (b *arrivingBody) served() {
	if b.arrived.Load() {
		b.conn.serving.Add(-1)
	}
}

// bodyTrusted gives the body of a request that authenticated as an
// account the whole of --read-timeout from its start, as a member's
// upload over a slow link needs (no deadline when bodyWait is 0).
func bodyTrusted(w http.ResponseWriter, r *http.Request, bodyWait time.Duration) {
	if b, ok := r.Body.(*arrivingBody); ok && !b.arrived.Load() {
		var deadline time.Time // none, when the server sets none
		if bodyWait > 0 {
			deadline = b.start.Add(bodyWait)
		}
		http.NewResponseController(w).SetReadDeadline(deadline)
	}
}
