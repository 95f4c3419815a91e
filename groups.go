package main

import "slices"

// Zulip's system user groups, one per role, which Zulip 10's group-based
// permission settings (realm_can_*_group, a channel's can_*_group) point
// at. zulite has no other groups, so their ids are fixed: a setting is
// one of these ids. Each group's members follow from the users' roles
// (a role's group holds the users of that role directly and the
// next-higher role's group as a subgroup, as Zulip nests them).
const (
	groupOwners         = 1 // role:owners
	groupAdministrators = 2 // role:administrators
	groupModerators     = 3 // role:moderators
	groupFullMembers    = 4 // role:fullmembers
	groupMembers        = 5 // role:members
	groupEveryone       = 6 // role:everyone
	groupInternet       = 7 // role:internet
	groupNobody         = 8 // role:nobody
)

// systemGroup is one of the groups above as Zulip creates it for every
// organization (zerver/lib/user_groups.py create_system_user_groups_for_realm,
// with the names and descriptions of zerver/models/groups.py).
type systemGroup struct {
	id          int
	name        string
	description string
	subgroup    int // the group it holds as its one direct subgroup; 0 for none
}

// systemGroups lists the groups by id, from groupOwners on (inGroup
// finds a group at its id's place). Zulip chains them: owners ⊂
// administrators ⊂ moderators ⊂ full members ⊂ members ⊂ everyone ⊂
// everyone on the internet; nobody stands apart, empty.
var systemGroups = []systemGroup{
	{groupOwners, "role:owners", "Owners of this organization", 0},
	{groupAdministrators, "role:administrators", "Administrators of this organization, including owners", groupOwners},
	{groupModerators, "role:moderators", "Moderators of this organization, including administrators", groupAdministrators},
	{groupFullMembers, "role:fullmembers", "Members of this organization, not including new accounts and guests", groupModerators},
	{groupMembers, "role:members", "Members of this organization, not including guests", groupFullMembers},
	{groupEveryone, "role:everyone", "Everyone in this organization, including guests", groupMembers},
	{groupInternet, "role:internet", "Everyone on the Internet", groupEveryone},
	{groupNobody, "role:nobody", "Nobody", 0},
}

// roleModerator is Zulip's moderator role; zulite makes no moderators,
// but a role is placed in its group whatever it is.
const roleModerator = 300

// directGroups are the groups a user is a direct member of: the group of
// their role and, for members, role:fullmembers too (Zulip's waiting
// period before a member is full is realm_waiting_period_threshold,
// which is 0 here).
func directGroups(u user) []int {
	switch u.Role {
	case roleOwner:
		return []int{groupOwners}
	case roleAdmin:
		return []int{groupAdministrators}
	case roleModerator:
		return []int{groupModerators}
	case roleMember:
		return []int{groupFullMembers, groupMembers}
	case roleGuest:
		return []int{groupEveryone}
	}
	return nil
}

// userGroupObject is Zulip's user group object, as register's
// realm_user_groups and GET /user_groups list it. A system group's own
// permission settings are all role:nobody, as Zulip sets them
// (default_for_system_groups).
type userGroupObject struct {
	ID                    int          `json:"id"`
	Name                  string       `json:"name"`
	CreatorID             *uint64      `json:"creator_id"`
	DateCreated           *int64       `json:"date_created"`
	Description           string       `json:"description"`
	Members               []uint64     `json:"members"`
	DirectSubgroupIDs     []int        `json:"direct_subgroup_ids"`
	IsSystemGroup         bool         `json:"is_system_group"`
	CanAddMembersGroup    groupSetting `json:"can_add_members_group"`
	CanJoinGroup          groupSetting `json:"can_join_group"`
	CanLeaveGroup         groupSetting `json:"can_leave_group"`
	CanManageGroup        groupSetting `json:"can_manage_group"`
	CanMentionGroup       groupSetting `json:"can_mention_group"`
	CanRemoveMembersGroup groupSetting `json:"can_remove_members_group"`
	Deactivated           bool         `json:"deactivated"`
}

// newRealmUserGroups is realm_user_groups: every system group with its
// direct members, then the user-defined groups (the deactivated ones
// only for includeDeactivated, Zulip's include_deactivated_groups),
// active users only (as Zulip since feature level 303), sorted by id.
// The system groups have no creator and no creation date.
func newRealmUserGroups(users []user, d *groupDirectory, includeDeactivated bool) []userGroupObject {
	list := make([]userGroupObject, 0, len(systemGroups))
	nobody := systemGroupSetting(groupNobody)
	for _, g := range systemGroups {
		o := userGroupObject{ID: g.id, Name: g.name, Description: g.description, Members: []uint64{}, DirectSubgroupIDs: []int{},
			IsSystemGroup: true, CanAddMembersGroup: nobody, CanJoinGroup: nobody, CanLeaveGroup: nobody,
			CanManageGroup: nobody, CanMentionGroup: nobody, CanRemoveMembersGroup: nobody}
		if g.subgroup != 0 {
			o.DirectSubgroupIDs = append(o.DirectSubgroupIDs, g.subgroup)
		}
		for _, u := range users {
			if u.Active && slices.Contains(directGroups(u), g.id) {
				o.Members = append(o.Members, u.ID)
			}
		}
		slices.Sort(o.Members)
		list = append(list, o)
	}
	if d == nil {
		return list
	}
	active := activeOf(users)
	for i := range d.groups {
		if g := &d.groups[i]; includeDeactivated || !g.Deactivated {
			list = append(list, g.object(active))
		}
	}
	return list
}

// activeOf answers whether an id is of an active account among users
// (sorted by id, as the directory holds them).
func activeOf(users []user) func(uint64) bool {
	return func(id uint64) bool {
		i, ok := slices.BinarySearchFunc(users, id, func(u user, id uint64) int {
			switch {
			case u.ID < id:
				return -1
			case u.ID > id:
				return 1
			}
			return 0
		})
		return ok && users[i].Active
	}
}

// inGroup tells whether a user belongs to a system group, directly or
// through its subgroups: Zulip's is_user_in_group for the groups that
// follow from roles (groupDirectory.has asks it for those, and for the
// system groups below a user-defined group). A role's group holds every higher role, so a
// moderator is in role:moderators and the groups below it, never in
// role:administrators. A deactivated user is in no group, and no user
// is in a group that does not exist.
func inGroup(u user, group int) bool {
	if !u.Active {
		return false
	}
	direct := directGroups(u)
	for g := group; g >= groupOwners && g <= groupNobody; g = systemGroups[g-groupOwners].subgroup {
		if slices.Contains(direct, g) {
			return true
		}
	}
	return false
}

// permissionSetting is one of Zulip's group-based permission settings:
// its API name, its configuration as server_supported_permission_settings
// describes it (zerver/lib/types.py GroupPermissionSetting) and, for an
// organization or a channel setting, the group zulite holds it with
// until it is given another.
type permissionSetting struct {
	name                   string
	value                  int  // realm and channel settings: the group zulite holds it with (a channel's may be groupChannelCreator)
	honoured               bool // channel settings: zulite acts on it; one it does not act on keeps its default
	requireSystemGroup     bool
	allowInternetGroup     bool
	allowNobodyGroup       bool
	allowEveryoneGroup     bool
	defaultGroupName       string
	defaultForSystemGroups string // "" for none
	allowedSystemGroups    []string
}

// realmPermission names an organization permission setting, by its
// place in realmPermissionSettings, which holds its API name (register's
// realm_<name>): a misspelt one does not compile.
type realmPermission int

const (
	realmCreateMultiuseInviteGroup realmPermission = iota
	realmCanAccessAllUsersGroup
	realmCanAddSubscribersGroup
	realmCanAddCustomEmojiGroup
	realmCanCreateBotsGroup
	realmCanCreateGroups
	realmCanCreatePublicChannelGroup
	realmCanCreatePrivateChannelGroup
	realmCanCreateWebPublicChannelGroup
	realmCanCreateWriteOnlyBotsGroup
	realmCanDeleteAnyMessageGroup
	realmCanDeleteOwnMessageGroup
	realmCanInviteUsersGroup
	realmCanManageAllGroups
	realmCanManageBillingGroup
	realmCanMentionManyUsersGroup
	realmCanMoveMessagesBetweenChannelsGroup
	realmCanMoveMessagesBetweenTopicsGroup
	realmCanResolveTopicsGroup
	realmCanSetDeleteMessagePolicyGroup
	realmCanSetTopicsPolicyGroup
	realmCanSummarizeTopicsGroup
	realmDirectMessageInitiatorGroup
	realmDirectMessagePermissionGroup
	realmPermissionCount // how many there are
)

// name is the setting's name in the API.
func (p realmPermission) name() string { return realmPermissionSettings[p].name }

// realmPermissionSettings are Zulip 11.0's Realm.REALM_PERMISSION_GROUP_SETTINGS,
// with Zulip's defaults. zulite holds a permission with Zulip's default
// group where it has the feature, and with role:nobody where it does
// not: nobody can create bots or summarize topics. Members add custom
// emoji (api_realm_emoji.go) and invite by e-mail, and administrators
// make reusable invitation links (store_invites.go); members create
// channels and user groups, subscribe others and move messages between
// channels; owners manage every user group; everyone sends direct messages, deletes
// their own messages, moves them between topics and resolves topics;
// administrators delete anyone's (store_message_edit.go) and may use
// wildcard mentions in large channels and topics (mentions.go). An
// administrator may change who creates channels, who may use wildcard
// mentions, who may delete, move and resolve messages, and who may send
// and start direct messages, and who may invite (PATCH /realm;
// store.realmGroup).
var realmPermissionSettings = [realmPermissionCount]permissionSetting{
	realmCreateMultiuseInviteGroup: {name: "create_multiuse_invite_group", value: groupAdministrators, allowNobodyGroup: true, defaultGroupName: "role:administrators"},
	realmCanAccessAllUsersGroup: {name: "can_access_all_users_group", value: groupEveryone, requireSystemGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:everyone",
		allowedSystemGroups: []string{"role:everyone", "role:members"}},
	realmCanAddSubscribersGroup:       {name: "can_add_subscribers_group", value: groupMembers, allowNobodyGroup: true, defaultGroupName: "role:members"},  // members subscribe others (principals)
	realmCanAddCustomEmojiGroup:       {name: "can_add_custom_emoji_group", value: groupMembers, allowNobodyGroup: true, defaultGroupName: "role:members"}, // api_realm_emoji.go
	realmCanCreateBotsGroup:           {name: "can_create_bots_group", value: groupNobody, allowNobodyGroup: true, defaultGroupName: "role:members"},
	realmCanCreateGroups:              {name: "can_create_groups", value: groupMembers, allowNobodyGroup: true, defaultGroupName: "role:members"},
	realmCanCreatePublicChannelGroup:  {name: "can_create_public_channel_group", value: groupMembers, allowNobodyGroup: true, defaultGroupName: "role:members"},
	realmCanCreatePrivateChannelGroup: {name: "can_create_private_channel_group", value: groupMembers, allowNobodyGroup: true, defaultGroupName: "role:members"},
	realmCanCreateWebPublicChannelGroup: {name: "can_create_web_public_channel_group", value: groupNobody, requireSystemGroup: true, allowNobodyGroup: true, defaultGroupName: "role:owners",
		allowedSystemGroups: []string{"role:moderators", "role:administrators", "role:owners", "role:nobody"}},
	realmCanCreateWriteOnlyBotsGroup:         {name: "can_create_write_only_bots_group", value: groupNobody, allowNobodyGroup: true, defaultGroupName: "role:members"},
	realmCanDeleteAnyMessageGroup:            {name: "can_delete_any_message_group", value: groupAdministrators, allowNobodyGroup: true, defaultGroupName: "role:administrators"},
	realmCanDeleteOwnMessageGroup:            {name: "can_delete_own_message_group", value: groupEveryone, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:everyone"},
	realmCanInviteUsersGroup:                 {name: "can_invite_users_group", value: groupMembers, allowNobodyGroup: true, defaultGroupName: "role:members"},
	realmCanManageAllGroups:                  {name: "can_manage_all_groups", value: groupOwners, defaultGroupName: "role:owners"},
	realmCanManageBillingGroup:               {name: "can_manage_billing_group", value: groupAdministrators, defaultGroupName: "role:administrators"},
	realmCanMentionManyUsersGroup:            {name: "can_mention_many_users_group", value: groupAdministrators, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:administrators"},
	realmCanMoveMessagesBetweenChannelsGroup: {name: "can_move_messages_between_channels_group", value: groupMembers, allowNobodyGroup: true, defaultGroupName: "role:members"},
	realmCanMoveMessagesBetweenTopicsGroup:   {name: "can_move_messages_between_topics_group", value: groupEveryone, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:everyone"},
	realmCanResolveTopicsGroup:               {name: "can_resolve_topics_group", value: groupEveryone, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:everyone"},
	realmCanSetDeleteMessagePolicyGroup:      {name: "can_set_delete_message_policy_group", value: groupNobody, allowNobodyGroup: true, defaultGroupName: "role:moderators"},
	realmCanSetTopicsPolicyGroup:             {name: "can_set_topics_policy_group", value: groupNobody, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:members"},
	realmCanSummarizeTopicsGroup:             {name: "can_summarize_topics_group", value: groupNobody, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:everyone"},
	realmDirectMessageInitiatorGroup:         {name: "direct_message_initiator_group", value: groupEveryone, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:everyone"},
	realmDirectMessagePermissionGroup:        {name: "direct_message_permission_group", value: groupEveryone, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:everyone"},
}

// channelPermission names a channel's permission setting, by its place
// in channelPermissionSettings, which holds its API name.
type channelPermission int

const (
	channelCanAddSubscribersGroup channelPermission = iota
	channelCanAdministerChannelGroup
	channelCanDeleteAnyMessageGroup
	channelCanDeleteOwnMessageGroup
	channelCanMoveMessagesOutOfChannelGroup
	channelCanMoveMessagesWithinChannelGroup
	channelCanRemoveSubscribersGroup
	channelCanSendMessageGroup
	channelCanSubscribeGroup
	channelCanResolveTopicsGroup
	channelPermissionCount // how many there are
)

// name is the setting's name in the API.
func (p channelPermission) name() string { return channelPermissionSettings[p].name }

// channelPermissionSettings are Zulip 11.0's Stream.stream_permission_group_settings,
// in Zulip's order (can_create_topic_group came later, at 12.0), each
// with its default and whether zulite acts on it. A setting zulite does
// not act on (the permission of an action it does not offer) keeps its
// default: any other value is refused rather than stored and ignored.
// zulite acts on every one: deleting (store_message_edit.go), moving and
// resolving messages, posting, subscribing, removing subscribers and
// administering the channel (store_channel_admin.go).
var channelPermissionSettings = [channelPermissionCount]permissionSetting{
	channelCanAddSubscribersGroup:            {name: "can_add_subscribers_group", value: groupNobody, honoured: true, allowNobodyGroup: true, defaultGroupName: "role:nobody"},
	channelCanAdministerChannelGroup:         {name: "can_administer_channel_group", value: groupChannelCreator, honoured: true, allowNobodyGroup: true, defaultGroupName: "stream_creator_or_nobody"},
	channelCanDeleteAnyMessageGroup:          {name: "can_delete_any_message_group", value: groupNobody, honoured: true, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:nobody"},
	channelCanDeleteOwnMessageGroup:          {name: "can_delete_own_message_group", value: groupNobody, honoured: true, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:nobody"},
	channelCanMoveMessagesOutOfChannelGroup:  {name: "can_move_messages_out_of_channel_group", value: groupNobody, honoured: true, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:nobody"},
	channelCanMoveMessagesWithinChannelGroup: {name: "can_move_messages_within_channel_group", value: groupNobody, honoured: true, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:nobody"},
	channelCanRemoveSubscribersGroup:         {name: "can_remove_subscribers_group", value: groupAdministrators, honoured: true, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:administrators"},
	channelCanSendMessageGroup:               {name: "can_send_message_group", value: groupEveryone, honoured: true, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:everyone"},
	channelCanSubscribeGroup:                 {name: "can_subscribe_group", value: groupNobody, honoured: true, allowNobodyGroup: true, defaultGroupName: "role:nobody"},
	channelCanResolveTopicsGroup:             {name: "can_resolve_topics_group", value: groupNobody, honoured: true, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:nobody"},
}

// groupPermissionSettings are Zulip 11.0's NamedUserGroup.GROUP_PERMISSION_SETTINGS,
// by groupPermission, each with the value a new group takes
// (groupChannelCreator standing for Zulip's "group_creator": an
// anonymous group of the group's creator).
var groupPermissionSettings = [groupPermissionCount]permissionSetting{
	groupCanAddMembers:    {name: "can_add_members_group", value: groupChannelCreator, allowNobodyGroup: true, defaultGroupName: "group_creator", defaultForSystemGroups: "role:nobody"},
	groupCanJoin:          {name: "can_join_group", value: groupNobody, allowNobodyGroup: true, defaultGroupName: "role:nobody", defaultForSystemGroups: "role:nobody"},
	groupCanLeave:         {name: "can_leave_group", value: groupEveryone, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:everyone", defaultForSystemGroups: "role:nobody"},
	groupCanManage:        {name: "can_manage_group", value: groupChannelCreator, allowNobodyGroup: true, defaultGroupName: "group_creator", defaultForSystemGroups: "role:nobody"},
	groupCanMention:       {name: "can_mention_group", value: groupEveryone, allowNobodyGroup: true, allowEveryoneGroup: true, defaultGroupName: "role:everyone", defaultForSystemGroups: "role:nobody"},
	groupCanRemoveMembers: {name: "can_remove_members_group", value: groupNobody, allowNobodyGroup: true, defaultGroupName: "role:nobody", defaultForSystemGroups: "role:nobody"},
}

// supportedPermissionSettings is register's server_supported_permission_settings.
func supportedPermissionSettings() map[string]map[string]any {
	describe := func(list []permissionSetting) map[string]any {
		out := make(map[string]any, len(list))
		for _, p := range list {
			var forSystem *string
			if p.defaultForSystemGroups != "" {
				forSystem = &p.defaultForSystemGroups
			}
			out[p.name] = map[string]any{
				"require_system_group":      p.requireSystemGroup,
				"allow_internet_group":      p.allowInternetGroup,
				"allow_nobody_group":        p.allowNobodyGroup,
				"allow_everyone_group":      p.allowEveryoneGroup,
				"default_group_name":        p.defaultGroupName,
				"default_for_system_groups": forSystem,
				"allowed_system_groups":     append([]string{}, p.allowedSystemGroups...),
			}
		}
		return out
	}
	return map[string]map[string]any{
		"realm":  describe(realmPermissionSettings[:]),
		"stream": describe(channelPermissionSettings[:]),
		"group":  describe(groupPermissionSettings[:]),
	}
}

// legacyPolicy is the integer policy Zulip still sends beside a group
// setting for old clients (zerver/models/realms.py
// get_corresponding_policy_value_for_group_setting): the group's value
// in Realm.SYSTEM_GROUPS_ENUM_MAP, or for can_mention_many_users_group in
// Realm.SYSTEM_GROUPS_TO_WILDCARD_MENTION_POLICY_MAP.
func legacyPolicy(setting realmPermission, group int) int {
	if setting == realmCanMentionManyUsersGroup {
		return map[int]int{groupEveryone: 1, groupMembers: 2, groupFullMembers: 3, groupAdministrators: 5, groupNobody: 6, groupModerators: 7}[group]
	}
	return map[int]int{groupMembers: 1, groupAdministrators: 2, groupFullMembers: 3, groupModerators: 4, groupEveryone: 5, groupNobody: 6, groupOwners: 7}[group]
}
