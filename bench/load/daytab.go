package main

// The day's web tabs (dayrun.go): each registers as the web app does and
// long-polls its queue on a connection of its own, registering again
// after BAD_EVENT_QUEUE_ID, and keeps the message events it received.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// dayTab is one person's web tab: it registers, then long-polls its
// queue on a connection of its own, and registers again, as the web
// app does, when the server says BAD_EVENT_QUEUE_ID.
type dayTab struct {
	d       *dayRun
	person  int
	source  *net.TCPAddr
	started atomic.Bool
	done    chan struct{}

	queue string
	last  int64
	r     *bufio.Reader
	// receipts are read once done is closed.
	receipts []receipt

	mu     sync.Mutex
	conn   net.Conn
	closed bool
}

func (t *dayTab) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.conn != nil {
		t.conn.Close()
	}
}

// run is the tab's life; firstDone is called when its first
// registration has answered or given up.
func (t *dayTab) run(firstDone func()) {
	t.started.Store(true)
	defer close(t.done)
	defer func() {
		if firstDone != nil {
			firstDone()
		}
	}()
	d := t.d
	again := false
	var raw []byte
	var events []pollEvent
	for !d.stopped.Load() {
		if t.queue == "" {
			ok := t.register(again)
			if firstDone != nil {
				firstDone()
				firstDone = nil
			}
			if !ok {
				select { // the web app tries again a little later
				case <-time.After(2 * time.Second):
				case <-d.ctx.Done():
				}
				continue
			}
		}
		status, body, err := t.poll(raw)
		at := time.Now()
		if err != nil {
			if d.stopped.Load() {
				return
			}
			t.mu.Lock()
			dialled := t.conn != nil
			if dialled {
				t.conn.Close()
				t.conn = nil
			}
			t.mu.Unlock()
			if dialled {
				d.reconnects.Add(1) // the server closed it; the next poll dials again
			} else {
				d.fail("dial a poll connection: "+err.Error(), "")
				return
			}
			continue
		}
		raw = body
		result, code, scanned, err := scanPoll(raw, events[:0])
		events = scanned
		if status == http.StatusBadRequest && code == "BAD_EVENT_QUEUE_ID" {
			d.badQueue.Add(1)
			t.queue, again = "", true
			continue
		}
		if err != nil || status != http.StatusOK || result != "success" {
			d.fail(fmt.Sprintf("GET /api/v1/events: got status %d %s, want 200", status, code), string(raw))
			return
		}
		for _, e := range events {
			t.last = max(t.last, e.id)
			switch {
			case e.message:
				t.receipts = append(t.receipts, receipt{e.messageID, at})
				d.received.Add(1)
			case e.presence:
				d.presences.Add(1)
			}
		}
	}
}

// register registers the tab's queue, as the web app does.
func (t *dayTab) register(again bool) bool {
	d := t.d
	body, status := d.call(opRegisterTab, d.people[t.person].auth, http.MethodPost, "/api/v1/register", tabRegister, d.c.registerTimeout)
	if status != http.StatusOK {
		return false
	}
	var queue string
	var last, presenceLast int64 = -1, -1
	if err := scanMembers(body, map[string]*string{"queue_id": &queue}, map[string]*int64{"last_event_id": &last, "presence_last_update_id": &presenceLast}); err != nil || queue == "" {
		d.fail(fmt.Sprintf("POST /api/v1/register: %d bytes answered without a queue_id (%v)", len(body), err), string(body[:min(len(body), 300)]))
		return false
	}
	d.stateBytes.Add(int64(len(body)))
	d.states.Add(1)
	if presenceLast >= 0 {
		d.presenceLast[t.person].Store(presenceLast)
	}
	if again {
		d.reRegistered.Add(1)
	} else {
		d.tabsRegistered.Add(1)
	}
	t.queue, t.last = queue, last
	return true
}

// poll sends one long poll on the tab's connection, dialling it first
// if need be, and reads its answer.
func (t *dayTab) poll(raw []byte) (int, []byte, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return 0, nil, net.ErrClosed
	}
	if t.conn == nil {
		dialer := net.Dialer{LocalAddr: t.source, Timeout: 10 * time.Second}
		conn, err := dialer.Dial("tcp", t.d.host)
		if err != nil {
			t.mu.Unlock()
			return 0, nil, err
		}
		t.conn, t.r = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	conn := t.conn
	t.mu.Unlock()
	request := "GET /api/v1/events?queue_id=" + url.QueryEscape(t.queue) + "&last_event_id=" + strconv.FormatInt(t.last, 10) +
		" HTTP/1.1\r\nHost: " + t.d.host + "\r\nAuthorization: " + t.d.people[t.person].auth + "\r\nUser-Agent: ZulipDayLoad/1.0\r\n\r\n"
	if _, err := io.WriteString(conn, request); err != nil {
		return 0, nil, err
	}
	return readAnswer(t.r, raw)
}

// scanMembers reads the named string and integer members of a JSON
// object's top level, passing over the rest unread (a register answer
// is hundreds of kilobytes, of which the tab needs two numbers).
func scanMembers(b []byte, strs map[string]*string, ints map[string]*int64) error {
	s := &scanner{b: b}
	return s.object(func(key string) error {
		if into, ok := strs[key]; ok {
			v, err := s.str()
			*into = v
			return err
		}
		if into, ok := ints[key]; ok {
			v, err := s.int()
			*into = v
			return err
		}
		return s.skip()
	})
}
