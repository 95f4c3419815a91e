package push

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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const apnsTokenLifetime = 50 * time.Minute

// ErrAPNsIdentity is a key given without its key id or team id.
var ErrAPNsIdentity = errors.New("push: an APNs key needs its key id and team id")

// APNsClient sends to Apple with one team's key.
type APNsClient struct {
	url, keyID, teamID string
	key                *ecdsa.PrivateKey
	http               *http.Client
	now                func() time.Time

	mu      sync.Mutex
	jwt     string
	jwtMade time.Time
}

// NewAPNsClient reads the .p8 key (PKCS #8, P-256) of keyID, of the
// team teamID; baseURL is APNs' endpoint (production or sandbox).
func NewAPNsClient(keyFile, keyID, teamID, baseURL string) (*APNsClient, error) {
	if keyID == "" || teamID == "" {
		return nil, ErrAPNsIdentity
	}
	data, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("APNs key: %w", err)
	}
	parsed, err := pkcs8Key("APNs key", "APNs key: not a PEM file", data)
	if err != nil {
		return nil, err
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("APNs key: not an EC key")
	}
	return &APNsClient{url: strings.TrimRight(baseURL, "/"), keyID: keyID, teamID: teamID, key: key,
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true}}, now: time.Now}, nil
}

// token is the provider JWT, made afresh every apnsTokenLifetime.
func (c *APNsClient) token() (string, error) {
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

// Send delivers one notification to one device: an error is a
// *DeadTokenError when Apple says the token is gone, and a
// *TransientError when the failure may pass.
func (c *APNsClient) Send(ctx context.Context, d Device, n Notification) error {
	body, err := apnsWire(n.APNs)
	if err != nil {
		return err
	}
	jwt, err := c.token()
	if err != nil {
		return err
	}
	token := strings.Join(strings.Fields(d.Token), "")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/3/device/"+token, bytes.NewReader(body))
	if err != nil {
		return err
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
		return &TransientError{Err: err}
	}
	if status == http.StatusOK {
		return nil
	}
	var answer struct {
		Reason string `json:"reason"`
	}
	json.Unmarshal(raw, &answer)
	err = fmt.Errorf("APNs: %d %s", status, answer.Reason)
	switch {
	case status == http.StatusGone, answer.Reason == "BadDeviceToken", answer.Reason == "Unregistered", answer.Reason == "DeviceTokenNotForTopic":
		return &DeadTokenError{err}
	case transientStatus(status), answer.Reason == "ExpiredProviderToken":
		if answer.Reason == "ExpiredProviderToken" {
			c.mu.Lock()
			c.jwt = ""
			c.mu.Unlock()
		}
		return &TransientError{Err: err, RetryAfter: after}
	}
	return err
}
