package main

// The core's side of internal/push: the outbox's ways out
// (pushTransport, push_outbox.go), its direct and bouncer clients given
// the outbox's jobs and read back into what the outbox keeps of an
// answer; and what the payloads name.

import (
	"context"
	"errors"
	"strconv"

	"zulite/internal/push"
)

const (
	defaultAPNsURL = "https://api.push.apple.com"
	defaultFCMURL  = "https://fcm.googleapis.com"
)

// pushClients are internal/push's clients the outbox delivers through
// (pushTransport): the bouncer's, or APNs' and FCM's directly.
type pushClients struct {
	apns    *push.APNsClient // nil: not configured
	fcm     *push.FCMClient
	bouncer *push.Bouncer // not nil: all goes through the bouncer
}

// perDevice: direct delivery goes to one device at a time, the bouncer
// to all of a user's.
func (c *pushClients) perDevice() bool { return c.bouncer == nil }

// deliver sends a job. A failure that may pass is retried, after the
// provider's Retry-After when it gave one (at most pushRetryMax).
func (c *pushClients) deliver(ctx context.Context, j pushJob, devices []pushToken) pushResult {
	var dead []push.Device
	var err error
	switch {
	case c.bouncer != nil && j.Kind == "register":
		err = c.bouncer.Register(ctx, j.UserID, j.Device.device())
	case c.bouncer != nil && j.Kind == "unregister":
		err = c.bouncer.Unregister(ctx, j.UserID, j.Device.device())
	case c.bouncer != nil:
		if j.Device != nil { // a test notification: that device alone
			devices = []pushToken{*j.Device}
		}
		to := make([]push.Device, len(devices))
		for i, d := range devices {
			to[i] = d.device()
		}
		dead, err = c.bouncer.Notify(ctx, j.UserID, to, j.notification())
	case j.Device == nil:
		return pushResult{err: errors.New("no device")}
	case j.Device.Kind == pushAPNs && c.apns != nil:
		err = c.apns.Send(ctx, j.Device.device(), j.notification())
	case j.Device.Kind == pushFCM && c.fcm != nil:
		err = c.fcm.Send(ctx, j.Device.device(), j.notification())
	default:
		return pushResult{err: errors.New("no credentials for this kind of device")}
	}
	res := pushResult{err: err}
	switch e := err.(type) {
	case *push.TransientError:
		res.retry, res.after = true, min(e.RetryAfter, pushRetryMax)
	case *push.DeadTokenError:
		res.dead = []pushToken{*j.Device}
	}
	for _, d := range dead {
		res.dead = append(res.dead, pushTokenOf(d))
	}
	return res
}

// notification is the job's payloads, as they go out.
func (j *pushJob) notification() push.Notification {
	return push.Notification{APNs: j.APNs, FCM: j.FCM, FCMPriority: j.FCMPriority}
}

// device is the token as internal/push names it.
func (t pushToken) device() push.Device {
	d := push.Device{Token: t.Token, AppID: t.AppID}
	switch t.Kind {
	case pushAPNs:
		d.Kind = push.APNs
	case pushFCM:
		d.Kind = push.FCM
	}
	return d
}

// pushTokenOf is a token internal/push names.
func pushTokenOf(d push.Device) pushToken {
	if d.Kind == push.APNs {
		return pushToken{Kind: pushAPNs, Token: d.Token}
	}
	return pushToken{Kind: pushFCM, Token: d.Token}
}

// realm is the server as every payload names it.
func (p *pusher) realm() push.Realm {
	id, _ := strconv.Atoi(uploadRealmID)
	return push.Realm{URL: p.baseURL, Name: p.realmName, ID: id}
}

// pushMessage is the message with what its payloads name.
func (p *pusher) pushMessage(m *message, sender *user, ch *channel, recipients []uint64, names []string) push.Message {
	return push.Message{Realm: p.realm(), ID: m.ID, Timestamp: m.Timestamp, Topic: m.Topic, Rendered: m.Rendered, Content: m.Content,
		SenderID: sender.ID, SenderEmail: sender.Email, SenderFullName: sender.FullName, SenderAvatarURL: p.baseURL + avatarURL(*sender, true),
		ChannelID: ch.ID, ChannelName: ch.Name, Recipients: recipients, Names: names}
}
