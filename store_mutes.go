package main

// Muted users and alert words: what each user sets for their own view
// (zerver/lib/muted_users.py, zerver/lib/alert_words.py), kept in the
// muted_users, muted_by and alert_words buckets.

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"go.etcd.io/bbolt"
)

var (
	bucketMutedUsers = []byte("muted_users")
	bucketMutedBy    = []byte("muted_by")
	bucketAlertWords = []byte("alert_words")
)

// mutedUser is one entry of Zulip's get_user_mutes: who, and when
// (Unix seconds).
type mutedUser struct {
	ID        uint64 `json:"id"`
	Timestamp int64  `json:"timestamp"`
}

// mutedUsersChanged: the user muted or unmuted someone; Muted is their
// whole list now, as Zulip's muted_users event tells it.
type mutedUsersChanged struct {
	UserID uint64
	Muted  []mutedUser
}

// alertWordsChanged: the user's alert words are now Words.
type alertWordsChanged struct {
	UserID uint64
	Words  []string
}

// mutesOf is the user's muted users, by id, as get_user_mutes lists them.
func mutesOf(tx *bbolt.Tx, userID uint64) []mutedUser {
	out := []mutedUser{}
	prefix := itob(userID)
	c := tx.Bucket(bucketMutedUsers).Cursor()
	for k, v := c.Seek(prefix); k != nil && len(k) == 16 && string(k[:8]) == string(prefix); k, v = c.Next() {
		out = append(out, mutedUser{ID: btoi(k[8:]), Timestamp: int64(btoi(v))})
	}
	return out
}

// mutingUsers is Zulip's get_muting_users: who muted the user, by id.
func mutingUsers(tx *bbolt.Tx, mutedID uint64) []uint64 {
	var out []uint64
	prefix := itob(mutedID)
	c := tx.Bucket(bucketMutedBy).Cursor()
	for k, _ := c.Seek(prefix); k != nil && len(k) == 16 && string(k[:8]) == string(prefix); k, _ = c.Next() {
		out = append(out, btoi(k[8:]))
	}
	return out
}

// mutedUsers answers register's muted_users.
func (s *store) mutedUsers(userID uint64) ([]mutedUser, error) {
	var out []mutedUser
	err := s.view(func(tx *bbolt.Tx) error {
		out = mutesOf(tx, userID)
		return nil
	})
	return out, err
}

// muteUser is Zulip's do_mute_user: anyone but oneself, bots and
// deactivated users too (the view checks oneself), once; the muted
// user's messages the muter has not read become read
// (do_mark_muted_user_messages_as_read).
func (s *store) muteUser(u user, mutedID uint64) error {
	// The unread messages from them are found in a read transaction: the
	// walk costs what the user's unread messages make it cost, and only
	// this caller waits for it. The commits then mark them read at most
	// maxMessagesPerRequest at a time, so that the committer never does
	// work that scales with history; the mute goes with the last, with
	// what arrived since the walk. A request that fails on the way leaves
	// no mute, and its retry finds what is still unread.
	var unread []uint64
	var seen uint64 // the newest message the walk could see
	err := s.view(func(tx *bbolt.Tx) error {
		if err := checkMutable(tx, u.ID, mutedID); err != nil {
			return err
		}
		seen = tx.Bucket(bucketMessages).Sequence()
		var err error
		unread, err = unreadFrom(tx, u.ID, mutedID, 0)
		return err
	})
	if err != nil {
		return err
	}
	for {
		n := min(len(unread), maxMessagesPerRequest)
		chunk := unread[:n]
		unread = unread[n:]
		last := len(unread) == 0
		err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
			ids := chunk
			if last {
				if err := checkMutable(tx, u.ID, mutedID); err != nil {
					return err
				}
				if err := tx.Bucket(bucketMutedUsers).Put(append(itob(u.ID), itob(mutedID)...), itob(uint64(s.now().Unix()))); err != nil {
					return err
				}
				if err := tx.Bucket(bucketMutedBy).Put(append(itob(mutedID), itob(u.ID)...), nil); err != nil {
					return err
				}
				since, err := unreadFrom(tx, u.ID, mutedID, seen) // sent between the walk and now
				if err != nil {
					return err
				}
				ids = append(slices.Clone(chunk), since...)
			}
			read, err := markReadByKey(tx, u.ID, ids)
			if err != nil {
				return err
			}
			if err := reportFlags(tx, report, u, flagChange{Flag: "read", Add: true}, read); err != nil {
				return err
			}
			if last {
				report(mutedUsersChanged{UserID: u.ID, Muted: mutesOf(tx, u.ID)})
			}
			return nil
		})
		if err != nil || last {
			return err
		}
	}
}

// checkMutable refuses a mute of someone who does not exist or is muted
// already.
func checkMutable(tx *bbolt.Tx, userID, mutedID uint64) error {
	if _, err := lookUpUser(tx, mutedID); err != nil {
		return errNoSuchUser
	}
	if tx.Bucket(bucketMutedUsers).Get(append(itob(userID), itob(mutedID)...)) != nil {
		return refusal(errUserAlreadyMuted)
	}
	return nil
}

// unreadFrom is the user's unread messages from the sender with ids
// above after, sorted.
func unreadFrom(tx *bbolt.Tx, userID, senderID, after uint64) ([]uint64, error) {
	var ids []uint64
	next := userUnread(tx, userID).iter(largestMessageID, false)
	for id, ok := next(); ok && id > after; id, ok = next() {
		m, err := messageByID(tx, id)
		if err != nil {
			return nil, err
		}
		if m.SenderID == senderID {
			ids = append(ids, id)
		}
	}
	slices.Reverse(ids)
	return ids, nil
}

// markReadByKey marks the messages read, each where its read state is
// kept (a channel's or a conversation's), and answers those it changed,
// sorted.
func markReadByKey(tx *bbolt.Tx, userID uint64, ids []uint64) ([]uint64, error) {
	byKey := map[uint64][]uint64{}
	for _, id := range ids {
		m, err := messageByID(tx, id)
		if errors.Is(err, errInvalidMessageIDs) {
			continue // deleted meanwhile
		} else if err != nil {
			return nil, err
		}
		byKey[m.readKey()] = append(byKey[m.readKey()], id)
	}
	var read []uint64
	for readKey, ids := range byKey {
		slices.Sort(ids)
		changed, err := markRead(tx, userID, readKey, ids)
		if err != nil {
			return nil, err
		}
		read = append(read, changed...)
	}
	slices.Sort(read)
	return read, nil
}

// unmuteUser is Zulip's do_unmute_user, after its view's checks.
func (s *store) unmuteUser(u user, mutedID uint64) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		if _, err := lookUpUser(tx, mutedID); err != nil {
			return errNoSuchUser
		}
		key := append(itob(u.ID), itob(mutedID)...)
		b := tx.Bucket(bucketMutedUsers)
		if b.Get(key) == nil {
			return refusal(errUserNotMuted)
		}
		if err := b.Delete(key); err != nil {
			return err
		}
		if err := tx.Bucket(bucketMutedBy).Delete(append(itob(mutedID), itob(u.ID)...)); err != nil {
			return err
		}
		report(mutedUsersChanged{UserID: u.ID, Muted: mutesOf(tx, u.ID)})
		return nil
	})
}

// readByMuters marks a new message read for those of its recipients
// who muted its sender, as Zulip's create_user_messages sets the read
// flag for muted_sender_user_ids; recipient says who received it.
func readByMuters(tx *bbolt.Tx, m message, recipient func(uint64) bool) ([]uint64, error) {
	var muters []uint64
	for _, id := range mutingUsers(tx, m.SenderID) {
		if id == m.SenderID || !recipient(id) {
			continue
		}
		if _, err := markRead(tx, id, m.readKey(), []uint64{m.ID}); err != nil {
			return nil, err
		}
		muters = append(muters, id)
	}
	return muters, nil
}

// alertWordsOf is the user's alert words, in the order they were added.
func alertWordsOf(tx *bbolt.Tx, userID uint64) ([]string, error) {
	words := []string{}
	if v := tx.Bucket(bucketAlertWords).Get(itob(userID)); v != nil {
		if err := json.Unmarshal(v, &words); err != nil {
			return nil, err
		}
	}
	return words, nil
}

// alertWords answers GET /users/me/alert_words and register's alert_words.
func (s *store) alertWords(userID uint64) ([]string, error) {
	var out []string
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		out, err = alertWordsOf(tx, userID)
		return err
	})
	return out, err
}

// addAlertWords is Zulip's add_user_alert_words: words not already
// there in any case are added, each lower-cased word once, the last
// spelling given winning; the list is answered as it is now.
func (s *store) addAlertWords(u user, add []string) ([]string, error) {
	var out []string
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		words, err := alertWordsOf(tx, u.ID)
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, w := range words {
			have[strings.ToLower(w)] = true
		}
		var order []string
		spelling := map[string]string{}
		for _, w := range add {
			lower := strings.ToLower(w)
			if have[lower] {
				continue
			}
			if _, ok := spelling[lower]; !ok {
				order = append(order, lower)
			}
			spelling[lower] = w
		}
		for _, lower := range order {
			words = append(words, spelling[lower])
		}
		if len(words) > maxAlertWords {
			return refusal(errTooManyAlertWords)
		}
		out = words
		report(alertWordsChanged{UserID: u.ID, Words: words})
		return putJSON(tx.Bucket(bucketAlertWords), itob(u.ID), words)
	})
	return out, err
}

// removeAlertWords is Zulip's remove_user_alert_words: each word given
// is removed whatever its case; a word not there is no error.
func (s *store) removeAlertWords(u user, remove []string) ([]string, error) {
	var out []string
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		words, err := alertWordsOf(tx, u.ID)
		if err != nil {
			return err
		}
		gone := map[string]bool{}
		for _, w := range remove {
			gone[strings.ToLower(w)] = true
		}
		kept := []string{}
		for _, w := range words {
			if !gone[strings.ToLower(w)] {
				kept = append(kept, w)
			}
		}
		out = kept
		report(alertWordsChanged{UserID: u.ID, Words: kept})
		// Kept when empty: alertWordHolders must still find the user.
		return putJSON(tx.Bucket(bucketAlertWords), itob(u.ID), kept)
	})
	return out, err
}

// alertWordHolders are the users who have had alert words, by id: only
// they may hold has_alert_word on a message, so only their flags an edit
// may change (an entry stays when its list is emptied).
func alertWordHolders(tx *bbolt.Tx) []uint64 {
	var ids []uint64
	tx.Bucket(bucketAlertWords).ForEach(func(k, _ []byte) error {
		ids = append(ids, btoi(k))
		return nil
	})
	return ids
}

// usersAlerted are the users whose alert words the text holds, as
// Zulip's AlertWordNotificationProcessor finds them (alertWordIn) in
// what the renderer's preprocessors leave it (markdown.Result.AlertText:
// no fenced code); only active users' words count (alert_words_in_realm).
func usersAlerted(tx *bbolt.Tx, text string) ([]uint64, error) {
	var out []uint64
	lower := []rune(strings.ToLower(text))
	err := tx.Bucket(bucketAlertWords).ForEach(func(k, v []byte) error {
		var words []string
		if err := json.Unmarshal(v, &words); err != nil {
			return err
		}
		u, err := lookUpUser(tx, btoi(k))
		if err != nil || !u.Active {
			return nil
		}
		for _, w := range words {
			if alertWordIn(lower, []rune(strings.ToLower(w))) {
				out = append(out, u.ID)
				break
			}
		}
		return nil
	})
	return out, err
}

// alertWordIn is AlertWordNotificationProcessor's test for one word in
// the lower-cased content: an occurrence with an allowed character (or
// the content's start) before it and an allowed character (or the
// content's end) after it. Its start check, as Zulip's, looks at the
// character before the word and lets anything through at index 0.
func alertWordIn(content, word []rune) bool {
	if len(word) == 0 {
		return false
	}
	for i := 0; i+len(word) <= len(content); i++ {
		if !slices.Equal(content[i:i+len(word)], word) {
			continue
		}
		before := i - 1
		if before > 0 && !strings.ContainsRune(alertAllowedBefore, content[before]) {
			continue
		}
		after := i + len(word)
		if after < len(content) && !strings.ContainsRune(alertAllowedAfter, content[after]) {
			continue
		}
		return true
	}
	return false
}

// Zulip's allowed_before_punctuation and allowed_after_punctuation. The
// latter's '",' is two characters in Zulip's set, so neither a double
// quote alone nor anything else of it matches a single character.
const (
	alertAllowedBefore = " \n(\".,';[*`>"
	alertAllowedAfter  = " \n)?:.,';]!*`"
)
