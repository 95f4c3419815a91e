package push

import (
	"context"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"zulite/internal/push/pushtest"
)

const (
	testOrgID  = "0b3a1f8e-5c2d-4e6f-8a9b-1c2d3e4f5a6b"
	testOrgKey = "4f2c9d6e8a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d"
)

// TestBouncer_Requests checks each route's request as
// send_to_push_bouncer makes it: POST /api/v1/remotes/<route> with the
// org id and key as basic authentication and ZulipServer/<version> as
// User-Agent; server/register, push/register and push/unregister as
// forms (ios_app_id only when registering an Apple token); push/notify
// as JSON with both payloads, gcm_options and the user's devices by
// kind (an empty list, never null).
func TestBouncer_Requests(t *testing.T) {
	f := pushtest.NewBouncer(t)
	b := NewBouncer(f.URL+"/", testOrgID, testOrgKey, "11.0")
	ctx := context.Background()
	check := func(name, path, contentType string, form url.Values) pushtest.Request {
		t.Helper()
		r := f.Last(t)
		if r.Path != path || r.User != testOrgID || r.Pass != testOrgKey || r.Header.Get("User-Agent") != "ZulipServer/11.0" || r.Header.Get("Content-Type") != contentType {
			t.Errorf("%s: got %s as %q:%q, User-Agent %q, Content-Type %q; want %s as the org, ZulipServer/11.0, %s",
				name, r.Path, r.User, r.Pass, r.Header.Get("User-Agent"), r.Header.Get("Content-Type"), path, contentType)
		}
		if form != nil && !reflect.DeepEqual(r.Form, form) {
			t.Errorf("%s: got form %v, want %v", name, r.Form, form)
		}
		return r
	}
	const formType = "application/x-www-form-urlencoded"

	if err := b.RegisterServer(ctx, "chat.example.org", "admin@example.org"); err != nil {
		t.Fatal(err)
	}
	check("server/register", "/api/v1/remotes/server/register", formType,
		url.Values{"zulip_org_id": {testOrgID}, "zulip_org_key": {testOrgKey}, "hostname": {"chat.example.org"}, "contact_email": {"admin@example.org"}})

	apple := Device{Kind: APNs, Token: "aa01", AppID: "org.example.zulip"}
	android := Device{Kind: FCM, Token: "bob-fcm"}
	b.Register(ctx, 7, apple)
	check("register an Apple token", "/api/v1/remotes/push/register", formType,
		url.Values{"user_id": {"7"}, "token": {"aa01"}, "token_kind": {"1"}, "ios_app_id": {"org.example.zulip"}})
	b.Register(ctx, 7, android)
	check("register an FCM token", "/api/v1/remotes/push/register", formType, url.Values{"user_id": {"7"}, "token": {"bob-fcm"}, "token_kind": {"2"}})
	b.Unregister(ctx, 7, apple)
	check("unregister an Apple token", "/api/v1/remotes/push/unregister", formType, url.Values{"user_id": {"7"}, "token": {"aa01"}, "token_kind": {"1"}})

	n := Notification{APNs: json.RawMessage(`{"badge":0,"custom":{"zulip":{"event":"remove"}}}`), FCM: json.RawMessage(`{"event":"remove"}`), FCMPriority: "normal"}
	if _, err := b.Notify(ctx, 7, []Device{apple}, n); err != nil {
		t.Fatal(err)
	}
	r := check("push/notify", "/api/v1/remotes/push/notify", "application/json", nil)
	sameJSON(t, "push/notify", r.Raw, `{"user_id":7,"apns_payload":{"badge":0,"custom":{"zulip":{"event":"remove"}}},"gcm_payload":{"event":"remove"},
		"gcm_options":{"priority":"normal"},"android_devices":[],"apple_devices":["aa01"]}`)
	b.Notify(ctx, 7, []Device{android, apple, {Kind: FCM, Token: "bob-2"}}, n)
	sameJSON(t, "push/notify to both kinds", f.Last(t).Raw, `{"user_id":7,"apns_payload":{"badge":0,"custom":{"zulip":{"event":"remove"}}},"gcm_payload":{"event":"remove"},
		"gcm_options":{"priority":"normal"},"android_devices":["bob-fcm","bob-2"],"apple_devices":["aa01"]}`)
}

// TestBouncer_Answers checks how the bouncer's answers read: the
// devices push/notify says it deleted are dead; a 5xx or no answer may
// pass, after the Retry-After given; a 4xx will not, and says the
// bouncer's msg. No error holds the org key.
func TestBouncer_Answers(t *testing.T) {
	f := pushtest.NewBouncer(t)
	b := NewBouncer(f.URL, testOrgID, testOrgKey, "11.0")
	ctx := context.Background()
	devices := []Device{{Kind: APNs, Token: "aa01"}, {Kind: FCM, Token: "bob-fcm"}}

	f.Answer(200, `{"result":"success","msg":"","deleted_devices":{"android_devices":["bob-fcm","bob-old"],"apple_devices":["aa01"]}}`, "")
	dead, err := b.Notify(ctx, 7, devices, Notification{})
	want := []Device{{Kind: FCM, Token: "bob-fcm"}, {Kind: FCM, Token: "bob-old"}, {Kind: APNs, Token: "aa01"}}
	if err != nil || !reflect.DeepEqual(dead, want) {
		t.Errorf("deleted devices: got %v, %v, want %v", dead, err, want)
	}
	f.Answer(200, `{"result":"success","msg":""}`, "")
	if dead, err := b.Notify(ctx, 7, devices, Notification{}); err != nil || dead != nil {
		t.Errorf("none deleted: got %v, %v, want none", dead, err)
	}

	for _, tc := range []struct {
		name           string
		status         int
		answer, after  string
		want           string
		wantRetryAfter time.Duration
		wantText       string
	}{
		{"500 may pass after its Retry-After", 500, `{"result":"error","msg":"Internal server error"}`, "4", "transient", 4 * time.Second, "bouncer push/notify: 500"},
		{"502 may pass", 502, "", "", "transient", 0, "bouncer push/notify: 502"},
		{"429 may pass", 429, `{"result":"error","msg":"rate limited"}`, "", "transient", 0, "bouncer push/notify: 429"},
		{"401 will not pass", 401, `{"result":"error","msg":"Zulip server auth failure","code":"INVALID_ZULIP_SERVER"}`, "", "failed", 0,
			"bouncer push/notify: 401 Zulip server auth failure"},
		{"400 will not pass", 400, `{"result":"error","msg":"Invalid token"}`, "", "failed", 0, "bouncer push/notify: 400 Invalid token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.Answer(tc.status, tc.answer, tc.after)
			dead, err := b.Notify(ctx, 7, devices, Notification{})
			got, after := outcome(err)
			if got != tc.want || after != tc.wantRetryAfter || dead != nil {
				t.Errorf("got %s (Retry-After %v, %v), dead %v; want %s (Retry-After %v), none dead", got, after, err, dead, tc.want, tc.wantRetryAfter)
			}
			if err == nil || err.Error() != tc.wantText {
				t.Errorf("error: got %v, want %s", err, tc.wantText)
			}
			wantNoSecret(t, err, testOrgKey)
		})
	}
	f.Answer(400, `{"result":"error","msg":"Missing 'hostname' argument"}`, "")
	if err := b.RegisterServer(ctx, "", "admin@example.org"); err == nil || err.Error() != "bouncer server/register: 400 Missing 'hostname' argument" {
		t.Errorf("server/register refused: got %v", err)
	}
	f.Server.Close()
	for name, err := range map[string]error{
		"push/register":   b.Register(ctx, 7, devices[0]),
		"server/register": b.RegisterServer(ctx, "chat.example.org", "admin@example.org"),
	} {
		if got, _ := outcome(err); got != "transient" {
			t.Errorf("%s with no answer: got %s (%v), want transient", name, got, err)
		}
		wantNoSecret(t, err, testOrgKey)
		if strings.Contains(err.Error(), testOrgID+":") {
			t.Errorf("%s: error %q holds the basic authentication", name, err)
		}
	}
}
