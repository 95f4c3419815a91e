package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// TestCrash_AcknowledgedChangesSurviveSIGKILL drives concurrent writes
// at the real binary, kills it with SIGKILL mid-flight several times,
// restarts it on the same file, and checks that every change that got a
// 2xx is there, that nothing is half-applied, and that bbolt's check
// passes.
func TestCrash_AcknowledgedChangesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary; skipped with -short")
	}
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	first := e2eStartServer(t, bin, db, "--rate-limit", "off")
	key := first.ownerKey
	owner := "owner@zulite.localhost"
	// A second account sends, so that the owner has unread messages to mark.
	addSender := e2eRunCLI(t, bin, "user", "add", "sender@example.com", "--db", db)
	addSender.wantOK(t, "user add sender@example.com")
	senderKey := strings.TrimSpace(addSender.stdout)
	client := &http.Client{Timeout: 5 * time.Second}
	callAs := func(email, key, base, method, path string, params url.Values) (int, error) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(params.Encode()))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(email, key)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	call := func(base, method, path string, params url.Values) (int, error) {
		return callAs(owner, key, base, method, path, params)
	}
	// People the owner mutes, one a worker at a time, and the users' ids.
	var mutable []string
	for i := range 8 {
		email := fmt.Sprintf("muted%d@example.com", i)
		e2eRunCLI(t, bin, "user", "add", email, "--db", db).wantOK(t, "user add "+email)
	}
	req, _ := http.NewRequest(http.MethodGet, first.baseURL+"/api/v1/users", nil)
	req.SetBasicAuth(owner, key)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var people struct {
		Members []struct {
			UserID uint64 `json:"user_id"`
			Email  string
		}
	}
	json.NewDecoder(resp.Body).Decode(&people)
	resp.Body.Close()
	for _, p := range people.Members {
		if strings.HasPrefix(p.Email, "muted") {
			mutable = append(mutable, strconv.FormatUint(p.UserID, 10))
		}
	}
	if len(mutable) != 8 {
		t.Fatalf("the users to mute: got %v", people.Members)
	}
	for _, who := range [][2]string{{owner, key}, {"sender@example.com", senderKey}} {
		if code, err := callAs(who[0], who[1], first.baseURL, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}}); code != 200 {
			t.Fatalf("subscribe %s: %d %v", who[0], code, err)
		}
	}
	// markedUpTo: every message acknowledged before an acknowledged
	// mark_stream_as_read began must be read after the crashes.
	var sentCount, markedUpTo int

	var mu sync.Mutex
	// postAsSender sends a message as the sender and answers its id, 0
	// when the send was not acknowledged (the server may be dying).
	postAsSender := func(base string, params url.Values) uint64 {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/messages", strings.NewReader(params.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("sender@example.com", senderKey)
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		var answer struct{ ID uint64 }
		json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0
		}
		return answer.ID
	}
	// moveThenDelete sends a message as the sender, moves it to another
	// topic and deletes it as the owner; deleted holds the contents whose
	// deletion was acknowledged.
	deleted := map[string]bool{}
	// With direct set, the message is a direct message to the owner,
	// edited and deleted by the sender (dm_edit_test.go).
	moveThenDelete := func(base, content string, direct bool) {
		send, edit, as := url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {content}}, url.Values{"topic": {"moved"}, "propagate_mode": {"change_one"}}, call
		if direct {
			send, edit = url.Values{"type": {"direct"}, "to": {owner}, "content": {content}}, url.Values{"content": {content + " edited"}}
			as = func(base, method, path string, params url.Values) (int, error) {
				return callAs("sender@example.com", senderKey, base, method, path, params)
			}
		}
		id := postAsSender(base, send)
		if id == 0 {
			return
		}
		path := "/api/v1/messages/" + strconv.FormatUint(id, 10)
		if code, err := as(base, http.MethodPatch, path, edit); err != nil || code != 200 {
			return
		}
		if code, err := as(base, http.MethodDelete, path, nil); err == nil && code == 200 {
			mu.Lock()
			deleted[content] = true
			if direct {
				deleted[content+" edited"] = true
			}
			mu.Unlock()
		}
	}
	// pollThenVote sends a poll as the sender and votes in it as the
	// owner; voted holds the votes acknowledged (issue 32, item 7).
	voted := map[string]bool{}
	alerted := map[string]bool{} // the owner's alert words acknowledged
	// The owner's drafts and saved snippets acknowledged, by content; the
	// users whose mute, and whose unmute after it, was acknowledged (a
	// mute answered "User already muted" was one whose answer was lost).
	drafted, snipped := map[string]bool{}, map[string]bool{}
	muted, unmuted, triedUnmute := map[string]bool{}, map[string]bool{}, map[string]bool{}
	pollThenVote := func(base, token string) {
		id := postAsSender(base, url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"polls"}, "content": {"/poll p-" + token + "\nyes"}})
		if id == 0 {
			return
		}
		vote := `{"type":"vote","key":"` + token + `,0","vote":1}`
		if code, err := call(base, http.MethodPost, "/api/v1/submessage", url.Values{"message_id": {strconv.FormatUint(id, 10)}, "msg_type": {"widget"}, "content": {vote}}); err == nil && code == 200 {
			mu.Lock()
			voted[vote] = true
			mu.Unlock()
		}
	}
	added, removed, tried := map[string]bool{}, map[string]bool{}, map[string]bool{}
	// Topics the owner followed, and those whose policy was removed (or
	// tried: a removal whose answer was lost may have happened).
	followed, unfollowed, triedUnfollow := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var sent []string
	server := first
	rng := rand.New(rand.NewPCG(7, 7))
	for round := range 4 {
		if round > 0 {
			server = e2eRestartServer(t, bin, db, "--rate-limit", "off")
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					token := fmt.Sprintf("%02x%04x%04x", round, w, i)
					switch i % 4 {
					case 0, 1:
						if code, err := call(server.baseURL, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {token}}); err == nil && code == 200 {
							mu.Lock()
							added[token] = true
							mu.Unlock()
						}
					case 2:
						prev := fmt.Sprintf("%02x%04x%04x", round, w, i-2)
						mu.Lock()
						tried[prev] = true // a removal whose answer was lost may still have happened
						mu.Unlock()
						if code, err := call(server.baseURL, http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {prev}}); err == nil && code == 200 {
							mu.Lock()
							removed[prev] = true
							mu.Unlock()
						}
						topic := "u-" + token // a topic followed, and every other one's policy removed again
						if code, err := call(server.baseURL, http.MethodPost, "/api/v1/user_topics", url.Values{"stream_id": {"1"}, "topic": {topic}, "visibility_policy": {"3"}}); err == nil && code == 200 {
							mu.Lock()
							followed[topic] = true
							mu.Unlock()
						}
						if i%8 == 2 {
							mu.Lock()
							triedUnfollow[topic] = true
							mu.Unlock()
							if code, err := call(server.baseURL, http.MethodPost, "/api/v1/user_topics", url.Values{"stream_id": {"1"}, "topic": {topic}, "visibility_policy": {"0"}}); err == nil && code == 200 {
								mu.Lock()
								unfollowed[topic] = true
								mu.Unlock()
							}
						}
					case 3:
						content := "m-" + token
						if code, err := callAs("sender@example.com", senderKey, server.baseURL, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {content}}); err == nil && code == 200 {
							mu.Lock()
							sent = append(sent, content)
							sentCount++
							mu.Unlock()
						}
						if w <= 1 { // a message moved (edited, for a direct one), then deleted: both rewrite the indexes
							moveThenDelete(server.baseURL, "d-"+token, w == 1)
						}
						if w == 0 { // a poll moved, then deleted with its widget
							moveThenDelete(server.baseURL, "/poll d-"+token, false)
						}
						if w == 2 {
							pollThenVote(server.baseURL, token)
						}
						mu.Lock()
						room := len(alerted) < maxAlertWords/2
						mu.Unlock()
						if w == 3 && room { // an alert word of the owner's (issue 32, item 4)
							if code, err := call(server.baseURL, http.MethodPost, "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["a-` + token + `"]`}}); err == nil && code == 200 {
								mu.Lock()
								alerted["a-"+token] = true
								mu.Unlock()
							}
						}
						mu.Lock()
						drafts, snippets := len(drafted), len(snipped)
						mu.Unlock()
						if w == 4 && drafts < maxDraftsPerUser/2 { // a draft of the owner's (issue 32, item 5)
							content := "dr-" + token
							if code, err := call(server.baseURL, http.MethodPost, "/api/v1/drafts", url.Values{"drafts": {`[{"type":"stream","to":[1],"topic":"t","content":"` + content + `","timestamp":1700000000}]`}}); err == nil && code == 200 {
								mu.Lock()
								drafted[content] = true
								mu.Unlock()
							}
						}
						if w == 5 && snippets < maxSnippetsPerUser/2 { // and a saved snippet
							content := "sn-" + token
							if code, err := call(server.baseURL, http.MethodPost, "/api/v1/saved_snippets", url.Values{"title": {token}, "content": {content}}); err == nil && code == 200 {
								mu.Lock()
								snipped[content] = true
								mu.Unlock()
							}
						}
						if w == 6 { // the next user not yet muted is muted; every other one is unmuted again
							mu.Lock()
							var target string
							for i, id := range mutable {
								if !muted[id] || i%2 == 1 && !triedUnmute[id] {
									target = id
									break
								}
							}
							mute := !muted[target]
							mu.Unlock()
							path := "/api/v1/users/me/muted_users/" + target
							if target != "" && mute {
								if code, err := call(server.baseURL, http.MethodPost, path, nil); err == nil && (code == 200 || code == 400) {
									mu.Lock()
									muted[target] = true
									mu.Unlock()
								}
							} else if target != "" {
								mu.Lock()
								triedUnmute[target] = true
								mu.Unlock()
								if code, err := call(server.baseURL, http.MethodDelete, path, nil); err == nil && code == 200 {
									mu.Lock()
									unmuted[target] = true
									mu.Unlock()
								}
							}
						}
						mu.Lock()
						before := len(sent)
						mu.Unlock()
						if code, err := call(server.baseURL, http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {"1"}}); err == nil && code == 200 {
							mu.Lock()
							markedUpTo = max(markedUpTo, before)
							mu.Unlock()
						}
					}
				}
			})
		}
		time.Sleep(time.Duration(300+rng.IntN(500)) * time.Millisecond)
		killErr := server.cmd.Process.Signal(syscall.SIGKILL) // requests are in flight
		server.cmd.Wait()                                     // "signal: killed", as meant
		close(stop)
		wg.Wait()
		if killErr != nil { // the server had already exited: nothing was killed mid-flight
			t.Fatalf("SIGKILL: %v", killErr)
		}
	}

	st := reopenChecked(t, db)
	u, err := st.userByEmail(owner)
	if err != nil {
		t.Fatal(err)
	}
	tokens := mustPushTokens(t, st, u.ID)
	have := map[string]bool{}
	for _, tok := range tokens {
		have[tok.Token] = true
	}
	for tok := range added {
		if !tried[tok] && !have[tok] {
			t.Errorf("token %s was acknowledged as added but is missing", tok)
		}
	}
	for tok := range removed {
		if have[tok] {
			t.Errorf("token %s was acknowledged as removed but is present", tok)
		}
	}
	// Every acknowledged follow is there, every acknowledged removal gone,
	// and the rows, their counts and the topic_users index agree.
	policies := map[string]int{}
	topicRows, err := st.userTopics(u.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range topicRows {
		policies[r.Topic] = r.Policy
	}
	for topic := range followed {
		if !triedUnfollow[topic] && policies[topic] != policyFollowed {
			t.Errorf("topic %s was acknowledged as followed but is not", topic)
		}
	}
	for topic := range unfollowed {
		if _, ok := policies[topic]; ok {
			t.Errorf("topic %s's policy was acknowledged as removed but is there", topic)
		}
	}
	if len(followed) == 0 || len(unfollowed) == 0 {
		t.Errorf("%d follows and %d removals were acknowledged: the test set too little", len(followed), len(unfollowed))
	}
	mustView(t, st, func(tx *bbolt.Tx) error {
		checkUserTopicIndexes(t, tx)
		return nil
	})
	// Every message is whole: its record, its channel and topic index
	// entries, and the indexes name only stored messages under their
	// channel and topic, after moves and deletes (checkMessageIndexes);
	// every acknowledged one is there, every acknowledged deletion gone.
	contents := map[string]bool{}
	mustView(t, st, func(tx *bbolt.Tx) error {
		checkMessageIndexes(t, tx)
		return tx.Bucket(bucketMessages).ForEach(func(k, v []byte) error {
			if m, err := messageByID(tx, btoi(k)); err == nil {
				contents[m.Content] = true
			}
			return nil
		})
	})
	for _, c := range sent {
		if !contents[c] {
			t.Errorf("message %q was acknowledged but is missing", c)
		}
	}
	for c := range deleted {
		if contents[c] {
			t.Errorf("message %q was acknowledged as deleted but is there", c)
		}
	}
	direct := 0 // each direct one is there twice: as sent and as edited
	for c := range deleted {
		if strings.HasSuffix(c, " edited") {
			direct++
		}
	}
	if len(deleted) == 0 || direct == 0 {
		t.Errorf("%d deletions were acknowledged, %d of direct messages: the test deleted too little", len(deleted)-direct, direct)
	}
	// Every poll has its widget, every acknowledged vote is there, and
	// every submessage is of a stored message (a deleted poll's went with it).
	mustView(t, st, func(tx *bbolt.Tx) error {
		votes := map[string]bool{}
		tx.Bucket(bucketSubmessages).ForEach(func(k, v []byte) error {
			m, err := messageByID(tx, btoi(k[:8]))
			if err != nil {
				t.Errorf("submessage %d is of message %d, which is not stored", btoi(k[8:]), btoi(k[:8]))
				return nil
			}
			var s storedSubmessage
			json.Unmarshal(v, &s)
			if s.SenderID != m.SenderID {
				votes[s.Content] = true
			}
			return nil
		})
		tx.Bucket(bucketMessages).ForEach(func(k, _ []byte) error {
			if m, err := messageByID(tx, btoi(k)); err == nil && strings.HasPrefix(m.Content, "/poll ") {
				if list := submessagesOf(tx, m.ID); len(list) == 0 || list[0].MsgType != "widget" || list[0].SenderID != m.SenderID {
					t.Errorf("poll %d (%q) is stored without its widget: %v", m.ID, m.Content, list)
				}
			}
			return nil
		})
		for vote := range voted {
			if !votes[vote] {
				t.Errorf("vote %s was acknowledged but is missing", vote)
			}
		}
		return nil
	})
	if len(voted) == 0 {
		t.Errorf("no vote was acknowledged: the test voted on nothing")
	}
	// Every acknowledged alert word is the owner's.
	words, err := st.alertWords(u.ID)
	if err != nil {
		t.Fatal(err)
	}
	for word := range alerted {
		if !slices.Contains(words, word) {
			t.Errorf("alert word %s was acknowledged but is missing", word)
		}
	}
	if len(alerted) == 0 {
		t.Errorf("no alert word was acknowledged: the test added none")
	}
	// Every acknowledged draft and snippet is the owner's, and every
	// acknowledged mute is there unless an unmute followed it, and none
	// whose unmute was acknowledged.
	draftList, err := st.drafts(u.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	snippetList, err := st.savedSnippets(u.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, d := range draftList {
		stored[d.Content] = true
	}
	for _, sn := range snippetList {
		stored[sn.Content] = true
	}
	for _, acknowledged := range []map[string]bool{drafted, snipped} {
		for content := range acknowledged {
			if !stored[content] {
				t.Errorf("draft or snippet %s was acknowledged but is missing", content)
			}
		}
	}
	mutes, err := st.mutedUsers(u.ID)
	if err != nil {
		t.Fatal(err)
	}
	mutedNow := map[string]bool{}
	for _, m := range mutes {
		mutedNow[strconv.FormatUint(m.ID, 10)] = true
	}
	for id := range muted {
		if !triedUnmute[id] && !mutedNow[id] {
			t.Errorf("user %s's mute was acknowledged but is missing", id)
		}
	}
	for id := range unmuted {
		if mutedNow[id] {
			t.Errorf("user %s's unmute was acknowledged but they are muted", id)
		}
	}
	mustView(t, st, func(tx *bbolt.Tx) error { // muted_by is muted_users the other way round
		return tx.Bucket(bucketMutedBy).ForEach(func(k, _ []byte) error {
			if tx.Bucket(bucketMutedUsers).Get(append(slices.Clone(k[8:]), k[:8]...)) == nil {
				t.Errorf("muted_by holds %d ← %d, which muted_users lacks", btoi(k[:8]), btoi(k[8:]))
			}
			return nil
		})
	})
	if len(drafted) == 0 || len(snipped) == 0 || len(muted) == 0 || len(unmuted) == 0 {
		t.Errorf("%d drafts, %d snippets, %d mutes and %d unmutes were acknowledged: the test wrote too little", len(drafted), len(snipped), len(muted), len(unmuted))
	}
	// Messages acknowledged before an acknowledged mark began are read.
	unread := map[string]bool{}
	mustView(t, st, func(tx *bbolt.Tx) error {
		ids, err := unreadIDs(tx, u.ID, 1)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if m, err := messageByID(tx, id); err == nil {
				unread[m.Content] = true
			}
		}
		return nil
	})
	for _, c := range sent[:markedUpTo] {
		if unread[c] {
			t.Errorf("message %q was acknowledged before an acknowledged mark_stream_as_read, yet is unread", c)
		}
	}
	if markedUpTo == 0 {
		t.Errorf("no mark_stream_as_read was acknowledged: the test marked nothing")
	}
	t.Logf("after 4 kills: %d tokens added, %d removed, %d messages acknowledged (%d of them marked read), %d moved or edited and deleted (%d of them direct), %d votes, %d topics followed (%d of them unfollowed), %d alert words, %d drafts, %d snippets, %d users muted (%d of them unmuted); all as acknowledged",
		len(added), len(removed), sentCount, markedUpTo, len(deleted)-direct, direct, len(voted), len(followed), len(unfollowed), len(alerted), len(drafted), len(snipped), len(muted), len(unmuted))
}

// reopenChecked opens a database the binary has left, with nothing else
// writing, and runs bbolt's consistency check on it.
func reopenChecked(t *testing.T, db string) *store {
	t.Helper()
	st, err := openStore(db, time.Second)
	if err != nil {
		t.Fatalf("reopen %s: %v", db, err)
	}
	t.Cleanup(func() { st.close() })
	st.quiesce()
	checkConsistency(t, st.db)
	return st
}

// TestShutdown_InFlightRequestsFinishNewConnectionsRefused sends SIGTERM
// while a request is half sent: the request completes, new connections
// are refused, and the process exits cleanly with a consistent file.
func TestShutdown_InFlightRequestsFinishNewConnectionsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db)
	key := srv.ownerKey
	addr := strings.TrimPrefix(srv.baseURL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := "token=c0ffee"
	req := fmt.Sprintf("POST /api/v1/users/me/apns_device_token HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n",
		basic("owner@zulite.localhost", key), len(body))
	if _, err := conn.Write([]byte(req + body[:5])); err != nil { // headers and part of the body: in flight
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	stopped := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	refused := false
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err != nil {
			refused = true
			break
		} else {
			c.Close()
		}
	}
	if !refused {
		t.Errorf("new connections were still accepted 3 s after SIGTERM")
	}
	if _, err := conn.Write([]byte(body[5:])); err != nil {
		t.Fatalf("the rest of the in-flight body: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the in-flight request got no answer: %v", err)
	}
	if resp.StatusCode != 200 {
		t.Errorf("the in-flight request: got %d, want 200", resp.StatusCode)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	if took := time.Since(stopped); took > shutdownTimeout+2*time.Second {
		t.Errorf("shutdown took %v", took)
	}
	st := reopenChecked(t, db)
	u, err := st.userByEmail("owner@zulite.localhost")
	if err != nil {
		t.Fatal(err)
	}
	if tokens := mustPushTokens(t, st, u.ID); len(tokens) != 1 {
		t.Errorf("the in-flight request's token: got %d tokens, want 1", len(tokens))
	}
}
