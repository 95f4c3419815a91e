package main

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// Each role's group holds the higher roles too, as Zulip nests them
// (create_system_user_groups_for_realm); role:nobody holds no one, nor
// does a group that does not exist; a deactivated user is in none. A
// channel's setting naming a group answers the same.
func TestInGroup_RolesAsZulipNestsThem(t *testing.T) {
	for i, g := range systemGroups {
		if g.id != groupOwners+i {
			t.Fatalf("systemGroups[%d] is group %d, want %d", i, g.id, groupOwners+i)
		}
	}
	in := map[int][]int{
		roleOwner:     {groupOwners, groupAdministrators, groupModerators, groupFullMembers, groupMembers, groupEveryone, groupInternet},
		roleAdmin:     {groupAdministrators, groupModerators, groupFullMembers, groupMembers, groupEveryone, groupInternet},
		roleModerator: {groupModerators, groupFullMembers, groupMembers, groupEveryone, groupInternet},
		roleMember:    {groupFullMembers, groupMembers, groupEveryone, groupInternet},
		roleGuest:     {groupEveryone, groupInternet},
	}
	for role, groups := range in {
		for group := -1; group <= groupNobody+1; group++ {
			u := user{ID: 1, Role: role, Active: true}
			want := slices.Contains(groups, group)
			if got := inGroup(u, group); got != want {
				t.Errorf("role %d in group %d: got %v, want %v", role, group, got, want)
			}
			if got := (&groupDirectory{}).includes(systemGroupSetting(group), u); got != want {
				t.Errorf("role %d in a setting of group %d: got %v, want %v", role, group, got, want)
			}
			u.Active = false
			if inGroup(u, group) || (&groupDirectory{}).includes(systemGroupSetting(group), u) {
				t.Errorf("deactivated role %d in group %d", role, group)
			}
		}
	}
}

// A moderator is in role:moderators wherever a setting names it, as in
// Zulip: an organisation setting (who creates channels) and a channel's
// setting (who posts in it) granted to role:moderators both let the
// moderator in and keep a member out. zulite makes no moderators, but
// one stored by hand must be answered the same by both.
func TestRoleModerators_OrganisationAndChannelSettingsAgree(t *testing.T) {
	e := newTestEnv(t)
	u, key := mustCreateUser(t, e.st, "moderator@example.com", roleModerator, false)
	mod := &account{u, key}
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/realm", url.Values{"can_create_public_channel_group": {`{"new":3}`}}, &e.admin))

	create := func(a *account, name string) response {
		return e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"` + name + `"}]`}, "can_send_message_group": {"3"}}, a)
	}
	wantAPIError(t, create(&e.bob, "members"), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPISuccess(t, create(mod, "moderation"))

	send := func(a *account) response {
		return e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"moderation"}, "topic": {"t"}, "content": {"hello"}}, a)
	}
	wantAPIError(t, send(&e.bob), 400, "BAD_REQUEST", "You do not have permission to post in this channel.")
	wantAPISuccess(t, send(mod))
	wantAPISuccess(t, send(&e.admin))
}

// Every permission constant has its row, with a name of its own, so no
// setting is looked up by a name that is not there.
func TestPermissionSettings_OneNamedRowEach(t *testing.T) {
	for name, table := range map[string][]permissionSetting{"realm": realmPermissionSettings[:], "channel": channelPermissionSettings[:], "group": groupPermissionSettings[:]} {
		seen := map[string]bool{}
		for i, p := range table {
			if p.name == "" || seen[p.name] {
				t.Errorf("%s setting %d: name %q, want a name of its own", name, i, p.name)
			}
			seen[p.name] = true
		}
	}
	if got, want := realmCanMentionManyUsersGroup.name(), "can_mention_many_users_group"; got != want {
		t.Errorf("realmCanMentionManyUsersGroup: got %q, want %q", got, want)
	}
	if got, want := channelCanSendMessageGroup.name(), "can_send_message_group"; got != want {
		t.Errorf("channelCanSendMessageGroup: got %q, want %q", got, want)
	}
}
