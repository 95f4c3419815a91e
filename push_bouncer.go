package main

// Zulip's mobile push notification service (the "push bouncer"), which
// the official apps need: `zulite push register EMAIL HOSTNAME` registers
// the server (remotes/server/register) and keeps its zulip_org_id and
// zulip_org_key in meta; from then on, with no direct credentials, the
// worker forwards token registrations and removals
// (remotes/push/register, remotes/push/unregister, queued in the
// transaction that registers or removes the token) and sends
// remotes/push/notify with Zulip's payloads (zerver/lib/push_notifications.py
// send_notifications_to_bouncer; zilencer/views.py). Requests carry
// HTTP basic authentication with the org id and key, as Zulip's
// send_to_push_bouncer does. zulite has no user or realm UUIDs, so it
// names users by user_id, which the bouncer accepts.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/bbolt"
)

const defaultBouncerURL = "https://push.zulipchat.com"

var keyPushBouncer = []byte("push_bouncer")

// bouncerRegistration is meta's "push_bouncer".
type bouncerRegistration struct {
	URL    string `json:"url"`
	OrgID  string `json:"zulip_org_id"`
	OrgKey string `json:"zulip_org_key"`
}

// bouncerToken is Zulip's token_kind: APNS = 1, GCM = 2.
func bouncerTokenKind(k pushKind) string {
	if k == pushAPNs {
		return "1"
	}
	return "2"
}

// queueBouncerTx queues the forwarding of a token's registration
// ("register") or removal ("unregister") to the bouncer, when the
// server is registered with it (also from an admin command run on the
// file; a server delivering directly drops them).
func (s *store) queueBouncerTx(tx *bbolt.Tx, kind string, userID uint64, t pushToken) error {
	if tx.Bucket(bucketMeta).Get(keyPushBouncer) == nil {
		return nil
	}
	return putJob(tx.Bucket(bucketPushOutbox), pushJob{Kind: kind, UserID: userID, Device: &t})
}

// unregisterAllTx queues the removal at the bouncer of every token of the
// user, before they are removed (`zulite user key`).
func (s *store) unregisterAllTx(tx *bbolt.Tx, userID uint64) error {
	for _, t := range pushDevices(tx, userID) {
		if err := s.queueBouncerTx(tx, "unregister", userID, t); err != nil {
			return err
		}
	}
	return nil
}

func (s *store) bouncerRegistration() (bouncerRegistration, bool, error) {
	var r bouncerRegistration
	found := false
	err := s.view(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get(keyPushBouncer)
		if v == nil {
			return nil
		}
		found = true
		return json.Unmarshal(v, &r)
	})
	return r, found, err
}

func (s *store) setBouncerRegistration(r bouncerRegistration) error {
	return s.update(func(tx *bbolt.Tx) error { return putJSON(tx.Bucket(bucketMeta), keyPushBouncer, r) })
}

type bouncerPush struct {
	reg  bouncerRegistration
	http *http.Client
}

func newBouncerPush(reg bouncerRegistration) *bouncerPush {
	return &bouncerPush{reg: reg, http: &http.Client{Timeout: 30 * time.Second}}
}

func (*bouncerPush) perDevice() bool { return false }

func (b *bouncerPush) deliver(ctx context.Context, j pushJob, devices []pushToken) pushResult {
	switch j.Kind {
	case "register", "unregister":
		form := url.Values{"user_id": {strconv.FormatUint(j.UserID, 10)}, "token": {j.Device.Token}, "token_kind": {bouncerTokenKind(j.Device.Kind)}}
		if j.Kind == "register" && j.Device.Kind == pushAPNs {
			form.Set("ios_app_id", j.Device.AppID)
		}
		res, _ := b.post(ctx, "push/"+j.Kind, "application/x-www-form-urlencoded", []byte(form.Encode()))
		return res
	}
	var android, apple []string
	for _, d := range devices {
		if d.Kind == pushAPNs {
			apple = append(apple, d.Token)
		} else {
			android = append(android, d.Token)
		}
	}
	body, _ := json.Marshal(map[string]any{
		"user_id":         j.UserID,
		"apns_payload":    j.APNs,
		"gcm_payload":     j.FCM,
		"gcm_options":     map[string]string{"priority": j.FCMPriority},
		"android_devices": nonNilStrings(android),
		"apple_devices":   nonNilStrings(apple),
	})
	res, raw := b.post(ctx, "push/notify", "application/json", body)
	if res.err != nil {
		return res
	}
	var answer struct {
		Deleted struct {
			Android []string `json:"android_devices"`
			Apple   []string `json:"apple_devices"`
		} `json:"deleted_devices"`
	}
	json.Unmarshal(raw, &answer)
	for _, t := range answer.Deleted.Android {
		res.dead = append(res.dead, pushToken{Kind: pushFCM, Token: t})
	}
	for _, t := range answer.Deleted.Apple {
		res.dead = append(res.dead, pushToken{Kind: pushAPNs, Token: t})
	}
	return res
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// post sends to /api/v1/remotes/<endpoint>, as send_to_push_bouncer:
// a network failure or a 5xx may pass; a 4xx will not.
func (b *bouncerPush) post(ctx context.Context, endpoint, contentType string, body []byte) (pushResult, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(b.reg.URL, "/")+"/api/v1/remotes/"+endpoint, bytes.NewReader(body))
	if err != nil {
		return pushResult{err: err}, nil
	}
	req.SetBasicAuth(b.reg.OrgID, b.reg.OrgKey)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "ZulipServer/"+zulipVersion)
	status, raw, after, err := postToProvider(b.http, req, 1<<20)
	switch {
	case err != nil:
		return pushResult{err: err, retry: true}, nil
	case status == http.StatusOK:
		return pushResult{}, raw
	case transientStatus(status):
		return pushResult{err: fmt.Errorf("bouncer %s: %d", endpoint, status), retry: true, after: after}, nil
	}
	var answer struct {
		Msg string `json:"msg"`
	}
	json.Unmarshal(raw, &answer)
	return pushResult{err: fmt.Errorf("bouncer %s: %d %s", endpoint, status, answer.Msg)}, nil
}

// pushRegister is `zulite push register EMAIL HOSTNAME`: it registers
// the server with the bouncer (again, with the same id and key, when it
// is registered already: that updates the contact e-mail and hostname,
// as Zulip's register_server does) and keeps the credentials.
func pushRegister(env adminEnv, args []string, o options, out io.Writer) error {
	email, hostname := args[0], args[1]
	if err := checkEmail(email); err != nil {
		return err
	}
	reg, found, err := env.store.bouncerRegistration()
	if err != nil {
		return err
	}
	if !found {
		id, key := make([]byte, 16), make([]byte, 32)
		rand.Read(id)
		rand.Read(key)
		id[6] = id[6]&0x0f | 0x40 // a version 4 UUID
		id[8] = id[8]&0x3f | 0x80
		h := hex.EncodeToString(id)
		reg = bouncerRegistration{OrgID: h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], OrgKey: hex.EncodeToString(key)}
	}
	reg.URL = o.PushBouncerURL
	if reg.URL == "" {
		reg.URL = defaultBouncerURL
	}
	form := url.Values{"zulip_org_id": {reg.OrgID}, "zulip_org_key": {reg.OrgKey}, "hostname": {hostname}, "contact_email": {email}}
	res, _ := newBouncerPush(reg).post(context.Background(), "server/register", "application/x-www-form-urlencoded", []byte(form.Encode()))
	if res.err != nil {
		return fmt.Errorf("push register: %w", res.err)
	}
	if err := env.store.setBouncerRegistration(reg); err != nil {
		return err
	}
	fmt.Fprintf(out, "Registered with %s as zulip_org_id %s; restart the server to send pushes through it.\n", reg.URL, reg.OrgID)
	return nil
}

// newPushWorker picks the way out: direct delivery when credentials are
// given, else the bouncer when the server is registered with it, else
// none (pushes are off: nil).
func newPushWorker(st *store, s *server, o options, log interface {
	Info(string, ...any)
}) (*pusher, error) {
	var out pushTransport
	var direct directPush
	var err error
	if o.PushAPNsKey != "" {
		if direct.apns, err = newAPNsClient(o.PushAPNsKey, o.PushAPNsKeyID, o.PushAPNsTeamID, o.PushAPNsURL); err != nil {
			return nil, err
		}
	}
	if o.PushFCMCredentials != "" {
		if direct.fcm, err = newFCMClient(o.PushFCMCredentials, o.PushFCMURL); err != nil {
			return nil, err
		}
	}
	if o.PushIdle < 0 {
		return nil, fmt.Errorf("%w: --push-idle must not be negative", errUsage)
	}
	switch reg, found, err := st.bouncerRegistration(); {
	case err != nil:
		return nil, err
	case direct.apns != nil || direct.fcm != nil:
		out = direct
		log.Info("push notifications: direct", "apns", direct.apns != nil, "fcm", direct.fcm != nil)
	case found:
		out = newBouncerPush(reg)
		log.Info("push notifications: through the bouncer", "url", reg.URL)
	default:
		return nil, nil
	}
	return newPusher(st, out, s.events.idleFor(o.PushIdle), s.log, s.baseURL, s.realmName, o.PushOutboxMax), nil
}
