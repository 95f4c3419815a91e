package main

// The checker: what Zulip's `manage.py import` (zerver/lib/import_realm.py)
// needs of an export, rule by rule, each naming the line of Zulip that
// reads what the rule checks, so that an export zulite writes is known to
// be importable without a Zulip server at hand.
//
// Lines are of Zulip at commit f145d5738e4a (2025-03-31, 11.0-dev, as the
// fork jitendra-ky/zulip holds it): import_realm.py and export.py are
// zerver/lib/'s, models/X.py zerver/models/'s. Two reads came later, before
// 11.0, and are quoted from import_realm.py at ef1eb2b23b7e (the copy of
// xandylearning/zulip that has them; its index gives no line numbers):
// "import_source" and Stream.folder.

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"zulite/internal/zulipexport"
)

const (
	atEF1EB2B = "import_realm.py@ef1eb2b23b7e"
	// at2841B00 quotes import_realm.py of jitendra-ky/zulip at
	// 2841b00b8357 (11.0-dev, the copy the index holds now), for the
	// tables of a user's own view, which it reads only when the export
	// has them: "if "zerver_usertopic" in data:".
	at2841B00 = "import_realm.py@2841b00b8357"
	// zulipMajor is the major version of the Zulip releases the export is
	// for: those of API feature level 421, zulite's.
	zulipMajor = "11"
	// dateField is the importer's fix_datetime_fields: a number of
	// seconds, or null (DATE_FIELDS names the field).
	dateField = "number|null"
)

// zulipField is one field the importer reads, with the JSON types it
// takes and where it reads it (or where the model defines it, for a
// field only model(**row) takes).
type zulipField struct{ types, from string }

// zulipTable is what the importer needs of one table: where it reads the
// table whatever it holds (a missing one is a KeyError), and the fields
// of its rows. Every field listed must be in every row; a row may hold no
// other, since the importer builds its model from the row
// (bulk_import_model, import_realm.py:802: model(**item), a TypeError
// for a key the model lacks), except in tables marked open.
type zulipTable struct {
	from   string
	fields map[string]zulipField
	open   bool // rows are read field by field, never passed whole to a model
	// forbidden are fields Zulip's exporter never writes.
	forbidden map[string]string
	// optional: the importer reads the table only when it is there.
	optional bool
}

// realmJSONTables are realm.json's tables.
var realmJSONTables = map[string]zulipTable{
	"zerver_realm": {from: "import_realm.py:1250 (data[\"zerver_realm\"][0])", fields: map[string]zulipField{
		"id":                                {"number", "import_realm.py:523, 1227 (update_model_ids)"},
		"name":                              {"string", "import_realm.py:1251"},
		"string_id":                         {"string", "import_realm.py:1250"},
		"description":                       {"string", "models/realms.py:173"},
		"date_created":                      {dateField, "import_realm.py:1248; export.py:333"},
		"deactivated":                       {"bool", "import_realm.py:1793"},
		"moderation_request_channel":        {"number|null", "import_realm.py:1236"},
		"new_stream_announcements_stream":   {"number|null", "import_realm.py:1237"},
		"signup_announcements_stream":       {"number|null", "import_realm.py:1240"},
		"zulip_update_announcements_stream": {"number|null", "import_realm.py:1241"},
	}},
	"zerver_userprofile": {from: "import_realm.py:1198", fields: map[string]zulipField{
		"id":                             {"number", "import_realm.py:1200"},
		"email":                          {"string", "import_realm.py:1376 (validate_email)"},
		"delivery_email":                 {"string", "import_realm.py:1375 (validate_email)"},
		"full_name":                      {"string", "models/users.py:476"},
		"role":                           {"number", "import_realm.py:2134"},
		"is_bot":                         {"bool", "import_realm.py:462"},
		"bot_type":                       {"number|null", "models/users.py:506"},
		"bot_owner":                      {"number|null", "import_realm.py:1349"},
		"is_active":                      {"bool", "import_realm.py:856; models/users.py:503"},
		"is_mirror_dummy":                {"bool", "models/users.py:570"},
		"realm":                          {"number", "import_realm.py:1348"},
		"date_joined":                    {dateField, "import_realm.py:1347; export.py:349"},
		"last_login":                     {dateField, "import_realm.py:1347; export.py:349"},
		"last_reminder":                  {dateField, "import_realm.py:1347; export.py:349"},
		"default_sending_stream":         {"number|null", "import_realm.py:1351"},
		"default_events_register_stream": {"number|null", "import_realm.py:1354"},
		"last_active_message_id":         {"number|null", "import_realm.py:1357"},
		"avatar_source":                  {"string", "models/users.py:621"},
		"avatar_version":                 {"number", "import_realm.py:870; models/users.py:624"},
		"timezone":                       {"string", "models/users.py:613"},
		"translate_emoticons":            {"bool", "import_realm.py:463"},
		"user_permissions":               {"array", "import_realm.py:1363 (del)"},
		"groups":                         {"array", "import_realm.py:1364 (del)"},
	}, forbidden: map[string]string{
		"api_key": "export.py:1237 (EXCLUDED_USER_PROFILE_FIELDS)", "password": "export.py:1237 (EXCLUDED_USER_PROFILE_FIELDS)",
		"uuid": "export.py:1237 (EXCLUDED_USER_PROFILE_FIELDS)",
	}},
	"zerver_userprofile_mirrordummy": {from: "import_realm.py:1198"},
	"zerver_userprofile_crossrealm":  {from: "import_realm.py:1212"},
	"zerver_stream": {from: "import_realm.py:1314 (fix_datetime_fields)", fields: map[string]zulipField{
		"id":                            {"number", "import_realm.py:1326"},
		"name":                          {"string", "models/streams.py:28"},
		"description":                   {"string", "import_realm.py:1338"},
		"rendered_description":          {"string", "import_realm.py:1338"},
		"invite_only":                   {"bool", "models/streams.py:74"},
		"history_public_to_subscribers": {"bool", "models/streams.py:75"},
		"is_web_public":                 {"bool", "models/streams.py:78"},
		"realm":                         {"number", "import_realm.py:1315"},
		"creator":                       {"number|null", "import_realm.py:1317"},
		"folder":                        {"number|null", atEF1EB2B + `: re_map_foreign_keys(data, "zerver_stream", "folder", related_table="channelfolder")`},
		"date_created":                  {dateField, "import_realm.py:1314; export.py:343"},
		"deactivated":                   {"bool", "models/streams.py:32"},
		"message_retention_days":        {"number|null", "models/streams.py:121"},
	}},
	"zerver_recipient": {from: "import_realm.py:1430", fields: map[string]zulipField{
		"id":      {"number", "import_realm.py:1455 (update_model_ids)"},
		"type":    {"number", "import_realm.py:614"},
		"type_id": {"number", "import_realm.py:612"},
	}},
	"zerver_subscription": {from: "import_realm.py:1460", fields: map[string]zulipField{
		"id":                       {"number", "import_realm.py:1463 (update_model_ids)"},
		"user_profile":             {"number", "import_realm.py:1460"},
		"recipient":                {"number", "import_realm.py:1462"},
		"active":                   {"bool", "models/streams.py:347"},
		"is_user_active":           {"bool", "import_realm.py:857; models/streams.py:354"},
		"color":                    {"string", "models/streams.py:360"},
		"is_muted":                 {"bool", "models/streams.py:357"},
		"pin_to_top":               {"bool", "models/streams.py:361"},
		"desktop_notifications":    {"bool|null", "models/streams.py:366"},
		"audible_notifications":    {"bool|null", "models/streams.py:367"},
		"push_notifications":       {"bool|null", "models/streams.py:368"},
		"email_notifications":      {"bool|null", "models/streams.py:369"},
		"wildcard_mentions_notify": {"bool|null", "models/streams.py:370"},
	}},
	"zerver_huddle": {from: "import_realm.py:741", fields: map[string]zulipField{
		"id":          {"number", "import_realm.py:335"},
		"huddle_hash": {"string", "import_realm.py:336"},
		"group_size":  {"number", "models/recipients.py:146"},
	}},
	// zerver_scheduledmessage: import_realm.py's block after
	// import_message_data remaps sender, recipient, sending_client,
	// stream, realm and delivered_message and fixes scheduled_timestamp;
	// the rest is the model's (models/scheduled_jobs.py, ScheduledMessage).
	// Not by line: read at zulip/zulip's stored copy, which gives none.
	"zerver_scheduledmessage": {from: "import_realm.py (if \"zerver_scheduledmessage\" in data)", fields: map[string]zulipField{
		"id":                  {"number", "import_realm.py (update_model_ids ScheduledMessage)"},
		"sender":              {"number", "import_realm.py (re_map_foreign_keys sender)"},
		"recipient":           {"number", "import_realm.py (re_map_foreign_keys recipient)"},
		"sending_client":      {"number", "import_realm.py (re_map_foreign_keys sending_client)"},
		"stream":              {"number|null", "import_realm.py (re_map_foreign_keys stream)"},
		"realm":               {"number", "import_realm.py (re_map_foreign_keys realm)"},
		"delivered_message":   {"number|null", "import_realm.py (re_map_foreign_keys delivered_message)"},
		"scheduled_timestamp": {dateField, "import_realm.py (fix_datetime_fields)"},
		"subject":             {"string", "models/scheduled_jobs.py (subject)"},
		"content":             {"string", "import_realm.py (fix_upload_links)"},
		"rendered_content":    {"string|null", "import_realm.py (fix_message_rendered_content)"},
		"read_by_sender":      {"bool", "models/scheduled_jobs.py (read_by_sender)"},
		"delivered":           {"bool", "models/scheduled_jobs.py (delivered)"},
		"has_attachment":      {"bool", "models/scheduled_jobs.py (has_attachment)"},
		"failed":              {"bool", "models/scheduled_jobs.py (failed)"},
		"failure_message":     {"string|null", "models/scheduled_jobs.py (failure_message)"},
		"delivery_type":       {"number", "models/scheduled_jobs.py (delivery_type: 1 SEND_LATER, 2 REMIND)"},
	}},
	"zerver_client": {from: "import_realm.py:1206", fields: map[string]zulipField{
		"id":   {"number", "import_realm.py:849"},
		"name": {"string", "import_realm.py:846"},
	}},
	"zerver_realmauthenticationmethod": {from: "import_realm.py:1404 (realm_tables)", fields: map[string]zulipField{
		"id":    {"number", "import_realm.py:1406 (update_model_ids)"},
		"realm": {"number", "import_realm.py:1405"},
		"name":  {"string", "import_realm.py:1139"},
	}},
	"zerver_defaultstream": {from: "import_realm.py:1398", fields: map[string]zulipField{
		// DefaultStream's model fields (zerver/models/streams.py); the
		// importer's line numbers for them were not read, only the table's.
		"id":     {"number", "import_realm.py (DefaultStream.id)"},
		"realm":  {"number", "import_realm.py (DefaultStream.realm)"},
		"stream": {"number", "import_realm.py (DefaultStream.stream)"},
	}},
	"zerver_realmemoji": {from: "import_realm.py:1399", fields: map[string]zulipField{
		"id":           {"number", `import_realm.py: update_model_ids(RealmEmoji, data, "realmemoji")`},
		"name":         {"string", "models/realm_emoji.py: name = models.TextField(…)"},
		"author":       {"number|null", `import_realm.py: re_map_foreign_keys(data, "zerver_realmemoji", "author", related_table="user_profile")`},
		"realm":        {"number", `import_realm.py: re_map_foreign_keys(data, "zerver_realmemoji", "realm", related_table="realm")`},
		"file_name":    {"string|null", "models/realm_emoji.py: file_name = models.TextField(db_index=True, null=True, blank=True)"},
		"deactivated":  {"bool", "models/realm_emoji.py: deactivated = models.BooleanField(default=False)"},
		"is_animated":  {"bool", "models/realm_emoji.py: is_animated = models.BooleanField(default=False)"},
		"date_created": {dateField, `import_realm.py: fix_datetime_fields(data, "zerver_realmemoji")`},
	}},
	"zerver_realmdomain": {from: "import_realm.py:1404 (realm_tables)"},
	"zerver_realmfilter": {from: "import_realm.py:1404 (realm_tables)", fields: map[string]zulipField{
		"id":           {"number", "import_realm.py:1406 (update_model_ids)"},
		"realm":        {"number", "import_realm.py:1405"},
		"pattern":      {"string", "models/linkifiers.py: pattern = models.TextField()"},
		"url_template": {"string", "models/linkifiers.py: url_template = models.TextField(validators=[url_template_validator])"},
		"order":        {"number", "models/linkifiers.py: order = models.IntegerField(default=0)"},
	}},
	"zerver_realmplayground": {from: "import_realm.py:1404 (realm_tables)", fields: map[string]zulipField{
		"id":                {"number", "import_realm.py:1406 (update_model_ids)"},
		"realm":             {"number", "import_realm.py:1405"},
		"name":              {"string", "models/realm_playgrounds.py: name = models.TextField(db_index=True)"},
		"pygments_language": {"string", "models/realm_playgrounds.py: pygments_language = models.CharField(…)"},
		"url_template":      {"string", "models/realm_playgrounds.py: url_template = models.TextField(validators=[url_template_validator])"},
	}},
	"zerver_userpresence":         {from: "import_realm.py:1608"},
	"zerver_useractivity":         {from: "import_realm.py:1614"},
	"zerver_useractivityinterval": {from: "import_realm.py:1620"},
	"zerver_realmuserdefault":     {from: `import_realm.py: if "zerver_realmuserdefault" in data: … bulk_import_model(data, RealmUserDefault)`, optional: true, fields: realmUserDefaultFields()},
	"zerver_customprofilefield": {from: "import_realm.py:1627", fields: map[string]zulipField{
		"id":                         {"number", "import_realm.py:1627 (update_model_ids(CustomProfileField, data, \"customprofilefield\"))"},
		"realm":                      {"number", "import_realm.py:1627 (re_map_foreign_keys(data, \"zerver_customprofilefield\", \"realm\", …))"},
		"name":                       {"string", "models/custom_profile_fields.py: name = models.CharField(max_length=NAME_MAX_LENGTH)"},
		"hint":                       {"string", "models/custom_profile_fields.py: hint = models.CharField(max_length=HINT_MAX_LENGTH, default=\"\")"},
		"order":                      {"number", "models/custom_profile_fields.py: order = models.IntegerField(default=0)"},
		"display_in_profile_summary": {"bool", "models/custom_profile_fields.py: display_in_profile_summary = models.BooleanField(default=False)"},
		"required":                   {"bool", "models/custom_profile_fields.py: required = models.BooleanField(default=False)"},
		"editable_by_user":           {"bool", "models/custom_profile_fields.py: editable_by_user = models.BooleanField(default=True, db_default=True)"},
		"field_type":                 {"number", "models/custom_profile_fields.py: field_type = models.PositiveSmallIntegerField(choices=FIELD_TYPE_CHOICES, …)"},
		"field_data":                 {"string", "models/custom_profile_fields.py: field_data = models.TextField(default=\"\")"},
	}},
	"zerver_customprofilefieldvalue": {from: "import_realm.py:1631", fields: map[string]zulipField{
		"id":             {"number", "import_realm.py:1631 (update_model_ids(CustomProfileFieldValue, …))"},
		"user_profile":   {"number", "import_realm.py:1631 (re_map_foreign_keys(…, \"user_profile\", …))"},
		"field":          {"number", "import_realm.py:1631 (re_map_foreign_keys(…, \"field\", related_table=\"customprofilefield\"))"},
		"value":          {"string", "models/custom_profile_fields.py: value = models.TextField()"},
		"rendered_value": {"string|null", "models/custom_profile_fields.py: rendered_value = models.TextField(null=True, default=None)"},
	}},
	"zerver_usertopic": {from: at2841B00 + `: if "zerver_usertopic" in data`, optional: true, fields: map[string]zulipField{
		"id":                {"number", at2841B00 + `: update_model_ids(UserTopic, data, "usertopic")`},
		"user_profile":      {"number", at2841B00 + `: re_map_foreign_keys(data, "zerver_usertopic", "user_profile", …)`},
		"stream":            {"number", at2841B00 + `: re_map_foreign_keys(data, "zerver_usertopic", "stream", …)`},
		"recipient":         {"number", at2841B00 + `: re_map_foreign_keys(data, "zerver_usertopic", "recipient", …)`},
		"topic_name":        {"string", "models/user_topics.py: topic_name = models.CharField(max_length=MAX_TOPIC_NAME_LENGTH)"},
		"last_updated":      {dateField, at2841B00 + `: fix_datetime_fields(data, "zerver_usertopic")`},
		"visibility_policy": {"number", "models/user_topics.py: visibility_policy = models.SmallIntegerField(choices=VisibilityPolicy.choices, …)"},
	}},
	"zerver_muteduser": {from: at2841B00 + `: if "zerver_muteduser" in data`, optional: true, fields: map[string]zulipField{
		"id":           {"number", at2841B00 + `: update_model_ids(MutedUser, data, "muteduser")`},
		"user_profile": {"number", at2841B00 + `: re_map_foreign_keys(data, "zerver_muteduser", "user_profile", …)`},
		"muted_user":   {"number", at2841B00 + `: re_map_foreign_keys(data, "zerver_muteduser", "muted_user", …)`},
		"date_muted":   {dateField, at2841B00 + `: fix_datetime_fields(data, "zerver_muteduser")`},
	}},
	"zerver_alertword": {from: at2841B00 + `: if "zerver_alertword" in data`, optional: true, fields: map[string]zulipField{
		"id":           {"number", at2841B00 + `: update_model_ids(AlertWord, data, "alertword")`},
		"user_profile": {"number", at2841B00 + `: re_map_foreign_keys(data, "zerver_alertword", "user_profile", …)`},
		"realm":        {"number", at2841B00 + `: re_map_foreign_keys(data, "zerver_alertword", "realm", …)`},
		"word":         {"string", "models/alert_words.py: word = models.TextField()"},
	}},
	"zerver_reaction": {from: "import_realm.py:1744", fields: map[string]zulipField{
		"id":            {"number", "import_realm.py:1747 (update_model_ids)"},
		"message":       {"number", "import_realm.py:1744"},
		"user_profile":  {"number", "import_realm.py:1745"},
		"emoji_name":    {"string", "models/messages.py:363"},
		"emoji_code":    {"string", "import_realm.py:658; models/messages.py:395"},
		"reaction_type": {"string", "import_realm.py:657"},
	}},
}

// messageFileTables are a messages-NNNNNN.json's tables.
var messageFileTables = map[string]zulipTable{
	"zerver_message": {from: "import_realm.py:1882, 1922", fields: map[string]zulipField{
		"id":                       {"number", "import_realm.py:1893, 1936"},
		"sender":                   {"number", "import_realm.py:1922"},
		"recipient":                {"number", "import_realm.py:1923"},
		"sending_client":           {"number", "import_realm.py:1924"},
		"realm":                    {"number", "import_realm.py:1934 (del)"},
		"date_sent":                {"number", "import_realm.py:1925; export.py:330"},
		"last_edit_time":           {dateField, "import_realm.py:1925; export.py:330"},
		"subject":                  {"string", "models/messages.py:69"},
		"content":                  {"string", "import_realm.py:236"},
		"rendered_content":         {"string|null", "import_realm.py:398"},
		"rendered_content_version": {"number|null", "models/messages.py:80"},
		"edit_history":             {"string|null", "import_realm.py:500"},
		"has_attachment":           {"bool", "import_realm.py:234"},
		"has_image":                {"bool", "models/messages.py:97"},
		"has_link":                 {"bool", "models/messages.py:99"},
		"is_channel_message":       {"bool", "models/messages.py:101 (default true)"},
	}},
	"zerver_usermessage": {from: "import_realm.py:1938", open: true, fields: map[string]zulipField{
		"id":           {"number", "export.py writes it; import_realm.py:776 numbers rows anew"},
		"user_profile": {"number", "import_realm.py:1959, 780"},
		"message":      {"number", "import_realm.py:1939, 1958"},
		"flags_mask":   {"number", "import_realm.py:1962, 724"},
	}},
}

var attachmentTables = map[string]zulipTable{
	"zerver_attachment": {from: "import_realm.py:1695, 2057", fields: map[string]zulipField{
		"id":                 {"number", "import_realm.py:1985 (update_model_ids)"},
		"file_name":          {"string", "models/messages.py:697"},
		"path_id":            {"string", "import_realm.py:2058"},
		"owner":              {"number", "import_realm.py:1972"},
		"realm":              {"number", "import_realm.py:1973"},
		"create_time":        {dateField, "import_realm.py:1971; export.py:329"},
		"size":               {"number", "models/messages.py:711"},
		"content_type":       {"string|null", "import_realm.py:2070"},
		"is_realm_public":    {"bool|null", "models/messages.py:727"},
		"is_web_public":      {"bool|null", "models/messages.py:731"},
		"messages":           {"array", "import_realm.py:199, 2005"},
		"scheduled_messages": {"array", "import_realm.py:202, 2005"},
	}},
}

// recordFields are what import_uploads reads of each record of
// uploads/records.json and avatars/records.json.
var recordFields = map[string]zulipField{
	"path":            {"string", "import_realm.py:1089"},
	"s3_path":         {"string", "import_realm.py:1014, 1037"},
	"realm_id":        {"number", "import_realm.py:1035"},
	"user_profile_id": {"number", "import_realm.py:1054"},
	"content_type":    {"string|null", "import_realm.py:1069"},
}

// checkTable checks one file's tables against their specs.
func checkTable(r *ruleReport, file string, data map[string]any, specs map[string]zulipTable) {
	for _, name := range sortedKeys(specs) {
		spec := specs[name]
		rows, ok := data[name].([]any)
		if _, present := data[name]; !present && spec.optional {
			continue
		}
		if !ok {
			r.errorf("%s: table %s: got %s, want a list (Zulip: %s)", file, name, jsonType(data[name]), spec.from)
			continue
		}
		for i, row := range rows {
			where := fmt.Sprintf("%s: %s[%d]", file, name, i)
			obj, ok := row.(map[string]any)
			if !ok {
				r.errorf("%s: got %s, want an object (Zulip: %s)", where, jsonType(row), spec.from)
				continue
			}
			checkFields(r, where, obj, spec.fields)
			for _, key := range sortedKeys(obj) {
				if why, bad := spec.forbidden[key]; bad {
					r.errorf("%s: has %s, which Zulip's exporter never writes (Zulip: %s)", where, key, why)
				} else if _, known := spec.fields[key]; !known && !spec.open {
					r.errorf("%s: has %s, no field the importer's model takes (Zulip: import_realm.py:802, model(**item))", where, key)
				}
			}
		}
	}
}

// checkFields checks that obj has every field, each of a type it allows.
func checkFields(r *ruleReport, where string, obj map[string]any, fields map[string]zulipField) {
	for _, name := range sortedKeys(fields) {
		f := fields[name]
		v, present := obj[name]
		if !present {
			r.errorf("%s: no %s (Zulip: %s)", where, name, f.from)
		} else if !slices.Contains(strings.Split(f.types, "|"), jsonType(v)) {
			r.errorf("%s.%s: got %s %v, want %s (Zulip: %s)", where, name, jsonType(v), v, f.types, f.from)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// readExportFile decodes a file of the export, or reports it missing
// with the line of Zulip that needs it.
func readExportFile(r *ruleReport, dir, name, from string, v any) bool {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		r.errorf("%s: %v (Zulip: %s)", name, err, from)
		return false
	}
	if err := json.Unmarshal(data, v); err != nil {
		r.errorf("%s: %v (Zulip: %s, orjson.loads)", name, err, from)
		return false
	}
	return true
}

// exportIDs are the ids of one table's rows.
type exportIDs map[float64]bool

func rowIDs(rows any) exportIDs {
	set := exportIDs{}
	list, _ := rows.([]any)
	for _, r := range list {
		if id, ok := object(r)["id"].(float64); ok {
			set[id] = true
		}
	}
	return set
}

// refersTo checks that row[field] is an id of to, or null where allowed.
func refersTo(r *ruleReport, where string, row map[string]any, field string, to exportIDs, toName string, nullable bool, from string) {
	switch v := row[field].(type) {
	case nil:
		if !nullable {
			r.errorf("%s.%s: null, want a %s (Zulip: %s)", where, field, toName, from)
		}
	case float64:
		if !to[v] {
			r.errorf("%s.%s: %v, no %s of the export (Zulip: %s; an id not renumbered is kept as it is)", where, field, v, toName, from)
		}
	}
}

// checkZulipImportable checks the export in dir against every rule of
// Zulip's importer written above and below.
func checkZulipImportable(t *testing.T, dir string) {
	t.Helper()
	r := &ruleReport{first: map[string]string{}, count: map[string]int{}}
	defer r.flush(t)
	// migration_status.json: check_migration_status compares the major
	// version and, app by app, the migrations of the apps both list; an
	// app the export does not list is only warned about.
	var status map[string]any
	if readExportFile(r, dir, "migration_status.json", "import_realm.py:1176-1184", &status) {
		version, _ := status["zulip_version"].(string)
		if major, _, _ := strings.Cut(version, "."); major != zulipMajor {
			r.errorf("migration_status.json: zulip_version %q, want major version %s, zulite's (Zulip: import_realm.py:2182-2184)", version, zulipMajor)
		}
		apps, ok := status["migrations_by_app"].(map[string]any)
		if !ok {
			r.errorf("migration_status.json: migrations_by_app: got %s, want an object (Zulip: import_realm.py:2190-2192)", jsonType(status["migrations_by_app"]))
		}
		for app, list := range apps {
			if l, ok := list.([]any); !ok || slices.ContainsFunc(l, func(v any) bool { return jsonType(v) != "string" }) {
				r.errorf("migration_status.json: %s: got %v, want a list of migrations (Zulip: import_realm.py:2209)", app, list)
			}
		}
	}

	var realm map[string]any
	if !readExportFile(r, dir, "realm.json", "import_realm.py:1186-1195", &realm) {
		return
	}
	if source, ok := realm["import_source"].(string); !ok || source == "" || source == "zulip" {
		r.errorf(`realm.json: import_source %v, want the product's name, as Zulip's converters write it ("zulip" is a Zulip server's own export) (Zulip: %s: import_source = data.pop("import_source"))`, realm["import_source"], atEF1EB2B)
	}
	checkTable(r, "realm.json", realm, realmJSONTables)
	realms, _ := realm["zerver_realm"].([]any)
	if len(realms) != 1 {
		r.errorf("zerver_realm: got %d rows, want 1 (Zulip: import_realm.py:1250)", len(realms))
		return
	}
	realmID := object(realms[0])["id"]
	users, streams, recipients, clients := rowIDs(realm["zerver_userprofile"]), rowIDs(realm["zerver_stream"]), rowIDs(realm["zerver_recipient"]), rowIDs(realm["zerver_client"])
	huddles := rowIDs(realm["zerver_huddle"])
	sameRealm := func(where string, row map[string]any, field, from string) {
		if row[field] != realmID {
			r.errorf("%s.%s: %v, want the realm's id %v (Zulip: %s)", where, field, row[field], realmID, from)
		}
	}
	for _, field := range []string{"moderation_request_channel", "new_stream_announcements_stream", "signup_announcements_stream", "zulip_update_announcements_stream"} {
		refersTo(r, "zerver_realm[0]", object(realms[0]), field, streams, "stream", true, realmJSONTables["zerver_realm"].fields[field].from)
	}
	avatarVersion := map[float64]float64{}
	for i, row := range asList(realm["zerver_userprofile"]) {
		u, where := object(row), fmt.Sprintf("zerver_userprofile[%d]", i)
		sameRealm(where, u, "realm", "import_realm.py:1348")
		refersTo(r, where, u, "bot_owner", users, "user", true, "import_realm.py:1349")
		refersTo(r, where, u, "default_sending_stream", streams, "stream", true, "import_realm.py:1351")
		refersTo(r, where, u, "default_events_register_stream", streams, "stream", true, "import_realm.py:1354")
		if email, _ := u["delivery_email"].(string); !strings.Contains(email, "@") {
			r.errorf("%s.delivery_email %q: not an address (Zulip: import_realm.py:1375, validate_email)", where, email)
		}
		if id, ok := u["id"].(float64); ok {
			avatarVersion[id], _ = u["avatar_version"].(float64)
		}
	}
	for i, row := range asList(realm["zerver_stream"]) {
		s, where := object(row), fmt.Sprintf("zerver_stream[%d]", i)
		sameRealm(where, s, "realm", "import_realm.py:1315")
		refersTo(r, where, s, "creator", users, "user", true, "import_realm.py:1317")
		refersTo(r, where, s, "folder", exportIDs{}, "channel folder (zulite writes no zerver_channelfolder)", true, realmJSONTables["zerver_stream"].fields["folder"].from)
	}
	recipientType := map[float64]float64{}
	recipientStream := map[float64]any{} // a stream recipient's stream
	huddleRecipient := map[any]float64{} // a group's id → its recipient's
	for i, row := range asList(realm["zerver_recipient"]) {
		rc, where := object(row), fmt.Sprintf("zerver_recipient[%d]", i)
		typ, _ := rc["type"].(float64)
		id, _ := rc["id"].(float64)
		recipientType[id] = typ
		if typ == 2 {
			recipientStream[id] = rc["type_id"]
		}
		if typ == 3 {
			huddleRecipient[rc["type_id"]] = id
		}
		target := map[float64]exportIDs{1: users, 2: streams, 3: huddles}[typ]
		if target == nil {
			r.errorf("%s: type %v, want 1, 2 or 3 (Zulip: import_realm.py:614-622)", where, typ)
			continue
		}
		refersTo(r, where, rc, "type_id", target, fmt.Sprintf("row of type %v's table", typ), false, "import_realm.py:612-626")
	}
	for i, row := range asList(realm["zerver_usertopic"]) {
		u, where := object(row), fmt.Sprintf("zerver_usertopic[%d]", i)
		refersTo(r, where, u, "user_profile", users, "user", false, realmJSONTables["zerver_usertopic"].fields["user_profile"].from)
		refersTo(r, where, u, "stream", streams, "stream", false, realmJSONTables["zerver_usertopic"].fields["stream"].from)
		refersTo(r, where, u, "recipient", recipients, "recipient", false, realmJSONTables["zerver_usertopic"].fields["recipient"].from)
		if recipient, _ := u["recipient"].(float64); recipientType[recipient] != 2 || recipientStream[recipient] != u["stream"] {
			r.errorf("%s: recipient %v is not stream %v's (Zulip: models/user_topics.py: a row's recipient is its stream's)", where, u["recipient"], u["stream"])
		}
		if p, _ := u["visibility_policy"].(float64); p < 1 || p > 3 {
			r.errorf("%s.visibility_policy: %v, want 1, 2 or 3 (Zulip: models/user_topics.py, VisibilityPolicy; INHERIT has no row)", where, u["visibility_policy"])
		}
	}
	for i, row := range asList(realm["zerver_muteduser"]) {
		m, where := object(row), fmt.Sprintf("zerver_muteduser[%d]", i)
		refersTo(r, where, m, "user_profile", users, "user", false, realmJSONTables["zerver_muteduser"].fields["user_profile"].from)
		refersTo(r, where, m, "muted_user", users, "user", false, realmJSONTables["zerver_muteduser"].fields["muted_user"].from)
	}
	for i, row := range asList(realm["zerver_alertword"]) {
		a, where := object(row), fmt.Sprintf("zerver_alertword[%d]", i)
		refersTo(r, where, a, "user_profile", users, "user", false, realmJSONTables["zerver_alertword"].fields["user_profile"].from)
		sameRealm(where, a, "realm", realmJSONTables["zerver_alertword"].fields["realm"].from)
	}
	huddleMembers := map[float64]int{}
	for i, row := range asList(realm["zerver_subscription"]) {
		s, where := object(row), fmt.Sprintf("zerver_subscription[%d]", i)
		refersTo(r, where, s, "user_profile", users, "user", false, "import_realm.py:1460")
		refersTo(r, where, s, "recipient", recipients, "recipient", false, "import_realm.py:1462")
		if recipient, _ := s["recipient"].(float64); recipientType[recipient] == 3 {
			huddleMembers[recipient]++
		}
	}
	for i, row := range asList(realm["zerver_huddle"]) {
		// process_direct_message_group_hash looks the group's members up by
		// the group's recipient, which get_direct_message_groups_from_subscription
		// fills from the subscriptions to it.
		h := object(row)
		recipient, ok := huddleRecipient[h["id"]]
		if size, _ := h["group_size"].(float64); !ok || float64(huddleMembers[recipient]) != size {
			r.errorf("zerver_huddle[%d]: recipient found %v, %d subscriptions to it, group_size %v; want a recipient of type 3 and a subscription per member (Zulip: import_realm.py:335, 351-354)",
				i, ok, huddleMembers[recipient], h["group_size"])
		}
	}
	for i, row := range asList(realm["zerver_realmauthenticationmethod"]) {
		sameRealm(fmt.Sprintf("zerver_realmauthenticationmethod[%d]", i), object(row), "realm", "import_realm.py:1405")
	}

	// The message files, in order from 1 (the importer stops at the first
	// missing number).
	messages := exportIDs{}
	for n := 1; ; n++ {
		name := fmt.Sprintf("messages-%06d.json", n)
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			break
		}
		var file map[string]any
		if !readExportFile(r, dir, name, "import_realm.py:1914-1918", &file) {
			break
		}
		checkTable(r, name, file, messageFileTables)
		channelMessage := map[float64]bool{}
		for i, row := range asList(file["zerver_message"]) {
			m, where := object(row), fmt.Sprintf("%s: zerver_message[%d]", name, i)
			id, _ := m["id"].(float64)
			messages[id] = true
			sameRealm(where, m, "realm", "import_realm.py:1934")
			refersTo(r, where, m, "sender", users, "user", false, "import_realm.py:1922")
			refersTo(r, where, m, "recipient", recipients, "recipient", false, "import_realm.py:1923")
			refersTo(r, where, m, "sending_client", clients, "client", false, "import_realm.py:1924")
			recipient, _ := m["recipient"].(float64)
			isChannel, known := m["is_channel_message"].(bool) // its absence is reported above
			if known {
				channelMessage[id] = isChannel
			}
			if want := recipientType[recipient] == 2; known && isChannel != want {
				r.errorf("%s: is_channel_message %v for a recipient of type %v, want %v (Zulip: models/messages.py:101, the field's default being true)", where, isChannel, recipientType[recipient], want)
			}
			checkEditHistory(r, where, m, users)
		}
		for i, row := range asList(file["zerver_usermessage"]) {
			um, where := object(row), fmt.Sprintf("%s: zerver_usermessage[%d]", name, i)
			refersTo(r, where, um, "message", messages, "message of this file or an earlier one", false, "import_realm.py:1939")
			refersTo(r, where, um, "user_profile", users, "user", false, "import_realm.py:1959")
			mask, _ := um["flags_mask"].(float64)
			id, _ := um["message"].(float64)
			if isChannel, here := channelMessage[id]; here && (int64(mask)&zulipexport.FlagIsPrivate != 0) == isChannel {
				r.errorf("%s: flags_mask %v: is_private must be set exactly on direct messages (Zulip: zerver/actions/message_send.py create_user_messages, models/messages.py:101)", where, mask)
			}
		}
	}
	if len(messages) == 0 {
		r.errorf("no messages-000001.json (Zulip: import_realm.py:1872)")
	}
	for i, row := range asList(realm["zerver_reaction"]) {
		where := fmt.Sprintf("zerver_reaction[%d]", i)
		refersTo(r, where, object(row), "message", messages, "message", false, "import_realm.py:1744")
		refersTo(r, where, object(row), "user_profile", users, "user", false, "import_realm.py:1745")
	}

	// Uploaded files and avatars: records naming files of the export.
	uploadPaths := map[string]bool{}
	emojiFiles := map[string]bool{}
	for _, row := range asList(realm["zerver_realmemoji"]) {
		name, _ := object(row)["file_name"].(string)
		emojiFiles[name] = true
	}
	for _, sub := range []string{"uploads", "avatars", "emoji"} {
		if _, err := os.Stat(filepath.Join(dir, sub)); sub == "emoji" && len(emojiFiles) == 0 && err != nil {
			continue // Zulip's importer reads emoji/ only where it is there (import_realm.py: os.path.exists)
		}
		var records []any
		if !readExportFile(r, dir, sub+"/records.json", "import_realm.py:965", &records) {
			continue
		}
		for i, row := range records {
			rec, where := object(row), fmt.Sprintf("%s/records.json[%d]", sub, i)
			fields := recordFields
			if sub == "avatars" {
				fields = maps.Clone(recordFields)
				fields["avatar_version"] = zulipField{"number", "import_realm.py:1012"}
			}
			if sub == "emoji" {
				fields = maps.Clone(recordFields)
				fields["file_name"] = zulipField{"string", "import_realm.py: RealmEmoji.PATH_ID_TEMPLATE.format(…, emoji_file_name=record[\"file_name\"])"}
				fields["name"] = zulipField{"string", "export.py: export_emoji_from_local (record's name)"}
				fields["author"] = zulipField{"number", `import_realm.py: re_map_foreign_keys_internal(records, "records", "author", …)`}
				fields["deactivated"] = zulipField{"bool", `import_realm.py: process_emojis, record.get("deactivated", False)`}
				name, _ := rec["file_name"].(string)
				if !emojiFiles[name] {
					r.errorf("%s.file_name %q: no zerver_realmemoji row has it (Zulip: import_realm.py, process_emojis updates the RealmEmoji of that file_name)", where, name)
				}
				if p, _ := rec["path"].(string); !strings.HasSuffix(p, "/emoji/images/"+name) {
					r.errorf("%s.path %q: not at RealmEmoji.PATH_ID_TEMPLATE's path for %q", where, p, name)
				}
			}
			checkFields(r, where, rec, fields)
			refersTo(r, where, rec, "user_profile_id", users, "user", false, "import_realm.py:1054")
			if rec["realm_id"] != realmID {
				r.errorf("%s.realm_id: %v, want the realm's id %v (Zulip: import_realm.py:1035)", where, rec["realm_id"], realmID)
			}
			path, _ := rec["path"].(string)
			if _, err := os.Stat(filepath.Join(dir, sub, filepath.FromSlash(path))); err != nil {
				r.errorf("%s: the file: %v (Zulip: import_realm.py:1089)", where, err)
			}
			if sub == "uploads" {
				s3, _ := rec["s3_path"].(string)
				uploadPaths[s3] = true
			} else if user, _ := rec["user_profile_id"].(float64); sub == "avatars" && rec["avatar_version"] != avatarVersion[user] {
				r.errorf("%s.avatar_version: %v, want the user's, %v: the importer stores the image under the record's and makes the medium one from the user's (Zulip: import_realm.py:1012, 870)", where, rec["avatar_version"], avatarVersion[user])
			}
		}
	}
	var attachments map[string]any
	if !readExportFile(r, dir, "attachment.json", "import_realm.py:1679-1681", &attachments) {
		return
	}
	checkTable(r, "attachment.json", attachments, attachmentTables)
	for i, row := range asList(attachments["zerver_attachment"]) {
		a, where := object(row), fmt.Sprintf("attachment.json: zerver_attachment[%d]", i)
		sameRealm(where, a, "realm", "import_realm.py:1973")
		refersTo(r, where, a, "owner", users, "user", false, "import_realm.py:1972")
		if path, _ := a["path_id"].(string); !uploadPaths[path] {
			r.errorf("%s.path_id %q: no record in uploads/records.json has it as s3_path (Zulip: import_realm.py:2058, 1037)", where, path)
		}
		for _, id := range asList(a["messages"]) {
			if !messages[id.(float64)] {
				r.errorf("%s.messages: %v, no message of the export (Zulip: import_realm.py:2002)", where, id)
			}
		}
	}
}

// checkEditHistory checks a message's edit history as
// fix_message_edit_history reads it: a JSON list whose entries name an
// exported user, and carry the rendering of each previous content.
func checkEditHistory(r *ruleReport, where string, m map[string]any, users exportIDs) {
	text, ok := m["edit_history"].(string)
	if !ok {
		return
	}
	var entries []map[string]any
	if err := json.Unmarshal([]byte(text), &entries); err != nil {
		r.errorf("%s.edit_history: %v (Zulip: import_realm.py:504, orjson.loads)", where, err)
		return
	}
	for i, e := range entries {
		at := fmt.Sprintf("%s.edit_history[%d]", where, i)
		refersTo(r, at, e, "user_id", users, "user", false, "import_realm.py:506")
		if _, hasContent := e["prev_content"]; hasContent {
			if _, ok := e["prev_rendered_content"]; !ok {
				r.errorf("%s: prev_content without prev_rendered_content (Zulip: import_realm.py:398, 508-514)", at)
			}
		}
	}
}

func asList(v any) []any {
	list, _ := v.([]any)
	return list
}

// ruleReport gathers the checker's failures, each rule once with the
// number of rows it failed on, so that a rule broken by every row reads
// as one line.
type ruleReport struct {
	order []string
	first map[string]string
	count map[string]int
}

var rowIndex = regexp.MustCompile(`\[[0-9]+\]`)

func (r *ruleReport) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	key := rowIndex.ReplaceAllString(msg, "[…]")
	if _, seen := r.first[key]; !seen {
		r.order = append(r.order, key)
		r.first[key] = msg
	}
	r.count[key]++
}

func (r *ruleReport) flush(t *testing.T) {
	t.Helper()
	for _, key := range r.order {
		if n := r.count[key]; n > 1 {
			t.Errorf("%s [and %d more rows]", r.first[key], n-1)
		} else {
			t.Error(r.first[key])
		}
	}
}

// realmUserDefaultFields are the fields of zerver_realmuserdefault zulite
// writes: the row's id and realm, and each setting PATCH
// /realm/user_settings_defaults changes, every one a field of Zulip's
// RealmUserDefault (zerver/models/realms.py, UserBaseSettings; its
// update_realm_user_settings_defaults takes each of them).
func realmUserDefaultFields() map[string]zulipField {
	fields := map[string]zulipField{
		"id":    {"number", `import_realm.py: update_model_ids(RealmUserDefault, data, "realmuserdefault")`},
		"realm": {"number", `import_realm.py: re_map_foreign_keys(data, "zerver_realmuserdefault", "realm", related_table="realm")`},
	}
	for _, s := range userSettingsTable {
		if !s.changeable {
			continue
		}
		kind := map[bool]string{true: "bool", false: "number"}[s.def == true || s.def == false]
		if _, isString := s.def.(string); isString {
			kind = "string"
		}
		fields[s.name] = zulipField{kind, "zerver/views/realm.py: update_realm_user_settings_defaults takes " + s.name}
	}
	return fields
}
