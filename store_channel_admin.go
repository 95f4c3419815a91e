package main

// Administering a channel, as Zulip 11's zerver/views/streams.py and
// zerver/actions/streams.py do it: changing its settings (PATCH
// /streams/{id}), archiving and unarchiving it, deleting a topic in
// batches, listing its members, and the organisation's default
// channels (zerver/actions/default_streams.py). Every check is made
// before the first write, so that a refused request changes nothing
// (Zulip makes some changes before it refuses a later one).

import (
	"bytes"
	"errors"
	"slices"
	"time"

	"go.etcd.io/bbolt"
)

// groupChange is one can_*_group of a PATCH /streams/{id}: Zulip's
// GroupSettingChangeRequest, its new value and the old one the client
// expects (nil: none given).
type groupChange struct {
	Setting channelPermission
	New     groupSetting
	Old     *groupSetting
}

// channelUpdate is PATCH /streams/{id} as the handler read it; nil
// fields are not changed.
type channelUpdate struct {
	ChannelID     uint64
	NewName       *string // trimmed
	Description   *string // newlines made spaces
	Private       *bool
	WebPublic     *bool
	HistoryPublic *bool
	Default       *bool
	Retention     bool // message_retention_days was given
	Unarchive     bool // is_archived=false
	TopicsPolicy  *string
	Folder        bool // folder_id was given
	Groups        []groupChange
}

// channelUpdated: an administrator changed a channel. Properties are the
// changes in the order Zulip tells them; each event goes to those with
// metadata access to the channel then, but those who gain it hear of the
// channel's creation instead (and its subscribers), and those who lose
// it through a group setting of its deletion.
type channelUpdated struct {
	Channel    channelView // as it is now
	Properties []channelProperty
	Audience   []uint64 // metadata access now, who do not gain it
	Gaining    []uint64
	Losing     []uint64
	// Subscribers: the channel's active subscribers, for the gaining's
	// peer_add.
	Subscribers []uint64
	// Defaults, when the default channels changed: their ids, told to
	// every active member but guests (NonGuests).
	Defaults  *[]uint64
	NonGuests []uint64
}

// channelProperty is one stream update event: the property, its value,
// and the channel's name when it was sent (a rename's event carries the
// old one).
type channelProperty struct {
	Name     string
	Property string
	Value    any
	Extra    [][2]any // more members of the event, as Zulip adds them
}

// channelArchived: a channel was archived (or, Unarchived, brought back).
type channelArchived struct {
	Channel    channelView
	Unarchived bool
	Audience   []uint64 // metadata access
	Defaults   *[]uint64
	NonGuests  []uint64
}

// defaultChannelsChanged: the organisation's default channels changed.
type defaultChannelsChanged struct {
	IDs       []uint64
	NonGuests []uint64
}

// checkAdminister is Zulip's
// access_stream_for_delete_or_update_requiring_metadata_access: an
// administrator, or a member of the channel's can_administer_channel_group
// with metadata access, may; someone who can read it is told they may
// not; anyone else is told it does not exist.
func (s *store) checkAdminister(tx *bbolt.Tx, u user, ch channel) error {
	if u.isAdmin() {
		return nil
	}
	if u.Role != roleGuest && s.includes(ch.groupSetting(channelCanAdministerChannelGroup), u) && s.canSeeMetadata(tx, u, ch) {
		return nil
	}
	if s.canAccess(tx, u, ch) {
		return refusal(errCannotAdministerChannel)
	}
	return errNoSuchChannelID
}

// metadataAudience is Zulip's can_access_stream_metadata_user_ids: the
// active users who may see the channel, sorted.
func (s *store) metadataAudience(tx *bbolt.Tx, users []user, ch channel) []uint64 {
	var ids []uint64
	for _, u := range users {
		if u.Active && s.canSeeMetadata(tx, u, ch) {
			ids = append(ids, u.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

func activeNonGuests(users []user) []uint64 {
	var ids []uint64
	for _, u := range users {
		if u.Active && u.Role != roleGuest {
			ids = append(ids, u.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// defaultChannelIDs lists the default channels, by id.
func defaultChannelIDs(tx *bbolt.Tx, s *store) ([]uint64, error) {
	ids := []uint64{}
	err := tx.Bucket(bucketChannels).ForEach(func(k, _ []byte) error {
		ch, err := s.channelByID(tx, btoi(k))
		if err == nil && ch.Default {
			ids = append(ids, ch.ID)
		}
		return err
	})
	return ids, err
}

// defaultChannels is register's realm_default_streams.
func (s *store) defaultChannels() ([]uint64, error) {
	var ids []uint64
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		ids, err = defaultChannelIDs(tx, s)
		return err
	})
	return ids, err
}

// putChannel stores a changed channel.
func putChannel(tx *bbolt.Tx, ch channel) error {
	return putJSON(tx.Bucket(bucketChannels), itob(ch.ID), ch)
}

// updateChannel is Zulip's update_stream_backend: every check in Zulip's
// order, then every change in one transaction.
func (s *store) updateChannel(u user, c channelUpdate) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		ch, err := s.channelByID(tx, c.ChannelID)
		if err != nil {
			return errNoSuchChannelID
		}
		if err := s.checkAdminister(tx, u, ch); err != nil {
			return err
		}
		private := ch.Private
		if c.Private != nil {
			private = *c.Private
		}
		webPublic := c.WebPublic != nil && *c.WebPublic // zulite has no web-public channels
		isDefault := ch.Default
		if c.Default != nil {
			isDefault = *c.Default
		}
		history := true // zulite's channels all have history public to subscribers
		switch {
		case c.HistoryPublic != nil:
			history = *c.HistoryPublic
		case c.Private != nil:
			history = !*c.Private // Zulip's default: a private channel's history is protected
		}
		switch {
		case webPublic && !history, webPublic && private, !private && !history:
			return refusal(errInvalidParameters)
		case private && isDefault:
			return refusal(errDefaultChannelPrivate)
		case c.Private != nil && !s.canAccess(tx, u, ch):
			return refusal(errContentAccessRequired)
		case c.Private != nil && !s.allowed(u, map[bool]realmPermission{true: realmCanCreatePrivateChannelGroup, false: realmCanCreatePublicChannelGroup}[private]):
			return refusal(errInsufficientPermission)
		case webPublic:
			return refusal(errWebPublicNotEnabled)
		case !history:
			// Protected history is Zulip's; zulite's subscribers see a
			// channel's whole history, so it refuses rather than ignores it
			// (as creationRefusal does).
			return refusal(errInvalidParameters)
		case c.Default != nil && !u.isAdmin():
			return refusal(errCannotManageDefaultChannels)
		case c.Retention && u.Role != roleOwner:
			return refusal(errNotOwner)
		case c.Retention:
			return refusal(errInvalidParameters) // zulite has no retention policies
		case c.Unarchive && !ch.Archived:
			return refusal(errChannelNotArchived)
		case c.Unarchive && ch.Private && len(subscriberIDs(tx, ch.ID)) == 0:
			return refusal(errArchivedPrivateEmpty)
		case c.TopicsPolicy != nil && !s.allowed(u, realmCanSetTopicsPolicyGroup):
			return refusal(errInsufficientPermission)
		}
		next := ch
		next.Groups = nil
		if len(ch.Groups) > 0 {
			next.Groups = make(map[string]groupSetting, len(ch.Groups))
			for k, v := range ch.Groups {
				next.Groups[k] = v
			}
		}
		if c.NewName != nil {
			name := *c.NewName
			if name == ch.Name {
				return refusal(errChannelSameName)
			}
			if !sameChannelName(name, ch.Name) {
				if err := validateChannel(channelSpec{Name: name}); err != nil { // Zulip's check_stream_name
					return refusal(asAPIError(err))
				}
				// Zulip's check_stream_name_available: the name is taken
				// by a channel the caller may see (ChannelExistsError), or
				// by one they may not, which they are not told of
				// (PermissionDeniedError).
				switch taken, err := s.channelByName(tx, name); {
				case err == nil && !s.canSeeMetadata(tx, u, taken):
					return refusal(errInsufficientPermission)
				case err == nil:
					return errChannelExists.about(name)
				case !errors.Is(err, errNoSuchChannel):
					return err
				}
			}
			next.Name = name
		}
		if c.Folder {
			return refusal(errInvalidChannelFolderID) // zulite has no channel folders
		}
		var changedGroups []groupChange
		for _, g := range c.Groups {
			current := ch.groupSetting(g.Setting)
			if g.Old != nil && !g.Old.canonical().equal(current) {
				return refusal(errGroupSettingMismatch)
			}
			if g.New.equal(current) {
				continue
			}
			if (g.Setting == channelCanAddSubscribersGroup || g.Setting == channelCanSubscribeGroup) && !s.canAccess(tx, u, ch) {
				return refusal(errContentAccessRequired)
			}
			if err := checkGroupSetting(tx, g.Setting, g.New); err != nil {
				return err
			}
			if err := s.checkDeletePolicy(u, g.Setting, g.New); err != nil {
				return err
			}
			changedGroups = append(changedGroups, g)
		}

		// Every check is made: from here on, the changes.
		users, _, _, err := s.directory.of(tx)
		if err != nil {
			return err
		}
		before := s.metadataAudience(tx, users, ch)
		var props []channelProperty
		prop := func(name, property string, value any, extra ...[2]any) {
			props = append(props, channelProperty{name, property, value, extra})
		}
		next.Private = private
		if c.Private != nil || c.HistoryPublic != nil || c.WebPublic != nil {
			prop(ch.Name, "invite_only", private, [2]any{"history_public_to_subscribers", true}, [2]any{"is_web_public", false})
		}
		var defaults *[]uint64
		if c.Default != nil && *c.Default != ch.Default {
			next.Default = *c.Default
			defaults = new([]uint64)
		}
		if c.Unarchive {
			next.Archived = false
		}
		if c.Description != nil {
			next.Description = *c.Description
			prop(ch.Name, "description", next.Description, [2]any{"rendered_description", renderDescription(next.Description)})
		}
		if c.NewName != nil {
			prop(ch.Name, "name", next.Name)
		}
		for _, g := range changedGroups {
			name := g.Setting.name()
			if g.New.equal(defaultGroupSetting(channelPermissionSettings[g.Setting].value, ch.CreatorID)) {
				delete(next.Groups, name)
			} else {
				if next.Groups == nil {
					next.Groups = map[string]groupSetting{}
				}
				next.Groups[name] = g.New
			}
			prop(next.Name, name, g.New)
			if g.Setting == channelCanSendMessageGroup {
				if old, now := newStreamObject(channelView{channel: ch}).StreamPostPolicy, newStreamObject(channelView{channel: next}).StreamPostPolicy; old != now {
					prop(next.Name, "stream_post_policy", now)
					prop(next.Name, "is_announcement_only", now == 2)
				}
			}
		}
		if len(next.Groups) == 0 {
			next.Groups = nil
		}
		if err := putChannel(tx, next); err != nil {
			return err
		}
		if c.NewName != nil {
			names := tx.Bucket(bucketChannelNames)
			if err := names.Delete(nameKey(ch.Name)); err != nil {
				return err
			}
			if err := names.Put(nameKey(next.Name), itob(ch.ID)); err != nil {
				return err
			}
		}
		if defaults != nil {
			if *defaults, err = defaultChannelIDs(tx, s); err != nil {
				return err
			}
		}
		after := s.metadataAudience(tx, users, next)
		view, err := s.channelFigures(tx).view(next)
		if err != nil {
			return err
		}
		change := channelUpdated{Channel: view, Properties: props, Defaults: defaults, NonGuests: activeNonGuests(users)}
		change.Gaining = minus(after, before)
		change.Audience = minus(after, change.Gaining)
		grantsMetadata := slices.ContainsFunc(changedGroups, func(g groupChange) bool {
			return g.Setting == channelCanAdministerChannelGroup || g.Setting == channelCanAddSubscribersGroup || g.Setting == channelCanSubscribeGroup
		})
		if grantsMetadata {
			change.Losing = minus(before, after) // a privacy change tells those who lose access nothing, as in Zulip
		}
		if len(change.Gaining) > 0 {
			change.Subscribers, err = activeSubscribers(tx, ch.ID)
			if err != nil {
				return err
			}
		}
		if c.Unarchive {
			report(channelArchived{Channel: view, Unarchived: true, Audience: after})
		}
		report(change)
		return nil
	})
}

// checkDeletePolicy is Zulip's rule that only members of the
// organisation's can_set_delete_message_policy_group may let anyone
// delete messages in a channel (zerver/lib/streams.py): zulite holds
// that setting as role:nobody, so a channel's can_delete_*_message_group
// stays role:nobody.
func (s *store) checkDeletePolicy(u user, p channelPermission, g groupSetting) error {
	if (p == channelCanDeleteAnyMessageGroup || p == channelCanDeleteOwnMessageGroup) && !g.equal(systemGroupSetting(groupNobody)) &&
		!s.allowed(u, realmCanSetDeleteMessagePolicyGroup) {
		return refusal(errInsufficientPermission)
	}
	return nil
}

// activeSubscribers is the channel's subscribers that are active, sorted.
func activeSubscribers(tx *bbolt.Tx, channelID uint64) ([]uint64, error) {
	var ids []uint64
	for _, id := range subscriberIDs(tx, channelID) {
		u, err := lookUpUser(tx, id)
		if err != nil {
			return nil, err
		}
		if u.Active {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// archiveChannel is Zulip's deactivate_stream_backend and
// do_deactivate_stream: the channel stays, with its messages and
// subscriptions, but nobody may post in it, and it leaves the default
// channels.
func (s *store) archiveChannel(u user, channelID uint64) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		ch, err := s.channelByID(tx, channelID)
		if err != nil {
			return errNoSuchChannelID
		}
		if err := s.checkAdminister(tx, u, ch); err != nil {
			return err
		}
		if ch.Archived {
			return refusal(errChannelAlreadyArchived)
		}
		users, _, _, err := s.directory.of(tx)
		if err != nil {
			return err
		}
		audience := s.metadataAudience(tx, users, ch) // before, as Zulip takes it
		wasDefault := ch.Default
		ch.Archived, ch.Default = true, false
		if err := putChannel(tx, ch); err != nil {
			return err
		}
		view, err := s.channelFigures(tx).view(ch)
		if err != nil {
			return err
		}
		change := channelArchived{Channel: view, Audience: audience}
		if wasDefault {
			ids, err := defaultChannelIDs(tx, s)
			if err != nil {
				return err
			}
			change.Defaults, change.NonGuests = &ids, activeNonGuests(users)
		}
		report(change)
		return nil
	})
}

// setDefaultChannel is Zulip's add_default_stream (add) and
// remove_default_stream: the first needs content access and a public
// channel, the second metadata access.
func (s *store) setDefaultChannel(u user, channelID uint64, add bool) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		ch, err := s.channelByID(tx, channelID)
		if err != nil || ch.Archived {
			return errNoSuchChannelID
		}
		if add && !s.canAccess(tx, u, ch) || !add && !s.canSeeMetadata(tx, u, ch) {
			return errNoSuchChannelID
		}
		if add && ch.Private {
			return refusal(errPrivateCannotBeDefault)
		}
		if ch.Default == add {
			return nil // nothing changes, and nobody is told
		}
		ch.Default = add
		if err := putChannel(tx, ch); err != nil {
			return err
		}
		users, _, _, err := s.directory.of(tx)
		if err != nil {
			return err
		}
		ids, err := defaultChannelIDs(tx, s)
		if err != nil {
			return err
		}
		report(defaultChannelsChanged{IDs: ids, NonGuests: activeNonGuests(users)})
		return nil
	})
}

// channelMembers is Zulip's get_subscribers_backend: the active
// subscribers of a channel the user has metadata access to.
func (s *store) channelMembers(u user, channelID uint64) ([]uint64, error) {
	var ids []uint64
	err := s.view(func(tx *bbolt.Tx) error {
		ch, err := s.channelByID(tx, channelID)
		if err != nil || ch.Archived || !s.canSeeMetadata(tx, u, ch) {
			return errNoSuchChannelID
		}
		ids, err = activeSubscribers(tx, ch.ID)
		return err
	})
	return nonNilIDs(ids), err
}

// topicDeleteBatch is how many messages one transaction of a topic's
// deletion deletes: Zulip's RETENTION_STREAM_MESSAGE_BATCH_SIZE.
const topicDeleteBatch = 100

// deleteTopic is Zulip's delete_in_topic: the topic's messages, newest
// first, topicDeleteBatch at a time, each batch its own write (so that
// other writes go between them), until none is left or the deadline
// passes, when it answers that it is not complete. Each batch is deleted
// as DELETE /messages/{id} deletes a message, and told as one
// delete_message event.
func (s *store) deleteTopic(u user, channelID uint64, topic string, deadline time.Time) (complete bool, err error) {
	for {
		if !s.now().Before(deadline) {
			return false, nil
		}
		var done bool
		err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
			done = false
			ch, err := s.channelByID(tx, channelID)
			if err != nil || ch.Archived || !s.canAccess(tx, u, ch) {
				return errNoSuchChannelID
			}
			ids := newestInTopic(tx, ch.ID, topic, topicDeleteBatch)
			if len(ids) == 0 {
				done = true
				return s.clearTopicPolicies(tx, ch, topic, report)
			}
			var batch []message
			for _, id := range ids {
				m, err := messageByID(tx, id)
				if err != nil {
					return err
				}
				batch = append(batch, m)
			}
			audience, err := deleteChannelMessages(tx, ch, batch)
			if err != nil {
				return err
			}
			if !slices.Contains(audience, u.ID) {
				audience = mergeSorted(audience, []uint64{u.ID})
			}
			slices.Sort(ids)
			report(messagesDeleted{IDs: ids, ChannelID: ch.ID, Topic: batch[0].Topic, Audience: audience})
			return nil
		})
		if err != nil || done {
			return done, err
		}
	}
}

// newestInTopic is the ids of the topic's newest n messages, newest
// first, from the topic index.
func newestInTopic(tx *bbolt.Tx, channelID uint64, topic string, n int) []uint64 {
	prefix := append(itob(channelID), append([]byte(foldTopic(topic)), 0)...)
	c := tx.Bucket(bucketTopicMessages).Cursor()
	end := append(slices.Clone(prefix[:len(prefix)-1]), 1)
	k, _ := c.Seek(end)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	var ids []uint64
	for ; k != nil && bytes.HasPrefix(k, prefix) && len(ids) < n; k, _ = c.Prev() {
		ids = append(ids, btoi(k[len(k)-8:]))
	}
	return ids
}

// clearTopicPolicies is the end of Zulip's delete_in_topic: the topic is
// gone, so every user's visibility policy for it goes too, each told as
// a user_topic event.
func (s *store) clearTopicPolicies(tx *bbolt.Tx, ch channel, topic string, report func(any)) error {
	for _, id := range topicUsers(tx, ch.ID, topic) {
		target, err := lookUpUser(tx, id)
		if err != nil {
			return err
		}
		if err := s.setUserTopicTx(tx, target, ch, topic, policyInherit, true, report); err != nil {
			return err
		}
	}
	return nil
}

// deleteChannelMessages deletes messages of one channel: out of the
// indexes, each subscriber's unread state and flags, the messages, their
// reactions and upload links (Zulip's do_delete_messages). It answers
// the channel's subscribers, who hear of it.
func deleteChannelMessages(tx *bbolt.Tx, ch channel, batch []message) ([]uint64, error) {
	// Out of the channel's index first: forgetInChannel then keeps
	// rule 1 over the messages that remain.
	ids := make([]uint64, 0, len(batch))
	for _, m := range batch {
		if err := unindexMessage(tx, m, true); err != nil {
			return nil, err
		}
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	subs := subscriberIDs(tx, ch.ID)
	flags := tx.Bucket(bucketFlags)
	for _, uid := range subs {
		if err := forgetInChannel(tx, uid, ch.ID, ids); err != nil {
			return nil, err
		}
		for _, id := range ids {
			if err := flags.Delete(append(itob(uid), itob(id)...)); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range batch {
		if err := tx.Bucket(bucketMessages).Delete(itob(m.ID)); err != nil {
			return nil, err
		}
		if err := dropReactionsAndLinks(tx, m); err != nil {
			return nil, err
		}
	}
	return subs, nil
}

// joinDefaultChannels subscribes a new human account to the default
// channels, as Zulip's do_create_user does (bots join none), in the
// transaction that creates it.
func (s *store) joinDefaultChannels(tx *bbolt.Tx, u user, report func(any)) error {
	if u.Bot {
		return nil
	}
	ids, err := defaultChannelIDs(tx, s)
	if err != nil || len(ids) == 0 {
		return err
	}
	var joined []channel
	for _, id := range ids {
		ch, err := s.channelByID(tx, id)
		if err != nil {
			return err
		}
		if err := s.addSubscription(tx, u.ID, ch.ID); err != nil {
			return err
		}
		joined = append(joined, ch)
	}
	change := subscriptionsChanged{Op: "add", Members: []membership{{User: u, Channels: joined}}}
	if err := s.audiences(tx, &change, nil); err != nil {
		return err
	}
	report(change)
	return nil
}
