package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"zulite/internal/push/pushtest"
)

// pushWorld is a running zulite with direct delivery to fake APNs and
// FCM servers, and its people.
type pushWorld struct {
	t      *testing.T
	bin    string
	db     string
	flags  []string
	srv    *e2eServer
	apns   *pushtest.APNs
	fcm    *pushtest.FCM
	keys   map[string]string // e-mail → API key
	ids    map[string]int64  // e-mail → user id
	chanID int64
}

const pushOwner = "owner@zulite.localhost"

func (w *pushWorld) call(email, method, path string, params url.Values) (int, map[string]any) {
	w.t.Helper()
	return pushCall(w.t, w.srv.baseURL, email, w.keys[email], method, path, params)
}

func (w *pushWorld) mustCall(email, method, path string, params url.Values) map[string]any {
	w.t.Helper()
	status, body := w.call(email, method, path, params)
	if status != http.StatusOK {
		w.t.Fatalf("%s %s as %s: got %d %v, want 200", method, path, email, status, body)
	}
	return body
}

// send posts a channel message as the owner and answers its id.
func (w *pushWorld) send(topic, content string) int64 {
	w.t.Helper()
	body := w.mustCall(pushOwner, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {topic}, "content": {content}})
	return e2eInt(w.t, "send", body, "id")
}

// untilOutboxEmpty waits until the outbox holds nothing: every push
// queued so far has been delivered, given up or dropped. A test that then
// finds no delivery it should not find has proven it, where a sleep only
// hoped the pushes had been tried.
func (w *pushWorld) untilOutboxEmpty(what string) {
	w.t.Helper()
	waitFor(w.t, 20*time.Second, what, func() bool {
		req, err := http.NewRequest(http.MethodGet, w.srv.baseURL+"/metrics", nil)
		if err != nil {
			w.t.Fatal(err)
		}
		req.SetBasicAuth(pushOwner, w.keys[pushOwner])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "\nzulite_push_outbox_entries 0\n")
	})
}

func (w *pushWorld) addUser(email string) {
	w.t.Helper()
	r := e2eRunCLI(w.t, w.bin, "user", "add", email, "--db", w.db)
	r.wantOK(w.t, "user add "+email)
	w.keys[email] = strings.TrimSpace(r.stdout)
	body := w.mustCall(email, http.MethodGet, "/api/v1/users/me", nil)
	w.ids[email] = e2eInt(w.t, "users/me", body, "user_id")
}

// apnsFor is the wire payload's zulip member of each delivery to token.
func zulipOf(d pushtest.Request) map[string]any {
	z, _ := d.Body["zulip"].(map[string]any)
	return z
}

func newPushWorld(t *testing.T) *pushWorld {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	w := &pushWorld{t: t, bin: e2eBuildBinary(t), db: filepath.Join(t.TempDir(), "z.db"), apns: pushtest.NewAPNs(t), fcm: pushtest.NewFCM(t),
		keys: map[string]string{}, ids: map[string]int64{}}
	trustFakes(t, w.apns.Server) // httptest gives every TLS server the same certificate
	w.flags = []string{"--rate-limit", "off", "--push-idle", "2s",
		"--push-apns-key", w.apns.KeyFile(t), "--push-apns-key-id", pushtest.APNsKeyID, "--push-apns-team-id", pushtest.APNsTeamID, "--push-apns-url", w.apns.URL,
		"--push-fcm-credentials", w.fcm.CredentialsFile(t), "--push-fcm-url", w.fcm.URL}
	w.srv = e2eStartServer(t, w.bin, w.db, w.flags...)
	w.keys[pushOwner] = w.srv.ownerKey
	w.ids[pushOwner] = 1
	t.Cleanup(func() {
		w.apns.CheckViolations(t)
		w.fcm.CheckViolations(t)
		if t.Failed() {
			t.Logf("server log:\n%s", w.srv.logs())
		}
	})
	return w
}

// TestPush_DirectDelivery drives the binary against local APNs and FCM
// servers: who gets a push (mentions, a channel's push setting, never
// the sender, never someone who cannot read it), the idle rule, the
// payloads, remove on mark_stream_as_read, retries after the provider
// fails, a removed token stopping a queued push at once, dead tokens
// removed, the metrics and server_settings.
func TestPush_DirectDelivery(t *testing.T) {
	w := newPushWorld(t)
	for _, email := range []string{"alice@example.com", "bob@example.com", "dave@example.com", "erin@example.com"} {
		w.addUser(email)
	}
	for _, email := range []string{pushOwner, "alice@example.com", "bob@example.com", "dave@example.com"} {
		w.mustCall(email, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}})
	}
	w.chanID = e2eInt(t, "get_stream_id", w.mustCall(pushOwner, http.MethodGet, "/api/v1/get_stream_id", url.Values{"stream": {"general"}}), "stream_id")
	tokens := map[string]url.Values{
		pushOwner:           {"token": {"aa01"}},
		"alice@example.com": {"token": {"aa02"}, "appid": {"org.example.zulip"}},
		"dave@example.com":  {"token": {"aa04"}},
		"erin@example.com":  {"token": {"aa05"}},
	}
	for email, params := range tokens {
		w.mustCall(email, http.MethodPost, "/api/v1/users/me/apns_device_token", params)
	}
	w.mustCall("bob@example.com", http.MethodPost, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"bob-fcm"}})
	// The sender has pushes on for the channel: still none for their own messages.
	w.mustCall(pushOwner, http.MethodPost, "/api/v1/users/me/subscriptions/properties",
		url.Values{"subscription_data": {fmt.Sprintf(`[{"stream_id":%d,"property":"push_notifications","value":true}]`, w.chanID)}})

	if _, body := w.call(pushOwner, http.MethodGet, "/api/v1/server_settings", nil); body["push_notifications_enabled"] != true {
		t.Errorf("server_settings push_notifications_enabled: got %v, want true", body["push_notifications_enabled"])
	}

	// dave keeps a long poll open: he is using a client, so not idle.
	daveCtx, stopDave := context.WithCancel(context.Background())
	defer stopDave()
	reg := w.mustCall("dave@example.com", http.MethodPost, "/api/v1/register", url.Values{"event_types": {`["message"]`}})
	queueID, _ := reg["queue_id"].(string)
	davePolling := make(chan struct{})
	go func() {
		defer close(davePolling)
		last := "-1"
		for daveCtx.Err() == nil {
			req, _ := http.NewRequestWithContext(daveCtx, http.MethodGet, w.srv.baseURL+"/api/v1/events?queue_id="+queueID+"&last_event_id="+last, nil)
			req.SetBasicAuth("dave@example.com", w.keys["dave@example.com"])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			var got struct {
				Events []struct {
					ID int64 `json:"id"`
				} `json:"events"`
			}
			json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
			for _, e := range got.Events {
				last = strconv.FormatInt(e.ID, 10)
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // dave's poll is waiting

	t.Run("mention pushes the idle reader only", func(t *testing.T) {
		m1 := w.send("t1", "@**alice** @**dave** @**erin** hello :octopus:")
		waitFor(t, 10*time.Second, "alice's push", func() bool { return len(w.apns.Sent("aa02")) > 0 })
		w.untilOutboxEmpty("every push of the message to be tried")
		got := w.apns.Sent("aa02")
		if len(got) != 1 {
			t.Fatalf("alice's deliveries: got %d, want 1", len(got))
		}
		d := got[0]
		if topic := d.Header.Get("apns-topic"); topic != "org.example.zulip" {
			t.Errorf("apns-topic: got %q, want the app id alice registered with", topic)
		}
		aps, _ := d.Body["aps"].(map[string]any)
		alert, _ := aps["alert"].(map[string]any)
		z := zulipOf(d)
		wantAlert := map[string]any{"title": "#general > t1", "subtitle": "Owner mentioned you:", "body": "@alice @dave @erin hello 🐙"}
		for k, v := range wantAlert {
			if alert[k] != v {
				t.Errorf("aps.alert.%s: got %q, want %q", k, alert[k], v)
			}
		}
		if aps["sound"] != "default" || aps["badge"] != float64(0) {
			t.Errorf("aps: got %v, want sound default, badge 0", aps)
		}
		wantZulip := map[string]any{"recipient_type": "stream", "stream": "general", "stream_id": float64(w.chanID), "topic": "t1",
			"sender_id": float64(1), "sender_email": pushOwner, "user_id": float64(w.ids["alice@example.com"]), "realm_url": w.srv.baseURL,
			"realm_uri": w.srv.baseURL, "server": strings.TrimPrefix(w.srv.baseURL, "http://")}
		for k, v := range wantZulip {
			if z[k] != v {
				t.Errorf("zulip.%s: got %v, want %v", k, z[k], v)
			}
		}
		if ids, _ := z["message_ids"].([]any); len(ids) != 1 || ids[0] != float64(m1) {
			t.Errorf("zulip.message_ids: got %v, want [%d]", z["message_ids"], m1)
		}
		for token, who := range map[string]string{"aa01": "the sender", "aa04": "dave, who is polling", "aa05": "erin, who is not subscribed"} {
			if n := len(w.apns.Matching(func(d pushtest.Request) bool { return d.Token == token })); n != 0 {
				t.Errorf("%s got %d pushes, want none", who, n)
			}
		}
		if n := len(w.fcm.Sent("bob-fcm")); n != 0 {
			t.Errorf("bob (not mentioned, channel pushes off) got %d pushes, want none", n)
		}
	})

	t.Run("channel push setting", func(t *testing.T) {
		w.mustCall("bob@example.com", http.MethodPost, "/api/v1/users/me/subscriptions/properties",
			url.Values{"subscription_data": {fmt.Sprintf(`[{"stream_id":%d,"property":"push_notifications","value":true}]`, w.chanID)}})
		// read_by_sender=false: unread for its sender, who has pushes on
		// for the channel and a device; still not pushed to them.
		body := w.mustCall(pushOwner, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t2"},
			"content": {"plain words"}, "read_by_sender": {"false"}})
		m2 := e2eInt(t, "send", body, "id")
		waitFor(t, 10*time.Second, "bob's push", func() bool { return len(w.fcm.Sent("bob-fcm")) > 0 })
		d := w.fcm.Sent("bob-fcm")[0]
		want := map[string]any{"event": "message", "zulip_message_id": strconv.FormatInt(m2, 10), "recipient_type": "stream", "stream": "general",
			"topic": "t2", "content": "plain words", "content_truncated": "False", "sender_full_name": "Owner", "sender_email": pushOwner,
			"user_id": strconv.FormatInt(w.ids["bob@example.com"], 10), "realm_url": w.srv.baseURL, "(android.priority)": "high"}
		for k, v := range want {
			if d.Body[k] != v {
				t.Errorf("FCM data %s: got %v, want %v", k, d.Body[k], v)
			}
		}
		if !strings.HasPrefix(fmt.Sprint(d.Body["sender_avatar_url"]), w.srv.baseURL+"/") {
			t.Errorf("sender_avatar_url: got %v, want an absolute URL on the server", d.Body["sender_avatar_url"])
		}
		w.untilOutboxEmpty("every push of the message to be tried")
		if n := len(w.apns.Matching(func(d pushtest.Request) bool { return d.Token == "aa01" })); n != 0 {
			t.Errorf("the sender got %d pushes of their own message, want none", n)
		}
		if n := len(w.apns.Sent("aa02")); n != 1 {
			t.Errorf("alice (not mentioned, pushes off) deliveries: got %d, want still 1", n)
		}
	})

	t.Run("remove after mark_stream_as_read", func(t *testing.T) {
		w.mustCall("alice@example.com", http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.FormatInt(w.chanID, 10)}})
		waitFor(t, 10*time.Second, "alice's remove", func() bool { return len(w.apns.Sent("aa02")) > 1 })
		z := zulipOf(w.apns.Sent("aa02")[1])
		if z["event"] != "remove" || z["zulip_message_ids"] == nil {
			t.Fatalf("alice's second push: got %v, want a remove", z)
		}
		w.mustCall("bob@example.com", http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {strconv.FormatInt(w.chanID, 10)}})
		waitFor(t, 10*time.Second, "bob's remove", func() bool { return len(w.fcm.Sent("bob-fcm")) > 1 })
		d := w.fcm.Sent("bob-fcm")[1]
		if d.Body["event"] != "remove" || d.Body["(android.priority)"] != "normal" || d.Body["zulip_message_ids"] != d.Body["zulip_message_id"] {
			t.Errorf("bob's remove: got %v, want event remove, priority normal, one id", d.Body)
		}
	})

	t.Run("idle again after polling stops", func(t *testing.T) {
		stopDave()
		<-davePolling
		time.Sleep(2500 * time.Millisecond) // past --push-idle
		w.send("t3", "@**dave** now")
		waitFor(t, 10*time.Second, "dave's push", func() bool { return len(w.apns.Sent("aa04")) > 0 })
	})

	t.Run("retries after the provider fails", func(t *testing.T) {
		w.apns.SetFail("aa02", 2)
		before := len(w.apns.Sent("aa02"))
		m := w.send("t4", "@**alice** again")
		waitFor(t, 15*time.Second, "alice's push after two failures", func() bool { return len(w.apns.Sent("aa02")) > before })
		tries := w.apns.Matching(func(d pushtest.Request) bool {
			ids, _ := zulipOf(d)["message_ids"].([]any)
			return d.Token == "aa02" && len(ids) == 1 && ids[0] == float64(m)
		})
		if len(tries) != 3 || tries[0].Status != 503 || tries[1].Status != 503 || tries[2].Status != 200 {
			t.Errorf("attempts: got %d, want 503, 503, 200", len(tries))
		}
	})

	t.Run("removing a token stops its queued pushes at once", func(t *testing.T) {
		w.apns.SetFail("aa02", 1000)
		m := w.send("t5", "@**alice** once more")
		isM := func(d pushtest.Request) bool {
			ids, _ := zulipOf(d)["message_ids"].([]any)
			return d.Token == "aa02" && len(ids) == 1 && ids[0] == float64(m)
		}
		waitFor(t, 10*time.Second, "a first failed attempt", func() bool { return len(w.apns.Matching(isM)) > 0 })
		w.mustCall("alice@example.com", http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {"aa02"}})
		removed := time.Now()
		w.apns.SetFail("aa02", 0)
		w.untilOutboxEmpty("the removed token's push to leave the outbox")
		if late := w.apns.Matching(func(d pushtest.Request) bool { return isM(d) && d.At.After(removed) }); len(late) != 0 {
			t.Errorf("attempts after the token was removed: got %d, want none", len(late))
		}
	})

	t.Run("dead tokens are removed", func(t *testing.T) {
		w.mustCall("alice@example.com", http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"aa06"}})
		w.mustCall("bob@example.com", http.MethodPost, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"bob-dead"}})
		w.apns.SetGone("aa06")
		w.fcm.SetGone("bob-dead")
		w.send("t6", "@**alice** and the channel")
		waitFor(t, 10*time.Second, "both providers to say gone", func() bool {
			return len(w.apns.Matching(func(d pushtest.Request) bool { return d.Token == "aa06" })) > 0 &&
				len(w.fcm.Matching(func(d pushtest.Request) bool { return d.Token == "bob-dead" })) > 0
		})
		waitFor(t, 5*time.Second, "the tokens to be removed", func() bool {
			s1, _ := w.call("alice@example.com", http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {"aa06"}})
			s2, _ := w.call("bob@example.com", http.MethodDelete, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"bob-dead"}})
			return s1 == http.StatusBadRequest && s2 == http.StatusBadRequest
		})
		// bob's live token still works.
		w.mustCall("bob@example.com", http.MethodDelete, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"bob-fcm"}})
	})

	t.Run("direct message, and its remove after messages/flags", func(t *testing.T) {
		body := w.mustCall(pushOwner, http.MethodPost, "/api/v1/messages", url.Values{"type": {"direct"},
			"to": {fmt.Sprintf("[%d]", w.ids["erin@example.com"])}, "content": {"psst"}})
		m := e2eInt(t, "send", body, "id")
		waitFor(t, 10*time.Second, "erin's push", func() bool { return len(w.apns.Sent("aa05")) > 0 })
		d := w.apns.Sent("aa05")[0]
		aps, _ := d.Body["aps"].(map[string]any)
		alert, _ := aps["alert"].(map[string]any)
		z := zulipOf(d)
		if z["recipient_type"] != "private" || alert["title"] != "Owner" || alert["subtitle"] != "" || alert["body"] != "psst" {
			t.Errorf("direct message push: got alert %v, zulip %v", alert, z)
		}
		if ids, _ := z["message_ids"].([]any); len(ids) != 1 || ids[0] != float64(m) {
			t.Errorf("zulip.message_ids: got %v, want [%d]", z["message_ids"], m)
		}
		w.mustCall("erin@example.com", http.MethodPost, "/api/v1/messages/flags", url.Values{"messages": {fmt.Sprintf("[%d]", m)}, "op": {"add"}, "flag": {"read"}})
		waitFor(t, 10*time.Second, "erin's remove", func() bool { return len(w.apns.Sent("aa05")) > 1 })
		if z := zulipOf(w.apns.Sent("aa05")[1]); z["event"] != "remove" || z["zulip_message_ids"] != strconv.FormatInt(m, 10) {
			t.Errorf("erin's remove: got %v", z)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, w.srv.baseURL+"/metrics", nil)
		req.SetBasicAuth(pushOwner, w.keys[pushOwner])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, name := range []string{"zulite_push_queued_total", "zulite_push_sent_total", "zulite_push_failed_total", "zulite_push_dropped_total", "zulite_push_outbox_entries"} {
			if !strings.Contains(string(raw), "\n"+name+" ") {
				t.Errorf("/metrics: got no %s", name)
			}
		}
		if strings.Contains(string(raw), "zulite_push_sent_total 0\n") {
			t.Errorf("/metrics: zulite_push_sent_total is 0 after deliveries")
		}
	})
}

// TestPush_DeliveredAfterSIGKILL queues pushes the provider refuses,
// kills the server with SIGKILL, restarts it with the provider well,
// and checks that each is delivered, once.
func TestPush_DeliveredAfterSIGKILL(t *testing.T) {
	w := newPushWorld(t)
	w.addUser("alice@example.com")
	for _, email := range []string{pushOwner, "alice@example.com"} {
		w.mustCall(email, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}})
	}
	w.mustCall("alice@example.com", http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"aa07"}})
	w.apns.SetFail("aa07", 1_000_000)
	var sent []int64
	for i := range 5 {
		sent = append(sent, w.send("crash", fmt.Sprintf("@**alice** message %d", i)))
	}
	waitFor(t, 10*time.Second, "every push to be tried", func() bool {
		return len(w.apns.Matching(func(d pushtest.Request) bool { return d.Token == "aa07" })) >= len(sent)
	})
	if err := w.srv.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	w.srv.stop()
	w.apns.SetFail("aa07", 0)
	w.srv = e2eRestartServer(t, w.bin, w.db, w.flags...)
	waitFor(t, 20*time.Second, "every push delivered after the restart", func() bool { return len(w.apns.Sent("aa07")) >= len(sent) })
	w.untilOutboxEmpty("nothing more to deliver after the restart")
	delivered := map[float64]int{}
	for _, d := range w.apns.Sent("aa07") {
		ids, _ := zulipOf(d)["message_ids"].([]any)
		for _, id := range ids {
			delivered[id.(float64)]++
		}
	}
	for _, id := range sent {
		if delivered[float64(id)] != 1 {
			t.Errorf("message %d: delivered %d times, want once", id, delivered[float64(id)])
		}
	}
}

// TestPush_Bouncer registers the server with a local bouncer through
// `zulite push register`, then checks that token registrations and
// removals are forwarded and that notifications and removes go to
// remotes/push/notify with Zulip's payloads; a device the bouncer
// reports deleted is removed.
func TestPush_Bouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bouncer := pushtest.NewBouncer(t)
	t.Cleanup(func() { bouncer.CheckViolations(t) })
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	srv := e2eStartServer(t, bin, db, "--rate-limit", "off", "--push-idle", "1s")
	w := &pushWorld{t: t, bin: bin, db: db, srv: srv, keys: map[string]string{pushOwner: srv.ownerKey}, ids: map[string]int64{pushOwner: 1}}
	if _, body := w.call(pushOwner, http.MethodGet, "/api/v1/server_settings", nil); body["push_notifications_enabled"] != false {
		t.Errorf("server_settings before registering: push_notifications_enabled %v, want false", body["push_notifications_enabled"])
	}
	r := e2eRunCLI(t, bin, "push", "register", "admin@zulite.example.org", "zulite.example.org", "--db", db, "--push-bouncer-url", bouncer.URL)
	r.wantOK(t, "push register")
	if got := bouncer.Calls("server/register"); len(got) != 1 || got[0].Body["contact_email"] != "admin@zulite.example.org" || got[0].Body["hostname"] != "zulite.example.org" {
		t.Fatalf("server/register: got %v", got)
	}
	srv.stop()
	w.srv = e2eRestartServer(t, bin, db, "--rate-limit", "off", "--push-idle", "1s")
	defer func() {
		if t.Failed() {
			t.Logf("server log:\n%s", w.srv.logs())
		}
	}()
	if _, body := w.call(pushOwner, http.MethodGet, "/api/v1/server_settings", nil); body["push_notifications_enabled"] != true {
		t.Errorf("server_settings after registering: push_notifications_enabled %v, want true", body["push_notifications_enabled"])
	}
	w.addUser("alice@example.com")
	alice := w.ids["alice@example.com"]
	for _, email := range []string{pushOwner, "alice@example.com"} {
		w.mustCall(email, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"}]`}})
	}
	w.mustCall("alice@example.com", http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"bb01"}})
	w.mustCall("alice@example.com", http.MethodPost, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"alice-fcm"}})
	waitFor(t, 10*time.Second, "two push/register", func() bool { return len(bouncer.Calls("push/register")) == 2 })
	regs := bouncer.Calls("push/register")
	wantRegs := []map[string]any{
		{"user_id": strconv.FormatInt(alice, 10), "token": "bb01", "token_kind": "1", "ios_app_id": "org.zulip.Zulip"},
		{"user_id": strconv.FormatInt(alice, 10), "token": "alice-fcm", "token_kind": "2"},
	}
	for i, want := range wantRegs {
		for k, v := range want {
			if regs[i].Body[k] != v {
				t.Errorf("push/register %d %s: got %v, want %v", i, k, regs[i].Body[k], v)
			}
		}
	}
	if _, ok := regs[1].Body["ios_app_id"]; ok {
		t.Errorf("push/register of an FCM token: got ios_app_id, want none")
	}

	bouncer.DeleteNext("alice-fcm")
	m := w.send("t", "@**alice** via the bouncer")
	waitFor(t, 10*time.Second, "push/notify", func() bool { return len(bouncer.Calls("push/notify")) == 1 })
	n := bouncer.Calls("push/notify")[0].Body
	if n["user_id"] != float64(alice) {
		t.Errorf("notify user_id: got %v, want %d", n["user_id"], alice)
	}
	apns, _ := n["apns_payload"].(map[string]any)
	alert, _ := apns["alert"].(map[string]any)
	custom, _ := apns["custom"].(map[string]any)
	zulip, _ := custom["zulip"].(map[string]any)
	if alert["subtitle"] != "Owner mentioned you:" || alert["title"] != "#general > t" || zulip["recipient_type"] != "stream" {
		t.Errorf("apns_payload: got %v", apns)
	}
	if ids, _ := zulip["message_ids"].([]any); len(ids) != 1 || ids[0] != float64(m) {
		t.Errorf("apns_payload custom.zulip.message_ids: got %v, want [%d]", zulip["message_ids"], m)
	}
	gcm, _ := n["gcm_payload"].(map[string]any)
	if gcm["event"] != "message" || gcm["zulip_message_id"] != float64(m) || gcm["content"] != "@alice via the bouncer" {
		t.Errorf("gcm_payload: got %v", gcm)
	}
	if opts, _ := n["gcm_options"].(map[string]any); opts["priority"] != "high" {
		t.Errorf("gcm_options: got %v, want priority high", n["gcm_options"])
	}
	if fmt.Sprint(n["apple_devices"]) != "[bb01]" || fmt.Sprint(n["android_devices"]) != "[alice-fcm]" {
		t.Errorf("devices: got apple %v android %v", n["apple_devices"], n["android_devices"])
	}
	waitFor(t, 5*time.Second, "the deleted device to be removed", func() bool {
		s, _ := w.call("alice@example.com", http.MethodDelete, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"alice-fcm"}})
		return s == http.StatusBadRequest
	})

	w.mustCall("alice@example.com", http.MethodPost, "/api/v1/mark_stream_as_read", url.Values{"stream_id": {"1"}})
	waitFor(t, 10*time.Second, "the remove", func() bool { return len(bouncer.Calls("push/notify")) == 2 })
	rm := bouncer.Calls("push/notify")[1].Body
	gcm, _ = rm["gcm_payload"].(map[string]any)
	if gcm["event"] != "remove" || gcm["zulip_message_ids"] != strconv.FormatInt(m, 10) {
		t.Errorf("remove gcm_payload: got %v", gcm)
	}
	if opts, _ := rm["gcm_options"].(map[string]any); opts["priority"] != "normal" {
		t.Errorf("remove gcm_options: got %v, want priority normal", rm["gcm_options"])
	}

	// A test notification goes as a notify to the device named, with
	// the payloads Zulip's bouncer makes for push/test_notification.
	w.mustCall("alice@example.com", http.MethodPost, "/api/v1/mobile_push/test_notification", url.Values{"token": {"bb01"}})
	waitFor(t, 10*time.Second, "the test notification", func() bool { return len(bouncer.Calls("push/notify")) == 3 })
	tn := bouncer.Calls("push/notify")[2].Body
	apns, _ = tn["apns_payload"].(map[string]any)
	alert, _ = apns["alert"].(map[string]any)
	gcm, _ = tn["gcm_payload"].(map[string]any)
	if alert["title"] != "Test notification" || gcm["event"] != "test" || fmt.Sprint(tn["apple_devices"]) != "[bb01]" || fmt.Sprint(tn["android_devices"]) != "[]" {
		t.Errorf("the test notification's notify: got %v", tn)
	}

	w.mustCall("alice@example.com", http.MethodDelete, "/api/v1/users/me/apns_device_token", url.Values{"token": {"bb01"}})
	waitFor(t, 10*time.Second, "push/unregister", func() bool { return len(bouncer.Calls("push/unregister")) == 1 })
	if u := bouncer.Calls("push/unregister")[0].Body; u["token"] != "bb01" || u["token_kind"] != "1" || u["user_id"] != strconv.FormatInt(alice, 10) {
		t.Errorf("push/unregister: got %v", u)
	}

	// `zulite user key` removes the account's tokens: the bouncer is told.
	w.mustCall("alice@example.com", http.MethodPost, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"alice-fcm-2"}})
	e2eRunCLI(t, bin, "user", "key", "alice@example.com", "--db", db).wantOK(t, "user key")
	waitFor(t, 10*time.Second, "push/unregister after user key", func() bool { return len(bouncer.Calls("push/unregister")) == 2 })
	if u := bouncer.Calls("push/unregister")[1].Body; u["token"] != "alice-fcm-2" || u["token_kind"] != "2" {
		t.Errorf("push/unregister after user key: got %v", u)
	}
}
