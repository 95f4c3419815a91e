package main

// What the export writes of each person beyond their account: the
// settings new users start with, custom profile fields and their
// values, saved snippets, and their own view (topics, mutes, alert
// words), in the tables Zulip's import_realm.py reads.

import (
	"encoding/json"
	"strconv"
	"strings"

	"go.etcd.io/bbolt"
)

// realmUserDefaultRow is zerver_realmuserdefault's row: the settings new
// users start with (PATCH /realm/user_settings_defaults), each a
// RealmUserDefault field (UserBaseSettings); the importer makes it with
// model(**item) where the export has it, else one of Zulip's defaults.
func realmUserDefaultRow(tx *bbolt.Tx) (map[string]any, error) {
	defaults := map[string]json.RawMessage{}
	if err := realmUserDefaultsTx(tx, defaults); err != nil { // store_people.go
		return nil, err
	}
	values := personalSettings(defaults)
	row := map[string]any{"id": 1, "realm": exportRealmID}
	for _, setting := range userSettingsTable {
		if setting.changeable {
			row[setting.name] = values[setting.name]
		}
	}
	return row, nil
}

// profileFields are zerver_customprofilefield's and
// zerver_customprofilefieldvalue's rows, each a model's fields
// (zerver/models/custom_profile_fields.py; the importer makes them with
// model(**item) once their foreign keys are mapped): the organisation's
// custom profile fields and every exported user's values.
func (x *exporter) profileFields(tx *bbolt.Tx) (fields, values []any, err error) {
	list, err := profileFieldsTx(tx) // store_people.go
	if err != nil {
		return nil, nil, err
	}
	fields, values = []any{}, []any{}
	for _, f := range list {
		fields = append(fields, map[string]any{"id": f.ID, "realm": exportRealmID, "name": f.Name, "hint": f.Hint, "order": f.Order,
			"display_in_profile_summary": f.DisplayInProfileSummary, "required": f.Required, "editable_by_user": f.EditableByUser,
			"field_type": f.Type, "field_data": f.FieldData})
		for _, u := range x.users {
			v, ok := u.Profile[strconv.FormatUint(f.ID, 10)]
			if !ok {
				continue
			}
			var rendered any
			if v.Rendered != "" {
				rendered = v.Rendered
			}
			values = append(values, map[string]any{"id": len(values) + 1, "user_profile": u.ID, "field": f.ID, "value": v.Value, "rendered_value": rendered})
		}
	}
	x.report.ProfileFields, x.report.ProfileValues = len(fields), len(values)
	return fields, values, nil
}

// savedSnippets are zerver_savedsnippet's rows, as Zulip's exporter
// writes them (date_created a float, DATE_FIELDS); it counts the drafts
// that stay behind.
func (x *exporter) savedSnippets(tx *bbolt.Tx) ([]map[string]any, error) {
	var rows []map[string]any
	err := tx.Bucket(bucketSavedSnippets).ForEach(func(k, v []byte) error {
		var sn savedSnippet
		if err := json.Unmarshal(v, &sn); err != nil {
			return err
		}
		rows = append(rows, map[string]any{"id": btoi(k[8:]), "realm": exportRealmID, "user_profile": btoi(k[:8]),
			"title": sn.Title, "content": sn.Content, "date_created": sn.Created})
		return nil
	})
	x.report.SavedSnippets = len(rows)
	x.report.Drafts = tx.Bucket(bucketDrafts).Stats().KeyN
	x.report.UserGroups = tx.Bucket(bucketUserGroups).Stats().KeyN
	return rows, err
}

// ownViews are the rows of what each user set for their own view, as
// Zulip's exporter writes them (its dates floats, DATE_FIELDS):
// zerver_usertopic (a topic's visibility policy, with the channel's
// stream and recipient ids), zerver_muteduser and zerver_alertword (a
// row a word, numbered here as the lists hold them).
func ownViews(tx *bbolt.Tx) (userTopics, mutes, alertWords []any, err error) {
	type userTopicRow struct {
		ID          int     `json:"id"`
		UserProfile uint64  `json:"user_profile"`
		Stream      uint64  `json:"stream"`
		Recipient   uint64  `json:"recipient"`
		TopicName   string  `json:"topic_name"`
		LastUpdated float64 `json:"last_updated"`
		Policy      int     `json:"visibility_policy"`
	}
	type mutedUserRow struct {
		ID          int     `json:"id"`
		UserProfile uint64  `json:"user_profile"`
		MutedUser   uint64  `json:"muted_user"`
		DateMuted   float64 `json:"date_muted"`
	}
	type alertWordRow struct {
		ID          int    `json:"id"`
		Realm       int    `json:"realm"`
		UserProfile uint64 `json:"user_profile"`
		Word        string `json:"word"`
	}
	userTopics, mutes, alertWords = []any{}, []any{}, []any{}
	c := tx.Bucket(bucketUserTopics).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if row, ok := decodeUserTopic(k, v); ok {
			userTopics = append(userTopics, userTopicRow{len(userTopics) + 1, btoi(k[:8]), row.ChannelID,
				recipientID(recipientChannel, row.ChannelID), row.Topic, float64(row.Updated), row.Policy})
		}
	}
	c = tx.Bucket(bucketMutedUsers).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		mutes = append(mutes, mutedUserRow{len(mutes) + 1, btoi(k[:8]), btoi(k[8:]), float64(btoi(v))})
	}
	err = tx.Bucket(bucketAlertWords).ForEach(func(k, v []byte) error {
		var words []string
		err := json.Unmarshal(v, &words)
		for _, w := range words {
			alertWords = append(alertWords, alertWordRow{len(alertWords) + 1, exportRealmID, btoi(k), w})
		}
		return err
	})
	return userTopics, mutes, alertWords, err
}

func keysWithPrefix(b *bbolt.Bucket, prefix []byte) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && strings.HasPrefix(string(k), string(prefix)); k, _ = c.Next() {
		n++
	}
	return n
}

// translatesEmoticons is the user's translate_emoticons setting, which
// a message of theirs is rendered with (renderForSend), as Zulip's
// import reads it to render a message that comes without its rendering.
func translatesEmoticons(tx *bbolt.Tx, userID uint64) bool {
	var settings struct {
		TranslateEmoticons bool `json:"translate_emoticons"`
	}
	if v := tx.Bucket(bucketUserSettings).Get(itob(userID)); v != nil {
		json.Unmarshal(v, &settings) // a setting that is not a bool is the default
	}
	return settings.TranslateEmoticons
}

func nilIfZero(id uint64) any {
	if id == 0 {
		return nil
	}
	return id
}

func orEmpty(rows []map[string]any) any {
	if rows == nil {
		return []any{}
	}
	return rows
}
