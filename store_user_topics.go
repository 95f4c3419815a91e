package main

// Topics a user mutes, unmutes or follows: Zulip's UserTopic rows
// (zerver/models/user_topics.py, zerver/lib/user_topics.py), kept in
// the user_topics bucket. A row exists only while its policy is not
// "inherit"; topics are one whatever their case, as Zulip's
// usertopic_case_insensitive_topic_uniq.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"

	"go.etcd.io/bbolt"
)

var (
	bucketUserTopics = []byte("user_topics")
	bucketTopicUsers = []byte("topic_users") // who set a policy for a topic
)

// Zulip's UserTopic.VisibilityPolicy.
const (
	policyInherit  = 0 // no row: the channel's own behaviour
	policyMuted    = 1
	policyUnmuted  = 2 // a topic heard in a muted channel
	policyFollowed = 3
)

// maxUserTopics bounds one user's rows (zulite's bound: Zulip sets
// none), so that register's user_topics and the legacy muted_topics
// event stay a bounded size. A package variable so that tests may lower
// it.
var maxUserTopics = 10_000

// userTopicRow is one row as register lists it.
type userTopicRow struct {
	ChannelID uint64
	Topic     string // the name the row was made with
	Policy    int
	Updated   int64 // last_updated, Unix seconds
}

// userTopicKey is user id ‖ channel id ‖ the folded topic; the user's
// count of rows is kept under the user id alone.
func userTopicKey(userID, channelID uint64, topic string) []byte {
	k := make([]byte, 16, 16+len(topic))
	binary.BigEndian.PutUint64(k, userID)
	binary.BigEndian.PutUint64(k[8:], channelID)
	return append(k, foldTopic(topic)...)
}

// topicUsersPrefix is the topic_users keys' prefix for a topic:
// channel id ‖ the folded topic ‖ 0x00; a user id follows.
func topicUsersPrefix(channelID uint64, topic string) []byte {
	k := make([]byte, 8, 9+len(topic)+8)
	binary.BigEndian.PutUint64(k, channelID)
	k = append(k, foldTopic(topic)...)
	return append(k, 0)
}

// topicUsers are the users with a policy for a channel's topic.
func topicUsers(tx *bbolt.Tx, channelID uint64, topic string) []uint64 {
	var ids []uint64
	prefix := topicUsersPrefix(channelID, topic)
	c := tx.Bucket(bucketTopicUsers).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+8 { // not a longer topic that holds 0x00
			ids = append(ids, btoi(k[len(prefix):]))
		}
	}
	return ids
}

// A row's value: policy (1 byte) ‖ last_updated (uint64) ‖ the topic
// as first named.
func encodeUserTopic(policy int, updated int64, topic string) []byte {
	v := make([]byte, 9, 9+len(topic))
	v[0] = byte(policy)
	binary.BigEndian.PutUint64(v[1:], uint64(updated))
	return append(v, topic...)
}

func decodeUserTopic(k, v []byte) (userTopicRow, bool) {
	if len(k) < 16 || len(v) < 9 {
		return userTopicRow{}, false
	}
	return userTopicRow{ChannelID: btoi(k[8:16]), Policy: int(v[0]), Updated: int64(binary.BigEndian.Uint64(v[1:9])), Topic: string(v[9:])}, true
}

// topicPolicy is the user's policy for a channel's topic (inherit when
// they set none).
func topicPolicy(tx *bbolt.Tx, userID, channelID uint64, topic string) int {
	if v := tx.Bucket(bucketUserTopics).Get(userTopicKey(userID, channelID, topic)); len(v) >= 9 {
		return int(v[0])
	}
	return policyInherit
}

// eachUserTopic calls fn with each of the user's rows, in key order.
func eachUserTopic(tx *bbolt.Tx, userID uint64, fn func(userTopicRow)) {
	prefix := itob(userID)
	c := tx.Bucket(bucketUserTopics).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if row, ok := decodeUserTopic(k, v); ok {
			fn(row)
		}
	}
}

// topicPolicies are the user's policies by channel and folded topic,
// for a walk that asks about many messages (at most maxUserTopics).
type topicPolicies map[uint64]map[string]int

func userTopicPolicies(tx *bbolt.Tx, userID uint64) topicPolicies {
	out := topicPolicies{}
	eachUserTopic(tx, userID, func(r userTopicRow) {
		if out[r.ChannelID] == nil {
			out[r.ChannelID] = map[string]int{}
		}
		out[r.ChannelID][foldTopic(r.Topic)] = r.Policy
	})
	return out
}

func (p topicPolicies) of(channelID uint64, topic string) int {
	return p[channelID][foldTopic(topic)]
}

// topicIsMuted is Zulip's is_row_muted: a muted topic, or a topic of a
// muted channel that is neither unmuted nor followed.
func topicIsMuted(channelMuted bool, policy int) bool {
	if channelMuted {
		return policy != policyUnmuted && policy != policyFollowed
	}
	return policy == policyMuted
}

// mutedChannels are the channels the user muted.
func mutedChannels(tx *bbolt.Tx, userID uint64) map[uint64]bool {
	muted := map[uint64]bool{}
	prefix := itob(userID)
	c := tx.Bucket(bucketSubscriptions).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var sub subscription
		if json.Unmarshal(v, &sub) == nil && sub.Muted {
			muted[btoi(k[8:])] = true
		}
	}
	return muted
}

// topicTarget is what one request sets: a channel by id or (the legacy
// route) by name, a topic, a policy, and what a channel that is not
// there, or that the user may not read when a policy is set, is refused
// with (Zulip's access_stream_by_id and by_name, or, to remove a policy,
// access_stream_to_remove_visibility_policy_by_id and by_name, which
// only ask that the channel exist).
type topicTarget struct {
	ChannelID   uint64
	ChannelName string
	Topic       string
	Policy      int
	Missing     error // a rejection
}

// userTopicChanged: a user's policy for a topic changed. Topic is as the
// request named it; Muted is the user's muted topics after the change,
// for the legacy muted_topics event ([channel name, topic, last_updated]
// each, Zulip's get_topic_mutes), nil when Zulip sends none (a policy
// taken from a topic that moved). MutedLater: the list is read when
// told, after the commit (a send's automatic policies: followOnSend).
type userTopicChanged struct {
	UserID     uint64
	ChannelID  uint64
	Topic      string
	Policy     int
	Updated    int64
	Muted      [][]any
	MutedLater bool
}

// setUserTopic sets the user's policy for a topic (Zulip's
// do_set_user_topic_visibility_policy): a row made, changed or removed,
// told; a policy the topic already has, or inherit where there is no
// row, changes and tells nothing.
func (s *store) setUserTopic(u user, t topicTarget) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		var ch channel
		var err error
		if t.ChannelName != "" {
			ch, err = s.channelByName(tx, t.ChannelName)
		} else {
			ch, err = s.channelByID(tx, t.ChannelID)
		}
		if err != nil || t.Policy != policyInherit && !s.canAccess(tx, u, ch) {
			return t.Missing
		}
		return s.setUserTopicTx(tx, u, ch, t.Topic, t.Policy, true, report)
	})
}

// setUserTopicTx sets a policy in a write transaction and reports it
// (with the legacy muted_topics list when legacy, as Zulip's
// skip_muted_topics_event is false); a policy the topic already has, or
// inherit where there is no row, writes and reports nothing. A new row
// past maxUserTopics is refused before anything is written.
func (s *store) setUserTopicTx(tx *bbolt.Tx, u user, ch channel, topic string, policy int, legacy bool, report func(any)) error {
	b := tx.Bucket(bucketUserTopics)
	key := userTopicKey(u.ID, ch.ID, topic)
	old := b.Get(key)
	count := uint64(0)
	if v := b.Get(itob(u.ID)); len(v) == 8 {
		count = btoi(v)
	}
	now := s.now().Unix()
	switch {
	case policy == policyInherit && old == nil:
		return nil
	case policy == policyInherit:
		if err := b.Delete(key); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTopicUsers).Delete(append(topicUsersPrefix(ch.ID, topic), itob(u.ID)...)); err != nil {
			return err
		}
		count--
	case len(old) >= 9 && int(old[0]) == policy:
		return nil
	case old != nil:
		row, _ := decodeUserTopic(key, old)
		if err := b.Put(key, encodeUserTopic(policy, now, row.Topic)); err != nil {
			return err
		}
	default:
		if count >= uint64(maxUserTopics) {
			return refusal(errTooManyUserTopics)
		}
		if err := b.Put(key, encodeUserTopic(policy, now, topic)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTopicUsers).Put(append(topicUsersPrefix(ch.ID, topic), itob(u.ID)...), []byte{}); err != nil {
			return err
		}
		count++
	}
	if err := putCount(b, u.ID, count); err != nil {
		return err
	}
	c := userTopicChanged{UserID: u.ID, ChannelID: ch.ID, Topic: topic, Policy: policy, Updated: now}
	if legacy {
		c.Muted = s.mutedTopicsTx(tx, u.ID)
	}
	report(c)
	return nil
}

func putCount(b *bbolt.Bucket, userID, count uint64) error {
	if count == 0 {
		return b.Delete(itob(userID))
	}
	return b.Put(itob(userID), itob(count))
}

// userTopics answers register's user_topics.
func (s *store) userTopics(userID uint64) ([]userTopicRow, error) {
	var rows []userTopicRow
	err := s.view(func(tx *bbolt.Tx) error {
		rows = nil
		eachUserTopic(tx, userID, func(r userTopicRow) { rows = append(rows, r) })
		return nil
	})
	return rows, err
}

// mutedTopics answers register's legacy muted_topics.
func (s *store) mutedTopics(userID uint64) ([][]any, error) {
	var muted [][]any
	err := s.view(func(tx *bbolt.Tx) error {
		muted = s.mutedTopicsTx(tx, userID)
		return nil
	})
	return muted, err
}

// mutedTopicsTx is Zulip's get_topic_mutes: [channel name, topic,
// last_updated] for each muted topic.
func (s *store) mutedTopicsTx(tx *bbolt.Tx, userID uint64) [][]any {
	muted := [][]any{}
	eachUserTopic(tx, userID, func(r userTopicRow) {
		if r.Policy != policyMuted {
			return
		}
		if ch, err := s.channelByID(tx, r.ChannelID); err == nil {
			muted = append(muted, []any{ch.Name, r.Topic, r.Updated})
		}
	})
	return muted
}

// storedUserTopic is the topic a request names: the empty topic may be
// named by its display name (POST /user_topics' topic parameter).
func storedUserTopic(topic string) string {
	if topic == emptyTopicDisplayName {
		return ""
	}
	return topic
}

// mutedUnread counts the unread messages of topics the user muted
// (topicIsMuted), which register's unread_msgs.count leaves out: Zulip's
// aggregate_unread_data counts only unmuted_stream_msgs of channel
// messages, though it lists them all.
func (s *store) mutedUnread(userID uint64, topics []unreadTopic) (int, error) {
	n := 0
	err := s.view(func(tx *bbolt.Tx) error {
		n = 0
		muted, policies := mutedChannels(tx, userID), userTopicPolicies(tx, userID)
		for _, t := range topics {
			if topicIsMuted(muted[t.ChannelID], policies.of(t.ChannelID, t.Topic)) {
				n += len(t.IDs)
			}
		}
		return nil
	})
	return n, err
}

// moveTopicPolicies carries users' policies for a topic whose messages
// moved, as Zulip's do_update_message does when the whole topic moved
// (change_all, or no message left behind): each user's policy leaves
// the old topic (its user_topic event without the legacy muted_topics
// one, skip_muted_topics_event) and goes to the new one, merged, when
// that one already has messages, with the user's policy there
// (policyAfterMerge); a user who cannot read the channel the topic
// moved to loses their policy instead. A topic renamed only in case is
// the same topic, and keeps its rows.
func (s *store) moveTopicPolicies(tx *bbolt.Tx, from, to channel, orig, target string, moved []uint64, changeAll bool, report func(any)) error {
	if from.ID == to.ID && foldTopic(orig) == foldTopic(target) {
		return nil
	}
	if !changeAll && len(topicIDs(tx, from.ID, orig)) > 0 {
		return nil // some of the topic stays
	}
	targetHasMessages := len(minus(topicIDs(tx, to.ID, target), moved)) > 0
	users := append(topicUsers(tx, from.ID, orig), topicUsers(tx, to.ID, target)...)
	slices.Sort(users)
	for _, uid := range slices.Compact(users) {
		u, err := lookUpUser(tx, uid)
		if err != nil {
			continue
		}
		origPolicy, targetPolicy := topicPolicy(tx, uid, from.ID, orig), topicPolicy(tx, uid, to.ID, target)
		if origPolicy != policyInherit && from.ID != to.ID && !s.canAccess(tx, u, to) {
			// The topic is gone for them: its policy goes, and only a
			// policy of their own for the new topic is weighed.
			if err := s.setUserTopicTx(tx, u, from, orig, policyInherit, true, report); err != nil {
				return err
			}
			if origPolicy = policyInherit; targetPolicy == policyInherit {
				continue
			}
		}
		if origPolicy != policyInherit {
			if err := s.setUserTopicTx(tx, u, from, orig, policyInherit, false, report); err != nil {
				return err
			}
		}
		policy := origPolicy
		if targetHasMessages {
			policy = policyAfterMerge(origPolicy, targetPolicy)
		}
		if policy == targetPolicy {
			continue
		}
		if err := s.setUserTopicTx(tx, u, to, target, policy, true, report); err != nil && !isRejection(err) {
			return err
		}
	}
	return nil
}

// policyAfterMerge is Zulip's get_visibility_policy_after_merge: the
// more visible of the two, followed before unmuted before none before
// muted.
func policyAfterMerge(orig, target int) int {
	for _, p := range []int{policyFollowed, policyUnmuted, policyInherit} {
		if orig == p || target == p {
			return p
		}
	}
	return policyMuted
}

// When sending follows or unmutes a topic for its sender: Zulip's
// UserProfile.AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_* (the settings
// automatically_follow_topics_policy and
// automatically_unmute_topics_in_muted_streams_policy).
const (
	autoOnParticipation = 1
	autoOnSend          = 2
	autoOnInitiation    = 3
	autoNever           = 4
)

// followOnSend sets the policies a channel message's sending sets, in
// its transaction, after it is indexed (Zulip's do_send_messages): the
// sender's, by their two settings (policyForSend), unless they are a
// bot; then FOLLOWED for each mentioned human recipient with
// automatically_follow_topics_where_mentioned whose topic is neither
// muted nor followed. It answers the sender's new policy (0: none), the
// send's automatic_new_visibility_policy. Each user costs a few reads,
// and a message mentions few (its length bounds them); a user's legacy
// muted_topics list is read after the commit (setAutomaticPolicy).
func (s *store) followOnSend(tx *bbolt.Tx, sender user, ch channel, m message, mentioned []uint64, report func(any)) (int, error) {
	set := func(u user, policy int) error { return s.setAutomaticPolicy(tx, u, ch, m.Topic, policy, report) }
	automatic := 0
	if !sender.Bot {
		follow, unmute := automaticPolicies(tx, sender.ID)
		sub, _ := subscriptionOf(tx, sender.ID, ch.ID)
		muted := sub.Muted
		initiated := func() bool { // no older message in the topic: the index's first is this one
			k, _ := tx.Bucket(bucketTopicMessages).Cursor().Seek(topicPrefix(ch.ID, m.Topic))
			return string(k) == string(topicKey(ch.ID, m.Topic, m.ID))
		}
		if automatic = policyForSend(follow, unmute, muted, topicPolicy(tx, sender.ID, ch.ID, m.Topic), initiated); automatic != policyInherit {
			if err := set(sender, automatic); err != nil {
				return 0, err
			}
		}
	}
	for _, id := range mentioned {
		u, err := lookUpUser(tx, id)
		if err != nil || u.Bot || !u.Active || !isSubscribed(tx, id, ch.ID) || !settingOn(tx, id, "automatically_follow_topics_where_mentioned") {
			continue
		}
		if p := topicPolicy(tx, id, ch.ID, m.Topic); p == policyMuted || p == policyFollowed {
			continue
		}
		if err := set(u, policyFollowed); err != nil {
			return 0, err
		}
	}
	return automatic, nil
}

// followOnParticipation sets the policy a reaction or a submessage sets
// for the one who added it (Zulip's do_add_reaction and
// do_add_submessage, by visibility_policy_for_participation): with
// either setting on participation, a subscriber follows the topic of a
// channel message, or unmutes it in a channel they muted; a followed
// topic is never lowered.
func (s *store) followOnParticipation(tx *bbolt.Tx, u user, ch channel, m message, report func(any)) error {
	follow, unmute := automaticPolicies(tx, u.ID)
	sub, subscribed := subscriptionOf(tx, u.ID, ch.ID)
	if u.Bot || m.isDirect() || !subscribed || follow != autoOnParticipation && unmute != autoOnParticipation {
		return nil
	}
	policy := policyFollowed
	if follow != autoOnParticipation {
		if !sub.Muted {
			return nil
		}
		policy = policyUnmuted
	}
	if topicPolicy(tx, u.ID, ch.ID, m.Topic) == policyFollowed {
		return nil
	}
	return s.setAutomaticPolicy(tx, u, ch, m.Topic, policy, report)
}

// automaticPolicies are the user's automatically_follow_topics_policy
// and automatically_unmute_topics_in_muted_streams_policy.
func automaticPolicies(tx *bbolt.Tx, userID uint64) (follow, unmute int) {
	settings := decodeOverrides(tx.Bucket(bucketUserSettings).Get(itob(userID)))
	return settingOf[int](settings, "automatically_follow_topics_policy"), settingOf[int](settings, "automatically_unmute_topics_in_muted_streams_policy")
}

// subscriptionOf is the user's subscription to a channel, and whether
// they have one.
func subscriptionOf(tx *bbolt.Tx, userID, channelID uint64) (subscription, bool) {
	var sub subscription
	err := getJSON(tx.Bucket(bucketSubscriptions), append(itob(userID), itob(channelID)...), &sub)
	return sub, err == nil
}

// setAutomaticPolicy sets a policy the user did not ask for, told with
// the legacy muted_topics list read after the commit; a user at
// maxUserTopics is left as they are, and what triggered it goes ahead.
func (s *store) setAutomaticPolicy(tx *bbolt.Tx, u user, ch channel, topic string, policy int, report func(any)) error {
	err := s.setUserTopicTx(tx, u, ch, topic, policy, false, func(c any) {
		change := c.(userTopicChanged)
		change.MutedLater = true
		report(change)
	})
	if isRejection(err) {
		return nil
	}
	return err
}

// policyForSend is Zulip's visibility_policy_for_send_message: the
// policy a send sets for its sender (inherit: none), FOLLOWED before
// UNMUTED (unmuting only in a channel the sender muted), never lowering
// a followed topic nor repeating the current policy; initiated (asked
// only when it decides) says no older message is in the topic.
func policyForSend(follow, unmute int, channelMuted bool, current int, initiated func() bool) int {
	if follow == autoNever && unmute == autoNever || current == policyFollowed {
		return policyInherit
	}
	if follow == autoOnParticipation || follow == autoOnSend {
		return policyFollowed
	}
	policy := policyInherit
	if channelMuted && (unmute == autoOnParticipation || unmute == autoOnSend) {
		policy = policyUnmuted
	}
	if current != policyInherit {
		if policy == current {
			return policyInherit
		}
		return policy
	}
	if follow == autoOnInitiation && initiated() {
		return policyFollowed
	}
	if channelMuted && unmute == autoOnInitiation && initiated() {
		policy = policyUnmuted
	}
	return policy
}
