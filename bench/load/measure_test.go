package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// commitGroups reads the four commit-group counters from /metrics, and
// a page without them is an error rather than zeros.
func TestCommitGroups_ReadsTheCountersFromMetrics(t *testing.T) {
	page := "# TYPE zulite_commit_group_writes histogram\n" +
		"zulite_commit_group_writes_bucket{le=\"1\"} 3\n" +
		"zulite_commit_group_writes_sum 42\n" +
		"zulite_commit_group_writes_count 7\n" +
		"zulite_commit_duration_seconds_sum 0.5\n" +
		"zulite_database_pages_written_total 90\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok || r.URL.Path != "/metrics" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(page))
	}))
	defer srv.Close()
	g, err := commitGroups(&target{base: srv.URL}, "key")
	if want := (groups{count: 7, writes: 42, seconds: 0.5, pages: 90}); err != nil || g != want {
		t.Errorf("got %+v, %v; want %+v", g, err, want)
	}
	if d := g.minus(groups{count: 2, writes: 12, seconds: 0.25, pages: 40}); d != (groups{5, 30, 0.25, 50}) {
		t.Errorf("minus: got %+v, want {5 30 0.25 50}", d)
	}
	page = "zulite_up 1\n"
	if _, err := commitGroups(&target{base: srv.URL}, "key"); err == nil {
		t.Error("a page without the counters: got no error, want one")
	}
}
