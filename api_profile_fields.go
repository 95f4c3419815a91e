package main

// Custom profile fields (Zulip's zerver/views/custom_profile_fields.py
// and zerver/actions/custom_profile_fields.py): the organisation's
// fields, which administrators define, and each person's values.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"zulite/internal/markdown"
)

// Zulip's field types (CustomProfileField).
const (
	fieldShortText       = 1
	fieldLongText        = 2
	fieldSelect          = 3
	fieldDate            = 4
	fieldURL             = 5
	fieldUser            = 6
	fieldExternalAccount = 7
	fieldPronouns        = 8
)

// Zulip's CustomProfileField.NAME_MAX_LENGTH and HINT_MAX_LENGTH, and the
// values' limits (check_short_string, check_long_string).
const (
	maxFieldNameLength = 40
	maxFieldHintLength = 80
	maxShortValue      = 50
	maxLongValue       = 500
)

// externalAccount is one of Zulip's DEFAULT_EXTERNAL_ACCOUNTS
// (zerver/lib/external_accounts.py): register's
// realm_default_external_accounts, and the label and hint a field of
// that subtype takes.
type externalAccount struct {
	Text       string `json:"text"`
	URLPattern string `json:"url_pattern"`
	Name       string `json:"name"`
	Hint       string `json:"hint"`
}

var defaultExternalAccounts = map[string]externalAccount{
	"twitter": {"Twitter", "https://twitter.com/%(username)s", "Twitter username", ""},
	"github":  {"GitHub", "https://github.com/%(username)s", "GitHub username", ""},
}

// listProfileFields serves GET /api/v1/realm/profile_fields: every
// field, in its order, for everyone.
func (s *server) listProfileFields(r *apiRequest) (any, error) {
	fields, err := s.store.profileFields()
	if err != nil {
		return nil, err
	}
	return struct {
		CustomFields []profileField `json:"custom_fields"`
	}{fields}, nil
}

// fieldParams are the parameters creating and editing a field share, in
// Zulip's order; nil: not given.
type fieldParams struct {
	display, editable, required *bool
	data                        map[string]any // field_data, decoded
	dataJSON                    string         // field_data as stored: compact, in the client's order
	hint, name                  *string
}

func readFieldParams(p *params) (fieldParams, error) {
	var f fieldParams
	var err error
	if f.display, err = optionalBoolPtr(p, "display_in_profile_summary"); err != nil {
		return f, err
	}
	if f.editable, err = optionalBoolPtr(p, "editable_by_user"); err != nil {
		return f, err
	}
	if raw, ok := p.lookup("field_data"); ok {
		parsed, err := decodeJSON("field_data", raw)
		if err != nil {
			return f, err
		}
		if f.data, ok = parsed.(map[string]any); !ok {
			return f, errNotDict("field_data")
		}
		var b bytes.Buffer
		json.Compact(&b, []byte(raw))
		f.dataJSON = b.String()
	}
	return f, nil
}

// readFieldText reads hint and name, which come after field_type in
// Zulip's order; name is stripped, as its StringConstraints say.
func readFieldText(p *params, f *fieldParams) {
	if v, ok := p.lookup("hint"); ok {
		f.hint = &v
	}
	if v, ok := p.lookup("name"); ok {
		v = strings.TrimSpace(v)
		f.name = &v
	}
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// createProfileField serves POST /api/v1/realm/profile_fields
// (administrators only).
func (s *server) createProfileField(r *apiRequest) (any, error) {
	f, err := readFieldParams(r.params)
	if err != nil {
		return nil, err
	}
	fieldType, err := r.params.requiredInt("field_type")
	if err != nil {
		return nil, err
	}
	readFieldText(r.params, &f)
	required, err := optionalBoolPtr(r.params, "required")
	if err != nil {
		return nil, err
	}
	display := deref(f.display, false)
	if display {
		fields, err := s.store.profileFields()
		if err != nil {
			return nil, err
		}
		if countSummary(fields, 0) >= maxProfileSummaryFields {
			return nil, errProfileSummaryLimit
		}
	}
	if f.data == nil {
		f.data, f.dataJSON = map[string]any{}, "{}"
	}
	name, hint := deref(f.name, ""), deref(f.hint, "")
	if err := checkField(name, hint, int(fieldType), f.data, display); err != nil {
		return nil, err
	}
	field := profileField{Name: name, Type: int(fieldType), Hint: hint, Required: deref(required, false),
		EditableByUser: deref(f.editable, true), DisplayInProfileSummary: display}
	if subtype, ok := defaultExternalSubtype(field.Type, f.data); ok {
		account := defaultExternalAccounts[subtype]
		field.Name, field.Hint, field.FieldData = account.Name, account.Hint, `{"subtype":"`+subtype+`"}`
	} else if field.Type == fieldSelect || field.Type == fieldExternalAccount {
		field.FieldData = f.dataJSON
	}
	id, err := s.store.addProfileField(field)
	if err != nil {
		return nil, err
	}
	return struct {
		ID uint64 `json:"id"`
	}{id}, nil
}

// updateProfileField serves PATCH /api/v1/realm/profile_fields/{field_id}
// (administrators only).
func (s *server) updateProfileField(r *apiRequest) (any, error) {
	f, err := readFieldParams(r.params)
	if err != nil {
		return nil, err
	}
	id, err := parseInt("field_id", r.PathValue("field_id"))
	if err != nil {
		return nil, err
	}
	readFieldText(r.params, &f)
	required, err := optionalBoolPtr(r.params, "required")
	if err != nil {
		return nil, err
	}
	return nil, s.store.updateProfileField(uint64(id), func(field *profileField, fields []profileField) error {
		if deref(f.display, false) && countSummary(fields, field.ID) >= maxProfileSummaryFields {
			return refusal(errProfileSummaryLimit)
		}
		var current map[string]any
		json.Unmarshal([]byte(field.FieldData), &current)
		if _, isDefault := defaultExternalSubtype(field.Type, current); isDefault &&
			((f.name != nil && *f.name != field.Name) || (f.hint != nil && *f.hint != field.Hint) || (f.data != nil && !sameJSON(f.data, current))) {
			return refusal(errDefaultFieldUpdate)
		}
		data := f.data
		if data == nil {
			if data = current; data == nil {
				data = map[string]any{}
			}
		}
		name, hint := deref(f.name, field.Name), deref(f.hint, field.Hint)
		display := deref(f.display, field.DisplayInProfileSummary)
		if err := checkField(name, hint, field.Type, data, display); err != nil {
			return refusal(err)
		}
		field.Name, field.Hint, field.DisplayInProfileSummary = name, hint, display
		field.Required, field.EditableByUser = deref(required, field.Required), deref(f.editable, field.EditableByUser)
		if field.Type == fieldSelect || field.Type == fieldExternalAccount {
			if f.data != nil {
				field.FieldData = f.dataJSON
			} else if field.FieldData == "" {
				field.FieldData = "{}"
			}
		}
		return nil
	})
}

// sameJSON compares two decoded JSON values by their encoding, which
// sorts object keys.
func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// deleteProfileField serves DELETE /api/v1/realm/profile_fields/{field_id}
// (administrators only): the field and every value of it go.
func (s *server) deleteProfileField(r *apiRequest) (any, error) {
	id, err := parseInt("field_id", r.PathValue("field_id"))
	if err != nil {
		return nil, err
	}
	return nil, s.store.deleteProfileField(uint64(id))
}

// reorderProfileFields serves PATCH /api/v1/realm/profile_fields
// (administrators only).
func (s *server) reorderProfileFields(r *apiRequest) (any, error) {
	order, err := intList(r.params, "order")
	if err != nil {
		return nil, err
	}
	return nil, s.store.reorderProfileFields(order)
}

// updateOwnProfileData serves PATCH /api/v1/users/me/profile_data
// (humans only): data is a list of {"id", "value"}.
func (s *server) updateOwnProfileData(r *apiRequest) (any, error) {
	updates, err := readProfileUpdates(r.params, "data", false)
	if err != nil {
		return nil, err
	}
	return nil, s.store.editAccount(r.user, r.user.ID, accountEdit{Profile: updates}, true)
}

// removeOwnProfileData serves DELETE /api/v1/users/me/profile_data
// (humans only): data is a list of field ids whose values go.
func (s *server) removeOwnProfileData(r *apiRequest) (any, error) {
	ids, err := intList(r.params, "data")
	if err != nil {
		return nil, err
	}
	updates := make([]profileUpdate, len(ids))
	for i, id := range ids {
		updates[i] = profileUpdate{FieldID: uint64(id)}
	}
	return nil, s.store.editAccount(r.user, r.user.ID, accountEdit{Profile: updates}, true)
}

// readProfileUpdates reads a list of {"id": int, "value": string or list
// of ints} with Zulip's check_dict_only texts (the admin's profile_data
// also takes null, which removes the value, as an empty value does).
func readProfileUpdates(p *params, name string, admin bool) ([]profileUpdate, error) {
	list, err := requiredList(p, name)
	if err != nil {
		return nil, err
	}
	updates := make([]profileUpdate, 0, len(list))
	for i, item := range list {
		elem := elemName(name, i)
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, errNotDict(elem)
		}
		idRaw, ok := obj["id"]
		if !ok {
			return nil, errKeyMissing("id", elem)
		}
		id, ok := jsonInt(idRaw)
		if !ok {
			return nil, errNotInteger(elem + `["id"]`)
		}
		valueRaw, ok := obj["value"]
		if !ok {
			return nil, errKeyMissing("value", elem)
		}
		for k := range obj {
			if k != "id" && k != "value" {
				return nil, badRequest("Unexpected arguments: " + echoed(k))
			}
		}
		var value any
		switch v := valueRaw.(type) {
		case string:
			value = v
		case []any:
			ids := make([]int64, 0, len(v))
			for _, x := range v {
				n, ok := jsonInt(x)
				if !ok {
					return nil, badRequest(elem + `["value"] is not an allowed_type`)
				}
				ids = append(ids, n)
			}
			value = ids
		case nil:
			if !admin {
				return nil, badRequest(elem + `["value"] is not an allowed_type`)
			}
		default:
			return nil, badRequest(elem + `["value"] is not an allowed_type`)
		}
		if admin && (value == "" || (isIntList(value) && len(value.([]int64)) == 0)) {
			value = nil // update_user_backend: an empty value removes it
		}
		updates = append(updates, profileUpdate{FieldID: uint64(id), Value: value})
	}
	return updates, nil
}

func isIntList(v any) bool { _, ok := v.([]int64); return ok }

// checkField is Zulip's validate_custom_profile_field: the field data
// first, then label and hint (not for a default external account, whose
// label is Zulip's), the type, and whether it may be in the summary.
func checkField(name, hint string, fieldType int, data map[string]any, display bool) *apiError {
	switch fieldType {
	case fieldSelect:
		if len(data) < 1 {
			return errNoChoices
		}
		if err := checkSelectData(data); err != nil {
			return err
		}
	case fieldExternalAccount:
		if err := checkExternalData(data); err != nil {
			return err
		}
	}
	if _, isDefault := defaultExternalSubtype(fieldType, data); !isDefault {
		switch {
		case strings.TrimSpace(name) == "":
			return errLabelBlank
		case utf8.RuneCountInString(hint) > maxFieldHintLength:
			return errTooLongLimit("hint", maxFieldHintLength)
		case utf8.RuneCountInString(name) > maxFieldNameLength:
			return errTooLongLimit("name", maxFieldNameLength)
		}
	}
	if fieldType < fieldShortText || fieldType > fieldPronouns {
		return errInvalidFieldType
	}
	if display && (fieldType == fieldLongText || fieldType == fieldUser) {
		return errSummaryFieldType
	}
	return nil
}

// defaultExternalSubtype tells an external account field of one of
// Zulip's default subtypes (is_default_external_field).
func defaultExternalSubtype(fieldType int, data map[string]any) (string, bool) {
	if fieldType != fieldExternalAccount {
		return "", false
	}
	subtype, _ := data["subtype"].(string)
	_, ok := defaultExternalAccounts[subtype]
	return subtype, ok
}

// checkSelectData is Zulip's validate_select_field_data: every option a
// {"text", "order"} of non-blank strings, no two with the same text.
// Options are checked in key order, so that the answer is always the same.
func checkSelectData(data map[string]any) *apiError {
	texts := map[string]bool{}
	for _, key := range fieldKeys(data) {
		if strings.TrimSpace(key) == "" {
			return badRequest("'value' cannot be blank.")
		}
		option, err := checkDictOnly("field_data", data[key], []string{"text", "order"}, nil)
		if err != nil {
			return err
		}
		texts[option["text"].(string)] = true
	}
	if len(texts) != len(data) {
		return errDuplicateChoices
	}
	return nil
}

// checkExternalData is Zulip's validate_external_account_field_data.
func checkExternalData(data map[string]any) *apiError {
	_, err := checkDictOnly("field_data", data, []string{"subtype"}, func(key string, v any) *apiError {
		name := `field_data["` + key + `"]`
		s, ok := v.(string)
		if !ok {
			return errNotString(name)
		}
		if strings.Count(s, "%(username)s") != 1 {
			return errURLPatternUsername
		}
		if !isURL(strings.ReplaceAll(s, "%(username)s", "username")) {
			return errNotURL(name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	subtype := data["subtype"].(string)
	if _, ok := defaultExternalAccounts[subtype]; !ok {
		if subtype != "custom" {
			return errExternalAccountType
		}
		if _, ok := data["url_pattern"]; !ok {
			return errCustomAccountURL
		}
	}
	return nil
}

// checkDictOnly is Zulip's check_dict_only with required non-blank
// string keys and, when urlPattern is set, the optional "url_pattern".
func checkDictOnly(name string, v any, required []string, urlPattern func(string, any) *apiError) (map[string]any, *apiError) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errNotDict(name)
	}
	for _, key := range required {
		value, present := obj[key]
		if !present {
			return nil, errKeyMissing(key, name)
		}
		s, isString := value.(string)
		if !isString {
			return nil, errNotString(name + `["` + key + `"]`)
		}
		if strings.TrimSpace(s) == "" {
			return nil, errBlank(name + `["` + key + `"]`)
		}
	}
	if value, present := obj["url_pattern"]; present && urlPattern != nil {
		if err := urlPattern("url_pattern", value); err != nil {
			return nil, err
		}
	}
	var unexpected []string
	for _, key := range fieldKeys(obj) {
		if !slices.Contains(required, key) && (urlPattern == nil || key != "url_pattern") {
			unexpected = append(unexpected, echoed(key))
		}
	}
	if len(unexpected) > 0 {
		return nil, badRequest("Unexpected arguments: " + strings.Join(unexpected, ", "))
	}
	return obj, nil
}

func fieldKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkProfileValue is Zulip's validate_user_custom_profile_field for
// one value, named by the field's label, and the value as stored: a
// list of users as its JSON, a text field with its rendering.
func checkProfileValue(f profileField, value any, users []user) (profileValue, *apiError) {
	if f.Type == fieldUser {
		ids, ok := value.([]int64)
		if !ok {
			return profileValue{}, errNotList("User IDs")
		}
		if err := checkUserIDs(ids, users); err != nil {
			return profileValue{}, err
		}
		encoded, _ := json.Marshal(ids)
		return profileValue{Value: string(encoded)}, nil
	}
	s, ok := value.(string)
	if !ok {
		return profileValue{}, errNotString(f.Name)
	}
	switch f.Type {
	case fieldShortText, fieldExternalAccount, fieldPronouns:
		if utf8.RuneCountInString(s) > maxShortValue {
			return profileValue{}, errTooLongLimit(f.Name, maxShortValue)
		}
	case fieldLongText:
		if utf8.RuneCountInString(s) > maxLongValue {
			return profileValue{}, errTooLongLimit(f.Name, maxLongValue)
		}
	case fieldDate:
		if d, err := time.Parse(time.DateOnly, s); err != nil || d.Format(time.DateOnly) != s {
			return profileValue{}, errNotDate(f.Name)
		}
	case fieldURL:
		if !isURL(s) {
			return profileValue{}, errNotURL(f.Name)
		}
	case fieldSelect:
		var choices map[string]json.RawMessage
		json.Unmarshal([]byte(f.FieldData), &choices)
		if _, ok := choices[s]; !ok {
			return profileValue{}, errNotChoice(s, f.Name)
		}
	}
	v := profileValue{Value: s}
	if f.Type == fieldShortText || f.Type == fieldLongText {
		v.Rendered = renderProfileValue(s)
	}
	return v, nil
}

// renderProfileValue renders a text field's value, as Zulip's
// render_stream_description does (nothing to resolve: no error).
func renderProfileValue(s string) string {
	rendered, _ := markdown.Render(s, "", nil)
	return rendered.HTML
}

// checkUserIDs is Zulip's check_valid_user_ids: every id an account's,
// none deactivated, none a bot.
func checkUserIDs(ids []int64, users []user) *apiError {
	var invalid []string
	var found []user
	for _, id := range ids {
		i, ok := slices.BinarySearchFunc(users, uint64(id), func(u user, id uint64) int { return cmp.Compare(u.ID, id) })
		if id <= 0 || !ok {
			invalid = append(invalid, strconv.FormatInt(id, 10))
			continue
		}
		found = append(found, users[i])
	}
	if invalid != nil {
		return badRequest("Invalid user IDs: " + echoed(strings.Join(invalid, ", ")))
	}
	for _, u := range found {
		switch {
		case !u.Active:
			return badRequest("User with ID " + strconv.FormatUint(u.ID, 10) + " is deactivated")
		case u.Bot:
			return badRequest("User with ID " + strconv.FormatUint(u.ID, 10) + " is a bot")
		}
	}
	return nil
}

// isURL is Django's URLValidator as Zulip's check_url uses it, in its
// main rules: an http, https, ftp or ftps URL of at most 2048
// characters, no whitespace, and a host that is a domain with a
// top-level part, localhost or an IP address.
func isURL(s string) bool {
	if len(s) > 2048 || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return false
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "ftp", "ftps":
	default:
		return false
	}
	host := u.Hostname()
	if host == "localhost" || net.ParseIP(host) != nil {
		return true
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return false
		}
	}
	tld := labels[len(labels)-1]
	return len(tld) >= 2 && strings.Trim(tld, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" || strings.HasPrefix(tld, "xn--")
}

// publishProfileFields tells everyone the fields as they now are
// (Zulip's notify_realm_custom_profile_fields).
func (s *server) publishProfileFields(c profileFieldsChanged) {
	s.events.tellEveryone("custom_profile_fields", nil, event{"type": "custom_profile_fields", "fields": c.Fields})
}
