package conns

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// The next request on an answered poll's connection. An app polls again
// at once on the same connection; handing the connection back to
// net/http for that costs a connection's setup each time (a goroutine
// and its stack grown again, buffers, a background reader, the hijack),
// which at ten thousand clients was most of a message's fan-out. So the
// connection waits for the next request in the close watcher's epoll set,
// with no goroutine, and a job (Parking.Run: one of zulite's answerers)
// reads it when it comes. A poll (a GET of one of Parking.Paths,
// HTTP/1.1, no body, nothing after it) is served there by the same
// handler net/http serves (Parking.Handler), through pollWriter, whose
// Hijack parks it again. Anything else, or anything this reading does
// not check as strictly as net/http, goes to net/http with the bytes
// read (trackedConn.pending), as a new connection.

// nextRequestWait is how long the rest of a request already under way may
// take to arrive; a slower one is net/http's to read.
const nextRequestWait = 100 * time.Millisecond

// awaitRequest watches an answered poll's connection for the client's
// next request; false when it cannot be (the caller hands it to
// net/http). A TLS connection goes to net/http when its next bytes come,
// a plain one is read by serveNext. The watcher closes it after the idle
// timeout if nothing comes.
func (p *Parking) awaitRequest(conn net.Conn, tc *trackedConn) bool {
	if len(tc.pending) > 0 { // a request already read: net/http's
		return false
	}
	if tc.next == nil {
		serve := func() { p.serveNext(tc) }
		if conn != net.Conn(tc) {
			serve = func() { p.handToNetHTTP(conn) }
		}
		tc.next = func() { p.Run(serve) }
	}
	_, err := p.watcher.watch(tc, true, p.IdleTimeout, tc.next)
	return err == nil
}

var nextBuffers = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// serveNext reads the request that came on an answered poll's connection
// and serves it, or hands it to net/http.
func (p *Parking) serveNext(tc *trackedConn) {
	bp := nextBuffers.Get().(*[]byte)
	defer nextBuffers.Put(bp)
	buf, n := *bp, 0
	// The watcher told that something came, so the first read does not
	// wait; the rest of a request under way has nextRequestWait.
	waiting := false
	for n < len(buf) {
		k, err := tc.Read(buf[n:])
		n += k
		if err != nil || bytes.Contains(buf[max(0, n-k-3):n], []byte("\r\n\r\n")) {
			break
		}
		if !waiting {
			waiting = true
			tc.SetReadDeadline(time.Now().Add(nextRequestWait))
		}
	}
	if n == 0 { // the client went away
		tc.Close()
		return
	}
	if waiting {
		tc.SetReadDeadline(time.Time{})
	}
	req := nextPoll(buf[:n], p.Paths)
	if req == nil || p.Closing() {
		tc.pending = slices.Clone(buf[:n])
		p.handToNetHTTP(tc)
		return
	}
	if tc.nextCtx == nil { // the same for each of its requests
		tc.remote = tc.RemoteAddr().String()
		tc.nextCtx = context.WithValue(context.Background(), connKey{}, tc)
	}
	req.RemoteAddr = tc.remote
	req = req.WithContext(tc.nextCtx)
	w := &pollWriter{Response: Response{header: http.Header{}}, conn: tc}
	tc.inNext = true
	served := p.serveCaught(w, req)
	tc.inNext = false
	if !served {
		tc.Close()
		return
	}
	if w.hijacked { // parked again
		return
	}
	err := w.writeTo(tc, nil, req.Close || p.Closing())
	p.afterAnswer(tc, tc, err == nil && !req.Close)
}

// handToNetHTTP hands a connection to net/http, with what was read
// of its next request, or closes it when net/http no longer serves.
func (p *Parking) handToNetHTTP(conn net.Conn) {
	if !p.listener.handBack(conn) {
		conn.Close()
	}
}

// serveCaught serves a request as net/http would, a panic caught and
// logged; false after a panic.
func (p *Parking) serveCaught(w http.ResponseWriter, r *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			p.Log.Error("panic serving a poll", "route", r.URL.Path, "panic", v)
			ok = false
		}
	}()
	p.Handler.ServeHTTP(w, r)
	return true
}

// pollWriter is the ResponseWriter of a request served on an answered
// poll's connection: the answer is written when the handler returns, or
// the poll parks again (Hijack).
type pollWriter struct {
	Response
	conn     *trackedConn
	hijacked bool
}

// noBuffered is the reader of a pollWriter's hijacking: nothing read
// ahead.
var noBuffered = bufio.NewReaderSize(strings.NewReader(""), 16)

func (w *pollWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked || w.status != 0 {
		return nil, nil, errors.New("already answered")
	}
	w.hijacked = true
	return w.conn, bufio.NewReadWriter(noBuffered, nil), nil
}

// nextPoll is the request b when it is one more poll, as strict as
// net/http or stricter: the request line "GET /path?... HTTP/1.1" of one
// of paths, header lines "Name: value" of token names and values without
// controls, one Host of host characters, Connection only keep-alive or
// close, nothing that announces a body or a change of protocol, and
// nothing after the blank line. nil for anything else.
func nextPoll(b []byte, paths []string) *http.Request {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 || end != len(b)-4 { // not ended, or more after it
		return nil
	}
	head := string(b[:end]) // one copy: the request's strings are parts of it
	line, rest, _ := strings.Cut(head, "\r\n")
	target, ok1 := strings.CutPrefix(line, "GET ")
	target, ok2 := strings.CutSuffix(target, " HTTP/1.1")
	path, _, _ := strings.Cut(target, "?")
	if !ok1 || !ok2 || !slices.Contains(paths, path) {
		return nil
	}
	for i := range len(target) {
		if c := target[i]; c <= ' ' || c >= 0x7f {
			return nil
		}
	}
	lines := strings.Count(rest, "\r\n") + 1
	h := make(http.Header, lines)
	values := make([]string, 0, lines) // each header's one value, sliced from one array
	host, hosts, closing := "", 0, false
	for len(rest) > 0 {
		var l string
		l, rest, _ = strings.Cut(rest, "\r\n")
		name, value, ok := strings.Cut(l, ":")
		if !ok || len(name) == 0 {
			return nil
		}
		for i := range len(name) {
			if !isTokenChar(name[i]) {
				return nil
			}
		}
		value = strings.Trim(value, " \t")
		for i := range len(value) {
			if c := value[i]; (c < ' ' && c != '\t') || c == 0x7f {
				return nil
			}
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		switch key {
		case "Content-Length", "Transfer-Encoding", "Expect", "Upgrade", "Te", "Trailer", "Http2-Settings":
			return nil
		case "Host":
			hosts++
			host = value
			for i := range len(value) {
				if c := value[i]; !isTokenChar(c) && !strings.ContainsRune("[]:", rune(c)) {
					return nil
				}
			}
		case "Connection":
			switch strings.ToLower(value) {
			case "close":
				closing = true
			case "keep-alive":
			default:
				return nil
			}
		}
		if key == "Host" { // net/http keeps it in Request.Host only
			continue
		}
		if old, ok := h[key]; ok {
			h[key] = append(old, value)
			continue
		}
		values = append(values, value)
		h[key] = values[len(values)-1 : len(values) : len(values)]
	}
	if hosts != 1 || host == "" {
		return nil
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil
	}
	return &http.Request{Method: http.MethodGet, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Host: host,
		RequestURI: target, Body: http.NoBody, Close: closing}
}

// isTokenChar is RFC 9110's tchar.
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
