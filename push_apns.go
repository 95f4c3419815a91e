package main

// Direct delivery to Apple (APNs) over HTTP/2 with token-based
// authentication: a .p8 key signs an ES256 JWT (kid: the key id, iss:
// the team id), renewed every 50 minutes as Apple asks (between 20 and
// 60). Requests go to /3/device/<token> with apns-topic (the app id the
// device registered with), apns-push-type, apns-priority and
// apns-expiration (24 hours, as Zulip's time_to_live).

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	defaultAPNsURL    = "https://api.push.apple.com"
	apnsTokenLifetime = 50 * time.Minute
)

type apnsClient struct {
	url, keyID, teamID string
	key                *ecdsa.PrivateKey
	http               *http.Client
	now                func() time.Time

	mu      sync.Mutex
	jwt     string
	jwtMade time.Time
}

// newAPNsClient reads the .p8 key (PKCS #8, P-256).
func newAPNsClient(keyFile, keyID, teamID, baseURL string) (*apnsClient, error) {
	if keyID == "" || teamID == "" {
		return nil, fmt.Errorf("%w: --push-apns-key needs --push-apns-key-id and --push-apns-team-id", errUsage)
	}
	data, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("APNs key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("APNs key: not a PEM file")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("APNs key: %w", err)
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("APNs key: not an EC key")
	}
	return &apnsClient{url: strings.TrimRight(baseURL, "/"), keyID: keyID, teamID: teamID, key: key,
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true}}, now: time.Now}, nil
}

// token is the provider JWT, made afresh every apnsTokenLifetime.
func (c *apnsClient) token() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.jwt != "" && now.Sub(c.jwtMade) < apnsTokenLifetime {
		return c.jwt, nil
	}
	header, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": c.keyID})
	claims, _ := json.Marshal(map[string]any{"iss": c.teamID, "iat": now.Unix()})
	signing := b64url(header) + "." + b64url(claims)
	digest := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, c.key, digest[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64) // JWS: r and s, 32 bytes each
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	c.jwt, c.jwtMade = signing+"."+b64url(sig), now
	return c.jwt, nil
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// apnsWire is Zulip's reshaping of its APNs payload for the wire
// (send_apple_push_notification): custom's members at the top, the rest
// under "aps".
func apnsWire(payload json.RawMessage) ([]byte, error) {
	var data map[string]any
	if err := json.Unmarshal(payload, &data); err != nil {
		return nil, err
	}
	msg := map[string]any{}
	if custom, ok := data["custom"].(map[string]any); ok {
		for k, v := range custom {
			msg[k] = v
		}
	}
	delete(data, "custom")
	msg["aps"] = data
	return json.Marshal(msg)
}

// send delivers one notification to one device.
func (c *apnsClient) send(ctx context.Context, d pushToken, payload json.RawMessage) pushResult {
	body, err := apnsWire(payload)
	if err != nil {
		return pushResult{err: err}
	}
	jwt, err := c.token()
	if err != nil {
		return pushResult{err: err}
	}
	token := strings.Join(strings.Fields(d.Token), "")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/3/device/"+token, bytes.NewReader(body))
	if err != nil {
		return pushResult{err: err}
	}
	topic := d.AppID
	if topic == "" {
		topic = "org.zulip.Zulip"
	}
	req.Header.Set("authorization", "bearer "+jwt)
	req.Header.Set("apns-topic", topic)
	req.Header.Set("apns-expiration", strconv.FormatInt(c.now().Add(24*time.Hour).Unix(), 10))
	// Zulip sends its remove notifications the same way (aioapns's
	// defaults): an alert push at priority 10.
	req.Header.Set("apns-push-type", "alert")
	req.Header.Set("apns-priority", "10")
	req.Header.Set("content-type", "application/json")
	status, raw, after, err := postToProvider(c.http, req, 64<<10)
	if err != nil {
		return pushResult{err: err, retry: true}
	}
	if status == http.StatusOK {
		return pushResult{}
	}
	var answer struct {
		Reason string `json:"reason"`
	}
	json.Unmarshal(raw, &answer)
	err = fmt.Errorf("APNs: %d %s", status, answer.Reason)
	switch {
	case status == http.StatusGone, answer.Reason == "BadDeviceToken", answer.Reason == "Unregistered", answer.Reason == "DeviceTokenNotForTopic":
		return pushResult{err: err, dead: []pushToken{d}}
	case transientStatus(status), answer.Reason == "ExpiredProviderToken":
		if answer.Reason == "ExpiredProviderToken" {
			c.mu.Lock()
			c.jwt = ""
			c.mu.Unlock()
		}
		return pushResult{err: err, retry: true, after: after}
	}
	return pushResult{err: err}
}

// postToProvider sends a request to a push provider (APNs, FCM, the
// bouncer) and reads the start of its answer, up to limit bytes, and its
// Retry-After. An error is a request that got no answer: worth retrying.
func postToProvider(client *http.Client, req *http.Request, limit int64) (status int, body []byte, after time.Duration, err error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	body, _ = io.ReadAll(io.LimitReader(resp.Body, limit))
	return resp.StatusCode, body, retryAfter(resp.Header), nil
}

// transientStatus is a provider's answer that may pass: 429 or 5xx.
func transientStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// retryAfter reads a Retry-After of seconds.
func retryAfter(h http.Header) time.Duration {
	if n, err := strconv.Atoi(h.Get("Retry-After")); err == nil && n > 0 {
		return min(time.Duration(n)*time.Second, pushRetryMax)
	}
	return 0
}

// directPush delivers to APNs and FCM directly, a device at a time.
type directPush struct {
	apns *apnsClient // nil: not configured
	fcm  *fcmClient
}

func (directPush) perDevice() bool { return true }

func (d directPush) deliver(ctx context.Context, j pushJob, _ []pushToken) pushResult {
	switch {
	case j.Device == nil:
		return pushResult{err: errors.New("no device")}
	case j.Device.Kind == pushAPNs && d.apns != nil:
		return d.apns.send(ctx, *j.Device, j.APNs)
	case j.Device.Kind == pushFCM && d.fcm != nil:
		return d.fcm.send(ctx, *j.Device, j.FCM, j.FCMPriority)
	}
	return pushResult{err: errors.New("no credentials for this kind of device")}
}
