package main

// What the servers say of themselves: commit groups from /metrics,
// processor time and anonymous memory from /proc.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// groups is what zulite's /metrics says of its commit groups: how many,
// the writes in them, the seconds they took and the pages they wrote.
type groups struct{ count, writes, seconds, pages float64 }

func (g groups) minus(h groups) groups {
	return groups{g.count - h.count, g.writes - h.writes, g.seconds - h.seconds, g.pages - h.pages}
}

func (g groups) plus(h groups) groups {
	return groups{g.count + h.count, g.writes + h.writes, g.seconds + h.seconds, g.pages + h.pages}
}

// commitGroups reads the commit-group counters from a server's /metrics
// (zulite's, as the owner, an administrator, or the write ceiling's).
func commitGroups(z *target, key string) (groups, error) {
	resp, err := z.httpClient().Do(newRequest(z, http.MethodGet, "/metrics", nil, "owner@zulite.localhost", key))
	if err != nil {
		return groups{}, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return groups{}, fmt.Errorf("GET /metrics: got status %d, want 200", resp.StatusCode)
	}
	var g groups
	found := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "zulite_commit_group_writes_count":
			g.count = v
		case "zulite_commit_group_writes_sum":
			g.writes = v
		case "zulite_commit_duration_seconds_sum":
			g.seconds = v
		case "zulite_database_pages_written_total":
			g.pages = v
		default:
			continue
		}
		found++
	}
	if found != 4 {
		return groups{}, fmt.Errorf("GET /metrics: %d of the 4 commit samples", found)
	}
	return g, nil
}

// cpuTime answers the CPU time, user and system, that a process has used
// so far, from /proc (in clock ticks of 10 ms: a phase uses hundreds of
// them, so its per-request figure is good to a few percent).
func cpuTime(pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime and stime are the 12th and 13th of them.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const clockTick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * clockTick
}

// watchRSS samples a process's RssAnon until the returned function is
// called, which answers the peak in KiB.
func watchRSS(pid int) func() int {
	ctx, cancel := context.WithCancel(context.Background())
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if kib := rssAnon(pid); int64(kib) > peak.Load() {
				peak.Store(int64(kib))
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() int {
		cancel()
		<-done
		return int(peak.Load())
	}
}

func rssAnon(pid int) int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kib, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kib
		}
	}
	return 0
}
