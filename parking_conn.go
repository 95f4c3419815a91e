package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// parkedWriter takes an answer as writeSuccess and writeError write it,
// and writes it as net/http would.
type parkedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *parkedWriter) Header() http.Header { return w.header }
func (w *parkedWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
func (w *parkedWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// writeTo writes the answer to conn, with head (header lines already
// written out) before its own headers; closing says so to the client.
func (w *parkedWriter) writeTo(conn net.Conn, head []byte, closing bool) error {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	b := make([]byte, 0, 256+len(head))
	b = append(b, "HTTP/1.1 "...)
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
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	if closing {
		b = append(b, "\r\nConnection: close"...)
	}
	b = append(b, "\r\n\r\n"...)
	conn.SetWriteDeadline(time.Now().Add(parkedWriteTimeout))
	if tc, ok := conn.(*trackedConn); ok { // a TCP connection: one writev, the body not copied again
		out := net.Buffers{b, w.body.Bytes()}
		_, err := out.WriteTo(tc.Conn)
		return err
	}
	_, err := conn.Write(append(b, w.body.Bytes()...)) // TLS: one record
	return err
}

// parkingListener is the listener net/http serves: the connections it
// accepts, and the parked polls' connections handed back once answered,
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

// handBack gives an answered poll's connection back to net/http; false
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

// servingTLS is what http.Server.ServeTLS would serve: the TLS listener
// over ln, offering HTTP/2 and HTTP/1.1. Serving it ourselves lets the
// parking listener sit outside TLS, so that a handed-back connection is
// not shaken hands with again.
func servingTLS(ln net.Listener, config *tls.Config) net.Listener {
	config = config.Clone()
	for _, proto := range []string{"h2", "http/1.1"} {
		if !slices.Contains(config.NextProtos, proto) {
			config.NextProtos = append(config.NextProtos, proto)
		}
	}
	return tls.NewListener(ln, config)
}
