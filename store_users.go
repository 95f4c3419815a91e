package main

// The store's accounts: users, their hashed API keys and password hashes.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"sync"

	"go.etcd.io/bbolt"
)

// createUser adds an account and returns it with its first API key.
func (s *store) createUser(email, fullName string, role int, bot bool) (user, string, error) {
	return s.createAccount(email, fullName, role, bot, "")
}

// createAccount adds an account, with a password hash unless it is empty,
// and returns it with its first API key.
func (s *store) createAccount(email, fullName string, role int, bot bool, passwordHash string) (user, string, error) {
	key := newAPIKey()
	var u user
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) (err error) {
		if u, err = s.createAccountTx(tx, report, email, fullName, role, bot, passwordHash, key); err != nil {
			return err
		}
		return s.joinDefaultChannels(tx, u, report) // store_channel_admin.go
	})
	return u, key, err
}

// createAccountTx is createAccount's transaction, which an accepted
// invitation runs with its own writes (store_invites.go).
func (s *store) createAccountTx(tx *bbolt.Tx, report func(any), email, fullName string, role int, bot bool, passwordHash, key string) (user, error) {
	emails := tx.Bucket(bucketUserEmails)
	if emails.Get(emailKey(email)) != nil {
		return user{}, errEmailTaken
	}
	users := tx.Bucket(bucketUsers)
	id, err := users.NextSequence()
	if err != nil {
		return user{}, err
	}
	u := user{ID: id, Email: email, FullName: fullName, Role: role, Bot: bot, Active: true, Joined: s.now().Unix()}
	if err := putUser(tx, u); err != nil {
		return user{}, err
	}
	if err := emails.Put(emailKey(email), itob(id)); err != nil {
		return user{}, err
	}
	if err := startWithDefaults(tx, id); err != nil { // store_people.go
		return user{}, err
	}
	if passwordHash != "" {
		if err := tx.Bucket(bucketPasswords).Put(itob(id), []byte(passwordHash)); err != nil {
			return user{}, err
		}
	}
	report(accountChanged{Email: email, UserID: id})
	report(accountCreated{User: u})
	return u, s.putKey(tx, id, key)
}

// setPassword replaces the account's password hash.
func (s *store) setPassword(email, passwordHash string) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		u, err := userByEmail(tx, email)
		if err != nil {
			return err
		}
		// The web sessions end, and so do the queues their pages poll
		// (Zulip's logout of every session on a password change).
		report(accountChanged{Email: email, UserID: u.ID, EndsSessions: true})
		if err := endUserSessionsTx(tx, u.ID); err != nil { // store_sessions.go
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
	err := s.view(func(tx *bbolt.Tx) error {
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
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
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
		sortStableFunc(keys, func(a, b held) int { return cmp.Compare(a.created, b.created) })
		for len(keys) >= maxKeysPerAccount {
			if err := tx.Bucket(bucketAPIKeys).Delete(keys[0].key); err != nil {
				return err
			}
			keys = keys[1:]
		}
		report(accountChanged{Email: u.Email, UserID: u.ID})
		return s.putKey(tx, u.ID, key)
	})
	return key, err
}

func (s *store) putKey(tx *bbolt.Tx, userID uint64, key string) error {
	return tx.Bucket(bucketAPIKeys).Put(append(itob(userID), s.keys.hash(key)...), itob(uint64(s.now().Unix())))
}

// userByEmail finds an account by e-mail, case-insensitively.
func (s *store) userByEmail(email string) (user, error) {
	var u user
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		u, err = userByEmail(tx, email)
		return err
	})
	return u, err
}

// userByID finds an account by id.
func (s *store) userByID(id uint64) (user, error) {
	var u user
	err := s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketUsers).Get(itob(id))
		if v == nil {
			return errNoSuchUser
		}
		return json.Unmarshal(v, &u)
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
	list, _, err := s.usersAt()
	return slices.Clone(list), err
}

// usersAt is every account by id, shared with other readers (the caller
// must not modify it), and the "users_version" it is the state of: what
// is made of these accounts alone stays right while the version does
// (register's shared state, register_shared.go).
func (s *store) usersAt() (users []user, version uint64, err error) {
	err = s.view(func(tx *bbolt.Tx) error {
		version = usersVersion(tx)
		users, _, _, err = s.directory.of(tx)
		return err
	})
	return users, version, err
}

// usersVersion is meta's "users_version", which putUser counts up.
func usersVersion(tx *bbolt.Tx) uint64 {
	if v := tx.Bucket(bucketMeta).Get(keyUsersVersion); v != nil {
		return btoi(v)
	}
	return 0
}

// regenerateKey revokes every key of the account, makes one new key and,
// as Zulip does when a key is regenerated, removes its push tokens.
func (s *store) regenerateKey(email string) (string, error) {
	key := newAPIKey()
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		u, err := userByEmail(tx, email)
		if err != nil {
			return err
		}
		report(accountChanged{Email: u.Email, UserID: u.ID, EndsSessions: true})
		if err := endUserSessionsTx(tx, u.ID); err != nil { // store_sessions.go
			return err
		}
		if err := s.unregisterAllTx(tx, u.ID); err != nil { // push_bouncer.go
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
	return key, err
}

func (s *store) setActive(email string, active bool) error {
	return s.changeActive(email, active, nil)
}

// deactivateOwn is Zulip's deactivate_user_own_backend: the account
// deactivates itself, as the CLI's deactivation does, unless it is the
// only active account or the only active human owner.
func (s *store) deactivateOwn(u user) error {
	return s.changeActive(u.Email, false, func(tx *bbolt.Tx, u user) error {
		users, active, _, err := s.directory.of(tx)
		if err != nil {
			return err
		}
		if active == 1 {
			return refusal(errLastUser)
		}
		owners := 0
		for _, o := range users {
			if o.Active && !o.Bot && o.Role == roleOwner {
				owners++
			}
		}
		if u.Role == roleOwner && !u.Bot && owners == 1 {
			return refusal(errLastOwner)
		}
		return nil
	})
}

// changeActive (de)activates an account, once allowed says it may.
func (s *store) changeActive(email string, active bool, allowed func(*bbolt.Tx, user) error) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		u, err := userByEmail(tx, email)
		if err != nil {
			return err
		}
		if allowed != nil {
			if err := allowed(tx, u); err != nil {
				return err
			}
		}
		if err := s.putActive(tx, report, u, active); err != nil { // store_people.go
			return err
		}
		if !active {
			return expireInvitesOf(tx, u.ID, s.now().Unix(), report) // store_invites.go
		}
		return nil
	})
}

// putUser writes an account, counting up meta's "users_version" in the
// same transaction, so that the directory knows its copy is stale. Every
// write of an account goes through it.
func putUser(tx *bbolt.Tx, u user) error {
	if err := tx.Bucket(bucketMeta).Put(keyUsersVersion, itob(usersVersion(tx)+1)); err != nil {
		return err
	}
	return putJSON(tx.Bucket(bucketUsers), itob(u.ID), u)
}

// userDirectory is every account, decoded once per change of any:
// presence, channel figures, subscription audiences, mentions and
// register's realm_users read all of them, and decoding them for each
// request cost more than the rest of a registration in an organisation
// of thousands (and held the committer for each subscription). A
// transaction whose "users_version" is the one the copy was read at
// takes the copy; any other decodes its own, so the copy is never
// wrong, only missed. A read transaction keeps what it decoded when it
// is newer than the copy; a write transaction never keeps its own, as it
// may yet roll back (its version could then be another's).
type userDirectory struct {
	mu       sync.Mutex
	valid    bool
	version  uint64
	users    []user // by id; shared, so never modified
	active   int
	inactive map[uint64]bool
}

// directoryOf is the accounts as the transaction sees them: the users
// by id (shared: the caller must not modify them), how many are active,
// and which are not.
func (d *userDirectory) of(tx *bbolt.Tx) (users []user, active int, inactive map[uint64]bool, err error) {
	version := usersVersion(tx)
	d.mu.Lock()
	if d.valid && d.version == version {
		users, active, inactive = d.users, d.active, d.inactive
		d.mu.Unlock()
		return users, active, inactive, nil
	}
	d.mu.Unlock()
	inactive = map[uint64]bool{}
	err = tx.Bucket(bucketUsers).ForEach(func(_, v []byte) error {
		var u user
		if err := json.Unmarshal(v, &u); err != nil {
			return err
		}
		users = append(users, u)
		if u.Active {
			active++
		} else {
			inactive[u.ID] = true
		}
		return nil
	})
	if err != nil {
		return nil, 0, nil, err
	}
	if !tx.Writable() {
		d.mu.Lock()
		if !d.valid || version > d.version {
			d.valid, d.version, d.users, d.active, d.inactive = true, version, users, active, inactive
		}
		d.mu.Unlock()
	}
	return users, active, inactive, nil
}

// activeUserCount is how many accounts are active, bots too (Zulip's
// active_user_ids).
func (s *store) activeUserCount() (int, error) {
	n := 0
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		_, n, _, err = s.directory.of(tx)
		return err
	})
	return n, err
}

// hasUsers reports whether any account exists, without counting them
// (start-up asks, and must stay fast however many there are).
func (s *store) hasUsers() (bool, error) {
	found := false
	err := s.view(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket(bucketUsers).Cursor().First()
		found = k != nil
		return nil
	})
	return found, err
}

// settingChange is one personal setting a user sets: its name, the new
// value and Zulip's default, both JSON-encoded.
type settingChange struct {
	Name           string
	Value, Default json.RawMessage
}

// userSettings answers the user's settings that differ from the
// defaults, by name (JSON values); empty when they changed none.
func (s *store) userSettings(userID uint64) (map[string]json.RawMessage, error) {
	overrides := map[string]json.RawMessage{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		clear(overrides)
		if v := tx.Bucket(bucketUserSettings).Get(itob(userID)); v != nil {
			return json.Unmarshal(v, &overrides)
		}
		return nil
	})
	return overrides, err
}

// applySettingChanges applies the changes in order to the stored values
// (a user's overrides, or the organisation's defaults for new users):
// a value equal to its default is not kept. It answers the changes that
// changed a value, which are all Zulip tells of.
func applySettingChanges(values map[string]json.RawMessage, changes []settingChange) []settingChange {
	var changed []settingChange
	for _, c := range changes {
		current, ok := values[c.Name]
		if !ok {
			current = c.Default
		}
		if bytes.Equal(current, c.Value) {
			continue
		}
		if bytes.Equal(c.Value, c.Default) {
			delete(values, c.Name)
		} else {
			values[c.Name] = c.Value
		}
		changed = append(changed, c)
	}
	return changed
}

// updateUserSettings applies the changes in order and reports those that
// change a value (userSettingsChanged), as Zulip only tells of a setting
// that differs from before. A value equal to its default is not stored.
func (s *store) updateUserSettings(u user, changes []settingChange) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		if tx.Bucket(bucketUsers).Get(itob(u.ID)) == nil {
			return errNoSuchUser
		}
		b := tx.Bucket(bucketUserSettings)
		overrides := map[string]json.RawMessage{}
		if v := b.Get(itob(u.ID)); v != nil {
			if err := json.Unmarshal(v, &overrides); err != nil {
				return err
			}
		}
		changed := applySettingChanges(overrides, changes)
		for _, c := range changed {
			if c.Name == "enable_drafts_synchronization" && string(c.Value) == "false" {
				if err := dropDrafts(tx, u.ID); err != nil { // store_drafts.go
					return err
				}
			}
		}
		if len(changed) == 0 {
			return nil
		}
		report(userSettingsChanged{User: u, Changes: changed})
		if len(overrides) == 0 {
			return b.Delete(itob(u.ID))
		}
		return putJSON(b, itob(u.ID), overrides)
	})
}

// starredMessageIDs lists, ascending, the messages the user starred
// (the flags bucket, store_messages.go), as register's starred_messages.
// As in Zulip, a star outlives the subscription it was made under.
func (s *store) starredMessageIDs(userID uint64) ([]uint64, error) {
	var ids []uint64
	err := s.db.View(func(tx *bbolt.Tx) error {
		ids = nil
		prefix := itob(userID)
		c := tx.Bucket(bucketFlags).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(v) > 0 && v[0]&flagStarred != 0 {
				ids = append(ids, btoi(k[8:]))
			}
		}
		return nil
	})
	return ids, err
}
