package main

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestPush_TestNotificationReachesTheCallersDevices drives
// POST /mobile_push/test_notification against the local APNs and FCM
// servers: every device of the caller, or the one named, gets Zulip's
// test payloads; a token not the caller's is "Device not recognized"
// and sends nothing.
func TestPush_TestNotificationReachesTheCallersDevices(t *testing.T) {
	w := newPushWorld(t)
	w.addUser("alice@example.com")
	w.addUser("bob@example.com")
	w.mustCall("alice@example.com", http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {"aa02"}})
	w.mustCall("alice@example.com", http.MethodPost, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"alice-fcm"}})
	settings := w.mustCall(pushOwner, http.MethodGet, "/api/v1/server_settings", nil)
	wantBody := "This is a test notification from " + settings["realm_name"].(string) + " (" + settings["realm_url"].(string) + ")."

	w.mustCall("alice@example.com", http.MethodPost, "/api/v1/mobile_push/test_notification", nil)
	waitFor(t, 10*time.Second, "alice's two test notifications", func() bool { return len(w.apns.Sent("aa02")) == 1 && len(w.fcm.Sent("alice-fcm")) == 1 })
	a := w.apns.Sent("aa02")[0]
	aps, _ := a.Body["aps"].(map[string]any)
	alert, _ := aps["alert"].(map[string]any)
	if alert["title"] != "Test notification" || alert["body"] != wantBody || aps["sound"] != "default" || zulipOf(a)["event"] != "test" {
		t.Errorf("APNs test notification: got %v, want Zulip's test alert with event test", a.Body)
	}
	if f := w.fcm.Sent("alice-fcm")[0]; f.Body["event"] != "test" || f.Body["(android.priority)"] != "high" || f.Body["time"] == nil || f.Body["realm_url"] != settings["realm_url"] {
		t.Errorf("FCM test notification: got %v, want event test, priority high, the time", f.Body)
	}

	// The token names one device.
	w.mustCall("alice@example.com", http.MethodPost, "/api/v1/mobile_push/test_notification", url.Values{"token": {"alice-fcm"}})
	waitFor(t, 10*time.Second, "the named device's test notification", func() bool { return len(w.fcm.Sent("alice-fcm")) == 2 })
	// Refused: a token nobody has, and alice's token as bob.
	for _, c := range []struct{ who, token string }{{"alice@example.com", "nope"}, {"bob@example.com", "aa02"}} {
		status, body := w.call(c.who, http.MethodPost, "/api/v1/mobile_push/test_notification", url.Values{"token": {c.token}})
		if status != http.StatusBadRequest || body["code"] != "INVALID_PUSH_DEVICE_TOKEN" || body["msg"] != "Device not recognized" {
			t.Errorf("%s with token %s: got %d %v, want 400 INVALID_PUSH_DEVICE_TOKEN", c.who, c.token, status, body)
		}
	}
	w.mustCall("bob@example.com", http.MethodPost, "/api/v1/mobile_push/test_notification", nil) // no device: nothing to send
	w.untilOutboxEmpty("every test notification to be tried")
	if n, m := len(w.apns.Sent("aa02")), len(w.fcm.Sent("alice-fcm")); n != 1 || m != 2 {
		t.Errorf("deliveries after the refusals: got APNs %d, FCM %d; want 1 and 2", n, m)
	}
}
