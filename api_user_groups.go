package main

// User groups over the API: GET /user_groups, POST /user_groups/create,
// PATCH /user_groups/{id}, POST /user_groups/{id}/deactivate, the
// members and subgroups routes, and the user_group events
// (zerver/views/user_groups.py, zerver/actions/user_groups.py).

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// pathGroupID reads {user_group_id}: digits, else no route.
func pathGroupID(r *apiRequest) (int, error) {
	id, err := pathDigits(r, "user_group_id", errNoSuchGroup)
	if err != nil {
		return 0, err
	}
	if id > math.MaxInt32 {
		return 0, errNoSuchGroup
	}
	return int(id), nil
}

// listUserGroups serves GET /api/v1/user_groups.
func (s *server) listUserGroups(r *apiRequest) (any, error) {
	deactivated, err := r.params.optionalBool("include_deactivated_groups", false)
	if err != nil {
		return nil, err
	}
	groups, err := s.store.userGroupsList(deactivated)
	return struct {
		UserGroups []userGroupObject `json:"user_groups"`
	}{groups}, err
}

// optionalIDs reads an optional JSON list of ids; absent is nil.
func optionalIDs(p *params, name string) ([]int64, error) {
	if _, ok := p.lookup(name); !ok {
		return nil, nil
	}
	return intList(p, name)
}

// userIDs are ids as accounts have them; one no account can have
// (negative) is refused as Zulip's user_ids_to_users refuses an unknown
// one, naming it as sent.
func userIDs(list []int64) ([]uint64, error) {
	out := make([]uint64, 0, len(list))
	for _, id := range list {
		if id < 0 {
			return nil, errNoSuchUserID.about(strconv.FormatInt(id, 10))
		}
		out = append(out, uint64(id))
	}
	return out, nil
}

// groupIDs are ids as groups have them; one no group can have is
// refused as an unknown subgroup is, naming it as sent.
func groupIDs(list []int64) ([]int, error) {
	out := make([]int, 0, len(list))
	for _, id := range list {
		if id < math.MinInt32 || id > math.MaxInt32 {
			return nil, errNoSuchGroupID.about(strconv.FormatInt(id, 10))
		}
		out = append(out, int(id))
	}
	return out, nil
}

// createUserGroup serves POST /api/v1/user_groups/create, for those the
// organisation's can_create_groups names.
func (s *server) createUserGroup(r *apiRequest) (any, error) {
	if !s.store.allowed(r.user, realmCanCreateGroups) {
		return nil, errInsufficientPermission
	}
	var req newUserGroup
	var err error
	if req.Name, err = r.params.requiredString("name"); err != nil {
		return nil, err
	}
	members, err := intList(r.params, "members")
	if err != nil {
		return nil, err
	}
	if req.Members, err = userIDs(members); err != nil {
		return nil, err
	}
	if req.Description, err = r.params.requiredString("description"); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(req.Description) > maxGroupDescriptionLength {
		return nil, errChannelDescriptionTooLong // the same words, and bound, as a channel's
	}
	subgroups, err := optionalIDs(r.params, "subgroups")
	if err != nil {
		return nil, err
	}
	if req.Subgroups, err = groupIDs(subgroups); err != nil {
		return nil, err
	}
	for p := range groupPermissionCount {
		g, given, err := readGroupSetting(r.params, groupPermissionSettings[p].name)
		if err != nil {
			return nil, err
		}
		if given {
			req.Settings[p] = &g
		}
	}
	id, err := s.store.createUserGroup(r.user, req)
	if err != nil {
		return nil, err
	}
	return struct {
		GroupID int `json:"group_id"`
	}{id}, nil
}

// updateUserGroup serves PATCH /api/v1/user_groups/{user_group_id}.
func (s *server) updateUserGroup(r *apiRequest) (any, error) {
	id, err := pathGroupID(r)
	if err != nil {
		return nil, err
	}
	var e userGroupEdit
	if v, ok := r.params.lookup("name"); ok {
		e.Name = &v
	}
	if v, ok := r.params.lookup("description"); ok {
		if utf8.RuneCountInString(v) > maxGroupDescriptionLength {
			return nil, errChannelDescriptionTooLong
		}
		e.Description = &v
	}
	given := e.Name != nil || e.Description != nil
	for p := range groupPermissionCount {
		name := groupPermissionSettings[p].name
		next, old, ok, err := groupChangeParam(r.params, name)
		if err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		c := &groupSettingChange{}
		if c.New, err = groupSettingOf(name+`["new"]`, next); err != nil {
			return nil, err
		}
		if old != nil {
			v, err := groupSettingOf(name+`["old"]`, old)
			if err != nil {
				return nil, err
			}
			c.Old = &v
		}
		e.Settings[p], given = c, true
	}
	if !given {
		return nil, errNoNewData
	}
	return nil, s.store.updateUserGroup(r.user, id, e)
}

// deactivateUserGroup serves POST /api/v1/user_groups/{user_group_id}/deactivate.
func (s *server) deactivateUserGroup(r *apiRequest) (any, error) {
	id, err := pathGroupID(r)
	if err != nil {
		return nil, err
	}
	return nil, s.store.deactivateUserGroup(r.user, id)
}

// updateGroupMembers serves POST /api/v1/user_groups/{user_group_id}/members.
func (s *server) updateGroupMembers(r *apiRequest) (any, error) {
	id, err := pathGroupID(r)
	if err != nil {
		return nil, err
	}
	var lists [4][]int64
	for i, name := range []string{"delete", "add", "delete_subgroups", "add_subgroups"} {
		if lists[i], err = optionalIDs(r.params, name); err != nil {
			return nil, err
		}
	}
	if len(lists[0]) == 0 && len(lists[1]) == 0 && len(lists[2]) == 0 && len(lists[3]) == 0 {
		return nil, errNothingToDoMembers
	}
	var e groupMembersEdit
	if e.Add, err = userIDs(lists[1]); err != nil {
		return nil, err
	}
	if e.Delete, err = userIDs(lists[0]); err != nil {
		return nil, err
	}
	if e.AddSubgroups, err = groupIDs(lists[3]); err != nil {
		return nil, err
	}
	if e.DeleteSubgroups, err = groupIDs(lists[2]); err != nil {
		return nil, err
	}
	return nil, s.store.updateGroupMembers(r.user, id, e)
}

// updateGroupSubgroups serves POST /api/v1/user_groups/{user_group_id}/subgroups.
func (s *server) updateGroupSubgroups(r *apiRequest) (any, error) {
	id, err := pathGroupID(r)
	if err != nil {
		return nil, err
	}
	del, err := optionalIDs(r.params, "delete")
	if err != nil {
		return nil, err
	}
	add, err := optionalIDs(r.params, "add")
	if err != nil {
		return nil, err
	}
	if len(add) == 0 && len(del) == 0 {
		return nil, errNothingToDoSubscriptions
	}
	var e groupMembersEdit
	if e.AddSubgroups, err = groupIDs(add); err != nil {
		return nil, err
	}
	if e.DeleteSubgroups, err = groupIDs(del); err != nil {
		return nil, err
	}
	return nil, s.store.updateGroupMembers(r.user, id, e)
}

// userGroupMembers serves GET /api/v1/user_groups/{user_group_id}/members.
func (s *server) userGroupMembers(r *apiRequest) (any, error) {
	id, err := pathGroupID(r)
	if err != nil {
		return nil, err
	}
	direct, err := r.params.optionalBool("direct_member_only", false)
	if err != nil {
		return nil, err
	}
	members, err := s.store.userGroupMembers(id, direct)
	return struct {
		Members []uint64 `json:"members"`
	}{members}, err
}

// isUserGroupMember serves GET /api/v1/user_groups/{user_group_id}/members/{user_id}.
func (s *server) isUserGroupMember(r *apiRequest) (any, error) {
	id, err := pathGroupID(r)
	if err != nil {
		return nil, err
	}
	userID, err := pathDigits(r, "user_id", errNoSuchUser)
	if err != nil {
		return nil, err
	}
	direct, err := r.params.optionalBool("direct_member_only", false)
	if err != nil {
		return nil, err
	}
	in, err := s.store.isUserGroupMember(id, userID, direct)
	return struct {
		IsUserGroupMember bool `json:"is_user_group_member"`
	}{in}, err
}

// userGroupSubgroups serves GET /api/v1/user_groups/{user_group_id}/subgroups.
func (s *server) userGroupSubgroups(r *apiRequest) (any, error) {
	id, err := pathGroupID(r)
	if err != nil {
		return nil, err
	}
	direct, err := r.params.optionalBool("direct_subgroup_only", false)
	if err != nil {
		return nil, err
	}
	subgroups, err := s.store.userGroupSubgroups(id, direct)
	return struct {
		Subgroups []int `json:"subgroups"`
	}{subgroups}, err
}

// publishUserGroup tells every queue that hears user_group events of a
// change to a group, as Zulip's ClientDescriptor filters them: a queue
// that keeps deactivated groups hears a deactivation (and a deactivated
// group's renaming) as an update, the others hear it as a remove.
func (s *server) publishUserGroup(c userGroupChanged) {
	e := event{"type": "user_group", "op": c.Op, "group_id": c.GroupID}
	switch c.Op {
	case "add":
		e = event{"type": "user_group", "op": c.Op, "group": c.Group}
	case "update":
		e["data"] = c.Data
	case "add_members", "remove_members":
		e["user_ids"] = c.UserIDs
	case "add_subgroups", "remove_subgroups":
		e["direct_subgroup_ids"] = c.Groups
	}
	shared := encodeEvent(e)
	s.events.everyQueue("user_group", func(q *eventQueue) *sharedEvent {
		if c.Audience > 0 && !q.includeDeactivatedGroups || c.Audience < 0 && q.includeDeactivatedGroups {
			return nil
		}
		return shared
	})
}
