package main

// The store keeps everything in one bbolt file. Bucket layout, schema
// version 1 (ids are big-endian uint64, so keys sort by id; "‖" joins):
//
//	meta             "schema_version" → uint64
//	                 "key_secret"     → 32 random bytes, the BLAKE2b key for API keys
//	users            user id → user (JSON)
//	user_emails      lower-cased e-mail → user id
//	api_keys         user id ‖ BLAKE2b-256(secret, key) → created, unix seconds (uint64)
//	push_tokens      user id ‖ kind ('a' APNs, 'g' FCM) ‖ token key → pushToken (JSON);
//	                 the token key is the token lower-cased for APNs, verbatim for FCM
//	channels         channel id → channel (JSON)
//	channel_names    lower-cased channel name → channel id
//	subscriptions    user id ‖ channel id → subscription (JSON)
//	subscribers      channel id ‖ user id → empty
//	messages         message id → message (JSON)
//	channel_messages channel id ‖ message id → empty
//	topic_messages   channel id ‖ lower-cased topic ‖ 0x00 ‖ message id → empty
//	                 (topics hold no control characters, so 0x00 ends the topic)
//	flags            user id ‖ message id → one byte of personal flags (starred, collapsed)
//	passwords        user id → argon2id hash, PHC string (passwords.go)
//	unread_trash     sequence → holder bucket of unread sets marked read, which the
//	                 janitor deletes off the request path (janitor.go)
//	unread           user id ‖ channel id → bucket of unread chunks:
//	                   first message id → count (uint32) ‖ last id (uint64) ‖ uvarint deltas
//	                   (at most 1000 ids a chunk; unread.go says why)
//
// Users, channels and messages take their ids from their own bucket's
// NextSequence. The read flag is not stored apart: a message is read
// unless it is in the unread bucket. Every store method is one
// transaction. Writes go through one committer so that concurrent
// requests share a commit: every function
// given to update may run more than once, and makes all its checks before
// its first write, so that a rejection (a sentinel below) can be handed
// back without failing the group it shares (commit.go).

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"golang.org/x/crypto/blake2b"
)

// schemaVersion 2 added topic_messages and flags (passwords needs no
// migration: a new bucket is made on open).
const schemaVersion = 2

var (
	bucketMeta            = []byte("meta")
	bucketUsers           = []byte("users")
	bucketUserEmails      = []byte("user_emails")
	bucketAPIKeys         = []byte("api_keys")
	bucketPushTokens      = []byte("push_tokens")
	bucketChannels        = []byte("channels")
	bucketChannelNames    = []byte("channel_names")
	bucketSubscriptions   = []byte("subscriptions")
	bucketSubscribers     = []byte("subscribers")
	bucketMessages        = []byte("messages")
	bucketChannelMessages = []byte("channel_messages")
	bucketUnread          = []byte("unread")
	bucketTopicMessages   = []byte("topic_messages")
	bucketFlags           = []byte("flags")
	bucketPasswords       = []byte("passwords")
	bucketUnreadTrash     = []byte("unread_trash")

	allBuckets = [][]byte{
		bucketMeta, bucketUsers, bucketUserEmails, bucketAPIKeys, bucketPushTokens,
		bucketChannels, bucketChannelNames, bucketSubscriptions, bucketSubscribers,
		bucketMessages, bucketChannelMessages, bucketUnread, bucketTopicMessages, bucketFlags,
		bucketPasswords, bucketUnreadTrash,
	}

	keySchemaVersion = []byte("schema_version")
	keyKeySecret     = []byte("key_secret")
)

// storeHooks are how the store tells of committed changes.
type storeHooks struct {
	// changes hears every committed change clients are told about (see
	// changes.go), in commit order, in the committer goroutine.
	changes func(change any)
	// listening tells whether a user has event queues, and the number of
	// the latest one registered, so that work only listeners need is
	// skipped when nobody listens.
	listening func(userID uint64) (bool, uint64)
	// commits hears the size and time of every commit group.
	commits func(writes int, elapsed time.Duration)
}

// Store sentinels: rejections, which handlers.go words for the client.
var (
	errDatabaseLocked    = errors.New("database is in use by another process")
	errEmailTaken        = errors.New("e-mail already in use")
	errNoSuchUser        = errors.New("no such user")
	errBadCredentials    = errors.New("invalid API key")
	errTokenNotFound     = errors.New("token does not exist")
	errChannelExists     = errors.New("channel already exists")
	errNoSuchChannel     = errors.New("no such channel")
	errChannelForbidden  = errors.New("channel not accessible")
	errNoSuchTopic       = errors.New("no such topic")
	errInvalidMessageIDs = errors.New("invalid message(s)")
)

// namedError carries the name of the channel (or id) an error is about,
// for messages such as "Channel 'x' does not exist".
type namedError struct {
	err  error
	name string
}

func (e *namedError) Error() string { return e.err.Error() + ": " + e.name }
func (e *namedError) Unwrap() error { return e.err }

// Zulip's role numbers.
const (
	roleOwner  = 100
	roleAdmin  = 200
	roleMember = 400
	roleGuest  = 600
)

type user struct {
	ID       uint64 `json:"id"`
	Email    string `json:"email"`
	FullName string `json:"full_name"`
	Role     int    `json:"role"`
	Bot      bool   `json:"bot,omitempty"`
	Active   bool   `json:"active"`
	Joined   int64  `json:"joined"`
}

func (u user) isAdmin() bool { return u.Role == roleOwner || u.Role == roleAdmin }

// pushKind tells Apple (APNs) tokens from Android (FCM) ones.
type pushKind byte

const (
	pushAPNs pushKind = 'a'
	pushFCM  pushKind = 'g'
)

type pushToken struct {
	Kind    pushKind `json:"kind"`
	Token   string   `json:"token"` // verbatim, as the device sent it
	AppID   string   `json:"appid,omitempty"`
	Created int64    `json:"created"`
}

type channel struct {
	ID          uint64 `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Private     bool   `json:"private,omitempty"`
	Created     int64  `json:"created"`
	CreatorID   uint64 `json:"creator_id,omitempty"`
}

type subscription struct {
	Color  string `json:"color"`
	Joined int64  `json:"joined"`
}

type message struct {
	ID        uint64 `json:"id"`
	SenderID  uint64 `json:"sender_id"`
	ChannelID uint64 `json:"channel_id"`
	Topic     string `json:"topic"`
	Content   string `json:"content"`
	Timestamp int64  `json:"timestamp"`
	Client    string `json:"client,omitempty"`
}

type store struct {
	db        *bbolt.DB
	keySecret []byte
	// dummyKeyHash is compared against when an e-mail is unknown, so that
	// an unknown e-mail costs the same work as a wrong key.
	dummyKeyHash []byte
	now          func() time.Time

	commits     chan commitRequest // to the committer (commit.go)
	trashed     chan struct{}      // wakes the janitor (janitor.go)
	janitorOff  atomic.Bool        // tests that count pages written hold the janitor
	swept       chan struct{}      // closed when the janitor has stopped
	stop        chan struct{}      // closed by close
	finished    chan struct{}      // closed when the committer has stopped
	closeOnce   sync.Once
	commitStats commitStats

	credCache credentialCache // authcache.go
	decoded   channelMemo     // channels as decoded, by their stored bytes

	// hooks connect the store to whoever tells clients about changes
	// (the server's event hub); set once, read by the committer.
	hooks   atomic.Pointer[storeHooks]
	hashers sync.Pool     // keyed BLAKE2b states, reset for each key
	maxID   atomic.Uint64 // the largest message id
}

// openStore opens (creating if needed) the database at path, waiting at
// most lockTimeout for another process to release it.
func openStore(path string, lockTimeout time.Duration) (*store, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: lockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w", path, errDatabaseLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &store{db: db, now: time.Now, commits: make(chan commitRequest, maxCommitGroup), stop: make(chan struct{}), finished: make(chan struct{}),
		trashed: make(chan struct{}, 1), swept: make(chan struct{})}
	if err := os.Chmod(path, 0o600); err != nil { // bbolt sets the mode only on files it creates
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := db.Update(s.migrate); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	go s.committer()
	go s.janitor()
	return s, nil
}

// migrate creates every bucket and the key secret, and refuses a file
// written by a newer zulite.
func (s *store) migrate(tx *bbolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	if v := meta.Get(keySchemaVersion); v != nil && btoi(v) > schemaVersion {
		return fmt.Errorf("schema version %d is newer than this zulite understands (%d)", btoi(v), schemaVersion)
	} else if v != nil && btoi(v) < 2 {
		if err := indexTopics(tx); err != nil {
			return fmt.Errorf("migrate to schema 2: %w", err)
		}
	}
	if err := meta.Put(keySchemaVersion, itob(schemaVersion)); err != nil {
		return err
	}
	secret := meta.Get(keyKeySecret)
	if secret == nil {
		secret = make([]byte, 32)
		rand.Read(secret)
		if err := meta.Put(keyKeySecret, secret); err != nil {
			return err
		}
	}
	s.keySecret = slices.Clone(secret)
	s.maxID.Store(tx.Bucket(bucketMessages).Sequence())
	s.dummyKeyHash = s.keyHash(strings.Repeat("0", apiKeyLength))
	return nil
}

// close stops the committer (writes still waiting get errStoreClosed)
// and closes the file.
func (s *store) close() error {
	s.quiesce()
	return s.db.Close()
}

// quiesce stops the store's own writers, the committer and the janitor;
// writes after it fail with errStoreClosed. (Tests check the file then:
// bbolt's check is only exact while nothing writes.)
func (s *store) quiesce() {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.swept
	<-s.finished
}

// update runs fn in a write transaction shared with concurrent callers.
// A rejection from fn is passed back to its caller alone: fn has written
// nothing yet, so the others' changes still commit, and a stream of bad
// requests cannot make every writer's work run twice.
func (s *store) update(fn func(tx *bbolt.Tx) error) error {
	return s.updateReporting(func(tx *bbolt.Tx, _ func(change any)) error { return fn(tx) })
}

// updateReporting is update for changes that clients hear about: fn
// reports them with report, and once the transaction is committed they
// go to s.changes in commit order (so events reach queues in the order
// the changes happened). A run that is repeated reports afresh.
func (s *store) updateReporting(fn func(tx *bbolt.Tx, report func(change any)) error) error {
	var rejection error
	var changes []any
	report := func(change any) { changes = append(changes, change) }
	err := s.commit(func(tx *bbolt.Tx) error {
		rejection, changes = nil, changes[:0]
		err := fn(tx, report)
		if isRejection(err) {
			rejection, err, changes = err, nil, changes[:0]
		}
		return err
	}, func() {
		if h := s.hooks.Load(); h != nil {
			for _, c := range changes {
				h.changes(c)
			}
		}
	})
	if err != nil {
		return err
	}
	return rejection
}

func isRejection(err error) bool {
	for _, sentinel := range []error{errEmailTaken, errNoSuchUser, errTokenNotFound, errChannelExists, errNoSuchChannel, errChannelForbidden, errNoSuchTopic, errInvalidMessageIDs} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}

// keyHash is the at-rest form of an API key: BLAKE2b-256 keyed with the
// database's secret. Keys are random, so a fast hash is enough.
func (s *store) keyHash(key string) []byte {
	h, ok := s.hashers.Get().(hash.Hash)
	if !ok {
		h, _ = blake2b.New256(s.keySecret)
	}
	h.Reset() // back to the keyed initial state
	h.Write([]byte(key))
	sum := h.Sum(nil)
	s.hashers.Put(h)
	return sum
}

// ---- users and keys ----

// createUser adds an account and returns it with its first API key.
func (s *store) createUser(email, fullName string, role int, bot bool) (user, string, error) {
	return s.createAccount(email, fullName, role, bot, "")
}

// createAccount adds an account, with a password hash unless it is empty,
// and returns it with its first API key.
func (s *store) createAccount(email, fullName string, role int, bot bool, passwordHash string) (user, string, error) {
	key := newAPIKey()
	var u user
	err := s.update(func(tx *bbolt.Tx) error {
		emails := tx.Bucket(bucketUserEmails)
		if emails.Get(emailKey(email)) != nil {
			return errEmailTaken
		}
		users := tx.Bucket(bucketUsers)
		id, err := users.NextSequence()
		if err != nil {
			return err
		}
		u = user{ID: id, Email: email, FullName: fullName, Role: role, Bot: bot, Active: true, Joined: s.now().Unix()}
		if err := putJSON(users, itob(id), u); err != nil {
			return err
		}
		if err := emails.Put(emailKey(email), itob(id)); err != nil {
			return err
		}
		if passwordHash != "" {
			if err := tx.Bucket(bucketPasswords).Put(itob(id), []byte(passwordHash)); err != nil {
				return err
			}
		}
		return s.putKey(tx, id, key)
	})
	s.credCache.forget(email)
	return u, key, err
}

// setPassword replaces the account's password hash.
func (s *store) setPassword(email, passwordHash string) error {
	return s.update(func(tx *bbolt.Tx) error {
		u, err := userByEmail(tx, email)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketPasswords).Put(itob(u.ID), []byte(passwordHash))
	})
}

// credentials returns the account and its password hash ("" when it has
// none) for a password login.
func (s *store) credentials(email string) (user, string, error) {
	var u user
	var hash string
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		if u, err = userByEmail(tx, email); err != nil {
			return err
		}
		hash = string(tx.Bucket(bucketPasswords).Get(itob(u.ID)))
		return nil
	})
	return u, hash, err
}

// maxKeysPerAccount bounds an account's keys (each password login mints
// one); minting one more revokes the oldest, so that authentication,
// which compares every key, stays cheap.
const maxKeysPerAccount = 20

// mintKey adds a new API key to the account; its other keys keep working,
// but for the oldest once it has maxKeysPerAccount.
func (s *store) mintKey(u user) (string, error) {
	key := newAPIKey()
	err := s.update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketUsers).Get(itob(u.ID)) == nil {
			return errNoSuchUser
		}
		type held struct {
			key     []byte
			created uint64
		}
		var keys []held
		prefix := itob(u.ID)
		c := tx.Bucket(bucketAPIKeys).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			keys = append(keys, held{slices.Clone(k), btoi(v)})
		}
		slices.SortStableFunc(keys, func(a, b held) int { return cmp.Compare(a.created, b.created) })
		for len(keys) >= maxKeysPerAccount {
			if err := tx.Bucket(bucketAPIKeys).Delete(keys[0].key); err != nil {
				return err
			}
			keys = keys[1:]
		}
		return s.putKey(tx, u.ID, key)
	})
	s.credCache.forget(u.Email)
	return key, err
}

func (s *store) putKey(tx *bbolt.Tx, userID uint64, key string) error {
	return tx.Bucket(bucketAPIKeys).Put(append(itob(userID), s.keyHash(key)...), itob(uint64(s.now().Unix())))
}

// userByEmail finds an account by e-mail, case-insensitively.
func (s *store) userByEmail(email string) (user, error) {
	var u user
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		u, err = userByEmail(tx, email)
		return err
	})
	return u, err
}

func userByEmail(tx *bbolt.Tx, email string) (user, error) {
	var u user
	id := tx.Bucket(bucketUserEmails).Get(emailKey(email))
	if id == nil {
		return u, errNoSuchUser
	}
	return u, getJSON(tx.Bucket(bucketUsers), id, &u)
}

func (s *store) users() ([]user, error) {
	var list []user
	err := s.db.View(func(tx *bbolt.Tx) error {
		list = nil
		return tx.Bucket(bucketUsers).ForEach(func(_, v []byte) error {
			var u user
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
			list = append(list, u)
			return nil
		})
	})
	return list, err
}

// regenerateKey revokes every key of the account, makes one new key and,
// as Zulip does when a key is regenerated, removes its push tokens.
func (s *store) regenerateKey(email string) (string, error) {
	key := newAPIKey()
	err := s.update(func(tx *bbolt.Tx) error {
		u, err := userByEmail(tx, email)
		if err != nil {
			return err
		}
		prefix := itob(u.ID)
		for _, b := range [][]byte{bucketAPIKeys, bucketPushTokens} {
			if err := deletePrefix(tx.Bucket(b), prefix); err != nil {
				return err
			}
		}
		return s.putKey(tx, u.ID, key)
	})
	s.credCache.forget(email)
	return key, err
}

func (s *store) setActive(email string, active bool) error {
	err := s.update(func(tx *bbolt.Tx) error {
		u, err := userByEmail(tx, email)
		if err != nil {
			return err
		}
		u.Active = active
		return putJSON(tx.Bucket(bucketUsers), itob(u.ID), u)
	})
	s.credCache.forget(email)
	return err
}

// hasUsers reports whether any account exists, without counting them
// (start-up asks, and must stay fast however many there are).
func (s *store) hasUsers() (bool, error) {
	found := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket(bucketUsers).Cursor().First()
		found = k != nil
		return nil
	})
	return found, err
}

func (s *store) userCount() (int, error) {
	n := 0
	err := s.db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketUsers).Stats().KeyN
		return nil
	})
	return n, err
}

// ---- push tokens ----

func pushTokenKey(userID uint64, kind pushKind, token string) []byte {
	if kind == pushAPNs {
		token = strings.ToLower(token) // Apple tokens are matched case-insensitively
	}
	return append(append(itob(userID), byte(kind)), token...)
}

// addPushToken registers a token for the user; registering it again
// changes nothing.
func (s *store) addPushToken(userID uint64, t pushToken) error {
	return s.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPushTokens)
		k := pushTokenKey(userID, t.Kind, t.Token)
		if b.Get(k) != nil {
			return nil
		}
		t.Created = s.now().Unix()
		return putJSON(b, k, t)
	})
}

// removePushToken removes the user's token; another user's token of the
// same text is not the caller's, so it "does not exist".
func (s *store) removePushToken(userID uint64, kind pushKind, token string) error {
	return s.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPushTokens)
		k := pushTokenKey(userID, kind, token)
		if b.Get(k) == nil {
			return errTokenNotFound
		}
		return b.Delete(k)
	})
}

func (s *store) pushTokens(userID uint64) ([]pushToken, error) {
	var list []pushToken
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := itob(userID)
		c := tx.Bucket(bucketPushTokens).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var t pushToken
			if err := json.Unmarshal(v, &t); err != nil {
				return err
			}
			list = append(list, t)
		}
		return nil
	})
	return list, err
}

// ---- channels and subscriptions ----

// channelSpec names a channel to subscribe to, and describes it should
// it need creating.
type channelSpec struct {
	Name        string
	Description string
}

func (s *store) createChannel(name, description string, private bool, creatorID uint64) (channel, error) {
	var ch channel
	err := s.update(func(tx *bbolt.Tx) error {
		var err error
		ch, err = s.createChannelTx(tx, name, description, private, creatorID)
		return err
	})
	return ch, err
}

func (s *store) createChannelTx(tx *bbolt.Tx, name, description string, private bool, creatorID uint64) (channel, error) {
	names := tx.Bucket(bucketChannelNames)
	if names.Get(nameKey(name)) != nil {
		return channel{}, &namedError{errChannelExists, name}
	}
	channels := tx.Bucket(bucketChannels)
	id, err := channels.NextSequence()
	if err != nil {
		return channel{}, err
	}
	ch := channel{ID: id, Name: name, Description: description, Private: private, Created: s.now().Unix(), CreatorID: creatorID}
	if err := putJSON(channels, itob(id), ch); err != nil {
		return channel{}, err
	}
	return ch, names.Put(nameKey(name), itob(id))
}

func (s *store) channels() ([]channel, error) {
	var list []channel
	err := s.db.View(func(tx *bbolt.Tx) error {
		list = nil
		return tx.Bucket(bucketChannels).ForEach(func(_, v []byte) error {
			var ch channel
			if err := json.Unmarshal(v, &ch); err != nil {
				return err
			}
			list = append(list, ch)
			return nil
		})
	})
	return list, err
}

func (s *store) channelByID(tx *bbolt.Tx, id uint64) (channel, error) {
	v := tx.Bucket(bucketChannels).Get(itob(id))
	if v == nil {
		return channel{}, errNoSuchChannel
	}
	if ch, ok := s.decoded.get(id, v); ok {
		return ch, nil
	}
	var ch channel
	if err := json.Unmarshal(v, &ch); err != nil {
		return channel{}, err
	}
	s.decoded.put(id, v, ch)
	return ch, nil
}

// channelMemo remembers channels as decoded, each with the bytes it was
// decoded from. Most requests look a channel up, some twice (a check in a
// read transaction, then again in the write, which the committer runs
// serially with every other write), and decoding JSON is most of a
// lookup's cost. A decoded channel is a function of its bytes alone: a
// lookup answers from here only when the stored bytes are the same, so
// nothing needs invalidating when a channel changes. It holds at most
// channelMemoBytes of stored channels (about as much again in their
// decoded strings), and starts afresh when full, so that channels in use
// come back and any number of channels costs a bounded amount of memory.
type channelMemo struct {
	mu    sync.RWMutex
	m     map[uint64]memoChannel
	bytes int // of the stored forms held
}

const channelMemoBytes = 1 << 20

type memoChannel struct {
	stored []byte // a copy: bbolt's bytes live only as long as their transaction
	ch     channel
}

func (c *channelMemo) get(id uint64, stored []byte) (channel, bool) {
	c.mu.RLock()
	e, ok := c.m[id]
	c.mu.RUnlock()
	if !ok || !bytes.Equal(e.stored, stored) {
		return channel{}, false
	}
	return e.ch, true
}

func (c *channelMemo) put(id uint64, stored []byte, ch channel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[id]; ok {
		c.bytes -= len(old.stored)
		delete(c.m, id)
	}
	if c.m == nil || c.bytes+len(stored) > channelMemoBytes {
		c.m, c.bytes = map[uint64]memoChannel{}, 0
	}
	c.m[id] = memoChannel{bytes.Clone(stored), ch}
	c.bytes += len(stored)
}

func (s *store) channelByName(tx *bbolt.Tx, name string) (channel, error) {
	id := tx.Bucket(bucketChannelNames).Get(nameKey(name))
	if id == nil {
		return channel{}, &namedError{errNoSuchChannel, name}
	}
	return s.channelByID(tx, btoi(id))
}

func isSubscribed(tx *bbolt.Tx, userID, channelID uint64) bool {
	return tx.Bucket(bucketSubscriptions).Get(append(itob(userID), itob(channelID)...)) != nil
}

// canAccess is Zulip's rule: a public channel is open to every member
// but guests, a private one (and, for guests, any one) to its subscribers.
func canAccess(tx *bbolt.Tx, u user, ch channel) bool {
	if ch.Private || u.Role == roleGuest {
		return isSubscribed(tx, u.ID, ch.ID)
	}
	return true
}

// accessibleChannel returns the channel if it exists and the user may
// access it; otherwise errNoSuchChannel, so that a private channel's
// existence does not leak.
func (s *store) accessibleChannel(u user, name string) (channel, error) {
	var ch channel
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		ch, err = s.channelByName(tx, name)
		if err == nil && !canAccess(tx, u, ch) {
			err = &namedError{errNoSuchChannel, name}
		}
		return err
	})
	return ch, err
}

// subscribe subscribes the user to each named channel, creating missing
// ones (private when inviteOnly). It answers the names newly subscribed
// and those already subscribed.
func (s *store) subscribe(u user, specs []channelSpec, inviteOnly bool) (subscribed, already []string, joined []channel, err error) {
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		subscribed, already, joined = nil, nil, nil
		var join []channel
		var create []channelSpec
		for _, spec := range specs { // every check before the first write
			ch, err := s.channelByName(tx, spec.Name)
			switch {
			case errors.Is(err, errNoSuchChannel):
				create = append(create, spec)
			case err != nil:
				return err
			case isSubscribed(tx, u.ID, ch.ID):
				already = append(already, ch.Name)
			case !canAccess(tx, u, ch):
				return &namedError{errChannelForbidden, spec.Name}
			default:
				join = append(join, ch)
			}
		}
		for _, spec := range create {
			ch, err := s.createChannelTx(tx, spec.Name, spec.Description, inviteOnly, u.ID)
			if err != nil {
				return err
			}
			join = append(join, ch)
		}
		for _, ch := range join {
			if err := s.addSubscription(tx, u.ID, ch.ID); err != nil {
				return err
			}
			subscribed = append(subscribed, ch.Name)
		}
		joined = join
		if len(join) > 0 {
			report(subscriptionsChanged{User: u, Op: "add", Channels: join})
		}
		return nil
	})
	return subscribed, already, joined, err
}

func (s *store) addSubscription(tx *bbolt.Tx, userID, channelID uint64) error {
	sub := subscription{Color: channelColor(channelID), Joined: s.now().Unix()}
	if err := putJSON(tx.Bucket(bucketSubscriptions), append(itob(userID), itob(channelID)...), sub); err != nil {
		return err
	}
	return tx.Bucket(bucketSubscribers).Put(append(itob(channelID), itob(userID)...), nil)
}

// unsubscribe removes the user from each named channel; names of
// channels they were not subscribed to come back in notRemoved. As in
// Zulip, a user has no unread messages in channels they are not
// subscribed to, so the channel's unread state goes too.
func (s *store) unsubscribe(u user, names []string) (removed, notRemoved []string, left []channel, read []uint64, err error) {
	trashed := false
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		removed, notRemoved, left, read, trashed = nil, nil, nil, nil, false
		var channels []channel
		var missing []string
		for _, name := range names {
			ch, err := s.channelByName(tx, name)
			if errors.Is(err, errNoSuchChannel) {
				missing = append(missing, name)
				continue
			}
			if err != nil {
				return err
			}
			channels = append(channels, ch)
		}
		if len(missing) > 0 {
			return &namedError{errNoSuchChannel, strings.Join(missing, ", ")}
		}
		for _, ch := range channels {
			if !isSubscribed(tx, u.ID, ch.ID) {
				notRemoved = append(notRemoved, ch.Name)
				continue
			}
			if err := tx.Bucket(bucketSubscriptions).Delete(append(itob(u.ID), itob(ch.ID)...)); err != nil {
				return err
			}
			if err := tx.Bucket(bucketSubscribers).Delete(append(itob(ch.ID), itob(u.ID)...)); err != nil {
				return err
			}
			ids, err := unreadIDs(tx, u.ID, ch.ID)
			if err != nil {
				return err
			}
			moved, err := removeAllUnread(tx, u.ID, ch.ID)
			if err != nil {
				return err
			}
			trashed = trashed || moved
			read = append(read, ids...)
			removed = append(removed, ch.Name)
			left = append(left, ch)
		}
		if len(left) > 0 {
			report(subscriptionsChanged{User: u, Op: "remove", Channels: left})
		}
		slices.Sort(read)
		return reportFlags(tx, report, u, flagChange{Flag: "read", Add: true}, read)
	})
	if trashed { // large sets were moved aside: the janitor deletes them
		s.wakeJanitor()
	}
	return removed, notRemoved, left, read, err
}

// subscribedChannel is a channel as one subscriber sees it.
type subscribedChannel struct {
	channel
	subscription
	Subscribers []uint64
}

// subscriptions lists the user's channels with the subscriber ids.
func (s *store) subscriptions(userID uint64) ([]subscribedChannel, error) {
	var list []subscribedChannel
	err := s.db.View(func(tx *bbolt.Tx) error {
		list = nil
		prefix := itob(userID)
		c := tx.Bucket(bucketSubscriptions).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var sc subscribedChannel
			if err := json.Unmarshal(v, &sc.subscription); err != nil {
				return err
			}
			ch, err := s.channelByID(tx, btoi(k[8:]))
			if err != nil {
				return err
			}
			sc.channel = ch
			sc.Subscribers = subscriberIDs(tx, ch.ID)
			list = append(list, sc)
		}
		return nil
	})
	slices.SortFunc(list, func(a, b subscribedChannel) int { return strings.Compare(a.Name, b.Name) })
	return list, err
}

func subscriberIDs(tx *bbolt.Tx, channelID uint64) []uint64 {
	var ids []uint64
	prefix := itob(channelID)
	c := tx.Bucket(bucketSubscribers).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, btoi(k[8:]))
	}
	return ids
}

// channelFilter says which channels GET /streams lists.
type channelFilter struct {
	Public, Subscribed, AllActive bool
}

// visibleChannels lists, sorted by name, the channels the filter asks
// for among those the user may see: public ones (not for guests) and the
// ones they are subscribed to; AllActive (admins) lists every channel.
func (s *store) visibleChannels(u user, f channelFilter) ([]channel, error) {
	var list []channel
	err := s.db.View(func(tx *bbolt.Tx) error {
		list = nil
		return tx.Bucket(bucketChannels).ForEach(func(_, v []byte) error {
			var ch channel
			if err := json.Unmarshal(v, &ch); err != nil {
				return err
			}
			public := !ch.Private && u.Role != roleGuest
			if f.AllActive || (f.Public && public) || (f.Subscribed && isSubscribed(tx, u.ID, ch.ID)) {
				list = append(list, ch)
			}
			return nil
		})
	})
	slices.SortFunc(list, func(a, b channel) int { return strings.Compare(a.Name, b.Name) })
	return list, err
}

// ---- messages and unread state ----

// channelRef names a channel by id or by name, as the `to` of a send does.
type channelRef struct {
	ID     uint64
	Name   string
	IDText string // an id as the client wrote it, when it names no channel
}

// sendMessage stores a channel message and makes it unread for every
// subscriber but the sender.
// sentMessage is a stored message with its channel and who receives it:
// the channel's subscribers at the time of sending.
type sentMessage struct {
	message
	Channel    channel
	Recipients []uint64
}

func (s *store) sendMessage(sender user, to channelRef, topic, content, client string) (sentMessage, error) {
	var sent sentMessage
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		var ch channel
		var err error
		if to.Name != "" {
			ch, err = s.channelByName(tx, to.Name)
		} else {
			ch, err = s.channelByID(tx, to.ID)
		}
		if err != nil {
			return err
		}
		if ch.Private && !isSubscribed(tx, sender.ID, ch.ID) {
			return &namedError{errChannelForbidden, ch.Name}
		}
		messages := tx.Bucket(bucketMessages)
		id, err := messages.NextSequence()
		if err != nil {
			return err
		}
		m := message{ID: id, SenderID: sender.ID, ChannelID: ch.ID, Topic: topic, Content: content, Timestamp: s.now().Unix(), Client: client}
		sent = sentMessage{message: m, Channel: ch, Recipients: subscriberIDs(tx, ch.ID)}
		if err := putJSON(messages, itob(id), m); err != nil {
			return err
		}
		if err := indexMessage(tx, m); err != nil {
			return err
		}
		for _, subscriberID := range sent.Recipients {
			if subscriberID == sender.ID {
				continue
			}
			if err := addUnread(tx, subscriberID, ch.ID, []uint64{id}); err != nil {
				return err
			}
		}
		report(messageSent{sent, sender})
		return nil
	})
	if err == nil {
		for old := s.maxID.Load(); old < sent.ID && !s.maxID.CompareAndSwap(old, sent.ID); old = s.maxID.Load() {
		}
	}
	return sent, err
}

// markChannelRead makes every unread message of the channel read for the
// user, after checking that the channel exists and is accessible. The ids
// that were unread are collected for events only when the user has a
// queue listening: collecting costs decoding them, and without it the
// cost does not depend on how many there were.
//
// When nothing is unread there is nothing to write: the checks run in a
// read transaction and no commit is made.
func (s *store) markChannelRead(u user, channelID uint64) error {
	nothing := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		ch, err := s.channelByID(tx, channelID)
		if err != nil {
			return err
		}
		if !canAccess(tx, u, ch) {
			return errNoSuchChannel
		}
		nothing = tx.Bucket(bucketUnread).Bucket(unreadKey(u.ID, ch.ID)) == nil
		return nil
	})
	if err != nil || nothing {
		return err
	}
	trashed := false
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		trashed = false // a run may repeat
		ch, err := s.channelByID(tx, channelID)
		if err != nil {
			return err
		}
		if !canAccess(tx, u, ch) {
			return errNoSuchChannel
		}
		change := flagsChanged{User: u, Change: flagChange{Flag: "read", Add: true}}
		listening, seq := s.listens(u.ID)
		if listening {
			if change.IDs, err = unreadIDs(tx, u.ID, ch.ID); err != nil {
				return err
			}
		} else {
			change.Uncollected, change.ListenSeq = true, seq
		}
		if trashed, err = removeAllUnread(tx, u.ID, ch.ID); err != nil {
			return err
		}
		report(change)
		return nil
	})
	if trashed { // a large set was moved aside: the janitor deletes it
		s.wakeJanitor()
	}
	return err
}

func (s *store) listens(userID uint64) (bool, uint64) {
	if h := s.hooks.Load(); h != nil {
		return h.listening(userID)
	}
	return false, 0
}

// indexMessage records a message in its channel's and its topic's index.
func indexMessage(tx *bbolt.Tx, m message) error {
	if err := tx.Bucket(bucketChannelMessages).Put(append(itob(m.ChannelID), itob(m.ID)...), nil); err != nil {
		return err
	}
	return tx.Bucket(bucketTopicMessages).Put(topicKey(m.ChannelID, m.Topic, m.ID), nil)
}

func topicPrefix(channelID uint64, topic string) []byte {
	return append(append(itob(channelID), strings.ToLower(topic)...), 0)
}

func topicKey(channelID uint64, topic string, messageID uint64) []byte {
	return append(topicPrefix(channelID, topic), itob(messageID)...)
}

// indexTopics builds topic_messages for a database of schema 1.
func indexTopics(tx *bbolt.Tx) error {
	return tx.Bucket(bucketMessages).ForEach(func(_, v []byte) error {
		var m message
		if err := json.Unmarshal(v, &m); err != nil {
			return err
		}
		return tx.Bucket(bucketTopicMessages).Put(topicKey(m.ChannelID, m.Topic, m.ID), nil)
	})
}

// Personal flags other than read, one bit each in the flags bucket.
const (
	flagStarred   byte = 1 << 0
	flagCollapsed byte = 1 << 1
)

// flagChange is one POST /messages/flags: add or remove one flag.
type flagChange struct {
	Flag string // "read", "starred" or "collapsed"
	Add  bool
}

// updateFlags applies the change to the messages, after checking that
// each exists and is in a channel the user may access. Removing read
// makes a message unread again only in channels the user is subscribed
// to, since unread messages live only there.
// It answers the ids whose flag changed and, when removing read, the
// channels skipped because the user is not subscribed to them.
func (s *store) updateFlags(u user, ids []uint64, change flagChange) (changed, unsubscribed []uint64, err error) {
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		changed, unsubscribed = nil, nil
		byChannel := map[uint64][]uint64{}
		for _, id := range ids { // every check before the first write
			m, err := messageByID(tx, id)
			if err != nil {
				return errInvalidMessageIDs
			}
			ch, err := s.channelByID(tx, m.ChannelID)
			if err != nil || !canAccess(tx, u, ch) {
				return errInvalidMessageIDs
			}
			byChannel[ch.ID] = append(byChannel[ch.ID], id)
		}
		for channelID, inChannel := range byChannel {
			slices.Sort(inChannel)
			inChannel = slices.Compact(inChannel)
			if change.Flag == "read" && !change.Add && !isSubscribed(tx, u.ID, channelID) {
				unsubscribed = append(unsubscribed, channelID)
				continue
			}
			done, err := s.applyFlag(tx, u.ID, channelID, inChannel, change)
			if err != nil {
				return err
			}
			changed = append(changed, done...)
		}
		slices.Sort(changed)
		return reportFlags(tx, report, u, change, changed)
	})
	slices.Sort(unsubscribed)
	return changed, unsubscribed, err
}

// applyFlag changes one flag on messages of one channel (ids sorted) and
// answers the ids whose flag really changed.
func (s *store) applyFlag(tx *bbolt.Tx, userID, channelID uint64, ids []uint64, change flagChange) ([]uint64, error) {
	switch {
	case change.Flag == "read" && change.Add:
		return removeUnread(tx, userID, channelID, ids)
	case change.Flag == "read": // callers skip channels the user is not subscribed to
		already, err := unreadAmong(tx, userID, channelID, ids)
		if err != nil {
			return nil, err
		}
		fresh := slices.DeleteFunc(slices.Clone(ids), func(id uint64) bool {
			_, found := slices.BinarySearch(already, id)
			return found
		})
		return fresh, addUnread(tx, userID, channelID, fresh)
	}
	bit := flagStarred
	if change.Flag == "collapsed" {
		bit = flagCollapsed
	}
	b := tx.Bucket(bucketFlags)
	var changed []uint64
	for _, id := range ids {
		k := append(itob(userID), itob(id)...)
		var old byte
		if v := b.Get(k); v != nil {
			old = v[0]
		}
		flags := old | bit
		if !change.Add {
			flags = old &^ bit
		}
		if flags == old {
			continue
		}
		var err error
		if flags == 0 {
			err = b.Delete(k)
		} else {
			err = b.Put(k, []byte{flags})
		}
		if err != nil {
			return nil, err
		}
		changed = append(changed, id)
	}
	return changed, nil
}

// markTopicRead marks the user's unread messages of one topic read.
func (s *store) markTopicRead(u user, channelID uint64, topic string) ([]uint64, error) {
	var read []uint64
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		read = nil
		ch, err := s.channelByID(tx, channelID)
		if err != nil {
			return err
		}
		if !canAccess(tx, u, ch) {
			return errNoSuchChannel
		}
		var ids []uint64
		prefix := topicPrefix(ch.ID, topic)
		c := tx.Bucket(bucketTopicMessages).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			ids = append(ids, btoi(k[len(prefix):]))
		}
		if len(ids) == 0 && topic != "" { // Zulip checks only a named topic
			return errNoSuchTopic
		}
		if read, err = removeUnread(tx, u.ID, ch.ID, ids); err != nil {
			return err
		}
		return reportFlags(tx, report, u, flagChange{Flag: "read", Add: true}, read)
	})
	return read, err
}

// markAllRead marks every message read for the user.
func (s *store) markAllRead(u user) error {
	trashed := false
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		var err error
		if trashed, err = removeAllUnreadOf(tx, u.ID); err != nil {
			return err
		}
		report(flagsChanged{User: u, Change: flagChange{Flag: "read", Add: true}, All: true})
		return nil
	})
	if trashed { // large sets were moved aside: the janitor deletes them
		s.wakeJanitor()
	}
	return err
}

// reportFlags reports a flag change on ids (sorted), with where the
// messages are when read is removed (clients then count them unread).
func reportFlags(tx *bbolt.Tx, report func(any), u user, change flagChange, ids []uint64) error {
	if len(ids) == 0 {
		return nil
	}
	c := flagsChanged{User: u, Change: change, IDs: ids}
	if change.Flag == "read" && !change.Add {
		for _, id := range ids {
			m, err := messageByID(tx, id)
			if err != nil {
				return err
			}
			c.Details = append(c.Details, m)
		}
	}
	report(c)
	return nil
}

// unreadSummary is the user's unread messages grouped by channel and
// topic, at most max of them (the newest); Truncated says some are left out.
type unreadSummary struct {
	Topics    []unreadTopic
	Truncated bool
}

type unreadTopic struct {
	ChannelID uint64
	Topic     string
	IDs       []uint64
}

func (s *store) unreadSummary(userID uint64, max int) (unreadSummary, error) {
	var sum unreadSummary
	err := s.db.View(func(tx *bbolt.Tx) error {
		sum = unreadSummary{}
		ids, err := allUnreadIDs(tx, userID)
		if err != nil {
			return err
		}
		if len(ids) > max {
			ids, sum.Truncated = ids[len(ids)-max:], true
		}
		index := map[string]int{}
		for _, id := range ids {
			m, err := messageByID(tx, id)
			if err != nil {
				return err
			}
			key := strconv.FormatUint(m.ChannelID, 10) + "\x00" + m.Topic
			i, ok := index[key]
			if !ok {
				i = len(sum.Topics)
				index[key] = i
				sum.Topics = append(sum.Topics, unreadTopic{ChannelID: m.ChannelID, Topic: m.Topic})
			}
			sum.Topics[i].IDs = append(sum.Topics[i].IDs, id)
		}
		return nil
	})
	return sum, err
}

func messageByID(tx *bbolt.Tx, id uint64) (message, error) {
	var m message
	v := tx.Bucket(bucketMessages).Get(itob(id))
	if v == nil {
		return m, errInvalidMessageIDs
	}
	return m, json.Unmarshal(v, &m)
}

func (s *store) unread(userID, channelID uint64) ([]uint64, error) {
	var ids []uint64
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		ids, err = unreadIDs(tx, userID, channelID)
		return err
	})
	return ids, err
}

// maxMessageID is the largest message id, kept in memory.
func (s *store) maxMessageID() (uint64, error) { return s.maxID.Load(), nil }

// ping answers whether the database can be read.
func (s *store) ping() error {
	return s.db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			return errors.New("no meta bucket")
		}
		return nil
	})
}

// size is the database file's size in bytes.
// storeFigures is what /metrics reports of the database.
type storeFigures struct {
	bytes        int64 // the file's size
	pagesWritten int64 // data and freelist pages written by commits since the start
}

func (s *store) figures() storeFigures {
	var f storeFigures
	s.db.View(func(tx *bbolt.Tx) error {
		f.bytes = tx.Size()
		return nil
	})
	stats := s.db.Stats()
	// PageCount counts every page a commit allocates, overflow pages
	// included, and each is written once; Write would count a page and
	// its overflow as one.
	f.pagesWritten = stats.TxStats.GetPageCount()
	return f
}

// snapshot writes a consistent copy of the database to w from one read
// transaction, so writes go on meanwhile; before, if set, first hears the
// copy's size.
func (s *store) snapshot(w io.Writer, before func(size int64) error) error {
	return s.db.View(func(tx *bbolt.Tx) error {
		if before != nil {
			if err := before(tx.Size()); err != nil {
				return err
			}
		}
		_, err := tx.WriteTo(w)
		return err
	})
}

// ---- encoding helpers ----

func itob(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func btoi(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func emailKey(email string) []byte { return []byte(strings.ToLower(email)) }
func nameKey(name string) []byte   { return []byte(strings.ToLower(name)) }

func putJSON(b *bbolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, data)
}

func getJSON(b *bbolt.Bucket, key []byte, v any) error {
	data := b.Get(key)
	if data == nil {
		return fmt.Errorf("missing record %x", key)
	}
	return json.Unmarshal(data, v)
}

func deletePrefix(b *bbolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, slices.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// channelColor picks a stable colour from Zulip's default palette.
func channelColor(id uint64) string {
	palette := []string{"#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5", "#f5ce6e", "#c2726a"}
	return palette[id%uint64(len(palette))]
}
