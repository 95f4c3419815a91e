package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// BenchmarkAuthenticate is the check every API request pays: parse the
// Basic header, hash the key, compare with the account's keys.
func BenchmarkAuthenticate(b *testing.B) {
	e := newBenchEnv(b)
	req := httptest.NewRequest(http.MethodGet, "/api/v1/users/me", nil)
	req.SetBasicAuth(e.alice.Email, e.alice.key)
	for b.Loop() {
		if _, err := e.server.authenticate(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRemoveAPNsToken is the first seed operation through the whole
// handler, commit and disk sync included.
func BenchmarkRemoveAPNsToken(b *testing.B) {
	e := newBenchEnv(b)
	i := 0
	for b.Loop() {
		b.StopTimer()
		token := fmt.Sprintf("%064x", i)
		i++
		if err := e.st.addPushToken(e.alice.ID, pushToken{Kind: pushAPNs, Token: token}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		e.serve(b, http.MethodDelete, "/api/v1/users/me/apns_device_token", "token="+token)
	}
}

// BenchmarkMarkStreamAsRead is the second seed operation through the whole
// handler, with 1 to 1,000,000 unread messages in the channel, as sends
// leave them (above the reader's watermark), and with 1,000,000 marked
// unread one by one below it (exceptions=1000000).
//
//	go test -run XXX -bench MarkStreamAsRead
func BenchmarkMarkStreamAsRead(b *testing.B) {
	for _, n := range []int{1, 1_000, 100_000, 1_000_000} {
		b.Run("unread="+strconv.Itoa(n), func(b *testing.B) {
			e := newBenchEnv(b)
			seedIndex(b, e.st, e.general, n, 1)
			body := "stream_id=" + strconv.FormatUint(e.general.ID, 10)
			for b.Loop() {
				b.StopTimer()
				mustUpdate(b, e.st, func(tx *bbolt.Tx) error { return rewindUnread(tx, e.alice.ID, e.general.ID, 0, nil) })
				b.StartTimer()
				e.serve(b, http.MethodPost, "/api/v1/mark_stream_as_read", body)
			}
		})
	}
	b.Run("exceptions=1000000", func(b *testing.B) {
		e := newBenchEnv(b)
		n := 1_000_000
		seedIndex(b, e.st, e.general, 2*n, 1)
		odd := make([]uint64, n)
		for i := range odd {
			odd[i] = uint64(2*i + 1)
		}
		body := "stream_id=" + strconv.FormatUint(e.general.ID, 10)
		for b.Loop() {
			b.StopTimer()
			mustUpdate(b, e.st, func(tx *bbolt.Tx) error { return rewindUnread(tx, e.alice.ID, e.general.ID, uint64(2*n), odd) })
			b.StartTimer()
			e.serve(b, http.MethodPost, "/api/v1/mark_stream_as_read", body)
		}
	})
}

// seedIndex puts n message ids into the channel's index, from first on,
// straight into the bucket, without the messages themselves: what marking
// read and listing ids walk, and no more.
func seedIndex(t testing.TB, st *store, ch channel, n int, first uint64) {
	t.Helper()
	const perTx = 500_000
	for start := 0; start < n; start += perTx {
		mustUpdate(t, st, func(tx *bbolt.Tx) error {
			index := tx.Bucket(bucketChannelMessages)
			index.FillPercent = 1.0 // ids only grow
			for i := start; i < min(n, start+perTx); i++ {
				if err := index.Put(append(itob(ch.ID), itob(first+uint64(i))...), nil); err != nil {
					return err
				}
			}
			messages := tx.Bucket(bucketMessages)
			return messages.SetSequence(max(messages.Sequence(), first+uint64(min(n, start+perTx))-1))
		})
	}
}

// rewindUnread makes the user's unread state in the channel what it was
// before they read anything: every message above watermark unread, and
// of those at or below it, the ids unread (sorted), as if marked unread
// one by one.
func rewindUnread(tx *bbolt.Tx, userID, channelID, watermark uint64, unread []uint64) error {
	key := unreadKey(userID, channelID)
	if err := dropSet(tx.Bucket(bucketUnreadBelow), key); err != nil {
		return err
	}
	if err := dropSet(tx.Bucket(bucketReadAbove), key); err != nil {
		return err
	}
	if err := tx.Bucket(bucketWatermarks).Put(key, itob(watermark)); err != nil {
		return err
	}
	return addToSet(tx.Bucket(bucketUnreadBelow), key, unread)
}

type benchEnv struct {
	st      *store
	server  *server
	handler http.Handler
	alice   account
	general channel
}

func newBenchEnv(b *testing.B) *benchEnv {
	st := mustOpenStore(b)
	s := newServer(st, discardLogger(), "http://zulite.test", "zulite")
	u, key := mustCreateUser(b, st, "alice@example.com", roleMember, false)
	general := mustCreateChannel(b, st, "general", false)
	mustSubscribe(b, st, u, "general")
	return &benchEnv{st: st, server: s, handler: s.routes(), alice: account{u, key}, general: general}
}

func (e *benchEnv) serve(b *testing.B, method, path, body string) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(e.alice.Email, e.alice.key)
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("%s %s: got %d %s, want 200", method, path, rec.Code, rec.Body)
	}
}

// seedChannel stores n messages from sender in the channel, cycling
// through the given number of topics, straight into the buckets (sending
// a million messages through the API would only slow the benchmark).
// Every message is unread for reader, subscribed before them.
func seedChannel(b testing.TB, st *store, sender, reader user, ch channel, n, topics int) {
	b.Helper()
	const perTx = 100_000
	for start := 0; start < n; start += perTx {
		err := st.db.Update(func(tx *bbolt.Tx) error {
			messages := tx.Bucket(bucketMessages)
			messages.FillPercent = 1.0 // ids only grow
			for i := start; i < min(n, start+perTx); i++ {
				id, err := messages.NextSequence()
				if err != nil {
					return err
				}
				m := message{ID: id, SenderID: sender.ID, ChannelID: ch.ID, Topic: "topic " + strconv.Itoa(i%topics), Content: "hello", Timestamp: 1}
				if err := putJSON(messages, itob(id), m); err != nil {
					return err
				}
				if err := indexMessage(tx, m); err != nil {
					return err
				}
			}
			if m, ok := loadMark(tx, reader.ID, ch.ID); !ok || m.watermark >= uint64(start+1) {
				return fmt.Errorf("seedChannel: %s is not subscribed to %s from before the messages", reader.Email, ch.Name)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// reportPages adds the pages each operation wrote to the benchmark.
func reportPages(b *testing.B, st *store, before bbolt.Stats) {
	after := st.db.Stats()
	b.ReportMetric(float64(after.TxStats.GetPageCount()-before.TxStats.GetPageCount())/float64(b.N), "pages/op")
}

// BenchmarkGetMessages_PageFromMillionMessageChannel reads the newest 100
// messages of a channel that holds 1,000,000.
func BenchmarkGetMessages_PageFromMillionMessageChannel(b *testing.B) {
	e := newBenchEnv(b)
	seedChannel(b, e.st, e.alice.user, e.alice.user, e.general, 1_000_000, 1000)
	narrow := url.QueryEscape(`[{"operator":"channel","operand":"general"}]`)
	path := "/api/v1/messages?anchor=newest&num_before=100&num_after=0&narrow=" + narrow
	for b.Loop() {
		e.serve(b, http.MethodGet, path, "")
	}
}

// BenchmarkUpdateFlagsForNarrow_5000 marks 5000 messages of a channel
// read in one narrow update.
func BenchmarkUpdateFlagsForNarrow_5000(b *testing.B) {
	e := newBenchEnv(b)
	seedChannel(b, e.st, e.alice.user, e.alice.user, e.general, 20_000, 10)
	body := "anchor=oldest&num_before=0&num_after=5000&op=add&flag=read&narrow=" + url.QueryEscape(`[["channel","general"],["is","unread"]]`)
	before := e.st.db.Stats()
	for b.Loop() {
		b.StopTimer()
		mustUpdate(b, e.st, func(tx *bbolt.Tx) error { return rewindUnread(tx, e.alice.ID, e.general.ID, 0, nil) })
		b.StartTimer()
		e.serve(b, http.MethodPost, "/api/v1/messages/flags/narrow", body)
	}
	reportPages(b, e.st, before)
}

// BenchmarkMarkTopicAsRead_MillionUnreadThousandTopics marks one topic
// (1000 messages) read in a channel with 1,000,000 unread messages
// spread over 1000 topics.
func BenchmarkMarkTopicAsRead_MillionUnreadThousandTopics(b *testing.B) {
	e := newBenchEnv(b)
	seedChannel(b, e.st, e.alice.user, e.alice.user, e.general, 1_000_000, 1000)
	i := 0
	for b.Loop() {
		body := "stream_id=" + strconv.FormatUint(e.general.ID, 10) + "&topic_name=" + url.QueryEscape("topic "+strconv.Itoa(i%1000))
		i++
		e.serve(b, http.MethodPost, "/api/v1/mark_topic_as_read", body)
	}
}

// BenchmarkReadingAtScale reads pages of a channel with 1,000,000
// messages over 1000 topics, all unread, each way a client asks for them;
// every page must cost about what it returns, not what the channel holds.
func BenchmarkReadingAtScale(b *testing.B) {
	e := newBenchEnv(b)
	seedChannel(b, e.st, e.alice.user, e.alice.user, e.general, 1_000_000, 1000)
	narrow := func(terms string) string { return url.QueryEscape(terms) }
	for _, c := range []struct{ name, query string }{
		{"channel_newest_100", "anchor=newest&num_before=100&num_after=0&narrow=" + narrow(`[["channel","general"]]`)},
		{"topic_newest_100", "anchor=newest&num_before=100&num_after=0&narrow=" + narrow(`[["channel","general"],["topic","topic 7"]]`)},
		{"unread_newest_100", "anchor=newest&num_before=100&num_after=0&narrow=" + narrow(`[["channel","general"],["is","unread"]]`)},
		{"all_unread_first_100", "anchor=first_unread&num_before=0&num_after=100&narrow=" + narrow(`[["is","unread"]]`)},
		{"topic_first_unread_100", "anchor=first_unread&num_before=0&num_after=100&narrow=" + narrow(`[["channel","general"],["topic","topic 999"]]`)},
		{"all_messages_newest_100", "anchor=newest&num_before=100&num_after=0&narrow=[]"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				e.serve(b, http.MethodGet, "/api/v1/messages?"+c.query, "")
			}
		})
	}
	b.Run("register_unread_msgs", func(b *testing.B) { // the newest 50,000 of 1,000,000, by topic
		for b.Loop() {
			sum, err := e.st.unreadSummary(e.alice.ID, maxUnreadMessages)
			if err != nil || !sum.Truncated {
				b.Fatalf("unreadSummary: %v, truncated %v", err, sum.Truncated)
			}
		}
	})
	b.Run("mark_one_old_message_unread", func(b *testing.B) {
		e.serve(b, http.MethodPost, "/api/v1/messages/flags", "op=add&flag=read&messages=[5]")
		before := e.st.db.Stats()
		add := true
		for b.Loop() {
			op := map[bool]string{true: "remove", false: "add"}[add]
			add = !add
			e.serve(b, http.MethodPost, "/api/v1/messages/flags", "op="+op+"&flag=read&messages=[5]")
		}
		reportPages(b, e.st, before)
	})
}

// BenchmarkOwnUser is an authenticated read through the whole handler,
// the request path the load benchmark's GET users/me exercises.
func BenchmarkOwnUser(b *testing.B) {
	e := newBenchEnv(b)
	b.ReportAllocs()
	for b.Loop() {
		e.serve(b, http.MethodGet, "/api/v1/users/me", "")
	}
}

// BenchmarkRejectedToken is a request refused by validation (not hex),
// with no storage write.
func BenchmarkRejectedToken(b *testing.B) {
	e := newBenchEnv(b)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodDelete, "/api/v1/users/me/apns_device_token", strings.NewReader("token=not-hex"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(e.alice.Email, e.alice.key)
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			b.Fatalf("got %d", rec.Code)
		}
	}
}

// BenchmarkCommitPages compares what a commit group writes for 64
// concurrent token removals and for 64 concurrent mark_stream_as_read of
// different (user, channel) pairs with unread messages. There are 15,000 pairs: run it
// with at most that many operations, or the marks beyond find nothing
// unread and make no commit. bench/load shows the same figures (pages per
// commit) for the real binary under load.
//
//	go test -run XXX -bench CommitPages -benchtime 15000x
func BenchmarkCommitPages(b *testing.B) {
	for _, kind := range []string{"remove_token", "mark_read"} {
		b.Run(kind, func(b *testing.B) {
			st := mustOpenStore(b)
			var users []user
			var channels []channel
			for i := range 100 {
				channels = append(channels, mustCreateChannel(b, st, "c"+strconv.Itoa(i), false))
			}
			mustUpdate(b, st, func(tx *bbolt.Tx) error {
				for i := range 1000 {
					id, err := tx.Bucket(bucketUsers).NextSequence()
					if err != nil {
						return err
					}
					u := user{ID: id, Email: "u" + strconv.Itoa(i) + "@example.com", Role: roleMember, Active: true}
					if err := putUser(tx, u); err != nil {
						return err
					}
					users = append(users, u)
					for c := range 15 {
						ch := channels[(i*7+c*13)%len(channels)]
						if err := st.addSubscription(tx, id, ch.ID); err != nil {
							return err
						}
					}
				}
				return nil
			})
			for i, ch := range channels { // ten messages each, unread for its subscribers
				seedIndex(b, st, ch, 10, uint64(10*i+1))
			}
			for i := range b.N {
				if err := st.addPushToken(users[i%len(users)].ID, pushToken{Kind: pushAPNs, Token: fmt.Sprintf("%064x", i)}); err != nil {
					b.Fatal(err)
				}
			}
			before, groups := st.db.Stats(), st.commitStats.groups.Load()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 64 {
				wg.Go(func() {
					for i := int(next.Add(1)) - 1; i < b.N; i = int(next.Add(1)) - 1 {
						u := users[i%len(users)]
						var err error
						if kind == "remove_token" {
							err = st.removePushToken(u.ID, pushAPNs, fmt.Sprintf("%064x", i))
						} else {
							ch := channels[((i%len(users))*7+(i/len(users)%15)*13)%len(channels)]
							err = st.markChannelRead(u, ch.ID)
						}
						if err != nil {
							b.Error(err) // not Fatal: this is not the benchmark's goroutine
							return
						}
					}
				})
			}
			wg.Wait()
			after := st.db.Stats()
			commits := st.commitStats.groups.Load() - groups
			b.ReportMetric(float64(after.TxStats.GetPageCount()-before.TxStats.GetPageCount())/float64(commits), "pages/commit")
			b.ReportMetric(float64(b.N)/float64(commits), "writes/commit")
			b.ReportMetric(float64(after.FreelistInuse)/4096, "freelist-pages")
			b.ReportMetric(float64(after.TxStats.GetRebalance()-before.TxStats.GetRebalance())/float64(commits), "rebalances/commit")
			b.ReportMetric(float64(after.TxStats.GetSplit()-before.TxStats.GetSplit())/float64(commits), "splits/commit")
		})
	}
}

// seedSubscribers adds n members, straight into the buckets, and
// subscribes them to the channel (making 100,000 accounts through the API
// would only slow the benchmark).
func seedSubscribers(b *testing.B, st *store, ch channel, n int) {
	b.Helper()
	for start := 0; start < n; start += 10_000 {
		mustUpdate(b, st, func(tx *bbolt.Tx) error {
			users := tx.Bucket(bucketUsers)
			users.FillPercent = 1.0 // ids only grow
			for i := start; i < min(n, start+10_000); i++ {
				id, err := users.NextSequence()
				if err != nil {
					return err
				}
				u := user{ID: id, Email: "member" + strconv.Itoa(i) + "@example.com", Role: roleMember, Active: true}
				if err := putUser(tx, u); err != nil {
					return err
				}
				if err := st.addSubscription(tx, id, ch.ID); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// unreadStateBytes is what the buckets holding unread state use, in
// bytes of their pages' contents.
func unreadStateBytes(b *testing.B, st *store) int64 {
	var total int64
	mustView(b, st, func(tx *bbolt.Tx) error {
		for _, name := range []string{"unread", "unread_trash", "watermarks", "unread_below", "read_above"} {
			if bucket := tx.Bucket([]byte(name)); bucket != nil {
				s := bucket.Stats()
				total += int64(s.LeafInuse + s.BranchInuse)
			}
		}
		return nil
	})
	return total
}

// BenchmarkSendToBigChannel sends a channel message through the store,
// the committer and its disk sync included, to a channel of 10 to
// 100,000 subscribers (the sender among them), and reports the pages
// each send writes and the bytes of unread state it adds per subscriber.
//
//	go test -run XXX -bench SendToBigChannel
func BenchmarkSendToBigChannel(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000, 100_000} {
		b.Run("subscribers="+strconv.Itoa(n), func(b *testing.B) {
			e := newBenchEnv(b)
			seedSubscribers(b, e.st, e.general, n-1)
			mustSend(b, e.st, e.alice.user, e.general) // the first send of a channel creates its indexes' pages
			bytesBefore, before := unreadStateBytes(b, e.st), e.st.db.Stats()
			runtime.GC() // the seeding's garbage is not the send's
			for b.Loop() {
				if _, err := e.st.sendMessage(e.alice.user, channelRef{ID: e.general.ID}, "topic", "hello", "test"); err != nil {
					b.Fatal(err)
				}
			}
			reportPages(b, e.st, before)
			b.ReportMetric(float64(unreadStateBytes(b, e.st)-bytesBefore)/float64(n)/float64(b.N), "unread-bytes/(user*msg)")
			b.ReportMetric(float64(unreadStateBytes(b, e.st))/float64(n), "unread-bytes/user")
		})
	}
}

// BenchmarkUnreadSummary_ReadOutOfOrder is register's unread_msgs for a
// reader with 1,000,000 unread messages who read the newest 100,000
// first: the summary walks down past them (read exceptions above the
// watermark), one step each, before it finds what it answers.
func BenchmarkUnreadSummary_ReadOutOfOrder(b *testing.B) {
	e := newBenchEnv(b)
	seedChannel(b, e.st, e.alice.user, e.alice.user, e.general, 1_100_000, 1000)
	mustUpdate(b, e.st, func(tx *bbolt.Tx) error {
		newest := make([]uint64, 100_000)
		for i := range newest {
			newest[i] = uint64(1_000_001 + i)
		}
		_, err := markRead(tx, e.alice.ID, e.general.ID, newest)
		return err
	})
	if s := mustMarkStateB(b, e.st, e.alice.user, e.general); len(s) != 100_000 {
		b.Fatalf("read above the watermark: got %d, want 100,000", len(s))
	}
	for b.Loop() {
		sum, err := e.st.unreadSummary(e.alice.ID, maxUnreadMessages)
		if err != nil || !sum.Truncated {
			b.Fatalf("unreadSummary: %v, truncated %v", err, sum.Truncated)
		}
	}
}

// mustMarkStateB is the user's read_above set in the channel.
func mustMarkStateB(b *testing.B, st *store, u user, ch channel) []uint64 {
	var ids []uint64
	mustView(b, st, func(tx *bbolt.Tx) error {
		m, ok := loadMark(tx, u.ID, ch.ID)
		if !ok || m.above() == nil {
			return nil
		}
		var err error
		ids, err = chunkIDs(m.above())
		return err
	})
	return ids
}

// ackPush is a provider that acknowledges every push at once.
type ackPush struct{ delivered atomic.Int64 }

func (*ackPush) perDevice() bool { return true }

func (a *ackPush) deliver(context.Context, pushJob, []pushToken) pushResult {
	a.delivered.Add(1)
	return pushResult{}
}

// BenchmarkSendWithPushes sends to a channel whose every member has a
// device and push notifications on for it, through the store and the
// committer, with pushes on (the worker running, expanding each message
// and delivering to a provider that acknowledges at once, sharing the
// committer and the processors with the sends), queued only (the
// entries written with each message, no worker: the send's own cost)
// and off, in one run: sends/s side by side, and the pushes the worker
// delivered meanwhile.
//
//	go test -run XXX -bench SendWithPushes
func BenchmarkSendWithPushes(b *testing.B) {
	for _, n := range []int{100, 1_000} {
		for _, mode := range []string{"off", "queued-only", "on"} {
			b.Run(fmt.Sprintf("members=%d/pushes=%s", n, mode), func(b *testing.B) {
				e := newBenchEnv(b)
				seedSubscribers(b, e.st, e.general, n-1)
				mustUpdate(b, e.st, func(tx *bbolt.Tx) error {
					on := true
					for _, id := range subscriberIDs(tx, e.general.ID) {
						t := pushToken{Kind: pushAPNs, Token: fmt.Sprintf("%064x", id)}
						if err := putJSON(tx.Bucket(bucketPushTokens), pushTokenKey(id, t.Kind, t.Token), t); err != nil {
							return err
						}
						if err := putJSON(tx.Bucket(bucketSubscriptions), append(itob(id), itob(e.general.ID)...), subscription{Color: "#c2c2c2", PushNotifications: &on}); err != nil {
							return err
						}
					}
					return nil
				})
				provider := &ackPush{}
				if mode == "queued-only" { // the send's own cost: entries written, no worker
					e.st.outbox.max.Store(1 << 40)
				}
				if mode == "on" {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					e.server.pusher = newPusher(e.st, provider, func(uint64) bool { return true }, discardLogger(), "http://zulite.test", "zulite", defaultPushOutboxMax)
					go e.server.pusher.run(ctx)
				}
				mustSend(b, e.st, e.alice.user, e.general)
				runtime.GC()
				start, before := time.Now(), provider.delivered.Load()
				for b.Loop() {
					if _, err := e.st.sendMessage(e.alice.user, channelRef{ID: e.general.ID}, "topic", "hello", "test"); err != nil {
						b.Fatal(err)
					}
				}
				elapsed := time.Since(start).Seconds()
				b.ReportMetric(float64(b.N)/elapsed, "sends/s")
				b.ReportMetric(float64(provider.delivered.Load()-before)/elapsed, "pushes/s")
			})
		}
	}
}

// BenchmarkSubscribePrincipals subscribes k of 2,000 accounts, each with
// a listening queue, to a new channel in one request: each joiner's
// subscription event carries the channel's subscribers, which the
// publisher reads once for all of them (not once per joiner).
func BenchmarkSubscribePrincipals(b *testing.B) {
	for _, k := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("principals=%d", k), func(b *testing.B) {
			e := newTestEnv(b)
			seedSubscribers(b, e.st, e.general, 2000)
			ids := subscriberIDsForTest(b, e.st, e.general)
			for _, id := range ids {
				e.server.events.register(&eventQueue{userID: id, types: []string{"subscription"}})
			}
			principals, _ := json.Marshal(ids[:k])
			n := 0
			for b.Loop() {
				n++
				body := url.Values{"subscriptions": {fmt.Sprintf(`[{"name":"c%d"}]`, n)}, "principals": {string(principals)}}
				req := httptest.NewRequest(http.MethodPost, "/api/v1/users/me/subscriptions", strings.NewReader(body.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth(e.owner.Email, e.owner.key)
				rec := httptest.NewRecorder()
				e.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("got %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

func subscriberIDsForTest(b *testing.B, st *store, ch channel) []uint64 {
	var ids []uint64
	st.view(func(tx *bbolt.Tx) error { ids = subscriberIDs(tx, ch.ID); return nil })
	return ids
}

// seedOrganisation adds n members in 50 channels: everyone in the first
// 5, each in 5 more of the other 45, as a working organisation is laid
// out (the capacity day of bench/load).
func seedOrganisation(b *testing.B, st *store, n int) []channel {
	b.Helper()
	channels := make([]channel, 50)
	for i := range channels {
		channels[i] = mustCreateChannel(b, st, fmt.Sprintf("team%02d", i), false)
	}
	mustUpdate(b, st, func(tx *bbolt.Tx) error {
		users := tx.Bucket(bucketUsers)
		for i := range n {
			id, err := users.NextSequence()
			if err != nil {
				return err
			}
			u := user{ID: id, Email: "member" + strconv.Itoa(i) + "@example.com", FullName: "Member " + strconv.Itoa(i), Role: roleMember, Active: true}
			if err := putUser(tx, u); err != nil {
				return err
			}
			if err := tx.Bucket(bucketUserEmails).Put(emailKey(u.Email), itob(id)); err != nil {
				return err
			}
			for j := range 10 {
				c := j
				if j >= 5 {
					c = 5 + (i*7+j*11)%45
				}
				if err := st.addSubscription(tx, id, channels[c].ID); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return channels
}

// BenchmarkRegister_WholeState is a web tab's registration: every event
// type and the whole initial state, in organisations of 1,000 and 3,000,
// by someone in 10 of their channels, as each of them is.
func BenchmarkRegister_WholeState(b *testing.B) {
	for _, n := range []int{1000, 3000} {
		b.Run(fmt.Sprintf("people=%d", n), func(b *testing.B) {
			e := newTestEnv(b)
			for _, ch := range seedOrganisation(b, e.st, n)[:10] {
				if err := e.st.addSubscriptionForTest(e.alice.user, ch); err != nil {
					b.Fatal(err)
				}
			}
			size := 0
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/api/v1/register", nil)
				req.SetBasicAuth(e.alice.Email, e.alice.key)
				rec := httptest.NewRecorder()
				e.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("got %d %s", rec.Code, rec.Body)
				}
				size = rec.Body.Len()
				e.server.events.removeAll(e.alice.ID)
			}
			b.ReportMetric(float64(size), "bytes/answer")
		})
	}
}

// BenchmarkSubscribeSelf is one person added to one more channel, in
// organisations of 1,000 and 3,000 with a tab each listening: the peer
// event goes to everyone who may see the channel, as in Zulip.
func BenchmarkSubscribeSelf(b *testing.B) {
	for _, n := range []int{1000, 3000} {
		b.Run(fmt.Sprintf("people=%d", n), func(b *testing.B) {
			e := newTestEnv(b)
			seedOrganisation(b, e.st, n)
			var users []user
			mustView(b, e.st, func(tx *bbolt.Tx) error {
				return tx.Bucket(bucketUsers).ForEach(func(_, v []byte) error {
					var u user
					json.Unmarshal(v, &u)
					users = append(users, u)
					return nil
				})
			})
			for _, u := range users {
				e.server.events.register(&eventQueue{userID: u.ID, types: []string{"subscription"}})
			}
			i := 0
			for b.Loop() {
				i++
				if i%200 == 0 { // let the queues go, as tabs poll
					for _, u := range users {
						e.server.events.removeAll(u.ID)
						e.server.events.register(&eventQueue{userID: u.ID, types: []string{"subscription"}})
					}
				}
				u := users[i%len(users)] // a new subscription each time
				body := url.Values{"subscriptions": {fmt.Sprintf(`[{"name":"extra%d"}]`, i/len(users))}, "principals": {fmt.Sprintf("[%d]", u.ID)}}
				req := httptest.NewRequest(http.MethodPost, "/api/v1/users/me/subscriptions", strings.NewReader(body.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth(e.owner.Email, e.owner.key)
				rec := httptest.NewRecorder()
				e.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("got %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkPresence_EveryoneReporting is one person's presence report in
// an organisation where everyone reports every minute, as the apps do:
// the answer holds every row changed since the client's last report,
// here all of them, in organisations of 1,000 and 3,000.
func BenchmarkPresence_EveryoneReporting(b *testing.B) {
	for _, n := range []int{1000, 3000} {
		b.Run(fmt.Sprintf("people=%d", n), func(b *testing.B) {
			e := newTestEnv(b)
			seedOrganisation(b, e.st, n)
			now := time.Now()
			for id := uint64(1); id <= uint64(n)+3; id++ {
				if _, err := e.st.reportPresence(id, true, now); err != nil {
					b.Fatal(err)
				}
			}
			body := url.Values{"status": {"active"}, "last_update_id": {"0"}, "slim_presence": {"true"}}.Encode()
			size := 0
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/api/v1/users/me/presence", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth(e.alice.Email, e.alice.key)
				rec := httptest.NewRecorder()
				e.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("got %d %s", rec.Code, rec.Body)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/answer")
		})
	}
}
