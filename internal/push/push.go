package push

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Kind is the provider a device's token belongs to.
type Kind uint8

const (
	APNs Kind = iota + 1 // Apple's
	FCM                  // Google's Firebase Cloud Messaging
)

// Device is a registered token.
type Device struct {
	Kind  Kind
	Token string // verbatim, as the device sent it
	AppID string // APNs: the app the device registered with; "": Zulip's
}

// Notification is one push as it goes out: Zulip's APNs payload and FCM
// data (Message.Payloads, Realm.RemovePayloads), and its gcm_options' priority.
type Notification struct {
	APNs, FCM   json.RawMessage
	FCMPriority string
}

// DeadTokenError is a provider's word that a device's token no longer
// exists: the device is to be forgotten.
type DeadTokenError struct{ Err error }

func (e *DeadTokenError) Error() string { return e.Err.Error() }

// TransientError is a failure that may pass: no answer, a 429 or a 5xx,
// or credentials the provider wants renewed.
type TransientError struct {
	Err error
	// RetryAfter is the provider's Retry-After; 0: none given.
	RetryAfter time.Duration
}

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// postToProvider sends a request to a push provider (APNs, FCM, the
// bouncer) and reads the start of its answer, up to limit bytes, and its
// Retry-After. An error is a request that got no answer: worth retrying.
func postToProvider(client *http.Client, req *http.Request, limit int64) (status int, body []byte, after time.Duration, err error) {
	resp, err := client.Do(req)
	if uerr, ok := err.(*url.Error); ok {
		// The URL may carry a device token (APNs' /3/device/TOKEN):
		// the error names the provider's host, never the path.
		return 0, nil, 0, fmt.Errorf("%s %s: %w", uerr.Op, req.URL.Host, uerr.Err)
	}
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
		return time.Duration(n) * time.Second
	}
	return 0
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// pkcs8Key reads a PEM-encoded PKCS #8 private key; what names it in
// errors, and notPEM is the error when it is no PEM. Neither quotes the
// key.
func pkcs8Key(what, notPEM string, data []byte) (any, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New(notPEM)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return key, nil
}
