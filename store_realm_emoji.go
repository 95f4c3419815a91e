package main

// Custom emoji: Zulip's RealmEmoji rows. Each is a 64-pixel PNG among the
// upload directory's blobs (store_uploads.go), named by its SHA-256 and
// kept while its row exists: a deactivated emoji keeps its image, for the
// reactions and messages that show it (Zulip's do_remove_realm_emoji
// only sets deactivated). The rows are few (maxRealmEmoji) and read by
// every rendering and reaction, so they are held in memory, replaced
// after each committed change.

import (
	"encoding/json"
	"strconv"

	"go.etcd.io/bbolt"
)

// maxRealmEmoji bounds the custom emoji an organisation has, deactivated
// ones included (zulite's bound; Zulip sets none): register sends all of
// them, and every rendering looks names up among them.
const maxRealmEmoji = 2000

var bucketRealmEmoji = []byte("realm_emoji")

// realmEmoji is one custom emoji.
type realmEmoji struct {
	ID          uint64 `json:"-"`
	Name        string `json:"name"`
	File        string `json:"file"` // the image's blob (SHA-256, hex)
	AuthorID    uint64 `json:"author_id"`
	Created     int64  `json:"created"` // Unix seconds
	Deactivated bool   `json:"deactivated,omitempty"`
}

// realmEmojiChanged: a custom emoji was added or deactivated; All is
// every custom emoji after the change, as Zulip's realm_emoji event
// carries them.
type realmEmojiChanged struct {
	All []realmEmoji
}

// realmEmojiSet is the organisation's custom emoji, by id.
type realmEmojiSet []realmEmoji

// active is the active emoji of that name.
func (set realmEmojiSet) active(name string) (realmEmoji, bool) {
	for _, e := range set {
		if e.Name == name && !e.Deactivated {
			return e, true
		}
	}
	return realmEmoji{}, false
}

// byID is the emoji (active or not) with that id, as reaction codes name it.
func (set realmEmojiSet) byID(code string) (realmEmoji, bool) {
	id, err := strconv.ParseUint(code, 10, 64)
	if err != nil {
		return realmEmoji{}, false
	}
	for _, e := range set {
		if e.ID == id {
			return e, true
		}
	}
	return realmEmoji{}, false
}

// customEmoji is every custom emoji, oldest first.
func (s *store) customEmoji() realmEmojiSet {
	if p := s.realmEmoji.Load(); p != nil {
		return *p
	}
	return nil
}

// readRealmEmoji reads every custom emoji, oldest first.
func readRealmEmoji(tx *bbolt.Tx) realmEmojiSet {
	var set realmEmojiSet
	tx.Bucket(bucketRealmEmoji).ForEach(func(k, v []byte) error {
		var e realmEmoji
		if len(k) == 8 && json.Unmarshal(v, &e) == nil {
			e.ID = btoi(k)
			set = append(set, e)
		}
		return nil
	})
	return set
}

func (s *store) loadRealmEmoji(tx *bbolt.Tx) {
	set := readRealmEmoji(tx)
	s.realmEmoji.Store(&set)
}

// addRealmEmoji is Zulip's check_add_realm_emoji: a new active emoji of
// the name, shown by the blob file, unless an active one has the name.
func (s *store) addRealmEmoji(author user, name, file string, now int64) (realmEmoji, error) {
	var added realmEmoji
	var after realmEmojiSet
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		set := readRealmEmoji(tx)
		if _, taken := set.active(name); taken {
			return refusal(errEmojiNameTaken)
		}
		if len(set) >= maxRealmEmoji {
			return refusal(errTooManyEmoji)
		}
		b := tx.Bucket(bucketRealmEmoji)
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		added = realmEmoji{ID: id, Name: name, File: file, AuthorID: author.ID, Created: now}
		if err := putJSON(b, itob(id), added); err != nil {
			return err
		}
		after = append(set, added)
		report(realmEmojiChanged{All: after})
		return nil
	})
	if err != nil {
		return realmEmoji{}, err
	}
	s.realmEmoji.Store(&after)
	return added, nil
}

// deactivateRealmEmoji is Zulip's delete_emoji: the active emoji of the
// name becomes deactivated, if u is an administrator or its author
// (check_remove_custom_emoji).
func (s *store) deactivateRealmEmoji(u user, name string) error {
	var after realmEmojiSet
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		set := readRealmEmoji(tx)
		e, ok := set.active(name)
		if !ok {
			return refusal(errNoSuchCustomEmoji(name))
		}
		if !u.isAdmin() && e.AuthorID != u.ID {
			return refusal(errNotEmojiAuthor)
		}
		e.Deactivated = true
		if err := putJSON(tx.Bucket(bucketRealmEmoji), itob(e.ID), e); err != nil {
			return err
		}
		after = make(realmEmojiSet, len(set))
		for i, old := range set {
			if old.ID == e.ID {
				old = e
			}
			after[i] = old
		}
		report(realmEmojiChanged{All: after})
		return nil
	})
	if err == nil {
		s.realmEmoji.Store(&after)
	}
	return err
}

// isEmojiBlob tells whether a custom emoji, active or not, shows the blob.
func (s *store) isEmojiBlob(sum string) bool {
	for _, e := range s.customEmoji() {
		if e.File == sum {
			return true
		}
	}
	return false
}

// emojiBlobUsed is isEmojiBlob inside a transaction (blobUsed, the sweep).
func emojiBlobUsed(tx *bbolt.Tx, sum string) bool {
	for _, e := range readRealmEmoji(tx) {
		if e.File == sum {
			return true
		}
	}
	return false
}
