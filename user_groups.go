package main

// User groups: the organisation's own named groups beside the system
// groups of groups.go (Zulip's NamedUserGroup that is not a system
// group). A group has direct members (users) and direct subgroups (any
// named group, system groups too); its members are, recursively, the
// direct members of it and of every subgroup, as Zulip's
// get_recursive_group_members. Any group-based setting may name one
// (groupSetting), so membership is asked on every send: the groups are
// held in memory as a groupDirectory, built once per change of any
// group, and asking costs a map lookup and at most the system groups'
// role check.

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/bbolt"
)

// groupPermission names a user group's own permission setting, by its
// place in groupPermissionSettings.
type groupPermission int

const (
	groupCanAddMembers groupPermission = iota
	groupCanJoin
	groupCanLeave
	groupCanManage
	groupCanMention
	groupCanRemoveMembers
	groupPermissionCount
)

// Zulip's bound on a group's name (zerver/models/groups.py UserGroup),
// and zulite's on a description and on the groups there may be, which
// Zulip does not bound: every group is in every registration, and the
// directory is made again at every change.
const (
	maxGroupNameLength        = 100
	maxGroupDescriptionLength = maxChannelDescriptionLength
	maxUserGroups             = 1000
)

// invalidGroupNamePrefixes are UserGroup.INVALID_NAME_PREFIXES.
var invalidGroupNamePrefixes = []string{"@", "role:", "user:", "stream:", "channel:"}

// userGroup is a user-defined group as the user_groups bucket holds it.
// Members and Subgroups are direct, sorted; a deactivated account stays
// a member (as in Zulip) but is in no group. Settings holds every one of
// the group's permission settings, by name, from its creation on.
type userGroup struct {
	ID          int                     `json:"id"`
	Name        string                  `json:"name"`
	Description string                  `json:"description"`
	CreatorID   uint64                  `json:"creator_id,omitempty"`
	Created     int64                   `json:"created"`
	Members     []uint64                `json:"members,omitempty"`
	Subgroups   []int                   `json:"subgroups,omitempty"`
	Settings    map[string]groupSetting `json:"settings,omitempty"`
	Deactivated bool                    `json:"deactivated,omitempty"`
}

// setting is the group's value of one of its permission settings.
func (g *userGroup) setting(p groupPermission) groupSetting {
	if v, ok := g.Settings[groupPermissionSettings[p].name]; ok {
		return v
	}
	return defaultGroupSetting(groupPermissionSettings[p].value, g.CreatorID)
}

// object is the group as the API shows it (user_groups_in_realm_serialized):
// active direct members only, in the group and in its anonymous settings.
func (g *userGroup) object(active func(uint64) bool) userGroupObject {
	o := userGroupObject{ID: g.ID, Name: g.Name, Description: g.Description, Members: activeIDs(g.Members, active),
		DirectSubgroupIDs: nonNilInts(slices.Clone(g.Subgroups)), Deactivated: g.Deactivated}
	if g.CreatorID != 0 {
		id := g.CreatorID
		o.CreatorID = &id
	}
	if g.Created != 0 {
		at := g.Created
		o.DateCreated = &at
	}
	shown := func(p groupPermission) groupSetting {
		v := g.setting(p)
		if v.Anonymous {
			v.Members = activeIDs(v.Members, active)
		}
		return v
	}
	o.CanAddMembersGroup, o.CanJoinGroup, o.CanLeaveGroup = shown(groupCanAddMembers), shown(groupCanJoin), shown(groupCanLeave)
	o.CanManageGroup, o.CanMentionGroup, o.CanRemoveMembersGroup = shown(groupCanManage), shown(groupCanMention), shown(groupCanRemoveMembers)
	return o
}

// activeIDs are the ids that active says are of active accounts, never nil.
func activeIDs(ids []uint64, active func(uint64) bool) []uint64 {
	out := []uint64{}
	for _, id := range ids {
		if active(id) {
			out = append(out, id)
		}
	}
	return out
}

// groupDirectory is every user-defined group with what its membership
// reaches, as one committed state had them: immutable once built, so
// that every request reads it without a lock (store.groups).
type groupDirectory struct {
	version uint64      // the "users_version" it was read at
	groups  []userGroup // by id
	reach   map[int]groupReach
}

// groupReach is what a user group's membership reaches through its
// subgroups, recursively.
type groupReach struct {
	users     map[uint64]bool // direct members of it and of its user-defined subgroups
	system    []int           // the system groups among its subgroups, recursively
	subgroups []int           // every named group below it, sorted (get_recursive_strict_subgroups)
}

// newGroupDirectory works out the reach of every group.
func newGroupDirectory(version uint64, groups []userGroup) *groupDirectory {
	d := &groupDirectory{version: version, groups: groups, reach: make(map[int]groupReach, len(groups))}
	for i := range groups {
		r := groupReach{users: map[uint64]bool{}}
		seen := map[int]bool{groups[i].ID: true}
		stack := []int{groups[i].ID}
		for len(stack) > 0 {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			g, ok := d.group(id)
			if !ok {
				continue
			}
			for _, m := range g.Members {
				r.users[m] = true
			}
			for _, sub := range g.Subgroups {
				if seen[sub] {
					continue
				}
				seen[sub] = true
				r.subgroups = append(r.subgroups, sub)
				if sub <= groupNobody {
					r.system = append(r.system, sub)
					for below := systemGroups[sub-groupOwners].subgroup; below != 0 && !seen[below]; below = systemGroups[below-groupOwners].subgroup {
						seen[below] = true
						r.subgroups = append(r.subgroups, below)
					}
					continue
				}
				stack = append(stack, sub)
			}
		}
		slices.Sort(r.subgroups)
		d.reach[groups[i].ID] = r
	}
	return d
}

// group finds a user-defined group by id.
func (d *groupDirectory) group(id int) (*userGroup, bool) {
	if d == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(d.groups, id, func(g userGroup, id int) int { return g.ID - id })
	if !ok {
		return nil, false
	}
	return &d.groups[i], true
}

// has tells whether the user belongs to the named group, directly or
// through its subgroups: Zulip's is_user_in_group, which every
// permission asks. A deactivated user is in no group, and no user is
// in a group that does not exist.
func (d *groupDirectory) has(u user, id int) bool {
	if !u.Active {
		return false
	}
	if id <= groupNobody {
		return inGroup(u, id)
	}
	if d == nil {
		return false
	}
	r, ok := d.reach[id]
	if !ok {
		return false
	}
	if r.users[u.ID] {
		return true
	}
	return slices.ContainsFunc(r.system, func(g int) bool { return inGroup(u, g) })
}

// includes tells whether the user is in the group a setting's value
// describes: a named group, or an anonymous one of users and named
// groups.
func (d *groupDirectory) includes(g groupSetting, u user) bool {
	if !u.Active {
		return false
	}
	if !g.Anonymous {
		return d.has(u, g.Group)
	}
	return slices.Contains(g.Members, u.ID) || slices.ContainsFunc(g.Subgroups, func(id int) bool { return d.has(u, id) })
}

// permits is Zulip's user_has_permission_for_group_setting: a guest
// holds no permission whose setting may not be role:everyone.
func (d *groupDirectory) permits(setting *permissionSetting, g groupSetting, u user) bool {
	if !setting.allowEveryoneGroup && u.Role == roleGuest {
		return false
	}
	return d.includes(g, u)
}

// members are the active users in the named group, recursively (or
// directly), sorted: Zulip's get_user_group_member_ids.
func (d *groupDirectory) members(id int, users []user, directOnly bool) []uint64 {
	out := []uint64{}
	g, userDefined := d.group(id)
	for _, u := range users {
		switch {
		case !u.Active:
		case directOnly && userDefined:
			if _, ok := slices.BinarySearch(g.Members, u.ID); ok {
				out = append(out, u.ID)
			}
		case directOnly:
			if slices.Contains(directGroups(u), id) {
				out = append(out, u.ID)
			}
		case d.has(u, id):
			out = append(out, u.ID)
		}
	}
	return out
}

// subgroups are the named groups below the group: its direct subgroups,
// or all of them recursively (Zulip's get_subgroup_ids), sorted.
func (d *groupDirectory) subgroups(id int, directOnly bool) []int {
	if id <= groupNobody {
		var out []int
		for g := systemGroups[id-groupOwners].subgroup; g != 0; g = systemGroups[g-groupOwners].subgroup {
			out = append(out, g)
			if directOnly {
				break
			}
		}
		slices.Sort(out)
		return nonNilInts(out)
	}
	g, ok := d.group(id)
	if !ok {
		return []int{}
	}
	if directOnly {
		return nonNilInts(slices.Clone(g.Subgroups))
	}
	return nonNilInts(slices.Clone(d.reach[id].subgroups))
}

// loadGroups reads every user-defined group, by id.
func loadGroups(tx *bbolt.Tx) ([]userGroup, error) {
	var groups []userGroup
	err := tx.Bucket(bucketUserGroups).ForEach(func(_, v []byte) error {
		var g userGroup
		if err := json.Unmarshal(v, &g); err != nil {
			return err
		}
		groups = append(groups, g)
		return nil
	})
	return groups, err
}

// namedGroupExists tells whether a named group (system or user-defined)
// exists, and whether it is deactivated.
func namedGroupExists(tx *bbolt.Tx, id int) (exists, deactivated bool) {
	if id >= groupOwners && id <= groupNobody {
		return true, false
	}
	if id <= groupNobody {
		return false, false
	}
	g, err := userGroupByID(tx, id)
	if err != nil {
		return false, false
	}
	return true, g.Deactivated
}

// systemGroupName is a system group's name, "" for any other id.
func systemGroupName(id int) string {
	if id >= groupOwners && id <= groupNobody {
		return systemGroups[id-groupOwners].name
	}
	return ""
}

// checkSettingValue is Zulip's access_user_group_for_setting: a named
// group exists, is active and is one the setting allows
// (check_setting_configuration_for_system_groups); an anonymous group's
// users exist and are active and its groups exist and are active.
func checkSettingValue(tx *bbolt.Tx, setting *permissionSetting, g groupSetting) error {
	if !g.Anonymous {
		exists, deactivated := namedGroupExists(tx, g.Group)
		switch name := systemGroupName(g.Group); {
		case !exists:
			return errNoSuchGroup
		case deactivated:
			return errGroupDeactivated
		case setting.requireSystemGroup && name == "":
			return errSystemGroupRequired(setting.name)
		case g.Group == groupInternet && !setting.allowInternetGroup:
			return errGroupNotAllowed(setting.name, name)
		case g.Group == groupNobody && !setting.allowNobodyGroup:
			return errGroupNotAllowed(setting.name, name)
		case g.Group == groupEveryone && !setting.allowEveryoneGroup:
			return errGroupNotAllowed(setting.name, name)
		case len(setting.allowedSystemGroups) > 0 && !slices.Contains(setting.allowedSystemGroups, name):
			return errGroupNotAllowed(setting.name, name)
		}
		return nil
	}
	if setting.requireSystemGroup {
		return errSystemGroupRequired(setting.name)
	}
	for _, id := range g.Members {
		if u, err := lookUpUser(tx, id); err != nil || !u.Active {
			return errNoSuchUserID.about(strconv.FormatUint(id, 10))
		}
	}
	for _, id := range g.Subgroups {
		exists, deactivated := namedGroupExists(tx, id)
		if !exists {
			return errNoSuchGroupID.about(strconv.Itoa(id))
		}
		if deactivated {
			return errGroupDeactivated
		}
	}
	return nil
}

// checkGroupName is Zulip's check_user_group_name.
func checkGroupName(name string) error {
	if strings.TrimSpace(name) == "" {
		return errGroupNameEmpty
	}
	if len([]rune(name)) > maxGroupNameLength {
		return errGroupNameTooLong
	}
	for _, prefix := range invalidGroupNamePrefixes {
		if strings.HasPrefix(name, prefix) {
			return errGroupNamePrefix(prefix)
		}
	}
	return nil
}
