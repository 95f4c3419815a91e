package main

// Most of a registration's answer is the same for everyone: in an
// organisation of 3,000 people, realm_users is 1 MB of a 1.04 MB answer,
// and encoding it for each of the 6,000 tabs and phones that register in
// a morning cost more than the rest of their registrations. What is made
// of the accounts alone is encoded once per "users_version" and written
// to each client from those shared bytes, which are never copied into an
// answer of its own.

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
)

// sharedUserState is register's state made of every account and nothing
// else (realm_users and realm_non_active_users for each client_gravatar,
// realm_user_groups), encoded at one "users_version". A read at another
// version encodes its own; one at a newer version replaces the copy, so
// the copy is never wrong, only missed (as the user directory's,
// store_users.go).
type sharedUserState struct {
	mu      sync.Mutex
	version uint64
	encoded map[string]json.RawMessage // by name; nil: nothing kept yet
}

// get is value() encoded as the accounts at version make it, the shared
// bytes when another registration at that version encoded it already.
// name must say everything value depends on besides the accounts.
func (c *sharedUserState) get(version uint64, name string, value func() any) (json.RawMessage, error) {
	c.mu.Lock()
	if c.encoded != nil && c.version == version {
		if b, ok := c.encoded[name]; ok {
			c.mu.Unlock()
			return b, nil
		}
	}
	c.mu.Unlock()
	var buf bytes.Buffer
	if err := encodeValue(&buf, value()); err != nil {
		return nil, err
	}
	b := json.RawMessage(buf.Bytes())
	c.mu.Lock()
	if c.encoded == nil || version > c.version {
		c.version, c.encoded = version, map[string]json.RawMessage{}
	}
	if version == c.version {
		c.encoded[name] = b
	}
	c.mu.Unlock()
	return b, nil
}

// encodedParts are JSON object members in pieces, written one after the
// other (writeSuccess): the shared bytes of register's state stand in it
// as they are, never copied into an answer of their own.
type encodedParts [][]byte

// sharedPartBytes is how long an already encoded value must be to be
// written from its own bytes rather than copied beside its key.
const sharedPartBytes = 4 << 10

// stateMembers is state as writeSuccess would encode the map, key by key
// in sorted order, with its json.RawMessage values (already compact)
// written as they are: the same bytes, without encoding or copying the
// shared ones again.
func stateMembers(state map[string]any) (encodedParts, error) {
	keys := make([]string, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts encodedParts
	var b bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := encodeValue(&b, k); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if raw, ok := state[k].(json.RawMessage); ok && len(raw) >= sharedPartBytes {
			parts = append(parts, bytes.Clone(b.Bytes()), raw)
			b.Reset()
			continue
		}
		if err := encodeValue(&b, state[k]); err != nil {
			return nil, err
		}
	}
	return append(parts, b.Bytes()), nil
}
