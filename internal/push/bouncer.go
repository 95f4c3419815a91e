package push

// Zulip's mobile push notification service (the "push bouncer"), which
// the official apps need: a server registers (remotes/server/register)
// with an org id and key of its own making, then forwards its users'
// token registrations and removals (remotes/push/register,
// remotes/push/unregister) and sends remotes/push/notify with Zulip's
// payloads (zerver/lib/push_notifications.py
// send_notifications_to_bouncer; zilencer/views.py). Requests carry
// HTTP basic authentication with the org id and key, as Zulip's
// send_to_push_bouncer does. zulite has no user or realm UUIDs, so it
// names users by user_id, which the bouncer accepts.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Bouncer is one server's client of the bouncer. An error of its
// methods is a *TransientError when the failure may pass (no answer, a
// 429 or a 5xx), else the bouncer's refusal, with its msg.
type Bouncer struct {
	url, orgID, orgKey string
	version            string // the Zulip version the server speaks, for User-Agent
	http               http.Client
}

// NewBouncer is a client of the bouncer at baseURL, as the server
// registered there with orgID and orgKey; version is the Zulip version
// it names in its User-Agent.
func NewBouncer(baseURL, orgID, orgKey, version string) *Bouncer {
	return &Bouncer{url: strings.TrimRight(baseURL, "/"), orgID: orgID, orgKey: orgKey, version: version,
		http: http.Client{Timeout: 30 * time.Second}}
}

// RegisterServer registers the server with the bouncer, or updates its
// contact e-mail and hostname when the org id and key are registered
// already (Zulip's register_server).
func (b *Bouncer) RegisterServer(ctx context.Context, hostname, contactEmail string) error {
	form := url.Values{"zulip_org_id": {b.orgID}, "zulip_org_key": {b.orgKey}, "hostname": {hostname}, "contact_email": {contactEmail}}
	_, err := b.post(ctx, "server/register", "application/x-www-form-urlencoded", []byte(form.Encode()))
	return err
}

// Register forwards the registration of a user's token.
func (b *Bouncer) Register(ctx context.Context, userID uint64, d Device) error {
	return b.forward(ctx, "register", userID, d)
}

// Unregister forwards the removal of a user's token.
func (b *Bouncer) Unregister(ctx context.Context, userID uint64, d Device) error {
	return b.forward(ctx, "unregister", userID, d)
}

func (b *Bouncer) forward(ctx context.Context, kind string, userID uint64, d Device) error {
	form := url.Values{"user_id": {strconv.FormatUint(userID, 10)}, "token": {d.Token}, "token_kind": {bouncerTokenKind(d.Kind)}}
	if kind == "register" && d.Kind == APNs {
		form.Set("ios_app_id", d.AppID)
	}
	_, err := b.post(ctx, "push/"+kind, "application/x-www-form-urlencoded", []byte(form.Encode()))
	return err
}

// bouncerTokenKind is Zulip's token_kind: APNS = 1, GCM = 2.
func bouncerTokenKind(k Kind) string {
	if k == APNs {
		return "1"
	}
	return "2"
}

// Notify delivers a notification to the user's devices; dead are the
// devices the bouncer says no longer exist.
func (b *Bouncer) Notify(ctx context.Context, userID uint64, devices []Device, n Notification) (dead []Device, err error) {
	var android, apple []string
	for _, d := range devices {
		if d.Kind == APNs {
			apple = append(apple, d.Token)
		} else {
			android = append(android, d.Token)
		}
	}
	body, _ := json.Marshal(map[string]any{
		"user_id":         userID,
		"apns_payload":    n.APNs,
		"gcm_payload":     n.FCM,
		"gcm_options":     map[string]string{"priority": n.FCMPriority},
		"android_devices": nonNilStrings(android),
		"apple_devices":   nonNilStrings(apple),
	})
	raw, err := b.post(ctx, "push/notify", "application/json", body)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Deleted struct {
			Android []string `json:"android_devices"`
			Apple   []string `json:"apple_devices"`
		} `json:"deleted_devices"`
	}
	json.Unmarshal(raw, &answer)
	for _, t := range answer.Deleted.Android {
		dead = append(dead, Device{Kind: FCM, Token: t})
	}
	for _, t := range answer.Deleted.Apple {
		dead = append(dead, Device{Kind: APNs, Token: t})
	}
	return dead, nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// post sends to /api/v1/remotes/<endpoint>, as send_to_push_bouncer:
// a network failure or a 5xx may pass; a 4xx will not.
func (b *Bouncer) post(ctx context.Context, endpoint, contentType string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/api/v1/remotes/"+endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(b.orgID, b.orgKey)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "ZulipServer/"+b.version)
	status, raw, after, err := postToProvider(&b.http, req, 1<<20)
	switch {
	case err != nil:
		return nil, &TransientError{Err: err}
	case status == http.StatusOK:
		return raw, nil
	case transientStatus(status):
		return nil, &TransientError{Err: fmt.Errorf("bouncer %s: %d", endpoint, status), RetryAfter: after}
	}
	var answer struct {
		Msg string `json:"msg"`
	}
	json.Unmarshal(raw, &answer)
	return nil, fmt.Errorf("bouncer %s: %d %s", endpoint, status, answer.Msg)
}
