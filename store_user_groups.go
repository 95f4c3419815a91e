package main

// The store's user groups (user_groups.go): the user_groups bucket, the
// directory every membership question reads, and Zulip's writes of
// zerver/actions/user_groups.py with the checks of
// zerver/views/user_groups.py and zerver/lib/user_groups.py, each one
// transaction that checks everything before it writes.

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"go.etcd.io/bbolt"
)

var bucketUserGroups = []byte("user_groups")

func errGroupNamePrefix(prefix string) error      { return errGroupNamePrefixed.about(prefix) }
func errSystemGroupRequired(setting string) error { return errSystemGroupNeeded.about(setting) }

// groups is the user groups as last committed. Every write of a group
// counts up meta's "users_version" (putGroup), so register's shared
// state (realm_user_groups) and this directory are made again after it.
func (s *store) groups() *groupDirectory {
	if d := s.userGroups.Load(); d != nil {
		return d
	}
	return &groupDirectory{}
}

// loadUserGroups reads the directory at open.
func (s *store) loadUserGroups(tx *bbolt.Tx) error {
	groups, err := loadGroups(tx)
	if err != nil {
		return err
	}
	s.userGroups.Store(newGroupDirectory(usersVersion(tx), groups))
	return nil
}

// groupsRebuilt carries the directory a write of groups made, as its
// transaction saw the groups: the committer puts it in place
// (updateReporting) before the write's events are told, so that a
// client that hears of a change and then sends is judged by it.
type groupsRebuilt struct{ directory *groupDirectory }

// placeGroups puts a directory in place unless a newer one is: writes
// committed together each made their own, the last the newest.
func (s *store) placeGroups(d *groupDirectory) {
	for {
		cur := s.userGroups.Load()
		if cur != nil && cur.version > d.version || s.userGroups.CompareAndSwap(cur, d) {
			return
		}
	}
}

// updateGroups is updateReporting for a write of groups: once fn has
// written, the directory is made again in the same transaction and
// reported ahead of fn's changes.
func (s *store) updateGroups(fn func(tx *bbolt.Tx, report func(any)) error) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		var changes []any
		if err := fn(tx, func(c any) { changes = append(changes, c) }); err != nil {
			return err
		}
		d, err := groupsIn(tx)
		if err != nil {
			return err
		}
		report(groupsRebuilt{d})
		for _, c := range changes {
			report(c)
		}
		return nil
	})
}

func userGroupByID(tx *bbolt.Tx, id int) (userGroup, error) {
	var g userGroup
	if id <= groupNobody {
		return g, errNoSuchGroup
	}
	v := tx.Bucket(bucketUserGroups).Get(itob(uint64(id)))
	if v == nil {
		return g, errNoSuchGroup
	}
	return g, json.Unmarshal(v, &g)
}

// putGroup writes a group and counts up "users_version".
func putGroup(tx *bbolt.Tx, g userGroup) error {
	if err := tx.Bucket(bucketMeta).Put(keyUsersVersion, itob(usersVersion(tx)+1)); err != nil {
		return err
	}
	return putJSON(tx.Bucket(bucketUserGroups), itob(uint64(g.ID)), g)
}

// groupsIn is the directory as the transaction sees the groups, for
// the checks of a write.
func groupsIn(tx *bbolt.Tx) (*groupDirectory, error) {
	groups, err := loadGroups(tx)
	if err != nil {
		return nil, err
	}
	return newGroupDirectory(usersVersion(tx), groups), nil
}

// groupForUpdate is Zulip's access_user_group_for_update: the group
// exists (and is active, unless allowDeactivated), is not a system
// group, and the caller manages every group (can_manage_all_groups),
// manages this one (its can_manage_group) or holds its permission p.
func (s *store) groupForUpdate(tx *bbolt.Tx, d *groupDirectory, caller user, id int, p groupPermission, allowDeactivated bool) (userGroup, error) {
	if id >= groupOwners && id <= groupNobody {
		return userGroup{}, errPermissionDenied
	}
	g, err := userGroupByID(tx, id)
	if err != nil {
		return g, err
	}
	if g.Deactivated && !allowDeactivated {
		return g, errGroupDeactivated
	}
	manageAll := &realmPermissionSettings[realmCanManageAllGroups]
	switch {
	case d.permits(manageAll, systemGroupSetting(s.realmGroup(realmCanManageAllGroups)), caller):
	case d.permits(&groupPermissionSettings[groupCanManage], g.setting(groupCanManage), caller):
	case p != groupCanManage && d.permits(&groupPermissionSettings[p], g.setting(p), caller):
	default:
		return g, errPermissionDenied
	}
	return g, nil
}

// activeUsers is Zulip's user_ids_to_users(allow_deactivated=False):
// every id an active account, else "Invalid user ID".
func activeUsers(tx *bbolt.Tx, ids []uint64) error {
	for _, id := range ids {
		if u, err := lookUpUser(tx, id); err != nil || !u.Active {
			return errNoSuchUserID.about(strconv.FormatUint(id, 10))
		}
	}
	return nil
}

// groupNameTaken tells whether another group holds the name (Zulip's
// unique name per realm; deactivated groups keep theirs).
func groupNameTaken(d *groupDirectory, name string, except int) bool {
	return slices.ContainsFunc(d.groups, func(g userGroup) bool { return g.ID != except && g.Name == name })
}

// newUserGroup is POST /user_groups/create's request.
type newUserGroup struct {
	Name, Description string
	Members           []uint64
	Subgroups         []int
	Settings          [groupPermissionCount]*groupSetting // nil: the default
}

// userGroupChanged: a group was made, changed or deactivated; the server
// tells it as Zulip's user_group event of that op.
type userGroupChanged struct {
	Op      string // add, update, add_members, remove_members, add_subgroups, remove_subgroups, remove
	GroupID int
	Group   userGroupObject // add
	Data    map[string]any  // update
	UserIDs []uint64        // add_members, remove_members
	Groups  []int           // add_subgroups, remove_subgroups
	// Audience: which queues hear it by their include_deactivated_groups
	// (Zulip's ClientDescriptor): 0 every one, 1 those with it, -1
	// those without it.
	Audience int
}

// createUserGroup is Zulip's add_user_group after its decorator: the
// members exist and are active, the name is valid and free, the
// settings' values are allowed, and the subgroups exist and are active.
func (s *store) createUserGroup(caller user, req newUserGroup) (int, error) {
	var id int
	err := s.updateGroups(func(tx *bbolt.Tx, report func(any)) error {
		if err := activeUsers(tx, req.Members); err != nil {
			return err
		}
		if err := checkGroupName(req.Name); err != nil {
			return err
		}
		settings := map[string]groupSetting{}
		for p := range groupPermissionCount {
			setting := &groupPermissionSettings[p]
			if req.Settings[p] == nil {
				settings[setting.name] = defaultGroupSetting(setting.value, caller.ID)
				continue
			}
			v := req.Settings[p].canonical()
			if err := checkSettingValue(tx, setting, v); err != nil {
				return err
			}
			settings[setting.name] = v
		}
		d, err := groupsIn(tx)
		if err != nil {
			return err
		}
		if groupNameTaken(d, req.Name, 0) {
			return errGroupExists.about(req.Name)
		}
		if len(d.groups) >= maxUserGroups {
			return refusal(errTooManyUserGroups)
		}
		for _, sub := range req.Subgroups {
			exists, deactivated := namedGroupExists(tx, sub)
			if !exists {
				return errNoSuchGroupID.about(strconv.Itoa(sub))
			}
			if deactivated {
				return errGroupDeactivated
			}
		}
		seq, err := tx.Bucket(bucketUserGroups).NextSequence()
		if err != nil {
			return err
		}
		id = int(seq) + groupNobody
		g := userGroup{ID: id, Name: req.Name, Description: req.Description, CreatorID: caller.ID, Created: time.Now().Unix(),
			Members: slices.Compact(slices.Sorted(slices.Values(req.Members))), Settings: settings}
		object := g.object(func(uint64) bool { return true })
		object.Members = nonNilIDs(slices.Clone(req.Members))
		report(userGroupChanged{Op: "add", GroupID: id, Group: object})
		if len(req.Subgroups) > 0 {
			g.Subgroups = slices.Compact(slices.Sorted(slices.Values(req.Subgroups)))
			report(userGroupChanged{Op: "add_subgroups", GroupID: id, Groups: slices.Clone(req.Subgroups)})
		}
		return putGroup(tx, g)
	})
	return id, err
}

// userGroupEdit is PATCH /user_groups/{id}'s request: what to change.
type userGroupEdit struct {
	Name, Description *string
	Settings          [groupPermissionCount]*groupSettingChange
}

// groupSettingChange is Zulip's GroupSettingChangeRequest: the new value and,
// optionally, the value the client believes is current.
type groupSettingChange struct {
	New groupSetting
	Old *groupSetting
}

// updateUserGroup is Zulip's edit_user_group: the caller manages the
// group; a deactivated group may only be renamed.
func (s *store) updateUserGroup(caller user, id int, e userGroupEdit) error {
	return s.updateGroups(func(tx *bbolt.Tx, report func(any)) error {
		d, err := groupsIn(tx)
		if err != nil {
			return err
		}
		g, err := s.groupForUpdate(tx, d, caller, id, groupCanManage, true)
		if err != nil {
			return err
		}
		if g.Deactivated && (e.Description != nil || slices.ContainsFunc(e.Settings[:], func(c *groupSettingChange) bool { return c != nil })) {
			return errGroupDeactivatedRename
		}
		changed := false
		if e.Name != nil && *e.Name != g.Name {
			if err := checkGroupName(*e.Name); err != nil {
				return err
			}
			if groupNameTaken(d, *e.Name, g.ID) {
				return errGroupExists.about(*e.Name)
			}
			g.Name, changed = *e.Name, true
			audience := 0
			if g.Deactivated {
				audience = 1
			}
			report(userGroupChanged{Op: "update", GroupID: id, Data: map[string]any{"name": g.Name}, Audience: audience})
		}
		if e.Description != nil && *e.Description != g.Description {
			g.Description, changed = *e.Description, true
			report(userGroupChanged{Op: "update", GroupID: id, Data: map[string]any{"description": g.Description}})
		}
		for p := range groupPermissionCount {
			c := e.Settings[p]
			if c == nil {
				continue
			}
			setting := &groupPermissionSettings[p]
			current := g.setting(p).canonical()
			if c.Old != nil && !c.Old.canonical().equal(current) {
				return refusal(errRealmSettingChanged)
			}
			next := c.New.canonical()
			if next.equal(current) {
				continue
			}
			if err := checkSettingValue(tx, setting, next); err != nil {
				return err
			}
			if g.Settings == nil {
				g.Settings = map[string]groupSetting{}
			}
			g.Settings[setting.name], changed = next, true
			report(userGroupChanged{Op: "update", GroupID: id, Data: map[string]any{setting.name: next}})
		}
		if !changed {
			return nil
		}
		return putGroup(tx, g)
	})
}

// deactivateUserGroup is Zulip's deactivate_user_group: the caller
// manages the group, and nothing active uses it (a supergroup, a
// channel's, a group's or the organisation's setting; Zulip's
// CannotDeactivateGroupInUseError lists them as objections).
func (s *store) deactivateUserGroup(caller user, id int) error {
	return s.updateGroups(func(tx *bbolt.Tx, report func(any)) error {
		d, err := groupsIn(tx)
		if err != nil {
			return err
		}
		g, err := s.groupForUpdate(tx, d, caller, id, groupCanManage, false)
		if err != nil {
			return err
		}
		if objections := s.groupObjections(tx, d, id); len(objections) > 0 {
			return refusal(errGroupInUse(objections))
		}
		g.Deactivated = true
		report(userGroupChanged{Op: "update", GroupID: id, Data: map[string]any{"deactivated": true}, Audience: 1})
		report(userGroupChanged{Op: "remove", GroupID: id, Audience: -1})
		return putGroup(tx, g)
	})
}

// usesGroup tells whether a setting's value is the group or holds it
// as a subgroup of its anonymous group.
func usesGroup(v groupSetting, id int) bool {
	if v.Anonymous {
		return slices.Contains(v.Subgroups, id)
	}
	return v.Group == id
}

// groupObjections are what keeps a group from being deactivated, in
// Zulip's order: active supergroups, channels, active groups, the
// organisation.
func (s *store) groupObjections(tx *bbolt.Tx, d *groupDirectory, id int) []map[string]any {
	var objections []map[string]any
	var supergroups []int
	for _, o := range d.groups {
		if !o.Deactivated && slices.Contains(o.Subgroups, id) {
			supergroups = append(supergroups, o.ID)
		}
	}
	if len(supergroups) > 0 {
		objections = append(objections, map[string]any{"type": "subgroup", "supergroup_ids": supergroups})
	}
	tx.Bucket(bucketChannels).ForEach(func(k, _ []byte) error {
		ch, err := s.channelByID(tx, btoi(k))
		if err != nil {
			return nil
		}
		var settings []string
		for p := range channelPermissionCount {
			if usesGroup(ch.groupSetting(p), id) {
				settings = append(settings, p.name())
			}
		}
		if len(settings) > 0 {
			objections = append(objections, map[string]any{"type": "channel", "channel_id": ch.ID, "settings": settings})
		}
		return nil
	})
	for _, o := range d.groups {
		if o.Deactivated {
			continue
		}
		var settings []string
		for p := range groupPermissionCount {
			if usesGroup(o.setting(p), id) {
				settings = append(settings, groupPermissionSettings[p].name)
			}
		}
		if len(settings) > 0 {
			objections = append(objections, map[string]any{"type": "user_group", "group_id": o.ID, "settings": settings})
		}
	}
	var settings []string
	for p := range realmPermissionCount {
		if s.realmGroup(p) == id {
			settings = append(settings, p.name())
		}
	}
	if len(settings) > 0 {
		objections = append(objections, map[string]any{"type": "realm", "settings": settings})
	}
	return objections
}

// groupMembersEdit is POST /user_groups/{id}/members' (and
// /subgroups') request, in the order Zulip applies it.
type groupMembersEdit struct {
	Add, Delete                   []uint64
	AddSubgroups, DeleteSubgroups []int
}

// updateGroupMembers is Zulip's update_user_group_backend and
// update_subgroups_of_user_group: each part with its own permission, all
// in one transaction, every part checked before anything is written.
func (s *store) updateGroupMembers(caller user, id int, e groupMembersEdit) error {
	return s.updateGroups(func(tx *bbolt.Tx, report func(any)) error {
		d, err := groupsIn(tx)
		if err != nil {
			return err
		}
		var g *userGroup // the group as the parts before have changed it
		access := func(read func() (userGroup, error)) error {
			got, err := read()
			if err == nil && g == nil {
				g = &got
			}
			return err
		}
		var changes []userGroupChanged
		if len(e.Add) > 0 {
			if err := access(func() (userGroup, error) {
				return s.groupForJoining(tx, d, caller, id, e.Add, groupCanJoin, groupCanAddMembers)
			}); err != nil {
				return err
			}
			if err := activeUsers(tx, e.Add); err != nil {
				return err
			}
			for _, m := range e.Add {
				if _, ok := slices.BinarySearch(g.Members, m); ok {
					return errAlreadyGroupMember.about(strconv.FormatUint(m, 10))
				}
			}
			g.Members = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(g.Members), e.Add...))))
			changes = append(changes, userGroupChanged{Op: "add_members", GroupID: id, UserIDs: slices.Clone(e.Add)})
		}
		if len(e.Delete) > 0 {
			if err := activeUsers(tx, e.Delete); err != nil {
				return err
			}
			if err := access(func() (userGroup, error) {
				return s.groupForJoining(tx, d, caller, id, e.Delete, groupCanLeave, groupCanRemoveMembers)
			}); err != nil {
				return err
			}
			for _, m := range e.Delete {
				if _, ok := slices.BinarySearch(g.Members, m); !ok {
					return errNotGroupMember.about(strconv.FormatUint(m, 10))
				}
			}
			g.Members = slices.DeleteFunc(slices.Clone(g.Members), func(m uint64) bool { return slices.Contains(e.Delete, m) })
			changes = append(changes, userGroupChanged{Op: "remove_members", GroupID: id, UserIDs: slices.Clone(e.Delete)})
		}
		if len(e.AddSubgroups) > 0 {
			if err := access(func() (userGroup, error) { return s.groupForUpdate(tx, d, caller, id, groupCanAddMembers, false) }); err != nil {
				return err
			}
			if err := checkSubgroups(tx, e.AddSubgroups); err != nil {
				return err
			}
			for _, sub := range e.AddSubgroups {
				if slices.Contains(g.Subgroups, sub) {
					return errAlreadySubgroup.about(strconv.Itoa(sub))
				}
			}
			for _, sub := range e.AddSubgroups {
				if sub == id || slices.Contains(d.subgroups(sub, false), id) {
					return errSubgroupCycle.about(strconv.Itoa(id))
				}
			}
			g.Subgroups = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(g.Subgroups), e.AddSubgroups...))))
			changes = append(changes, userGroupChanged{Op: "add_subgroups", GroupID: id, Groups: slices.Clone(e.AddSubgroups)})
		}
		if len(e.DeleteSubgroups) > 0 {
			if err := access(func() (userGroup, error) { return s.groupForUpdate(tx, d, caller, id, groupCanManage, false) }); err != nil {
				return err
			}
			if err := checkSubgroups(tx, e.DeleteSubgroups); err != nil {
				return err
			}
			for _, sub := range e.DeleteSubgroups {
				if !slices.Contains(g.Subgroups, sub) {
					return errNotSubgroup.about(strconv.Itoa(sub))
				}
			}
			g.Subgroups = slices.DeleteFunc(slices.Clone(g.Subgroups), func(sub int) bool { return slices.Contains(e.DeleteSubgroups, sub) })
			changes = append(changes, userGroupChanged{Op: "remove_subgroups", GroupID: id, Groups: slices.Clone(e.DeleteSubgroups)})
		}
		if g == nil {
			return nil
		}
		for _, c := range changes {
			report(c)
		}
		return putGroup(tx, *g)
	})
}

// groupForJoining is the access of adding (removing) members: a caller
// who names only themselves may join (leave) by own, else by others.
func (s *store) groupForJoining(tx *bbolt.Tx, d *groupDirectory, caller user, id int, users []uint64, own, others groupPermission) (userGroup, error) {
	if len(users) == 1 && users[0] == caller.ID {
		if g, err := s.groupForUpdate(tx, d, caller, id, own, false); err == nil {
			return g, nil
		}
	}
	return s.groupForUpdate(tx, d, caller, id, others, false)
}

// checkSubgroups is lock_subgroups_with_respect_to_supergroup's check
// of the groups named: each exists and is active.
func checkSubgroups(tx *bbolt.Tx, ids []int) error {
	for _, sub := range ids {
		if exists, _ := namedGroupExists(tx, sub); !exists {
			return errNoSuchGroupID.about(strconv.Itoa(sub))
		}
	}
	for _, sub := range ids {
		if _, deactivated := namedGroupExists(tx, sub); deactivated {
			return errGroupDeactivated
		}
	}
	return nil
}

// groupToRead is Zulip's access_user_group_to_read_membership: a
// group that exists and is active.
func (s *store) groupToRead(d *groupDirectory, id int) error {
	if id >= groupOwners && id <= groupNobody {
		return nil
	}
	g, ok := d.group(id)
	switch {
	case !ok:
		return errNoSuchGroup
	case g.Deactivated:
		return errGroupDeactivated
	}
	return nil
}

// userGroupMembers is GET /user_groups/{id}/members.
func (s *store) userGroupMembers(id int, directOnly bool) ([]uint64, error) {
	d := s.groups()
	if err := s.groupToRead(d, id); err != nil {
		return nil, err
	}
	users, _, err := s.usersAt()
	if err != nil {
		return nil, err
	}
	return d.members(id, users, directOnly), nil
}

// userGroupSubgroups is GET /user_groups/{id}/subgroups.
func (s *store) userGroupSubgroups(id int, directOnly bool) ([]int, error) {
	d := s.groups()
	if err := s.groupToRead(d, id); err != nil {
		return nil, err
	}
	return d.subgroups(id, directOnly), nil
}

// isUserGroupMember is GET /user_groups/{id}/members/{user_id}: Zulip's
// is_user_in_group after access_user_by_id (no bots, no deactivated
// accounts).
func (s *store) isUserGroupMember(id int, userID uint64, directOnly bool) (bool, error) {
	d := s.groups()
	if err := s.groupToRead(d, id); err != nil {
		return false, err
	}
	u, err := s.userByID(userID)
	switch {
	case err != nil || u.Bot:
		return false, errNoSuchUser
	case !u.Active:
		return false, errUserDeactivated
	}
	if !directOnly {
		return d.has(u, id), nil
	}
	if g, ok := d.group(id); ok {
		_, in := slices.BinarySearch(g.Members, u.ID)
		return in, nil
	}
	return slices.Contains(directGroups(u), id), nil
}

// userGroupsList is GET /user_groups: every group, the system ones too.
func (s *store) userGroupsList(includeDeactivated bool) ([]userGroupObject, error) {
	users, _, err := s.usersAt()
	if err != nil {
		return nil, err
	}
	return newRealmUserGroups(users, s.groups(), includeDeactivated), nil
}
