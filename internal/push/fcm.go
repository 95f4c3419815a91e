package push

// Direct delivery to Android through FCM's HTTP v1 API: a service
// account's key (the JSON file Google hands out) signs an RS256 JWT,
// exchanged at its token_uri for an OAuth access token (scope
// firebase.messaging), kept until a minute before it expires. Each
// message goes to /v1/projects/<project_id>/messages:send with Zulip's
// data, every value a string as FCM v1 requires (Python's str() of it,
// as Zulip does), and android.priority from its gcm_options.

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const fcmScope = "https://www.googleapis.com/auth/firebase.messaging"

// FCMClient sends to Google with one service account.
type FCMClient struct {
	url, project, email, tokenURI string
	key                           *rsa.PrivateKey
	http                          *http.Client
	now                           func() time.Time

	mu      sync.Mutex
	access  string
	expires time.Time
}

// NewFCMClient reads a service account's JSON key; baseURL is FCM's
// endpoint.
func NewFCMClient(credentialsFile, baseURL string) (*FCMClient, error) {
	data, err := os.ReadFile(credentialsFile)
	if err != nil {
		return nil, fmt.Errorf("FCM credentials: %w", err)
	}
	var sa struct {
		ProjectID   string `json:"project_id"`
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
		TokenURI    string `json:"token_uri"`
	}
	if err := json.Unmarshal(data, &sa); err != nil {
		return nil, fmt.Errorf("FCM credentials: %w", err)
	}
	if sa.ProjectID == "" || sa.ClientEmail == "" || sa.TokenURI == "" {
		return nil, errors.New("FCM credentials: project_id, client_email and token_uri are needed")
	}
	parsed, err := pkcs8Key("FCM credentials", "FCM credentials: private_key is not PEM", []byte(sa.PrivateKey))
	if err != nil {
		return nil, err
	}
	key, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("FCM credentials: private_key is not an RSA key")
	}
	return &FCMClient{url: strings.TrimRight(baseURL, "/"), project: sa.ProjectID, email: sa.ClientEmail, tokenURI: sa.TokenURI, key: key,
		http: &http.Client{Timeout: 30 * time.Second}, now: time.Now}, nil
}

// accessToken is the OAuth token, fetched when there is none or it is
// about to expire.
func (c *FCMClient) accessToken(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.access != "" && now.Before(c.expires) {
		return c.access, nil
	}
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{"iss": c.email, "scope": fcmScope, "aud": c.tokenURI, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	signing := b64url(header) + "." + b64url(claims)
	digest := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, c.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {signing + "." + b64url(sig)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.tokenURI, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var answer struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("FCM OAuth: %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&answer); err != nil || answer.AccessToken == "" {
		return "", errors.New("FCM OAuth: no access_token")
	}
	c.access, c.expires = answer.AccessToken, now.Add(time.Duration(answer.ExpiresIn)*time.Second-time.Minute)
	return c.access, nil
}

// fcmData is Zulip's FCM data with every value a string.
func fcmData(payload json.RawMessage) (map[string]string, error) {
	var data map[string]any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&data); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(data))
	for k, v := range data {
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		case bool: // Python's str(True)
			out[k] = strings.ToUpper(strconv.FormatBool(v)[:1]) + strconv.FormatBool(v)[1:]
		default:
			b, _ := json.Marshal(v)
			out[k] = string(b)
		}
	}
	return out, nil
}

// Send delivers one notification to one device: an error is a
// *DeadTokenError when FCM says the token is gone, and a
// *TransientError when the failure may pass.
func (c *FCMClient) Send(ctx context.Context, d Device, n Notification) error {
	data, err := fcmData(n.FCM)
	if err != nil {
		return err
	}
	priority := n.FCMPriority
	if priority == "" {
		priority = "high"
	}
	body, _ := json.Marshal(map[string]any{"message": map[string]any{
		"token": d.Token, "data": data, "android": map[string]any{"priority": priority}}})
	access, err := c.accessToken(ctx)
	if err != nil {
		return &TransientError{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/v1/projects/"+url.PathEscape(c.project)+"/messages:send", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+access)
	req.Header.Set("Content-Type", "application/json")
	status, raw, after, err := postToProvider(c.http, req, 64<<10)
	if err != nil {
		return &TransientError{Err: err}
	}
	if status == http.StatusOK {
		return nil
	}
	var answer struct {
		Error struct {
			Status  string `json:"status"`
			Details []struct {
				ErrorCode string `json:"errorCode"`
			} `json:"details"`
		} `json:"error"`
	}
	json.Unmarshal(raw, &answer)
	code := answer.Error.Status
	for _, detail := range answer.Error.Details {
		if detail.ErrorCode != "" {
			code = detail.ErrorCode
		}
	}
	err = fmt.Errorf("FCM: %d %s", status, code)
	switch {
	case code == "UNREGISTERED":
		return &DeadTokenError{err}
	case status == http.StatusUnauthorized:
		c.mu.Lock()
		c.access = ""
		c.mu.Unlock()
		return &TransientError{Err: err}
	case transientStatus(status):
		return &TransientError{Err: err, RetryAfter: after}
	}
	return err
}
