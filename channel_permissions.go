package main

// A channel's permissions: Zulip's group-setting values for its can_*_group
// settings, and who may access it, know of it, post in it, or remove
// others from it.

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

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

// includes tells whether the user is in the group the value describes
// (inGroup for its named groups). Deactivated users are in no group, as
// in Zulip.
func (g groupSetting) includes(u user) bool {
	if !u.Active {
		return false
	}
	if !g.Anonymous {
		return inGroup(u, g.Group)
	}
	return slices.Contains(g.Members, u.ID) || slices.ContainsFunc(g.Subgroups, func(id int) bool { return inGroup(u, id) })
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

// checkGroupSetting is Zulip's check of a setting's value
// (access_user_group_for_setting): the groups exist, the users exist and
// are active, and the setting allows the group. Then, for a setting
// zulite does not act on, only its default passes.
func checkGroupSetting(tx *bbolt.Tx, p channelPermission, g groupSetting) error {
	setting := &channelPermissionSettings[p]
	if !g.Anonymous {
		if g.Group < groupOwners || g.Group > groupNobody {
			return errNoSuchGroup
		}
	}
	for _, id := range g.Subgroups {
		if id < groupOwners || id > groupNobody {
			return errNoSuchGroupID.about(strconv.Itoa(id))
		}
	}
	for _, id := range g.Members {
		if u, err := lookUpUser(tx, id); err != nil || !u.Active {
			return errNoSuchUserID.about(strconv.FormatUint(id, 10))
		}
	}
	if !g.Anonymous {
		switch {
		case g.Group == groupInternet:
			return errGroupNotAllowed(setting.name, "role:internet")
		case g.Group == groupEveryone && !setting.allowEveryoneGroup:
			return errGroupNotAllowed(setting.name, "role:everyone")
		}
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
func canAccess(tx *bbolt.Tx, u user, ch channel) bool {
	if !ch.Private && u.Role != roleGuest {
		return true
	}
	if isSubscribed(tx, u.ID, ch.ID) {
		return true
	}
	if u.Role == roleGuest {
		return false
	}
	return ch.groupSetting(channelCanAddSubscribersGroup).includes(u) || ch.groupSetting(channelCanSubscribeGroup).includes(u)
}

// canSeeMetadata is Zulip's metadata access (a channel's name and
// settings): content access, or for a private channel an administrator,
// or a member of a group that may administer it or add subscribers.
func canSeeMetadata(tx *bbolt.Tx, u user, ch channel) bool {
	if canAccess(tx, u, ch) {
		return true
	}
	if u.Role == roleGuest {
		return false
	}
	return u.isAdmin() || ch.groupSetting(channelCanAdministerChannelGroup).includes(u)
}

// canPost is Zulip's can_send_message_group check.
func canPost(u user, ch channel) bool {
	return ch.groupSetting(channelCanSendMessageGroup).includes(u)
}

// mayRemoveOthers is Zulip's bulk_can_remove_subscribers_from_streams:
// administrators may; otherwise administering every channel, or seeing
// every channel and being in each one's can_remove_subscribers_group.
func mayRemoveOthers(tx *bbolt.Tx, caller user, channels []channel) bool {
	if caller.isAdmin() {
		return true
	}
	if caller.Role == roleGuest {
		return false
	}
	if !slices.ContainsFunc(channels, func(ch channel) bool { return !ch.groupSetting(channelCanAdministerChannelGroup).includes(caller) }) {
		return true
	}
	for _, ch := range channels {
		if !canSeeMetadata(tx, caller, ch) || !ch.groupSetting(channelCanRemoveSubscribersGroup).includes(caller) {
			return false
		}
	}
	return true
}
