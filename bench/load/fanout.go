package main

// The fan-out mode (-fanout 1000,10000): how zulite holds many clients
// long-polling GET /api/v1/events and how a channel message reaches them,
// as a big organisation uses it. Accounts (-fanout-accounts, 500) all
// subscribe to one channel; for each size, a fresh zulite on a copy of
// that database first takes -sends channel messages, one every
// -send-every, with nobody listening; then the accounts register the
// size's queues between them (at most 20 an account, zulite's cap), each
// queue long-polled on its own connection, and the same messages are
// sent again. The table shows zulite's RssAnon idle, with the queues
// registered, with every poll waiting, and after the sends; the send's
// median latency with and without listeners; the time from a send's
// start to each queue's receipt of it (p50, p99); and the events
// delivered of those expected. Any refused connection or dropped queue
// fails the run.
//
// Connections: zulite admits --max-connections (default 4096), and one
// address a quarter of them. The run starts zulite with the size plus
// room for its own requests, and spreads the polls over as many source
// addresses (127.0.0.2, 127.0.0.3, ...) as keep each within its share.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// zuliteEnv is the environment zulite runs with (-zulite-env), beside
// PATH: a setting of Go's runtime to compare, such as GOGC=100.
var zuliteEnv []string

type fanoutConfig struct {
	ceiling      bool // measure the long-poll ceiling too
	sizes        []int
	accounts     int
	sends        int
	every        time.Duration
	contentBytes int
}

func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-fanout: %q is not a number of queues", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// fanoutRow is one size's figures.
type fanoutRow struct {
	server                            string
	queues, accounts                  int
	idleKiB, registeredKiB, listenKiB int
	afterKiB, peakKiB                 int
	connections                       int     // zulite_open_connections while listening
	liveListening, liveAfter          float64 // go_gc_heap_live_bytes (-1: the server has none)
	sendNone, sendListening           time.Duration
	serverNone, serverListening       time.Duration // as zulite's request log has them
	serverCPU, clientCPU              time.Duration // while sending to listeners
	receiptP50, receiptP99            time.Duration
	delivered, expected               int
	messageBytes                      int // one message event as a queue receives it
	failures                          []string
}

// The sender is a process of its own (this program again, -serve sender),
// as a sending client is: its send's answer does not wait behind the
// thousands of polls this process reads meanwhile.

// senderProcess sends a message each time it is asked.
type senderProcess struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startSender(base, channelID, content string, a account) (*senderProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve", "sender")
	// The account's key goes by the environment, not the command line.
	cmd.Env = append(os.Environ(), "LOAD_SENDER="+strings.Join([]string{base, channelID, a.email, a.key, content}, "\n"))
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &senderProcess{cmd, in, bufio.NewReader(out)}, nil
}

func (p *senderProcess) stop() {
	p.in.Close()
	p.cmd.Wait()
}

// send sends one message: its id, when the send began and how long its
// answer took.
func (p *senderProcess) send() (uint64, time.Time, time.Duration, error) {
	if _, err := io.WriteString(p.in, "send\n"); err != nil {
		return 0, time.Time{}, 0, err
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return 0, time.Time{}, 0, fmt.Errorf("sender: %w", err)
	}
	var id uint64
	var began, took int64
	if _, err := fmt.Sscan(line, &id, &began, &took); err != nil {
		return 0, time.Time{}, 0, fmt.Errorf("sender: %s", strings.TrimSpace(line))
	}
	return id, time.Unix(0, began), time.Duration(took), nil
}

// serveSender is the sender process: a send for each line on stdin,
// answered on stdout as "id began-unix-ns took-ns".
func serveSender() error {
	f := strings.Split(os.Getenv("LOAD_SENDER"), "\n")
	if len(f) != 5 {
		return errors.New("sender: LOAD_SENDER is not set")
	}
	t := &target{base: f[0]}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		req := newRequest(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {f[1]}, "topic": {"fanout"}, "content": {f[4]}}, f[2], f[3])
		began := time.Now()
		resp, err := t.httpClient().Do(req)
		var body struct {
			ID uint64 `json:"id"`
		}
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("got status %d", resp.StatusCode)
			}
		}
		took := time.Since(began)
		if err != nil {
			fmt.Printf("error: %v\n", err)
			continue
		}
		fmt.Printf("%d %d %d\n", body.ID, began.UnixNano(), took.Nanoseconds())
	}
	return in.Err()
}

func runFanout(c fanoutConfig) error {
	for _, n := range c.sizes {
		if n > c.accounts*20 {
			return fmt.Errorf("-fanout %d: %d accounts hold at most %d queues (20 each)", n, c.accounts, c.accounts*20)
		}
	}
	dir, err := os.MkdirTemp("", "zulite-fanout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := buildZulite(dir)
	if err != nil {
		return err
	}
	seedDB := filepath.Join(dir, "seed.db")
	fmt.Printf("seeding: %d accounts and a sender subscribed to one channel ...\n", c.accounts)
	start := time.Now()
	listeners, sender, owner, err := seedCrowd(bin, seedDB, c.accounts)
	if err != nil {
		return err
	}
	fmt.Printf("seeded in %v\n", time.Since(start).Round(time.Millisecond))

	var rows []fanoutRow
	for _, n := range c.sizes {
		db := filepath.Join(dir, fmt.Sprintf("fanout-%d.db", n))
		if err := copyFile(seedDB, db); err != nil {
			return err
		}
		maxConns := n + 256
		z, _, log, err := launchLogged(bin, db, false, "--max-connections", strconv.Itoa(maxConns))
		if err != nil {
			return err
		}
		row, err := fanoutRun(c, "zulite", z, log, n, maxConns, listeners, sender, owner)
		z.stop()
		if err != nil {
			return fmt.Errorf("%d queues: %w", n, err)
		}
		rows = append(rows, row)
		os.Remove(db)
		if c.ceiling {
			ceiling, log, err := launchCeiling()
			if err != nil {
				return err
			}
			row, err := fanoutRun(c, "net/http alone", ceiling, log, n, maxConns, listeners, sender, owner)
			ceiling.stop()
			if err != nil {
				return fmt.Errorf("%d queues, the ceiling: %w", n, err)
			}
			rows = append(rows, row)
		}
	}
	fmt.Println()
	printFanout(c, rows)
	failed := false
	for _, r := range rows {
		for _, f := range r.failures {
			if r.server != "zulite" { // a comparison, not what is measured
				fmt.Printf("(%s at %d queues: %s)\n", r.server, r.queues, f)
				continue
			}
			fmt.Printf("FAILED: %s at %d queues: %s\n", r.server, r.queues, f)
			failed = true
		}
	}
	if failed {
		return errors.New("some events were not delivered as expected")
	}
	return nil
}

func buildZulite(dir string) (string, error) {
	bin := filepath.Join(dir, "zulite")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build zulite (run from the repository root): %w", err)
	}
	return bin, nil
}

// serverLog keeps, from zulite's request log, how long it took to answer
// each send, so that the table can tell the server's time from the time
// the send's answer waited for the client to read it.
type serverLog struct {
	mu    sync.Mutex
	sends []time.Duration
}

var sendDuration = regexp.MustCompile(`route="POST /api/v1/messages" status=200 duration=(\S+)`)

func (l *serverLog) scan(r io.Reader, addr chan<- string) {
	s := bufio.NewScanner(r)
	found := false
	for s.Scan() {
		// Ten thousand polls log ten thousand lines a send: the patterns
		// run only on lines that may match, so that reading the log costs
		// the shared cores little.
		line := s.Bytes()
		if !found && bytes.Contains(line, []byte("msg=listening")) {
			if m := listening.FindSubmatch(line); m != nil {
				found = true
				addr <- string(m[1])
			}
		} else if !bytes.Contains(line, []byte(`route="POST /api/v1/messages"`)) {
			continue
		} else if m := sendDuration.FindStringSubmatch(string(line)); m != nil {
			if d, err := time.ParseDuration(m[1]); err == nil {
				l.mu.Lock()
				l.sends = append(l.sends, d)
				l.mu.Unlock()
			}
		}
	}
}

// since answers the send durations logged after the first n.
func (l *serverLog) since(n int) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sends[min(n, len(l.sends)):])
}

func (l *serverLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sends)
}

// launch starts zulite on db; with bootstrap, it waits for the owner's
// key too (a fresh database prints it).
func launch(bin, db string, bootstrap bool, extra ...string) (*process, string, error) {
	p, key, _, err := launchLogged(bin, db, bootstrap, extra...)
	return p, key, err
}

func launchLogged(bin, db string, bootstrap bool, extra ...string) (*process, string, *serverLog, error) {
	args := append([]string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--rate-limit", "off"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, zuliteEnv...)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, "", nil, err
	}
	keyc, addrc := make(chan string, 1), make(chan string, 1)
	log := &serverLog{}
	go scanFor(stdout, bootstrapKey, keyc)
	go log.scan(stderr, addrc)
	var key, addr string
	for (bootstrap && key == "") || addr == "" {
		select {
		case key = <-keyc:
		case addr = <-addrc:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			return nil, "", nil, errors.New("zulite did not start within 10 s")
		}
	}
	return &process{cmd, addr}, key, log, nil
}

// launchCeiling starts the long-poll ceiling (longpoll.go): this
// program again, -serve longpoll.
func launchCeiling() (*process, *serverLog, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(self, "-serve", "longpoll")
	// It collects garbage as zulite does by default (GOGC=200, main.go).
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "GOGC=200"}, zuliteEnv...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	addrc := make(chan string, 1)
	log := &serverLog{}
	go log.scan(stderr, addrc)
	select {
	case addr := <-addrc:
		return &process{cmd, addr}, log, nil
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		return nil, nil, errors.New("the long-poll ceiling did not start within 10 s")
	}
}

// seedCrowd makes the accounts and a sender, all subscribed to the
// channel "crowd", and stops zulite.
func seedCrowd(bin, db string, n int) ([]account, account, account, error) {
	z, ownerKey, err := launch(bin, db, true)
	if err != nil {
		return nil, account{}, account{}, err
	}
	defer z.stop()
	all := make([]account, n+1)
	var mu sync.Mutex
	var firstErr error
	parallel(8, n+1, func(i int) {
		email := fmt.Sprintf("listener%d@example.com", i)
		if i == n {
			email = "sender@example.com"
		}
		out, err := exec.Command(bin, "user", "add", email, "--db", db).Output()
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
			}
			firstErr = fmt.Errorf("user add %s: %w", email, err)
		}
		all[i] = account{email: email, key: strings.TrimSpace(string(out))}
	})
	if firstErr != nil {
		return nil, account{}, account{}, firstErr
	}
	t := &target{base: "http://" + z.addr}
	subscribe := func(i int) *http.Request {
		return newRequest(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"crowd"}]`}}, all[i].email, all[i].key)
	}
	if r := drive(t, 1, 1, 200, subscribe); r.err != nil { // the first makes the channel
		return nil, account{}, account{}, r.err
	}
	if r := drive(t, 16, n+1, 200, subscribe); r.err != nil {
		return nil, account{}, account{}, r.err
	}
	return all[:n], all[n], account{email: "owner@zulite.localhost", key: ownerKey}, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}

// fanoutRun measures one size on a fresh zulite.
// fanoutRun measures one size on a server just started: zulite (with
// --max-connections maxConns) or the ceiling.
func fanoutRun(c fanoutConfig, server string, z *process, log *serverLog, n, maxConns int, listeners []account, sender, owner account) (fanoutRow, error) {
	share := max(16, maxConns/4)
	pid := z.cmd.Process.Pid
	t := &target{base: "http://" + z.addr, pid: pid}
	row := fanoutRow{server: server, queues: n, accounts: min(n, len(listeners)), expected: n * c.sends}
	fmt.Printf("\n%s, %d queues: %d accounts, --max-connections %d, polls from %d source addresses\n", server, n, row.accounts, maxConns, (n+share-17)/(share-16))

	content := fanoutContent(c.contentBytes)
	var channelID string
	{
		var body struct {
			StreamID int `json:"stream_id"`
		}
		if err := getJSON(t, "/api/v1/get_stream_id?stream=crowd", sender, &body); err != nil {
			return row, err
		}
		channelID = strconv.Itoa(body.StreamID)
	}
	sending, err := startSender(t.base, channelID, content, sender)
	if err != nil {
		return row, err
	}
	defer sending.stop()
	send := sending.send
	sendSeries := func() ([]time.Duration, map[uint64]time.Time, error) {
		var took []time.Duration
		began := map[uint64]time.Time{}
		next := time.Now()
		for range c.sends {
			time.Sleep(time.Until(next))
			next = next.Add(c.every)
			id, at, d, err := send()
			if err != nil {
				return nil, nil, err
			}
			took = append(took, d)
			began[id] = at
		}
		return took, began, nil
	}

	for range 3 { // warm up: the first sends read the channel's pages in
		if _, _, _, err := send(); err != nil {
			return row, err
		}
	}
	time.Sleep(time.Second)
	row.idleKiB = rssAnon(pid)
	logged := log.count()
	none, _, err := sendSeries()
	if err != nil {
		return row, err
	}
	row.sendNone = median(none)
	time.Sleep(100 * time.Millisecond) // the log lines arrive
	row.serverNone = median(log.since(logged))

	// Register the queues, as an app does (all event types, rendered
	// content), fetching only what a message needs: the state is not
	// what this measures.
	type queue struct {
		a  account
		id string
	}
	queues := make([]queue, n)
	var failure atomic.Value
	parallel(8, n, func(i int) {
		a := listeners[i%len(listeners)]
		var body struct {
			QueueID string `json:"queue_id"`
		}
		req := newRequest(t, http.MethodPost, "/api/v1/register", url.Values{"apply_markdown": {"true"}, "client_gravatar": {"true"},
			"fetch_event_types": {`["message"]`}, "client_capabilities": {`{"notification_settings_null":true,"empty_topic_name":true,"user_settings_object":true}`}}, a.email, a.key)
		resp, err := t.httpClient().Do(req)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err == nil && (resp.StatusCode != 200 || body.QueueID == "") {
				err = fmt.Errorf("register: got status %d", resp.StatusCode)
			}
		}
		if err != nil {
			failure.CompareAndSwap(nil, err)
		}
		queues[i] = queue{a, body.QueueID}
	})
	if err, ok := failure.Load().(error); ok {
		return row, err
	}
	time.Sleep(time.Second)
	row.registeredKiB = rssAnon(pid)

	host := strings.TrimPrefix(t.base, "http://")
	pollers := make([]*poller, n)
	parallel(32, n, func(i int) {
		q := queues[i]
		source := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i/(share-16)))}
		p, err := dialPoller(host, source, q.a, q.id)
		if err != nil {
			failure.CompareAndSwap(nil, fmt.Errorf("poll connection %d: %w", i, err))
			return
		}
		pollers[i] = p
		go p.run()
	})
	defer func() {
		for _, p := range pollers {
			if p != nil {
				p.stop()
			}
		}
	}()
	if err, ok := failure.Load().(error); ok {
		return row, err
	}
	time.Sleep(3 * time.Second) // every first poll is waiting
	row.listenKiB = rssAnon(pid)
	row.connections = openConnections(t, owner)
	row.liveListening = metricValue(t, owner, "go_gc_heap_live_bytes")

	fmt.Printf("%d polls waiting; sending\n", n)
	peak := watchRSS(pid)
	logged = log.count()
	serverCPU, clientCPU := cpuTime(pid), cpuTime(os.Getpid())
	listening, began, err := sendSeries()
	if err != nil {
		peak()
		return row, err
	}
	row.sendListening = median(listening)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got := 0
		for _, p := range pollers {
			got += p.received(began)
		}
		if got >= row.expected {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	row.serverCPU, row.clientCPU = cpuTime(pid)-serverCPU, cpuTime(os.Getpid())-clientCPU
	time.Sleep(time.Second)
	row.peakKiB = peak()
	row.afterKiB = rssAnon(pid)
	row.liveAfter = metricValue(t, owner, "go_gc_heap_live_bytes")
	row.serverListening = median(log.since(logged))

	var delays []time.Duration
	last := map[uint64]time.Duration{} // each send's last receipt
	for _, p := range pollers {
		p.mu.Lock()
		for _, r := range p.receipts {
			if at, ok := began[r.id]; ok {
				delays = append(delays, r.at.Sub(at))
				last[r.id] = max(last[r.id], r.at.Sub(at))
				row.delivered++
			}
		}
		if p.err != nil {
			row.failures = append(row.failures, p.err.Error())
		}
		row.messageBytes = max(row.messageBytes, p.messageBytes)
		p.mu.Unlock()
	}
	var lasts []string
	for _, id := range slices.Sorted(maps.Keys(last)) {
		lasts = append(lasts, fmt.Sprintf("%.0f", float64(last[id])/float64(time.Millisecond)))
	}
	fmt.Printf("each send's last receipt, ms: %s; send latencies, ms: %s\n", strings.Join(lasts, " "), msList(listening))
	slices.Sort(delays)
	if len(delays) > 0 {
		row.receiptP50, row.receiptP99 = delays[len(delays)/2], delays[min(len(delays)-1, len(delays)*99/100)]
	}
	if row.delivered != row.expected {
		row.failures = append(row.failures, fmt.Sprintf("delivered %d events of %d", row.delivered, row.expected))
	}
	if row.connections < n {
		row.failures = append(row.failures, fmt.Sprintf("%d connections open while listening, want at least %d", row.connections, n))
	}
	if len(row.failures) > 5 {
		row.failures = append(row.failures[:5], fmt.Sprintf("and %d more", len(row.failures)-5))
	}
	return row, nil
}

// fanoutContent is a message of about n bytes of ordinary prose.
func fanoutContent(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "word%d ", i)
	}
	return strings.TrimSpace(b.String())
}

func msList(d []time.Duration) string {
	var s []string
	for _, x := range d {
		s = append(s, fmt.Sprintf("%.1f", float64(x)/float64(time.Millisecond)))
	}
	return strings.Join(s, " ")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// openConnections reads zulite_open_connections from /metrics, as an
// administrator.
func openConnections(t *target, a account) int {
	return int(metricValue(t, a, "zulite_open_connections"))
}

// metricValue reads a metric from /metrics, as an administrator; -1 when
// the server has none.
func metricValue(t *target, a account, name string) float64 {
	resp, err := t.httpClient().Do(newRequest(t, http.MethodGet, "/metrics", nil, a.email, a.key))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	return -1
}

// poller long-polls one queue on a connection of its own, as an app
// does, with a hand-written request so that the load's own cost stays
// small next to the server's.
type poller struct {
	conn    net.Conn
	r       *bufio.Reader
	request string // up to last_event_id=
	tail    string
	last    int64

	mu           sync.Mutex
	receipts     []receipt
	messageBytes int
	err          error
	stopped      atomic.Bool
}

type receipt struct {
	id uint64
	at time.Time
}

func dialPoller(host string, source *net.TCPAddr, a account, queueID string) (*poller, error) {
	d := net.Dialer{LocalAddr: source, Timeout: 10 * time.Second}
	conn, err := d.Dial("tcp", host)
	if err != nil {
		return nil, err
	}
	auth := base64.StdEncoding.EncodeToString([]byte(a.email + ":" + a.key))
	return &poller{conn: conn, r: bufio.NewReaderSize(conn, 4096), last: -1,
		request: "GET /api/v1/events?queue_id=" + url.QueryEscape(queueID) + "&last_event_id=",
		tail:    " HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Basic " + auth + "\r\nUser-Agent: ZulipLoad/1.0\r\n\r\n"}, nil
}

func (p *poller) stop() {
	p.stopped.Store(true)
	p.conn.Close()
}

// received counts the receipts of the messages sent.
func (p *poller) received(sent map[uint64]time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.receipts {
		if _, ok := sent[r.id]; ok {
			n++
		}
	}
	return n
}

func (p *poller) fail(err error) {
	if p.stopped.Load() {
		return
	}
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

// readResponse reads one answer: zulite always sends Content-Length.
func (p *poller) readResponse(body []byte) (int, []byte, error) {
	return readAnswer(p.r, body)
}

// readAnswer reads one HTTP/1.1 answer of known length from r into body
// (grown as needed): its status and its body.
func readAnswer(r *bufio.Reader, body []byte) (int, []byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, fmt.Errorf("poll: bad status line %q", line)
	}
	status, _ := strconv.Atoi(string(line[9:12]))
	length := -1
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break
		}
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(name, []byte("Content-Length")) {
			length, _ = strconv.Atoi(string(bytes.TrimSpace(value)))
		}
	}
	if length < 0 {
		return 0, nil, errors.New("poll: an answer without Content-Length")
	}
	body = slices.Grow(body[:0], length)[:length]
	_, err = io.ReadFull(r, body)
	return status, body, err
}

func (p *poller) run() {
	var raw []byte
	var events []pollEvent
	for {
		if _, err := io.WriteString(p.conn, p.request+strconv.FormatInt(p.last, 10)+p.tail); err != nil {
			p.fail(err)
			return
		}
		status, got, err := p.readResponse(raw)
		at := time.Now()
		if err != nil {
			p.fail(err)
			return
		}
		raw = got
		result, code, scanned, err := scanPoll(raw, events[:0])
		events = scanned
		if err != nil || status != 200 || result != "success" {
			p.fail(fmt.Errorf("poll: got status %d %s %v", status, code, err))
			return
		}
		p.mu.Lock()
		for _, e := range events {
			p.last = max(p.last, e.id)
			if e.message {
				p.receipts = append(p.receipts, receipt{e.messageID, at})
				if len(events) == 1 {
					p.messageBytes = len(raw)
				}
			}
		}
		p.mu.Unlock()
	}
}

func printFanout(c fanoutConfig, rows []fanoutRow) {
	mib := func(kib int) string { return fmt.Sprintf("%.0f MiB", float64(kib)/1024) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Printf("%d sends of one channel message (%d bytes of content) every %v; RssAnon of zulite\n", c.sends, c.contentBytes, c.every)
	fmt.Printf("| server | listening queues | RSS idle | RSS, queues registered | RSS while they wait | a waiting poll | RSS after %d sends (peak) | send median, none | send median, listening | ratio | send-to-receipt p50 | p99 | delivered |\n", c.sends)
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %d (%d × %d) | %s | %s | %s | %.1f KiB | %s (%s) | %s | %s | %.2f× | %s | %s | %d of %d |\n",
			r.server, r.queues, r.accounts, (r.queues+r.accounts-1)/r.accounts, mib(r.idleKiB), mib(r.registeredKiB), mib(r.listenKiB),
			float64(r.listenKiB-r.registeredKiB)/float64(r.queues), mib(r.afterKiB), mib(r.peakKiB),
			ms(r.sendNone), ms(r.sendListening), float64(r.sendListening)/float64(r.sendNone), ms(r.receiptP50), ms(r.receiptP99), r.delivered, r.expected)
	}
	for _, r := range rows {
		fmt.Printf("%s, %d queues: a message event is %d bytes as a poll answers it; RSS after the sends minus while waiting: %+.1f MiB (%+.0f KiB a send)\n",
			r.server, r.queues, r.messageBytes, float64(r.afterKiB-r.listenKiB)/1024, float64(r.afterKiB-r.listenKiB)/float64(c.sends))
		if r.liveListening >= 0 && r.liveAfter >= 0 {
			fmt.Printf("%s, %d queues: live heap at the last collection (go_gc_heap_live_bytes) %.1f MiB while waiting, %.1f MiB after the sends (%+.0f KiB a send); the rest of RSS's growth is the collector's headroom\n",
				r.server, r.queues, r.liveListening/(1<<20), r.liveAfter/(1<<20), (r.liveAfter-r.liveListening)/1024/float64(c.sends))
		}
		fmt.Printf("%s, %d queues: send median as the server logs it: %s with none, %s listening; CPU while sending: the server %v (%.0f µs an event delivered), this client %v\n",
			r.server, r.queues, ms(r.serverNone), ms(r.serverListening), r.serverCPU, float64(r.serverCPU)/float64(time.Microsecond)/float64(max(r.delivered, 1)), r.clientCPU)
	}
}
