package main

// Zulip's mobile push notification service (the "push bouncer"), which
// the official apps need, on the core's side (its client is
// internal/push): `zulite push register EMAIL HOSTNAME` registers the
// server (remotes/server/register) and keeps its zulip_org_id and
// zulip_org_key in meta; from then on, with no direct credentials, the
// worker forwards token registrations and removals
// (remotes/push/register, remotes/push/unregister, queued in the
// transaction that registers or removes the token) and sends
// remotes/push/notify with Zulip's payloads. Here too: the choice of
// the way out when the server starts (newPushWorker).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/bbolt"

	"zulite/internal/push"
)

const defaultBouncerURL = "https://push.zulipchat.com"

var keyPushBouncer = []byte("push_bouncer")

// bouncerRegistration is meta's "push_bouncer".
type bouncerRegistration struct {
	URL    string `json:"url"`
	OrgID  string `json:"zulip_org_id"`
	OrgKey string `json:"zulip_org_key"`
}

// queueBouncerTx queues the forwarding of a token's registration
// ("register") or removal ("unregister") to the bouncer, when the
// server is registered with it (also from an admin command run on the
// file; a server delivering directly drops them).
func (s *store) queueBouncerTx(tx *bbolt.Tx, kind string, userID uint64, t pushToken) error {
	if !bouncerRegistered(tx) {
		return nil
	}
	return putJob(tx.Bucket(bucketPushOutbox), pushJob{Kind: kind, UserID: userID, Device: &t})
}

// bouncerRegistered tells whether the server is registered with the push
// bouncer, whose queue then hears of every token's registration and
// removal.
func bouncerRegistered(tx *bbolt.Tx) bool {
	return tx.Bucket(bucketMeta).Get(keyPushBouncer) != nil
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
	if err := push.NewBouncer(reg.URL, reg.OrgID, reg.OrgKey, zulipVersion).RegisterServer(context.Background(), hostname, email); err != nil {
		return fmt.Errorf("push register: %w", err)
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
	var direct pushClients
	var err error
	if o.PushAPNsKey != "" {
		if direct.apns, err = push.NewAPNsClient(o.PushAPNsKey, o.PushAPNsKeyID, o.PushAPNsTeamID, o.PushAPNsURL); errors.Is(err, push.ErrAPNsIdentity) {
			return nil, fmt.Errorf("%w: --push-apns-key needs --push-apns-key-id and --push-apns-team-id", errUsage)
		} else if err != nil {
			return nil, err
		}
	}
	if o.PushFCMCredentials != "" {
		if direct.fcm, err = push.NewFCMClient(o.PushFCMCredentials, o.PushFCMURL); err != nil {
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
		out = &direct
		log.Info("push notifications: direct", "apns", direct.apns != nil, "fcm", direct.fcm != nil)
	case found:
		out = &pushClients{bouncer: push.NewBouncer(reg.URL, reg.OrgID, reg.OrgKey, zulipVersion)}
		log.Info("push notifications: through the bouncer", "url", reg.URL)
	default:
		return nil, nil
	}
	return newPusher(st, out, s.events.idleFor(o.PushIdle), s.log, s.baseURL, s.realmName, o.PushOutboxMax), nil
}
