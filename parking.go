package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"time"
)

// Parked polls: a long poll with nothing to answer yet waits without a
// goroutine. Through net/http, a waiting poll holds its connection's
// goroutine, the background reader's, their stacks and net/http's
// buffers, about 27 KiB; ten thousand connected clients then need more
// memory than a small device has. So a poll over HTTP/1.x that would wait
// takes its connection from net/http (Hijack) and parks it on its queue
// (eventQueue.parked): what it holds is the connection, the header lines
// already set for its answer and a timer, well under 1 KiB. When the
// queue has events (the hub's waker), after the poll timeout (a
// heartbeat), when the queue is dropped, or at shutdown, a goroutine of a
// few writes the answer as net/http would and hands the connection back
// to net/http through the listener (parkingListener), which serves its
// next request as on any connection it accepts. HTTP/2 polls, and polls
// served without a parking listener (tests calling the handler), wait in
// their handler as before.

// parkedAnswerers bounds the parked polls being answered at a time
// (eventHub.answer): the answers to a big channel's message go out a few
// at a time, so that a request that comes in meanwhile waits behind a few
// of them, not behind ten thousand.
const parkedAnswerers = 4

// parkedAnswerWait is how long a parked poll's answer may take to write
// as one of the answerers; a client that reads slower is written to
// outside them, within parkedWriteTimeout.
const (
	parkedAnswerWait   = 50 * time.Millisecond
	parkedWriteTimeout = 90 * time.Second // http.Server's WriteTimeout
)

// parkedPoll is a waiting poll without its goroutine: its connection and
// what its answer and its log line need.
type parkedPoll struct {
	s       *server
	conn    net.Conn     // as the listener gave it: a *trackedConn, or a *tls.Conn over one
	tracked *trackedConn // conn, or what the TLS connection runs over
	queueID string
	ignored []string // parameters the request sent that no route reads
	head    []byte   // the header lines set before it parked (X-Request-Id, rate limits)
	close   bool     // the client asked for the connection to end after the answer
	info    requestInfo
	queue   *eventQueue // set when it parks
	timer   *time.Timer // the heartbeat; set and stopped under the queue's lock
	watchID uint32      // its place in the hub's close watcher; 0 when not watched
}

// startParking has the server park its waiting polls: it answers the
// listener net/http is to serve, ln as it is where polls cannot park
// (not Linux).
func (s *server) startParking(ln net.Listener) net.Listener {
	w, err := newCloseWatcher()
	if err != nil {
		return ln
	}
	s.events.watcher = w
	s.parking = newParkingListener(ln)
	s.metrics.parkedPolls = &s.parked
	return s.parking
}

// stopParking waits until every parked poll is answered (the hub's close
// answers them), or ctx ends, closes the connections waiting for a next
// request, and stops watching.
func (s *server) stopParking(ctx context.Context) {
	if s.events.watcher == nil {
		return
	}
	for s.parked.Load() > 0 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	for _, c := range s.events.watcher.awaitingConns() {
		c.Close()
	}
	s.events.watcher.close()
}

// parkPoll takes a poll's connection from net/http, or answers nil when
// it must wait in its handler: HTTP/2, no parking listener, a connection
// zulite did not accept. The poll's answer is written by answer, later.
func (s *server) parkPoll(r *apiRequest, queueID string) *parkedPoll {
	// Only a plain HTTP/1.1 GET parks: its answer is the next bytes on the
	// connection. A body net/http has not read (a GET may carry one), a
	// HEAD (answered without a body), HTTP/1.0's keep-alive wait in the
	// handler, where net/http deals with them.
	if s.parking == nil || s.events.watcher == nil || r.writer == nil || r.Method != http.MethodGet || r.ProtoMajor != 1 || r.ProtoMinor != 1 ||
		r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		return nil
	}
	tc, _ := r.Context().Value(connKey{}).(*trackedConn)
	info := infoOf(r.writer)
	if tc == nil || info == nil {
		return nil
	}
	var head bytes.Buffer
	r.writer.Header().Write(&head)
	tc.parked.Store(true)                                           // before Hijack, which runs the ConnState hooks
	conn, buf, err := http.NewResponseController(r.writer).Hijack() // or pollWriter's (parking_next.go)
	if err != nil {
		tc.parked.Store(false)
		return nil
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
	tc.serving.Add(1) // a waiting poll is never closed to make room
	info.parked = true
	s.parked.Add(1)
	return &parkedPoll{s: s, conn: conn, tracked: tc, queueID: queueID, ignored: r.params.ignored(), head: head.Bytes(),
		close: closing, info: *info}
}

// answer writes the poll's answer (its events, or BAD_EVENT_QUEUE_ID
// when its queue is gone) and logs it; the connection then waits for the
// client's next request (awaitRequest).
func (p *parkedPoll) answer(events []json.RawMessage, found bool) {
	defer p.s.parked.Add(-1)
	if p.watchID != 0 {
		p.s.events.watcher.unwatch(p.watchID)
	}
	w := &parkedWriter{header: http.Header{}}
	if found {
		writeSuccess(w, pollMembers(events, p.queueID), p.ignored)
	} else {
		writeError(w, p.s.log, nil, badQueue(p.queueID))
	}
	err := w.writeTo(p.conn, p.head, p.close || p.s.events.closed.Load())
	elapsed := time.Since(p.info.start)
	p.s.metrics.observeRequest(p.info.route, w.status, elapsed)
	p.s.requestLog.line(p.info.start, http.MethodGet, p.info.route, w.status, elapsed, p.info.userID, p.info.id)
	p.tracked.serving.Add(-1)
	p.s.afterAnswer(p.conn, p.tracked, err == nil && !p.close)
}

// afterAnswer keeps an answered connection for the client's next request
// (awaitRequest), hands it back to net/http (a TLS connection), or closes
// it: after an error, when the client asked, at shutdown.
func (s *server) afterAnswer(conn net.Conn, tc *trackedConn, keep bool) {
	if keep && !s.events.closed.Load() {
		conn.SetDeadline(time.Time{})
		if s.awaitRequest(conn, tc) || s.parking.handBack(conn) {
			return
		}
	}
	conn.Close()
}

// pollMembers is a poll's answer after the envelope's own members: the
// events as the hub rendered them, not encoded again, and the queue id.
func pollMembers(events []json.RawMessage, queueID string) encodedMembers {
	n := len(`"events":[],"queue_id":""`) + len(queueID)
	for _, e := range events {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `"events":[`...)
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	b = append(b, `],"queue_id":`...)
	quoted, _ := json.Marshal(queueID) // the id of an existing queue: hex
	return encodedMembers(append(b, quoted...))
}

// ---- The hub's side: parked polls on their queues, and the answerers ----

// park holds a poll without a goroutine until its queue has events, it
// waits the poll timeout (a heartbeat), its queue is dropped or the
// server shuts down; what changed while its connection was taken is
// answered at once.
func (h *eventHub) park(q *eventQueue, p *parkedPoll) {
	q.mu.Lock()
	if q.dropped || len(q.events) > 0 || h.closed.Load() {
		events, found := render(q.events, q.firstID), !q.dropped
		q.mu.Unlock()
		h.answer(p, events, found, false)
		return
	}
	p.queue = q
	q.parked = append(q.parked, p)
	q.polls++
	q.lastPoll = h.now()
	p.timer = time.AfterFunc(h.pollTimeout, func() { h.heartbeatParked(q, p) })
	// Told when its client goes away; if it cannot be, the heartbeat
	// still ends it.
	if id, err := h.watcher.watch(p.tracked, false, func() { h.goneParked(p) }); err == nil {
		p.watchID = id
	}
	q.mu.Unlock()
}

// unparkLocked takes the queue's parked polls off it, with its events as
// they answer them; q.mu is held.
func (h *eventHub) unparkLocked(q *eventQueue) ([]*parkedPoll, []json.RawMessage) {
	parked := q.parked
	if len(parked) == 0 {
		return nil, nil
	}
	q.parked = nil
	q.polls -= len(parked)
	q.lastPoll = h.now()
	for _, p := range parked {
		p.timer.Stop()
	}
	return parked, render(q.events, q.firstID)
}

// answerParked answers the queue's parked polls, as the waker wakes it.
// It runs as one of the answerers' jobs: the queue's events are rendered
// when its answer is written, so that the jobs waiting hold no copy.
func (h *eventHub) answerParked(q *eventQueue) {
	q.mu.Lock()
	// A poll parked after this answer is woken by the next event: the
	// waker, which clears the flag too, may not have reached the queue yet.
	q.wakeDue = false
	parked, events := h.unparkLocked(q)
	q.mu.Unlock()
	for _, p := range parked {
		p.answer(events, true)
	}
}

// heartbeatParked answers a parked poll that waited the poll timeout, as
// poll does: the queue gets a heartbeat, and the poll its events.
func (h *eventHub) heartbeatParked(q *eventQueue, p *parkedPoll) { h.unparkOne(q, p, true) }

// goneParked answers a parked poll whose client went away (or sent
// something): at once, with what its queue holds, as a waiting poll's
// handler does when its request's context ends.
func (h *eventHub) goneParked(p *parkedPoll) { h.unparkOne(p.queue, p, false) }

func (h *eventHub) unparkOne(q *eventQueue, p *parkedPoll, heartbeatDue bool) {
	q.mu.Lock()
	i := slices.Index(q.parked, p)
	if i < 0 { // answered meanwhile
		q.mu.Unlock()
		return
	}
	q.parked = slices.Delete(q.parked, i, i+1)
	q.polls--
	q.lastPoll = h.now()
	p.timer.Stop()
	over, wakeOthers := false, false
	if heartbeatDue {
		over, wakeOthers = h.heartbeatLocked(q)
	}
	events, found := render(q.events, q.firstID), !q.dropped
	q.mu.Unlock()
	h.afterHeartbeat(q, over, wakeOthers)
	h.answer(p, events, found, true)
}

// answer has a parked poll's answer written. Paced (the waker,
// heartbeats, a client gone), it is one of the answerers' jobs; a drop or
// shutdown, which hold locks, write from a goroutine of their own.
func (h *eventHub) answer(p *parkedPoll, events []json.RawMessage, found, paced bool) {
	if !paced {
		go p.answer(events, found)
		return
	}
	h.runJob(func() { p.answer(events, found) })
}

// runJob has one of the answerers run job: at most parkedAnswerers
// goroutines that live while there are jobs (their stacks stay grown from
// one to the next), writing parked polls' answers and serving the
// requests that come on their connections (parking.go).
func (h *eventHub) runJob(job func()) {
	h.jobsMu.Lock()
	h.jobs = append(h.jobs, job)
	start := h.answerers < parkedAnswerers
	if start {
		h.answerers++
	}
	h.jobsMu.Unlock()
	if start {
		go h.answerer()
	}
}

// answerer runs jobs until none is left. One that takes longer than
// parkedAnswerWait (a client reading slowly) is finished outside the
// answerers: another takes its place.
func (h *eventHub) answerer() {
	for {
		h.jobsMu.Lock()
		if len(h.jobs) == 0 {
			h.answerers--
			h.jobsMu.Unlock()
			return
		}
		job := h.jobs[0]
		h.jobs[0] = nil
		h.jobs = h.jobs[1:]
		if len(h.jobs) == 0 {
			h.jobs = nil
		}
		h.jobsMu.Unlock()
		slow := time.AfterFunc(parkedAnswerWait, h.replaceAnswerer)
		job()
		if !slow.Stop() { // replaced: this goroutine is no longer an answerer
			return
		}
	}
}

// replaceAnswerer takes an answerer held up by a slow client out of the
// count, and starts another if jobs wait.
func (h *eventHub) replaceAnswerer() {
	h.jobsMu.Lock()
	start := len(h.jobs) > 0
	if !start {
		h.answerers--
	}
	h.jobsMu.Unlock()
	if start {
		go h.answerer()
	}
}
