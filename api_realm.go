package main

// The organisation's settings an administrator may change: for now, who
// may create channels (Zulip's can_create_public_channel_group and
// can_create_private_channel_group; by default every member may, as in
// Zulip) and who may use wildcard mentions in large channels
// (can_mention_many_users_group; by default administrators, as in
// Zulip). The other settings stay at the values register reports.

// realmChangeable are the organisation settings PATCH /realm changes.
var realmChangeable = []realmPermission{realmCanCreatePublicChannelGroup, realmCanCreatePrivateChannelGroup, realmCanMentionManyUsersGroup,
	realmCanDeleteAnyMessageGroup, realmCanDeleteOwnMessageGroup, realmCanMoveMessagesBetweenChannelsGroup,
	realmCanMoveMessagesBetweenTopicsGroup, realmCanResolveTopicsGroup,
	realmDirectMessagePermissionGroup, realmDirectMessageInitiatorGroup, // who may send direct messages (store_dms.go)
	realmCanAddCustomEmojiGroup,                              // who may add custom emoji (api_realm_emoji.go)
	realmCanInviteUsersGroup, realmCreateMultiuseInviteGroup, // who may invite (api_invites.go)
	realmCanCreateGroups, realmCanManageAllGroups} // who may create user groups and manage every one (api_user_groups.go)

// updateRealm serves PATCH /api/v1/realm for administrators. A group
// setting's value is Zulip's {"new": value, "old": value} (old
// optional), the new value a named group's id, a system group or a
// user group (user_groups.go); an anonymous group ({"direct_members":
// ...}) is refused, as zulite holds organisation settings as named
// groups only.
func (s *server) updateRealm(r *apiRequest) (any, error) {
	type change struct {
		setting realmPermission
		group   int
	}
	var changes []change
	for _, setting := range realmChangeable {
		name := setting.name()
		next, old, ok, err := groupChangeParam(r.params, name)
		if err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		id, isInt := jsonInt(next)
		if !isInt {
			return nil, asAPIError(errPermissionDenied) // an anonymous group: zulite holds none
		}
		if err := s.store.checkRealmGroup(setting, int(id)); err != nil {
			return nil, err
		}
		if old != nil {
			if oldID, ok := jsonInt(old); !ok || int(oldID) != s.store.realmGroup(setting) {
				return nil, errRealmSettingChanged
			}
		}
		changes = append(changes, change{setting, int(id)})
	}
	for _, c := range changes {
		if err := s.store.setRealmGroup(c.setting, c.group); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// publishRealmGroup tells every queue that hears realm events that an
// organisation permission setting changed (Zulip's realm update_dict).
func (s *server) publishRealmGroup(c realmGroupChanged) {
	e := event{"type": "realm", "op": "update_dict", "property": "default", "data": map[string]any{c.Setting: c.Group}}
	s.events.tellEveryone("realm", nil, e)
}

// mayCreateChannels answers whether the user may create a channel of
// that kind, by the organisation's setting.
func (s *server) mayCreateChannels(u user, private bool) bool {
	setting := realmCanCreatePublicChannelGroup
	if private {
		setting = realmCanCreatePrivateChannelGroup
	}
	return s.store.allowed(u, setting)
}
