package main

// Who a message pushes to (push_outbox.go's worker asks): the
// message's recipients, a slice at a time, kept when Zulip's defaults
// would notify them (a direct message, a mention, a wildcard mention, a
// channel with push notifications on), when they are idle, have not read
// it and have a device.

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"go.etcd.io/bbolt"

	"zulite/internal/push"
)

// pushExamine is how many of a message's recipients the worker looks at
// in one pass.
const pushExamine = 1024

// expand delivers a message to the next pushExamine of its recipients:
// those it notifies are sent to at once, and the message's entry keeps
// where the walk stopped (Next) until it has passed them all. Nothing
// is written per recipient but a delivered push (push_sent) and a
// delivery to retry (a notify entry of its own).
func (p *pusher) expand(ctx context.Context, key uint64, j pushJob) (pushOutcome, error) {
	var jobs []pushEntry
	next, done := uint64(0), true
	err := p.st.view(func(tx *bbolt.Tx) error {
		jobs, next, done = nil, 0, true
		m, err := messageByID(tx, j.MessageID)
		if err != nil {
			return nil // gone: nothing to push
		}
		var sender user
		if err := getJSON(tx.Bucket(bucketUsers), itob(m.SenderID), &sender); err != nil {
			return err
		}
		var ch channel
		var names []string // a group's participants, for its title
		if j.Users == nil {
			if ch, err = p.st.channelByID(tx, m.ChannelID); err != nil {
				return nil
			}
		} else if len(j.Users) > 2 {
			for _, id := range j.Users {
				var u user
				if getJSON(tx.Bucket(bucketUsers), itob(id), &u) == nil {
					names = append(names, u.FullName)
				}
			}
			slices.Sort(names)
		}
		templates := push.NewTemplates(p.pushMessage(&m, &sender, &ch, j.Users, names))
		candidates := p.candidates(tx, m, j)
		if len(candidates) > pushExamine {
			candidates, done = candidates[:pushExamine], false
			next = candidates[pushExamine-1] + 1
		}
		for _, uid := range candidates {
			if uid == m.SenderID || !hasPushDevice(tx, uid) {
				continue
			}
			var u user
			if getJSON(tx.Bucket(bucketUsers), itob(uid), &u) != nil || !u.Active || u.Bot {
				continue
			}
			if unread, _ := unreadAmong(tx, uid, j.ReadKey, []uint64{m.ID}); len(unread) == 0 {
				continue // read already, or not the user's to read
			}
			trigger := "private_message"
			if j.Users == nil {
				if trigger = channelPushTrigger(tx, u, ch, m); trigger == "" {
					continue
				}
			}
			if !p.idleFor(uid) {
				continue
			}
			apns, fcm := templates.Payloads(u.ID, trigger)
			base := pushJob{Kind: "notify", MessageID: m.ID, UserID: uid, ReadKey: j.ReadKey, FCMPriority: "high"}
			devices := pushDevices(tx, uid)
			if !p.out.perDevice() {
				base.APNs, base.FCM = apns, fcm
				jobs = append(jobs, pushEntry{job: base, devices: devices})
				continue
			}
			for _, d := range devices {
				jobs = append(jobs, pushEntry{job: base.forDevice(d, apns, fcm), devices: devices})
			}
		}
		return nil
	})
	if err != nil {
		return pushOutcome{}, err
	}
	out := pushOutcome{key: key}
	if !done {
		rest := j
		rest.Next = next
		out.keep = &rest
	}
	var counts []func()
	for _, o := range p.sendAll(ctx, jobs) {
		if o.keep != nil { // to retry: an entry of its own
			out.jobs = append(out.jobs, *o.keep)
		}
		out.sent = append(out.sent, o.sent...)
		out.dead = append(out.dead, o.dead...)
		if o.count != nil {
			counts = append(counts, o.count)
		}
	}
	n := int64(len(jobs))
	out.count = func() {
		p.st.outbox.stats.queued.Add(n)
		for _, c := range counts {
			c()
		}
	}
	return out, nil
}

// candidates are who may be pushed a message, in order of id from the
// entry's Next: a direct message's recipients, or the channel's
// subscribers who received it.
func (p *pusher) candidates(tx *bbolt.Tx, m message, j pushJob) []uint64 {
	if j.Users != nil {
		ids := slices.Clone(j.Users)
		slices.Sort(ids)
		i, _ := slices.BinarySearch(ids, j.Next)
		return ids[i:]
	}
	var ids []uint64
	prefix := itob(m.ChannelID)
	c := tx.Bucket(bucketSubscribers).Cursor()
	for k, v := c.Seek(append(slices.Clone(prefix), itob(j.Next)...)); k != nil && bytes.HasPrefix(k, prefix) && len(ids) <= pushExamine; k, v = c.Next() {
		if len(v) < 8 || btoi(v) < m.ID {
			ids = append(ids, btoi(k[8:]))
		}
	}
	return ids
}

// channelPushTrigger is why a channel message is pushed to the user, as
// Zulip's get_push_notification_trigger ranks the reasons, or "" when it
// is not: a mention (enable_offline_push_notifications); a wildcard
// mention in a followed topic (enable_followed_topic_wildcard_mentions_notify);
// a wildcard mention (wildcard_mentions_notify, the subscription's or
// the user's); a followed topic (enable_followed_topic_push_notifications);
// the channel's push_notifications (the subscription's, else
// enable_stream_push_notifications). Wildcard mentions need
// enable_offline_push_notifications too. The user's topic policy
// (store_user_topics.go) weighs first, as Zulip's
// user_allows_notifications_in_StreamTopic: a muted topic, or a topic of a
// muted channel that is not unmuted, hears neither wildcard mentions nor
// the channel's setting.
func channelPushTrigger(tx *bbolt.Tx, u user, ch channel, m message) string {
	sub, ok := subscriptionOf(tx, u.ID, ch.ID)
	if !ok {
		return ""
	}
	overrides := decodeOverrides(tx.Bucket(bucketUserSettings).Get(itob(u.ID)))
	policy := topicPolicy(tx, u.ID, ch.ID, m.Topic)
	allows := func(own *bool, setting string) bool {
		if sub.Muted && policy != policyUnmuted || policy == policyMuted {
			return false
		}
		if own != nil {
			return *own
		}
		return boolSetting(overrides, setting)
	}
	followed := policy == policyFollowed
	var flags byte
	if v := tx.Bucket(bucketFlags).Get(append(itob(u.ID), itob(m.ID)...)); v != nil {
		flags = v[0]
	}
	offline := boolSetting(overrides, "enable_offline_push_notifications")
	followedWildcards := offline && followed && boolSetting(overrides, "enable_followed_topic_wildcard_mentions_notify")
	wildcards := offline && allows(sub.WildcardMentionsNotify, "wildcard_mentions_notify")
	switch {
	case flags&flagMentioned != 0 && offline:
		return "mentioned"
	case flags&flagTopicWildcardMentioned != 0 && followedWildcards:
		return "topic_wildcard_mentioned_in_followed_topic"
	case flags&flagStreamWildcardMentioned != 0 && followedWildcards:
		return "stream_wildcard_mentioned_in_followed_topic"
	case flags&flagTopicWildcardMentioned != 0 && wildcards:
		return "topic_wildcard_mentioned"
	case flags&flagStreamWildcardMentioned != 0 && wildcards:
		return "stream_wildcard_mentioned"
	case followed && boolSetting(overrides, "enable_followed_topic_push_notifications"):
		return "followed_topic_push_notify"
	case allows(sub.PushNotifications, "enable_stream_push_notifications"):
		return "stream_push_notify"
	}
	return ""
}

// boolSetting is a user's boolean setting: their own value, else Zulip's
// default (api_settings.go).
func boolSetting(overrides map[string]json.RawMessage, name string) bool {
	return settingOf[bool](overrides, name)
}

// settingOf is a user's setting of type T: their own value, else Zulip's
// default.
func settingOf[T any](overrides map[string]json.RawMessage, name string) T {
	var v T
	if raw, ok := overrides[name]; ok && json.Unmarshal(raw, &v) == nil {
		return v
	}
	if i, found := slices.BinarySearchFunc(userSettingsTable, name, func(s userSetting, name string) int { return strings.Compare(s.name, name) }); found {
		v, _ = userSettingsTable[i].def.(T)
	}
	return v
}
