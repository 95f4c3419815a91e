package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

const profileFieldsPath = "/api/v1/realm/profile_fields"

// addField creates a field as the administrator and returns its id.
func (e *testEnv) addField(t *testing.T, params url.Values) string {
	t.Helper()
	r := e.request(t, http.MethodPost, profileFieldsPath, params, &e.admin)
	wantAPISuccess(t, r)
	id, _ := r.body["id"].(float64)
	return strconv.Itoa(int(id))
}

// unescaped is v's JSON without HTML escaping, as the server writes it.
func unescaped(v any) string {
	var b bytes.Buffer
	encodeValue(&b, v)
	return b.String()
}

// fieldList is GET /realm/profile_fields as a's JSON.
func (e *testEnv) fieldList(t *testing.T, a *account) string {
	t.Helper()
	r := e.request(t, http.MethodGet, profileFieldsPath, nil, a)
	wantAPISuccess(t, r)
	return unescaped(r.body["custom_fields"])
}

func TestProfileFields_CreateEditReorderDeleteAsZulip(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	wantAPIError(t, e.request(t, http.MethodPost, profileFieldsPath, url.Values{"name": {"Phone"}, "field_type": {"1"}}, &e.bob),
		http.StatusBadRequest, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator")
	phone := e.addField(t, url.Values{"name": {" Phone "}, "field_type": {"1"}, "hint": {"Your number"}})
	editor := e.addField(t, url.Values{"name": {"Editor"}, "field_type": {"3"}, "field_data": {`{"v": {"text": "Vim", "order": "1"}, "e": {"text": "Emacs", "order": "2"}}`}})
	github := e.addField(t, url.Values{"field_type": {"7"}, "field_data": {`{"subtype":"github"}`}, "display_in_profile_summary": {"true"}})
	want := `[{"editable_by_user":true,"field_data":"","hint":"Your number","id":` + phone + `,"name":"Phone","order":` + phone + `,"required":false,"type":1},` +
		`{"editable_by_user":true,"field_data":"{\"v\":{\"text\":\"Vim\",\"order\":\"1\"},\"e\":{\"text\":\"Emacs\",\"order\":\"2\"}}","hint":"","id":` + editor + `,"name":"Editor","order":` + editor + `,"required":false,"type":3},` +
		`{"display_in_profile_summary":true,"editable_by_user":true,"field_data":"{\"subtype\":\"github\"}","hint":"","id":` + github + `,"name":"GitHub username","order":` + github + `,"required":false,"type":7}]`
	if got := e.fieldList(t, &e.bob); got != want {
		t.Fatalf("fields: got %s\nwant %s", got, want)
	}
	for _, c := range []struct {
		rule   string
		method string
		path   string
		params url.Values
		msg    string
	}{
		{"a label taken", "POST", profileFieldsPath, url.Values{"name": {"Phone"}, "field_type": {"2"}}, "A field with that label already exists."},
		{"a blank label", "POST", profileFieldsPath, url.Values{"name": {"  "}, "field_type": {"1"}}, "Label cannot be blank."},
		{"a label too long", "POST", profileFieldsPath, url.Values{"name": {strings.Repeat("n", 41)}, "field_type": {"1"}}, "name is too long (limit: 40 characters)"},
		{"a hint too long", "POST", profileFieldsPath, url.Values{"name": {"N"}, "hint": {strings.Repeat("h", 81)}, "field_type": {"1"}}, "hint is too long (limit: 80 characters)"},
		{"no field type", "POST", profileFieldsPath, url.Values{"name": {"N"}}, "Missing 'field_type' argument"},
		{"an unknown type", "POST", profileFieldsPath, url.Values{"name": {"N"}, "field_type": {"9"}}, "Invalid field type."},
		{"a list without choices", "POST", profileFieldsPath, url.Values{"name": {"N"}, "field_type": {"3"}}, "Field must have at least one choice."},
		{"a list with the same choice twice", "POST", profileFieldsPath, url.Values{"name": {"N"}, "field_type": {"3"}, "field_data": {`{"a":{"text":"x","order":"1"},"b":{"text":"x","order":"2"}}`}}, "Field must not have duplicate choices."},
		{"a choice without text", "POST", profileFieldsPath, url.Values{"name": {"N"}, "field_type": {"3"}, "field_data": {`{"a":{"order":"1"}}`}}, "text key is missing from field_data"},
		{"an unknown account type", "POST", profileFieldsPath, url.Values{"name": {"N"}, "field_type": {"7"}, "field_data": {`{"subtype":"myspace"}`}}, "Invalid external account type"},
		{"a custom account without its pattern", "POST", profileFieldsPath, url.Values{"name": {"N"}, "field_type": {"7"}, "field_data": {`{"subtype":"custom"}`}}, "Custom external account must define URL pattern"},
		{"a pattern without its username", "POST", profileFieldsPath, url.Values{"name": {"N"}, "field_type": {"7"}, "field_data": {`{"subtype":"custom","url_pattern":"https://x.example/"}`}}, "URL pattern must contain '%(username)s'."},
		{"a long text in the summary", "POST", profileFieldsPath, url.Values{"name": {"N"}, "field_type": {"2"}, "display_in_profile_summary": {"true"}}, "Field type not supported for display in profile summary."},
		{"field_data not a dict", "POST", profileFieldsPath, url.Values{"name": {"N"}, "field_type": {"3"}, "field_data": {`[1]`}}, "field_data is not a dict"},
		{"an unknown field", "PATCH", profileFieldsPath + "/999999", url.Values{"name": {"X"}}, "Field id 999999 not found."},
		{"a default account's label", "PATCH", profileFieldsPath + "/" + github, url.Values{"name": {"Octocat"}}, "Default custom field cannot be updated."},
		{"a label taken by another", "PATCH", profileFieldsPath + "/" + phone, url.Values{"name": {"Editor"}}, "A field with that label already exists."},
		{"an order that leaves one out", "PATCH", profileFieldsPath, url.Values{"order": {"[" + phone + "," + editor + "]"}}, "Invalid order mapping."},
		{"deleting an unknown field", "DELETE", profileFieldsPath + "/999999", nil, "Field id 999999 not found."},
	} {
		r := e.request(t, c.method, c.path, c.params, &e.admin)
		if r.status != http.StatusBadRequest || r.str("msg") != c.msg {
			t.Errorf("%s: got %d %s, want 400 %q", c.rule, r.status, r.raw, c.msg)
		}
	}
	e.addField(t, url.Values{"name": {"Pronouns"}, "field_type": {"8"}, "display_in_profile_summary": {"true"}})
	wantAPIError(t, e.request(t, http.MethodPost, profileFieldsPath, url.Values{"name": {"Third"}, "field_type": {"1"}, "display_in_profile_summary": {"true"}}, &e.admin),
		http.StatusBadRequest, "BAD_REQUEST", "Only 2 custom profile fields can be displayed in the profile summary.")
	if got := e.fieldList(t, &e.bob); !strings.HasPrefix(got, want[:len(want)-1]) || strings.Count(got, `"id"`) != 4 {
		t.Fatalf("refusals changed the fields: %s", got)
	}

	// A default account's summary flag may change; another field anything.
	wantAPISuccess(t, e.request(t, http.MethodPatch, profileFieldsPath+"/"+github, url.Values{"display_in_profile_summary": {"false"}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodPatch, profileFieldsPath+"/"+phone, url.Values{"name": {"Mobile"}, "required": {"true"}, "editable_by_user": {"false"}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodPatch, profileFieldsPath, url.Values{"order": {"[" + editor + ",999," + github + "," + phone + ",4]"}}, &e.admin))
	var fields []struct {
		ID                      uint64
		Name                    string
		Order                   int64
		Required                bool
		EditableByUser          bool `json:"editable_by_user"`
		DisplayInProfileSummary bool `json:"display_in_profile_summary"`
	}
	json.Unmarshal([]byte(e.fieldList(t, &e.bob)), &fields)
	if len(fields) != 4 || strconv.FormatUint(fields[0].ID, 10) != editor || fields[0].Order != 0 || fields[2].Name != "Mobile" || !fields[2].Required || fields[2].EditableByUser || fields[1].DisplayInProfileSummary {
		t.Errorf("after edits and reordering: %+v", fields)
	}
	wantAPISuccess(t, e.request(t, http.MethodDelete, profileFieldsPath+"/"+github, nil, &e.admin))
	if got := e.fieldList(t, &e.bob); strings.Contains(got, "GitHub") {
		t.Errorf("the deleted field is still listed: %s", got)
	}
	// Each change told everyone the whole list; register agrees with GET.
	events := e.eventsOfType(t, &e.bob, queue, "custom_profile_fields")
	if len(events) != 8 {
		t.Errorf("custom_profile_fields events: got %d, want 8 (4 added, 3 edits, 1 delete)", len(events))
	}
	last := unescaped(events[len(events)-1]["fields"])
	state := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["custom_profile_fields"]`}})
	registered := unescaped(state.body["custom_profile_fields"])
	if list := e.fieldList(t, &e.bob); last != list || registered != list {
		t.Errorf("the last event %s, register %s and GET %s differ", last, registered, list)
	}
}

func TestProfileData_ValuesAreCheckedStoredAndTold(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.bob, nil).str("queue_id")
	text := e.addField(t, url.Values{"name": {"Phone"}, "field_type": {"1"}})
	long := e.addField(t, url.Values{"name": {"About"}, "field_type": {"2"}})
	choice := e.addField(t, url.Values{"name": {"Editor"}, "field_type": {"3"}, "field_data": {`{"v":{"text":"Vim","order":"1"}}`}})
	date := e.addField(t, url.Values{"name": {"Birthday"}, "field_type": {"4"}})
	link := e.addField(t, url.Values{"name": {"Homepage"}, "field_type": {"5"}})
	people := e.addField(t, url.Values{"name": {"Manager"}, "field_type": {"6"}})
	locked := e.addField(t, url.Values{"name": {"Badge"}, "field_type": {"1"}, "editable_by_user": {"false"}})
	mine := "/api/v1/users/me/profile_data"
	data := func(id, value string) url.Values {
		return url.Values{"data": {`[{"id":` + id + `,"value":` + value + `}]`}}
	}
	bot := strconv.FormatUint(e.bot.ID, 10)
	for _, c := range []struct {
		rule   string
		params url.Values
		msg    string
	}{
		{"a text too long", data(text, `"`+strings.Repeat("1", 51)+`"`), "Phone is too long (limit: 50 characters)"},
		{"a long text too long", data(long, `"`+strings.Repeat("1", 501)+`"`), "About is too long (limit: 500 characters)"},
		{"a list for a text", data(text, `[1]`), "Phone is not a string"},
		{"not a choice", data(choice, `"e"`), "'e' is not a valid choice for 'Editor'."},
		{"not a date", data(date, `"2024-02-30"`), "Birthday is not a date"},
		{"not a URL", data(link, `"example.com"`), "Homepage is not a URL"},
		{"not a list of users", data(people, `"alice"`), "User IDs is not a list"},
		{"no such user", data(people, `[999998,999999]`), "Invalid user IDs: 999998, 999999"},
		{"a bot", data(people, `[`+bot+`]`), "User with ID " + bot + " is a bot"},
		{"an unknown field", data("999999", `"x"`), "Field id 999999 not found."},
		{"a field only administrators fill", data(locked, `"x"`), "You are not allowed to change this field. Contact an administrator to update it."},
		{"no value", url.Values{"data": {`[{"id":` + text + `}]`}}, "value key is missing from data[0]"},
		{"a good value beside a bad one", url.Values{"data": {`[{"id":` + text + `,"value":"555"},{"id":` + date + `,"value":"soon"}]`}}, "Birthday is not a date"},
	} {
		r := e.request(t, http.MethodPatch, mine, c.params, &e.alice)
		if r.status != http.StatusBadRequest || r.str("msg") != c.msg {
			t.Errorf("%s: got %d %s, want 400 %q", c.rule, r.status, r.raw, c.msg)
		}
	}
	if p := e.userObjectOf(t, e.alice)["profile_data"]; fmt.Sprint(p) != "map[]" {
		t.Fatalf("refusals stored values: %v", p)
	}
	wantAPIError(t, e.request(t, http.MethodPatch, mine, data(text, `"1"`), &e.bot), http.StatusBadRequest, "BAD_REQUEST", "This endpoint does not accept bot requests.")

	manager := strconv.FormatUint(e.owner.ID, 10)
	wantAPISuccess(t, e.request(t, http.MethodPatch, mine, url.Values{"data": {`[{"id":` + text + `,"value":"555 **1234**"},{"id":` + choice + `,"value":"v"},` +
		`{"id":` + date + `,"value":"1990-05-17"},{"id":` + link + `,"value":"https://alice.example/"},{"id":` + people + `,"value":[` + manager + `]}]`}}, &e.alice))
	// An administrator fills what she may not, and empties one of hers.
	wantAPISuccess(t, e.request(t, http.MethodPatch, userPath(e.alice), url.Values{"profile_data": {`[{"id":` + locked + `,"value":"A-7"},{"id":` + link + `,"value":""}]`}}, &e.admin))
	wantAPIError(t, e.request(t, http.MethodPatch, userPath(e.alice), url.Values{"profile_data": {`[{"id":999999,"value":null}]`}}, &e.admin),
		http.StatusBadRequest, "BAD_REQUEST", "Field id 999999 not found.")
	wantAPISuccess(t, e.request(t, http.MethodDelete, mine, url.Values{"data": {"[" + date + "]"}}, &e.alice))
	wantAPIError(t, e.request(t, http.MethodDelete, mine, url.Values{"data": {"[" + locked + "]"}}, &e.alice),
		http.StatusBadRequest, "BAD_REQUEST", "You are not allowed to change this field. Contact an administrator to update it.")

	wantProfile := `{"` + text + `":{"rendered_value":"<p>555 <strong>1234</strong></p>","value":"555 **1234**"},"` + choice + `":{"value":"v"},"` +
		people + `":{"value":"[` + manager + `]"},"` + locked + `":{"rendered_value":"<p>A-7</p>","value":"A-7"}}`
	profile := unescaped(e.userObjectOf(t, e.alice)["profile_data"])
	if profile != wantProfile {
		t.Errorf("alice's profile_data: got %s\nwant %s", profile, wantProfile)
	}
	state := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["realm_user"]`}})
	for _, u := range state.body["realm_users"].([]any) {
		if u := u.(map[string]any); u["user_id"] == float64(e.alice.ID) {
			if got := unescaped(u["profile_data"]); got != wantProfile {
				t.Errorf("register's profile_data: got %s", got)
			}
		}
	}
	var updates []string
	for _, ev := range e.eventsOfType(t, &e.bob, queue, "realm_user") {
		updates = append(updates, unescaped(ev["person"].(map[string]any)["custom_profile_field"]))
	}
	wantUpdates := []string{`{"id":` + text + `,"rendered_value":"<p>555 <strong>1234</strong></p>","value":"555 **1234**"}`, `{"id":` + choice + `,"value":"v"}`,
		`{"id":` + date + `,"value":"1990-05-17"}`, `{"id":` + link + `,"value":"https://alice.example/"}`, `{"id":` + people + `,"value":"[` + manager + `]"}`,
		`{"id":` + locked + `,"rendered_value":"<p>A-7</p>","value":"A-7"}`, `{"id":` + link + `,"value":null}`, `{"id":` + date + `,"value":null}`}
	if fmt.Sprint(updates) != fmt.Sprint(wantUpdates) {
		t.Errorf("realm_user updates:\ngot  %v\nwant %v", updates, wantUpdates)
	}

	// A list loses a choice: the values holding it go; a field goes: its values go.
	wantAPISuccess(t, e.request(t, http.MethodPatch, profileFieldsPath+"/"+choice, url.Values{"field_data": {`{"e":{"text":"Emacs","order":"1"}}`}}, &e.admin))
	wantAPISuccess(t, e.request(t, http.MethodDelete, profileFieldsPath+"/"+text, nil, &e.admin))
	profile = unescaped(e.userObjectOf(t, e.alice)["profile_data"])
	if want := `{"` + people + `":{"value":"[` + manager + `]"},"` + locked + `":{"rendered_value":"<p>A-7</p>","value":"A-7"}}`; profile != want {
		t.Errorf("after the list's change and the field's removal: got %s, want %s", profile, want)
	}
}
