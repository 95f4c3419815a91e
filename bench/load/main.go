// Command load measures zulite against this machine's ceilings in one
// run: a minimal net/http server that checks a Basic header and answers a
// fixed envelope (the plain ceiling), a minimal net/http server that
// commits one bbolt write per request in groups (the write ceiling), and
// the real zulite binary on a fresh database with 1,000 users, 100
// channels and realistic unread state. Each is driven at concurrency 1,
// 16 and 64 over keep-alive connections, and a table shows requests/s,
// p50 and p99, and zulite's ratio to the matching ceiling, with zulite's
// peak anonymous memory. Any unexpected status fails the run.
//
// Run it from the repository root: go run ./bench/load
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
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

	"go.etcd.io/bbolt"
)

func main() {
	serveMode := flag.String("serve", "", "internal: run a ceiling server (plain or write) and print its address")
	db := flag.String("db", "", "internal: the write ceiling's database")
	requests := flag.Int("requests", 20000, "requests per read scenario (writes use a quarter)")
	bigUnread := flag.Int("big-unread", 1_000_000, "unread messages in the channel of the mark_stream_as_read comparison (0 skips it)")
	flag.Parse()
	var err error
	switch *serveMode {
	case "plain":
		err = serveCeiling(plainCeiling())
	case "write":
		var h http.Handler
		if h, err = writeCeiling(*db); err == nil {
			err = serveCeiling(h)
		}
	default:
		err = run(*requests, *bigUnread)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// ---- the ceilings ----

func serveCeiling(h http.Handler) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	return http.Serve(ln, h)
}

const envelope = `{"result":"success","msg":""}` + "\n"

// plainCeiling checks a Basic header and answers a fixed envelope.
func plainCeiling() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, envelope)
	})
}

// writeCeiling commits one key per request, concurrent requests sharing a
// synced transaction (one committer, the same scheme as zulite's).
func writeCeiling(path string) (http.Handler, error) {
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		return nil, err
	}
	type write struct {
		key  []byte
		done chan error
	}
	writes := make(chan write, 256)
	go func() {
		for first := range writes {
			group := []write{first}
		gather:
			for len(group) < 256 {
				select {
				case w := <-writes:
					group = append(group, w)
				default:
					break gather
				}
			}
			err := db.Update(func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("k"))
				for _, w := range group {
					if err == nil {
						err = b.Put(w.key, []byte("v"))
					}
				}
				return err
			})
			for _, w := range group {
				w.done <- err
			}
		}
	}()
	var n atomic.Uint64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		io.Copy(io.Discard, r.Body)
		done := make(chan error, 1)
		writes <- write{[]byte(strconv.FormatUint(n.Add(1), 10)), done}
		if err := <-done; err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, envelope)
	}), nil
}

// ---- the run ----

type process struct {
	cmd  *exec.Cmd
	addr string
}

func (p *process) stop() {
	if p != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(os.Interrupt)
		p.cmd.Wait()
	}
}

// startCeiling runs this program again as a ceiling server.
func startCeiling(mode, dir string) (*process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve", mode, "-db", filepath.Join(dir, "ceiling.db"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("%s ceiling: %w", mode, err)
	}
	return &process{cmd, strings.TrimSpace(line)}, nil
}

var listening = regexp.MustCompile(`msg=listening addr=(127\.0\.0\.1:\d+)`)
var bootstrapKey = regexp.MustCompile(`(?m)^key: ([A-Za-z0-9]{32})$`)

// startZulite builds and starts zulite; it answers the process and the
// owner's key.
func startZulite(dir string) (*process, string, error) {
	bin := filepath.Join(dir, "zulite")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return nil, "", fmt.Errorf("build zulite (run from the repository root): %w", err)
	}
	args := []string{"serve", "--db", filepath.Join(dir, "z.db"), "--addr", "127.0.0.1:0"}
	if help, _ := exec.Command(bin, "serve", "--help").CombinedOutput(); strings.Contains(string(help), "-rate-limit") {
		args = append(args, "--rate-limit", "off") // SPEC §8: load tests switch limits off
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	keyc, addrc := make(chan string, 1), make(chan string, 1)
	go scanFor(stdout, bootstrapKey, keyc)
	go scanFor(stderr, listening, addrc)
	var key, addr string
	for key == "" || addr == "" {
		select {
		case key = <-keyc:
		case addr = <-addrc:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			return nil, "", errors.New("zulite did not start within 10 s")
		}
	}
	return &process{cmd, addr}, key, nil
}

func scanFor(r io.Reader, re *regexp.Regexp, found chan<- string) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		if m := re.FindStringSubmatch(s.Text()); m != nil {
			found <- m[1]
		}
	}
}

// account is a zulite user the load acts as.
type account struct {
	email, key string
	channels   []int // ids of channels subscribed to
}

func run(requests, bigUnread int) error {
	dir, err := os.MkdirTemp("", "zulite-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	plain, err := startCeiling("plain", dir)
	if err != nil {
		return err
	}
	defer plain.stop()
	write, err := startCeiling("write", dir)
	if err != nil {
		return err
	}
	defer write.stop()
	zulite, ownerKey, err := startZulite(dir)
	if err != nil {
		return err
	}
	defer zulite.stop()

	fmt.Println("seeding zulite: 1,000 users, 100 channels, subscriptions, messages, push tokens ...")
	start := time.Now()
	z := &target{base: "http://" + zulite.addr}
	accounts, err := seed(z, filepath.Join(dir, "zulite"), filepath.Join(dir, "z.db"), ownerKey, requests)
	if err != nil {
		return err
	}
	fmt.Printf("seeded in %v\n\n", time.Since(start).Round(time.Millisecond))

	peak := watchRSS(zulite.cmd.Process.Pid)
	plainT, writeT := &target{base: "http://" + plain.addr}, &target{base: "http://" + write.addr}
	writes := max(requests/4, 1)
	var rows []row
	for _, c := range []int{1, 16, 64} {
		ceilRead := drive(plainT, c, requests, 200, func(int) *http.Request {
			return newRequest(plainT, http.MethodGet, "/api/v1/users/me", nil, "load@example.com", ownerKey)
		})
		ceilWrite := drive(writeT, c, writes, 200, func(int) *http.Request {
			return newRequest(writeT, http.MethodPost, "/api/v1/write", url.Values{"x": {"1"}}, "load@example.com", ownerKey)
		})
		tokenBase := map[int]int{1: 0, 16: writes, 64: 2 * writes}[c]
		deletes := drive(z, c, writes, 200, func(i int) *http.Request {
			a := accounts[(tokenBase+i)%len(accounts)]
			return newRequest(z, http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {pushTokenFor(tokenBase + i)}}, a.email, a.key)
		})
		// Each mark is of a (user, channel) pair not marked before, which
		// holds unread messages: every mark does a real write.
		marks := drive(z, c, writes, 200, func(i int) *http.Request {
			pair := tokenBase + i
			a := accounts[pair%len(accounts)]
			return newRequest(z, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.Itoa(a.channels[(pair/len(accounts))%len(a.channels)])}}, a.email, a.key)
		})
		rejected := drive(z, c, requests, 400, func(i int) *http.Request {
			a := accounts[i%len(accounts)]
			return newRequest(z, http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {"not-hex"}}, a.email, a.key)
		})
		reads := drive(z, c, requests, 200, func(i int) *http.Request {
			a := accounts[i%len(accounts)]
			return newRequest(z, http.MethodGet, "/api/v1/users/me", nil, a.email, a.key)
		})
		rows = append(rows,
			row{"ceiling: Basic check + fixed envelope", c, ceilRead, nil},
			row{"ceiling: group-committed bbolt write", c, ceilWrite, nil},
			row{"zulite DELETE apns_device_token", c, deletes, &ceilWrite},
			row{"zulite POST mark_stream_as_read", c, marks, &ceilWrite},
			row{"zulite rejected (400 Invalid APNS token)", c, rejected, &ceilRead},
			row{"zulite GET users/me", c, reads, &ceilRead},
		)
	}
	peakKiB := peak()
	printTable(rows)
	failed := false
	for _, r := range rows {
		if r.result.err != nil {
			fmt.Printf("FAILED: %s at concurrency %d: %v\n", r.name, r.concurrency, r.result.err)
			failed = true
		}
	}
	fmt.Printf("\nzulite peak RssAnon under load: %.1f MiB (target: below 30 MiB)\n", float64(peakKiB)/1024)

	if bigUnread > 0 {
		if err := compareMarkRead(z, accounts, bigUnread); err != nil {
			fmt.Println("FAILED:", err)
			failed = true
		}
	}
	if failed {
		return errors.New("some requests did not answer as expected")
	}
	return nil
}

func pushTokenFor(i int) string { return fmt.Sprintf("%064x", i) }

// seed fills zulite: users through the admin socket, channels, each user
// subscribed to 10 channels, 5,000 messages (unread for the subscribers
// but their senders), and the push tokens the DELETE scenarios remove.
func seed(z *target, bin, db, ownerKey string, requests int) ([]account, error) {
	// 15 channels a user: 15,000 (user, channel) pairs, each with unread
	// messages, enough for every mark of the three write phases.
	const users, channels, perUser, messages = 1000, 100, 15, 5000
	accounts := make([]account, users)
	var mu sync.Mutex
	var firstErr error
	parallel(8, users, func(i int) {
		out, err := exec.Command(bin, "user", "add", fmt.Sprintf("user%d@example.com", i), "--db", db).Output()
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("user add: %w", err)
		}
		accounts[i] = account{email: fmt.Sprintf("user%d@example.com", i), key: strings.TrimSpace(string(out))}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range accounts {
		for _, c := range rng.Perm(channels)[:perUser] {
			accounts[i].channels = append(accounts[i].channels, c+1)
		}
	}
	var names []string
	for c := range channels {
		names = append(names, fmt.Sprintf("channel%d", c))
	}
	// The owner creates the channels by subscribing, in id order.
	for _, n := range names {
		if r := drive(z, 1, 1, 200, func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"` + n + `"}]`}}, "owner@zulite.localhost", ownerKey)
		}); r.err != nil {
			return nil, r.err
		}
	}
	steps := []struct {
		what string
		n    int
		req  func(i int) *http.Request
	}{
		{"subscribe", users, func(i int) *http.Request {
			a := accounts[i]
			var subs []string
			for _, c := range a.channels {
				subs = append(subs, `{"name":"`+names[c-1]+`"}`)
			}
			return newRequest(z, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {"[" + strings.Join(subs, ",") + "]"}}, a.email, a.key)
		}},
		{"send", messages, func(i int) *http.Request {
			a := accounts[(i*7919)%users]
			return newRequest(z, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {strconv.Itoa(a.channels[i%perUser])}, "topic": {"topic " + strconv.Itoa(i%20)}, "content": {"hello"}}, a.email, a.key)
		}},
		{"register push tokens", 3 * max(requests/4, 1), func(i int) *http.Request {
			a := accounts[i%users]
			return newRequest(z, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {pushTokenFor(i)}, "appid": {"org.zulip.Zulip"}}, a.email, a.key)
		}},
	}
	for _, s := range steps {
		if r := drive(z, 64, s.n, 200, s.req); r.err != nil {
			return nil, fmt.Errorf("seed %s: %w", s.what, r.err)
		}
	}
	return accounts, nil
}

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

// compareMarkRead times mark_stream_as_read on a channel where one user
// has bigUnread unread messages against one where they have one.
func compareMarkRead(z *target, accounts []account, bigUnread int) error {
	reader, writer := accounts[0], accounts[1]
	for _, name := range []string{"big", "small"} {
		for _, a := range []account{reader, writer} {
			if r := drive(z, 1, 1, 200, func(int) *http.Request {
				return newRequest(z, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"` + name + `"}]`}}, a.email, a.key)
			}); r.err != nil {
				return r.err
			}
		}
	}
	ids := map[string]string{}
	for _, name := range []string{"big", "small"} {
		var body struct {
			StreamID int `json:"stream_id"`
		}
		if err := getJSON(z, "/api/v1/get_stream_id?stream="+name, reader, &body); err != nil {
			return err
		}
		ids[name] = strconv.Itoa(body.StreamID)
	}
	fmt.Printf("\nsending %d messages to one channel for the mark_stream_as_read comparison ...\n", bigUnread)
	start := time.Now()
	send := func(channel string) func(int) *http.Request {
		return func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {channel}, "topic": {"t"}, "content": {"x"}}, writer.email, writer.key)
		}
	}
	if r := drive(z, 64, bigUnread, 200, send(ids["big"])); r.err != nil {
		return r.err
	}
	fmt.Printf("sent in %v\n", time.Since(start).Round(time.Millisecond))
	mark := func(channel string) func(int) *http.Request {
		return func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {channel}}, reader.email, reader.key)
		}
	}
	big := drive(z, 1, 1, 200, mark(ids["big"]))
	var small []time.Duration
	for range 21 {
		if r := drive(z, 1, 1, 200, send(ids["small"])); r.err != nil {
			return r.err
		}
		r := drive(z, 1, 1, 200, mark(ids["small"]))
		if r.err != nil {
			return r.err
		}
		small = append(small, r.p50)
	}
	slices.Sort(small)
	ratio := float64(big.p50) / float64(small[len(small)/2])
	fmt.Printf("mark_stream_as_read: %d unread %v, 1 unread %v (median of 21): %.2fx (target: within 3x)\n",
		bigUnread, big.p50.Round(time.Microsecond), small[len(small)/2].Round(time.Microsecond), ratio)
	if big.err != nil {
		return big.err
	}
	return nil
}

// ---- driving load ----

type target struct {
	base   string
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
	err      error
}

// drive sends n requests with c workers over keep-alive connections and
// checks every status.
func drive(t *target, c, n, wantStatus int, build func(i int) *http.Request) result {
	client := t.httpClient()
	latencies := make([]time.Duration, n)
	var next atomic.Int64
	var failure atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				req := build(i)
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
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(latencies)
	r := result{rps: float64(n) / elapsed.Seconds(), p50: latencies[n/2], p99: latencies[min(n-1, n*99/100)]}
	if err, ok := failure.Load().(error); ok {
		r.err = err
	}
	return r
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

type row struct {
	name        string
	concurrency int
	result      result
	ceiling     *result
}

func printTable(rows []row) {
	fmt.Printf("%-42s %5s %10s %9s %9s %7s\n", "scenario", "conc", "req/s", "p50", "p99", "ratio")
	for _, r := range rows {
		ratio := ""
		if r.ceiling != nil && r.ceiling.rps > 0 {
			ratio = fmt.Sprintf("%.2f", r.result.rps/r.ceiling.rps)
		}
		fmt.Printf("%-42s %5d %10.0f %9s %9s %7s\n", r.name, r.concurrency, r.result.rps,
			r.result.p50.Round(time.Microsecond), r.result.p99.Round(time.Microsecond), ratio)
	}
}
