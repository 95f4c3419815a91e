package main

// Running the day (day.go) against a zulite binary: a fresh database
// seeded with the organisation, the morning's registrations, then the
// day's requests, each sent at its scheduled time whatever the ones
// before it are doing (an open loop), while every tab long-polls on a
// connection of its own. It measures each request, what reached the
// tabs, the server's memory and processor, and its own processor and
// lateness, so that a run says when this machine could not drive the
// load.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The web app registers without event_types or fetch_event_types:
// every event and the whole initial state (zerver/lib/home.py; without
// user_list_incomplete, so that the users come whole). The Flutter app
// registers its own way (zulip-flutter lib/api/route/events.dart).
var (
	tabRegister = url.Values{"apply_markdown": {"true"}, "client_gravatar": {"true"}, "slim_presence": {"true"},
		"client_capabilities": {`{"notification_settings_null":true,"bulk_message_deletion":true,"user_avatar_url_field_optional":true,"stream_typing_notifications":true,"user_settings_object":true,"linkifier_url_template":true,"include_deactivated_groups":true,"archived_channels":true,"empty_topic_name":true,"simplified_presence_events":true}`}}
	phoneRegister = url.Values{"apply_markdown": {"true"}, "client_gravatar": {"false"}, "slim_presence": {"true"},
		"client_capabilities": {`{"notification_settings_null":true,"bulk_message_deletion":true,"user_avatar_url_field_optional":false,"stream_typing_notifications":true,"user_settings_object":true,"include_deactivated_groups":true,"empty_topic_name":true}`}}
)

// dayDrain is how long the tabs may take, after the last request, to
// receive the messages sent.
const dayDrain = 20 * time.Second

// runDays runs the same day against each binary in turn (a fresh
// database each) and prints them side by side. A binary named "" is
// built from the repository in the current directory.
func runDays(c dayConfig, bins []string) error {
	dir, err := os.MkdirTemp("", "zulite-day-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s := newDaySchedule(c)
	var results []dayResult
	for i, bin := range bins {
		label := bin
		if bin == "" {
			if bin, err = buildZulite(dir); err != nil {
				return err
			}
			label = "this tree"
		}
		r, err := runDay(c, &s, bin, label, filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		results = append(results, r)
	}
	printDay(c, results)
	failed := false
	for _, r := range results {
		for _, n := range r.noAnswers {
			fmt.Printf("no answer (%s): %s\n", r.label, n)
		}
		for _, l := range r.errorSamples {
			fmt.Printf("server log (%s): %s\n", r.label, l)
		}
	}
	for _, r := range results {
		for _, f := range r.failures {
			fmt.Printf("FAILED (%s): %s\n", r.label, f)
			failed = true
		}
	}
	if failed {
		return errors.New("some requests did not answer as expected")
	}
	return nil
}

// dayPerson is one person of the organisation as the server knows them.
type dayPerson struct {
	email, auth string // auth: the Authorization header's value
	id          int64
}

// dayRun is one day against one server.
type dayRun struct {
	c        dayConfig
	s        *daySchedule
	base     string // http://address
	host     string
	pid      int
	client   *http.Client
	ctx      context.Context // cancelled when the day is over
	cancel   context.CancelFunc
	people   []dayPerson
	channels []int64 // the server's id of each channel
	tabs     []*dayTab

	stats [opKinds]struct {
		sync.Mutex
		opStats
	}
	sentAt []time.Time     // by message number, written before its id
	sentID []atomic.Uint64 // by message number; 0 until the send answers
	// topicUsed says, by channel*dayTopics+topic, that a message to the
	// topic has been sent.
	topicUsed [dayChannels * dayTopics]atomic.Bool
	inFlight  sync.WaitGroup

	mu               sync.Mutex
	lateness         []time.Duration
	latenessByMinute [][]time.Duration // by the minute of the day each was due
	failures         []string
	failuresByKind   map[string]int
	noAnswers        map[string]int // requests that did not answer, by route and error

	presenceLast                           []atomic.Int64 // each person's presence_last_update_id
	expected, received                     atomic.Int64   // message events due to tabs and received by them
	badQueue, reRegistered, reconnects     atomic.Int64
	tabsRegistered, phonesRegistered       atomic.Int64
	stateBytes, states, presences, skipped atomic.Int64
	stopped                                atomic.Bool
}

// runDay seeds a fresh database for bin, registers the tabs and phones,
// runs the day and counts it.
func runDay(c dayConfig, s *daySchedule, bin, label, dir string) (dayResult, error) {
	r := dayResult{label: label}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return r, err
	}
	db, logPath := filepath.Join(dir, "day.db"), filepath.Join(dir, "server.log")
	srv, ownerKey, err := startDayServer(bin, db, logPath)
	if err != nil {
		return r, err
	}
	defer srv.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &dayRun{c: c, s: s, base: "http://" + srv.addr, host: srv.addr, pid: srv.cmd.Process.Pid, ctx: ctx,
		client:         dayClient(),
		sentAt:         make([]time.Time, len(s.messages)),
		sentID:         make([]atomic.Uint64, len(s.messages)),
		presenceLast:   make([]atomic.Int64, c.people),
		failuresByKind: map[string]int{}, noAnswers: map[string]int{}, cancel: cancel}
	for i := range d.presenceLast {
		d.presenceLast[i].Store(-1)
	}

	fmt.Printf("%s: seeding %d people, %d channels and their subscriptions ...\n", label, c.people, dayChannels)
	start := time.Now()
	if err := d.seed(db+".sock", ownerKey); err != nil {
		return r, err
	}
	fmt.Printf("%s: seeded in %v; %d tabs and %d phones register over %v\n", label, time.Since(start).Round(time.Millisecond), c.people, c.people, c.ramp)

	// The morning: each tab and phone registers at its time; the day
	// begins when every first attempt has answered or given up.
	share := max(16, 4096/4) - 16 // polls an address, within zulite's default per-address share
	d.tabs = make([]*dayTab, c.people)
	for p := range d.tabs {
		d.tabs[p] = &dayTab{d: d, person: p, source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+p/share))}, done: make(chan struct{})}
	}
	var firstAttempts sync.WaitGroup
	cpuBefore := cpuTime(d.pid)
	start = time.Now()
	d.dispatch(s.ramp, false, func(a action) {
		switch a.kind {
		case opRegisterTab:
			firstAttempts.Add(1)
			go d.tabs[a.person].run(firstAttempts.Done)
		case opRegisterPhone:
			d.phone(int(a.person))
		}
	})
	d.inFlight.Wait()
	firstAttempts.Wait()
	r.rampCPU = float64(cpuTime(d.pid)-cpuBefore) / float64(time.Since(start))
	fmt.Printf("%s: %d tabs and %d phones registered in %v; the day begins (%.4g min)\n", label, d.tabsRegistered.Load(), d.phonesRegistered.Load(), time.Since(start).Round(time.Millisecond), c.minutes)

	// The day, with the server's processor read each minute.
	serverBefore, selfBefore, machineBefore, stallBefore := cpuTime(d.pid), cpuTime(os.Getpid()), machineBusy(), memoryStall()
	start = time.Now()
	minutes := make(chan struct{})
	go func() {
		defer close(minutes)
		last, at := serverBefore, start
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		end := time.After(c.length())
		for {
			select {
			case now := <-tick.C:
				cpu := cpuTime(d.pid)
				r.serverCPU = append(r.serverCPU, float64(cpu-last)/float64(now.Sub(at)))
				last, at = cpu, now
			case <-end:
				if now := time.Now(); now.Sub(at) >= time.Second {
					r.serverCPU = append(r.serverCPU, float64(cpuTime(d.pid)-last)/float64(now.Sub(at)))
				}
				return
			}
		}
	}()
	d.dispatch(s.day, true, d.do)
	elapsed := time.Since(start)
	self := cpuTime(os.Getpid()) - selfBefore
	r.generatorCPU = float64(self) / float64(elapsed)
	r.othersCPU = float64(machineBusy()-machineBefore-self-(cpuTime(d.pid)-serverBefore)) / float64(elapsed)
	r.memoryStall = float64(memoryStall()-stallBefore) / float64(elapsed)
	<-minutes
	d.inFlight.Wait()
	for deadline := time.Now().Add(dayDrain); time.Now().Before(deadline) && d.received.Load() < d.expected.Load(); {
		time.Sleep(100 * time.Millisecond)
	}
	r.peakKiB = procStatusKiB(d.pid, "VmHWM:")
	d.stop()
	fmt.Printf("%s: the day's %d requests sent in %v\n", label, len(s.day), elapsed.Round(time.Millisecond))

	// Count it.
	sent := make([]sentMessage, len(s.messages))
	for i, m := range s.messages {
		sent[i] = sentMessage{id: d.sentID[i].Load(), at: d.sentAt[i], recipients: s.recipients(m)}
	}
	receipts := make([][]receipt, c.people)
	for p, t := range d.tabs {
		receipts[p] = t.receipts
	}
	r.messages = countDeliveries(sent, receipts)
	for k := range d.stats {
		r.ops[k] = d.stats[k].opStats
		slices.Sort(r.ops[k].latencies)
	}
	r.tabsRegistered, r.phonesRegistered = int(d.tabsRegistered.Load()), int(d.phonesRegistered.Load())
	r.badQueue, r.reRegistrations, r.reconnects = int(d.badQueue.Load()), int(d.reRegistered.Load()), int(d.reconnects.Load())
	if n := d.states.Load(); n > 0 {
		r.stateBytes = int(d.stateBytes.Load() / n)
	}
	r.presenceEvents, r.skipped = d.presences.Load(), int(d.skipped.Load())
	r.lateness = slices.Sorted(slices.Values(d.lateness))
	for _, l := range d.latenessByMinute {
		r.latenessP99ByMinute = append(r.latenessP99ByMinute, quantile(slices.Sorted(slices.Values(l)), 0.99))
	}
	r.failures = d.failures
	for kind, n := range d.failuresByKind {
		if n > 1 {
			r.failures = append(r.failures, fmt.Sprintf("%s: %d times in all", kind, n))
		}
	}
	slices.Sort(r.failures)
	for kind, n := range d.noAnswers {
		r.noAnswers = append(r.noAnswers, fmt.Sprintf("%s: %d", kind, n))
	}
	slices.Sort(r.noAnswers)
	r.errorLines, r.errorSamples = errorLines(logPath)
	return r, nil
}

// dayClient is the people's requests' client. Each person has a
// browser or an app of their own, so the requests never wait for one
// another's connections here: there is no bound on connections, and they
// come from 16 addresses (127.0.1.1 to 127.0.1.16) so that none holds
// more than zulite's share for one address (a quarter of
// --max-connections).
func dayClient() *http.Client {
	var next atomic.Uint32
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			source := &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(1+next.Add(1)%16))}
			return (&net.Dialer{LocalAddr: source, Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
		}}}
}

// dispatch starts each action at its time from now, each in its own
// goroutine, whether or not the ones before it have answered; timed
// records how late each started.
func (d *dayRun) dispatch(actions []action, timed bool, do func(action)) {
	start := time.Now()
	for _, a := range actions {
		due := start.Add(a.at)
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		d.inFlight.Add(1)
		go func() {
			defer d.inFlight.Done()
			if timed {
				late := time.Since(due)
				minute := int(a.at / time.Minute)
				d.mu.Lock()
				d.lateness = append(d.lateness, late)
				for len(d.latenessByMinute) <= minute {
					d.latenessByMinute = append(d.latenessByMinute, nil)
				}
				d.latenessByMinute[minute] = append(d.latenessByMinute[minute], late)
				d.mu.Unlock()
			}
			do(a)
		}()
	}
}

// stop ends the day: the requests in flight are abandoned and every
// tab's poll closed.
func (d *dayRun) stop() {
	d.stopped.Store(true)
	d.cancel()
	for _, t := range d.tabs {
		t.close()
	}
	for _, t := range d.tabs {
		if t.started.Load() {
			<-t.done
		}
	}
}

// call sends one request with the Authorization header auth and answers
// its body and status. A status other than 200 is a failure of the run,
// kept with its body; a request that did not answer within timeout
// counts as an error of its kind, and the table says how many.
func (d *dayRun) call(kind opKind, auth, method, path string, params url.Values, timeout time.Duration) ([]byte, int) {
	ctx, cancel := context.WithTimeout(d.ctx, timeout)
	defer cancel()
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader(params.Encode())
	} else if len(params) > 0 {
		path += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, body)
	if err != nil {
		panic(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", auth)
	began := time.Now()
	resp, err := d.client.Do(req)
	var answer []byte
	status := 0
	if err == nil {
		status = resp.StatusCode
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	took := time.Since(began)
	if err != nil && d.stopped.Load() {
		return nil, 0 // abandoned when the day ended
	}
	st := &d.stats[kind]
	st.Lock()
	st.count++
	st.latencies = append(st.latencies, took)
	if err != nil || status != http.StatusOK {
		st.errors++
	}
	st.Unlock()
	route := method + " " + strings.SplitN(path, "?", 2)[0]
	if kind == opReaction || kind == opEdit {
		route = opNames[kind] // not one line per message
	}
	switch {
	case err != nil: // no answer, or an answer cut short by the timeout: nothing to read
		d.mu.Lock()
		d.noAnswers[route+": "+noAnswer(err)]++
		d.mu.Unlock()
		return nil, 0
	case status != http.StatusOK:
		d.fail(fmt.Sprintf("%s: got status %d, want 200", route, status), string(answer))
	}
	return answer, status
}

// noAnswer names why a request had no answer, without the addresses
// that would make each connection's a line of its own.
func noAnswer(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), strings.Contains(err.Error(), "server closed idle connection"):
		return "the server closed the connection"
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return err.Error()
}

// fail keeps a failure: the first of each kind with the body it
// answered, the rest counted.
func (d *dayRun) fail(kind, body string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failuresByKind[kind]++
	if d.failuresByKind[kind] > 1 {
		return
	}
	if len(body) > 500 {
		body = body[:500] + "..."
	}
	if body != "" {
		kind += ": " + strings.TrimSpace(body)
	}
	d.failures = append(d.failures, kind)
}

// Timeouts: a registration has the configured one; anything else 30 s.
const dayRequestTimeout = 30 * time.Second

// phone registers person p's phone as the Flutter app does and gives
// it an APNs token; its queue is never polled, as a backgrounded app's.
func (d *dayRun) phone(p int) {
	if body, status := d.call(opRegisterPhone, d.people[p].auth, http.MethodPost, "/api/v1/register", phoneRegister, d.c.registerTimeout); status == 200 && len(body) > 0 {
		d.phonesRegistered.Add(1)
	}
	d.call(opPushToken, d.people[p].auth, http.MethodPost, "/api/v1/users/me/apns_device_token",
		url.Values{"token": {fmt.Sprintf("%064x", 0xda7<<32|p)}, "appid": {"org.zulip.Zulip"}}, dayRequestTimeout)
}

// do sends one of the day's requests.
func (d *dayRun) do(a action) {
	who := d.people[a.person].auth
	topic := "topic " + strconv.Itoa(int(a.topic))
	switch a.kind {
	case opSend, opDM:
		content := fmt.Sprintf("Message %d of the day: a line or two of ordinary prose, about as long as people write in a chat.", a.message)
		params := url.Values{"type": {"stream"}, "topic": {topic}}
		if a.kind == opDM {
			params = url.Values{"type": {"direct"}, "to": {"[" + strconv.FormatInt(d.people[a.other].id, 10) + "]"}}
		} else {
			params.Set("to", strconv.FormatInt(d.channels[a.channel], 10))
			if a.other >= 0 {
				content = "@**" + personName(int(a.other)) + "** " + content
			}
		}
		params.Set("content", content)
		d.sentAt[a.message] = time.Now()
		body, status := d.call(a.kind, who, http.MethodPost, "/api/v1/messages", params, dayRequestTimeout)
		var sent struct {
			ID uint64 `json:"id"`
		}
		if status == 200 && json.Unmarshal(body, &sent) == nil && sent.ID != 0 {
			d.sentID[a.message].Store(sent.ID)
			if a.kind == opSend {
				d.topicUsed[int(a.channel)*dayTopics+int(a.topic)].Store(true)
			}
			d.expected.Add(int64(len(d.s.recipients(d.s.messages[a.message]))))
		}
	case opRead:
		d.call(opRead, who, http.MethodGet, "/api/v1/messages", url.Values{"anchor": {"newest"}, "num_before": {"50"}, "num_after": {"0"},
			"narrow": {d.topicNarrow(a)}, "apply_markdown": {"true"}, "client_gravatar": {"true"}}, dayRequestTimeout)
	case opMark:
		// Zulip refuses mark_topic_as_read on a topic without messages
		// ("No such topic"): until one reached it, the mark is by narrow.
		if a.variant == 0 || !d.topicUsed[int(a.channel)*dayTopics+int(a.topic)].Load() {
			d.call(opMark, who, http.MethodPost, "/api/v1/messages/flags/narrow", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"1000"},
				"narrow": {d.topicNarrow(a)}, "op": {"add"}, "flag": {"read"}}, dayRequestTimeout)
		} else {
			d.call(opMark, who, http.MethodPost, "/api/v1/mark_topic_as_read", url.Values{"stream_id": {strconv.FormatInt(d.channels[a.channel], 10)}, "topic_name": {topic}}, dayRequestTimeout)
		}
	case opPresence:
		body, status := d.call(opPresence, who, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}, "ping_only": {"false"},
			"new_user_input": {"true"}, "last_update_id": {strconv.FormatInt(d.presenceLast[a.person].Load(), 10)}}, dayRequestTimeout)
		if status == 200 {
			var last int64 = -1
			if scanMembers(body, nil, map[string]*int64{"presence_last_update_id": &last}) == nil && last >= 0 {
				d.presenceLast[a.person].Store(last)
			}
		}
	case opTyping:
		d.call(opTyping, who, http.MethodPost, "/api/v1/typing", url.Values{"op": {"start"}, "type": {"channel"},
			"stream_id": {strconv.FormatInt(d.channels[a.channel], 10)}, "topic": {topic}}, dayRequestTimeout)
	case opReaction, opEdit:
		id := d.sentID[a.message].Load()
		if id == 0 {
			d.skipped.Add(1)
			return
		}
		path := "/api/v1/messages/" + strconv.FormatUint(id, 10)
		if a.kind == opReaction {
			d.call(opReaction, who, http.MethodPost, path+"/reactions", url.Values{"emoji_name": {reactionEmoji[a.variant]}}, dayRequestTimeout)
		} else {
			d.call(opEdit, who, http.MethodPatch, path, url.Values{"content": {fmt.Sprintf("Message %d of the day, edited.", a.message)}}, dayRequestTimeout)
		}
	}
}

func (d *dayRun) topicNarrow(a action) string {
	return `[{"operator":"channel","operand":` + strconv.FormatInt(d.channels[a.channel], 10) + `},{"operator":"topic","operand":"topic ` + strconv.Itoa(int(a.topic)) + `"}]`
}

func personName(p int) string { return "person" + strconv.Itoa(p) }

// seed makes the people (through the admin socket), the channels (the
// owner creates them by subscribing), and each person's subscriptions,
// and learns the ids.
func (d *dayRun) seed(sock, ownerKey string) error {
	c, org := d.c, d.s.org
	d.people = make([]dayPerson, c.people)
	var mu sync.Mutex
	var firstErr error
	parallel(8, c.people, func(p int) {
		email := personName(p) + "@example.com"
		key, err := adminUserAdd(sock, email)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("user add %s: %w", email, err)
		}
		d.people[p] = dayPerson{email: email, auth: "Basic " + base64.StdEncoding.EncodeToString([]byte(email+":"+key))}
	})
	if firstErr != nil {
		return firstErr
	}
	z := &target{base: d.base, pid: d.pid}
	owner := account{email: "owner@zulite.localhost", key: ownerKey}
	d.channels = make([]int64, dayChannels)
	for ch := range dayChannels {
		name := "day " + strconv.Itoa(ch)
		if r := drive(z, 1, 1, 200, func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"` + name + `"}]`}}, owner.email, owner.key)
		}); r.err != nil {
			return fmt.Errorf("create channel %q: %w", name, r.err)
		}
		var body struct {
			StreamID int64 `json:"stream_id"`
		}
		if err := getJSON(z, "/api/v1/get_stream_id?stream="+url.QueryEscape(name), owner, &body); err != nil || body.StreamID == 0 {
			return fmt.Errorf("the id of channel %q: %v", name, err)
		}
		d.channels[ch] = body.StreamID
	}
	if r := drive(z, 8, c.people, 200, func(p int) *http.Request {
		var subs []string
		for _, ch := range org.channelsOf[p] {
			subs = append(subs, `{"name":"day `+strconv.Itoa(int(ch))+`"}`)
		}
		req := newRequest(z, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {"[" + strings.Join(subs, ",") + "]"}}, "", "")
		req.Header.Set("Authorization", d.people[p].auth)
		return req
	}); r.err != nil {
		return fmt.Errorf("subscribe: %w", r.err)
	}
	var users struct {
		Members []struct {
			Email         string `json:"email"`
			DeliveryEmail string `json:"delivery_email"`
			UserID        int64  `json:"user_id"`
		} `json:"members"`
	}
	if err := getJSON(z, "/api/v1/users", owner, &users); err != nil {
		return fmt.Errorf("GET /api/v1/users: %w", err)
	}
	ids := map[string]int64{}
	for _, m := range users.Members {
		ids[strings.ToLower(m.Email)], ids[strings.ToLower(m.DeliveryEmail)] = m.UserID, m.UserID
	}
	for p := range d.people {
		if d.people[p].id = ids[d.people[p].email]; d.people[p].id == 0 {
			return fmt.Errorf("GET /api/v1/users: no id for %s", d.people[p].email)
		}
	}
	return nil
}

// startDayServer starts bin on a fresh database, its log going to a file
// (a pipe would make this process read every request's line), and
// answers it with the owner's key.
func startDayServer(bin, db, logPath string) (*process, string, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "serve", "--db", db, "--addr", "127.0.0.1:0", "--rate-limit", "off")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, zuliteEnv...)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	keyc := make(chan string, 1)
	go scanFor(stdout, bootstrapKey, keyc)
	var key, addr string
	for deadline := time.Now().Add(10 * time.Second); key == "" || addr == ""; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, "", errors.New("zulite did not start within 10 s")
		}
		select {
		case key = <-keyc:
		case <-time.After(20 * time.Millisecond):
		}
		if log, err := os.ReadFile(logPath); err == nil && addr == "" {
			if m := listening.FindSubmatch(log); m != nil {
				addr = string(m[1])
			}
		}
	}
	return &process{cmd, addr}, key, nil
}

// errorLines counts the server's log lines at level ERROR and answers
// the first few of them (its 5xx answers, say, and why).
func errorLines(logPath string) (int, []string) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, nil
	}
	defer f.Close()
	n := 0
	var first []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte("level=ERROR")) {
			if n++; len(first) < 3 {
				first = append(first, string(sc.Bytes()[:min(len(sc.Bytes()), 300)]))
			}
		}
	}
	return n, first
}

// procStatusKiB reads a figure in kB of /proc/PID/status, such as VmHWM.
func procStatusKiB(pid int, field string) int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kib, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kib
		}
	}
	return 0
}

// machineBusy answers the processor time this machine has spent on
// anything but idling, all cores together, from /proc/stat: less the
// server's and this process's, it is what others ran meanwhile.
func machineBusy() time.Duration {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var busy int64
	for i, f := range fields[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		if i != 3 && i != 4 && i < 8 { // not idle, not iowait; guest time is in user already
			busy += n
		}
	}
	return time.Duration(busy) * 10 * time.Millisecond // USER_HZ is 100
}

// memoryStall answers how long, so far, every task of this machine
// waited on memory at once (/proc/pressure/memory, "full"): other
// programs that fill the memory stall the day whatever its own figures.
func memoryStall() time.Duration {
	pressure, err := os.ReadFile("/proc/pressure/memory")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(pressure), "\n") {
		if rest, ok := strings.CutPrefix(line, "full "); ok {
			for _, f := range strings.Fields(rest) {
				if v, ok := strings.CutPrefix(f, "total="); ok {
					us, _ := strconv.ParseInt(v, 10, 64)
					return time.Duration(us) * time.Microsecond
				}
			}
		}
	}
	return 0
}
