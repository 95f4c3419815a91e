package main

// The store's side of running an organisation's people from the API:
// an administrator's edits of an account (role, name, custom profile
// data), deactivation and reactivation by id, the custom profile fields
// and the settings new users start with.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"strconv"
	"strings"

	"go.etcd.io/bbolt"
)

// bucketProfileFields holds the organisation's custom profile fields
// (store.go's layout): field id → profileField (JSON). A user's values
// live in their account (user.Profile), so that every reader of
// accounts, register's shared state among them, has them at the
// account's users_version.
var bucketProfileFields = []byte("profile_fields")

// keyRealmUserDefaults is meta's "realm_user_defaults": the settings new
// users start with that differ from Zulip's defaults, as user_settings
// keeps a user's (PATCH /realm/user_settings_defaults).
var keyRealmUserDefaults = []byte("realm_user_defaults")

// profileField is a custom profile field, stored as Zulip's
// CustomProfileField.as_dict answers it.
type profileField struct {
	ID                      uint64 `json:"id"`
	Name                    string `json:"name"`
	Type                    int    `json:"type"`
	Hint                    string `json:"hint"`
	FieldData               string `json:"field_data"`
	Order                   int64  `json:"order"`
	Required                bool   `json:"required"`
	EditableByUser          bool   `json:"editable_by_user"`
	DisplayInProfileSummary bool   `json:"display_in_profile_summary,omitempty"`
}

// profileValue is a user's value of a field, as profile_data lists it:
// rendered_value only for the text fields, which Zulip renders.
type profileValue struct {
	Value    string `json:"value"`
	Rendered string `json:"rendered_value,omitempty"`
}

// profileUpdate is one field's new value: nil removes it.
type profileUpdate struct {
	FieldID uint64
	Value   any // string or []any of json.Number, as decoded
}

// profileFieldsChanged: the fields changed; everyone hears the new list.
type profileFieldsChanged struct{ Fields []profileField }

// accountEdited: an account's role, name, activity or profile data
// changed (Before is how it was), told to everyone as realm_user updates.
type accountEdited struct {
	User, Before user
	Fields       []uint64 // the profile fields whose value changed, in the order changed
}

// profileFieldsTx is the fields in their order (ties by id).
func profileFieldsTx(tx *bbolt.Tx) ([]profileField, error) {
	fields := []profileField{}
	err := tx.Bucket(bucketProfileFields).ForEach(func(_, v []byte) error {
		var f profileField
		if err := json.Unmarshal(v, &f); err != nil {
			return err
		}
		fields = append(fields, f)
		return nil
	})
	sortStableFunc(fields, func(a, b profileField) int { return cmp.Compare(a.Order, b.Order) })
	return fields, err
}

// profileFields is the organisation's custom profile fields, in order.
func (s *store) profileFields() ([]profileField, error) {
	var fields []profileField
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		fields, err = profileFieldsTx(tx)
		return err
	})
	return fields, err
}

// fieldChecks are Zulip's checks of a field against the others: a
// unique label, and at most two fields in the profile summary.
func fieldChecks(fields []profileField, f profileField) error {
	summary := 0
	for _, other := range fields {
		if other.ID == f.ID {
			continue
		}
		if other.DisplayInProfileSummary {
			summary++
		}
		if other.Name == f.Name {
			return refusal(errFieldLabelTaken)
		}
	}
	if f.DisplayInProfileSummary && summary >= maxProfileSummaryFields {
		return refusal(errProfileSummaryLimit)
	}
	return nil
}

// maxProfileSummaryFields is Zulip's MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS.
const maxProfileSummaryFields = 2

// addProfileField stores a new field, ordered last (its order is its id,
// as Zulip's), and returns its id.
func (s *store) addProfileField(f profileField) (uint64, error) {
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		fields, err := profileFieldsTx(tx)
		if err != nil {
			return err
		}
		if f.DisplayInProfileSummary && countSummary(fields, 0) >= maxProfileSummaryFields {
			return refusal(errProfileSummaryLimit)
		}
		f.ID = 0
		if err := fieldChecks(fields, f); err != nil {
			return err
		}
		b := tx.Bucket(bucketProfileFields)
		if f.ID, err = b.NextSequence(); err != nil {
			return err
		}
		f.Order = int64(f.ID)
		report(profileFieldsChanged{append(fields, f)})
		return putJSON(b, itob(f.ID), f)
	})
	return f.ID, err
}

func countSummary(fields []profileField, except uint64) int {
	n := 0
	for _, f := range fields {
		if f.DisplayInProfileSummary && f.ID != except {
			n++
		}
	}
	return n
}

// updateProfileField changes a field as edit says, once edit accepts
// the field as it is; a list's removed options leave the values that
// held them, as Zulip's remove_custom_profile_field_value_if_required.
func (s *store) updateProfileField(id uint64, edit func(f *profileField, fields []profileField) error) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		fields, err := profileFieldsTx(tx)
		if err != nil {
			return err
		}
		i := indexField(fields, id)
		if i < 0 {
			return refusal(errFieldNotFound(id))
		}
		f := fields[i]
		if err := edit(&f, fields); err != nil {
			return err
		}
		if err := fieldChecks(fields, f); err != nil {
			return err
		}
		if f.Type == fieldSelect && f.FieldData != fields[i].FieldData {
			var choices map[string]json.RawMessage
			json.Unmarshal([]byte(f.FieldData), &choices)
			if err := s.dropValues(tx, report, id, func(v profileValue) bool { _, kept := choices[v.Value]; return !kept }); err != nil {
				return err
			}
		}
		fields[i] = f
		report(profileFieldsChanged{fields})
		return putJSON(tx.Bucket(bucketProfileFields), itob(id), f)
	})
}

func indexField(fields []profileField, id uint64) int {
	for i, f := range fields {
		if f.ID == id {
			return i
		}
	}
	return -1
}

// dropValues removes the field's values that drop says go, from every
// account holding one. It only writes: callers check first.
func (s *store) dropValues(tx *bbolt.Tx, report func(any), fieldID uint64, drop func(profileValue) bool) error {
	users, _, _, err := s.directory.of(tx)
	if err != nil {
		return err
	}
	key := strconv.FormatUint(fieldID, 10)
	for _, u := range users {
		v, ok := u.Profile[key]
		if !ok || !drop(v) {
			continue
		}
		before := u
		u.Profile = cloneProfile(u.Profile)
		delete(u.Profile, key)
		if err := putUser(tx, u); err != nil {
			return err
		}
		report(accountEdited{User: u, Before: before, Fields: []uint64{fieldID}})
	}
	return nil
}

func cloneProfile(p map[string]profileValue) map[string]profileValue {
	c := make(map[string]profileValue, len(p)+1)
	for k, v := range p {
		c[k] = v
	}
	return c
}

// deleteProfileField removes a field and every value of it (Zulip's
// cascade), without a realm_user event for each: the field list says it.
func (s *store) deleteProfileField(id uint64) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		fields, err := profileFieldsTx(tx)
		if err != nil {
			return err
		}
		i := indexField(fields, id)
		if i < 0 {
			return refusal(errFieldNotFound(id))
		}
		quiet := func(any) {}
		if err := s.dropValues(tx, quiet, id, func(profileValue) bool { return true }); err != nil {
			return err
		}
		report(profileFieldsChanged{append(fields[:i:i], fields[i+1:]...)})
		return tx.Bucket(bucketProfileFields).Delete(itob(id))
	})
}

// reorderProfileFields gives each field its place in order, which must
// name every field (Zulip's try_reorder_realm_custom_profile_fields).
func (s *store) reorderProfileFields(order []int64) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		fields, err := profileFieldsTx(tx)
		if err != nil {
			return err
		}
		place := map[uint64]int64{}
		for i, id := range order {
			place[uint64(id)] = int64(i)
		}
		for _, f := range fields {
			if _, ok := place[f.ID]; !ok {
				return refusal(errInvalidOrderMapping)
			}
		}
		b := tx.Bucket(bucketProfileFields)
		for i := range fields {
			fields[i].Order = place[fields[i].ID]
			if err := putJSON(b, itob(fields[i].ID), fields[i]); err != nil {
				return err
			}
		}
		sortStableFunc(fields, func(a, b profileField) int { return cmp.Compare(a.Order, b.Order) })
		report(profileFieldsChanged{fields})
		return nil
	})
}

// accountEdit is what PATCH /users/{user_id} and PATCH and DELETE
// /users/me/profile_data change: zero values keep what is.
type accountEdit struct {
	Role     int
	FullName string // raw, checked by checkFullName; "" or blank keeps the name
	Profile  []profileUpdate
}

// editAccount applies an edit of target by actor in Zulip's order of
// checks (zerver/views/users.py update_user_backend): access, the role's
// rules, the name, then each profile value; nothing is written unless
// all pass. self is the own-profile routes (actor edits their own data,
// where fields not editable_by_user are an administrator's).
func (s *store) editAccount(actor user, targetID uint64, edit accountEdit, self bool) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		target, err := userTx(tx, targetID)
		if err != nil {
			return err
		}
		if !self && !actor.isAdmin() {
			return errPermissionDenied
		}
		users, _, _, err := s.directory.of(tx)
		if err != nil {
			return err
		}
		next := target
		if edit.Role != 0 && edit.Role != target.Role {
			if (edit.Role == roleOwner || target.Role == roleOwner) && actor.Role != roleOwner {
				return refusal(errNotOwner)
			}
			if isLastOwner(users, target) {
				return refusal(errOwnerRoleLastOwner)
			}
			next.Role = edit.Role
		}
		if strings.TrimSpace(edit.FullName) != "" && edit.FullName != target.FullName {
			name, err := checkFullName(edit.FullName)
			if err != nil {
				return refusal(asAPIError(err))
			}
			next.FullName = name
		}
		var changed []uint64
		if len(edit.Profile) > 0 {
			fields, err := profileFieldsTx(tx)
			if err != nil {
				return err
			}
			next.Profile = cloneProfile(target.Profile)
			for _, up := range edit.Profile {
				i := indexField(fields, up.FieldID)
				if i < 0 {
					return refusal(errFieldNotFound(up.FieldID))
				}
				f := fields[i]
				if self && !actor.isAdmin() && !f.EditableByUser {
					return refusal(errFieldNotEditable)
				}
				key := strconv.FormatUint(f.ID, 10)
				if up.Value == nil {
					if _, had := next.Profile[key]; had {
						delete(next.Profile, key)
						changed = append(changed, f.ID)
					}
					continue
				}
				value, err := checkProfileValue(f, up.Value, users)
				if err != nil {
					return refusal(err)
				}
				if old, had := next.Profile[key]; had && old.Value == value.Value {
					continue
				}
				next.Profile[key] = value
				changed = append(changed, f.ID)
			}
			if len(next.Profile) == 0 {
				next.Profile = nil
			}
		}
		if next.Role == target.Role && next.FullName == target.FullName && len(changed) == 0 {
			return nil
		}
		report(accountChanged{Email: target.Email, UserID: target.ID})
		report(accountEdited{User: next, Before: target, Fields: changed})
		if next.Role != target.Role && next.Active {
			sight, err := s.roleSight(tx, target, next)
			if err != nil {
				return err
			}
			if len(sight.Created)+len(sight.Deleted) > 0 {
				report(sight)
			}
		}
		return putUser(tx, next)
	})
}

// roleSight is what a role change shows or hides of the channels (Zulip's
// send_stream_events_for_role_update): to the person, a stream create and
// the subscribers of each channel they may now see, a stream delete of
// each they no longer may.
func (s *store) roleSight(tx *bbolt.Tx, before, after user) (subscriptionsChanged, error) {
	change := subscriptionsChanged{Op: "add"}
	f := s.channelFigures(tx)
	err := tx.Bucket(bucketChannels).ForEach(func(_, v []byte) error {
		var ch channel
		if err := json.Unmarshal(v, &ch); err != nil {
			return err
		}
		saw, sees := s.canSeeMetadata(tx, before, ch), s.canSeeMetadata(tx, after, ch)
		if saw == sees {
			return nil
		}
		view, err := f.view(ch)
		if err != nil {
			return err
		}
		news := channelNews{Channel: view, Audience: []uint64{after.ID}}
		if !sees {
			change.Deleted = append(change.Deleted, news)
			return nil
		}
		change.Created = append(change.Created, news)
		subscribers, err := f.subscribers(ch.ID)
		if err != nil || len(subscribers) == 0 {
			return err
		}
		change.Peers = append(change.Peers, peerNews{ChannelID: ch.ID, UserIDs: subscribers, Audience: []uint64{after.ID}})
		return nil
	})
	return change, err
}

// userTx reads an account by id (errNoSuchUser: none).
func userTx(tx *bbolt.Tx, id uint64) (user, error) {
	var u user
	v := tx.Bucket(bucketUsers).Get(itob(id))
	if v == nil {
		return u, errNoSuchUser
	}
	return u, json.Unmarshal(v, &u)
}

// isLastOwner is Zulip's check_last_owner: the account is a human owner
// and the organisation's only active one.
func isLastOwner(users []user, target user) bool {
	if target.Role != roleOwner || target.Bot {
		return false
	}
	owners := 0
	for _, u := range users {
		if u.Active && !u.Bot && u.Role == roleOwner {
			owners++
		}
	}
	return owners == 1
}

// setActiveByID (de)activates an account by id for an administrator,
// once allowed (which sees the accounts) says it may.
func (s *store) setActiveByID(id uint64, active bool, allowed func(target user, users []user) error) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		u, err := userTx(tx, id)
		if err != nil {
			return err
		}
		users, _, _, err := s.directory.of(tx)
		if err != nil {
			return err
		}
		if err := allowed(u, users); err != nil {
			return err
		}
		return s.putActive(tx, report, u, active)
	})
}

// putActive writes an account's activity and tells of it: a
// deactivated account's keys, web sessions and event queues end.
func (s *store) putActive(tx *bbolt.Tx, report func(any), u user, active bool) error {
	if u.Active == active {
		return nil
	}
	before := u
	u.Active = active
	report(accountChanged{Email: u.Email, UserID: u.ID, EndsSessions: !active})
	report(accountEdited{User: u, Before: before})
	if !active {
		if err := endUserSessionsTx(tx, u.ID); err != nil { // store_sessions.go
			return err
		}
		return putUser(tx, u)
	}
	// Back: the channels' subscriber lists hold them again (Zulip's
	// peer_add of do_reactivate_user), then their system groups do.
	peers, err := s.reactivationPeers(tx, u)
	if err != nil {
		return err
	}
	if len(peers) > 0 {
		report(subscriptionsChanged{Op: "add", Peers: peers})
	}
	report(groupsRejoined{u})
	return putUser(tx, u)
}

// groupsRejoined: a reactivated person is back in their system groups.
type groupsRejoined struct{ User user }

// reactivationPeers are, for each channel the person is subscribed to,
// those who see its subscribers (the active others who may see the
// channel, as a subscription's peers are told).
func (s *store) reactivationPeers(tx *bbolt.Tx, u user) ([]peerNews, error) {
	users, _, _, err := s.directory.of(tx)
	if err != nil {
		return nil, err
	}
	var peers []peerNews
	prefix := itob(u.ID)
	c := tx.Bucket(bucketSubscriptions).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var ch channel
		if err := getJSON(tx.Bucket(bucketChannels), k[8:], &ch); err != nil {
			return nil, err
		}
		var audience []uint64
		for _, other := range users {
			if other.Active && other.ID != u.ID && s.canSeeMetadata(tx, other, ch) {
				audience = append(audience, other.ID)
			}
		}
		if len(audience) > 0 {
			peers = append(peers, peerNews{ChannelID: ch.ID, UserIDs: []uint64{u.ID}, Audience: audience})
		}
	}
	return peers, nil
}

// realmUserDefaults is the settings new users start with that differ
// from Zulip's defaults.
func (s *store) realmUserDefaults() (map[string]json.RawMessage, error) {
	defaults := map[string]json.RawMessage{}
	err := s.view(func(tx *bbolt.Tx) error {
		clear(defaults)
		return realmUserDefaultsTx(tx, defaults)
	})
	return defaults, err
}

func realmUserDefaultsTx(tx *bbolt.Tx, into map[string]json.RawMessage) error {
	if v := tx.Bucket(bucketMeta).Get(keyRealmUserDefaults); v != nil {
		return json.Unmarshal(v, &into)
	}
	return nil
}

// realmDefaultsChanged: an administrator changed the settings new users
// start with (only those whose value changed, in order).
type realmDefaultsChanged struct{ Changes []settingChange }

// updateRealmUserDefaults applies the changes as updateUserSettings does
// a user's: only changed values are told of.
func (s *store) updateRealmUserDefaults(changes []settingChange) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		defaults := map[string]json.RawMessage{}
		if err := realmUserDefaultsTx(tx, defaults); err != nil {
			return err
		}
		changed := applySettingChanges(defaults, changes) // store_users.go
		if len(changed) == 0 {
			return nil
		}
		report(realmDefaultsChanged{changed})
		return putJSON(tx.Bucket(bucketMeta), keyRealmUserDefaults, defaults)
	})
}

// startWithDefaults gives a new account the organisation's defaults
// (Zulip's copy_default_settings at creation).
func startWithDefaults(tx *bbolt.Tx, userID uint64) error {
	if v := tx.Bucket(bucketMeta).Get(keyRealmUserDefaults); v != nil && string(v) != "{}" {
		return tx.Bucket(bucketUserSettings).Put(itob(userID), bytes.Clone(v))
	}
	return nil
}
