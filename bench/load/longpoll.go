package main

// The long-poll ceiling (-serve longpoll): what net/http alone costs to
// hold the fan-out mode's polls and answer them, so that the table can
// tell zulite's part from net/http's. It serves the routes the mode uses
// with the least work: register answers a queue id; a send keeps the
// message as one event (encoded once, of about the size of zulite's) and
// wakes every waiting poll; a poll checks a Basic header and answers the
// events after last_event_id, or waits for one (50 s at most). Like
// zulite, it logs each send's duration and counts open connections for
// /metrics.

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func serveLongPoll() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var open atomic.Int64
	srv := &http.Server{Handler: longPollCeiling(&open), ConnState: func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}}
	fmt.Fprintf(os.Stderr, "msg=listening addr=%s\n", ln.Addr())
	return srv.Serve(ln)
}

func longPollCeiling(open *atomic.Int64) http.Handler {
	var mu sync.Mutex
	var events [][]byte // each without its id and closing brace
	wake := make(chan struct{})
	answer := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write([]byte(body))
	}
	mux := http.NewServeMux()
	// A queue is the events from its registration on: its id is their
	// number then.
	mux.HandleFunc("POST /api/v1/register", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		start := len(events)
		mu.Unlock()
		answer(w, `{"result":"success","msg":"","queue_id":"`+strconv.Itoa(start)+`","last_event_id":-1}`)
	})
	mux.HandleFunc("GET /api/v1/get_stream_id", func(w http.ResponseWriter, r *http.Request) {
		answer(w, `{"result":"success","msg":"","stream_id":1}`)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "zulite_open_connections %d\n", open.Load())
	})
	mux.HandleFunc("POST /api/v1/messages", func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		content := strconv.Quote(r.FormValue("content"))
		mu.Lock()
		id := len(events) + 1
		events = append(events, []byte(`{"type":"message","message":{"avatar_url":null,"client":"ZulipLoad","content":`+content+
			`,"content_type":"text/html","display_recipient":"crowd","id":`+strconv.Itoa(id)+`,"is_me_message":false,"reactions":[],"recipient_id":2,`+
			`"sender_email":"sender@example.com","sender_full_name":"sender@example.com","sender_id":502,"sender_realm_str":"zulite","stream_id":1,`+
			`"subject":"fanout","submessages":[],"timestamp":`+strconv.FormatInt(began.Unix(), 10)+`,"topic_links":[],"type":"stream"},"flags":[]`))
		close(wake)
		wake = make(chan struct{})
		mu.Unlock()
		answer(w, `{"result":"success","msg":"","id":`+strconv.Itoa(id)+`}`)
		fmt.Fprintf(os.Stderr, "route=\"POST /api/v1/messages\" status=200 duration=%v\n", time.Since(began))
	})
	mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		query := r.URL.Query()
		start, _ := strconv.Atoi(query.Get("queue_id"))
		last, _ := strconv.Atoi(query.Get("last_event_id"))
		timeout := time.NewTimer(50 * time.Second)
		defer timeout.Stop()
		for {
			mu.Lock()
			first := min(start+max(last+1, 0), len(events)) // event ids count from the queue's start
			pending, waiting := events[first:], wake
			mu.Unlock()
			var b strings.Builder
			if len(pending) > 0 {
				b.WriteString(`{"result":"success","msg":"","events":[`)
				for i, e := range pending {
					if i > 0 {
						b.WriteByte(',')
					}
					b.Write(e)
					fmt.Fprintf(&b, `,"id":%d}`, first-start+i)
				}
				b.WriteString(`],"queue_id":"` + strconv.Itoa(start) + `"}`)
				answer(w, b.String())
				return
			}
			select {
			case <-waiting:
			case <-timeout.C:
				// A heartbeat without an id of its own: the ceiling keeps none.
				answer(w, `{"result":"success","msg":"","events":[{"type":"heartbeat","id":`+strconv.Itoa(last)+`}],"queue_id":"`+strconv.Itoa(start)+`"}`)
				return
			case <-r.Context().Done():
				return
			}
		}
	})
	return mux
}
