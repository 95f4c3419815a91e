package main

// Mentions: what a message's @-mentions mean for the people who receive
// it, as Zulip records them, one personal flag each (UserMessage's
// mentioned, stream_wildcard_mentioned and topic_wildcard_mentioned),
// and the realm's rule for wildcards. The renderer (internal/markdown) says
// who is mentioned; the store records it when the message is stored.

import (
	"bytes"
	"slices"
	"strings"

	"go.etcd.io/bbolt"

	"zulite/internal/markdown"
)

// The mention flags, beside flagStarred and flagCollapsed in the flags
// bucket.
const (
	flagMentioned               byte = 1 << 2
	flagStreamWildcardMentioned byte = 1 << 3
	flagTopicWildcardMentioned  byte = 1 << 4
	flagsAnyMention                  = flagMentioned | flagStreamWildcardMentioned | flagTopicWildcardMentioned
	// flagHasAlertWord: the message holds one of the user's alert words
	// (store_mutes.go), set when it is sent.
	flagHasAlertWord byte = 1 << 5
	flagsAtSend           = flagsAnyMention | flagHasAlertWord
)

// wildcardMentionThreshold is Zulip's Realm.WILDCARD_MENTION_THRESHOLD:
// a channel of more subscribers (a topic of more participants) takes a
// wildcard mention only from members of can_mention_many_users_group
// (Zulip's default, and zulite's, is its administrators).
const wildcardMentionThreshold = 15

// maxRenderedLength is Zulip's bound on a rendering: a hundred times the
// longest message.
const maxRenderedLength = 100 * maxMessageLength

// mentionSet is what a sent message's mentions mean.
type mentionSet struct {
	UserIDs []uint64 // mentioned by name, not silently; sorted
	Channel bool     // @**all** and the like: every recipient
	Topic   bool     // @**topic**: the topic's participants
	// Participants are the topic's participants when Topic: who sent or
	// reacted to a message of it, and the sender; sorted.
	Participants []uint64
	// Alerted are the users whose alert words the message holds, sorted
	// (store_mutes.go's usersAlerted).
	Alerted []uint64
	// Groups are the user groups mentioned, not silently; their members
	// (but the sender) are among UserIDs.
	Groups []int
}

// flagsFor is the mention flags of one recipient.
func (m mentionSet) flagsFor(userID uint64) byte {
	var f byte
	if _, ok := slices.BinarySearch(m.UserIDs, userID); ok {
		f |= flagMentioned
	}
	if m.Channel {
		f |= flagStreamWildcardMentioned
	}
	if _, ok := slices.BinarySearch(m.Participants, userID); ok && m.Topic {
		f |= flagTopicWildcardMentioned
	}
	if _, ok := slices.BinarySearch(m.Alerted, userID); ok {
		f |= flagHasAlertWord
	}
	return f
}

// messageRendering is a message's HTML and its mentions, worked out
// before it is stored.
type messageRendering struct {
	HTML     string
	Mentions mentionSet
}

// renderForSend renders a message for its sender, as Zulip's
// render_incoming_message does, in one read transaction: the renderer
// asks mentionResolver for the users its mentions may name, the
// channels (that the sender may read) its links may name and the
// oldest message of each linked topic; for a topic wildcard the
// topic's participants are read too. Emoticons are translated as the
// sender's translate_emoticons setting says (render_message_markdown
// reads the sender's, also when the sender edits the message).
func (s *store) renderForSend(sender user, msg outgoingMessage) (messageRendering, error) {
	var out messageRendering
	err := s.view(func(tx *bbolt.Tx) error {
		r, err := markdown.RenderWith(msg.Content, msg.RealmURL, &mentionResolver{s: s, tx: tx, sender: sender},
			markdown.Options{TranslateEmoticons: translatesEmoticons(tx, sender.ID), RealmEmoji: realmEmojiLookup(s.customEmoji()),
				Linkifiers: s.compiledLinkifiers()})
		if err != nil {
			return err
		}
		out = messageRendering{HTML: r.HTML, Mentions: mentionSet{UserIDs: r.MentionedIDs, Channel: r.ChannelWildcard, Topic: r.TopicWildcard,
			Groups: r.MentionedGroupIDs}}
		if len(r.MentionedGroupIDs) > 0 {
			if out.Mentions.UserIDs, err = s.groupMentioned(tx, sender, r.MentionedIDs, r.MentionedGroupIDs); err != nil {
				return err
			}
		}
		if out.Mentions.Alerted, err = usersAlerted(tx, r.AlertText); err != nil {
			return err
		}
		if !r.TopicWildcard {
			return nil
		}
		var ch channel
		if msg.To.Name != "" {
			ch, err = s.channelByName(tx, msg.To.Name)
		} else {
			ch, err = s.channelByID(tx, msg.To.ID)
		}
		if err != nil {
			return nil // postMessage refuses the send
		}
		out.Mentions.Participants = topicParticipants(tx, ch.ID, msg.Topic, sender.ID)
		return nil
	})
	return out, err
}

// mentionResolver answers the renderer from the store, in the read
// transaction of one sender's message: Zulip's MentionData, fetched
// only for the syntax the message holds.
type mentionResolver struct {
	s      *store
	tx     *bbolt.Tx
	sender user
}

// Users reads the accounts once, for every name and id the message's
// mentions hold, oldest first.
func (m *mentionResolver) Users(names map[string]bool, ids map[uint64]bool) ([]markdown.User, error) {
	all, _, _, err := m.s.directory.of(m.tx)
	if err != nil {
		return nil, err
	}
	var users []markdown.User
	for _, u := range all {
		if ids[u.ID] || names[strings.ToLower(u.FullName)] {
			users = append(users, markdown.User{ID: u.ID, FullName: u.FullName, Active: u.Active})
		}
	}
	return users, nil
}

// UserGroups answers the active user groups of these names (Zulip's
// MentionData.get_user_group), for @*group* mentions.
func (m *mentionResolver) UserGroups(names map[string]bool) ([]markdown.UserGroup, error) {
	var groups []markdown.UserGroup
	for _, g := range m.s.groups().groups {
		if !g.Deactivated && names[strings.ToLower(g.Name)] {
			groups = append(groups, markdown.UserGroup{ID: g.ID, Name: g.Name})
		}
	}
	return groups, nil
}

// groupMentioned is who a message mentions: those it names, and every
// active member of the groups it mentions, recursively, but the sender
// (Zulip's mentions_user_ids with each group's members), sorted.
func (s *store) groupMentioned(tx *bbolt.Tx, sender user, named []uint64, groups []int) ([]uint64, error) {
	users, _, _, err := s.directory.of(tx)
	if err != nil {
		return nil, err
	}
	d := s.groups()
	ids := slices.Clone(named)
	for _, g := range groups {
		for _, id := range d.members(g, users, false) {
			if id != sender.ID {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// checkGroupMentions is Zulip's check_user_group_mention_allowed: the
// sender may mention each group the message mentions loudly, by its
// can_mention_group (anyone when that is role:everyone).
func (s *store) checkGroupMentions(sender user, m mentionSet) error {
	d := s.groups()
	setting := &groupPermissionSettings[groupCanMention]
	for _, id := range m.Groups {
		g, ok := d.group(id)
		if !ok {
			continue
		}
		v := g.setting(groupCanMention)
		if !v.Anonymous && v.Group == groupEveryone || d.permits(setting, v, sender) {
			continue
		}
		return errGroupMentionForbidden.about(g.Name)
	}
	return nil
}

// ChannelID answers the channel of exactly this name if the sender may
// read it.
func (m *mentionResolver) ChannelID(name string) (uint64, bool) {
	ch, err := m.s.channelByName(m.tx, name)
	if err == nil && ch.Name == name && m.s.canAccess(m.tx, m.sender, ch) {
		return ch.ID, true
	}
	return 0, false
}

// TopicStart answers the oldest message of the channel's topic.
func (m *mentionResolver) TopicStart(channelID uint64, topic string) (uint64, bool) {
	prefix := topicPrefix(channelID, topic)
	k, _ := m.tx.Bucket(bucketTopicMessages).Cursor().Seek(prefix)
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return 0, false
	}
	return btoi(k[len(prefix):]), true
}

// topicParticipants is Zulip's participants_for_topic, and the sender:
// who sent or reacted to a message of the topic.
func topicParticipants(tx *bbolt.Tx, channelID uint64, topic string, senderID uint64) []uint64 {
	seen := map[uint64]bool{senderID: true}
	prefix := topicPrefix(channelID, topic)
	c := tx.Bucket(bucketTopicMessages).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		id := btoi(k[len(prefix):])
		if m, err := messageByID(tx, id); err == nil {
			seen[m.SenderID] = true
		}
		for _, r := range reactionsOf(tx, id) {
			seen[r.UserID] = true
		}
	}
	list := make([]uint64, 0, len(seen))
	for id := range seen {
		list = append(list, id)
	}
	slices.Sort(list)
	return list
}

// checkRendering refuses a rendering too large to keep, and applies
// Zulip's rule for wildcard mentions: in a channel of more than
// wildcardMentionThreshold subscribers (a topic of more participants),
// only members of can_mention_many_users_group may notify everyone;
// then the sender must be allowed to mention each group it mentions.
func (s *store) checkRendering(tx *bbolt.Tx, sender user, ch channel, r messageRendering) error {
	if len(r.HTML) > maxRenderedLength {
		return errUnableToRender
	}
	m := r.Mentions
	if (m.Channel || m.Topic) && !s.allowed(sender, realmCanMentionManyUsersGroup) {
		if m.Channel && len(subscriberIDs(tx, ch.ID)) > wildcardMentionThreshold {
			return errChannelWildcardMentionNotAllowed
		}
		if m.Topic && len(m.Participants) > wildcardMentionThreshold {
			return errTopicWildcardMentionNotAllowed
		}
	}
	return s.checkGroupMentions(sender, m)
}

// setMentionFlags records the mention flags of a stored message of the
// channel for each subscriber it concerns. A mention by name or of the
// topic costs a write per mentioned subscriber (bounded by the content
// and by the topic's participants); a channel-wide one a write per
// subscriber, which wildcardMentionThreshold and the realm's
// can_mention_many_users_group keep to those the realm allows.
func setMentionFlags(tx *bbolt.Tx, channelID, messageID uint64, m mentionSet) error {
	var concerned []uint64
	switch {
	case m.Channel:
		concerned = subscriberIDs(tx, channelID)
	case len(m.UserIDs) > 0 || m.Topic || len(m.Alerted) > 0:
		for _, id := range slices.Concat(m.UserIDs, m.Participants, m.Alerted) {
			if isSubscribed(tx, id, channelID) {
				concerned = append(concerned, id)
			}
		}
	}
	b := tx.Bucket(bucketFlags)
	for _, userID := range concerned {
		f := m.flagsFor(userID)
		if f == 0 {
			continue
		}
		k := append(itob(userID), itob(messageID)...)
		if v := b.Get(k); v != nil {
			f |= v[0]
		}
		if err := b.Put(k, []byte{f}); err != nil {
			return err
		}
	}
	return nil
}

// unreadMentions is register's unread_msgs.mentions among the unread
// ids: those the user is mentioned in by name, and those with a
// wildcard mention outside what the user muted, a topic or a channel
// (store_user_topics.go's topicIsMuted; Zulip's
// extract_unread_data_from_um_rows).
func (s *store) unreadMentions(userID uint64, unread []uint64) ([]uint64, error) {
	mentions := []uint64{}
	err := s.view(func(tx *bbolt.Tx) error {
		mentions = mentions[:0]
		flags := tx.Bucket(bucketFlags)
		muted, policies := mutedChannels(tx, userID), userTopicPolicies(tx, userID)
		for _, id := range unread {
			v := flags.Get(append(itob(userID), itob(id)...))
			if v == nil || v[0]&flagsAnyMention == 0 {
				continue
			}
			if v[0]&flagMentioned == 0 {
				m, err := messageByID(tx, id)
				if err != nil || !m.isDirect() && topicIsMuted(muted[m.ChannelID], policies.of(m.ChannelID, m.Topic)) {
					continue
				}
			}
			mentions = append(mentions, id)
		}
		return nil
	})
	return mentions, err
}
