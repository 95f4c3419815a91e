package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// TestCrash_ScheduledMessagesSentOnceAcrossSIGKILL schedules messages
// and reminders a few seconds ahead on the real binary, SIGKILLs it again and again
// around their times and restarts it on the same file: in the end each
// was sent exactly once, none before its second, and nothing waits.
func TestCrash_ScheduledMessagesSentOnceAcrossSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary; skipped with -short")
	}
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	server := e2eStartServer(t, bin, db, "--rate-limit", "off")
	email, key := server.ownerEmail, server.ownerKey
	owner := e2eNewClient(server.baseURL, email, key)
	status, body, _ := owner.do(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}, e2ePython)
	e2eWantSuccess(t, "subscribe", status, body)

	start := time.Now().Unix()
	due := map[string]int64{}
	var last int64
	for i := range 16 {
		content := "scheduled-" + strconv.Itoa(i)
		at := start + 3 + int64(i/4) // four a second, from three seconds on
		params := url.Values{"type": {"stream"}, "to": {"1"}, "topic": {"crash"}, "content": {content}, "scheduled_delivery_timestamp": {strconv.FormatInt(at, 10)}}
		if i%4 == 3 {
			params = url.Values{"type": {"direct"}, "to": {"[1]"}, "content": {content}, "scheduled_delivery_timestamp": {strconv.FormatInt(at, 10)}}
		}
		status, body, _ := owner.do(t, http.MethodPost, "/api/v1/scheduled_messages", params, e2ePython)
		if status != 200 {
			t.Fatalf("schedule %s: %d %v", content, status, body)
		}
		due[content], last = at, at
	}
	// Reminders of one message, each known by its note.
	status, body, _ = owner.do(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"1"}, "topic": {"crash"}, "content": {"remind me"}}, e2ePython)
	e2eWantSuccess(t, "send", status, body)
	target := body["id"].(json.Number).String()
	reminders := map[string]int64{}
	for i := range 4 {
		note, at := "reminder-"+strconv.Itoa(i), start+3+int64(i)
		status, body, _ := owner.do(t, http.MethodPost, "/api/v1/reminders", url.Values{"message_id": {target}, "note": {note},
			"scheduled_delivery_timestamp": {strconv.FormatInt(at, 10)}}, e2ePython)
		if status != 200 {
			t.Fatalf("remind %s: %d %v", note, status, body)
		}
		reminders[note] = at
	}

	kills := 0
	for step := 0; time.Now().Unix() <= last+1; step++ {
		time.Sleep(time.Duration(150+(step*97)%400) * time.Millisecond)
		if err := server.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("SIGKILL: %v", err)
		}
		server.cmd.Wait()
		kills++
		server = e2eRestartServer(t, bin, db, "--rate-limit", "off")
	}
	// The last start sends what fell due while the server was down.
	owner = e2eNewClient(server.baseURL, email, key)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, body, _ := owner.do(t, http.MethodGet, "/api/v1/scheduled_messages", nil, e2ePython)
		_, waiting, _ := owner.do(t, http.MethodGet, "/api/v1/reminders", nil, e2ePython)
		list, _ := body["scheduled_messages"].([]any)
		if left, _ := waiting["reminders"].([]any); len(list)+len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still scheduled 10 s after the last start: %v", body)
		}
	}
	if err := server.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	st := reopenChecked(t, db)
	for note, at := range reminders {
		due[note] = at
	}
	sent := map[string]int{}
	st.view(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMessages).ForEach(func(_, v []byte) error {
			var m message
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			content := m.Content
			if note, ok := strings.CutPrefix(content, "You requested a reminder for the following message. Note:\n > "); ok {
				content, _, _ = strings.Cut(note, "\n")
			}
			if at, ok := due[content]; ok {
				sent[content]++
				if m.Timestamp < at {
					t.Errorf("%s: sent at %d, before its time %d", content, m.Timestamp, at)
				}
			}
			return nil
		})
	})
	for content := range due {
		if sent[content] != 1 {
			t.Errorf("%s: sent %d times, want once (%d kills)", content, sent[content], kills)
		}
	}
	t.Logf("%d messages, %d kills", len(due), kills)
}
