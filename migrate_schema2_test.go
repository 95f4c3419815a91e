package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// Schema 2 is the layout of zulite from 7986138 until schema 3: schema
// 1's buckets with topic_messages and flags, and, added later with no
// change of schema, passwords, unread_trash (the janitor's sets marked
// read and not yet deleted) and user_settings. Its unread bucket is
// schema 1's: every unread id, per (user, channel), in chunks; its
// subscribers index holds empty values. The fixture writes it with
// bbolt alone, on schema 1's fixture (migrate_test.go).
//
// The fixture was checked against schema 2 itself: replaying
// schema2Sample's operations through the store of the commit before
// schema 3, its clock set to the fixture's, wrote the same buckets,
// keys, values and sequences, byte for byte, but for the API keys, the
// key secret and the unread sets' chunk boundaries, which depend on the
// order of the marks there (the sets hold the same ids), and
// unread_trash, which depends on the janitor's timing.

// schema2File is schema1File with personal flags and the janitor's
// unfinished work.
type schema2File struct {
	schema1File
	flags map[[2]uint64]byte // (user id, message id) → starred 1, collapsed 2
	trash [][]uint64         // sets marked read that the janitor had not deleted yet
}

// buildSchema2 writes f to a new file at path with bbolt alone: schema
// 1's buckets, then schema 2's.
func buildSchema2(t *testing.T, path string, f schema2File) {
	t.Helper()
	buildSchema1(t, path, f.schema1File)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := map[string]*bbolt.Bucket{}
		for _, name := range []string{"topic_messages", "flags", "passwords", "unread_trash", "user_settings"} {
			bucket, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			b[name] = bucket
		}
		if err := tx.Bucket([]byte("meta")).Put([]byte("schema_version"), be64(2)); err != nil {
			return err
		}
		for _, m := range f.messages {
			k := schema1Key(be64(m.ChannelID), []byte(strings.ToLower(m.Topic)), []byte{0}, be64(m.ID))
			if err := b["topic_messages"].Put(k, []byte{}); err != nil {
				return err
			}
		}
		for pair, flags := range f.flags {
			if err := b["flags"].Put(schema1Key(be64(pair[0]), be64(pair[1])), []byte{flags}); err != nil {
				return err
			}
		}
		for _, ids := range f.trash {
			seq, err := b["unread_trash"].NextSequence()
			if err != nil {
				return err
			}
			holder, err := b["unread_trash"].CreateBucket(be64(seq))
			if err != nil {
				return err
			}
			set, err := holder.CreateBucket(schema1Key(be64(1), be64(seq)))
			if err != nil {
				return err
			}
			keys, values := schema1Chunks(ids)
			for i := range keys {
				if err := set.Put(keys[i], values[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("build the schema-2 file: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// schema2Sample is schema1Sample carried on by schema 2's operations:
// messages read out of order and marked unread again, a topic marked
// read, a send left unread for its sender (read_by_sender=false), stars
// and a collapse, a subscription to a channel with history and nothing
// unread, and a set marked read waiting for the janitor. Its unread sets
// are what those operations leave.
func schema2Sample() schema2File {
	f := schema2File{schema1File: schema1Sample(), flags: map[[2]uint64]byte{}}
	subscribedTo := func(userID, channelID uint64) bool { return slices.Contains(f.subscribed[userID], channelID) }
	pair := func(userID, channelID uint64) [2]uint64 { return [2]uint64{userID, channelID} }
	send := func(sender, channelID uint64, topic string, readBySender bool) uint64 {
		id := uint64(len(f.messages) + 1)
		f.messages = append(f.messages, schema1Message{ID: id, SenderID: sender, ChannelID: channelID, Topic: topic,
			Content: "message " + strconv.FormatUint(id, 10), Timestamp: f.users[0].Joined, Client: "test"})
		for userID, channels := range f.subscribed {
			if (userID != sender || !readBySender) && slices.Contains(channels, channelID) {
				f.unread[pair(userID, channelID)] = append(f.unread[pair(userID, channelID)], id)
			}
		}
		return id
	}
	read := func(userID, channelID uint64, ids ...uint64) {
		left := slices.DeleteFunc(f.unread[pair(userID, channelID)], func(id uint64) bool { return slices.Contains(ids, id) })
		if len(left) == 0 {
			delete(f.unread, pair(userID, channelID))
			return
		}
		f.unread[pair(userID, channelID)] = left
	}
	markUnread := func(userID, channelID uint64, ids ...uint64) {
		if subscribedTo(userID, channelID) {
			f.unread[pair(userID, channelID)] = mergeSorted(f.unread[pair(userID, channelID)], ids)
		}
	}
	inChannel := func(channelID uint64, topic string) []uint64 {
		var ids []uint64
		for _, m := range f.messages {
			if m.ChannelID == channelID && (topic == "" || strings.EqualFold(m.Topic, topic)) {
				ids = append(ids, m.ID)
			}
		}
		return ids
	}

	big := inChannel(3, "")
	read(2, 3, big[len(big)-100:]...) // alice reads big's newest 100 first
	markUnread(2, 1, 1)               // and marks general's first message unread again
	bobs := send(3, 1, "lunch", false)
	read(3, 1, inChannel(1, "dinner")...) // bob marks general/dinner read
	for range 3 {
		send(2, 1, "tail", true)
	}
	f.subscribed[1] = append(f.subscribed[1], 3) // the owner joins big: nothing unread
	f.flags[pair(3, 3)] = 1                      // bob stars message 3
	f.flags[pair(3, bobs)] = 1
	f.flags[pair(2, 2)] = 2 // alice collapses message 2
	var trashed []uint64
	for id := uint64(1); id <= 1500; id++ {
		trashed = append(trashed, id)
	}
	f.trash = append(f.trash, trashed)
	return f
}

// TestMigrate_Schema2FileKeepsEveryUnreadAsWatermarks builds a file as
// schema 2 wrote it and opens it with today's openStore: every
// subscription's unread messages must be the same, held by a watermark
// and as few exceptions as the history allows; flags, keys and the topic
// index as they were; the old buckets gone; and the state working for
// sends and marks, then reopened without a second migration.
func TestMigrate_Schema2FileKeepsEveryUnreadAsWatermarks(t *testing.T) {
	f := schema2Sample()
	path := filepath.Join(t.TempDir(), "schema2.db")
	buildSchema2(t, path, f)
	st, err := openStore(path, time.Second)
	if err != nil {
		t.Fatalf("openStore on a schema-2 file: %v", err)
	}
	t.Cleanup(func() {
		st.quiesce()
		checkConsistency(t, st.db)
		if err := st.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	checkConsistency(t, st.db) // nothing writes yet: the check is exact

	var topicKeys, flags []string
	for _, m := range f.messages {
		topicKeys = append(topicKeys, fmt.Sprintf("%x", schema1Key(be64(m.ChannelID), []byte(strings.ToLower(m.Topic)), []byte{0}, be64(m.ID))))
	}
	slices.Sort(topicKeys)
	for pair, v := range f.flags {
		flags = append(flags, fmt.Sprintf("%x=%02x", schema1Key(be64(pair[0]), be64(pair[1])), v))
	}
	slices.Sort(flags)
	checkMigrated(t, st, f.schema1File, topicKeys, flags)
	checkUnreadAsBuilt(t, st, f)

	// Every subscription has a watermark and a start, and the exceptions
	// are no more than the history needs: alice read big's newest 100
	// first, so those are read above her watermark; the bot's unread
	// messages are the channel's tail, so it has none; the owner joined
	// big with nothing unread.
	seq := uint64(len(f.messages))
	mustView(t, st, func(tx *bbolt.Tx) error {
		for userID, channels := range f.subscribed {
			for _, channelID := range channels {
				if _, ok := loadMark(tx, userID, channelID); !ok {
					t.Errorf("user %d in channel %d: no watermark", userID, channelID)
				}
				if v := tx.Bucket(bucketSubscribers).Get(append(itob(channelID), itob(userID)...)); len(v) != 8 || btoi(v) != 0 {
					t.Errorf("user %d in channel %d: subscription start %x, want 0", userID, channelID, v)
				}
			}
		}
		return nil
	})
	big := mustMarkState(t, st, user{ID: 2}, channel{ID: 3})
	if len(big.readAbove) != 100 || len(big.unreadBelow) != 0 {
		t.Errorf("alice in big: got %d read above and %d unread below, want 100 and 0", len(big.readAbove), len(big.unreadBelow))
	}
	if got := mustMarkState(t, st, user{ID: 4}, channel{ID: 1}); len(got.readAbove)+len(got.unreadBelow) != 0 {
		t.Errorf("the bot in general: got %+v, want no exceptions", got)
	}
	if got := mustMarkState(t, st, user{ID: 1}, channel{ID: 3}); fmt.Sprint(got) != fmt.Sprint(markState{subscribed: true, watermark: seq}) {
		t.Errorf("the owner in big: got %+v, want watermark %d and no exceptions", got, seq)
	}

	// Through the API: each message's flags say read exactly when it is
	// not unread, and keep star and collapse.
	s := newServer(st, discardLogger(), "http://zulite.test", "zulite")
	e := &testEnv{st: st, server: s, handler: s.routes()}
	alice := &account{user{ID: 2, Email: "alice@example.com"}, f.keys[2]}
	bob := &account{user{ID: 3, Email: "bob@example.com"}, f.keys[3]}
	for _, a := range []*account{alice, bob} {
		for _, channelID := range f.subscribed[a.ID] {
			r := e.request(t, http.MethodGet, "/api/v1/messages", rangeParams("oldest", 0, 5000, narrowOf([]string{"channel", f.channels[channelID-1].Name})), a)
			wantAPISuccess(t, r)
			got, want := map[uint64]string{}, map[uint64]string{}
			for _, m := range r.body["messages"].([]any) {
				m := m.(map[string]any)
				got[uint64(m["id"].(float64))] = strings.Join(toStrings(m["flags"]), ",")
			}
			for _, m := range f.messages {
				if m.ChannelID != channelID {
					continue
				}
				var flags []string
				if !slices.Contains(f.unread[[2]uint64{a.ID, channelID}], m.ID) {
					flags = append(flags, "read")
				}
				if f.flags[[2]uint64{a.ID, m.ID}]&1 != 0 {
					flags = append(flags, "starred")
				}
				if f.flags[[2]uint64{a.ID, m.ID}]&2 != 0 {
					flags = append(flags, "collapsed")
				}
				want[m.ID] = strings.Join(flags, ",")
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("user %d's flags in channel %d: got %d messages, want %d, or flags differ", a.ID, channelID, len(got), len(want))
			}
		}
	}

	// New writes: a send is unread for alice above her state; marking big
	// read drops her exceptions.
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"after"}, "content": {"x"}}, bob)
	wantAPISuccess(t, r)
	next := seq + 1
	f.unread[[2]uint64{2, 1}] = append(f.unread[[2]uint64{2, 1}], next)
	f.unread[[2]uint64{4, 1}] = append(f.unread[[2]uint64{4, 1}], next)
	f.unread[[2]uint64{5, 1}] = append(f.unread[[2]uint64{5, 1}], next)
	f.messages = append(f.messages, schema1Message{ID: next, SenderID: 3, ChannelID: 1, Topic: "after"})
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {"3"}}, alice))
	delete(f.unread, [2]uint64{2, 3})
	if got := mustMarkState(t, st, alice.user, channel{ID: 3}); fmt.Sprint(got) != fmt.Sprint(markState{subscribed: true, watermark: next}) {
		t.Errorf("alice in big after marking it read: got %+v, want watermark %d and no exceptions", got, next)
	}
	checkUnreadAsBuilt(t, st, f)

	// Reopened, the file is not migrated again: the state stays as it is.
	before := mustMarkState(t, st, user{ID: 5}, channel{ID: 1})
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	if st, err = openStore(path, time.Second); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if got := mustMarkState(t, st, user{ID: 5}, channel{ID: 1}); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("carol's state after reopening: got %+v, want %+v", got, before)
	}
	checkUnreadAsBuilt(t, st, f)
}

// checkUnreadAsBuilt checks every subscription's unread messages, one by
// one and as register's summary groups them, against the fixture's.
func checkUnreadAsBuilt(t *testing.T, st *store, f schema2File) {
	t.Helper()
	for _, u := range f.users {
		want := map[string]int{}
		for _, channelID := range f.subscribed[u.ID] {
			ids := f.unread[[2]uint64{u.ID, channelID}]
			if got := mustUnread(t, st, user{ID: u.ID}, channel{ID: channelID}); !slices.Equal(got, ids) {
				t.Errorf("user %d's unread in channel %d: got %d ids %v, want %d %v", u.ID, channelID, len(got), abbreviate(got), len(ids), abbreviate(ids))
			}
			for _, id := range ids {
				want[fmt.Sprint(channelID, "/", f.messages[id-1].Topic)]++
			}
		}
		summary, err := st.unreadSummary(u.ID, 10_000)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, topic := range summary.Topics {
			got[fmt.Sprint(topic.ChannelID, "/", topic.Topic)] += len(topic.IDs)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("user %d's unread counts by topic: got %v, want %v", u.ID, got, want)
		}
	}
}

// A schema-2 file the migration cannot convert (a damaged unread chunk)
// is left as it was: the migration is one transaction.
func TestMigrate_Schema2FileThatFailsIsLeftAsItWas(t *testing.T) {
	f := schema2Sample()
	path := filepath.Join(t.TempDir(), "schema2.db")
	buildSchema2(t, path, f)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	damage := func(tx *bbolt.Tx) error {
		set := tx.Bucket([]byte("unread")).Bucket(schema1Key(be64(5), be64(1)))
		k, _ := set.Cursor().Last()
		return set.Put(slices.Clone(k), binary.BigEndian.AppendUint32(nil, 1_000_000)) // a count, and nothing after it
	}
	if err := db.Update(damage); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if st, err := openStore(path, time.Second); err == nil {
		st.close()
		t.Fatal("openStore on a damaged schema-2 file: got no error")
	}
	db, err = bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("schema_version")); !bytes.Equal(v, be64(2)) {
			t.Errorf("schema version after a failed migration: got %x, want 2", v)
		}
		for _, name := range []string{"unread", "unread_trash"} {
			if tx.Bucket([]byte(name)) == nil {
				t.Errorf("bucket %s: gone after a failed migration", name)
			}
		}
		for _, name := range []string{"watermarks", "unread_below", "read_above"} {
			if tx.Bucket([]byte(name)) != nil {
				t.Errorf("bucket %s: made by a failed migration", name)
			}
		}
		return nil
	})
}
