package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// createGroup makes a group as a, with extra parameters, and answers its id.
func (e *testEnv) createGroup(t *testing.T, a *account, name string, members []uint64, extra url.Values) int {
	t.Helper()
	if members == nil {
		members = []uint64{}
	}
	params := url.Values{"name": {name}, "description": {name + " people"}, "members": {toJSON(t, members)}}
	for k, v := range extra {
		params[k] = v
	}
	r := e.request(t, http.MethodPost, "/api/v1/user_groups/create", params, a)
	wantAPISuccess(t, r)
	id, ok := r.body["group_id"].(float64)
	if !ok {
		t.Fatalf("create %s: no group_id in %s", name, r.raw)
	}
	return int(id)
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// userGroupsOf is GET /user_groups as a, by id.
func (e *testEnv) userGroupsOf(t *testing.T, a *account, params url.Values) map[int]map[string]any {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/user_groups", params, a)
	wantAPISuccess(t, r)
	out := map[int]map[string]any{}
	for _, g := range r.body["user_groups"].([]any) {
		o := g.(map[string]any)
		out[int(o["id"].(float64))] = o
	}
	return out
}

func numbers(v any) []int {
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

func TestUserGroups_CreateListAndDefaults(t *testing.T) {
	e := newTestEnv(t)
	id := e.createGroup(t, &e.alice, "support", []uint64{e.bob.ID, e.alice.ID}, nil)
	if id != groupNobody+1 {
		t.Errorf("first group's id: got %d, want %d", id, groupNobody+1)
	}
	groups := e.userGroupsOf(t, &e.bob, nil)
	if len(groups) != len(systemGroups)+1 {
		t.Fatalf("groups: got %d, want the %d system groups and support", len(groups), len(systemGroups))
	}
	g := groups[id]
	if g["name"] != "support" || g["description"] != "support people" || g["is_system_group"] != false || g["deactivated"] != false {
		t.Errorf("support: got %v", g)
	}
	if got, want := numbers(g["members"]), []int{int(e.alice.ID), int(e.bob.ID)}; !slices.Equal(got, want) {
		t.Errorf("members: got %v, want %v", got, want)
	}
	if g["creator_id"] != float64(e.alice.ID) || g["date_created"] == nil {
		t.Errorf("creator and date: got %v, %v", g["creator_id"], g["date_created"])
	}
	creator := map[string]any{"direct_members": []any{float64(e.alice.ID)}, "direct_subgroups": []any{}}
	for name, want := range map[string]any{"can_add_members_group": creator, "can_manage_group": creator,
		"can_join_group": float64(groupNobody), "can_leave_group": float64(groupEveryone),
		"can_mention_group": float64(groupEveryone), "can_remove_members_group": float64(groupNobody)} {
		if toJSON(t, g[name]) != toJSON(t, want) {
			t.Errorf("%s: got %v, want %v", name, g[name], want)
		}
	}
}

func TestUserGroups_CreateRefusals(t *testing.T) {
	e := newTestEnv(t)
	guest := e.guest(t)
	e.createGroup(t, &e.alice, "support", nil, nil)
	cases := []struct {
		rule   string
		as     *account
		params url.Values
		msg    string
	}{
		{"guests may not", guest, url.Values{"name": {"x"}, "members": {"[]"}, "description": {""}}, "Not allowed for guest users"},
		{"bots may not", &e.bot, url.Values{"name": {"x"}, "members": {"[]"}, "description": {""}}, "This endpoint does not accept bot requests."},
		{"name is required", &e.alice, url.Values{"members": {"[]"}, "description": {""}}, "Missing 'name' argument"},
		{"members are required", &e.alice, url.Values{"name": {"x"}, "description": {""}}, "Missing 'members' argument"},
		{"description is required", &e.alice, url.Values{"name": {"x"}, "members": {"[]"}}, "Missing 'description' argument"},
		{"members exist", &e.alice, url.Values{"name": {"x"}, "members": {"[99]"}, "description": {""}}, "Invalid user ID: 99"},
		{"name not empty", &e.alice, url.Values{"name": {"  "}, "members": {"[]"}, "description": {""}}, "User group name can't be empty!"},
		{"name not reserved", &e.alice, url.Values{"name": {"role:x"}, "members": {"[]"}, "description": {""}}, "User group name cannot start with 'role:'."},
		{"name not too long", &e.alice, url.Values{"name": {string(make([]byte, 101))}, "members": {"[]"}, "description": {""}}, "User group name cannot exceed 100 characters."},
		{"description bounded", &e.alice, url.Values{"name": {"x"}, "members": {"[]"}, "description": {strings.Repeat("é", 1025)}}, "description is too long (limit: 1024 characters)"},
		{"name free", &e.alice, url.Values{"name": {"support"}, "members": {"[]"}, "description": {""}}, "User group 'support' already exists."},
		{"setting group exists", &e.alice, url.Values{"name": {"x"}, "members": {"[]"}, "description": {""}, "can_manage_group": {"77"}}, "Invalid user group"},
		{"setting not everyone", &e.alice, url.Values{"name": {"x"}, "members": {"[]"}, "description": {""}, "can_manage_group": {"6"}}, "'can_manage_group' setting cannot be set to 'role:everyone' group."},
		{"members exist, named as sent", &e.alice, url.Values{"name": {"x"}, "members": {"[-3]"}, "description": {""}}, "Invalid user ID: -3"},
		{"subgroups exist, named as sent", &e.alice, url.Values{"name": {"x"}, "members": {"[]"}, "description": {""}, "subgroups": {"[99999999999]"}}, "Invalid user group ID: 99999999999"},
		{"subgroups exist", &e.alice, url.Values{"name": {"x"}, "members": {"[]"}, "description": {""}, "subgroups": {"[55]"}}, "Invalid user group ID: 55"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			code := "BAD_REQUEST"
			if strings.HasPrefix(c.msg, "Missing") {
				code = "REQUEST_VARIABLE_MISSING"
			}
			wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/user_groups/create", c.params, c.as), 400, code, c.msg)
		})
	}
	// The empty name above is spaces: check nothing was made by any case.
	if got := len(e.userGroupsOf(t, &e.alice, nil)); got != len(systemGroups)+1 {
		t.Errorf("after refusals: got %d groups, want %d", got, len(systemGroups)+1)
	}
	// Who may create groups is the organisation's can_create_groups.
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/realm", url.Values{"can_create_groups": {`{"new":2}`}}, &e.admin))
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/user_groups/create", url.Values{"name": {"y"}, "members": {"[]"}, "description": {""}}, &e.alice),
		400, "BAD_REQUEST", "Insufficient permission")
	e.createGroup(t, &e.admin, "y", nil, nil)
}

// guest makes a guest account.
func (e *testEnv) guest(t *testing.T) *account {
	t.Helper()
	u, key := mustCreateUser(t, e.st, "guest@example.com", roleGuest, false)
	return &account{u, key}
}

func TestUserGroups_UpdateNameDescriptionAndSettings(t *testing.T) {
	e := newTestEnv(t)
	id := e.createGroup(t, &e.alice, "support", nil, nil)
	path := "/api/v1/user_groups/" + strconv.Itoa(id)
	q := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["user_group"]`}}).str("queue_id")

	wantAPIError(t, e.request(t, http.MethodPatch, path, nil, &e.alice), 400, "BAD_REQUEST", "No new data supplied")
	wantAPIError(t, e.request(t, http.MethodPatch, path, url.Values{"name": {"x"}}, &e.bob), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPIError(t, e.request(t, http.MethodPatch, "/api/v1/user_groups/5", url.Values{"name": {"x"}}, &e.owner), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPIError(t, e.request(t, http.MethodPatch, "/api/v1/user_groups/99", url.Values{"name": {"x"}}, &e.owner), 400, "BAD_REQUEST", "Invalid user group")
	wantAPIError(t, e.request(t, http.MethodPatch, path, url.Values{"can_mention_group": {`{"new":4,"old":5}`}}, &e.alice), 400, "BAD_REQUEST",
		"'old' value does not match the expected value.")
	wantAPISuccess(t, e.request(t, http.MethodPatch, path, url.Values{"name": {"helpers"}, "description": {"who help"},
		"can_mention_group": {`{"new":2,"old":6}`}, "can_manage_group": {fmt.Sprintf(`{"new":{"direct_members":[%d],"direct_subgroups":[2]}}`, e.bob.ID)}}, &e.alice))
	g := e.userGroupsOf(t, &e.alice, nil)[id]
	if g["name"] != "helpers" || g["description"] != "who help" || g["can_mention_group"] != float64(groupAdministrators) {
		t.Errorf("after update: got %v", g)
	}
	// bob now manages it.
	wantAPISuccess(t, e.request(t, http.MethodPatch, path, url.Values{"description": {"bob's"}}, &e.bob))

	var ops []string
	for _, ev := range e.eventsOfType(t, &e.bob, q, "user_group") {
		if ev["op"] != "update" || ev["group_id"] != float64(id) {
			t.Errorf("event: got %v", ev)
		}
		for k := range ev["data"].(map[string]any) {
			ops = append(ops, k)
		}
	}
	if want := []string{"name", "description", "can_manage_group", "can_mention_group", "description"}; !slices.Equal(ops, want) {
		t.Errorf("update events: got %v, want %v", ops, want)
	}
}

func TestUserGroups_MembersAndSubgroups(t *testing.T) {
	e := newTestEnv(t)
	support := e.createGroup(t, &e.alice, "support", []uint64{e.alice.ID}, nil)
	leads := e.createGroup(t, &e.alice, "leads", []uint64{e.bob.ID}, nil)
	members := "/api/v1/user_groups/" + strconv.Itoa(support) + "/members"
	subgroups := "/api/v1/user_groups/" + strconv.Itoa(support) + "/subgroups"
	q := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["user_group"]`}}).str("queue_id")

	wantAPIError(t, e.request(t, http.MethodPost, members, nil, &e.alice), 400, "BAD_REQUEST",
		`Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".`)
	wantAPIError(t, e.request(t, http.MethodPost, subgroups, nil, &e.alice), 400, "BAD_REQUEST", `Nothing to do. Specify at least one of "add" or "delete".`)
	wantAPIError(t, e.request(t, http.MethodPost, members, url.Values{"add": {"[4]"}}, &e.bob), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPIError(t, e.request(t, http.MethodPost, members, url.Values{"add": {toJSON(t, []uint64{e.alice.ID})}}, &e.alice), 400, "BAD_REQUEST",
		fmt.Sprintf("User %d is already a member of this group", e.alice.ID))
	wantAPIError(t, e.request(t, http.MethodPost, members, url.Values{"delete": {toJSON(t, []uint64{e.bob.ID})}}, &e.alice), 400, "BAD_REQUEST",
		fmt.Sprintf("There is no member '%d' in this user group", e.bob.ID))
	// A refused part refuses the whole request: the add is not made.
	wantAPIError(t, e.request(t, http.MethodPost, members, url.Values{"add": {toJSON(t, []uint64{e.bob.ID})}, "delete": {"[99]"}}, &e.alice), 400, "BAD_REQUEST",
		"Invalid user ID: 99")
	wantMembers := func(path string, params url.Values, want []uint64) {
		t.Helper()
		r := e.request(t, http.MethodGet, path, params, &e.bob)
		wantAPISuccess(t, r)
		var got []uint64
		for _, n := range numbers(r.body["members"]) {
			got = append(got, uint64(n))
		}
		if !slices.Equal(got, want) {
			t.Errorf("GET %s %v: got %v, want %v", path, params, got, want)
		}
	}
	wantMembers(members, nil, []uint64{e.alice.ID})

	wantAPISuccess(t, e.request(t, http.MethodPost, subgroups, url.Values{"add": {toJSON(t, []int{leads})}}, &e.alice))
	wantMembers(members, nil, []uint64{e.alice.ID, e.bob.ID})
	wantMembers(members, url.Values{"direct_member_only": {"true"}}, []uint64{e.alice.ID})
	// Cycles are refused as Zulip refuses them.
	leadsSub := "/api/v1/user_groups/" + strconv.Itoa(leads) + "/subgroups"
	wantAPIError(t, e.request(t, http.MethodPost, leadsSub, url.Values{"add": {toJSON(t, []int{support})}}, &e.alice), 400, "BAD_REQUEST",
		fmt.Sprintf("User group %d is already a subgroup of one of the passed subgroups.", leads))
	wantAPIError(t, e.request(t, http.MethodPost, subgroups, url.Values{"add": {toJSON(t, []int{support})}}, &e.alice), 400, "BAD_REQUEST",
		fmt.Sprintf("User group %d is already a subgroup of one of the passed subgroups.", support))
	wantAPIError(t, e.request(t, http.MethodPost, subgroups, url.Values{"add": {toJSON(t, []int{leads})}}, &e.alice), 400, "BAD_REQUEST",
		fmt.Sprintf("User group %d is already a subgroup of this group.", leads))
	wantAPIError(t, e.request(t, http.MethodPost, subgroups, url.Values{"delete": {"[3]"}}, &e.alice), 400, "BAD_REQUEST",
		"User group 3 is not a subgroup of this group.")
	wantAPIError(t, e.request(t, http.MethodPost, subgroups, url.Values{"add": {"[98]"}}, &e.alice), 400, "BAD_REQUEST", "Invalid user group ID: 98")
	// A system group as a subgroup: its members by role.
	wantAPISuccess(t, e.request(t, http.MethodPost, subgroups, url.Values{"add": {"[2]"}}, &e.alice))
	wantMembers(members, nil, []uint64{e.owner.ID, e.admin.ID, e.alice.ID, e.bob.ID})
	r := e.request(t, http.MethodGet, subgroups, nil, &e.bob)
	wantAPISuccess(t, r)
	if got, want := numbers(r.body["subgroups"]), []int{groupOwners, groupAdministrators, leads}; !slices.Equal(got, want) {
		t.Errorf("subgroups: got %v, want %v", got, want)
	}
	r = e.request(t, http.MethodGet, subgroups, url.Values{"direct_subgroup_only": {"true"}}, &e.bob)
	if got, want := numbers(r.body["subgroups"]), []int{groupAdministrators, leads}; !slices.Equal(got, want) {
		t.Errorf("direct subgroups: got %v, want %v", got, want)
	}
	isMember := func(group int, u uint64, direct bool) bool {
		t.Helper()
		r := e.request(t, http.MethodGet, fmt.Sprintf("/api/v1/user_groups/%d/members/%d", group, u), url.Values{"direct_member_only": {strconv.FormatBool(direct)}}, &e.bob)
		wantAPISuccess(t, r)
		return r.body["is_user_group_member"] == true
	}
	if !isMember(support, e.bob.ID, false) || isMember(support, e.bob.ID, true) || !isMember(support, e.owner.ID, false) || isMember(leads, e.alice.ID, false) {
		t.Error("is_user_group_member: wrong through subgroups")
	}
	if !isMember(groupEveryone, e.alice.ID, false) || isMember(groupEveryone, e.alice.ID, true) || !isMember(groupMembers, e.alice.ID, true) {
		t.Error("is_user_group_member of role:everyone: alice is in it through role:members, of which she is a direct member")
	}
	wantAPIError(t, e.request(t, http.MethodGet, fmt.Sprintf("/api/v1/user_groups/%d/members/999", support), nil, &e.bob), 400, "BAD_REQUEST", "No such user")

	// Leaving: alice (creator) removes herself; then the remove and
	// subgroup removal events.
	wantAPISuccess(t, e.request(t, http.MethodPost, members, url.Values{"delete": {toJSON(t, []uint64{e.alice.ID})}, "delete_subgroups": {"[2]"}}, &e.alice))
	wantMembers(members, nil, []uint64{e.bob.ID})

	var got []string
	for _, ev := range e.eventsOfType(t, &e.bob, q, "user_group") {
		got = append(got, fmt.Sprint(ev["op"], ev["group_id"], ev["user_ids"], ev["direct_subgroup_ids"]))
	}
	want := []string{
		fmt.Sprint("add_subgroups", float64(support), nil, []any{float64(leads)}),
		fmt.Sprint("add_subgroups", float64(support), nil, []any{float64(2)}),
		fmt.Sprint("remove_members", float64(support), []any{float64(e.alice.ID)}, nil),
		fmt.Sprint("remove_subgroups", float64(support), nil, []any{float64(2)}),
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}
}

func TestUserGroups_JoinAndLeaveBySettings(t *testing.T) {
	e := newTestEnv(t)
	id := e.createGroup(t, &e.alice, "open", nil, url.Values{"can_join_group": {"5"}})
	members := "/api/v1/user_groups/" + strconv.Itoa(id) + "/members"
	self := url.Values{"add": {toJSON(t, []uint64{e.bob.ID})}}
	wantAPISuccess(t, e.request(t, http.MethodPost, members, self, &e.bob))
	// Joining is for oneself only: adding alice needs can_add_members_group.
	wantAPIError(t, e.request(t, http.MethodPost, members, url.Values{"add": {toJSON(t, []uint64{e.admin.ID})}}, &e.bob), 400, "BAD_REQUEST", "Insufficient permission")
	// can_leave_group is everyone by default.
	wantAPISuccess(t, e.request(t, http.MethodPost, members, url.Values{"delete": {toJSON(t, []uint64{e.bob.ID})}}, &e.bob))
	// The owner manages every group (can_manage_all_groups).
	wantAPISuccess(t, e.request(t, http.MethodPost, members, url.Values{"add": {toJSON(t, []uint64{e.admin.ID})}}, &e.owner))
}

func TestUserGroups_DeactivateInUseAndEvents(t *testing.T) {
	e := newTestEnv(t)
	support := e.createGroup(t, &e.alice, "support", []uint64{e.bob.ID}, nil)
	outer := e.createGroup(t, &e.alice, "outer", nil, url.Values{"subgroups": {toJSON(t, []int{support})}})
	path := "/api/v1/user_groups/" + strconv.Itoa(support) + "/deactivate"
	keep := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["user_group"]`}, "client_capabilities": {`{"include_deactivated_groups":true}`}}).str("queue_id")
	drop := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["user_group"]`}}).str("queue_id")

	wantAPIError(t, e.request(t, http.MethodPost, path, nil, &e.bob), 400, "BAD_REQUEST", "Insufficient permission")
	r := e.request(t, http.MethodPost, path, nil, &e.alice)
	wantAPIError(t, r, 400, "CANNOT_DEACTIVATE_GROUP_IN_USE", "Cannot deactivate user group in use.")
	if got, want := toJSON(t, r.body["objections"]), fmt.Sprintf(`[{"supergroup_ids":[%d],"type":"subgroup"}]`, outer); got != want {
		t.Errorf("objections: got %s, want %s", got, want)
	}
	// A realm setting holding it objects too.
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/realm", url.Values{"can_create_groups": {fmt.Sprintf(`{"new":%d}`, support)}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/user_groups/"+strconv.Itoa(outer)+"/deactivate", nil, &e.alice))
	r = e.request(t, http.MethodPost, path, nil, &e.alice)
	if got, want := toJSON(t, r.body["objections"]), `[{"settings":["can_create_groups"],"type":"realm"}]`; got != want {
		t.Errorf("objections: got %s, want %s", got, want)
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/realm", url.Values{"can_create_groups": {`{"new":5}`}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodPost, path, nil, &e.alice))
	wantAPIError(t, e.request(t, http.MethodPost, path, nil, &e.alice), 400, "BAD_REQUEST", "User group is deactivated.")
	// Only the name of a deactivated group may change.
	gpath := "/api/v1/user_groups/" + strconv.Itoa(support)
	wantAPIError(t, e.request(t, http.MethodPatch, gpath, url.Values{"description": {"x"}}, &e.alice), 400, "BAD_REQUEST", "You can only change name of deactivated user groups")
	wantAPISuccess(t, e.request(t, http.MethodPatch, gpath, url.Values{"name": {"old support"}}, &e.alice))
	if _, listed := e.userGroupsOf(t, &e.alice, nil)[support]; listed {
		t.Error("a deactivated group is listed without include_deactivated_groups")
	}
	if g := e.userGroupsOf(t, &e.alice, url.Values{"include_deactivated_groups": {"true"}})[support]; g == nil || g["deactivated"] != true || g["name"] != "old support" {
		t.Errorf("with include_deactivated_groups: got %v", g)
	}
	ops := func(q string) (out []string) {
		for _, ev := range e.eventsOfType(t, &e.bob, q, "user_group") {
			if ev["group_id"] == float64(support) {
				out = append(out, fmt.Sprintf("%v %v", ev["op"], ev["data"]))
			}
		}
		return out
	}
	if got, want := ops(keep), []string{"update map[deactivated:true]", "update map[name:old support]"}; !slices.Equal(got, want) {
		t.Errorf("queue keeping deactivated groups: got %v, want %v", got, want)
	}
	if got, want := ops(drop), []string{"remove <nil>"}; !slices.Equal(got, want) {
		t.Errorf("other queue: got %v, want %v", got, want)
	}
}

func TestUserGroups_RegisterListsThemAndFollowsChanges(t *testing.T) {
	e := newTestEnv(t)
	groupsIn := func() map[int]map[string]any {
		r := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["realm_user_groups"]`}})
		out := map[int]map[string]any{}
		for _, g := range r.body["realm_user_groups"].([]any) {
			o := g.(map[string]any)
			out[int(o["id"].(float64))] = o
		}
		return out
	}
	if len(groupsIn()) != len(systemGroups) {
		t.Fatal("register before any group: want the system groups alone")
	}
	id := e.createGroup(t, &e.alice, "support", []uint64{e.bob.ID}, nil)
	if g := groupsIn()[id]; g == nil || g["name"] != "support" {
		t.Fatalf("register after create: got %v", g)
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/user_groups/"+strconv.Itoa(id)+"/members", url.Values{"add": {toJSON(t, []uint64{e.alice.ID})}}, &e.alice))
	if got := numbers(groupsIn()[id]["members"]); !slices.Equal(got, []int{int(e.alice.ID), int(e.bob.ID)}) {
		t.Errorf("register after add: members %v (a stale shared copy?)", got)
	}
}

func TestUserGroups_AddEventCarriesTheGroup(t *testing.T) {
	e := newTestEnv(t)
	q := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["user_group"]`}}).str("queue_id")
	id := e.createGroup(t, &e.alice, "support", []uint64{e.bob.ID}, url.Values{"subgroups": {"[3]"}})
	evs := e.eventsOfType(t, &e.bob, q, "user_group")
	if len(evs) != 2 || evs[0]["op"] != "add" || evs[1]["op"] != "add_subgroups" {
		t.Fatalf("events: got %v", evs)
	}
	g := evs[0]["group"].(map[string]any)
	if g["id"] != float64(id) || g["name"] != "support" || toJSON(t, g["members"]) != toJSON(t, []uint64{e.bob.ID}) || toJSON(t, g["direct_subgroup_ids"]) != "[]" {
		t.Errorf("add event's group: got %v", g)
	}
}

// TestUserGroups_MentionsFlagMembersAndPush: @*group* renders as Zulip
// renders it and flags every active member as mentioned, through
// subgroups, but the sender; a silent @_*group* flags nobody; pushes
// follow the flag; a sender outside the group's can_mention_group is
// refused with Zulip's text and nothing is sent.
func TestUserGroups_MentionsFlagMembersAndPush(t *testing.T) {
	e, carol := newMentionEnv(t)
	support := e.createGroup(t, &e.alice, "support", []uint64{e.alice.ID, e.bob.ID}, nil)
	e.createGroup(t, &e.alice, "everybody", []uint64{}, url.Values{"subgroups": {toJSON(t, []int{support})}})
	send := func(a *account, content string) uint64 {
		t.Helper()
		r := e.sendContent(t, a, "lunch", content)
		wantAPISuccess(t, r)
		return uint64(r.body["id"].(float64))
	}
	id := send(&e.alice, "@*support* lunch?")
	if got := mentionFlagsIn(e.flagsOf(t, &e.bob, id)); !slices.Equal(got, []string{"mentioned"}) {
		t.Errorf("bob's flags for @*support*: got %v, want [mentioned]", got)
	}
	for _, a := range []*account{&e.alice, &carol} {
		if got := mentionFlagsIn(e.flagsOf(t, a, id)); got != nil {
			t.Errorf("%s's flags for @*support*: got %v, want none (the sender, and a non-member)", a.Email, got)
		}
	}
	var m message
	if err := e.st.view(func(tx *bbolt.Tx) (err error) { m, err = messageByID(tx, id); return err }); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`<p><span class="user-group-mention" data-user-group-id="%d">@support</span> lunch?</p>`, support); m.Rendered != want {
		t.Errorf("rendered: got %s, want %s", m.Rendered, want)
	}
	var trigger string
	e.st.view(func(tx *bbolt.Tx) error {
		trigger = channelPushTrigger(tx, e.bob.user, e.general, m)
		return nil
	})
	if trigger != "mentioned" {
		t.Errorf("bob's push trigger: got %q, want mentioned", trigger)
	}
	id = send(&carol, "@*everybody* hi")
	for _, a := range []*account{&e.alice, &e.bob} {
		if got := mentionFlagsIn(e.flagsOf(t, a, id)); !slices.Equal(got, []string{"mentioned"}) {
			t.Errorf("%s's flags for @*everybody* (support is its subgroup): got %v", a.Email, got)
		}
	}
	id = send(&carol, "@_*support* hi")
	if got := mentionFlagsIn(e.flagsOf(t, &e.bob, id)); got != nil {
		t.Errorf("bob's flags for the silent @_*support*: got %v, want none", got)
	}
	// Only administrators may mention support now.
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/user_groups/"+strconv.Itoa(support), url.Values{"can_mention_group": {`{"new":2}`}}, &e.alice))
	before := e.st.maxID.Load()
	wantAPIError(t, e.sendContent(t, &carol, "lunch", "@*support* hi"), 400, "BAD_REQUEST", "You are not allowed to mention user group 'support'.")
	wantAPIError(t, e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"private"}, "to": {jsonIDs(e.bob.ID)}, "content": {"@*support*"}}, &carol),
		400, "BAD_REQUEST", "You are not allowed to mention user group 'support'.")
	if after := e.st.maxID.Load(); after != before {
		t.Errorf("a refused mention stored a message: %d messages, want %d", after, before)
	}
	send(&carol, "@_*support* silently")
	send(&e.admin, "@*support* admins may")
}

// TestUserGroups_AreValuesOfGroupSettings: a user group, and a group
// that holds it as a subgroup, is a value of the organisation's settings
// (PATCH /realm) and of a channel's, and decides who holds the
// permission; a group that does not exist or is deactivated is refused.
func TestUserGroups_AreValuesOfGroupSettings(t *testing.T) {
	e := newTestEnv(t)
	inner := e.createGroup(t, &e.admin, "creators", []uint64{e.bob.ID}, nil)
	outer := e.createGroup(t, &e.admin, "outer", []uint64{}, url.Values{"subgroups": {toJSON(t, []int{inner})}})
	gone := e.createGroup(t, &e.admin, "gone", []uint64{}, nil)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/user_groups/"+strconv.Itoa(gone)+"/deactivate", nil, &e.admin))

	realm := func(setting string, group int) response {
		return e.request(t, http.MethodPatch, "/api/v1/realm", url.Values{setting: {fmt.Sprintf(`{"new":%d}`, group)}}, &e.admin)
	}
	wantAPIError(t, realm("can_create_public_channel_group", 99), 400, "BAD_REQUEST", "Invalid user group")
	wantAPIError(t, realm("can_create_public_channel_group", gone), 400, "BAD_REQUEST", "User group is deactivated.")
	wantAPISuccess(t, realm("can_create_public_channel_group", outer))
	create := func(a *account, name string, extra url.Values) response {
		params := url.Values{"subscriptions": {`[{"name":"` + name + `"}]`}}
		for k, v := range extra {
			params[k] = v
		}
		return e.request(t, http.MethodPost, "/api/v1/users/me/subscriptions", params, a)
	}
	wantAPIError(t, create(&e.alice, "alices", nil), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPISuccess(t, create(&e.bob, "bobs", nil)) // in creators, a subgroup of outer

	// A channel whose can_send_message_group is the user group.
	wantAPIError(t, create(&e.bob, "bad", url.Values{"can_send_message_group": {strconv.Itoa(gone)}}), 400, "BAD_REQUEST", "User group is deactivated.")
	wantAPISuccess(t, create(&e.bob, "announce", url.Values{"can_send_message_group": {strconv.Itoa(inner)}}))
	post := func(a *account) response {
		return e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"announce"}, "topic": {"t"}, "content": {"hi"}}, a)
	}
	wantAPISuccess(t, post(&e.bob))
	wantAPIError(t, post(&e.alice), 400, "BAD_REQUEST", "You do not have permission to post in this channel.")
	// Membership changes take effect on the next send.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/user_groups/"+strconv.Itoa(inner)+"/members", url.Values{"add": {jsonIDs(e.alice.ID)}}, &e.admin))
	wantAPISuccess(t, post(&e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/user_groups/"+strconv.Itoa(inner)+"/members", url.Values{"delete": {jsonIDs(e.alice.ID)}}, &e.admin))
	wantAPIError(t, post(&e.alice), 400, "BAD_REQUEST", "You do not have permission to post in this channel.")
	// The groups in use cannot be deactivated.
	r := e.request(t, http.MethodPost, "/api/v1/user_groups/"+strconv.Itoa(inner)+"/deactivate", nil, &e.admin)
	wantAPIError(t, r, 400, "CANNOT_DEACTIVATE_GROUP_IN_USE", "Cannot deactivate user group in use.")
	if got := toJSON(t, r.body["objections"]); !strings.Contains(got, `"type":"channel"`) || !strings.Contains(got, `"settings":["can_send_message_group"]`) ||
		!strings.Contains(got, `"type":"subgroup"`) {
		t.Errorf("objections: got %s, want the subgroup and the channel's setting", got)
	}
}

// TestUserGroups_ConcurrentWritesAllHold: writes of one group committed
// together each see the others (no member is lost, and two subgroup
// additions that together would make a cycle cannot both hold), and the
// directory in place afterwards is the newest.
func TestUserGroups_ConcurrentWritesAllHold(t *testing.T) {
	e := newTestEnv(t)
	id := e.createGroup(t, &e.owner, "many", nil, nil)
	other := e.createGroup(t, &e.owner, "other", nil, nil)
	var users []user
	for i := range 20 {
		u, _ := mustCreateUser(t, e.st, fmt.Sprintf("u%d@example.com", i), roleMember, false)
		users = append(users, u)
	}
	done := make(chan error)
	for _, u := range users {
		go func() {
			done <- e.st.updateGroupMembers(e.owner.user, id, groupMembersEdit{Add: []uint64{u.ID}})
		}()
	}
	for _, pair := range [][2]int{{id, other}, {other, id}} {
		go func() {
			done <- e.st.updateGroupMembers(e.owner.user, pair[0], groupMembersEdit{AddSubgroups: []int{pair[1]}})
		}()
	}
	failed := 0
	for range len(users) + 2 {
		if err := <-done; err != nil {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("concurrent writes: %d failed, want 1 (one of the two subgroup additions)", failed)
	}
	g, _ := e.st.groups().group(id)
	if len(g.Members) != len(users) {
		t.Errorf("members after concurrent adds: got %d, want %d", len(g.Members), len(users))
	}
	o, _ := e.st.groups().group(other)
	if len(g.Subgroups)+len(o.Subgroups) != 1 {
		t.Errorf("subgroups: got %v and %v, want one of them", g.Subgroups, o.Subgroups)
	}
}

// TestUserGroups_GuestsHoldNoPermissionThatMayNotBeEveryones: a guest
// in a user group gets none of its permissions whose setting may not be
// role:everyone (Zulip's user_has_permission_for_group_setting): not
// managing a group, not deleting others' messages; but is mentioned
// with it.
func TestUserGroups_GuestsHoldNoPermissionThatMayNotBeEveryones(t *testing.T) {
	e := newTestEnv(t)
	guest := e.guest(t)
	if err := e.st.addSubscriptionForTest(guest.user, e.general); err != nil {
		t.Fatal(err)
	}
	staff := e.createGroup(t, &e.owner, "staff", []uint64{guest.ID, e.bob.ID}, nil)
	managed := e.createGroup(t, &e.owner, "managed", []uint64{}, url.Values{"can_manage_group": {strconv.Itoa(staff)}})
	deactivate := "/api/v1/user_groups/" + strconv.Itoa(managed) + "/deactivate"
	wantAPIError(t, e.request(t, http.MethodPost, deactivate, nil, guest), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/realm", url.Values{"can_delete_any_message_group": {fmt.Sprintf(`{"new":%d}`, staff)}}, &e.admin))
	r := e.sendContent(t, &e.bob, "t", "@*staff* hello")
	wantAPISuccess(t, r)
	alices := "/api/v1/messages/" + strconv.FormatUint(e.sendAs(t, e.alice, e.general, "x"), 10)
	wantAPIError(t, e.request(t, http.MethodDelete, alices, nil, guest), 400, "BAD_REQUEST", "You don't have permission to delete this message")
	if got := mentionFlagsIn(e.flagsOf(t, guest, uint64(r.body["id"].(float64)))); !slices.Equal(got, []string{"mentioned"}) {
		t.Errorf("the guest's flags: got %v, want [mentioned]", got)
	}
	wantAPISuccess(t, e.request(t, http.MethodDelete, alices, nil, &e.bob)) // bob, a member of staff, may delete any message
	wantAPISuccess(t, e.request(t, http.MethodPost, deactivate, nil, &e.bob))
}

// TestUserGroups_ExportSaysTheyDoNotGoOver: the export writes no groups
// (its importer makes the system ones), so its report counts the user
// groups left behind, and what it writes still passes the importer's
// rules.
func TestUserGroups_ExportSaysTheyDoNotGoOver(t *testing.T) {
	e := newTestEnv(t)
	e.createGroup(t, &e.alice, "support", []uint64{e.bob.ID}, nil)
	e.sendAs(t, e.bob, e.general, "lunch")
	dir := filepath.Join(t.TempDir(), "export")
	if err := prepareExportDir(dir); err != nil {
		t.Fatal(err)
	}
	report, err := e.st.export(dir, e.st.uploadsDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := "not exported either: 1 user groups"; !strings.Contains(report.String(), want) {
		t.Errorf("export report: got %q, want it to hold %q", report.String(), want)
	}
	checkZulipImportable(t, dir)
}

// TestUserGroups_ChannelAdministrationTakesThem: PATCH /streams/{id}
// (main's channel administration) takes a user group as a channel
// setting's value, named or as an anonymous group's subgroup, as Zulip's
// access_user_group_for_setting does: a member of the group posts and a
// non-member is refused, and a member of a user group that administers
// the channel may change it.
func TestUserGroups_ChannelAdministrationTakesThem(t *testing.T) {
	e := newTestEnv(t)
	posters := e.createGroup(t, &e.admin, "posters", []uint64{e.bob.ID}, nil)
	general := channelPath(e.general)
	post := func(a *account) response {
		return e.request(t, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"t"}, "content": {"x"}}, a)
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{"can_send_message_group": {fmt.Sprintf(`{"new":%d}`, posters)}}, &e.admin))
	wantAPISuccess(t, post(&e.bob))
	wantAPIError(t, post(&e.alice), 400, "BAD_REQUEST", "You do not have permission to post in this channel.")
	anonymous := fmt.Sprintf(`{"new":{"direct_members":[],"direct_subgroups":[%d]}}`, posters)
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{"can_send_message_group": {anonymous}}, &e.admin))
	wantAPISuccess(t, post(&e.bob))
	wantAPIError(t, post(&e.alice), 400, "BAD_REQUEST", "You do not have permission to post in this channel.")
	// A member of the administering user group may change the channel;
	// one outside it may not.
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{"can_administer_channel_group": {fmt.Sprintf(`{"new":%d}`, posters)}}, &e.admin))
	wantAPIError(t, e.request(t, http.MethodPatch, general, url.Values{"description": {"alice's"}}, &e.alice), 400, "BAD_REQUEST", "You do not have permission to administer this channel.")
	wantAPISuccess(t, e.request(t, http.MethodPatch, general, url.Values{"description": {"bob's"}}, &e.bob))
	// A deactivated user group is refused.
	gone := e.createGroup(t, &e.admin, "gone", nil, nil)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/user_groups/"+strconv.Itoa(gone)+"/deactivate", nil, &e.admin))
	wantAPIError(t, e.request(t, http.MethodPatch, general, url.Values{"can_send_message_group": {fmt.Sprintf(`{"new":%d}`, gone)}}, &e.admin), 400, "BAD_REQUEST", "User group is deactivated.")
}

// TestUserGroups_InvitationsAddTheInviteeToThem: POST /invites/multiuse
// (and /invites) takes group_ids as Zulip 11's
// access_user_groups_for_invite does: each a user group the caller may
// add members to (can_add_members_group, or managing it or every
// group), a system group "Insufficient permission", an id of no group
// "Invalid user group", a deactivated one "User group is deactivated.";
// a refused request stores nothing. The newcomer joins the groups on
// sign-up, told as user_group add_members.
func TestUserGroups_InvitationsAddTheInviteeToThem(t *testing.T) {
	e := newTestEnv(t)
	team := e.createGroup(t, &e.admin, "team", nil, nil) // the administrator may add its members (its creator)
	bobs := e.createGroup(t, &e.bob, "bobs", nil, nil)
	gone := e.createGroup(t, &e.admin, "gone", nil, nil)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/user_groups/"+strconv.Itoa(gone)+"/deactivate", nil, &e.admin))
	link := func(a *account, ids ...int) response {
		return e.request(t, http.MethodPost, "/api/v1/invites/multiuse", url.Values{"group_ids": {toJSON(t, ids)}}, a)
	}
	wantAPIError(t, link(&e.admin, team, 99), 400, "BAD_REQUEST", "Invalid user group")
	wantAPIError(t, link(&e.admin, 5), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPIError(t, link(&e.admin, bobs), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPIError(t, link(&e.admin, gone), 400, "BAD_REQUEST", "User group is deactivated.")
	if list := listInvitesOf(t, e, &e.owner); len(list) != 0 {
		t.Fatalf("refused requests stored %v", list)
	}
	wantAPISuccess(t, link(&e.owner, bobs)) // the owner manages every group (can_manage_all_groups)

	queue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["user_group"]`}}).str("queue_id")
	r := link(&e.admin, team, team)
	wantAPISuccess(t, r)
	path := strings.TrimPrefix(r.str("invite_link"), "http://zulite.test")
	if got := e.signupRequest(t, "POST", path, url.Values{"email": {"carol@example.com"}, "full_name": {"Carol"}, "password": {"carols-password"}}); got.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST %s: got %d %s", path, got.StatusCode, pageText(t, got))
	}
	carol, err := e.st.userByEmail("carol@example.com")
	if err != nil {
		t.Fatal(err)
	}
	member := e.request(t, http.MethodGet, "/api/v1/user_groups/"+strconv.Itoa(team)+"/members/"+strconv.FormatUint(carol.ID, 10), nil, &e.alice)
	if wantAPISuccess(t, member); member.body["is_user_group_member"] != true {
		t.Errorf("carol in team: got %s", member.raw)
	}
	var got []string
	for _, ev := range e.pollNow(t, &e.alice, queue, -1) {
		got = append(got, fmt.Sprint(ev["op"], " ", ev["group_id"], " ", ev["user_ids"]))
	}
	if want := []string{fmt.Sprintf("add_members %d [%d]", team, carol.ID)}; !slices.Equal(got, want) {
		t.Errorf("alice's user_group events: got %q, want %q", got, want)
	}
}

// TestUserGroups_PeopleAdministrationTellsThem: main's people
// administration still tells a role change as the system groups left
// and joined, and a reactivation tells, as Zulip's do_reactivate_user
// does over user_profile.direct_groups, every named group the person is
// a direct member of, the user groups after the system ones; a
// deactivated user group is left out. The person is back in the group
// at once.
func TestUserGroups_PeopleAdministrationTellsThem(t *testing.T) {
	e := newTestEnv(t)
	team := e.createGroup(t, &e.owner, "team", []uint64{e.alice.ID}, nil)
	gone := e.createGroup(t, &e.owner, "gone", []uint64{e.alice.ID}, nil)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/user_groups/"+strconv.Itoa(gone)+"/deactivate", nil, &e.owner))
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	alice, id := userPath(e.alice), e.alice.ID
	wantAPISuccess(t, e.request(t, http.MethodPatch, alice, url.Values{"role": {"300"}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodDelete, alice, nil, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodPost, alice+"/reactivate", nil, &e.admin))
	_, groups := e.personUpdates(t, &e.bob, queue)
	want := []string{fmt.Sprintf("remove_members 5 [%d]", id), fmt.Sprintf("add_members 3 [%d]", id), fmt.Sprintf("remove_members 4 [%d]", id),
		fmt.Sprintf("add_members 3 [%d]", id), fmt.Sprintf("add_members %d [%d]", team, id)}
	if !slices.Equal(groups, want) {
		t.Errorf("bob's user_group events: got %q, want %q", groups, want)
	}
	member := e.request(t, http.MethodGet, "/api/v1/user_groups/"+strconv.Itoa(team)+"/members/"+strconv.FormatUint(id, 10), nil, &e.bob)
	if wantAPISuccess(t, member); member.body["is_user_group_member"] != true {
		t.Errorf("alice in team after reactivation: got %s", member.raw)
	}
}
