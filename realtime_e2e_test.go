package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rtClient talks to a running binary with long-poll-friendly timeouts.
type rtClient struct {
	base, email, key string
	http             *http.Client
}

func (c rtClient) call(t *testing.T, method, path string, params url.Values) (int, map[string]any) {
	t.Helper()
	var body io.Reader
	target := c.base + path
	if method == http.MethodGet {
		target += "?" + params.Encode()
	} else {
		body = strings.NewReader(params.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil { // not Fatal: call runs in the soak test's workers too
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.SetBasicAuth(c.email, c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// mustCall is call for a request the test needs answered with want; any
// other answer stops the test. Only the test's own goroutine may use it.
// It shows the answer's msg, never the body, which may hold a key.
func (c rtClient) mustCall(t *testing.T, method, path string, params url.Values, want int) map[string]any {
	t.Helper()
	code, body := c.call(t, method, path, params)
	if code != want {
		t.Fatalf("%s %s: got %d %v, want %d", method, path, code, body["msg"], want)
	}
	return body
}

func ids(v any) []uint64 {
	var out []uint64
	for _, x := range v.([]any) {
		out = append(out, uint64(x.(float64)))
	}
	return out
}

// rssAnonKiB reads a process's anonymous resident memory: bbolt's mapped
// file pages are not counted.
func rssAnonKiB(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("RssAnon: %v", err)
			}
			return kib
		}
	}
	t.Skip("no RssAnon in /proc/PID/status")
	return 0
}

// TestRealtime_ThroughTheBinary registers queues and long-polls them on
// a real zulite over real sockets.
func TestRealtime_ThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	t.Parallel() // independent of the other tests: its own store or server
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--event-queue-timeout", "2s")
	httpClient := &http.Client{Timeout: 70 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	owner := rtClient{srv.baseURL, srv.ownerEmail, srv.ownerKey, httpClient}
	for _, email := range []string{"alice@example.com", "bob@example.com"} {
		name, _, _ := strings.Cut(email, "@") // a full name may not hold "@", as in Zulip
		if code, body := owner.call(t, http.MethodPost, "/api/v1/users", url.Values{"email": {email}, "password": {"password-1"}, "full_name": {name}}); code != 200 {
			t.Fatalf("create %s: %d %v", email, code, body)
		}
	}
	login := func(email string) rtClient {
		body := rtClient{srv.baseURL, "", "", httpClient}.mustCall(t, http.MethodPost, "/api/v1/fetch_api_key", url.Values{"username": {email}, "password": {"password-1"}}, http.StatusOK)
		return rtClient{srv.baseURL, email, body["api_key"].(string), httpClient}
	}
	alice, bob := login("alice@example.com"), login("bob@example.com")
	for _, c := range []rtClient{alice, bob} {
		c.mustCall(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}, http.StatusOK)
	}
	send := func(t *testing.T, topic string) uint64 {
		t.Helper()
		body := bob.mustCall(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {topic}, "content": {"hi"}}, http.StatusOK)
		return uint64(body["id"].(float64))
	}
	sent := []uint64{send(t, "a"), send(t, "b"), send(t, "a")}

	var queue string
	t.Run("register answers the unread state GET /messages shows", func(t *testing.T) {
		reg := alice.mustCall(t, http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message","update_message_flags"]`}}, http.StatusOK)
		queue = reg["queue_id"].(string)
		var fromRegister []uint64
		for _, s := range reg["unread_msgs"].(map[string]any)["streams"].([]any) {
			fromRegister = append(fromRegister, ids(s.(map[string]any)["unread_message_ids"])...)
		}
		slices.Sort(fromRegister)
		_, page := alice.call(t, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"}, "narrow": {`[["is","unread"]]`}})
		var fromMessages []uint64
		for _, m := range page["messages"].([]any) {
			fromMessages = append(fromMessages, uint64(m.(map[string]any)["id"].(float64)))
		}
		if !slices.Equal(fromRegister, sent) || !slices.Equal(fromMessages, sent) {
			t.Errorf("unread: register %v, GET /messages %v, want %v", fromRegister, fromMessages, sent)
		}
	})

	t.Run("a send wakes a waiting poll", func(t *testing.T) {
		polled := make(chan map[string]any)
		go func() {
			_, body := alice.call(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queue}, "last_event_id": {"-1"}})
			polled <- body
		}()
		time.Sleep(200 * time.Millisecond)
		sentAt := time.Now()
		id := send(t, "c")
		body := <-polled
		t.Logf("the poll answered %v after the send's answer began to be sent", time.Since(sentAt))
		events := body["events"].([]any)
		if len(events) != 1 || events[0].(map[string]any)["message"].(map[string]any)["id"] != float64(id) {
			t.Errorf("woken poll: got %v, want the new message", body)
		}
		sent = append(sent, id)
	})

	t.Run("marking the channel read is one event with the ids that changed", func(t *testing.T) {
		_, sid := alice.call(t, http.MethodGet, "/api/v1/get_stream_id", url.Values{"stream": {"general"}})
		alice.call(t, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {fmt.Sprint(sid["stream_id"])}})
		_, body := alice.call(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {queue}, "last_event_id": {"0"}, "dont_block": {"true"}})
		events := body["events"].([]any)
		if len(events) != 1 {
			t.Fatalf("events: got %v, want one", events)
		}
		e := events[0].(map[string]any)
		if e["type"] != "update_message_flags" || e["flag"] != "read" || e["op"] != "add" || !slices.Equal(ids(e["messages"]), sent) {
			t.Errorf("event: got %v, want read added to %v", e, sent)
		}
	})

	t.Run("an expired queue is BAD_EVENT_QUEUE_ID", func(t *testing.T) {
		reg := bob.mustCall(t, http.MethodPost, "/api/v1/register", nil, http.StatusOK)
		idle := reg["queue_id"].(string)
		time.Sleep(3500 * time.Millisecond) // --event-queue-timeout 2s, swept every second
		code, body := bob.call(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {idle}, "dont_block": {"true"}})
		if code != 400 || body["code"] != "BAD_EVENT_QUEUE_ID" || body["queue_id"] != idle {
			t.Errorf("got %d %v, want 400 BAD_EVENT_QUEUE_ID with the queue id", code, body)
		}
	})

	t.Run("1000 idle long polls, then shutdown ends them", func(t *testing.T) {
		// A server of its own, whose accounts come through the admin socket
		// without passwords, so that no password hashing has grown its heap.
		const users, perUser = 50, maxQueuesPerUser
		db := filepath.Join(t.TempDir(), "polls.db")
		srv := e2eStartServer(t, bin, db)
		var clients []rtClient
		for i := range users {
			email := fmt.Sprintf("poller%d@example.com", i)
			r := e2eRunCLI(t, bin, "user", "add", email, "--db", db)
			r.wantOK(t, "user add "+email)
			clients = append(clients, rtClient{srv.baseURL, email, strings.TrimSpace(r.stdout), httpClient})
		}
		type poll struct {
			c     rtClient
			queue string
		}
		var polls []poll
		for _, c := range clients {
			for range perUser {
				reg := c.mustCall(t, http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}}, http.StatusOK)
				polls = append(polls, poll{c, reg["queue_id"].(string)})
			}
		}
		pid := srv.cmd.Process.Pid
		before := rssAnonKiB(t, pid)
		var wg sync.WaitGroup
		for _, p := range polls {
			wg.Go(func() {
				p.c.call(t, http.MethodGet, "/api/v1/events", url.Values{"queue_id": {p.queue}, "last_event_id": {"-1"}})
			})
		}
		time.Sleep(2 * time.Second) // every poll is waiting now
		during := rssAnonKiB(t, pid)
		t.Logf("RssAnon: %d KiB before, %d KiB with %d polls waiting: %.1f KiB a poll", before, during, len(polls), float64(during-before)/float64(len(polls)))
		if perPoll := float64(during-before) / float64(len(polls)); perPoll > 48 {
			t.Errorf("a waiting poll costs %.1f KiB, want well under 48 KiB (the README says about 20)", perPoll)
		}
		if during > 64*1024 {
			t.Errorf("RssAnon with %d waiting polls: got %d KiB, want under 64 MiB", len(polls), during)
		}
		stopped := time.Now()
		if err := srv.stop(); err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
		wg.Wait()
		if took := time.Since(stopped); took > 5*time.Second {
			t.Errorf("shutdown with %d waiting polls took %v, want well under the 50 s poll", len(polls), took)
		}
	})
}
