// Command load measures zulite against this machine's ceilings in one
// run: a minimal net/http server that checks a Basic header and answers a
// fixed envelope (the plain ceiling), a minimal net/http server that
// commits one bbolt write per request in groups (the write ceiling), and
// the real zulite binary on a fresh database with 1,000 users, 100
// channels and realistic unread state. Each is driven at concurrency 1,
// 16 and 64 over keep-alive connections, and a table shows requests/s,
// p50 and p99, and zulite's ratio to the matching ceiling, with zulite's
// peak anonymous memory. Then it compares mark_stream_as_read with
// 1,000,000 unread messages against 1 (-big-unread), and a send to a
// channel of 100,000 subscribers against one of 10 (-big-channel). Any
// unexpected status fails the run.
//
// Run it from the repository root: go run ./bench/load
// (go run ./bench/load -sweep=false runs the comparisons alone;
// go run ./bench/load -fanout 1000,10000 measures event fan-out instead:
// fanout.go)
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
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
	serveMode := flag.String("serve", "", "internal: run a ceiling server (plain, write or longpoll) and print its address, or the fan-out's sender")
	db := flag.String("db", "", "internal: the write ceiling's database")
	requests := flag.Int("requests", 20000, "requests per read scenario (writes use a quarter)")
	bigUnread := flag.Int("big-unread", 1_000_000, "unread messages in the channel of the mark_stream_as_read comparison (0 skips it)")
	bigChannel := flag.Int("big-channel", 100_000, "subscribers of the channel in the send comparison, against one of 10 (0 skips it)")
	rounds := flag.Int("rounds", 3, "rounds of the whole sweep (at least 1); the table shows each scenario's median")
	sweep := flag.Bool("sweep", true, "run the sweep of scenarios and its table (false: only the comparisons)")
	fanout := flag.String("fanout", "", "instead of the sweep, the fan-out mode (fanout.go): the numbers of listening queues to measure, e.g. 1000,10000")
	fanoutAccounts := flag.Int("fanout-accounts", 500, "fan-out: accounts sharing the queues (each holds at most 20)")
	sends := flag.Int("sends", 10, "fan-out: channel messages sent, with and without listeners")
	sendEvery := flag.Duration("send-every", time.Second, "fan-out: time between sends")
	contentBytes := flag.Int("content-bytes", 500, "fan-out: bytes of each message's content")
	ceiling := flag.Bool("fanout-ceiling", true, "fan-out: measure net/http alone too (longpoll.go), for comparison")
	env := flag.String("zulite-env", "", "fan-out: settings of zulite's environment to compare, space-separated (GOGC=100 GOMEMLIMIT=150MiB)")
	flag.Parse()
	zuliteEnv = strings.Fields(*env)
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "load: -rounds must be at least 1")
		os.Exit(2)
	}
	var err error
	switch *serveMode {
	case "plain":
		err = serveCeiling(plainCeiling())
	case "write":
		var h http.Handler
		if h, err = writeCeiling(*db); err == nil {
			err = serveCeiling(h)
		}
	case "sender":
		err = serveSender()
	case "longpoll":
		err = serveLongPoll()
	case "":
		if *fanout == "" {
			err = run(*requests, *bigUnread, *bigChannel, *rounds, *sweep)
			break
		}
		var sizes []int
		if sizes, err = parseSizes(*fanout); err == nil {
			err = runFanout(fanoutConfig{ceiling: *ceiling, sizes: sizes, accounts: *fanoutAccounts, sends: *sends, every: *sendEvery, contentBytes: *contentBytes})
		}
	default:
		err = run(*requests, *bigUnread, *bigChannel, *rounds, *sweep)
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
	// Its commit groups, in the samples zulite's /metrics has, so that
	// the table shows both the same way.
	var commits, written, nanos atomic.Int64
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
			start := time.Now()
			err := db.Update(func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("k"))
				for _, w := range group {
					if err == nil {
						err = b.Put(w.key, []byte("v"))
					}
				}
				return err
			})
			commits.Add(1)
			written.Add(int64(len(group)))
			nanos.Add(int64(time.Since(start)))
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
		if r.URL.Path == "/metrics" {
			stats := db.Stats()
			fmt.Fprintf(w, "zulite_commit_group_writes_count %d\nzulite_commit_group_writes_sum %d\nzulite_commit_duration_seconds_sum %g\nzulite_database_pages_written_total %d\n",
				commits.Load(), written.Load(), time.Duration(nanos.Load()).Seconds(), stats.TxStats.GetPageCount())
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
	// The ceilings collect garbage as zulite does by default (GOGC=200,
	// main.go), so that the comparison is of the code, not of a setting.
	cmd.Env = append(os.Environ(), "GOGC=200")
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

// restartZulite starts the zulite built by startZulite again on its
// database, which has its owner already.
func restartZulite(dir string) (*process, error) {
	args := []string{"serve", "--db", filepath.Join(dir, "z.db"), "--addr", "127.0.0.1:0"}
	if help, _ := exec.Command(filepath.Join(dir, "zulite"), "serve", "--help").CombinedOutput(); strings.Contains(string(help), "-rate-limit") {
		args = append(args, "--rate-limit", "off")
	}
	cmd := exec.Command(filepath.Join(dir, "zulite"), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addrc := make(chan string, 1)
	go scanFor(stderr, listening, addrc)
	select {
	case addr := <-addrc:
		return &process{cmd, addr}, nil
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		return nil, errors.New("zulite did not start again within 10 s")
	}
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

func run(requests, bigUnread, bigChannel, rounds int, sweepToo bool) error {
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
	defer func() { zulite.stop() }() // the one running at the end: the send comparison restarts it

	fmt.Println("seeding zulite: 1,000 users, 100 channels, subscriptions, messages, push tokens ...")
	start := time.Now()
	z := &target{base: "http://" + zulite.addr, pid: zulite.cmd.Process.Pid}
	accounts, err := seed(z, filepath.Join(dir, "zulite"), filepath.Join(dir, "z.db"), ownerKey)
	if err != nil {
		return err
	}
	fmt.Printf("seeded in %v\n", time.Since(start).Round(time.Millisecond))

	plainT := &target{base: "http://" + plain.addr, pid: plain.cmd.Process.Pid}
	writeT := &target{base: "http://" + write.addr, pid: write.cmd.Process.Pid}
	var peakKiB int
	var table [][]row // a round each
	if !sweepToo {
		rounds = 0
	}
	for round := range rounds {
		if err := refill(z, accounts, requests); err != nil {
			return err
		}
		peak := watchRSS(zulite.cmd.Process.Pid)
		start := time.Now()
		table = append(table, sweep(z, plainT, writeT, accounts, ownerKey, requests))
		peakKiB = max(peakKiB, peak())
		fmt.Printf("round %d of %d: %v\n", round+1, rounds, time.Since(start).Round(time.Millisecond))
	}
	failed := false
	if sweepToo {
		fmt.Println()
		printTable(table)
		fmt.Printf("\nzulite peak RssAnon under load: %.1f MiB (target: below 30 MiB)\n", float64(peakKiB)/1024)
	}
	for _, rows := range table {
		for _, r := range rows {
			if r.result.err != nil {
				fmt.Printf("FAILED: %s at concurrency %d: %v\n", r.name, r.concurrency, r.result.err)
				failed = true
			}
		}
	}

	if bigUnread > 0 {
		if err := compareMarkRead(z, accounts, bigUnread); err != nil {
			fmt.Println("FAILED:", err)
			failed = true
		}
	}
	if bigChannel > 0 {
		restart := func(meanwhile func() error) error {
			zulite.stop()
			if err := meanwhile(); err != nil {
				return err
			}
			var err error
			if zulite, err = restartZulite(dir); err == nil {
				z.base, z.pid = "http://"+zulite.addr, zulite.cmd.Process.Pid
			}
			return err
		}
		if err := compareSend(z, filepath.Join(dir, "z.db"), ownerKey, bigChannel, restart); err != nil {
			fmt.Println("FAILED:", err)
			failed = true
		}
	}
	if failed {
		return errors.New("some requests did not answer as expected")
	}
	return nil
}

// sweep drives every scenario at concurrency 1, 16 and 64: one round.
func sweep(z, plainT, writeT *target, accounts []account, ownerKey string, requests int) []row {
	writes := max(requests/4, 1)
	var rows []row
	for _, c := range []int{1, 16, 64} {
		ceilRead := drive(plainT, c, requests, 200, func(int) *http.Request {
			return newRequest(plainT, http.MethodGet, "/api/v1/users/me", nil, "load@example.com", ownerKey)
		})
		ceilBefore, err0 := commitGroups(writeT, ownerKey)
		ceilWrite := drive(writeT, c, writes, 200, func(int) *http.Request {
			return newRequest(writeT, http.MethodPost, "/api/v1/write", url.Values{"x": {"1"}}, "load@example.com", ownerKey)
		})
		ceilAfter, err4 := commitGroups(writeT, ownerKey)
		if err := errors.Join(err0, err4); err != nil && ceilWrite.err == nil {
			ceilWrite.err = err
		}
		tokenBase := map[int]int{1: 0, 16: writes, 64: 2 * writes}[c]
		before, err1 := commitGroups(z, ownerKey)
		deletes := drive(z, c, writes, 200, func(i int) *http.Request {
			a := accounts[(tokenBase+i)%len(accounts)]
			return newRequest(z, http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {pushTokenFor(tokenBase + i)}}, a.email, a.key)
		})
		afterDeletes, err2 := commitGroups(z, ownerKey)
		// Each mark is of a (user, channel) pair not marked before, which
		// holds unread messages: every mark does a real write.
		marks := drive(z, c, writes, 200, func(i int) *http.Request {
			pair := tokenBase + i
			a := accounts[pair%len(accounts)]
			return newRequest(z, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.Itoa(a.channels[(pair/len(accounts))%len(a.channels)])}}, a.email, a.key)
		})
		afterMarks, err3 := commitGroups(z, ownerKey)
		// A failed scrape of zulite's /metrics fails the run, like any
		// unexpected answer, rather than printing figures made of zeros.
		if err := errors.Join(err1, err2, err3); err != nil && deletes.err == nil {
			deletes.err = err
		}
		rejected := drive(z, c, requests, 400, func(i int) *http.Request {
			a := accounts[i%len(accounts)]
			return newRequest(z, http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {"not-hex"}}, a.email, a.key)
		})
		reads := drive(z, c, requests, 200, func(i int) *http.Request {
			a := accounts[i%len(accounts)]
			return newRequest(z, http.MethodGet, "/api/v1/users/me", nil, a.email, a.key)
		})
		rows = append(rows,
			row{"ceiling: Basic check + fixed envelope", c, ceilRead, nil, groups{}},
			row{"ceiling: group-committed bbolt write", c, ceilWrite, nil, ceilAfter.minus(ceilBefore)},
			row{"zulite DELETE apns_device_token", c, deletes, &ceilWrite, afterDeletes.minus(before)},
			row{"zulite POST mark_stream_as_read", c, marks, &ceilWrite, afterMarks.minus(afterDeletes)},
			row{"zulite rejected (400 Invalid APNS token)", c, rejected, &ceilRead, groups{}},
			row{"zulite GET users/me", c, reads, &ceilRead, groups{}},
		)
	}
	return rows
}

func pushTokenFor(i int) string { return fmt.Sprintf("%064x", i) }

// 15 channels a user: 15,000 (user, channel) pairs, each with unread
// messages after a refill, enough for every mark of a round's three write
// phases.
const users, channels, perUser, messages = 1000, 100, 15, 5000

// seed fills zulite with users (through the admin socket), channels and
// each user's subscriptions to 15 of them.
func seed(z *target, bin, db, ownerKey string) ([]account, error) {
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
	}
	for _, s := range steps {
		if r := drive(z, 64, s.n, 200, s.req); r.err != nil {
			return nil, fmt.Errorf("seed %s: %w", s.what, r.err)
		}
	}
	return accounts, nil
}

// refill readies a round: 5,000 messages, which leave every (user,
// channel) pair with unread messages (unread for the subscribers but
// their senders), and the push tokens the DELETE scenarios remove.
func refill(z *target, accounts []account, requests int) error {
	steps := []struct {
		what string
		n    int
		req  func(i int) *http.Request
	}{
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
			return fmt.Errorf("refill %s: %w", s.what, r.err)
		}
	}
	return nil
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

// compareMarkRead times mark_stream_as_read on a channel where a user
// has bigUnread unread messages against one where they have one: 21
// readers share the big channel, so that each side is a median of 21
// marks, taken alternately.
func compareMarkRead(z *target, accounts []account, bigUnread int) error {
	const marks = 21
	readers, writer := accounts[:marks], accounts[marks]
	for _, name := range []string{"big", "small"} {
		for _, a := range append(slices.Clone(readers), writer) {
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
		if err := getJSON(z, "/api/v1/get_stream_id?stream="+name, readers[0], &body); err != nil {
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
	mark := func(channel string, reader account) func(int) *http.Request {
		return func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {channel}}, reader.email, reader.key)
		}
	}
	var big, small []time.Duration
	for i := range marks {
		r := drive(z, 1, 1, 200, mark(ids["big"], readers[i]))
		if r.err != nil {
			return r.err
		}
		big = append(big, r.p50)
		if r := drive(z, 1, 1, 200, send(ids["small"])); r.err != nil {
			return r.err
		}
		if r = drive(z, 1, 1, 200, mark(ids["small"], readers[0])); r.err != nil {
			return r.err
		}
		small = append(small, r.p50)
	}
	slices.Sort(big)
	slices.Sort(small)
	ratio := float64(big[marks/2]) / float64(small[marks/2])
	fmt.Printf("mark_stream_as_read, median of %d each, alternating: %d unread %v, 1 unread %v: %.2fx (target: within 3x)\n",
		marks, bigUnread, big[marks/2].Round(time.Microsecond), small[marks/2].Round(time.Microsecond), ratio)
	return nil
}

// compareSend times a send to a channel of n subscribers against a send
// to one of 10, alternately, one at a time, and counts the pages each
// commits (from /metrics): both must not grow with the subscribers. The
// accounts are made through the admin socket, as `zulite user add`
// makes them, without its process for each. The small channel's members
// join through the API; the big channel's are written into the file
// while the server is stopped (seedSubscribers says why), and the API
// must then count them all, and show the sends unread to one of them.
func compareSend(z *target, db, ownerKey string, n int, restart func(meanwhile func() error) error) error {
	fmt.Printf("\nmaking %d accounts through the admin socket for the send comparison ...\n", n-1)
	start := time.Now()
	emails := make([]string, n-1)
	var mu sync.Mutex
	var firstErr error
	var lastKey string
	parallel(16, n-1, func(i int) {
		emails[i] = fmt.Sprintf("member%d@example.com", i)
		key, err := adminUserAdd(db+".sock", emails[i])
		mu.Lock()
		defer mu.Unlock()
		firstErr = cmp.Or(firstErr, err)
		if i == n-2 {
			lastKey = key
		}
	})
	if firstErr != nil {
		return fmt.Errorf("user add: %w", firstErr)
	}
	fmt.Printf("made in %v\n", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	owner := account{email: "owner@zulite.localhost", key: ownerKey}
	subscribe := func(name string, principals []string) error {
		params := url.Values{"subscriptions": {`[{"name":"` + name + `"}]`}}
		if principals != nil {
			list, _ := json.Marshal(principals)
			params.Set("principals", string(list))
		}
		r := drive(z, 1, 1, 200, func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/users/me/subscriptions", params, owner.email, owner.key)
		})
		return r.err
	}
	ids := map[string]string{}
	for _, name := range []string{"few", "crowd"} { // the owner makes them, and is their sender
		if err := subscribe(name, nil); err != nil {
			return err
		}
		var body struct {
			StreamID int `json:"stream_id"`
		}
		if err := getJSON(z, "/api/v1/get_stream_id?stream="+name, owner, &body); err != nil {
			return err
		}
		ids[name] = strconv.Itoa(body.StreamID)
	}
	if err := subscribe("few", emails[:9]); err != nil {
		return err
	}
	crowdID, _ := strconv.ParseUint(ids["crowd"], 10, 64)
	if err := restart(func() error { return seedSubscribers(db, crowdID, emails) }); err != nil {
		return err
	}
	var counted struct {
		Stream struct {
			SubscriberCount int `json:"subscriber_count"`
		} `json:"stream"`
	}
	if err := getJSON(z, "/api/v1/streams/"+ids["crowd"], owner, &counted); err != nil {
		return err
	}
	if counted.Stream.SubscriberCount != n {
		return fmt.Errorf("the big channel has %d subscribers, want %d", counted.Stream.SubscriberCount, n)
	}
	fmt.Printf("subscribed in %v\n", time.Since(start).Round(time.Millisecond))

	const sends = 200
	times := map[string][]time.Duration{}
	pages := map[string]float64{}
	for i := range 2 * sends {
		name := []string{"few", "crowd"}[i%2]
		before, err := commitGroups(z, ownerKey)
		if err != nil {
			return err
		}
		r := drive(z, 1, 1, 200, func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {ids[name]}, "topic": {"t"}, "content": {"hello"}}, owner.email, owner.key)
		})
		if r.err != nil {
			return r.err
		}
		after, err := commitGroups(z, ownerKey)
		if err != nil {
			return err
		}
		times[name] = append(times[name], r.p50)
		pages[name] += after.pages - before.pages
	}
	var unread struct {
		Messages []json.RawMessage `json:"messages"`
	}
	narrow := url.QueryEscape(`[["channel","crowd"],["is","unread"]]`)
	if err := getJSON(z, "/api/v1/messages?anchor=newest&num_before=1000&num_after=0&narrow="+narrow, account{email: emails[n-2], key: lastKey}, &unread); err != nil {
		return err
	}
	if len(unread.Messages) != sends {
		return fmt.Errorf("%s has %d unread messages in the big channel, want %d", emails[n-2], len(unread.Messages), sends)
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	few, crowd := median(times["few"]), median(times["crowd"])
	fmt.Printf("send, median of %d each, alternating: 10 subscribers %v (%.1f pages), %d subscribers %v (%.1f pages): %.2fx (target: within 2x)\n",
		sends, few.Round(time.Microsecond), pages["few"]/sends, n, crowd.Round(time.Microsecond), pages["crowd"]/sends, float64(crowd)/float64(few))
	return nil
}

// seedSubscribers subscribes the accounts of emails to the channel
// straight in the database file, writing what zulite's subscribe writes
// (the subscription's record, the subscribers index with the
// subscription's start, and, from schema 3 on, the read watermark),
// while no server holds the file. Through the API, each joiner costs a
// walk over every account (the subscription event's figures), so a
// channel of 100,000 would take hours to fill.
func seedSubscribers(db string, channelID uint64, emails []string) error {
	d, err := bbolt.Open(db, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer d.Close()
	be := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	return d.Update(func(tx *bbolt.Tx) error {
		start := be(tx.Bucket([]byte("messages")).Sequence())
		subscription := fmt.Sprintf(`{"color":"#76ce90","joined":%d}`, time.Now().Unix())
		watermarks := tx.Bucket([]byte("watermarks")) // nil before schema 3
		for _, email := range emails {
			id := tx.Bucket([]byte("user_emails")).Get([]byte(strings.ToLower(email)))
			if id == nil {
				return fmt.Errorf("seed subscribers: no account %s", email)
			}
			pair, byChannel := append(slices.Clone(id), be(channelID)...), append(be(channelID), id...)
			if err := tx.Bucket([]byte("subscriptions")).Put(pair, []byte(subscription)); err != nil {
				return err
			}
			value := start
			if watermarks == nil {
				value = nil
			}
			if err := tx.Bucket([]byte("subscribers")).Put(byChannel, value); err != nil {
				return err
			}
			if watermarks != nil {
				if err := watermarks.Put(pair, start); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// adminUserAdd makes an account through the admin socket at sock, as
// `zulite user add EMAIL` does while a server holds the database, and
// answers its API key.
func adminUserAdd(sock, email string) (string, error) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	req := map[string]any{"command": "user add", "args": []string{email}, "options": map[string]any{}}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return "", err
	}
	var resp struct {
		Output string `json:"output"`
		Error  string `json:"error"`
	}
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		return "", err
	}
	if resp.Error != "" {
		return "", errors.New(resp.Error)
	}
	return strings.TrimSpace(resp.Output), nil
}

// ---- driving load ----

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
	client := t.httpClient()
	latencies := make([]time.Duration, n)
	var next atomic.Int64
	var failure atomic.Value
	var wg sync.WaitGroup
	cpuBefore := cpuTime(t.pid)
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
	cpu := cpuTime(t.pid) - cpuBefore
	slices.Sort(latencies)
	r := result{rps: float64(n) / elapsed.Seconds(), p50: latencies[n/2], p99: latencies[min(n-1, n*99/100)], cpu: cpu / time.Duration(n)}
	if err, ok := failure.Load().(error); ok {
		r.err = err
	}
	return r
}

// groups is what zulite's /metrics says of its commit groups: how many,
// the writes in them, the seconds they took and the pages they wrote.
type groups struct{ count, writes, seconds, pages float64 }

func (g groups) minus(h groups) groups {
	return groups{g.count - h.count, g.writes - h.writes, g.seconds - h.seconds, g.pages - h.pages}
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

type row struct {
	name        string
	concurrency int
	result      result
	ceiling     *result // the ceiling this row is compared with, from the same round
	commits     groups  // zulite's commit groups during the row, for writes
}

// printTable prints each scenario's median over the rounds: of requests/s,
// p50, p99, the server's CPU time per request, and the ratio to the
// ceiling (each round's ratio is of two measurements moments apart, so
// the median of ratios is steadier than a ratio of medians). For the
// writes, the ceiling's and zulite's, it adds the commit groups: writes,
// time and pages written per commit.
func printTable(table [][]row) {
	fmt.Printf("median of %d rounds\n", len(table))
	fmt.Printf("%-42s %5s %8s %9s %9s %6s %10s  %s\n", "scenario", "conc", "req/s", "p50", "p99", "ratio", "server CPU", "commit groups")
	for i, r := range table[0] {
		pick := func(f func(row) float64) float64 {
			var v []float64
			for _, rows := range table {
				v = append(v, f(rows[i]))
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		ratio, commits := "", ""
		if r.ceiling != nil {
			ratio = fmt.Sprintf("%.2f", pick(func(r row) float64 { return r.result.rps / r.ceiling.rps }))
		}
		if r.commits.count > 0 {
			commits = fmt.Sprintf("%4.1f writes, %.2f ms, %4.1f pages",
				pick(func(r row) float64 { return r.commits.writes / r.commits.count }),
				pick(func(r row) float64 { return r.commits.seconds / r.commits.count * 1000 }),
				pick(func(r row) float64 { return r.commits.pages / r.commits.count }))
		}
		fmt.Printf("%-42s %5d %8.0f %7.3fms %7.3fms %6s %7.1f µs  %s\n", r.name, r.concurrency,
			pick(func(r row) float64 { return r.result.rps }),
			pick(func(r row) float64 { return ms(r.result.p50) }),
			pick(func(r row) float64 { return ms(r.result.p99) }), ratio,
			pick(func(r row) float64 { return float64(r.result.cpu) / float64(time.Microsecond) }), commits)
	}
}
