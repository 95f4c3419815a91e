// Command load measures zulite against this machine's ceilings in one
// run: a minimal net/http server that checks a Basic header and answers a
// fixed envelope (the plain ceiling), a minimal net/http server that
// commits one bbolt write per request in groups (the write ceiling), and
// the real zulite binary on a fresh database with 1,000 users, 100
// channels and realistic unread state. Each is driven at concurrency 1,
// 16 and 64 over keep-alive connections, the scenarios taking turns in
// five stretches (so that zulite and its ceiling share the same seconds
// of a shared machine), and a table shows requests/s,
// p50 and p99, and zulite's ratio to the matching ceiling, with zulite's
// peak anonymous memory. Then it compares mark_stream_as_read with
// 1,000,000 unread messages against 1 (-big-unread), and a send to a
// channel of 100,000 subscribers against one of 10 (-big-channel). Any
// unexpected status fails the run.
//
// Run it from the repository root: go run ./bench/load
// (go run ./bench/load -sweep=false runs the comparisons alone;
// go run ./bench/load -fanout 1000,10000 measures event fan-out instead:
// fanout.go; go run ./bench/load -day runs an organisation's working day:
// day.go)
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
	env := flag.String("zulite-env", "", "fan-out and day: settings of zulite's environment to compare, space-separated (GOGC=100 GOMEMLIMIT=150MiB)")
	day := flag.Bool("day", false, "instead of the sweep, the day mode (day.go): an organisation's working day on the real binary")
	dayPeople := flag.Int("day-people", 1000, "day: people in the organisation, each with a web tab and a phone")
	dayMinutes := flag.Float64("day-minutes", 3, "day: minutes of the day's requests, after the registrations")
	dayRatesFlag := flag.String("day-rates", "", "day: rates replacing the defaults, key=value,... (defaults: "+defaultDayRates+"; a second, presence every, a reaction and an edit per N messages)")
	daySeed := flag.Uint64("day-seed", 1, "day: the seed of the organisation and the schedule")
	dayRamp := flag.Duration("day-ramp", time.Minute, "day: the tabs and phones register spread over this, before the day")
	dayRegisterTimeout := flag.Duration("day-register-timeout", 10*time.Second, "day: a registration not answered in this is given up and tried again")
	dayBin := flag.String("day-bin", "", "day: the zulite binary (default: built from the repository)")
	dayVs := flag.String("day-vs", "", "day: another zulite binary to run the same day against afterwards, printed beside the first")
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
		if *day {
			var rates dayRates
			if rates, err = parseDayRates(*dayRatesFlag); err != nil {
				break
			}
			if *dayPeople < 2 || *dayMinutes <= 0 {
				err = errors.New("-day-people must be at least 2 and -day-minutes above 0")
				break
			}
			bins := []string{*dayBin}
			if *dayVs != "" {
				bins = append(bins, *dayVs)
			}
			err = runDays(dayConfig{people: *dayPeople, minutes: *dayMinutes, rates: rates, seed: *daySeed, ramp: *dayRamp, registerTimeout: *dayRegisterTimeout}, bins)
			break
		}
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

// stretches is how many stretches each scenario of a sweep is cut into,
// the scenarios taking turns stretch by stretch: a ratio then compares
// a scenario with its ceiling over the same seconds, and a moment of
// load from elsewhere on the machine falls on both rather than on one
// (a stretch of 1,000 writes at concurrency 64 lasts some 50 ms).
const stretches = 5

// phase is one scenario of a sweep at one concurrency.
type phase struct {
	t           *target
	n, want     int
	build       func(i int) *http.Request
	groupsOf    string // the key to read the target's commit groups with, if it commits
	done        sample
	commits     groups
	metricsFail error
}

// sweep drives every scenario at concurrency 1, 16 and 64: one round.
func sweep(z, plainT, writeT *target, accounts []account, ownerKey string, requests int) []row {
	writes := max(requests/4, 1)
	var rows []row
	for _, c := range []int{1, 16, 64} {
		tokenBase := map[int]int{1: 0, 16: writes, 64: 2 * writes}[c]
		ceilRead := &phase{t: plainT, n: requests, want: 200, build: func(int) *http.Request {
			return newRequest(plainT, http.MethodGet, "/api/v1/users/me", nil, "load@example.com", ownerKey)
		}}
		ceilWrite := &phase{t: writeT, n: writes, want: 200, groupsOf: ownerKey, build: func(int) *http.Request {
			return newRequest(writeT, http.MethodPost, "/api/v1/write", url.Values{"x": {"1"}}, "load@example.com", ownerKey)
		}}
		deletes := &phase{t: z, n: writes, want: 200, groupsOf: ownerKey, build: func(i int) *http.Request {
			a := accounts[(tokenBase+i)%len(accounts)]
			return newRequest(z, http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {pushTokenFor(tokenBase + i)}}, a.email, a.key)
		}}
		// Each mark is of a (user, channel) pair not marked before, which
		// holds unread messages: every mark does a real write.
		marks := &phase{t: z, n: writes, want: 200, groupsOf: ownerKey, build: func(i int) *http.Request {
			pair := tokenBase + i
			a := accounts[pair%len(accounts)]
			return newRequest(z, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.Itoa(a.channels[(pair/len(accounts))%len(a.channels)])}}, a.email, a.key)
		}}
		rejected := &phase{t: z, n: requests, want: 400, build: func(i int) *http.Request {
			a := accounts[i%len(accounts)]
			return newRequest(z, http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {"not-hex"}}, a.email, a.key)
		}}
		reads := &phase{t: z, n: requests, want: 200, build: func(i int) *http.Request {
			a := accounts[i%len(accounts)]
			return newRequest(z, http.MethodGet, "/api/v1/users/me", nil, a.email, a.key)
		}}
		phases := []*phase{ceilRead, ceilWrite, deletes, marks, rejected, reads}
		for s := range stretches {
			for _, p := range phases {
				p.run(c, p.n*s/stretches, p.n*(s+1)/stretches)
			}
		}
		ceilReadR, ceilWriteR := ceilRead.result(), ceilWrite.result()
		rows = append(rows,
			row{"ceiling: Basic check + fixed envelope", c, ceilReadR, nil, groups{}},
			row{"ceiling: group-committed bbolt write", c, ceilWriteR, nil, ceilWrite.commits},
			row{"zulite DELETE apns_device_token", c, deletes.result(), &ceilWriteR, deletes.commits},
			row{"zulite POST mark_stream_as_read", c, marks.result(), &ceilWriteR, marks.commits},
			row{"zulite rejected (400 Invalid APNS token)", c, rejected.result(), &ceilReadR, groups{}},
			row{"zulite GET users/me", c, reads.result(), &ceilReadR, groups{}},
		)
	}
	return rows
}

// run drives the phase's requests from to to-1, counting the commit
// groups they made when the phase's target commits.
func (p *phase) run(c, from, to int) {
	if from == to {
		return
	}
	var before groups
	var err error
	if p.groupsOf != "" {
		before, err = commitGroups(p.t, p.groupsOf)
	}
	p.done.add(driveRange(p.t, c, from, to, p.want, p.build))
	if p.groupsOf != "" {
		after, err2 := commitGroups(p.t, p.groupsOf)
		p.commits = p.commits.plus(after.minus(before))
		if err := errors.Join(err, err2); err != nil && p.metricsFail == nil {
			p.metricsFail = err
		}
	}
}

// result is the phase's figures; a failed scrape of /metrics fails the
// run, like any unexpected answer, rather than printing figures made of
// zeros.
func (p *phase) result() result {
	r := p.done.result()
	if r.err == nil {
		r.err = p.metricsFail
	}
	return r
}
