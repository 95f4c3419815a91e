package main

// The comparisons: mark_stream_as_read with a million unread messages
// against one, and a send to a big channel against a small one.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
)

// compareMarkRead times mark_stream_as_read on a channel where a user
// has bigUnread unread messages against one where they have one: 21
// readers share the big channel, so that each side is a median of 21
// marks, taken alternately.
func compareMarkRead(z *target, accounts []account, bigUnread int) error {
	const marks = 21
	readers, writer := accounts[:marks], accounts[marks]
	for _, name := range []string{"big", "small"} {
		for _, a := range append(slices.Clone(readers), writer) {
			if r := drive(z, 1, 1, 200, func(int) *http.Request {
				return newRequest(z, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"` + name + `"}]`}}, a.email, a.key)
			}); r.err != nil {
				return r.err
			}
		}
	}
	ids := map[string]string{}
	for _, name := range []string{"big", "small"} {
		var body struct {
			StreamID int `json:"stream_id"`
		}
		if err := getJSON(z, "/api/v1/get_stream_id?stream="+name, readers[0], &body); err != nil {
			return err
		}
		ids[name] = strconv.Itoa(body.StreamID)
	}
	fmt.Printf("\nsending %d messages to one channel for the mark_stream_as_read comparison ...\n", bigUnread)
	start := time.Now()
	send := func(channel string) func(int) *http.Request {
		return func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {channel}, "topic": {"t"}, "content": {"x"}}, writer.email, writer.key)
		}
	}
	if r := drive(z, 64, bigUnread, 200, send(ids["big"])); r.err != nil {
		return r.err
	}
	fmt.Printf("sent in %v\n", time.Since(start).Round(time.Millisecond))
	mark := func(channel string, reader account) func(int) *http.Request {
		return func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {channel}}, reader.email, reader.key)
		}
	}
	var big, small []time.Duration
	for i := range marks {
		r := drive(z, 1, 1, 200, mark(ids["big"], readers[i]))
		if r.err != nil {
			return r.err
		}
		big = append(big, r.p50)
		if r := drive(z, 1, 1, 200, send(ids["small"])); r.err != nil {
			return r.err
		}
		if r = drive(z, 1, 1, 200, mark(ids["small"], readers[0])); r.err != nil {
			return r.err
		}
		small = append(small, r.p50)
	}
	slices.Sort(big)
	slices.Sort(small)
	ratio := float64(big[marks/2]) / float64(small[marks/2])
	fmt.Printf("mark_stream_as_read, median of %d each, alternating: %d unread %v, 1 unread %v: %.2fx (target: within 3x)\n",
		marks, bigUnread, big[marks/2].Round(time.Microsecond), small[marks/2].Round(time.Microsecond), ratio)
	return nil
}

// compareSend times a send to a channel of n subscribers against a send
// to one of 10, alternately, one at a time, and counts the pages each
// commits (from /metrics): both must not grow with the subscribers. The
// accounts are made through the admin socket, as `zulite user add`
// makes them, without its process for each. The small channel's members
// join through the API; the big channel's are written into the file
// while the server is stopped (seedSubscribers says why), and the API
// must then count them all, and show the sends unread to one of them.
func compareSend(z *target, db, ownerKey string, n int, restart func(meanwhile func() error) error) error {
	fmt.Printf("\nmaking %d accounts through the admin socket for the send comparison ...\n", n-1)
	start := time.Now()
	emails := make([]string, n-1)
	var mu sync.Mutex
	var firstErr error
	var lastKey string
	parallel(16, n-1, func(i int) {
		emails[i] = fmt.Sprintf("member%d@example.com", i)
		key, err := adminUserAdd(db+".sock", emails[i])
		mu.Lock()
		defer mu.Unlock()
		firstErr = cmp.Or(firstErr, err)
		if i == n-2 {
			lastKey = key
		}
	})
	if firstErr != nil {
		return fmt.Errorf("user add: %w", firstErr)
	}
	fmt.Printf("made in %v\n", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	owner := account{email: "owner@zulite.localhost", key: ownerKey}
	subscribe := func(name string, principals []string) error {
		params := url.Values{"subscriptions": {`[{"name":"` + name + `"}]`}}
		if principals != nil {
			list, _ := json.Marshal(principals)
			params.Set("principals", string(list))
		}
		r := drive(z, 1, 1, 200, func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/users/me/subscriptions", params, owner.email, owner.key)
		})
		return r.err
	}
	ids := map[string]string{}
	for _, name := range []string{"few", "crowd"} { // the owner makes them, and is their sender
		if err := subscribe(name, nil); err != nil {
			return err
		}
		var body struct {
			StreamID int `json:"stream_id"`
		}
		if err := getJSON(z, "/api/v1/get_stream_id?stream="+name, owner, &body); err != nil {
			return err
		}
		ids[name] = strconv.Itoa(body.StreamID)
	}
	if err := subscribe("few", emails[:9]); err != nil {
		return err
	}
	crowdID, _ := strconv.ParseUint(ids["crowd"], 10, 64)
	if err := restart(func() error { return seedSubscribers(db, crowdID, emails) }); err != nil {
		return err
	}
	var counted struct {
		Stream struct {
			SubscriberCount int `json:"subscriber_count"`
		} `json:"stream"`
	}
	if err := getJSON(z, "/api/v1/streams/"+ids["crowd"], owner, &counted); err != nil {
		return err
	}
	if counted.Stream.SubscriberCount != n {
		return fmt.Errorf("the big channel has %d subscribers, want %d", counted.Stream.SubscriberCount, n)
	}
	fmt.Printf("subscribed in %v\n", time.Since(start).Round(time.Millisecond))

	const sends = 200
	times := map[string][]time.Duration{}
	pages := map[string]float64{}
	for i := range 2 * sends {
		name := []string{"few", "crowd"}[i%2]
		before, err := commitGroups(z, ownerKey)
		if err != nil {
			return err
		}
		r := drive(z, 1, 1, 200, func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {ids[name]}, "topic": {"t"}, "content": {"hello"}}, owner.email, owner.key)
		})
		if r.err != nil {
			return r.err
		}
		after, err := commitGroups(z, ownerKey)
		if err != nil {
			return err
		}
		times[name] = append(times[name], r.p50)
		pages[name] += after.pages - before.pages
	}
	var unread struct {
		Messages []json.RawMessage `json:"messages"`
	}
	narrow := url.QueryEscape(`[["channel","crowd"],["is","unread"]]`)
	if err := getJSON(z, "/api/v1/messages?anchor=newest&num_before=1000&num_after=0&narrow="+narrow, account{email: emails[n-2], key: lastKey}, &unread); err != nil {
		return err
	}
	if len(unread.Messages) != sends {
		return fmt.Errorf("%s has %d unread messages in the big channel, want %d", emails[n-2], len(unread.Messages), sends)
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	few, crowd := median(times["few"]), median(times["crowd"])
	fmt.Printf("send, median of %d each, alternating: 10 subscribers %v (%.1f pages), %d subscribers %v (%.1f pages): %.2fx (target: within 2x)\n",
		sends, few.Round(time.Microsecond), pages["few"]/sends, n, crowd.Round(time.Microsecond), pages["crowd"]/sends, float64(crowd)/float64(few))
	return nil
}
