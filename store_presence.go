package main

// Presence: who is here. Clients report every minute or so (POST
// /users/me/presence); the reports live in memory, and each user's record
// reaches the presence bucket at most once every presenceWriteInterval,
// all dirty records of a tick in one commit. A thousand idle clients
// pinging every minute then cost one commit every presenceFlushTick,
// not a thousand a minute; a crash loses at most presenceWriteInterval
// of "last seen", which nobody's data depends on.

import (
	"encoding/binary"
	"maps"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"
)

const (
	// presenceWriteInterval is N: a user's presence is written to the
	// store at most once every N.
	presenceWriteInterval = 5 * time.Minute
	// presenceFlushTick is how often the writer looks for records due.
	presenceFlushTick = 10 * time.Second
	// presenceUpdateMinFreq is Zulip's PRESENCE_UPDATE_MIN_FREQ_SECONDS:
	// a timestamp moves only when it is older than this, so several
	// windows of one user do not churn it.
	presenceUpdateMinFreq = 55 * time.Second
	// presenceHistoryDays is how far back presence is answered when the
	// client does not say (Zulip: two weeks).
	presenceHistoryDays = 14
	// presenceSeqBlock is how many update ids are reserved in the store
	// at a time, so that ids handed out before a crash are never handed
	// out again (clients pass the last one they saw as last_update_id).
	presenceSeqBlock = 1000
)

// presenceRecord is one user's presence: the last time a client of theirs
// was connected and the last time they were active, in Unix seconds (0:
// never), and the update id of the last change.
type presenceRecord struct {
	Active, Connected int64
	UpdateID          uint64
}

func (p presenceRecord) encode() []byte {
	b := make([]byte, 24)
	binary.BigEndian.PutUint64(b, uint64(p.Active))
	binary.BigEndian.PutUint64(b[8:], uint64(p.Connected))
	binary.BigEndian.PutUint64(b[16:], p.UpdateID)
	return b
}

func decodePresence(b []byte) (presenceRecord, bool) {
	if len(b) != 24 {
		return presenceRecord{}, false
	}
	return presenceRecord{int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:])), binary.BigEndian.Uint64(b[16:])}, true
}

// presenceEntry is a record in memory with its bookkeeping.
type presenceEntry struct {
	presenceRecord
	dirty   bool      // changed since it was last written
	written time.Time // when it was last written; zero: never
}

// presenceTable is every user's presence, in memory, loaded from the
// store on first use and written back by a writer of its own, every
// presenceFlushTick, until stop is closed: reports write nothing but the
// reservation of update ids, so frequent pings cost no commit each.
type presenceTable struct {
	db       transactor      // the store's transactions
	stop     <-chan struct{} // closed when the store stops
	load     sync.Once
	loadErr  error
	mu       sync.Mutex
	entries  map[uint64]*presenceEntry
	ids      []uint64 // the entries' user ids, in order: answers are by id
	seq      uint64   // the last update id handed out
	reserved uint64   // ids up to this one are reserved in the store
	flushing sync.Mutex
}

var keyPresenceSeq = []byte("presence_update_id")

// transactor is what the store lends its parts that keep state of their
// own: a read transaction, and a write committed with the others.
type transactor interface {
	view(fn func(tx *bbolt.Tx) error) error
	update(fn func(tx *bbolt.Tx) error) error
}

// presenceNews is what a presence report changed: whether the user just
// appeared (their first report, or active after being away long enough
// to look offline), which Zulip tells every client at once.
type presenceNews struct {
	Record   presenceRecord
	Appeared bool
}

// loaded reads the presence bucket into memory, once, and starts the
// writer, which stops with the store.
func (t *presenceTable) loaded() error {
	t.load.Do(func() {
		entries := map[uint64]*presenceEntry{}
		var seq uint64
		t.loadErr = t.db.view(func(tx *bbolt.Tx) error {
			if v := tx.Bucket(bucketMeta).Get(keyPresenceSeq); len(v) == 8 {
				seq = btoi(v)
			}
			return tx.Bucket(bucketPresence).ForEach(func(k, v []byte) error {
				if rec, ok := decodePresence(v); ok && len(k) == 8 {
					entries[btoi(k)] = &presenceEntry{presenceRecord: rec, written: time.Now()}
				}
				return nil
			})
		})
		t.mu.Lock()
		t.entries, t.seq, t.reserved = entries, seq, seq
		t.ids = slices.Sorted(maps.Keys(entries))
		t.mu.Unlock()
		if t.loadErr == nil {
			go t.writer()
		}
	})
	return t.loadErr
}

// reportPresence records a report of the user's presence at now: active,
// or only connected (idle). It writes nothing but, once in a
// presenceSeqBlock, the reservation of update ids.
func (s *store) reportPresence(userID uint64, active bool, now time.Time) (presenceNews, error) {
	if err := s.presence.loaded(); err != nil {
		return presenceNews{}, err
	}
	enabled, err := s.presenceEnabled(userID)
	if err != nil || !enabled { // a user who hides their presence is not updated
		return presenceNews{}, err
	}
	return s.presence.report(userID, active, now)
}

// report records a report of the user's presence at now.
func (t *presenceTable) report(userID uint64, active bool, now time.Time) (presenceNews, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := now.Unix()
	e, found := t.entries[userID]
	creating := !found
	if creating {
		e = &presenceEntry{presenceRecord: presenceRecord{Connected: at}}
		if active {
			e.Active = at
		}
	}
	sinceActive, sinceConnected := 24*time.Hour, 24*time.Hour // never: long ago
	if e.Active != 0 {
		sinceActive = now.Sub(time.Unix(e.Active, 0))
	}
	if e.Connected != 0 {
		sinceConnected = now.Sub(time.Unix(e.Connected, 0))
	}
	// Zulip's now_online: a user who missed a couple of pings and would
	// soon be shown offline is told to everyone at once.
	becameOnline := active && sinceActive > (presenceOfflineThresholdSeconds-presencePingIntervalSeconds-10)*time.Second
	changed := false
	if !creating && sinceConnected > presenceUpdateMinFreq {
		e.Connected, changed = at, true
	}
	if !creating && active && sinceActive > presenceUpdateMinFreq {
		e.Active, changed = at, true
		e.Connected = max(e.Connected, at)
	}
	if !creating && !changed {
		return presenceNews{Record: e.presenceRecord}, nil
	}
	id, err := t.nextID()
	if err != nil {
		return presenceNews{}, err
	}
	e.UpdateID, e.dirty = id, true
	if creating {
		t.entries[userID] = e
		i, _ := slices.BinarySearch(t.ids, userID)
		t.ids = slices.Insert(t.ids, i, userID)
	}
	return presenceNews{Record: e.presenceRecord, Appeared: creating || becameOnline}, nil
}

// nextID hands out the next update id, first reserving a new block in
// the store when the last is used up; t.mu is held.
func (t *presenceTable) nextID() (uint64, error) {
	if t.seq+1 > t.reserved {
		reserve := t.seq + presenceSeqBlock
		if err := t.db.update(func(tx *bbolt.Tx) error {
			return tx.Bucket(bucketMeta).Put(keyPresenceSeq, itob(reserve))
		}); err != nil {
			return 0, err
		}
		t.reserved = reserve
	}
	t.seq++
	return t.seq, nil
}

// writer writes due records every presenceFlushTick until the store
// stops.
func (t *presenceTable) writer() {
	tick := time.NewTicker(presenceFlushTick)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			t.flush(now, false)
		}
	}
}

// flush writes, in one commit, every changed record not written for
// presenceWriteInterval, or every changed record when all is set (at
// shutdown). A record that changes again meanwhile stays due.
func (t *presenceTable) flush(now time.Time, all bool) error {
	t.flushing.Lock()
	defer t.flushing.Unlock()
	t.mu.Lock()
	due := map[uint64]presenceRecord{}
	for id, e := range t.entries {
		if e.dirty && (all || e.written.IsZero() || now.Sub(e.written) >= presenceWriteInterval) {
			due[id] = e.presenceRecord
		}
	}
	t.mu.Unlock()
	if len(due) == 0 {
		return nil
	}
	err := t.db.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPresence)
		for id, rec := range due {
			if err := b.Put(itob(id), rec.encode()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.mu.Lock()
	for id, rec := range due {
		if e := t.entries[id]; e != nil {
			e.written = now
			e.dirty = e.presenceRecord != rec
		}
	}
	t.mu.Unlock()
	return nil
}

// close writes every changed record before the store closes; a table
// never loaded has nothing to write.
func (t *presenceTable) close() {
	t.mu.Lock()
	loaded := t.entries != nil
	t.mu.Unlock()
	if loaded {
		t.flush(time.Now(), true) // after a stop (errStoreClosed) nothing more can be written
	}
}

// presenceRow is a user's presence as answered: the user's identity and
// the record, a never-set time standing in as the user's joining time,
// as Zulip's user_presence_datetime_with_date_joined_default does.
type presenceRow struct {
	UserID            uint64
	Email             string
	Active, Connected int64
	UpdateID          uint64
}

// presenceQuery selects rows: those connected since Since (unless
// AfterID is set and positive, when every row changed after it counts),
// changed after AfterID when set; NoHistory selects none.
type presenceQuery struct {
	Since     time.Time
	AfterID   *int64
	NoHistory bool
	OnlyUser  uint64 // one user's row, whatever its age; 0: every user's
}

// presences answers the presence rows of active human accounts that the
// query selects, by user id, and the largest update id among them (Zulip's
// presence_last_update_id: -1 when none was asked for and none found,
// the client's own when nothing changed since).
func (s *store) presences(q presenceQuery) ([]presenceRow, int64, error) {
	if err := s.presence.loaded(); err != nil {
		return nil, 0, err
	}
	picked := s.presence.pick(q)
	rows := make([]presenceRow, 0, len(picked))
	lastID := int64(-1)
	if q.AfterID != nil {
		lastID = *q.AfterID
	}
	err := s.view(func(tx *bbolt.Tx) error {
		rows, lastID = rows[:0], -1
		if q.AfterID != nil {
			lastID = *q.AfterID
		}
		// The accounts come from the directory, decoded once per change
		// of any: an answer of every row decoded each row's account,
		// which, with everyone reporting every minute in an
		// organisation of 3,000, was a third of the server's work.
		users, _, _, err := s.directory.of(tx)
		if err != nil {
			return err
		}
		found, i := false, 0
		for _, row := range picked { // both by id: one walk along the accounts
			for i < len(users) && users[i].ID < row.UserID {
				i++
			}
			if i == len(users) || users[i].ID != row.UserID || !users[i].Active || users[i].Bot {
				continue
			}
			u := &users[i]
			row.Email = u.Email
			if row.Active == 0 {
				row.Active = u.Joined
			}
			if row.Connected == 0 {
				row.Connected = u.Joined
			}
			if !found || int64(row.UpdateID) > lastID {
				lastID = int64(row.UpdateID)
			}
			found = true
			rows = append(rows, row)
		}
		return nil
	})
	return rows, lastID, err
}

// pick is the rows the query selects, as the table holds them (by user
// id): without e-mails, and with the times never set.
func (t *presenceTable) pick(q presenceQuery) []presenceRow {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case q.OnlyUser != 0:
		if e := t.entries[q.OnlyUser]; e != nil {
			return []presenceRow{{UserID: q.OnlyUser, Active: e.Active, Connected: e.Connected, UpdateID: e.UpdateID}}
		}
		return nil
	case q.NoHistory:
		return nil
	}
	picked := make([]presenceRow, 0, len(t.ids))
	for _, id := range t.ids {
		e := t.entries[id]
		if q.AfterID != nil && int64(e.UpdateID) <= *q.AfterID {
			continue
		}
		if (q.AfterID == nil || *q.AfterID <= 0) && e.Connected < q.Since.Unix() {
			continue
		}
		picked = append(picked, presenceRow{UserID: id, Active: e.Active, Connected: e.Connected, UpdateID: e.UpdateID})
	}
	return picked
}

// presenceEnabled tells whether the user shares their presence (the
// presence_enabled setting, default true).
func (s *store) presenceEnabled(userID uint64) (bool, error) {
	overrides, err := s.userSettings(userID)
	if err != nil {
		return false, err
	}
	if v, ok := overrides["presence_enabled"]; ok {
		return string(v) != "false", nil
	}
	return true, nil
}
