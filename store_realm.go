package main

import (
	"encoding/json"

	"go.etcd.io/bbolt"
)

// The store's organisation settings that an administrator changes.

// realmGroup is the named group an organisation permission setting
// holds: an administrator's choice (PATCH /realm; zulite lets the
// channel-creation settings be changed), else zulite's default
// (realmPermissionSettings).
func (s *store) realmGroup(p realmPermission) int {
	if m := s.realmGroups.Load(); m != nil {
		if g, ok := (*m)[p.name()]; ok {
			return g
		}
	}
	return realmPermissionSettings[p].value
}

// allowed tells whether the user holds an organisation permission:
// is in the group its setting names (a system or a user-defined group;
// Zulip's user_has_permission_for_group_setting, which refuses guests
// a permission that may not be everyone's).
func (s *store) allowed(u user, p realmPermission) bool {
	return s.groups().permits(&realmPermissionSettings[p], systemGroupSetting(s.realmGroup(p)), u)
}

// checkRealmGroup is Zulip's check of a realm group setting's value:
// an existing, active named group that the setting allows
// (checkSettingValue).
func (s *store) checkRealmGroup(p realmPermission, id int) error {
	return s.view(func(tx *bbolt.Tx) error {
		return checkSettingValue(tx, &realmPermissionSettings[p], systemGroupSetting(id))
	})
}

// setRealmGroup stores an organisation permission setting.
func (s *store) setRealmGroup(p realmPermission, group int) error {
	var next map[string]int
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		next = map[string]int{}
		if v := tx.Bucket(bucketMeta).Get(keyRealmGroups); v != nil {
			if err := json.Unmarshal(v, &next); err != nil {
				return err
			}
		}
		next[p.name()] = group
		report(realmGroupChanged{Setting: p.name(), Group: group})
		return putJSON(tx.Bucket(bucketMeta), keyRealmGroups, next)
	})
	if err == nil {
		s.realmGroups.Store(&next)
	}
	return err
}

// loadRealmGroups reads the administrators' permission choices.
func (s *store) loadRealmGroups(tx *bbolt.Tx) {
	m := map[string]int{}
	if v := tx.Bucket(bucketMeta).Get(keyRealmGroups); v != nil {
		json.Unmarshal(v, &m)
	}
	s.realmGroups.Store(&m)
}
