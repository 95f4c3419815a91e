package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
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
	"golang.org/x/crypto/blake2b"
)

// Schema 1 is the layout of zulite from its first commit (c755364) until
// schema 2 (7986138): twelve buckets, without topic_messages and flags,
// which schema 2 added, and without passwords and unread_trash, which came
// later as new, empty buckets with no change of schema. The record types
// below are schema 1's, frozen here, so that a change to today's types
// cannot carry the fixture along with it.
//
// The fixture was checked against schema 1 itself: replaying
// schema1Sample's operations through the store of 7986138^ wrote the same
// buckets, keys, values and sequences, byte for byte, but for the API key
// hashes and the key secret, which are random there.

type schema1User struct {
	ID       uint64 `json:"id"`
	Email    string `json:"email"`
	FullName string `json:"full_name"`
	Role     int    `json:"role"`
	Bot      bool   `json:"bot,omitempty"`
	Active   bool   `json:"active"`
	Joined   int64  `json:"joined"`
}

type schema1Channel struct {
	ID          uint64 `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Private     bool   `json:"private,omitempty"`
	Created     int64  `json:"created"`
	CreatorID   uint64 `json:"creator_id,omitempty"`
}

type schema1Subscription struct {
	Color  string `json:"color"`
	Joined int64  `json:"joined"`
}

type schema1Message struct {
	ID        uint64 `json:"id"`
	SenderID  uint64 `json:"sender_id"`
	ChannelID uint64 `json:"channel_id"`
	Topic     string `json:"topic"`
	Content   string `json:"content"`
	Timestamp int64  `json:"timestamp"`
	Client    string `json:"client,omitempty"`
}

type schema1PushToken struct {
	Kind    byte   `json:"kind"` // 'a' APNs, 'g' FCM
	Token   string `json:"token"`
	AppID   string `json:"appid,omitempty"`
	Created int64  `json:"created"`
}

// schema1File is what the fixture writes: the accounts, channels,
// subscriptions and messages, and each subscription's unread ids.
type schema1File struct {
	secret     []byte
	users      []schema1User
	keys       map[uint64]string // user id → API key
	channels   []schema1Channel
	subscribed map[uint64][]uint64 // user id → channel ids
	messages   []schema1Message
	unread     map[[2]uint64][]uint64 // (user id, channel id) → unread ids, sorted
	tokens     map[uint64][]schema1PushToken
}

// schema1Color is schema 1's channelColor: a subscription's color.
func schema1Color(channelID uint64) string {
	palette := []string{"#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5", "#f5ce6e", "#c2726a"}
	return palette[channelID%uint64(len(palette))]
}

// be64 and schema1Key write keys as schema 1 did: big-endian ids, joined.
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func schema1Key(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// schema1Chunks cuts sorted ids into schema 1's unread chunks as its
// sends left them, each appending to the last chunk until it held 1000:
// keyed by the first id, valued count (uint32) ‖ last id (uint64) ‖
// uvarint deltas, the first delta taken from the key.
func schema1Chunks(ids []uint64) (keys, values [][]byte) {
	for len(ids) > 0 {
		chunk := ids[:min(1000, len(ids))]
		ids = ids[len(chunk):]
		v := binary.BigEndian.AppendUint32(nil, uint32(len(chunk)))
		v = binary.BigEndian.AppendUint64(v, chunk[len(chunk)-1])
		prev := chunk[0]
		for _, id := range chunk {
			v = binary.AppendUvarint(v, id-prev)
			prev = id
		}
		keys, values = append(keys, be64(chunk[0])), append(values, v)
	}
	return keys, values
}

// buildSchema1 writes f to a new file at path with bbolt alone, bucket by
// bucket as schema 1 laid them out.
func buildSchema1(t *testing.T, path string, f schema1File) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := map[string]*bbolt.Bucket{}
		for _, name := range []string{"meta", "users", "user_emails", "api_keys", "push_tokens", "channels",
			"channel_names", "subscriptions", "subscribers", "messages", "channel_messages", "unread"} {
			bucket, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			b[name] = bucket
		}
		put := func(bucket string, k []byte, v any) error {
			data, ok := v.([]byte)
			if !ok {
				var err error
				if data, err = json.Marshal(v); err != nil {
					return err
				}
			}
			return b[bucket].Put(k, data)
		}
		check := func(errs ...error) error {
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
			return nil
		}
		if err := check(put("meta", []byte("schema_version"), be64(1)), put("meta", []byte("key_secret"), f.secret)); err != nil {
			return err
		}
		for _, u := range f.users {
			h, err := blake2b.New256(f.secret)
			if err != nil {
				return err
			}
			h.Write([]byte(f.keys[u.ID]))
			if err := check(
				put("users", be64(u.ID), u),
				put("user_emails", []byte(strings.ToLower(u.Email)), be64(u.ID)),
				put("api_keys", schema1Key(be64(u.ID), h.Sum(nil)), be64(uint64(u.Joined))),
			); err != nil {
				return err
			}
			for _, tok := range f.tokens[u.ID] {
				tokenKey := tok.Token
				if tok.Kind == 'a' {
					tokenKey = strings.ToLower(tokenKey)
				}
				if err := put("push_tokens", schema1Key(be64(u.ID), []byte{tok.Kind}, []byte(tokenKey)), tok); err != nil {
					return err
				}
			}
			for _, channelID := range f.subscribed[u.ID] {
				sub := schema1Subscription{Color: schema1Color(channelID), Joined: u.Joined}
				if err := check(
					put("subscriptions", schema1Key(be64(u.ID), be64(channelID)), sub),
					put("subscribers", schema1Key(be64(channelID), be64(u.ID)), []byte{}),
				); err != nil {
					return err
				}
			}
		}
		for _, ch := range f.channels {
			if err := check(put("channels", be64(ch.ID), ch), put("channel_names", []byte(strings.ToLower(ch.Name)), be64(ch.ID))); err != nil {
				return err
			}
		}
		for _, m := range f.messages {
			if err := check(put("messages", be64(m.ID), m), put("channel_messages", schema1Key(be64(m.ChannelID), be64(m.ID)), []byte{})); err != nil {
				return err
			}
		}
		for pair, ids := range f.unread {
			set, err := b["unread"].CreateBucket(schema1Key(be64(pair[0]), be64(pair[1])))
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
		// Ids came from each bucket's NextSequence.
		return check(b["users"].SetSequence(uint64(len(f.users))), b["channels"].SetSequence(uint64(len(f.channels))),
			b["messages"].SetSequence(uint64(len(f.messages))))
	})
	if err != nil {
		t.Fatalf("build the schema-1 file: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// schema1Sample is a file that schema 1's operations could have left:
// its unread sets come from replaying them (a send makes a message unread
// for every other subscriber; marking a channel read empties the set;
// a subscription sees only later messages). It has a deactivated account,
// a bot, a private channel, one topic spelt four ways, a set emptied and
// begun again, and a channel of 2500 messages, one of another channel's
// among them, whose unread set spans three chunks.
func schema1Sample() schema1File {
	const joined = 1_700_000_000
	f := schema1File{
		secret: bytes.Repeat([]byte{0x5a}, 32),
		users: []schema1User{
			{ID: 1, Email: "owner@zulite.localhost", FullName: "Owner", Role: roleOwner, Active: true, Joined: joined},
			{ID: 2, Email: "Alice@Example.com", FullName: "Alice", Role: roleMember, Active: true, Joined: joined},
			{ID: 3, Email: "bob@example.com", FullName: "Bob", Role: roleMember, Active: true, Joined: joined},
			{ID: 4, Email: "bot@example.com", FullName: "Bot", Role: roleMember, Bot: true, Active: true, Joined: joined},
			{ID: 5, Email: "carol@example.com", FullName: "Carol", Role: roleMember, Active: false, Joined: joined},
		},
		keys: map[uint64]string{},
		channels: []schema1Channel{
			{ID: 1, Name: "general", Description: "talk", Created: joined},
			{ID: 2, Name: "Secret", Private: true, Created: joined, CreatorID: 2},
			{ID: 3, Name: "big", Created: joined, CreatorID: 3},
		},
		subscribed: map[uint64][]uint64{},
		unread:     map[[2]uint64][]uint64{},
		tokens: map[uint64][]schema1PushToken{
			2: {{Kind: 'a', Token: "AABB", AppID: "org.zulip.Zulip", Created: joined}, {Kind: 'g', Token: "Fcm-Token", Created: joined}},
			3: {{Kind: 'a', Token: "aabb", AppID: "org.zulip.Zulip", Created: joined}},
		},
	}
	for _, u := range f.users {
		f.keys[u.ID] = strings.Repeat(string(rune('A'+u.ID)), 31) + "0"
	}
	subscribe := func(userID, channelID uint64) { f.subscribed[userID] = append(f.subscribed[userID], channelID) }
	send := func(sender, channelID uint64, topic string) {
		id := uint64(len(f.messages) + 1)
		f.messages = append(f.messages, schema1Message{ID: id, SenderID: sender, ChannelID: channelID, Topic: topic,
			Content: "message " + strconv.FormatUint(id, 10), Timestamp: joined, Client: "test"})
		for userID, channels := range f.subscribed {
			if userID != sender && slices.Contains(channels, channelID) {
				f.unread[[2]uint64{userID, channelID}] = append(f.unread[[2]uint64{userID, channelID}], id)
			}
		}
	}
	markRead := func(userID, channelID uint64) { delete(f.unread, [2]uint64{userID, channelID}) }

	subscribe(2, 1)
	subscribe(2, 2)
	subscribe(2, 3)
	subscribe(3, 1)
	subscribe(3, 3)
	subscribe(4, 1)
	send(3, 1, "Lunch") // 1
	send(2, 1, "lunch") // 2
	send(3, 1, "dinner")
	markRead(2, 1)
	subscribe(5, 1)
	send(4, 1, "LUNCH") // 4
	send(5, 1, "dinner")
	send(2, 2, "plans")
	send(2, 2, "Plans")
	send(3, 1, "lunch") // 8
	for i := range 2500 {
		if i == 1500 {
			send(5, 1, "late")
		}
		send(3, 3, "flood "+strconv.Itoa(i%5))
	}
	markRead(4, 1)
	send(2, 1, "lUnCh")
	return f
}

// TestMigrate_Schema1FileOpensWithEveryUnreadTopicAndFlag builds a file
// as schema 1 wrote it and opens it with today's openStore: it must come
// out at today's schema (through 2) with every unread set, key and token as they were, the
// topic index built for every message and nothing else, no personal flags,
// a file bbolt finds consistent, and topic marking, flags and sends
// working on it.
func TestMigrate_Schema1FileOpensWithEveryUnreadTopicAndFlag(t *testing.T) {
	f := schema1Sample()
	path := filepath.Join(t.TempDir(), "schema1.db")
	buildSchema1(t, path, f)
	st, err := openStore(path, time.Second)
	if err != nil {
		t.Fatalf("openStore on a schema-1 file: %v", err)
	}
	t.Cleanup(func() {
		st.quiesce()
		checkConsistency(t, st.db)
		if err := st.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	checkConsistency(t, st.db) // nothing writes yet: the check is exact

	wantTopicKeys := func(messages []schema1Message) []string {
		var keys []string
		for _, m := range messages {
			keys = append(keys, hex.EncodeToString(schema1Key(be64(m.ChannelID), []byte(strings.ToLower(m.Topic)), []byte{0}, be64(m.ID))))
		}
		slices.Sort(keys)
		return keys
	}
	checkMigrated(t, st, f, wantTopicKeys(f.messages), nil)

	// Unread sets, subscription by subscription and topic by topic.
	unread := f.unread
	for _, u := range f.users {
		want := map[string]int{}
		for _, ch := range f.channels {
			ids := unread[[2]uint64{u.ID, ch.ID}]
			if got := mustUnread(t, st, user{ID: u.ID}, channel{ID: ch.ID}); !slices.Equal(got, ids) {
				t.Errorf("user %d's unread in %s: got %d ids %v, want %d", u.ID, ch.Name, len(got), abbreviate(got), len(ids))
			}
			for _, id := range ids {
				want[fmt.Sprint(ch.ID, "/", f.messages[id-1].Topic)]++
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

	// Through the API: keys still log in, and each message's flags say
	// read exactly when it is not unread.
	s := newServer(st, discardLogger(), "http://zulite.test", "zulite")
	e := &testEnv{st: st, server: s, handler: s.routes()}
	alice := &account{user{ID: 2, Email: "alice@example.com"}, f.keys[2]}
	bob := &account{user{ID: 3, Email: "BOB@example.com"}, f.keys[3]}
	for _, a := range []*account{alice, bob} {
		for _, ch := range f.channels {
			if !slices.Contains(f.subscribed[a.ID], ch.ID) {
				continue
			}
			r := e.request(t, http.MethodGet, "/api/v1/messages", rangeParams("oldest", 0, 5000, narrowOf([]string{"channel", ch.Name})), a)
			wantAPISuccess(t, r)
			got := map[uint64]string{}
			for _, m := range r.body["messages"].([]any) {
				m := m.(map[string]any)
				got[uint64(m["id"].(float64))] = strings.Join(toStrings(m["flags"]), ",")
			}
			want := map[uint64]string{}
			for _, m := range f.messages {
				if m.ChannelID == ch.ID {
					want[m.ID] = "read"
					if slices.Contains(unread[[2]uint64{a.ID, ch.ID}], m.ID) {
						want[m.ID] = ""
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("user %d's flags in %s: got %d messages, want %d, or flags differ", a.ID, ch.Name, len(got), len(want))
			}
		}
	}

	// The topic index serves a topic narrow and mark_topic_as_read, whatever
	// the topic's case.
	var lunch []uint64 // general's messages in topic lunch, however spelt
	for _, m := range f.messages {
		if m.ChannelID == 1 && strings.EqualFold(m.Topic, "lunch") {
			lunch = append(lunch, m.ID)
		}
	}
	aliceLeft := slices.DeleteFunc(slices.Clone(unread[[2]uint64{2, 1}]), func(id uint64) bool { return slices.Contains(lunch, id) })
	if len(aliceLeft) == 0 || len(aliceLeft) == len(unread[[2]uint64{2, 1}]) {
		t.Fatalf("fixture: alice's unread in general %v must hold lunch messages and others", unread[[2]uint64{2, 1}])
	}
	if _, ids := e.page(t, alice, rangeParams("oldest", 0, 100, narrowOf([]string{"channel", "general"}, []string{"topic", "lunch"}))); !slices.Equal(ids, lunch) {
		t.Errorf("topic narrow lunch: got %v, want %v", ids, lunch)
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/mark_topic_as_read", url.Values{"stream_id": {"1"}, "topic_name": {"LUNCH"}}, alice))
	if got := mustUnread(t, st, alice.user, channel{ID: 1}); !slices.Equal(got, aliceLeft) {
		t.Errorf("alice's unread in general after marking lunch read: got %v, want %v", got, aliceLeft)
	}
	if got := mustUnread(t, st, bob.user, channel{ID: 1}); !slices.Equal(got, unread[[2]uint64{3, 1}]) {
		t.Errorf("bob's unread in general after alice marked lunch read: got %v, want %v", got, unread[[2]uint64{3, 1}])
	}
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/mark_topic_as_read", url.Values{"stream_id": {"1"}, "topic_name": {"breakfast"}}, alice),
		400, "BAD_REQUEST", "No such topic 'breakfast'")

	// New writes: a send takes the next id and is indexed and unread; a
	// star is stored.
	r := e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"Lunch"}, "content": {"after"}}, bob)
	wantAPISuccess(t, r)
	next := uint64(len(f.messages) + 1)
	if r.body["id"] != float64(next) {
		t.Errorf("first send after the migration: got id %v, want %d", r.body["id"], next)
	}
	if got, want := mustUnread(t, st, alice.user, channel{ID: 1}), append(aliceLeft, next); !slices.Equal(got, want) {
		t.Errorf("alice's unread in general after bob's send: got %v, want %v", got, want)
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {"[3]"}, "op": {"add"}, "flag": {"starred"}}, alice))
	if got := e.starred(t, *alice); !slices.Equal(got, []uint64{3}) {
		t.Errorf("alice's starred messages: got %v, want [3]", got)
	}

	// Reopened, the file is at today's schema and is not indexed again.
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	if st, err = openStore(path, time.Second); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	all := append(slices.Clone(f.messages), schema1Message{ID: next, ChannelID: 1, Topic: "Lunch"})
	checkMigrated(t, st, f, wantTopicKeys(all), []string{hex.EncodeToString(schema1Key(be64(2), be64(3))) + "=01"})
}

// checkMigrated checks what opening an older file must leave: today's
// schema, the same key secret, accounts and tokens, the new buckets and
// not the retired ones, exactly the given topic index, and exactly the
// given personal flags (key=value, in hex).
func checkMigrated(t *testing.T, st *store, f schema1File, topicKeys, flags []string) {
	t.Helper()
	mustView(t, st, func(tx *bbolt.Tx) error {
		meta := tx.Bucket([]byte("meta"))
		if got := binary.BigEndian.Uint64(meta.Get([]byte("schema_version"))); got != 4 {
			t.Errorf("schema version: got %d, want 4", got)
		}
		if !bytes.Equal(meta.Get([]byte("key_secret")), f.secret) {
			t.Errorf("key secret: changed by the migration")
		}
		for _, name := range []string{"topic_messages", "flags", "passwords", "user_settings", "watermarks", "unread_below", "read_above"} {
			if tx.Bucket([]byte(name)) == nil {
				t.Errorf("bucket %s: missing", name)
			}
		}
		for _, name := range []string{"unread", "unread_trash"} {
			if tx.Bucket([]byte(name)) != nil {
				t.Errorf("bucket %s: still there", name)
			}
		}
		var got []string
		err := tx.Bucket([]byte("topic_messages")).ForEach(func(k, v []byte) error {
			got = append(got, hex.EncodeToString(k))
			if len(v) != 0 {
				t.Errorf("topic index entry %x: value %x, want empty", k, v)
			}
			return nil
		})
		if !slices.Equal(got, topicKeys) {
			t.Errorf("topic index: got %d keys, want %d, or they differ", len(got), len(topicKeys))
		}
		if err != nil {
			return err
		}
		var gotFlags []string
		err = tx.Bucket([]byte("flags")).ForEach(func(k, v []byte) error {
			gotFlags = append(gotFlags, hex.EncodeToString(k)+"="+hex.EncodeToString(v))
			return nil
		})
		if !slices.Equal(gotFlags, flags) {
			t.Errorf("flags: got %v, want %v", gotFlags, flags)
		}
		if n := tx.Bucket([]byte("passwords")).Stats().KeyN; n != 0 {
			t.Errorf("passwords: got %d, want none", n)
		}
		return err
	})
	for _, u := range f.users {
		got, err := st.userByEmail(strings.ToUpper(u.Email))
		if err != nil || got.ID != u.ID || got.Active != u.Active || got.Bot != u.Bot || got.Role != u.Role {
			t.Errorf("user %s: got %+v, %v", u.Email, got, err)
		}
		if _, err := st.keys.authenticate(u.Email, f.keys[u.ID]); err != nil {
			t.Errorf("user %s's schema-1 key: %v", u.Email, err)
		}
		var want []string
		for _, tok := range f.tokens[u.ID] {
			want = append(want, fmt.Sprint(tok.Kind, tok.Token, tok.AppID, tok.Created))
		}
		var tokens []string
		for _, tok := range mustPushTokens(t, st, u.ID) {
			tokens = append(tokens, fmt.Sprint(byte(tok.Kind), tok.Token, tok.AppID, tok.Created))
		}
		if !slices.Equal(tokens, want) {
			t.Errorf("user %s's push tokens: got %v, want %v", u.Email, tokens, want)
		}
	}
}

// abbreviate shows at most the first ten of ids.
func abbreviate(ids []uint64) string {
	if len(ids) > 10 {
		return fmt.Sprint(ids[:10]) + "..."
	}
	return fmt.Sprint(ids)
}
