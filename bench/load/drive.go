package main

// Driving load: requests to a target at a concurrency, and what they
// answered and cost.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func parallel(workers, n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		})
	}
	wg.Wait()
}

type target struct {
	base   string
	pid    int // the server's process, whose CPU time drive measures
	client *http.Client
	once   sync.Once
}

func (t *target) httpClient() *http.Client {
	t.once.Do(func() {
		t.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128}}
	})
	return t.client
}

func newRequest(t *target, method, path string, params url.Values, email, key string) *http.Request {
	var body io.Reader
	if params != nil {
		body = strings.NewReader(params.Encode())
	}
	req, _ := http.NewRequest(method, t.base+path, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.SetBasicAuth(email, key)
	return req
}

func getJSON(t *target, path string, a account, into any) error {
	resp, err := t.httpClient().Do(newRequest(t, http.MethodGet, path, nil, a.email, a.key))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(into)
}

type result struct {
	rps      float64
	p50, p99 time.Duration
	cpu      time.Duration // the server's CPU time (user + system) per request
	err      error
}

// drive sends n requests with c workers over keep-alive connections and
// checks every status.
func drive(t *target, c, n, wantStatus int, build func(i int) *http.Request) result {
	return driveRange(t, c, 0, n, wantStatus, build).result()
}

// sample is what a stretch of a scenario's requests answered and cost;
// stretches of the same scenario add up (sample.add) to one result.
type sample struct {
	latencies    []time.Duration
	elapsed, cpu time.Duration
	err          error
}

// driveRange sends requests from to to-1 (build's argument) with c
// workers and checks every status.
func driveRange(t *target, c, from, to, wantStatus int, build func(i int) *http.Request) sample {
	client := t.httpClient()
	n := to - from
	latencies := make([]time.Duration, n)
	var failure atomic.Value
	cpuBefore := cpuTime(t.pid)
	start := time.Now()
	parallel(c, n, func(i int) {
		req := build(from + i)
		began := time.Now()
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != wantStatus {
				err = fmt.Errorf("%s %s: got status %d, want %d", req.Method, req.URL.Path, resp.StatusCode, wantStatus)
			}
		}
		latencies[i] = time.Since(began)
		if err != nil {
			failure.CompareAndSwap(nil, err)
		}
	})
	s := sample{latencies: latencies, elapsed: time.Since(start), cpu: cpuTime(t.pid) - cpuBefore}
	if err, ok := failure.Load().(error); ok {
		s.err = err
	}
	return s
}

func (s *sample) add(o sample) {
	s.latencies = append(s.latencies, o.latencies...)
	s.elapsed += o.elapsed
	s.cpu += o.cpu
	if s.err == nil {
		s.err = o.err
	}
}

func (s sample) result() result {
	n := len(s.latencies)
	if n == 0 {
		return result{err: s.err}
	}
	slices.Sort(s.latencies)
	return result{rps: float64(n) / s.elapsed.Seconds(), p50: s.latencies[n/2], p99: s.latencies[min(n-1, n*99/100)], cpu: s.cpu / time.Duration(n), err: s.err}
}
