package main

// User status: a short text and an emoji each user may show (POST
// /users/me/status), kept in the user_status bucket.

import (
	"encoding/json"

	"go.etcd.io/bbolt"
)

// userStatus is one user's status as stored; empty fields are unset.
type userStatus struct {
	Text         string `json:"status_text,omitempty"`
	EmojiName    string `json:"emoji_name,omitempty"`
	EmojiCode    string `json:"emoji_code,omitempty"`
	ReactionType string `json:"reaction_type,omitempty"`
	Timestamp    int64  `json:"timestamp"`
	Client       string `json:"client,omitempty"`
}

// statusChange is what one request changes: nil leaves a field as it is
// (Zulip's update_user_status; an emoji's code and type change only with
// its name).
type statusChange struct {
	Away                          *bool
	Text                          *string
	EmojiName, EmojiCode, EmojiRT *string
	Client                        string
}

// userStatusChanged: a user changed their status; Change is what the
// request set, as Zulip's user_status event tells it.
type userStatusChanged struct {
	UserID uint64
	Change statusChange
}

// setUserStatus applies the change, and for away the presence_enabled
// setting it stands for (Zulip keeps "away" as presence_enabled = !away,
// and tells of it as a settings change too).
func (s *store) setUserStatus(u user, c statusChange) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		if tx.Bucket(bucketUsers).Get(itob(u.ID)) == nil {
			return errNoSuchUser
		}
		b := tx.Bucket(bucketUserStatus)
		var st userStatus
		if v := b.Get(itob(u.ID)); v != nil {
			if err := json.Unmarshal(v, &st); err != nil {
				return err
			}
		}
		if c.Away != nil {
			if err := setPresenceEnabled(tx, u, !*c.Away, report); err != nil {
				return err
			}
		}
		if c.Text != nil {
			st.Text = *c.Text
		}
		if c.EmojiName != nil {
			st.EmojiName = *c.EmojiName
			if c.EmojiCode != nil {
				st.EmojiCode = *c.EmojiCode
			}
			if c.EmojiRT != nil {
				st.ReactionType = *c.EmojiRT
			}
		}
		st.Timestamp, st.Client = s.now().Unix(), c.Client
		report(userStatusChanged{UserID: u.ID, Change: c})
		return putJSON(b, itob(u.ID), st)
	})
}

// setPresenceEnabled sets the presence_enabled setting inside a
// transaction, reporting it as PATCH /settings would.
func setPresenceEnabled(tx *bbolt.Tx, u user, enabled bool, report func(any)) error {
	b := tx.Bucket(bucketUserSettings)
	overrides := map[string]json.RawMessage{}
	if v := b.Get(itob(u.ID)); v != nil {
		if err := json.Unmarshal(v, &overrides); err != nil {
			return err
		}
	}
	value, _ := json.Marshal(enabled)
	current, ok := overrides["presence_enabled"]
	if !ok {
		current = json.RawMessage("true")
	}
	if string(current) == string(value) {
		return nil
	}
	if enabled {
		delete(overrides, "presence_enabled")
	} else {
		overrides["presence_enabled"] = value
	}
	report(userSettingsChanged{User: u, Changes: []settingChange{{Name: "presence_enabled", Value: value, Default: json.RawMessage("true")}}})
	if len(overrides) == 0 {
		return b.Delete(itob(u.ID))
	}
	return putJSON(b, itob(u.ID), overrides)
}

// statusObject is Zulip's format_user_status: away (from presence_enabled)
// and the fields that are set.
type statusObject struct {
	Away         bool   `json:"away,omitempty"`
	StatusText   string `json:"status_text,omitempty"`
	EmojiName    string `json:"emoji_name,omitempty"`
	EmojiCode    string `json:"emoji_code,omitempty"`
	ReactionType string `json:"reaction_type,omitempty"`
}

func newStatusObject(st userStatus, presenceEnabled bool) statusObject {
	o := statusObject{Away: !presenceEnabled, StatusText: st.Text}
	if st.EmojiName != "" {
		o.EmojiName, o.EmojiCode, o.ReactionType = st.EmojiName, st.EmojiCode, st.ReactionType
	}
	return o
}

// userStatuses answers register's user_status: for every active account
// with a stored status, its status, unless it says nothing (presence on,
// no text, no emoji), as Zulip's get_all_users_status_dict.
func (s *store) userStatuses() (map[uint64]statusObject, error) {
	out := map[uint64]statusObject{}
	err := s.view(func(tx *bbolt.Tx) error {
		clear(out)
		return tx.Bucket(bucketUserStatus).ForEach(func(k, v []byte) error {
			var st userStatus
			if err := json.Unmarshal(v, &st); err != nil {
				return err
			}
			u, err := lookUpUser(tx, btoi(k))
			if err != nil || !u.Active {
				return nil
			}
			if o := newStatusObject(st, settingOn(tx, u.ID, "presence_enabled")); o != (statusObject{}) {
				out[u.ID] = o
			}
			return nil
		})
	})
	return out, err
}

// statusOf answers one user's status, with Zulip's access_user_by_id
// refusals (bots are no such user).
func (s *store) statusOf(userID uint64) (statusObject, error) {
	var o statusObject
	err := s.view(func(tx *bbolt.Tx) error {
		u, err := lookUpUser(tx, userID)
		if err != nil || u.Bot {
			return errNoSuchUser
		}
		if !u.Active {
			return errUserDeactivated
		}
		o = statusObject{}
		v := tx.Bucket(bucketUserStatus).Get(itob(userID))
		if v == nil {
			return nil
		}
		var st userStatus
		if err := json.Unmarshal(v, &st); err != nil {
			return err
		}
		o = newStatusObject(st, settingOn(tx, userID, "presence_enabled"))
		return nil
	})
	return o, err
}
