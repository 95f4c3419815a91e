package main

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
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

	minPasswordLength = 6 // Zulip's default
)

// passwordHasher hashes and verifies passwords, a bounded number at a time.
type passwordHasher struct {
	slots chan struct{}
	// dummy is verified against when an account has no password or does
	// not exist, so that every login attempt costs one hash. It is made on
	// first use, keeping start-up fast.
	dummy     string
	dummyOnce sync.Once
}

func newPasswordHasher() *passwordHasher {
	return &passwordHasher{slots: make(chan struct{}, passwordSlots)}
}

func (h *passwordHasher) derive(password string, salt []byte, memory uint32, passes uint32, lanes uint8) []byte {
	h.slots <- struct{}{}
	defer func() { <-h.slots }()
	return argon2.IDKey([]byte(password), salt, passes, memory, lanes, argonKeyLen)
}

// hash makes the stored form of a new password.
func (h *passwordHasher) hash(password string) string {
	salt := make([]byte, argonSaltLen)
	rand.Read(salt)
	key := h.derive(password, salt, argonMemoryKiB, argonPasses, argonLanes)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonPasses, argonLanes, enc.EncodeToString(salt), enc.EncodeToString(key))
}

// verify checks a password against a stored hash in constant time. An
// empty stored hash (no password, or no account) is verified against the
// dummy, and fails.
func (h *passwordHasher) verify(stored, password string) bool {
	ok := stored != ""
	if !ok {
		h.dummyOnce.Do(func() { h.dummy = h.hash("not a password of anyone") })
		stored = h.dummy
	}
	parts := strings.Split(stored, "$")
	var memory, passes uint32
	var lanes uint8
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &memory, &passes, &lanes); err != nil || memory > 64*1024 {
		return false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil {
		return false
	}
	got := h.derive(password, salt, memory, passes, lanes)
	return subtle.ConstantTimeCompare(got, want) == 1 && ok
}

// loginLimiter counts failed password logins per account: Zulip allows 5
// in 30 minutes, then refuses until the oldest failure ages out.
type loginLimiter struct {
	mu       sync.Mutex
	failures map[string][]time.Time // lower-cased e-mail → recent failures
	limit    int
	window   time.Duration
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{failures: map[string][]time.Time{}, limit: 5, window: 30 * time.Minute}
}

// retryAfter reports how long the account must wait, or 0.
func (l *loginLimiter) retryAfter(email string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	recent := l.recent(strings.ToLower(email), now)
	if len(recent) < l.limit {
		return 0
	}
	return recent[0].Add(l.window).Sub(now)
}

func (l *loginLimiter) fail(email string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := strings.ToLower(email)
	l.failures[key] = append(l.recent(key, now), now)
	if len(l.failures) > 10_000 { // bound the memory guessing can cost
		for k := range l.failures {
			if len(l.recent(k, now)) == 0 {
				delete(l.failures, k)
			}
		}
	}
}

// recent drops the failures older than the window; l.mu is held.
func (l *loginLimiter) recent(key string, now time.Time) []time.Time {
	list := l.failures[key]
	for len(list) > 0 && now.Sub(list[0]) >= l.window {
		list = list[1:]
	}
	if len(list) == 0 {
		delete(l.failures, key)
		return nil
	}
	l.failures[key] = list
	return list
}
