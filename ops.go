package main

import (
	"bufio"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	runtimemetrics "runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Operations: one log line per request, a request id, and the metrics
// GET /metrics serves in Prometheus's text format.

// requestInfo is filled in while a request is served, for its log line.
type requestInfo struct {
	id     string
	route  string
	userID uint64
	start  time.Time
	parked bool // a parked poll (parking.go): it logs itself when answered
}

// infoOf finds the request's info through the ResponseWriter that
// withRequestLog gave it (no context: a context would copy the request).
func infoOf(w http.ResponseWriter) *requestInfo {
	if sw, ok := w.(*statusWriter); ok {
		return &sw.info
	}
	return nil
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
	info   requestInfo
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requestIDs are a random per-process prefix and a counter: unique, and
// cheap enough for every request.
type requestIDs struct {
	prefix string
	next   atomic.Uint64
}

func newRequestIDs() *requestIDs {
	b := make([]byte, 4)
	rand.Read(b)
	return &requestIDs{prefix: hex.EncodeToString(b)}
}

func (ids *requestIDs) new() string {
	var b [32]byte // made in one allocation, the string's own
	return string(strconv.AppendUint(append(append(b[:0], ids.prefix...), '-'), ids.next.Add(1), 36))
}

// withRequestLog gives each request an id (X-Request-Id), then logs one
// line: method, route pattern, status, duration, user id, request id.
// Nothing else of the request is logged: no query, no headers, no body,
// so no secret can reach the log.
func (s *server) withRequestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, info: requestInfo{id: s.requestIDs.new(), start: start}}
		w.Header().Set("X-Request-Id", sw.info.id)
		next.ServeHTTP(sw, r)
		if sw.info.parked {
			return
		}
		elapsed := time.Since(start)
		route := sw.info.route
		if route == "" {
			route = "unknown"
		}
		s.metrics.observeRequest(route, sw.status, elapsed)
		s.requestLog.line(start, r.Method, route, sw.status, elapsed, sw.info.userID, sw.info.id)
	})
}

// requestLog writes the request lines as slog's text or JSON handler
// would, but without its general machinery: they are most of the log.
// Lines are written in groups: a line that finds no write under way is
// written at once by its own request, which then also writes whatever
// lines others queued meanwhile, so a busy server makes one write for
// many answers (at 10,000 listeners a send is 10,000 lines) rather than
// one each. Every line is formatted and queued after its answer is out.
type requestLog struct {
	out  io.Writer // nil: no request lines
	json bool
	pool sync.Pool

	mu      sync.Mutex
	drained sync.Cond // signalled when a write has taken the queue
	queue   []byte    // whole lines waiting for the write under way
	spare   []byte    // the buffer of the last write, for the next queue
	writing bool
}

// maxQueuedLog bounds the lines waiting behind a slow write (a blocked
// stderr): past it a request waits, as it would for its own write.
const maxQueuedLog = 1 << 20

func (l *requestLog) line(at time.Time, method, route string, status int, elapsed time.Duration, userID uint64, id string) {
	if l == nil || l.out == nil {
		return
	}
	bp, _ := l.pool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := (*bp)[:0]
	if l.json {
		b = append(b, `{"time":"`...)
		b = at.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","level":"INFO","msg":"request","method":`...)
		b = strconv.AppendQuote(b, method)
		b = append(b, `,"route":`...)
		b = strconv.AppendQuote(b, route)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, `,"duration":`...)
		b = strconv.AppendInt(b, int64(elapsed), 10)
		b = append(b, `,"user_id":`...)
		b = strconv.AppendUint(b, userID, 10)
		b = append(b, `,"request_id":`...)
		b = strconv.AppendQuote(b, id)
		b = append(b, "}\n"...)
	} else {
		b = append(b, "time="...)
		b = at.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		b = append(b, " level=INFO msg=request method="...)
		b = append(b, method...)
		b = append(b, " route="...)
		b = strconv.AppendQuote(b, route)
		b = append(b, " status="...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, " duration="...)
		b = append(b, elapsed.String()...)
		b = append(b, " user_id="...)
		b = strconv.AppendUint(b, userID, 10)
		b = append(b, " request_id="...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	l.write(b)
	*bp = b
	l.pool.Put(bp)
}

// write queues whole lines, and writes the queue when no one else is.
// The request that writes does it once: lines queued meanwhile are
// written by a goroutine of their own, so that a busy server's log never
// keeps one request's connection waiting for the next.
func (l *requestLog) write(b []byte) {
	l.mu.Lock()
	if l.drained.L == nil {
		l.drained.L = &l.mu
	}
	for len(l.queue) > maxQueuedLog {
		l.drained.Wait()
	}
	l.queue = append(l.queue, b...)
	if l.writing {
		l.mu.Unlock()
		return
	}
	l.writing = true
	l.writeQueue()
	if len(l.queue) > 0 {
		l.mu.Unlock()
		go l.drain()
		return
	}
	l.writing = false
	l.mu.Unlock()
}

// drain writes the queue until it is empty.
func (l *requestLog) drain() {
	l.mu.Lock()
	for len(l.queue) > 0 {
		l.writeQueue()
	}
	l.writing = false
	l.mu.Unlock()
}

// writeQueue writes what is queued, with l.mu held but for the write.
func (l *requestLog) writeQueue() {
	out := l.queue
	l.queue, l.spare = l.spare[:0], nil
	l.drained.Broadcast()
	l.mu.Unlock()
	l.out.Write(out)
	l.mu.Lock()
	if cap(out) <= 256<<10 { // what a send to 2,000 listeners logs, kept for the next
		l.spare = out[:0]
	}
}

// latencyBuckets are the upper bounds, in seconds, of the latency and
// commit histograms.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60}

// groupBuckets are the upper bounds of the commit group size histogram.
var groupBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}

type histogram struct {
	bounds []float64
	counts []uint64 // one per bound, then +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

// metrics are zulite's counters, kept under one lock (a scrape is rare,
// an observation is a few additions).
// routeStatus keys the request counts: a route pattern and a status.
type routeStatus struct {
	route  string
	status int
}

type metrics struct {
	mu          sync.Mutex
	requests    map[routeStatus]uint64
	latency     map[string]*histogram
	commitGroup *histogram
	commitTime  *histogram
	// openConns counts open connections: the connection limiter's (nil
	// when serving without one, as in tests).
	openConns func() int
	// connsRefused counts connections closed by --max-connections (nil
	// when serving without the bound, as in tests).
	connsRefused *atomic.Int64
	// parkedPolls counts the long polls waiting parked (parking.go; nil
	// when polls are not parked).
	parkedPolls *atomic.Int64
	// pushes: the store whose push outbox is reported, pushes on or off
	// (nil for metrics kept without a server; push_outbox.go).
	pushes *store
	// mails: the mailer whose sends are counted (nil without a relay;
	// mail.go).
	mails *mailer
	// passwordHashes counts the password hasher's argon2id derivations
	// (passwords.go; nil for metrics kept without a server).
	passwordHashes *atomic.Int64
}

func newMetrics() *metrics {
	return &metrics{requests: map[routeStatus]uint64{}, latency: map[string]*histogram{},
		commitGroup: newHistogram(groupBuckets), commitTime: newHistogram(latencyBuckets)}
}

func (m *metrics) observeRequest(route string, status int, elapsed time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[routeStatus{route, status}]++
	h := m.latency[route]
	if h == nil {
		h = newHistogram(latencyBuckets)
		m.latency[route] = h
	}
	h.observe(elapsed.Seconds())
}

// observeCommit is the store's hook for each commit group.
func (m *metrics) observeCommit(writes int, elapsed time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commitGroup.observe(float64(writes))
	m.commitTime.observe(elapsed.Seconds())
}

// write renders every metric in Prometheus's text format.
func (m *metrics) write(w io.Writer, db storeFigures) {
	var out strings.Builder
	m.render(&out, db) // under the lock; the network write is not
	io.WriteString(w, out.String())
}

func (m *metrics) render(b io.Writer, db storeFigures) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintln(b, "# HELP zulite_http_requests_total API requests answered, by route pattern and status.")
	fmt.Fprintln(b, "# TYPE zulite_http_requests_total counter")
	keys := make([]routeStatus, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sortFunc(keys, func(a, b routeStatus) int { return cmp.Or(strings.Compare(a.route, b.route), a.status-b.status) })
	for _, k := range keys {
		fmt.Fprintf(b, "zulite_http_requests_total{route=%s,status=\"%d\"} %d\n", quoteLabel(k.route), k.status, m.requests[k])
	}
	fmt.Fprintln(b, "# HELP zulite_http_request_duration_seconds Time to answer API requests, by route pattern.")
	fmt.Fprintln(b, "# TYPE zulite_http_request_duration_seconds histogram")
	routes := make([]string, 0, len(m.latency))
	for r := range m.latency {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	for _, r := range routes {
		writeHistogram(b, "zulite_http_request_duration_seconds", "route="+quoteLabel(r)+",", m.latency[r])
	}
	fmt.Fprintln(b, "# HELP zulite_commit_group_writes Writes sharing one storage commit.")
	fmt.Fprintln(b, "# TYPE zulite_commit_group_writes histogram")
	writeHistogram(b, "zulite_commit_group_writes", "", m.commitGroup)
	fmt.Fprintln(b, "# HELP zulite_commit_duration_seconds Time of one storage commit, disk sync included.")
	fmt.Fprintln(b, "# TYPE zulite_commit_duration_seconds histogram")
	writeHistogram(b, "zulite_commit_duration_seconds", "", m.commitTime)
	fmt.Fprintln(b, "# HELP zulite_database_bytes Size of the database file.")
	fmt.Fprintln(b, "# TYPE zulite_database_bytes gauge")
	fmt.Fprintf(b, "zulite_database_bytes %d\n", db.bytes)
	fmt.Fprintln(b, "# HELP zulite_database_pages_written_total Data and freelist pages written by storage commits, overflow pages included (each commit also writes one meta page).")
	fmt.Fprintln(b, "# TYPE zulite_database_pages_written_total counter")
	fmt.Fprintf(b, "zulite_database_pages_written_total %d\n", db.pagesWritten)
	fmt.Fprintln(b, "# HELP go_gc_gogc_percent The garbage collector's GOGC: zulite's default or the environment's.")
	fmt.Fprintln(b, "# TYPE go_gc_gogc_percent gauge")
	fmt.Fprintf(b, "go_gc_gogc_percent %d\n", gcPercent())
	fmt.Fprintln(b, "# HELP go_gc_heap_live_bytes Heap memory held by live objects, as the last garbage collection found it: what zulite keeps, without the collector's headroom that RSS also holds.")
	fmt.Fprintln(b, "# TYPE go_gc_heap_live_bytes gauge")
	fmt.Fprintf(b, "go_gc_heap_live_bytes %d\n", heapLive())
	fmt.Fprintln(b, "# HELP zulite_open_connections HTTP connections open now.")
	fmt.Fprintln(b, "# TYPE zulite_open_connections gauge")
	open := 0
	if m.openConns != nil {
		open = m.openConns()
	}
	fmt.Fprintf(b, "zulite_open_connections %d\n", open)
	if m.passwordHashes != nil {
		fmt.Fprintln(b, "# HELP zulite_password_hashes_total Password hashes computed (argon2id, 12 MiB each): one per password login, whether the account exists or not, and one per password set.")
		fmt.Fprintln(b, "# TYPE zulite_password_hashes_total counter")
		fmt.Fprintf(b, "zulite_password_hashes_total %d\n", m.passwordHashes.Load())
	}
	if m.pushes != nil {
		writePushMetrics(b, m.pushes)
	}
	if m.mails != nil {
		fmt.Fprintln(b, "# HELP zulite_emails_total E-mails (invitations) handed to the SMTP relay, and those given up after every attempt or not queued.")
		fmt.Fprintln(b, "# TYPE zulite_emails_total counter")
		fmt.Fprintf(b, "zulite_emails_total{result=\"sent\"} %d\n", m.mails.sent.Load())
		fmt.Fprintf(b, "zulite_emails_total{result=\"failed\"} %d\n", m.mails.failed.Load())
		fmt.Fprintln(b, "# HELP zulite_emails_queued E-mails waiting to be sent.")
		fmt.Fprintln(b, "# TYPE zulite_emails_queued gauge")
		fmt.Fprintf(b, "zulite_emails_queued %d\n", len(m.mails.queue))
	}
	if m.parkedPolls != nil {
		fmt.Fprintln(b, "# HELP zulite_parked_polls Long polls of GET /api/v1/events waiting without a goroutine of their own: their connections, counted among the open ones.")
		fmt.Fprintln(b, "# TYPE zulite_parked_polls gauge")
		fmt.Fprintf(b, "zulite_parked_polls %d\n", m.parkedPolls.Load())
	}
	if m.connsRefused != nil {
		fmt.Fprintln(b, "# HELP zulite_connections_refused_total Connections closed by --max-connections: newcomers without room, and quiet ones closed to make room.")
		fmt.Fprintln(b, "# TYPE zulite_connections_refused_total counter")
		fmt.Fprintf(b, "zulite_connections_refused_total %d\n", m.connsRefused.Load())
	}
}

func writeHistogram(b io.Writer, name, labels string, h *histogram) {
	cumulative := uint64(0)
	for i, bound := range h.bounds {
		cumulative += h.counts[i]
		fmt.Fprintf(b, "%s_bucket{%sle=%q} %d\n", name, labels, formatFloat(bound), cumulative)
	}
	fmt.Fprintf(b, "%s_bucket{%sle=\"+Inf\"} %d\n", name, labels, h.n)
	trimmed := strings.TrimSuffix(labels, ",")
	if trimmed != "" {
		trimmed = "{" + trimmed + "}"
	}
	fmt.Fprintf(b, "%s_sum%s %s\n", name, trimmed, formatFloat(h.sum))
	fmt.Fprintf(b, "%s_count%s %d\n", name, trimmed, h.n)
}

func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// quoteLabel quotes a label value as Prometheus's text format wants.
func quoteLabel(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v) + `"`
}

// bufferedLog is the log's destination: lines are gathered and written
// every 100 ms (and at close), so that logging a line per request does
// not cost a system call per request.
type bufferedLog struct {
	mu     sync.Mutex
	w      *bufio.Writer
	dst    io.Writer
	closed bool
	done   chan struct{}
	once   sync.Once
}

func newBufferedLog(dst io.Writer) *bufferedLog {
	l := &bufferedLog{w: bufio.NewWriterSize(dst, 64<<10), dst: dst, done: make(chan struct{})}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-tick.C:
				l.flush()
			}
		}
	}()
	return l
}

func (l *bufferedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if l.closed {
		l.flushLocked() // after close, lines go straight out
	}
	return n, err
}

func (l *bufferedLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

// flushLocked writes out the buffer; a failed write (a full pipe, say)
// drops what was buffered rather than ending all logging, as a bufio
// error would.
func (l *bufferedLog) flushLocked() {
	if err := l.w.Flush(); err != nil {
		l.w.Reset(l.dst)
	}
}

// close writes what is left and stops the flusher; later lines are
// written at once.
func (l *bufferedLog) close() {
	l.once.Do(func() { close(l.done) })
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.flushLocked()
}

// heapLive reads the live heap the last collection marked.
func heapLive() uint64 {
	sample := []runtimemetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtimemetrics.Read(sample)
	if sample[0].Value.Kind() != runtimemetrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// gcPercent reads the GOGC in force from runtime/metrics: -1 when the
// collector is off (GOGC=off), which the runtime keeps as -1 in a uint64.
func gcPercent() int64 {
	sample := []runtimemetrics.Sample{{Name: "/gc/gogc:percent"}}
	runtimemetrics.Read(sample)
	if sample[0].Value.Kind() != runtimemetrics.KindUint64 {
		return 0
	}
	return int64(sample[0].Value.Uint64())
}
