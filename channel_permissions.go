package main

// A channel's permissions: Zulip's group-setting values for its can_*_group
// settings, and who may access it, know of it, post in it, or remove
// others from it.

import (
	"bytes"
	"encoding/json"
	"slices"

	"go.etcd.io/bbolt"
)

// ---- group settings ----

// groupSetting is Zulip's group-setting value: the id of a named group
// (zulite has only the system groups of groups.go), or an anonymous
// group of users and named groups.
type groupSetting struct {
	Group     int // a system group, unless Anonymous
	Anonymous bool
	Members   []uint64 // direct members, when Anonymous
	Subgroups []int    // direct subgroups, when Anonymous
}

func systemGroupSetting(id int) groupSetting { return groupSetting{Group: id} }

type anonymousGroupJSON struct {
	DirectMembers   []uint64 `json:"direct_members"`
	DirectSubgroups []int    `json:"direct_subgroups"`
}

// MarshalJSON writes the value as Zulip's API does: an integer, or an
// object with direct_members and direct_subgroups.
func (g groupSetting) MarshalJSON() ([]byte, error) {
	if !g.Anonymous {
		return json.Marshal(g.Group)
	}
	return json.Marshal(anonymousGroupJSON{DirectMembers: nonNilIDs(g.Members), DirectSubgroups: nonNilInts(g.Subgroups)})
}

func (g *groupSetting) UnmarshalJSON(data []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		var a anonymousGroupJSON
		if err := json.Unmarshal(data, &a); err != nil {
			return err
		}
		*g = groupSetting{Anonymous: true, Members: a.DirectMembers, Subgroups: a.DirectSubgroups}
		return nil
	}
	*g = groupSetting{}
	return json.Unmarshal(data, &g.Group)
}

// canonical is the value as Zulip stores it: an anonymous group of one
// named group and no users is that group, an empty one is nobody.
func (g groupSetting) canonical() groupSetting {
	switch {
	case !g.Anonymous:
		return g
	case len(g.Members) == 0 && len(g.Subgroups) == 1:
		return systemGroupSetting(g.Subgroups[0])
	case len(g.Members) == 0 && len(g.Subgroups) == 0:
		return systemGroupSetting(groupNobody)
	}
	g.Members = slices.Compact(slices.Sorted(slices.Values(g.Members)))
	g.Subgroups = slices.Compact(slices.Sorted(slices.Values(g.Subgroups)))
	return g
}

func (g groupSetting) equal(o groupSetting) bool {
	return g.Anonymous == o.Anonymous && g.Group == o.Group && slices.Equal(g.Members, o.Members) && slices.Equal(g.Subgroups, o.Subgroups)
}

// includes tells whether the user is in the group a setting's value
// describes, by the groups as last committed (store.groups): the one
// question every permission asks.
func (s *store) includes(g groupSetting, u user) bool {
	return s.groups().includes(g, u)
}

// groupChannelCreator stands for Zulip's "channel_creator" default: an
// anonymous group of the channel's creator (nobody when it has none).
const groupChannelCreator = -1

// defaultGroupSetting is a setting's value for a channel that was not
// given one: its default group (permissionSetting.value), or for
// groupChannelCreator the channel's creator.
func defaultGroupSetting(group int, creatorID uint64) groupSetting {
	if group != groupChannelCreator {
		return systemGroupSetting(group)
	}
	if creatorID == 0 {
		return systemGroupSetting(groupNobody)
	}
	return groupSetting{Anonymous: true, Members: []uint64{creatorID}}
}

// groupSetting is the channel's value of a permission setting. It stays
// a call: inlined at its thirty callers it made the binary 12 KB larger.
//
//go:noinline
func (ch channel) groupSetting(p channelPermission) groupSetting {
	setting := &channelPermissionSettings[p]
	if g, ok := ch.Groups[setting.name]; ok {
		return g
	}
	return defaultGroupSetting(setting.value, ch.CreatorID)
}

// checkGroupSetting is Zulip's check of a channel setting's value
// (access_user_group_for_setting, checkSettingValue): the groups exist
// and are active, system or user-defined, the users exist and are
// active, and the setting allows the group. Then, for a setting zulite
// does not act on, only its default passes.
func checkGroupSetting(tx *bbolt.Tx, p channelPermission, g groupSetting) error {
	setting := &channelPermissionSettings[p]
	if err := checkSettingValue(tx, setting, g); err != nil {
		return err
	}
	if !setting.honoured && !g.equal(defaultGroupSetting(setting.value, 0)) {
		return errPermissionDenied
	}
	return nil
}

// ---- access ----

func isSubscribed(tx *bbolt.Tx, userID, channelID uint64) bool {
	return tx.Bucket(bucketSubscriptions).Get(append(itob(userID), itob(channelID)...)) != nil
}

// canAccess is Zulip's content access: a public channel is open to
// every member but guests; a private one (and, for guests, any one) to
// its subscribers, and, since its history is public to subscribers, to
// the members of its can_add_subscribers_group and can_subscribe_group.
func (s *store) canAccess(tx *bbolt.Tx, u user, ch channel) bool {
	if !ch.Private && u.Role != roleGuest {
		return true
	}
	if isSubscribed(tx, u.ID, ch.ID) {
		return true
	}
	if u.Role == roleGuest {
		return false
	}
	return s.includes(ch.groupSetting(channelCanAddSubscribersGroup), u) || s.includes(ch.groupSetting(channelCanSubscribeGroup), u)
}

// canSeeMetadata is Zulip's metadata access (a channel's name and
// settings): content access, or for a private channel an administrator,
// or a member of a group that may administer it or add subscribers.
func (s *store) canSeeMetadata(tx *bbolt.Tx, u user, ch channel) bool {
	if s.canAccess(tx, u, ch) {
		return true
	}
	if u.Role == roleGuest {
		return false
	}
	return u.isAdmin() || s.includes(ch.groupSetting(channelCanAdministerChannelGroup), u)
}

// canPost is Zulip's can_send_message_group check.
func (s *store) canPost(u user, ch channel) bool {
	return s.includes(ch.groupSetting(channelCanSendMessageGroup), u)
}

// mayRemoveOthers is Zulip's bulk_can_remove_subscribers_from_streams:
// administrators may; otherwise administering every channel, or seeing
// every channel and being in each one's can_remove_subscribers_group.
func (s *store) mayRemoveOthers(tx *bbolt.Tx, caller user, channels []channel) bool {
	if caller.isAdmin() {
		return true
	}
	if caller.Role == roleGuest {
		return false
	}
	if !slices.ContainsFunc(channels, func(ch channel) bool { return !s.includes(ch.groupSetting(channelCanAdministerChannelGroup), caller) }) {
		return true
	}
	for _, ch := range channels {
		if !s.canSeeMetadata(tx, caller, ch) || !s.includes(ch.groupSetting(channelCanRemoveSubscribersGroup), caller) {
			return false
		}
	}
	return true
}
