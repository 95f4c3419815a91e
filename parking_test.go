package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"zulite/internal/conns"
)

// The parking tests serve a test environment's server as zulite serve
// does (httpServer: the connection bounds, the parking listener, the
// close watcher) on a loopback port, and poll it over raw connections,
// as an app keeps one connection polling.

type parkedEnv struct {
	*testEnv
	addr string
	srv  *http.Server
}

func serveParked(t *testing.T) *parkedEnv {
	t.Helper()
	if !conns.CanPark {
		t.Skip("polls park on Linux only")
	}
	e := newTestEnv(t)
	srv, listening := e.server.httpServer(mustListen(t), options{MaxConns: 4096, ParkPolls: true}, nil, discardLogger())
	go srv.Serve(listening)
	t.Cleanup(func() { stopServing(e.server, srv) })
	return &parkedEnv{testEnv: e, addr: listening.Addr().String(), srv: srv}
}

// stopServing shuts down as zulite serve does.
func stopServing(s *server, srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	s.events.close()
	s.stopParking(ctx)
}

// pollConn is a client's connection that polls.
type pollConn struct {
	net.Conn
	r    *bufio.Reader
	auth string
}

func (e *parkedEnv) dial(t *testing.T, a account) *pollConn {
	t.Helper()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &pollConn{Conn: c, r: bufio.NewReader(c), auth: base64.StdEncoding.EncodeToString([]byte(a.Email + ":" + a.key))}
}

// request writes one request; extra is more header lines.
func (c *pollConn) request(t *testing.T, method, target string, extra ...string) {
	t.Helper()
	req := method + " " + target + " HTTP/1.1\r\nHost: zulite.test\r\nAuthorization: Basic " + c.auth + "\r\n"
	for _, h := range extra {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
}

func (c *pollConn) poll(t *testing.T, queueID string, last int64, extra ...string) {
	t.Helper()
	c.request(t, http.MethodGet, "/api/v1/events?queue_id="+url.QueryEscape(queueID)+"&last_event_id="+strconv.FormatInt(last, 10), extra...)
}

// answer reads one answer, within 10 s.
func (c *pollConn) answer(t *testing.T) (*http.Response, map[string]any) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("answer %q: %v", raw, err)
	}
	return resp, body
}

// events of an answer: their types, and the largest id.
func answeredEvents(t *testing.T, body map[string]any) ([]string, int64) {
	t.Helper()
	list, ok := body["events"].([]any)
	if !ok {
		t.Fatalf("no events in %v", body)
	}
	var types []string
	last := int64(-1)
	for _, ev := range list {
		m := ev.(map[string]any)
		types = append(types, m["type"].(string))
		last = max(last, int64(m["id"].(float64)))
	}
	return types, last
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *parkedEnv) waitParked(t *testing.T, n int64) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%d parked polls", n), func() bool { return e.server.parked.Load() == n })
}

// parkedPoll registers a queue of bob's for messages and parks a poll of
// it on a connection of its own.
func (e *parkedEnv) parkedPoll(t *testing.T) (string, *pollConn) {
	t.Helper()
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	c := e.dial(t, e.bob)
	c.poll(t, queue, -1)
	e.waitParked(t, 1)
	return queue, c
}

// queuePolls is how many polls the hub counts on the queue.
func (e *parkedEnv) queuePolls(queueID string) int {
	e.server.events.mu.RLock()
	q := e.server.events.queues[queueID]
	e.server.events.mu.RUnlock()
	if q == nil {
		return -1
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.polls
}

// Waiting polls hold no goroutine: 200 of them cost a handful, where
// waiting in their handlers cost two each (the handler's and net/http's
// background reader's). Each is answered on its connection, which then
// polls again.
func TestParking_WaitingPollsHoldNoGoroutine(t *testing.T) {
	e := serveParked(t)
	const users, perUser = 10, maxQueuesPerUser
	type client struct {
		conn  *pollConn
		queue string
		last  int64
	}
	var clients []*client
	for i := range users {
		u, key := mustCreateUser(t, e.st, fmt.Sprintf("reader%d@example.com", i), roleMember, false)
		mustSubscribe(t, e.st, u, "general")
		a := account{u, key}
		for range perUser {
			r := e.registerQueue(t, &a, url.Values{"event_types": {`["message"]`}})
			clients = append(clients, &client{conn: e.dial(t, a), queue: r.str("queue_id"), last: -1})
		}
	}
	runtime.GC()
	before := runtime.NumGoroutine()
	for round := range 2 {
		for _, c := range clients {
			c.conn.poll(t, c.queue, c.last)
		}
		waitUntil(t, "every poll waiting", func() bool {
			n := 0
			for _, c := range clients {
				n += e.queuePolls(c.queue)
			}
			return n == len(clients)
		})
		if grew := runtime.NumGoroutine() - before; grew > 20 {
			t.Fatalf("round %d: %d polls waiting added %d goroutines, want at most 20", round, len(clients), grew)
		}
		id := e.sendAs(t, e.alice, e.general, "parked")
		for i, c := range clients {
			resp, body := c.conn.answer(t)
			if resp.StatusCode != 200 || body["result"] != "success" || body["queue_id"] != c.queue {
				t.Fatalf("client %d: got %d %v", i, resp.StatusCode, body)
			}
			if resp.Header.Get("Content-Type") != "application/json" || resp.ContentLength <= 0 || resp.Header.Get("X-Request-Id") == "" || resp.Header.Get("Date") == "" || resp.Close {
				t.Fatalf("client %d: headers %v (keep-alive %v)", i, resp.Header, !resp.Close)
			}
			types, last := answeredEvents(t, body)
			msg := body["events"].([]any)[0].(map[string]any)["message"].(map[string]any)
			if len(types) != 1 || types[0] != "message" || uint64(msg["id"].(float64)) != id {
				t.Fatalf("client %d: events %v, want message %d", i, body["events"], id)
			}
			c.last = last
		}
	}
	waitUntil(t, "the answered polls' connections back with net/http", func() bool { return e.server.parked.Load() == 0 })
}

// A parked poll that waits the poll timeout answers a heartbeat, and its
// connection polls on.
func TestParking_HeartbeatAfterThePollTimeout(t *testing.T) {
	e := serveParked(t)
	e.server.events.pollTimeout = 200 * time.Millisecond
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	c := e.dial(t, e.bob)
	last := int64(-1)
	for range 2 {
		c.poll(t, queue, last)
		resp, body := c.answer(t)
		types, id := answeredEvents(t, body)
		if resp.StatusCode != 200 || len(types) != 1 || types[0] != "heartbeat" {
			t.Fatalf("got %d %v, want one heartbeat", resp.StatusCode, body)
		}
		last = id
	}
}

// A client that goes away ends its parked poll at once: its queue no
// longer counts as polled (the push notifications' idle rule), and its
// connection is closed and no longer counted.
func TestParking_AClientGoneEndsItsPoll(t *testing.T) {
	e := serveParked(t)
	queue, c := e.parkedPoll(t)
	if e.queuePolls(queue) != 1 || e.server.metrics.openConns() != 1 {
		t.Fatalf("parked: queue polls %d, open connections %d, want 1 and 1", e.queuePolls(queue), e.server.metrics.openConns())
	}
	c.Close()
	waitUntil(t, "the poll to end", func() bool { return e.queuePolls(queue) == 0 && e.server.parked.Load() == 0 })
	waitUntil(t, "the connection to be counted out", func() bool { return e.server.metrics.openConns() == 0 })
}

// A client that sends its next poll on an answered connection and goes
// away at once ends that poll too, however the poll's bytes and the end
// of the stream come: in one edge of the watcher's epoll set or two,
// before the connection is watched for its next request or after. Here
// the first poll parks and is answered by a message; the next poll and
// the end of the stream are sent 0 to 400 µs after the message, in one
// write or two. The two answers hold the message between them, and no
// poll is left waiting.
func TestParking_AClientGoneWithItsNextPollEndsIt(t *testing.T) {
	e := serveParked(t)
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	last := int64(-1)
	for i := range 200 {
		c := e.dial(t, e.bob)
		c.poll(t, queue, last)
		e.waitParked(t, 1)
		sent := e.sendAs(t, e.alice, e.general, "gone")
		time.Sleep(time.Duration(i%20) * 20 * time.Microsecond)
		next := "GET /api/v1/events?queue_id=" + url.QueryEscape(queue) + "&last_event_id=" + strconv.FormatInt(last, 10) +
			" HTTP/1.1\r\nHost: zulite.test\r\nAuthorization: Basic " + c.auth + "\r\n\r\n"
		if i%2 == 1 {
			io.WriteString(c, next[:20])
			next = next[20:]
		}
		io.WriteString(c, next)
		c.Conn.(*net.TCPConn).CloseWrite()
		var messages []uint64
		for range 2 {
			resp, body := c.answer(t)
			if resp.StatusCode != 200 || body["result"] != "success" {
				t.Fatalf("round %d: %d %v", i, resp.StatusCode, body)
			}
			for _, ev := range body["events"].([]any) {
				messages = append(messages, uint64(ev.(map[string]any)["message"].(map[string]any)["id"].(float64)))
				last = max(last, int64(ev.(map[string]any)["id"].(float64)))
			}
		}
		if len(messages) < 1 || messages[len(messages)-1] != sent {
			t.Fatalf("round %d: the answers held messages %v, want %d", i, messages, sent)
		}
		waitUntil(t, fmt.Sprintf("round %d: the poll to end", i), func() bool { return e.queuePolls(queue) == 0 && e.server.parked.Load() == 0 })
		c.Close()
	}
}

// A poll whose request comes in two parts, the second after a pause,
// parks: the watcher's edge for the second part, which came while no
// watch was, does not end it as if its client had gone.
func TestParking_APollReadInTwoPartsParks(t *testing.T) {
	e := serveParked(t)
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	c := e.dial(t, e.bob)
	id := e.sendAs(t, e.alice, e.general, "first")
	c.poll(t, queue, int64(id)-2)
	_, body := c.answer(t)
	_, last := answeredEvents(t, body)
	for i := range 20 {
		next := "GET /api/v1/events?queue_id=" + url.QueryEscape(queue) + "&last_event_id=" + strconv.FormatInt(last, 10) +
			" HTTP/1.1\r\nHost: zulite.test\r\nAuthorization: Basic " + c.auth + "\r\n\r\n"
		io.WriteString(c, next[:30])
		time.Sleep(10 * time.Millisecond)
		io.WriteString(c, next[30:])
		e.waitParked(t, 1)
		time.Sleep(20 * time.Millisecond)
		if e.server.parked.Load() != 1 || e.queuePolls(queue) != 1 {
			t.Fatalf("round %d: parked %d, queue polls %d after 20 ms, want 1 and 1", i, e.server.parked.Load(), e.queuePolls(queue))
		}
		sent := e.sendAs(t, e.alice, e.general, "second")
		resp, body := c.answer(t)
		types, id := answeredEvents(t, body)
		msg := body["events"].([]any)[0].(map[string]any)["message"].(map[string]any)
		if resp.StatusCode != 200 || len(types) != 1 || types[0] != "message" || uint64(msg["id"].(float64)) != sent {
			t.Fatalf("round %d: got %d %v, want message %d", i, resp.StatusCode, body, sent)
		}
		last = id
	}
}

// A queue deleted while its poll is parked answers the poll
// BAD_EVENT_QUEUE_ID, as a waiting poll's handler does.
func TestParking_QueueDeletedAnswersBadEventQueueID(t *testing.T) {
	e := serveParked(t)
	queue, c := e.parkedPoll(t)
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/events", url.Values{"queue_id": {queue}}, &e.bob))
	resp, body := c.answer(t)
	if resp.StatusCode != 400 || body["code"] != "BAD_EVENT_QUEUE_ID" || body["msg"] != "Bad event queue ID: "+queue || body["queue_id"] != queue {
		t.Fatalf("got %d %v", resp.StatusCode, body)
	}
}

// Shutdown answers parked polls at once and closes their connections.
func TestParking_ShutdownAnswersParkedPolls(t *testing.T) {
	e := serveParked(t)
	_, c := e.parkedPoll(t)
	began := time.Now()
	go stopServing(e.server, e.srv)
	resp, body := c.answer(t)
	if types, _ := answeredEvents(t, body); resp.StatusCode != 200 || len(types) != 0 || !resp.Close {
		t.Fatalf("got %d %v (Connection: close %v), want success, no events, the connection closing", resp.StatusCode, body, resp.Close)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("the answer took %v", took)
	}
	if _, err := c.r.ReadByte(); err != io.EOF {
		t.Fatalf("after the answer: %v, want the connection closed", err)
	}
}

// A request the client sent after its poll (pipelined) is served once the
// poll is answered; a poll that asks for Connection: close gets it.
func TestParking_PipelinedAndClosingPolls(t *testing.T) {
	e := serveParked(t)
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	c := e.dial(t, e.bob)
	target := "/api/v1/events?queue_id=" + queue + "&last_event_id=-1"
	pipelined := "GET " + target + " HTTP/1.1\r\nHost: zulite.test\r\nAuthorization: Basic " + c.auth + "\r\n\r\n" +
		"GET /api/v1/users/me HTTP/1.1\r\nHost: zulite.test\r\nAuthorization: Basic " + c.auth + "\r\n\r\n"
	if _, err := io.WriteString(c, pipelined); err != nil {
		t.Fatal(err)
	}
	e.waitParked(t, 1)
	e.sendAs(t, e.alice, e.general, "pipelined")
	if resp, body := c.answer(t); resp.StatusCode != 200 || len(body["events"].([]any)) != 1 {
		t.Fatalf("the poll: %d %v", resp.StatusCode, body)
	}
	if resp, body := c.answer(t); resp.StatusCode != 200 || body["email"] != e.bob.Email {
		t.Fatalf("the request after it: %d %v", resp.StatusCode, body)
	}

	c.poll(t, queue, 0, "Connection: close")
	e.waitParked(t, 1)
	e.sendAs(t, e.alice, e.general, "closing")
	if resp, body := c.answer(t); resp.StatusCode != 200 || !resp.Close || len(body["events"].([]any)) != 1 {
		t.Fatalf("the closing poll: %d %v (Connection: close %v)", resp.StatusCode, body, resp.Close)
	}
	if _, err := c.r.ReadByte(); err != io.EOF {
		t.Fatalf("after the closing poll's answer: %v, want the connection closed", err)
	}
}

// /metrics counts parked polls, and their connections among the open ones.
func TestParking_Metrics(t *testing.T) {
	e := serveParked(t)
	for i := range 3 {
		queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
		e.dial(t, e.bob).poll(t, queue, -1)
		e.waitParked(t, int64(i+1))
	}
	c := e.dial(t, e.owner)
	c.request(t, http.MethodGet, "/metrics")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"zulite_parked_polls 3\n", "zulite_open_connections 4\n"} { // the three polls, and this request
		if !strings.Contains(string(page), want) {
			t.Errorf("/metrics has no %q:\n%s", want, page)
		}
	}
}

// On an answered poll's connection, the next request is served whatever
// it is: another poll (read by zulite), any other request, or a
// malformed one (net/http's, which refuses it as it refuses any).
func TestParking_TheNextRequestOnAnAnsweredConnection(t *testing.T) {
	e := serveParked(t)
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	c := e.dial(t, e.bob)
	last := int64(-1)
	answerMessage := func() {
		t.Helper()
		e.waitParked(t, 1)
		e.sendAs(t, e.alice, e.general, "next")
		resp, body := c.answer(t)
		types, id := answeredEvents(t, body)
		if resp.StatusCode != 200 || len(types) != 1 || types[0] != "message" {
			t.Fatalf("got %d %v", resp.StatusCode, body)
		}
		last = id
	}
	c.poll(t, queue, last)
	answerMessage()
	c.poll(t, queue, last) // read by zulite, parked again
	answerMessage()
	c.request(t, http.MethodGet, "/api/v1/users/me")
	if resp, body := c.answer(t); resp.StatusCode != 200 || body["email"] != e.bob.Email {
		t.Fatalf("users/me after a poll: %d %v", resp.StatusCode, body)
	}
	c.poll(t, queue, last)
	answerMessage()
	io.WriteString(c, "GET /api/v1/events?queue_id="+queue+" HTTP/1.1\r\nAuthorization: Basic "+c.auth+"\r\n\r\n") // no Host
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("a poll without Host: %v %v, want net/http's 400", resp, err)
	}
}

// An answered connection that sends nothing more is closed after the
// idle timeout, as net/http closes an idle one.
func TestParking_AnAnsweredConnectionIdleIsClosed(t *testing.T) {
	e := serveParked(t)
	e.server.parking.IdleTimeout = 200 * time.Millisecond
	_, c := e.parkedPoll(t)
	e.sendAs(t, e.alice, e.general, "idle")
	c.answer(t)
	if _, err := c.r.ReadByte(); err != io.EOF {
		t.Fatalf("after the idle timeout: %v, want the connection closed", err)
	}
	waitUntil(t, "the connection to be counted out", func() bool { return e.server.metrics.openConns() == 0 })
}

// What parks is a plain HTTP/1.1 GET: a poll that carries a body (here a
// whole second request, smuggled) or a HEAD waits in its handler, where
// net/http reads the body away and writes no body to a HEAD. One request,
// one answer.
func TestParking_OnlyAPlainGetParks(t *testing.T) {
	e := serveParked(t)
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	c := e.dial(t, e.bob)
	smuggled := "GET /api/v1/users/me HTTP/1.1\r\nHost: zulite.test\r\nAuthorization: Basic " + c.auth + "\r\n\r\n"
	c.poll(t, queue, -1, "Content-Length: "+strconv.Itoa(len(smuggled)))
	io.WriteString(c, smuggled)
	waitUntil(t, "the poll waiting", func() bool { return e.queuePolls(queue) == 1 })
	if n := e.server.parked.Load(); n != 0 {
		t.Fatalf("a poll with a body parked (%d parked)", n)
	}
	e.sendAs(t, e.alice, e.general, "one")
	_, body := c.answer(t)
	_, last := answeredEvents(t, body)
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if resp, err := http.ReadResponse(c.r, nil); err == nil {
		t.Fatalf("a second answer to one request: %d", resp.StatusCode)
	}

	h := e.dial(t, e.bob)
	h.request(t, http.MethodHead, "/api/v1/events?queue_id="+queue+"&last_event_id="+strconv.FormatInt(last, 10))
	waitUntil(t, "the HEAD poll waiting", func() bool { return e.queuePolls(queue) == 1 })
	e.sendAs(t, e.alice, e.general, "two")
	h.SetReadDeadline(time.Now().Add(10 * time.Second))
	if resp, err := http.ReadResponse(h.r, &http.Request{Method: http.MethodHead}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the HEAD poll: %v %v", resp, err)
	}
	h.request(t, http.MethodGet, "/api/v1/users/me")
	if resp, body := h.answer(t); resp.StatusCode != 200 || body["email"] != e.bob.Email {
		t.Fatalf("the request after a HEAD poll: %d %v", resp.StatusCode, body)
	}
}

// A request pipelined after a poll over TLS was read out of its TLS
// records: the poll's answer says Connection: close and the connection
// ends cleanly, for the client to send it again.
func TestParking_TLSPipelinedRequestEndsTheConnection(t *testing.T) {
	if !conns.CanPark {
		t.Skip("polls park on Linux only")
	}
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t)
	srv, listening := e.server.httpServer(mustListen(t), options{MaxConns: 4096, ParkPolls: true}, &tls.Config{Certificates: []tls.Certificate{cert}}, discardLogger())
	go srv.Serve(listening)
	t.Cleanup(func() { stopServing(e.server, srv) })
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["message"]`}}).str("queue_id")
	conn, err := tls.Dial("tcp", listening.Addr().String(), &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	auth := base64.StdEncoding.EncodeToString([]byte(e.bob.Email + ":" + e.bob.key))
	io.WriteString(conn, "GET /api/v1/events?queue_id="+queue+"&last_event_id=-1 HTTP/1.1\r\nHost: zulite.test\r\nAuthorization: Basic "+auth+"\r\n\r\n"+
		"GET /api/v1/users/me HTTP/1.1\r\nHost: zulite.test\r\nAuthorization: Basic "+auth+"\r\n\r\n")
	waitUntil(t, "the poll parked", func() bool { return e.server.parked.Load() == 1 })
	e.sendAs(t, e.alice, e.general, "tls")
	r := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("the poll's answer: %v %v, want 200 with Connection: close", resp, err)
	}
	io.ReadAll(resp.Body)
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("after the answer: %v, want the connection ended cleanly", err)
	}
}

// A queue once polled in its handler (HTTP/2, say) and now parked is
// woken without taking a wake slot that no handler will give back: past
// 32 such queues, every wake stopped.
func TestParking_ParkedPollsTakeNoWakeSlot(t *testing.T) {
	e := serveParked(t)
	type client struct {
		a     account
		queue string
		conn  *pollConn
	}
	var clients []*client
	for i := range wakeSlots + 2 {
		u, key := mustCreateUser(t, e.st, fmt.Sprintf("slot%d@example.com", i), roleMember, false)
		mustSubscribe(t, e.st, u, "general")
		a := account{u, key}
		clients = append(clients, &client{a: a, queue: e.registerQueue(t, &a, url.Values{"event_types": {`["message"]`}}).str("queue_id")})
	}
	e.server.events.pollTimeout = 20 * time.Millisecond
	for _, c := range clients { // polled in its handler once, answered a heartbeat
		wantAPISuccess(t, e.request(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {c.queue}, "last_event_id": {"-1"}}, &c.a))
	}
	e.server.events.pollTimeout = pollTimeout
	for i, c := range clients {
		c.conn = e.dial(t, c.a)
		c.conn.poll(t, c.queue, 0)
		e.waitParked(t, int64(i+1))
	}
	e.sendAs(t, e.alice, e.general, "one")
	for _, c := range clients {
		c.conn.answer(t)
	}
	if held := len(e.server.events.wakeSlots); held != 0 {
		t.Fatalf("%d wake slots held after every poll was answered", held)
	}
}

// A poll that parks again while the waker is behind is still woken by
// the next event.
func TestParking_APollParkedAgainIsWokenWhileTheWakerIsBehind(t *testing.T) {
	e := serveParked(t)
	queue, c := e.parkedPoll(t)
	for range wakeSlots { // the waker is held back: woken handler polls not yet running
		e.server.events.wakeSlots <- struct{}{}
	}
	e.sendAs(t, e.alice, e.general, "one")
	_, body := c.answer(t)
	_, last := answeredEvents(t, body)
	c.poll(t, queue, last)
	e.waitParked(t, 1)
	e.sendAs(t, e.alice, e.general, "two")
	for range wakeSlots { // the waker catches up
		<-e.server.events.wakeSlots
	}
	c.answer(t)
}

// --park-polls=false is the operator's way back to plain net/http: a long
// poll then waits in its handler, as it does where polls cannot park. It
// still waits and a send still wakes it, and /metrics counts no parked
// poll; with the default, the same poll parks.
func TestParkPolls_OffAPollWaitsInItsHandlerAndWakes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	if !conns.CanPark {
		t.Skip("polls park on Linux only")
	}
	bin := e2eBuildBinary(t)
	for _, tc := range []struct {
		flags      []string
		wantParked int64 // zulite_parked_polls while the poll waits
	}{
		{[]string{"--park-polls=false"}, 0},
		{nil, 1},
	} {
		t.Run(fmt.Sprint(tc.flags), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "z.db")
			srv := e2eStartServer(t, bin, db, tc.flags...)
			httpClient := &http.Client{Timeout: 30 * time.Second}
			owner := rtClient{srv.baseURL, srv.ownerEmail, srv.ownerKey, httpClient}
			r := e2eRunCLI(t, bin, "user", "add", "alice@example.com", "--db", db)
			r.wantOK(t, "user add alice@example.com")
			alice := rtClient{srv.baseURL, "alice@example.com", strings.TrimSpace(r.stdout), httpClient}

			queue := owner.mustCall(t, http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}}, http.StatusOK)["queue_id"].(string)
			polled := make(chan map[string]any, 1)
			go func() {
				_, body := owner.call(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queue}, "last_event_id": {"-1"}})
				polled <- body
			}()
			select {
			case body := <-polled:
				t.Fatalf("the poll answered before any send: %v", body)
			case <-time.After(500 * time.Millisecond):
			}
			if got := e2eMetric(t, srv, "zulite_parked_polls"); got != tc.wantParked {
				t.Errorf("zulite_parked_polls while the poll waits: got %d, want %d", got, tc.wantParked)
			}
			sent := alice.mustCall(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"}, "to": {owner.email}, "content": {"wake up"}}, http.StatusOK)["id"]
			select {
			case body := <-polled:
				events, _ := body["events"].([]any)
				if len(events) != 1 || events[0].(map[string]any)["message"].(map[string]any)["id"] != sent {
					t.Errorf("the woken poll: got %v, want message %v", body, sent)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the poll was not woken by the send within 10 s")
			}
			if got := e2eMetric(t, srv, "zulite_parked_polls"); got != 0 {
				t.Errorf("zulite_parked_polls after the answer: got %d, want 0", got)
			}
		})
	}
}
