package main

import (
	"crypto/subtle"
	"strings"
	"sync"

	"go.etcd.io/bbolt"
)

// credentialCache keeps, per e-mail, the account and its key hashes, so
// that an authenticated request needs no storage transaction. Unknown
// e-mails are cached too (as nil), so that an e-mail seen before costs
// the same whether or not it has an account. Every change to an account
// or its keys drops its entry and moves the generation on, and a lookup
// that raced with a change does not store what it read.
type credentialCache struct {
	mu      sync.RWMutex
	entries map[string]*credentials // lower-cased e-mail → account, or nil when none
	gen     uint64
}

type credentials struct {
	user      user
	keyHashes [][]byte
}

// maxCachedCredentials bounds the cache; when full it starts over.
const maxCachedCredentials = 10_000

func (c *credentialCache) get(email string) (*credentials, bool, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	entry, ok := c.entries[email]
	return entry, ok, c.gen
}

func (c *credentialCache) put(email string, entry *credentials, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return // an account changed while this was read
	}
	if c.entries == nil || len(c.entries) >= maxCachedCredentials {
		c.entries = make(map[string]*credentials)
	}
	c.entries[email] = entry
}

// forget drops an account's entry after a change to it has committed.
func (c *credentialCache) forget(email string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, strings.ToLower(email))
	c.gen++
}

// authenticate returns the account whose e-mail and API key these are.
// Every key of the account is compared in constant time, and an unknown
// e-mail does the same hashing and at least one comparison.
func (s *store) authenticate(email, key string) (user, error) {
	hash := s.keyHash(key)
	lower := strings.ToLower(email)
	entry, cached, gen := s.credCache.get(lower)
	if !cached {
		var err error
		if entry, err = s.loadCredentials(lower); err != nil {
			return user{}, err
		}
		s.credCache.put(lower, entry, gen)
	}
	match := 0
	if entry == nil || len(entry.keyHashes) == 0 {
		subtle.ConstantTimeCompare(s.dummyKeyHash, hash)
	} else {
		for _, h := range entry.keyHashes {
			match |= subtle.ConstantTimeCompare(h, hash)
		}
	}
	if entry == nil || match != 1 {
		return user{}, errBadCredentials
	}
	return entry.user, nil
}

// loadCredentials reads an account and its key hashes; nil when the
// e-mail has no account.
func (s *store) loadCredentials(email string) (*credentials, error) {
	var entry *credentials
	err := s.view(func(tx *bbolt.Tx) error {
		entry = nil
		u, err := userByEmail(tx, email)
		if err == errNoSuchUser {
			return nil
		}
		if err != nil {
			return err
		}
		entry = &credentials{user: u}
		prefix := itob(u.ID)
		c := tx.Bucket(bucketAPIKeys).Cursor()
		for k, _ := c.Seek(prefix); k != nil && len(k) > 8 && string(k[:8]) == string(prefix); k, _ = c.Next() {
			entry.keyHashes = append(entry.keyHashes, append([]byte(nil), k[8:]...))
		}
		return nil
	})
	return entry, err
}
