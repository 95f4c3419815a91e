package main

import (
	"encoding/json"
	"slices"
	"testing"
)

// The fan-out's scanner reads what encoding/json reads of a poll's answer.
func TestScanPoll_ReadsWhatEncodingJSONReads(t *testing.T) {
	answer := []byte(`{"result":"success","msg":"","events":[{"type":"message","message":{"avatar_url":null,"client":"a \"quoted\" {client}","content":"<p>\"id\":7 [x]</p>","display_recipient":[{"id":9,"email":"x"}],"id":41,"reactions":[],"flags":["read"],"timestamp":1.5e9},"flags":[],"id":3},{"type":"heartbeat","id":4},{"type":"presence","presences":{"12":{"active_timestamp":1,"idle_timestamp":1}},"id":5}],"queue_id":"ab"}`)
	_, _, got, err := scanPoll(answer, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Events []struct {
			ID      int64  `json:"id"`
			Type    string `json:"type"`
			Message struct {
				ID uint64 `json:"id"`
			} `json:"message"`
		} `json:"events"`
	}
	if err := json.Unmarshal(answer, &want); err != nil {
		t.Fatal(err)
	}
	var wantEvents []pollEvent
	for _, e := range want.Events {
		wantEvents = append(wantEvents, pollEvent{e.ID, e.Type == "message", e.Message.ID, e.Type == "presence"})
	}
	if !slices.Equal(got, wantEvents) {
		t.Fatalf("scanned %+v, want %+v", got, wantEvents)
	}
	result, code, _, err := scanPoll([]byte(`{"result":"error","msg":"Bad event queue ID: x","queue_id":"x","code":"BAD_EVENT_QUEUE_ID"}`), nil)
	if err != nil || result != "error" || code != "BAD_EVENT_QUEUE_ID" {
		t.Fatalf("error answer: %q %q %v", result, code, err)
	}
	for _, bad := range []string{``, `{`, `{"events":[{"id":}]}`, `{"result":"success"`, `{"events":[{"id":1]}`} {
		if _, _, _, err := scanPoll([]byte(bad), nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
