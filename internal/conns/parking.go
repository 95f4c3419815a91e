package conns

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Parking: a request that waits (a long poll with nothing to answer
// yet) waits without a goroutine. Through net/http, a waiting request
// holds its connection's goroutine, the background reader's, their
// stacks and net/http's buffers, about 27 KiB; ten thousand connected
// clients then need more memory than a small device has. So its server
// takes the connection from net/http (Take, a Hijack) and keeps it
// (Parked): what it holds is the connection and the header lines already
// set for its answer, well under 1 KiB, with an epoll set to tell when
// its client goes away. When the server has its answer, it writes it as
// net/http would (Parked.Write), and the connection waits, still without
// a goroutine, for the client's next request (next.go), or goes back to
// net/http through the listener net/http serves (Parking.Start), which
// serves its next request as on any connection it accepts.

// writeTimeout is how long a parked request's answer may take to write:
// http.Server's WriteTimeout.
const writeTimeout = 90 * time.Second

// Parking parks requests: it is configured by its fields, then started
// on the listener net/http is to serve (Start). Its fields are read as
// it serves: change them only before the first request parks.
type Parking struct {
	// Handler serves the requests read on an answered connection
	// (next.go): the handler net/http serves, Serving around it.
	Handler http.Handler
	// IdleTimeout closes an answered connection that sends no next
	// request, as http.Server's IdleTimeout closes an idle one.
	IdleTimeout time.Duration
	// Paths are the paths whose plain GETs are read on an answered
	// connection and served by Handler there (a client that polls again
	// at once); any other request goes to net/http.
	Paths []string
	// Run runs a job: the reading and serving of a next request. It may
	// pace jobs (the server's few answerers), but must not wait for them.
	Run func(job func())
	// Closing tells that the server shuts down: answers then say
	// Connection: close, and no connection is kept.
	Closing func() bool
	// Log takes a panic in Handler while it serves a request read here.
	Log *slog.Logger

	listener *parkingListener
	watcher  *closeWatcher
}

// Start has p park requests on the connections of ln: it answers the
// listener net/http is to serve, or an error where requests cannot park
// (not Linux: CanPark), when they wait in their handlers.
func (p *Parking) Start(ln net.Listener) (net.Listener, error) {
	w, err := newCloseWatcher()
	if err != nil {
		return nil, err
	}
	p.watcher = w
	p.listener = newParkingListener(ln)
	return p.listener, nil
}

// Stop closes the connections waiting for a next request and stops
// watching, at shutdown, once the parked requests are answered.
func (p *Parking) Stop() {
	for _, c := range p.watcher.awaitingConns() {
		c.Close()
	}
	p.watcher.close()
}

// Take takes a request's connection from net/http (Hijack), for its
// answer to be written later (Parked.Write), or answers nil when the
// request must wait in its handler: HTTP/2, a connection the Limiter did
// not accept, or anything but a plain HTTP/1.1 GET. Only such a GET is
// taken, since its answer is the next bytes on the connection: a body
// net/http has not read (a GET may carry one), a HEAD (answered without
// a body), HTTP/1.0's keep-alive wait in the handler, where net/http
// deals with them. The header lines set on w so far go before the
// answer's own.
func (p *Parking) Take(w http.ResponseWriter, r *http.Request) *Parked {
	if r.Method != http.MethodGet || r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		return nil
	}
	tc, _ := r.Context().Value(connKey{}).(*trackedConn)
	if tc == nil {
		return nil
	}
	var head bytes.Buffer
	w.Header().Write(&head)
	tc.parked.Store(true)                                    // before Hijack, which runs the ConnState hooks
	conn, buf, err := http.NewResponseController(w).Hijack() // or pollWriter's (next.go)
	if err != nil {
		tc.parked.Store(false)
		return nil
	}
	if tc.httpDeadlines = !tc.inNext; tc.httpDeadlines {
		tc.writeBy = time.Time{} // net/http's own is set: writeTo sets it again
	}
	closing := r.Close
	if n := buf.Reader.Buffered(); n > 0 { // a pipelined request: net/http reads it next
		if conn == net.Conn(tc) {
			pending, _ := buf.Reader.Peek(n)
			tc.pending = slices.Clone(pending)
		} else { // read out of TLS records: the connection ends after the answer, and the client sends it again
			closing = true
		}
	}
	tc.serving.Add(1) // a waiting request is never closed to make room
	return &Parked{parking: p, conn: conn, tracked: tc, head: head.Bytes(), close: closing}
}

// Parked is a request's connection taken from net/http: the request
// waits without a goroutine until its server writes the answer (Write),
// then lets the connection go (Done).
type Parked struct {
	parking *Parking
	conn    net.Conn     // as the listener gave it: a *trackedConn, or a *tls.Conn over one
	tracked *trackedConn // conn, or what the TLS connection runs over
	head    []byte       // the header lines set before it was taken (X-Request-Id, rate limits)
	close   bool         // the client asked for the connection to end after the answer
	watchID uint64       // its place in the close watcher; 0 when not watched
}

// WatchGone has gone run when the client goes away (or sends anything),
// as net/http's background read ends a waiting handler's context: once,
// on the watcher's goroutine, so it must not wait. Where the connection
// cannot be watched, gone never runs; the server's own timeout must end
// the wait. It is called once, before Write, which ends the watch.
func (c *Parked) WatchGone(gone func()) {
	if id, err := c.parking.watcher.watch(c.tracked, false, 0, gone); err == nil {
		c.watchID = id
	}
}

// Write writes the answer w holds to the client, as net/http would,
// after the header lines set before the connection was taken; it says
// Connection: close when the client asked or the server shuts down.
func (c *Parked) Write(w *Response) error {
	if c.watchID != 0 {
		c.parking.watcher.unwatch(c.watchID)
	}
	return w.writeTo(c.conn, c.head, c.close || c.parking.Closing())
}

// Done lets the connection go after Write: it waits for the client's
// next request (next.go) or goes back to net/http (a TLS connection);
// it is closed instead when the answer was not written, when the client
// asked, or at shutdown.
func (c *Parked) Done(written bool) {
	c.tracked.serving.Add(-1)
	c.parking.afterAnswer(c.conn, c.tracked, written && !c.close)
}

// afterAnswer keeps an answered connection for the client's next request
// (awaitRequest), hands it back to net/http (a TLS connection), or closes
// it: after an error, when the client asked, at shutdown.
func (p *Parking) afterAnswer(conn net.Conn, tc *trackedConn, keep bool) {
	if keep && !p.Closing() {
		if tc.httpDeadlines { // serveNext reads without one
			conn.SetReadDeadline(time.Time{})
			tc.httpDeadlines = false
		}
		if p.awaitRequest(conn, tc) {
			return
		}
		conn.SetDeadline(time.Time{}) // net/http sets its own
		tc.writeBy = time.Time{}
		if p.listener.handBack(conn) {
			return
		}
	}
	conn.Close()
}

// Response is an answer kept to be written later (Parked.Write): the
// http.ResponseWriter its server writes it to, as to any.
type Response struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// NewResponse is an answer not yet written: 200 unless told otherwise.
func NewResponse() *Response { return &Response{header: http.Header{}} }

func (w *Response) Header() http.Header { return w.header }
func (w *Response) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
func (w *Response) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Status is the answer's status, for its server's log line.
func (w *Response) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// writeTo writes the answer to conn, with head (header lines already
// written out) before its own headers; closing says so to the client.
func (w *Response) writeTo(conn net.Conn, head []byte, closing bool) error {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	now := time.Now()
	bp := headBuffers.Get().(*[]byte)
	b := append((*bp)[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(w.status)...)
	b = append(b, "\r\n"...)
	b = append(b, head...)
	for name, values := range w.header {
		for _, v := range values {
			b = append(b, name...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if w.header.Get("Content-Length") == "" {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(w.body.Len()), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Date: "...)
	b = append(b, dateOf(now)...)
	if closing {
		b = append(b, "\r\nConnection: close"...)
	}
	b = append(b, "\r\n\r\n"...)
	// The write deadline is set again only when less than half of it is
	// left: an answer has between writeTimeout/2 and writeTimeout, and
	// a client polling again at once costs no timer change per answer.
	if tc := trackedOf(conn); tc == nil {
		conn.SetWriteDeadline(now.Add(writeTimeout))
	} else if tc.writeBy.Sub(now) < writeTimeout/2 {
		tc.writeBy = now.Add(writeTimeout)
		conn.SetWriteDeadline(tc.writeBy)
	}
	var err error
	if tc, ok := conn.(*trackedConn); ok { // a TCP connection: one writev, the body not copied again
		out := net.Buffers{b, w.body.Bytes()}
		_, err = out.WriteTo(tc.Conn)
	} else {
		b = append(b, w.body.Bytes()...)
		_, err = conn.Write(b) // TLS: one record
	}
	if cap(b) <= 64<<10 { // a TLS answer's body is not kept
		*bp = b
	}
	headBuffers.Put(bp)
	return err
}

// headBuffers hold the status and header lines of answers being written.
var headBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// date is the Date header's text of one second, formatted once for all
// the answers written in it.
type date struct {
	unix int64
	text string
}

var lastDate atomic.Pointer[date]

func dateOf(now time.Time) string {
	sec := now.Unix()
	if d := lastDate.Load(); d != nil && d.unix == sec {
		return d.text
	}
	d := &date{sec, now.UTC().Format(http.TimeFormat)}
	lastDate.Store(d)
	return d.text
}

// parkingListener is the listener net/http serves: the connections it
// accepts, and the parked requests' connections handed back once answered,
// whose next request net/http then reads as on a new connection.
type parkingListener struct {
	net.Listener
	accepted chan acceptedConn
	returned chan net.Conn
	done     chan struct{}
	once     sync.Once
}

type acceptedConn struct {
	conn net.Conn
	err  error
}

func newParkingListener(ln net.Listener) *parkingListener {
	l := &parkingListener{Listener: ln, accepted: make(chan acceptedConn), returned: make(chan net.Conn, 64), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

func (l *parkingListener) acceptLoop() {
	for {
		conn, err := l.Listener.Accept()
		select {
		case l.accepted <- acceptedConn{conn, err}:
		case <-l.done:
			if conn != nil {
				conn.Close()
			}
			return
		}
		if err != nil && errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

func (l *parkingListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.returned:
		return c, nil
	default:
	}
	select {
	case c := <-l.returned:
		return c, nil
	case a := <-l.accepted:
		return a.conn, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// handBack gives an answered request's connection back to net/http; false
// once the listener is closed (shutdown), when the caller closes it.
func (l *parkingListener) handBack(conn net.Conn) bool {
	select {
	case <-l.done:
		return false
	default:
	}
	select {
	case l.returned <- conn:
		select {
		case <-l.done: // closed meanwhile: Close may have drained before it came
			l.drain()
		default:
		}
		return true
	case <-l.done:
		return false
	}
}

func (l *parkingListener) Close() error {
	l.once.Do(func() { close(l.done) })
	err := l.Listener.Close()
	l.drain()
	return err
}

// drain closes the connections handed back as the listener closed.
func (l *parkingListener) drain() {
	for {
		select {
		case c := <-l.returned:
			c.Close()
		default:
			return
		}
	}
}

// ServingTLS is what http.Server.ServeTLS would serve: the TLS listener
// over ln, offering HTTP/2 and HTTP/1.1. Serving it ourselves lets the
// parking listener sit outside TLS, so that a handed-back connection is
// not shaken hands with again.
func ServingTLS(ln net.Listener, config *tls.Config) net.Listener {
	config = config.Clone()
	for _, proto := range []string{"h2", "http/1.1"} {
		if !slices.Contains(config.NextProtos, proto) {
			config.NextProtos = append(config.NextProtos, proto)
		}
	}
	return tls.NewListener(ln, config)
}
