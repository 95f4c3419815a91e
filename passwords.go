package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
)

// Passwords are stored only as argon2id hashes, in the PHC string format
// ($argon2id$v=19$m=...,t=...,p=...$salt$hash).
//
// Parameters: 12 MiB, 3 passes, 1 lane: one of OWASP's recommended
// argon2id settings, chosen for the smallest memory, since zulite runs on
// boards with little RAM. At most passwordSlots hashes run at once, so
// logins can hold at most 2 x 12 MiB however many arrive; the rest wait.
const (
	argonMemoryKiB = 12 * 1024
	argonPasses    = 3
	argonLanes     = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
	passwordSlots  = 2
	// passwordQueue bounds the logins waiting for a slot; more are refused
	// (429) rather than piling up.
	passwordQueue = 16

	minPasswordLength = 6 // Zulip's default
)

// passwordHasher hashes and verifies passwords, a bounded number at a time.
type passwordHasher struct {
	slots   chan struct{}
	waiting atomic.Int32
	// dummy is verified against when an account has no password or does
	// not exist, so that every login attempt costs one hash, the same as
	// a wrong password's. It is a stored form with our parameters and a
	// random salt and key: the check derives a key with them as for any
	// account, and the key is never matched, so no hash needs computing
	// to make it. Made with the hasher, it is never missing.
	dummy string
	// derivations counts the argon2id keys computed, for logins and new
	// passwords alike: /metrics' zulite_password_hashes_total.
	derivations atomic.Int64
}

func newPasswordHasher() *passwordHasher {
	salt, key := make([]byte, argonSaltLen), make([]byte, argonKeyLen)
	rand.Read(salt)
	rand.Read(key)
	return &passwordHasher{slots: make(chan struct{}, passwordSlots), dummy: storedForm(salt, key)}
}

var errHasherBusy = errors.New("too many password checks waiting")

// derive computes an argon2id key once a slot is free; it gives up when
// ctx ends first, or at once when too many are already waiting.
func (h *passwordHasher) derive(ctx context.Context, password string, salt []byte, memory uint32, passes uint32, lanes uint8) ([]byte, error) {
	if h.waiting.Add(1) > passwordQueue {
		h.waiting.Add(-1)
		return nil, errHasherBusy
	}
	select {
	case h.slots <- struct{}{}:
		h.waiting.Add(-1)
	case <-ctx.Done():
		h.waiting.Add(-1)
		return nil, ctx.Err()
	}
	defer func() { <-h.slots }()
	h.derivations.Add(1)
	return argon2.IDKey([]byte(password), salt, passes, memory, lanes, argonKeyLen), nil
}

// hash makes the stored form of a new password.
func (h *passwordHasher) hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	rand.Read(salt)
	key, err := h.derive(ctx, password, salt, argonMemoryKiB, argonPasses, argonLanes)
	if err != nil {
		return "", err
	}
	return storedForm(salt, key), nil
}

// storedForm is a password's stored form, in the PHC string format.
func storedForm(salt, key []byte) string {
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonPasses, argonLanes, enc.EncodeToString(salt), enc.EncodeToString(key))
}

// verify checks a password against a stored hash in constant time. An
// empty stored hash (no password, or no account) is verified against the
// dummy, and fails.
func (h *passwordHasher) verify(ctx context.Context, stored, password string) (bool, error) {
	ok := stored != ""
	if !ok {
		stored = h.dummy
	}
	parts := strings.Split(stored, "$")
	var memory, passes uint32
	var lanes uint8
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, nil
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &memory, &passes, &lanes); err != nil || memory > 64*1024 {
		return false, nil
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil {
		return false, nil
	}
	got, err := h.derive(ctx, password, salt, memory, passes, lanes)
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, want) == 1 && ok, nil
}

// loginLimiter counts failed password logins per account: Zulip allows 5
// in 30 minutes, then refuses until the oldest failure ages out. An
// attempt is counted when it starts (reserve), so that parallel attempts
// cannot get past the limit while their hashes run; a success gives its
// place back.
type loginLimiter struct {
	mu       sync.Mutex
	accounts map[string]*loginAttempts // lower-cased e-mail
	limit    int
	window   time.Duration
}

type loginAttempts struct {
	failures []time.Time
	inFlight int
}

// maxLimitedAccounts bounds the limiter's memory: beyond it, entries with
// nothing recent and nothing in flight are dropped, and if that is not
// enough, the oldest.
const maxLimitedAccounts = 10_000

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{accounts: map[string]*loginAttempts{}, limit: 5, window: 30 * time.Minute}
}

// reserve starts an attempt, or answers how long the account must wait.
// A nil limiter (--rate-limit off) never refuses.
func (l *loginLimiter) reserve(email string, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	key := strings.ToLower(email)
	a := l.accounts[key]
	if a == nil {
		l.makeRoom(now)
		a = &loginAttempts{}
		l.accounts[key] = a
	}
	a.prune(now, l.window)
	if len(a.failures)+a.inFlight >= l.limit {
		if len(a.failures) == 0 {
			return time.Second // all places are taken by attempts still running
		}
		return a.failures[0].Add(l.window).Sub(now)
	}
	a.inFlight++
	return 0
}

// finish ends a reserved attempt; a failure stays counted.
func (l *loginLimiter) finish(email string, failed bool, now time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.accounts[strings.ToLower(email)]
	if a == nil {
		return
	}
	a.inFlight--
	if failed {
		a.failures = append(a.failures, now)
	}
}

func (a *loginAttempts) prune(now time.Time, window time.Duration) {
	for len(a.failures) > 0 && now.Sub(a.failures[0]) >= window {
		a.failures = a.failures[1:]
	}
}

// makeRoom keeps the map under its bound; l.mu is held.
func (l *loginLimiter) makeRoom(now time.Time) {
	if len(l.accounts) < maxLimitedAccounts {
		return
	}
	for k, a := range l.accounts {
		if a.prune(now, l.window); len(a.failures) == 0 && a.inFlight == 0 {
			delete(l.accounts, k)
		}
	}
	for k, a := range l.accounts { // still full: drop arbitrary settled ones
		if len(l.accounts) < maxLimitedAccounts {
			break
		}
		if a.inFlight == 0 {
			delete(l.accounts, k)
		}
	}
}
