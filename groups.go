package main

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
