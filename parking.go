package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"time"

	"zulite/internal/conns"
)

// Parked polls: a long poll with nothing to answer yet waits without a
// goroutine. Through net/http, a waiting poll holds its connection's
// goroutine, the background reader's, their stacks and net/http's
// buffers, about 27 KiB; ten thousand connected clients then need more
// memory than a small device has. So a poll over HTTP/1.x that would wait
// takes its connection from net/http (conns.Parking.Take, a Hijack) and
// parks it on its queue (eventQueue.parked): what it holds is the
// connection, the header lines already set for its answer and a timer,
// well under 1 KiB. When the queue has events (the hub's waker), after
// the poll timeout (a heartbeat), when the queue is dropped, or at
// shutdown, a goroutine of a few writes the answer as net/http would and
// lets the connection go (conns.Parked): it waits for the client's next
// poll, or goes back to net/http, which serves its next request as on
// any connection it accepts. HTTP/2 polls, polls served without parking
// (tests calling the handler, --park-polls=false), wait in their handler
// as before.

// parkedAnswerers bounds the parked polls being answered at a time
// (eventHub.answer): the answers to a big channel's message go out a few
// at a time, so that a request that comes in meanwhile waits behind a few
// of them, not behind ten thousand.
const parkedAnswerers = 4

// parkedAnswerWait is how long a parked poll's answer may take to write
// as one of the answerers; a client that reads slower is written to
// outside them, within the write timeout (http.Server's, 90 s).
const parkedAnswerWait = 50 * time.Millisecond

// parkedPoll is a waiting poll without its goroutine: its connection and
// what its answer and its log line need.
type parkedPoll struct {
	s       *server
	conn    *conns.Parked // taken from net/http
	queueID string
	ignored []string // parameters the request sent that no route reads
	info    requestInfo
	queue   *eventQueue // set when it parks
	timer   *time.Timer // the heartbeat; set and stopped under the queue's lock
}

// pollPaths are the routes of GET /api/v1/events (realtime.go): on an
// answered poll's connection, a poll of these is read without net/http.
var pollPaths = []string{"/api/v1/events", "/json/events"}

// startParking has the server park its waiting polls: it answers the
// listener net/http is to serve, ln as it is where polls cannot park
// (not Linux). srv is the server net/http serves with, whose handler
// also serves the polls read on answered connections.
func (s *server) startParking(ln net.Listener, srv *http.Server) net.Listener {
	p := &conns.Parking{Handler: srv.Handler, IdleTimeout: srv.IdleTimeout, Paths: pollPaths,
		Run: s.events.runJob, Closing: s.events.closed.Load, Log: s.log}
	listening, err := p.Start(ln)
	if err != nil {
		return ln
	}
	s.parking = p
	s.metrics.parkedPolls = &s.parked
	return listening
}

// stopParking waits until every parked poll is answered (the hub's close
// answers them), or ctx ends, closes the connections waiting for a next
// request, and stops watching.
func (s *server) stopParking(ctx context.Context) {
	if s.parking == nil {
		return
	}
	for s.parked.Load() > 0 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	s.parking.Stop()
}

// parkPoll takes a poll's connection from net/http, or answers nil when
// it must wait in its handler: no parking, no request log (tests), or
// one conns.Parking.Take does not take (HTTP/2, a HEAD, a body, ...).
// The poll's answer is written by answer, later.
func (s *server) parkPoll(r *apiRequest, queueID string) *parkedPoll {
	info := infoOf(r.writer)
	if s.parking == nil || info == nil {
		return nil
	}
	conn := s.parking.Take(r.writer, r.Request)
	if conn == nil {
		return nil
	}
	info.parked = true
	s.parked.Add(1)
	return &parkedPoll{s: s, conn: conn, queueID: queueID, ignored: r.params.ignored(), info: *info}
}

// answer writes the poll's answer (its events, or BAD_EVENT_QUEUE_ID
// when its queue is gone) and logs it; the connection then waits for the
// client's next request (conns.Parked.Done).
func (p *parkedPoll) answer(events []json.RawMessage, found bool) {
	defer p.s.parked.Add(-1)
	w := conns.NewResponse()
	if found {
		writeSuccess(w, pollMembers(events, p.queueID), p.ignored)
	} else {
		writeError(w, p.s.log, nil, badQueue(p.queueID))
	}
	err := p.conn.Write(w)
	elapsed := time.Since(p.info.start)
	p.s.metrics.observeRequest(p.info.route, w.Status(), elapsed)
	p.s.requestLog.line(p.info.start, http.MethodGet, p.info.route, w.Status(), elapsed, p.info.userID, p.info.id)
	p.conn.Done(err == nil)
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
	if !isPlainID(queueID) {
		quoted, _ := json.Marshal(queueID)
		return encodedMembers(append(b, quoted...))
	}
	b = append(b, '"')
	b = append(b, queueID...)
	return encodedMembers(append(b, '"'))
}

// isPlainID tells an id (an existing queue's is hex) that JSON quotes as
// it is.
func isPlainID(id string) bool {
	for i := range len(id) {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// ---- The hub's side: parked polls on their queues, and the answerers ----

// park holds a poll without a goroutine until its queue has events, it
// waits the poll timeout (a heartbeat), its queue is dropped or the
// server shuts down; what changed while its connection was taken is
// answered at once.
func (h *eventHub) park(q *eventQueue, p *parkedPoll, mine uint64) {
	q.mu.Lock()
	// A newer poll that reached the queue while this one's connection
	// was being taken found nothing parked to replace: this one answers.
	if q.dropped || len(q.events) > 0 || h.closed.Load() || q.newest != mine {
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
	p.conn.WatchGone(func() { h.goneParked(p) })
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
// requests that come on their connections (conns.Parking.Run).
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
	var slow *time.Timer // made once, set again for each job
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
		if slow == nil {
			slow = time.AfterFunc(parkedAnswerWait, h.replaceAnswerer)
		} else {
			slow.Reset(parkedAnswerWait)
		}
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
