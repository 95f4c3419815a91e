package main

import (
	"crypto/subtle"
	"hash"
	"strings"
	"sync"

	"go.etcd.io/bbolt"
	"golang.org/x/crypto/blake2b"
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

// keyring is the part of the store that knows API keys: their at-rest
// hashes (BLAKE2b-256 keyed with the database's secret; keys are random,
// so a fast hash is enough, and a web session's id is hashed the same
// way) and the credential cache that spares an authenticated request a
// transaction.
type keyring struct {
	db     transactor
	secret []byte
	// dummy is compared against when an e-mail is unknown, so that an
	// unknown e-mail costs the same work as a wrong key.
	dummy   []byte
	hashers sync.Pool // keyed BLAKE2b states, reset for each key
	cache   credentialCache
}

// open keys the ring with the database's secret.
func (k *keyring) open(secret []byte, db transactor) {
	k.secret, k.db = secret, db
	k.dummy = k.hash(strings.Repeat("0", apiKeyLength))
}

// hash is the at-rest form of an API key or a session id.
func (k *keyring) hash(key string) []byte {
	var sum [blake2b.Size256]byte
	k.sum(&sum, key)
	return sum[:]
}

// sum writes key's hash into sum, with nothing allocated: every
// authenticated request hashes its key.
func (k *keyring) sum(sum *[blake2b.Size256]byte, key string) {
	h, ok := k.hashers.Get().(*keyHasher)
	if !ok {
		h = &keyHasher{}
		h.Hash, _ = blake2b.New256(k.secret)
	}
	h.Reset() // back to the keyed initial state
	h.buf = append(h.buf[:0], key...)
	h.Write(h.buf)
	h.buf = h.Sum(h.buf[:0])
	copy(sum[:], h.buf)
	k.hashers.Put(h)
}

// keyHasher is a keyed BLAKE2b state and a buffer for the key it hashes
// and the sum (a string given to Write as []byte, or a sum given to Sum,
// would escape to the heap through the interface).
type keyHasher struct {
	hash.Hash
	buf []byte
}

// forget drops an account's cached credentials after a change to it has
// committed.
func (k *keyring) forget(email string) { k.cache.forget(email) }

// authenticate returns the account whose e-mail and API key these are.
// Every key of the account is compared in constant time, and an unknown
// e-mail does the same hashing and at least one comparison.
func (k *keyring) authenticate(email, key string) (user, error) {
	var sum [blake2b.Size256]byte
	k.sum(&sum, key)
	hash := sum[:]
	lower := strings.ToLower(email)
	entry, cached, gen := k.cache.get(lower)
	if !cached {
		var err error
		if entry, err = k.load(lower); err != nil {
			return user{}, err
		}
		k.cache.put(lower, entry, gen)
	}
	match := 0
	if entry == nil || len(entry.keyHashes) == 0 {
		subtle.ConstantTimeCompare(k.dummy, hash)
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

// load reads an account and its key hashes; nil when the e-mail has no
// account.
func (k *keyring) load(email string) (*credentials, error) {
	var entry *credentials
	err := k.db.view(func(tx *bbolt.Tx) error {
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
