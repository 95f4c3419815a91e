package main

import (
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPushTokens_Validation(t *testing.T) {
	long := strings.Repeat("ab", maxPushTokenLength/2)
	for _, c := range []struct {
		rule, path, token string
		msg               string // empty: success
	}{
		{"empty APNs token", "apns_device_token", "", "Empty or invalid length token"},
		{"empty FCM token", "android_gcm_reg_id", "", "Empty or invalid length token"},
		{"4096 characters is the limit", "apns_device_token", long, ""},
		{"4097 characters is too long", "apns_device_token", long + "a", "Empty or invalid length token"},
		{"4097 characters FCM", "android_gcm_reg_id", strings.Repeat("x", 4097), "Empty or invalid length token"},
		{"APNs must be hex", "apns_device_token", "xyz1", "Invalid APNS token"},
		{"odd length is not hex", "apns_device_token", "abc", "Invalid APNS token"},
		{"0x prefix is not hex", "apns_device_token", "0xab", "Invalid APNS token"},
		{"space inside a pair is not hex", "apns_device_token", "a bcd", "Invalid APNS token"},
		{"whitespace between pairs and at the ends", "apns_device_token", " ab cd\tEF\n", ""},
		{"FCM tokens need not be hex", "android_gcm_reg_id", "not:hex-token_1", ""},
	} {
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			t.Run(c.rule+" "+method, func(t *testing.T) {
				e := newTestEnv(t)
				r := e.request(t, method, "/api/v1/users/me/"+c.path, url.Values{"token": {c.token}}, &e.alice)
				switch {
				case c.msg != "":
					wantAPIError(t, r, 400, "BAD_REQUEST", c.msg)
				case method == http.MethodDelete:
					wantAPIError(t, r, 400, "BAD_REQUEST", "Token does not exist")
				default:
					wantAPISuccess(t, r)
				}
				wantTokens := 0
				if c.msg == "" && method == http.MethodPost {
					wantTokens = 1
				}
				if got := e.tokens(t, e.alice); len(got) != wantTokens {
					t.Errorf("tokens after: got %d, want %d", len(got), wantTokens)
				}
			})
		}
	}
}

func TestPushTokens_BotsRefusedBeforeParameters(t *testing.T) {
	e := newTestEnv(t)
	for _, path := range []string{"apns_device_token", "android_gcm_reg_id"} {
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			for _, req := range []*http.Request{
				buildRequest(t, urlencoded, method, "/api/v1/users/me/"+path, nil),
				buildRequest(t, urlencoded, method, "/api/v1/users/me/"+path+"?token=%zz", url.Values{"token": {"ab"}}),
				buildRequest(t, urlencoded, method, "/api/v1/users/me/"+path, url.Values{"pad": {strings.Repeat("x", defaultMaxBody)}}),
			} {
				req.SetBasicAuth(e.bot.Email, e.bot.key)
				wantAPIError(t, e.do(t, req), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.")
			}
		}
	}
	if got := e.tokens(t, e.bot); len(got) != 0 {
		t.Errorf("bot's tokens: got %v, want none", got)
	}
}

func TestPushTokens_AddTwiceRemoveAndOwnership(t *testing.T) {
	e := newTestEnv(t)
	add := func(a *account, path string, params url.Values) response {
		return e.request(t, http.MethodPost, "/api/v1/users/me/"+path, params, a)
	}
	remove := func(a *account, path, token string) response {
		return e.requestAs(t, queryString, http.MethodDelete, "/api/v1/users/me/"+path, url.Values{"token": {token}}, a)
	}
	since := time.Now().Unix()
	wantAPISuccess(t, add(&e.alice, "apns_device_token", url.Values{"token": {"AABB"}}))
	wantAPISuccess(t, add(&e.alice, "apns_device_token", url.Values{"token": {"AABB"}, "appid": {"com.example.other"}}))
	wantAPISuccess(t, add(&e.bob, "apns_device_token", url.Values{"token": {"aabb"}, "appid": {"org.zulip.flutter"}}))
	wantAPISuccess(t, add(&e.alice, "android_gcm_reg_id", url.Values{"token": {"Fcm-Token"}}))

	list := mustPushTokens(t, e.st, e.alice.ID)
	if len(list) != 2 || list[0].AppID != "org.zulip.Zulip" || list[0].Token != "AABB" {
		t.Fatalf("alice's tokens: got %+v, want AABB with the default app id, and the FCM token", list)
	}
	for _, tok := range list { // stored with its kind and time (SPEC §5)
		if want := map[string]pushKind{"AABB": pushAPNs, "Fcm-Token": pushFCM}[tok.Token]; tok.Kind != want || tok.Created < since || tok.Created > time.Now().Unix() {
			t.Errorf("token %s: kind %v, created %d; want %v, created from %d to now", tok.Token, tok.Kind, tok.Created, want, since)
		}
	}
	wantAPIError(t, remove(&e.alice, "android_gcm_reg_id", "fcm-token"), 400, "BAD_REQUEST", "Token does not exist")
	wantAPISuccess(t, remove(&e.alice, "android_gcm_reg_id", "Fcm-Token"))
	wantAPISuccess(t, remove(&e.alice, "apns_device_token", "aabb")) // APNs matches case-insensitively
	wantAPIError(t, remove(&e.alice, "apns_device_token", "AABB"), 400, "BAD_REQUEST", "Token does not exist")
	if got := e.tokens(t, e.bob); !slices.Equal(got, []string{"a:aabb"}) {
		t.Errorf("bob's tokens after alice's removals: got %v, want [a:aabb]", got)
	}
	r := e.request(t, http.MethodPost, "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"x"}, "appid": {"a"}}, &e.alice)
	if got := r.body["ignored_parameters_unsupported"]; !reflect.DeepEqual(got, []any{"appid"}) {
		t.Errorf("FCM add with appid: ignored got %v, want [appid]", got)
	}
}

// TestTestNotification_WithoutPushAnswersAsZulip: with no way out
// configured, Zulip's senders log and return, so the route succeeds and
// sends nothing; a token not the caller's is refused all the same, and
// bots are refused as on the token routes.
func TestTestNotification_WithoutPushAnswersAsZulip(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/apns_device_token", url.Values{"token": {"aa11"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/mobile_push/test_notification", nil, &e.alice))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/mobile_push/test_notification", url.Values{"token": {"aa11"}}, &e.alice))
	wantAPIError(t, e.request(t, "POST", "/api/v1/mobile_push/test_notification", url.Values{"token": {"aa11"}}, &e.bob), 400, "INVALID_PUSH_DEVICE_TOKEN", "Device not recognized")
	wantAPIError(t, e.request(t, "POST", "/api/v1/mobile_push/test_notification", nil, &e.bot), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.")
	if n, err := e.st.outbox.entries(e.st); err != nil || n != 0 {
		t.Errorf("outbox entries: got %d (%v), want none queued", n, err)
	}
}
