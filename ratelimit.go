package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rate limits as SPEC §8 sets them: per account, Zulip's default rules
// (200 requests a minute, 2000 an hour); per client address, at most 60
// failed authentications in 10 minutes. `--rate-limit off` switches both
// off (the load benchmark and the crash test do), and Zulip's 5 failed
// password logins per account (passwords.go); it leaves the abuse
// budgets, which bound what an account makes rather than how often it
// asks (the channel budget below, the upload quotas).

// rateRule allows max requests in each window.
type rateRule struct {
	window time.Duration
	max    int
}

const defaultRateRules = "60:200,3600:2000"

// parseRateRules reads "SECONDS:MAX,..." or "off" (nil rules).
func parseRateRules(text string) ([]rateRule, error) {
	if text == "off" {
		return nil, nil
	}
	var rules []rateRule
	for _, part := range strings.Split(text, ",") {
		secs, max, ok := strings.Cut(strings.TrimSpace(part), ":")
		s, err1 := strconv.Atoi(secs)
		m, err2 := strconv.Atoi(max)
		if !ok || err1 != nil || err2 != nil || s <= 0 || m <= 0 {
			return nil, fmt.Errorf("rate limit %q: want SECONDS:MAX[,SECONDS:MAX...] or off", text)
		}
		rules = append(rules, rateRule{time.Duration(s) * time.Second, m})
	}
	return rules, nil
}

// windowCounter counts events in fixed windows, one per rule.
type windowCounter struct {
	starts []time.Time
	counts []int
}

// take counts one event if every rule has room. It answers whether it
// did, and the rule to report: the one that refused, or the one with the
// least room left.
func (w *windowCounter) take(rules []rateRule, now time.Time) (ok bool, limit, remaining int, reset time.Time) {
	if w.starts == nil {
		w.starts, w.counts = make([]time.Time, len(rules)), make([]int, len(rules))
	}
	report := -1
	for i, r := range rules {
		if now.Sub(w.starts[i]) >= r.window {
			w.starts[i], w.counts[i] = now, 0
		}
		if w.counts[i] >= r.max && report < 0 {
			report = i
		}
	}
	ok = report < 0
	if ok {
		for i, r := range rules {
			w.counts[i]++
			if report < 0 || r.max-w.counts[i] < rules[report].max-w.counts[report] {
				report = i
			}
		}
	}
	r := rules[report]
	return ok, r.max, r.max - w.counts[report], w.starts[report].Add(r.window)
}

// rateLimiter holds the per-account and per-address counters.
type rateLimiter struct {
	rules    []rateRule
	failRule []rateRule
	mu       sync.Mutex
	accounts map[uint64]*windowCounter
	failures map[string]*windowCounter // client address → failed authentications
}

// maxLimitedAddresses bounds the per-address counters. When full, entries
// whose window has passed go first, then ones that are not blocking; a
// blocked address is never forgotten early.
const maxLimitedAddresses = 10_000

func newRateLimiter(rules []rateRule) *rateLimiter {
	if rules == nil {
		return nil
	}
	return &rateLimiter{rules: rules, failRule: []rateRule{{10 * time.Minute, 60}},
		accounts: map[uint64]*windowCounter{}, failures: map[string]*windowCounter{}}
}

// allowAccount counts a request of the account and sets the
// X-RateLimit-* headers; over a limit it answers the 429 error.
func (l *rateLimiter) allowAccount(w http.ResponseWriter, userID uint64, now time.Time) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	c := l.accounts[userID]
	if c == nil {
		c = &windowCounter{}
		l.accounts[userID] = c
	}
	ok, limit, remaining, reset := c.take(l.rules, now)
	l.mu.Unlock()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	if !ok {
		return rateLimited(reset.Sub(now))
	}
	return nil
}

// addressBlocked answers the 429 error when the client address has
// failed to authenticate too often.
func (l *rateLimiter) addressBlocked(addr string, now time.Time) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.failures[addr]
	if c == nil || c.counts == nil {
		return nil
	}
	if now.Sub(c.starts[0]) < l.failRule[0].window && c.counts[0] >= l.failRule[0].max {
		return rateLimited(c.starts[0].Add(l.failRule[0].window).Sub(now))
	}
	return nil
}

// failedAuthentication counts a failed authentication from the address.
func (l *rateLimiter) failedAuthentication(addr string, now time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.failures[addr]
	if c == nil {
		l.makeRoom(now)
		c = &windowCounter{}
		l.failures[addr] = c
	}
	c.take(l.failRule, now)
}

// makeRoom keeps the per-address map under its bound; l.mu is held.
func (l *rateLimiter) makeRoom(now time.Time) {
	if len(l.failures) < maxLimitedAddresses {
		return
	}
	rule := l.failRule[0]
	for addr, c := range l.failures {
		if now.Sub(c.starts[0]) >= rule.window {
			delete(l.failures, addr)
		}
	}
	for addr, c := range l.failures {
		if len(l.failures) < maxLimitedAddresses {
			return
		}
		if c.counts[0] < rule.max {
			delete(l.failures, addr)
		}
	}
}

// parseTrustedProxies reads --trusted-proxies: addresses or CIDRs,
// comma-separated; empty trusts no proxy.
func parseTrustedProxies(text string) ([]netip.Prefix, error) {
	var list []netip.Prefix
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			addr, aerr := netip.ParseAddr(part)
			if aerr != nil {
				return nil, fmt.Errorf("trusted proxies: %q is neither an address nor a CIDR", part)
			}
			p = netip.PrefixFrom(addr, addr.BitLen())
		}
		list = append(list, p.Masked())
	}
	return list, nil
}

// clientAddress is who a request's failed authentications count
// against: its peer or, when the peer is a trusted proxy, the rightmost
// address of X-Forwarded-For that is not a trusted proxy (every proxy
// appends the address it got the request from, so only the hops right
// of the first untrusted one can be believed). The key is an IPv4
// address or the /64 of an IPv6 one (one host usually holds a whole /64,
// so counting per address would let it try without end).
func (s *server) clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.Unmap()
	if s.trusts(peer) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // what is left of a malformed hop cannot be believed
			}
			peer = hop.Unmap()
			if !s.trusts(peer) {
				break
			}
		}
	}
	if peer.Is4() {
		return peer.String()
	}
	p, _ := peer.Prefix(64)
	return p.String()
}

func (s *server) trusts(addr netip.Addr) bool {
	for _, p := range s.trustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// walkSlots lets each account walk the messages (a page of GET
// /messages, the selection of a flag update by narrow) one request at a
// time: a walk costs CPU in proportion to the history it reads, and one
// member sending many at once should use one core, not all of them. The
// account's other walks wait their turn; nobody else waits.
type walkSlots struct {
	mu    sync.Mutex
	slots map[uint64]chan struct{}
}

func newWalkSlots() *walkSlots { return &walkSlots{slots: map[uint64]chan struct{}{}} }

// take waits for the account's slot (or for the request to go away) and
// returns its release.
func (w *walkSlots) take(ctx context.Context, userID uint64) (func(), error) {
	w.mu.Lock()
	slot, ok := w.slots[userID]
	if !ok {
		slot = make(chan struct{}, 1)
		w.slots[userID] = slot
	}
	w.mu.Unlock()
	select {
	case slot <- struct{}{}:
		return func() { <-slot }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Channel creation is bounded per request (maxNewChannelsPerRequest) and
// per account per hour (channelsPerHour): one member once created 21,000
// channels in one request, and with them every channel list grew.
const (
	maxNewChannelsPerRequest = 100
	channelsPerHour          = 200
	defaultMaxChannels       = 10_000 // --max-channels
)

// listingSlots bounds the answers that list every channel (GET /streams
// and register) being built at once: each holds its whole answer in
// memory until sent, up to about 10 MiB at --max-channels' default.
const listingSlots = 4

// channelBudget counts the channels each account created in its current
// hour. --rate-limit off leaves it: with the budget off, one member
// created 6,000 channels in 600 requests.
type channelBudget struct {
	mu       sync.Mutex
	accounts map[uint64]*hourCount
}

type hourCount struct {
	start time.Time
	n     int
}

func newChannelBudget() *channelBudget { return &channelBudget{accounts: map[uint64]*hourCount{}} }

// left is how many channels the account may still create this hour, and
// when its hour ends.
func (b *channelBudget) left(userID uint64, now time.Time) (int, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.accounts[userID]
	if c == nil || now.Sub(c.start) >= time.Hour {
		return channelsPerHour, 0
	}
	return channelsPerHour - c.n, c.start.Add(time.Hour).Sub(now)
}

// spend counts n channels created by the account.
func (b *channelBudget) spend(userID uint64, n int, now time.Time) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.accounts[userID]
	if c == nil || now.Sub(c.start) >= time.Hour {
		c = &hourCount{start: now}
		b.accounts[userID] = c
	}
	c.n += n
}
