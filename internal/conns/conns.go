package conns

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
//
// A request is being served once it has arrived whole (its body read to
// the end) and proved an account (Admitted): until then its connection is
// as quiet as one still sending its headers. So strangers, however they
// hold a connection (a body that never comes, an answer never read),
// give way to members; and a body sent without credentials has
// StrangerBodyWait.

// DefaultMax is the bound zulite serves with unless told otherwise
// (--max-connections).
const DefaultMax = 4096

// Share is how many connections one address may hold: a quarter of
// the bound (an office behind one NAT address may hold hundreds: an app
// keeps 1 or 2 and a browser up to 6), and at least 16.
func Share(bound int) int { return max(16, bound/4) }

// trackedConn is a connection the limiter counts.
type trackedConn struct {
	net.Conn
	addr    netip.Addr
	opened  time.Time
	serving atomic.Int32 // requests being served on it (HTTP/2 serves several)
	evicted bool         // closed for room; under the limiter's lock
	limiter *Limiter
	once    sync.Once
	// parked: its request has parked (parking.go): when net/http lets
	// go of it (Hijack), it stays counted here. pending is what the
	// client sent after that request, read again first.
	parked  atomic.Bool
	pending []byte
	// watched: it is in the close watcher's epoll set (watcher_linux.go),
	// from its first watch until it is closed; watch is what its watches
	// reuse.
	watched atomic.Bool
	watch   watchState
	// next serves its next request once it comes (next.go); nextCtx and
	// remote are that request's context and RemoteAddr; each made once.
	next    func()
	nextCtx context.Context
	remote  string
	// Deadlines, set and read by whoever holds the connection: inNext
	// while serveNext serves a request read on it; httpDeadlines when
	// net/http served the request that parked, and may have left a read
	// deadline on it; writeBy is the write deadline writeTo set last.
	inNext, httpDeadlines bool
	writeBy               time.Time
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

// Limiter is a listener that admits connections within the bounds. Its
// ConnState must be the http.Server's ConnState, ConnContext its
// ConnContext, and Serving wrap its handler.
type Limiter struct {
	net.Listener
	max, share int
	trusted    func(netip.Addr) bool
	// Refused counts the connections closed for want of room: newcomers,
	// and quiet ones closed to make room.
	Refused atomic.Int64

	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	byAddr map[netip.Addr]int
}

// NewLimiter bounds the connections ln accepts to max, and those of one
// address to its share; trusted tells the addresses (proxies) limited
// by the bound only.
func NewLimiter(ln net.Listener, max int, trusted func(netip.Addr) bool) *Limiter {
	return &Limiter{Listener: ln, max: max, share: Share(max), trusted: trusted,
		open: map[*trackedConn]struct{}{}, byAddr: map[netip.Addr]int{}}
}

func (l *Limiter) Accept() (net.Conn, error) {
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
		l.Refused.Add(1)
		conn.Close()
	}
}

// admit counts c in, closing the oldest quiet connection to make room
// when a bound is reached; false when there is no room to make.
func (l *Limiter) admit(c *trackedConn) bool {
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
		evict.evicted = true
		l.removeLocked(evict)
	}
	if ok {
		l.open[c] = struct{}{}
		l.byAddr[c.addr]++
	}
	l.mu.Unlock()
	if evict != nil {
		l.Refused.Add(1)
		evict.Close()
	}
	return ok
}

// oldestQuiet is the longest-open connection among those picked that no
// handler is serving.
func (l *Limiter) oldestQuiet(pick func(*trackedConn) bool) *trackedConn {
	var oldest *trackedConn
	for c := range l.open {
		if c.serving.Load() == 0 && pick(c) && (oldest == nil || c.opened.Before(oldest.opened)) {
			oldest = c
		}
	}
	return oldest
}

// Count is how many connections are open: parked requests' and those
// waiting for their next request included (parking.go).
func (l *Limiter) Count() int {
	l.mu.Lock()
	n := len(l.open)
	l.mu.Unlock()
	return n
}

func (l *Limiter) forget(c *trackedConn) {
	l.mu.Lock()
	l.removeLocked(c)
	l.mu.Unlock()
}

func (l *Limiter) removeLocked(c *trackedConn) {
	if _, ok := l.open[c]; !ok {
		return
	}
	delete(l.open, c)
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
}

// ConnState is http.Server.ConnState's hook: a hijacked connection is
// no longer the server's to count, unless it is a parked request's.
func (l *Limiter) ConnState(conn net.Conn, state http.ConnState) {
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

// ConnContext is http.Server.ConnContext's hook: it lets Serving and
// Parking.Take find a request's connection.
func ConnContext(ctx context.Context, conn net.Conn) context.Context {
	if c := trackedOf(conn); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// Serving tracks each request on a tracked connection (see above) while
// next serves it. Its body is given StrangerBodyWait (or bodyWait, if
// shorter) until the request proves an account (Admitted). bodyWait is
// the server's ReadTimeout (--read-timeout).
func Serving(next http.Handler, bodyWait time.Duration) http.Handler {
	wait := StrangerBodyWait
	if bodyWait > 0 {
		wait = min(wait, bodyWait)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().Value(connKey{}).(*trackedConn)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		req := &request{conn: c, start: time.Now(), arrived: true}
		defer req.end()
		// HTTP/2 gives every request a body, an empty one when it has
		// none; a body of unknown length (-1) arrives at its end.
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			req.arrived = false
			r.Body = &arrivingBody{ReadCloser: r.Body, req: req, left: r.ContentLength}
			http.NewResponseController(w).SetReadDeadline(req.start.Add(wait))
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, req)))
	})
}

// StrangerBodyWait is how long a request without credentials may take to
// send its body, --read-timeout if shorter.
const StrangerBodyWait = 10 * time.Second

type requestKey struct{}

// request is one request on a tracked connection: served (its
// connection safe from being closed for room) once it has arrived and
// been admitted. Its fields change on the request's own goroutine only;
// settle takes the limiter's lock, so that a connection is never both
// closed for room and counted served, and end, which only lets go, does
// not.
type request struct {
	conn                      *trackedConn
	start                     time.Time
	arrived, admitted, served bool
}

// settle marks the request served when it has arrived and been
// admitted; false when its connection was closed for room meanwhile.
func (q *request) settle(arrived, admitted bool) bool {
	l := q.conn.limiter
	l.mu.Lock()
	defer l.mu.Unlock()
	q.arrived, q.admitted = q.arrived || arrived, q.admitted || admitted
	if q.conn.evicted {
		return false
	}
	if q.arrived && q.admitted && !q.served {
		q.served = true
		q.conn.serving.Add(1)
	}
	return true
}

// end ends the request: the connection is no longer served for it.
func (q *request) end() {
	if q.served {
		q.served = false
		q.conn.serving.Add(-1)
	}
}

// arrivingBody is a request body still on its way.
type arrivingBody struct {
	io.ReadCloser
	req  *request
	left int64 // bytes still to come; -1 when the length is not known
	done bool
}

func (b *arrivingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.left > 0 {
		b.left -= int64(min(int64(n), b.left))
	}
	if (err == io.EOF || b.left == 0) && !b.done {
		b.done = true
		b.req.settle(true, false)
	}
	return n, err
}

// Admitted says the request proved an account: its body, if still on
// its way, has the whole of bodyWait (--read-timeout) from the request's
// start, as a member's upload over a slow link needs (no deadline when
// bodyWait is 0), and once arrived it is served. False when its
// connection was closed for room before: the request is to go no
// further, its client will not hear the answer.
func Admitted(w http.ResponseWriter, r *http.Request, bodyWait time.Duration) bool {
	q, ok := r.Context().Value(requestKey{}).(*request)
	if !ok {
		return true
	}
	if b, ok := r.Body.(*arrivingBody); ok && !b.done {
		var deadline time.Time // none, when the server sets none
		if bodyWait > 0 {
			deadline = q.start.Add(bodyWait)
		}
		http.NewResponseController(w).SetReadDeadline(deadline)
	}
	return q.settle(false, true)
}
