package main

// An administrator's work on people through the API (Zulip's
// zerver/views/users.py and zerver/views/realm.py): changing someone's
// role, name and profile data, deactivating and reactivating them, and
// the settings new users start with; and the events those send.

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// userIDPath reads the {user_id} of /users/{user_id}: a path of digits,
// as Zulip's URL patterns take it (anything else is not the route).
func userIDPath(r *apiRequest) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue("user_id"), 10, 64)
	if err != nil {
		return 0, errNoSuchUser
	}
	return id, nil
}

// updateUser serves PATCH /api/v1/users/{user_id}: an administrator
// changes someone's full_name, role or profile_data, checked in Zulip's
// order (update_user_backend) and applied together or not at all.
func (s *server) updateUser(r *apiRequest) (any, error) {
	var edit accountEdit
	if v, ok := r.params.lookup("full_name"); ok {
		edit.FullName = v
	}
	if raw, ok := r.params.lookup("role"); ok {
		role, err := parseInt("role", raw)
		if err != nil {
			return nil, err
		}
		if !slices.Contains([]int64{roleOwner, roleAdmin, roleModerator, roleMember, roleGuest}, role) {
			return nil, errNotInPossibleValues("role")
		}
		edit.Role = int(role)
	}
	if _, ok := r.params.lookup("profile_data"); ok {
		updates, err := readProfileUpdates(r.params, "profile_data", true)
		if err != nil {
			return nil, err
		}
		edit.Profile = updates
	}
	id, err := userIDPath(r)
	if err != nil {
		return nil, err
	}
	return nil, s.store.editAccount(r.user, id, edit, false)
}

// maxDeactivationComment is the bound of deactivation_notification_comment.
const maxDeactivationComment = 2000

// deactivateUser serves DELETE /api/v1/users/{user_id} (Zulip's
// deactivate_user_backend): an administrator deactivates a person (not
// a bot); only an owner deactivates an owner, and nobody the last one.
// zulite sends no e-mail, so deactivation_notification_comment is
// checked and then unused.
func (s *server) deactivateUser(r *apiRequest) (any, error) {
	if comment, ok := r.params.lookup("deactivation_notification_comment"); ok && utf8.RuneCountInString(comment) > maxDeactivationComment {
		return nil, errTooLongLimit("deactivation_notification_comment", maxDeactivationComment)
	}
	id, err := userIDPath(r)
	if err != nil {
		return nil, err
	}
	actor := r.user
	return nil, s.store.setActiveByID(id, false, func(target user, users []user) error {
		switch {
		case target.Bot:
			return errNoSuchUser
		case !target.Active:
			return errUserDeactivated
		case !actor.isAdmin():
			return errPermissionDenied
		case target.Role == roleOwner && actor.Role != roleOwner:
			return refusal(errNotOwner)
		case isLastOwner(users, target):
			return refusal(errDeactivateLastOwner)
		}
		return nil
	})
}

// reactivateUser serves POST /api/v1/users/{user_id}/reactivate (Zulip's
// reactivate_user_backend): an administrator reactivates a person or a
// bot; a bot needs the right to create bots, which zulite gives nobody.
func (s *server) reactivateUser(r *apiRequest) (any, error) {
	id, err := userIDPath(r)
	if err != nil {
		return nil, err
	}
	actor := r.user
	mayCreateBots := s.store.allowed(actor, realmCanCreateBotsGroup)
	return nil, s.store.setActiveByID(id, true, func(target user, _ []user) error {
		if !actor.isAdmin() || (target.Bot && !mayCreateBots) {
			return errPermissionDenied
		}
		return nil
	})
}

// updateRealmUserDefaults serves PATCH /api/v1/realm/user_settings_defaults
// (administrators only): the settings new users start with. It takes
// the settings PATCH /settings takes, all of which Zulip's
// update_realm_user_settings_defaults takes too, checked the same way
// and in the same order.
func (s *server) updateRealmUserDefaults(r *apiRequest) (any, error) {
	changes, err := readSettingChanges(r.params)
	if err != nil || len(changes) == 0 {
		return nil, err
	}
	return nil, s.store.updateRealmUserDefaults(changes)
}

// realmUserSettingsDefaults is register's realm_user_settings_defaults:
// the settings new users start with.
func (s *server) realmUserSettingsDefaults() (map[string]any, error) {
	defaults, err := s.store.realmUserDefaults()
	if err != nil {
		return nil, err
	}
	o := personalSettings(defaults)
	o["emojiset_choices"] = emojisetChoices
	o["available_notification_sounds"] = []string{}
	return o, nil
}

// publishRealmDefaults tells everyone of each changed default (Zulip's
// do_set_realm_user_default_setting).
func (s *server) publishRealmDefaults(c realmDefaultsChanged) {
	for _, change := range c.Changes {
		var value any
		json.Unmarshal(change.Value, &value)
		s.events.tellEveryone("realm_user_settings_defaults", nil,
			event{"type": "realm_user_settings_defaults", "op": "update", "property": change.Name, "value": value})
	}
}

// primaryGroup is the system group Zulip makes a role's users direct
// members of (get_system_user_group_for_user).
func primaryGroup(role int) int {
	switch role {
	case roleOwner:
		return groupOwners
	case roleAdmin:
		return groupAdministrators
	case roleModerator:
		return groupModerators
	case roleMember:
		return groupMembers
	}
	return groupEveryone
}

// publishAccountEdited tells everyone of an account's changes as Zulip's
// actions do, in their order: activity (do_deactivate_user,
// do_reactivate_user, whose groups publishGroupsRejoined tells), role
// (do_change_user_role: the role, then the system groups left and
// joined), name (do_change_full_name), then each profile value
// (notify_user_update_custom_profile_data). A deactivated person is in
// no group (Zulip since feature level 303), so their role change moves
// none.
func (s *server) publishAccountEdited(c accountEdited) {
	u, before := c.User, c.Before
	person := func(key string, value any) {
		s.events.tellEveryone("realm_user", nil, event{"type": "realm_user", "op": "update", "person": map[string]any{"user_id": u.ID, key: value}})
	}
	members := func(op string, group int) {
		s.events.tellEveryone("user_group", nil, event{"type": "user_group", "op": op, "group_id": group, "user_ids": []uint64{u.ID}})
	}
	if u.Active != before.Active {
		person("is_active", u.Active)
	}
	if u.Role != before.Role {
		person("role", u.Role)
		if u.Active {
			members("remove_members", primaryGroup(before.Role))
			members("add_members", primaryGroup(u.Role))
			switch {
			case u.Role == roleMember:
				members("add_members", groupFullMembers)
			case before.Role == roleMember:
				members("remove_members", groupFullMembers)
			}
		}
	}
	if u.FullName != before.FullName {
		person("full_name", u.FullName)
	}
	for _, id := range c.Fields {
		field := map[string]any{"id": id, "value": nil}
		if v, ok := u.Profile[strconv.FormatUint(id, 10)]; ok {
			field["value"] = v.Value
			if v.Rendered != "" {
				field["rendered_value"] = v.Rendered
			}
		}
		person("custom_profile_field", field)
	}
}

// isUserID tells a path segment of digits alone, which Zulip's
// /users/{user_id} routes take (anything else is an address).
func isUserID(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// publishGroupsRejoined tells everyone that a reactivated person is back
// in the named groups they are a direct member of, by id: their system
// groups, then the user groups (do_reactivate_user's add_members over
// user_profile.direct_groups, after its peer_add events). A deactivated
// user group is left out, as joining one is refused.
func (s *server) publishGroupsRejoined(c groupsRejoined) {
	tell := func(g int) {
		s.events.tellEveryone("user_group", nil, event{"type": "user_group", "op": "add_members", "group_id": g, "user_ids": []uint64{c.User.ID}})
	}
	for _, g := range directGroups(c.User) {
		tell(g)
	}
	for _, g := range s.store.groups().groups {
		if _, ok := slices.BinarySearch(g.Members, c.User.ID); ok && !g.Deactivated {
			tell(g.ID)
		}
	}
}
