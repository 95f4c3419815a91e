package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// zulipYAMLDrift are places where the extract does not describe what Zulip
// itself sends at feature level 421: the extract is zulip.yaml at feature
// level 441-442, and zulip.yaml is sometimes narrower than Zulip's code.
// They are not gaps in zulite. Each says why.
var zulipYAMLDrift = []struct{ route, path, why string }{
	{"POST /api/v1/register", "$.giphy_rating_options", "renamed gif_rating_options at FL 442"},
	{"POST /api/v1/register", "$.realm_is_zephyr_mirror_realm", "removed at FL 426 (per wt-reg's notes)"},
	{"POST /api/v1/messages", "$", "zulip.yaml documents only the by-name STREAM_DOES_NOT_EXIST; Zulip answers a missing channel ID with StreamWithIDDoesNotExistError, which adds stream_id"},
	{"POST /api/v1/messages", "$.stream_id", "as above"},
	{"POST /api/v1/register", "$.reminders[].scheduled_message_id", "zulip.yaml: ScheduledMessage objects; Zulip's get_undelivered_reminders sends Reminder objects (to_dict of a REMIND message), as GET /reminders and the reminders events do"},
	{"POST /api/v1/register", "$.reminders[].reminder_id", "as above"},
	{"POST /api/v1/register", "$.reminders[].reminder_target_message_id", "as above"},
	{"POST /api/v1/register", "$.jitsi_server_url", "zulip.yaml: a string; Zulip's fetch_initial_state_data sends null when no Jitsi server is configured"},
}

// zuliteOnlyRoutes are served by zulite but are not Zulip API routes, so
// zulip.yaml says nothing about them.
var zuliteOnlyRoutes = map[string]string{
	// The web page (web.go; web_test.go tests them).
	"GET /{$}":              "the web page",
	"GET /web/{file}":       "the web page's assets",
	"POST /accounts/login":  "the web page's login form",
	"GET /accounts/session": "the web page's session",
	"POST /accounts/logout": "the web page's logout",
	"GET /health":           "zulite's liveness probe",
	"GET /metrics":          "zulite's Prometheus page (text, not JSON)",
	// Zulip's static emoji data (register's server_emoji_data_url): a file,
	// not a REST endpoint, so zulip.yaml does not describe it.
	"GET /static/generated/emoji/emoji_api.json": "Zulip's emoji data file, not an API route",
	// Zulip serves PATCH /realm (zerver/views/realm.py update_realm), but
	// zulip.yaml does not document it; its tests are api_realm's.
	"PATCH /api/v1/realm": "a Zulip route that zulip.yaml does not document",
	// Avatars (zerver/views/user_settings.py set_avatar_backend): Zulip
	// routes that zulip.yaml does not document; avatars_test.go tests them.
	"POST /api/v1/users/me/avatar":   "a Zulip route that zulip.yaml does not document",
	"DELETE /api/v1/users/me/avatar": "a Zulip route that zulip.yaml does not document",
	// Files, outside /api/v1 (bytes, not JSON); uploads_test.go and
	// avatars_test.go test them.
	"GET /user_uploads/{realm_id}/{path...}":              "a file, not an API route",
	"GET /user_uploads/temporary/{token}/{filename}":      "a file, not an API route",
	"GET /user_avatars/{realm}/{file}":                    "a file, not an API route",
	"GET /user_avatars/{realm}/emoji/images/{file}":       "a file, not an API route (api_realm_emoji_test.go tests it)",
	"GET /user_avatars/exports/{realm_id}/{token}/{file}": "a file, not an API route (api_realm_export_test.go tests it)",
	// The sign-up page an invitation opens (signup.go): HTML, as
	// Zulip's registration pages are; api_invites_test.go tests it.
	"GET /join/{key}/{$}":             "the sign-up page of a reusable invitation link",
	"POST /join/{key}/{$}":            "the sign-up page's form",
	"GET /accounts/do_confirm/{key}":  "the sign-up page of an e-mail invitation",
	"POST /accounts/do_confirm/{key}": "the sign-up page's form",
}

// noErrorAnswer are routes for which no request yields an error answer.
var noErrorAnswer = map[string]string{
	"GET /api/v1/server_settings": "public, and every parameter is ignored",
}

// openapiSpec is the extract of zulip.yaml in testdata/openapi/, as JSON.
type openapiSpec struct {
	doc map[string]any
}

func loadOpenAPISpec(t testing.TB) *openapiSpec {
	t.Helper()
	raw, err := os.ReadFile("testdata/openapi/zulip-extract.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("testdata/openapi/zulip-extract.json: %v", err)
	}
	return &openapiSpec{doc: doc}
}

// schemaViolation is one place where a JSON value breaks its schema.
type schemaViolation struct {
	path    string // JSON path, like $.streams[3].name
	problem string
}

// ref resolves a local reference, "#/components/schemas/X" and the like.
func (s *openapiSpec) ref(ref string) map[string]any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var node any = s.doc
	for _, part := range strings.Split(ref[2:], "/") {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[part]
	}
	m, _ := node.(map[string]any)
	return m
}

// resolve follows $ref until it reaches a schema. As in OpenAPI 3.0,
// keywords beside a $ref are ignored.
func (s *openapiSpec) resolve(schema map[string]any) (map[string]any, error) {
	for range 32 {
		r, ok := schema["$ref"].(string)
		if !ok {
			return schema, nil
		}
		target := s.ref(r)
		if target == nil {
			return nil, fmt.Errorf("unresolved $ref %s", r)
		}
		schema = target
	}
	return nil, fmt.Errorf("$ref loop")
}

// flatten merges allOf into one schema the way Zulip's own documentation
// tooling reads it: properties are merged key by key (so that
// {"creator_id": {"nullable": true}} in one branch makes the base's
// integer nullable), required lists are joined, and additionalProperties
// false in any branch closes the object to the union of the properties.
func (s *openapiSpec) flatten(schema map[string]any) (map[string]any, error) {
	schema, err := s.resolve(schema)
	if err != nil {
		return nil, err
	}
	branches, ok := schema["allOf"].([]any)
	if !ok {
		return schema, nil
	}
	out := map[string]any{}
	for k, v := range schema {
		if k != "allOf" {
			out[k] = v
		}
	}
	for _, b := range branches {
		bm, ok := b.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("allOf branch is not a schema")
		}
		flat, err := s.flatten(bm)
		if err != nil {
			return nil, err
		}
		if err := s.mergeInto(out, flat); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *openapiSpec) mergeInto(dst, src map[string]any) error {
	for k, v := range src {
		switch k {
		case "properties":
			props, _ := dst["properties"].(map[string]any)
			merged := map[string]any{}
			for name, p := range props {
				merged[name] = p
			}
			for name, p := range v.(map[string]any) {
				pm, _ := p.(map[string]any)
				old, ok := merged[name].(map[string]any)
				if !ok || len(pm) == 0 {
					if !ok {
						merged[name] = pm
					}
					continue
				}
				oldFlat, err := s.flatten(old)
				if err != nil {
					return err
				}
				newFlat, err := s.flatten(pm)
				if err != nil {
					return err
				}
				both := map[string]any{}
				if err := s.mergeInto(both, oldFlat); err != nil {
					return err
				}
				if err := s.mergeInto(both, newFlat); err != nil {
					return err
				}
				merged[name] = both
			}
			dst["properties"] = merged
		case "required":
			req, _ := dst["required"].([]any)
			for _, r := range v.([]any) {
				if !slices.Contains(req, r) {
					req = append(req, r)
				}
			}
			dst["required"] = req
		case "additionalProperties":
			if b, ok := v.(bool); ok && !b {
				dst[k] = false
			} else if _, set := dst[k]; !set {
				dst[k] = v
			}
		case "nullable":
			if b, _ := v.(bool); b {
				dst[k] = true
			}
		default:
			dst[k] = v
		}
	}
	return nil
}

// validate checks value against schema: the subset of JSON Schema that
// zulip.yaml uses (type, properties, required, additionalProperties,
// items, oneOf, anyOf, allOf, enum, nullable, and $ref into components).
// A schema marked x-zulite-not-transcribed accepts anything.
func (s *openapiSpec) validate(schema map[string]any, value any, path string) []schemaViolation {
	flat, err := s.flatten(schema)
	if err != nil {
		return []schemaViolation{{path, "schema error: " + err.Error()}}
	}
	if flat["x-zulite-not-transcribed"] == true {
		return nil
	}
	if value == nil {
		if flat["nullable"] == true || isAnySchema(flat) {
			return nil
		}
		return []schemaViolation{{path, "null, but the schema is not nullable"}}
	}
	if alts, ok := flat["oneOf"].([]any); ok {
		if v := s.alternatives(alts, value, path); v != nil {
			return v
		}
	}
	if alts, ok := flat["anyOf"].([]any); ok {
		if v := s.alternatives(alts, value, path); v != nil {
			return v
		}
	}
	if enum, ok := flat["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return openapiEqual(e, value) }) {
		return []schemaViolation{{path, fmt.Sprintf("%s is not one of %s", jsonText(value), jsonText(enum))}}
	}
	typ, _ := flat["type"].(string)
	if typ == "" && (flat["properties"] != nil || flat["additionalProperties"] != nil || flat["required"] != nil) {
		if _, isObject := value.(map[string]any); isObject {
			typ = "object"
		}
	}
	if typ != "" && !hasJSONType(value, typ) {
		return []schemaViolation{{path, fmt.Sprintf("is %s %s, want %s", jsonTypeOf(value), jsonText(value), typ)}}
	}
	var out []schemaViolation
	switch v := value.(type) {
	case map[string]any:
		out = append(out, s.validateObject(flat, v, path)...)
	case []any:
		if items, ok := flat["items"].(map[string]any); ok {
			for i, item := range v {
				out = append(out, s.validate(items, item, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return out
}

func (s *openapiSpec) validateObject(flat map[string]any, obj map[string]any, path string) []schemaViolation {
	var out []schemaViolation
	props, _ := flat["properties"].(map[string]any)
	req, _ := flat["required"].([]any)
	for _, r := range req {
		name := r.(string)
		if _, ok := obj[name]; !ok {
			out = append(out, schemaViolation{path + "." + name, "missing required key"})
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		child := path + "." + k
		if p, ok := props[k].(map[string]any); ok {
			out = append(out, s.validate(p, obj[k], child)...)
			continue
		}
		switch extra := flat["additionalProperties"].(type) {
		case bool:
			if !extra {
				out = append(out, schemaViolation{child, "unexpected key (additionalProperties: false)"})
			}
		case map[string]any:
			out = append(out, s.validate(extra, obj[k], child)...)
		}
	}
	return out
}

// alternatives checks oneOf or anyOf: at least one alternative must
// match. zulip.yaml uses oneOf for lists of overlapping examples (its
// common 400 errors InvalidApiKeyError and UserNotAuthorizedError are both
// plain CodedErrors), so "exactly one" cannot hold there and oneOf is read
// as anyOf. It returns nil when the value passes. When none matches, it
// reports the violations of the closest alternative. An alternative
// that was not transcribed makes the check unknowable, so it passes.
func (s *openapiSpec) alternatives(alts []any, value any, path string) []schemaViolation {
	var best []schemaViolation
	matches := 0
	for _, a := range alts {
		am, _ := a.(map[string]any)
		if flat, err := s.flatten(am); err == nil && flat["x-zulite-not-transcribed"] == true {
			return nil
		}
		v := s.validate(am, value, path)
		if len(v) == 0 {
			matches++
		} else if best == nil || len(v) < len(best) {
			best = v
		}
	}
	if matches == 0 {
		return append([]schemaViolation{{path, fmt.Sprintf("matches none of the %d alternatives; the closest says:", len(alts))}}, best...)
	}
	return nil
}

func isAnySchema(flat map[string]any) bool {
	for k := range flat {
		switch k {
		case "type", "enum", "properties", "required", "items", "oneOf", "anyOf", "additionalProperties":
			return false
		}
	}
	return true
}

func hasJSONType(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(n.String(), 10, 64)
		return err == nil
	}
	return false
}

func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		if hasJSONType(v, "integer") {
			return "an integer"
		}
		return "a number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

func openapiEqual(a, b any) bool {
	if an, ok := a.(float64); ok { // enums decoded without UseNumber
		if bn, ok := b.(json.Number); ok {
			f, err := bn.Float64()
			return err == nil && f == an
		}
	}
	return jsonText(a) == jsonText(b)
}

// decodeJSON decodes with numbers kept as json.Number, so that 1 and 1.5
// can be told apart.
func decodeNumbers(raw string) (any, error) {
	d := json.NewDecoder(strings.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// operation finds the operation documenting method and a concrete API
// path (without /api/v1): literal segments must be equal, and a path
// parameter whose schema is an integer takes only digits, so that
// /users/12 is /users/{user_id} and /users/a@b.c is /users/{email}.
// Among several matches, the one with the most literal segments wins.
func (s *openapiSpec) operation(method, apiPath string) (template string, op map[string]any) {
	paths, _ := s.doc["paths"].(map[string]any)
	segs := strings.Split(strings.Trim(apiPath, "/"), "/")
	bestLiterals := -1
	for tmpl, item := range paths {
		im, _ := item.(map[string]any)
		o, ok := im[strings.ToLower(method)].(map[string]any)
		if !ok {
			continue
		}
		tsegs := strings.Split(strings.Trim(tmpl, "/"), "/")
		if len(tsegs) != len(segs) {
			continue
		}
		literals, fits := 0, true
		for i, ts := range tsegs {
			if strings.HasPrefix(ts, "{") {
				if s.pathParamType(im, o, strings.Trim(ts, "{}")) == "integer" && !isDigits(segs[i]) {
					fits = false
				}
				continue
			}
			if ts != segs[i] {
				fits = false
			}
			literals++
		}
		if fits && literals > bestLiterals {
			template, op, bestLiterals = tmpl, o, literals
		}
	}
	return template, op
}

func (s *openapiSpec) pathParamType(item, op map[string]any, name string) string {
	for _, list := range []any{item["parameters"], op["parameters"]} {
		params, _ := list.([]any)
		for _, p := range params {
			pm, err := s.resolve(p.(map[string]any))
			if err != nil || pm["name"] != name || pm["in"] != "path" {
				continue
			}
			schema, _ := pm["schema"].(map[string]any)
			typ, _ := schema["type"].(string)
			return typ
		}
	}
	return ""
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// responseSchema is the documented schema of op's answer with this status.
func (s *openapiSpec) responseSchema(op map[string]any, status int) map[string]any {
	responses, _ := op["responses"].(map[string]any)
	resp, ok := responses[strconv.Itoa(status)].(map[string]any)
	if !ok {
		return nil
	}
	resp, err := s.resolve(resp)
	if err != nil {
		return nil
	}
	content, _ := resp["content"].(map[string]any)
	js, _ := content["application/json"].(map[string]any)
	schema, _ := js["schema"].(map[string]any)
	return schema
}

// checkAnswer validates one answer: a success against the operation's
// documented response for that status; an error against the operation's
// documented error for that status or the errors common to every endpoint
// (Zulip's /rest-error-handling), and, for a status neither documents,
// against CodedError, the shape of every Zulip error.
func (s *openapiSpec) checkAnswer(op map[string]any, status int, body any) []schemaViolation {
	if status < 400 {
		schema := s.responseSchema(op, status)
		if schema == nil {
			return []schemaViolation{{"$", fmt.Sprintf("no documented %d response", status)}}
		}
		return s.validate(schema, body, "$")
	}
	var candidates []map[string]any
	if schema := s.responseSchema(op, status); schema != nil {
		candidates = append(candidates, schema)
	}
	_, common := s.operation("POST", "/rest-error-handling")
	if common != nil {
		if schema := s.responseSchema(common, status); schema != nil {
			candidates = append(candidates, schema)
		}
	}
	if len(candidates) == 0 {
		candidates = append(candidates, map[string]any{"$ref": "#/components/schemas/CodedError"})
	}
	var first []schemaViolation
	for i, c := range candidates {
		v := s.validate(c, body, "$")
		if len(v) == 0 {
			return nil
		}
		if i == 0 {
			first = v
		}
	}
	return first
}

// contractCase is one request of the contract test.
type contractCase struct {
	wantError bool
	method    string
	path      string
	params    url.Values
	creds     *account
}

func TestOpenAPI_EveryRouteMatchesZulipsContract(t *testing.T) {
	spec := loadOpenAPISpec(t)
	e := newTestEnv(t)
	e.server.events.pollTimeout = 10 * time.Millisecond
	if err := e.st.setPassword("alice@example.com", hashOf("alice-password")); err != nil {
		t.Fatal(err)
	}
	msgID := e.sendAs(t, e.bob, e.general, "lunch")
	queue := e.registerQueue(t, &e.alice, nil).str("queue_id")
	// A queue that takes archived channels hears their archiving as a
	// stream update (issue 33).
	archivedQueue := e.registerQueue(t, &e.alice, url.Values{"client_capabilities": {`{"archived_channels":true}`}, "event_types": {`["stream"]`}}).str("queue_id")
	// Events of each kind zulite emits, in alice's queue for GET /events.
	e.sendAs(t, e.bob, e.general, "lunch")
	for _, change := range []url.Values{
		{"op": {"add"}, "flag": {"starred"}},
		{"op": {"add"}, "flag": {"read"}},
		{"op": {"remove"}, "flag": {"read"}}, // carries message_details
	} {
		change["messages"] = []string{jsonIDs(msgID)}
		wantAPISuccess(t, e.request(t, "POST", "/api/v1/messages/flags", change, &e.alice))
	}
	reactions := "/api/v1/messages/" + strconv.FormatUint(msgID, 10) + "/reactions"
	wantAPISuccess(t, e.request(t, "POST", reactions, url.Values{"emoji_name": {"tada"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "DELETE", reactions, url.Values{"emoji_name": {"tada"}}, &e.alice))
	// Issue 32's polls: a poll's message event carries its widget; a vote
	// is a submessage event.
	poll := strconv.FormatUint(e.sendToGeneral(t, &e.bob, "/poll Lunch?\npizza\nsushi"), 10)
	vote := url.Values{"message_id": {poll}, "msg_type": {"widget"}, "content": {`{"type":"vote","key":"canned,0","vote":1}`}}
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/submessage", vote, &e.alice))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"contract-events"}]`}}, &e.alice))
	wantAPISuccess(t, e.request(t, "DELETE", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["contract-events"]`}}, &e.alice))
	// Issue 32's muted users and alert words: their events, and a message
	// with has_alert_word among its flags.
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["lunch"]`}}, &e.alice))
	e.sendAs(t, e.bob, e.general, "lunch, anyone?")
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/muted_users/"+strconv.FormatUint(e.owner.ID, 10), nil, &e.alice))
	// Issue 16's events: presence (legacy: the queue has no capability),
	// direct typing, a status, an avatar.
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/presence", url.Values{"status": {"active"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/typing", url.Values{"op": {"start"}, "to": {jsonIDs(e.alice.ID)}}, &e.bob))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/users/me/status", url.Values{"status_text": {"busy"}, "emoji_name": {"zulip"}}, &e.bob))
	wantAPISuccess(t, e.request(t, "DELETE", "/api/v1/users/me/avatar", nil, &e.bob))
	// Issue 32's topics: muted_topics and user_topic events.
	wantAPISuccess(t, e.setTopicPolicy(t, &e.alice, e.general, "contract", policyMuted))
	// Issue 32's drafts and saved snippets: drafts and saved_snippets
	// events, each op, in alice's queue.
	draftIDs := e.postDrafts(t, &e.alice, `[{"type":"private","to":[`+strconv.FormatUint(e.bob.ID, 10)+`],"topic":"","content":"draft"}]`)
	draftPath := "/api/v1/drafts/" + strconv.FormatUint(draftIDs[0], 10)
	aDraft := url.Values{"draft": {`{"type":"stream","to":[` + strconv.FormatUint(e.general.ID, 10) + `],"topic":"t","content":"draft"}`}}
	wantAPISuccess(t, e.request(t, "PATCH", draftPath, aDraft, &e.alice))
	wantAPISuccess(t, e.request(t, "DELETE", draftPath, nil, &e.alice))
	draftPath = "/api/v1/drafts/" + strconv.FormatUint(e.postDrafts(t, &e.alice, `[`+aDraft["draft"][0]+`]`)[0], 10)
	snippet := e.request(t, "POST", "/api/v1/saved_snippets", url.Values{"title": {"hi"}, "content": {"hello"}}, &e.alice)
	snippetPath := "/api/v1/saved_snippets/" + strconv.FormatUint(uint64(snippet.body["saved_snippet_id"].(float64)), 10)
	wantAPISuccess(t, e.request(t, "PATCH", snippetPath, url.Values{"title": {"hey"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "DELETE", snippetPath, nil, &e.alice))
	snippet = e.request(t, "POST", "/api/v1/saved_snippets", url.Values{"title": {"hi"}, "content": {"hello"}}, &e.alice)
	snippetPath = "/api/v1/saved_snippets/" + strconv.FormatUint(uint64(snippet.body["saved_snippet_id"].(float64)), 10)
	// Issue 32's scheduled messages: scheduled_messages events, each op
	// (the remove twice: deleted, and sent by the scheduler).
	soon := strconv.FormatInt(e.st.now().Unix()+3600, 10)
	aSchedule := url.Values{"type": {"stream"}, "to": {strconv.FormatUint(e.general.ID, 10)}, "topic": {"t"}, "content": {"later"}, "scheduled_delivery_timestamp": {soon}}
	schedPath := scheduledPath(e.scheduleAt(t, &e.alice, aSchedule))
	wantAPISuccess(t, e.request(t, "PATCH", schedPath, url.Values{"content": {"later still"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "DELETE", schedPath, nil, &e.alice))
	e.putScheduled(t, e.alice, storedScheduled{Type: "private", Recipients: []uint64{e.bob.ID}, Content: "now", Rendered: "<p>now</p>", Due: e.st.now().Unix()})
	e.server.scheduler.deliverDue()
	schedPath = scheduledPath(e.scheduleAt(t, &e.alice, aSchedule))
	// Reminders: reminders add and remove events (the remove twice:
	// deleted, and sent by the scheduler).
	remindOf := e.sendAs(t, e.alice, e.general, "remind me")
	aReminder := url.Values{"message_id": {strconv.FormatUint(remindOf, 10)}, "scheduled_delivery_timestamp": {soon}}
	reminderAt := reminderPath(e.remindAt(t, &e.alice, remindOf, e.st.now().Unix()+3600, "a note"))
	wantAPISuccess(t, e.request(t, "DELETE", reminderAt, nil, &e.alice))
	e.putScheduled(t, e.alice, storedScheduled{Type: "private", Recipients: []uint64{e.alice.ID}, Content: "now", Rendered: "<p>now</p>", Due: e.st.now().Unix(), Target: 1})
	e.server.scheduler.deliverDue()
	reminderAt = reminderPath(e.remindAt(t, &e.alice, remindOf, e.st.now().Unix()+3600, ""))
	// Issue 15's edits, moves and deletes: update_message and
	// delete_message events (legacy and bulk shapes).
	edited := e.sendAs(t, e.alice, e.general, "lunch")
	editPath := "/api/v1/messages/" + strconv.FormatUint(edited, 10)
	wantAPISuccess(t, e.request(t, "PATCH", editPath, url.Values{"content": {"lunch at **noon**"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "PATCH", editPath, url.Values{"topic": {"dinner"}, "propagate_mode": {"change_later"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "DELETE", "/api/v1/messages/"+strconv.FormatUint(e.sendAs(t, e.alice, e.general, "lunch"), 10), nil, &e.alice))
	// A direct message's edit and delete: their events name no channel (dm_edit_test.go).
	direct := msgPath(e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "lunch"))
	wantAPISuccess(t, e.request(t, "PATCH", direct, url.Values{"content": {"lunch at **noon**"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "DELETE", direct, nil, &e.alice))
	direct = msgPath(e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "lunch"))
	// Issue 32's edit typing: typing_edit_message events, channel and direct.
	wantAPISuccess(t, e.request(t, "POST", msgPath(e.sendAs(t, e.bob, e.general, "lunch"))+"/typing", url.Values{"op": {"start"}}, &e.bob))
	u, key := mustCreateUser(t, e.st, "leaving@example.com", roleMember, false)
	leaving := account{u, key}
	editTyping := msgPath(e.sendDM(t, &e.alice, jsonIDs(e.bob.ID), "lunch")) + "/typing"
	wantAPISuccess(t, e.request(t, "POST", editTyping, url.Values{"op": {"stop"}}, &e.alice))
	doomed := "/api/v1/messages/" + strconv.FormatUint(e.sendAs(t, e.alice, e.general, "lunch"), 10)
	upload := e.mustUpload(t, &e.alice, "contract.txt", "contract")
	// Issue 32's attachments: add (each upload) and remove events.
	e.mustUpload(t, &e.alice, "gone.txt", "gone")
	attachments, _, err := e.st.ownAttachments(e.alice.user)
	if err != nil || len(attachments) < 2 {
		t.Fatalf("alice's attachments: %v %v", attachments, err)
	}
	wantAPISuccess(t, e.request(t, "DELETE", "/api/v1/attachments/"+strconv.FormatUint(attachments[len(attachments)-1].ID, 10), nil, &e.alice))
	e.sendText(t, e.alice, e.general, "[linked]("+e.mustUpload(t, &e.alice, "linked.txt", "linked")+")")
	e.mustUpload(t, &e.alice, "doomed.txt", "doomed")
	attachments, _, _ = e.st.ownAttachments(e.alice.user)
	doomedUpload := "/api/v1/attachments/" + strconv.FormatUint(attachments[len(attachments)-1].ID, 10)
	// Issue 33's user groups: user_group events of each op in alice's
	// queue (which, without include_deactivated_groups, hears a
	// deactivation as a remove).
	contractGroup := e.createGroup(t, &e.alice, "contract-group", []uint64{e.bob.ID}, url.Values{"subgroups": {"[3]"}})
	groupPath := "/api/v1/user_groups/" + strconv.Itoa(contractGroup)
	wantAPISuccess(t, e.request(t, "PATCH", groupPath, url.Values{"name": {"contract group"}, "can_mention_group": {`{"new":{"direct_members":[` + strconv.FormatUint(e.alice.ID, 10) + `],"direct_subgroups":[2]}}`}}, &e.alice))
	wantAPISuccess(t, e.request(t, "POST", groupPath+"/members", url.Values{"add": {jsonIDs(e.alice.ID)}, "delete": {jsonIDs(e.bob.ID)}}, &e.alice))
	wantAPISuccess(t, e.request(t, "POST", groupPath+"/subgroups", url.Values{"delete": {"[3]"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/user_groups/"+strconv.Itoa(e.createGroup(t, &e.alice, "contract-gone", nil, nil))+"/deactivate", nil, &e.alice))
	inUse := "/api/v1/user_groups/" + strconv.Itoa(e.createGroup(t, &e.alice, "contract-in-use", nil, nil))
	wantAPISuccess(t, e.request(t, "POST", groupPath+"/subgroups", url.Values{"add": {"[" + strings.TrimPrefix(inUse, "/api/v1/user_groups/") + "]"}}, &e.alice))
	doomedGroup := "/api/v1/user_groups/" + strconv.Itoa(e.createGroup(t, &e.alice, "contract-doomed", nil, nil))
	// Issue 33's custom emoji, linkifiers and playgrounds: realm_emoji and
	// realm_playgrounds events in alice's queue, realm_linkifiers in a
	// queue of hers that declared linkifier_url_template.
	linkifierQueue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["realm_linkifiers","realm_emoji","realm_playgrounds"]`},
		"client_capabilities": withLinkifierCapability["client_capabilities"]}).str("queue_id")
	wantAPISuccess(t, e.uploadEmoji(t, &e.alice, "contract_one", uploadPart{"f", "c.png", "image/png", pngOf(t, 8, 8)}))
	wantAPISuccess(t, e.uploadEmoji(t, &e.alice, "contract_two", uploadPart{"f", "d.png", "image/png", pngOf(t, 9, 9)}))
	firstLinkifier := strconv.FormatUint(mustID(t, e.request(t, "POST", "/api/v1/realm/filters", url.Values{"pattern": {`#(?P<id>\d+)`}, "url_template": {"https://x.test/{id}"}}, &e.admin)), 10)
	secondLinkifier := strconv.FormatUint(mustID(t, e.request(t, "POST", "/api/v1/realm/filters", url.Values{"pattern": {`!(?P<id>\d+)`}, "url_template": {"https://y.test/{id}"}}, &e.admin)), 10)
	playground := strconv.FormatUint(mustID(t, e.request(t, "POST", "/api/v1/realm/playgrounds", url.Values{"name": {"Py"}, "pygments_language": {"python"}, "url_template": {"https://py.test/?c={code}"}}, &e.admin)), 10)
	// Issue 33's people: realm_user updates (role, full_name,
	// custom_profile_field, is_active), user_group add and remove_members,
	// custom_profile_fields and realm_user_settings_defaults, in alice's queue.
	promotedUser, _ := mustCreateUser(t, e.st, "promoted@example.com", roleMember, false)
	leaverUser, _ := mustCreateUser(t, e.st, "leaver@example.com", roleMember, false)
	promoted, leaver := "/api/v1/users/"+strconv.FormatUint(promotedUser.ID, 10), "/api/v1/users/"+strconv.FormatUint(leaverUser.ID, 10)
	wantAPISuccess(t, e.request(t, "PATCH", promoted, url.Values{"role": {"200"}, "full_name": {"Promoted"}}, &e.admin))
	addField := func(name string) string {
		r := e.request(t, "POST", "/api/v1/realm/profile_fields", url.Values{"name": {name}, "field_type": {"1"}}, &e.admin)
		wantAPISuccess(t, r)
		return strconv.Itoa(int(r.body["id"].(float64)))
	}
	field, doomedField := addField("Phone"), addField("Doomed")
	fieldValue := url.Values{"data": {`[{"id":` + field + `,"value":"**555**"}]`}}
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/users/me/profile_data", fieldValue, &e.alice))
	wantAPISuccess(t, e.request(t, "DELETE", "/api/v1/users/me/profile_data", url.Values{"data": {"[" + field + "]"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "PATCH", "/api/v1/realm/user_settings_defaults", url.Values{"enter_sends": {"true"}, "emojiset": {"text"}}, &e.admin))
	wantAPISuccess(t, e.request(t, "DELETE", leaver, nil, &e.admin))
	wantAPISuccess(t, e.request(t, "POST", leaver+"/reactivate", nil, &e.admin))
	wantAPISuccess(t, e.request(t, "DELETE", leaver, nil, &e.admin))
	fieldsPath := "/api/v1/realm/profile_fields"
	general, secret := strconv.FormatUint(e.general.ID, 10), strconv.FormatUint(e.secret.ID, 10)
	alice := strconv.FormatUint(e.alice.ID, 10)
	// Issue 33's invitations: alice's e-mail invitations (her queue hears
	// invites_changed) and an administrator's links.
	e.server.mailer = offlineMailer()
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"one@example.com, two@example.com"}, "stream_ids": {"[" + general + "]"}}, &e.alice))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites/multiuse", url.Values{"invite_expires_in_minutes": {"null"}}, &e.admin))
	pending := listInvitesOf(t, e, &e.admin)
	if len(pending) != 3 {
		t.Fatalf("invitations: %v", pending)
	}
	inviteOne, inviteTwo := "/api/v1/invites/"+strconv.Itoa(int(pending[0]["id"].(float64))), "/api/v1/invites/"+strconv.Itoa(int(pending[1]["id"].(float64)))
	inviteLink := "/api/v1/invites/multiuse/" + strconv.Itoa(int(pending[2]["id"].(float64)))
	narrow := `[{"operator":"channel","operand":"general"}]`
	// Issue 33's channel administration: stream update, default_streams,
	// delete_message (a topic's deletion), and an archived channel's
	// deletion and its unarchiving's creation, in alice's queue.
	generalPath := "/api/v1/streams/" + general
	wantAPISuccess(t, e.request(t, "PATCH", generalPath, url.Values{"description": {"Contract"}, "can_send_message_group": {`{"new":{"direct_members":[` + alice + `],"direct_subgroups":[2]}}`}}, &e.admin))
	wantAPISuccess(t, e.request(t, "PATCH", generalPath, url.Values{"can_send_message_group": {`{"new":6}`}}, &e.admin))
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/default_streams", url.Values{"stream_id": {general}}, &e.admin))
	e.sendAs(t, e.bob, e.general, "contract-doomed")
	wantAPISuccess(t, e.request(t, "POST", generalPath+"/delete_topic", url.Values{"topic_name": {"contract-doomed"}}, &e.admin))
	archived := mustCreateChannel(t, e.st, "contract-archived", false)
	archivedPath := "/api/v1/streams/" + strconv.FormatUint(archived.ID, 10)
	wantAPISuccess(t, e.request(t, "DELETE", archivedPath, nil, &e.admin))
	wantAPISuccess(t, e.request(t, "PATCH", archivedPath, url.Values{"is_archived": {"false"}}, &e.admin))
	// Issue 33's data exports: one made, its realm_export events in an
	// administrator's queue, downloaded and deleted.
	exportQueue := e.registerQueue(t, &e.admin, url.Values{"event_types": {`["realm_export"]`}}).str("queue_id")
	exportID := mustID(t, e.request(t, "POST", "/api/v1/export/realm", nil, &e.admin))
	exportURL, _ := e.waitForExport(t, exportID)["export_url"].(string)
	if rec := e.fetch(t, &e.admin, strings.TrimPrefix(exportURL, "http://zulite.test")); rec.Code != http.StatusOK {
		t.Fatalf("the export's tarball: got %d", rec.Code)
	}
	exportItem := "/api/v1/export/realm/" + strconv.FormatUint(exportID, 10)
	cases := []contractCase{
		{false, "GET", "/api/v1/export/realm", nil, &e.admin},
		{true, "GET", "/api/v1/export/realm", nil, &e.alice},
		{true, "POST", "/api/v1/export/realm", url.Values{"export_type": {"2"}}, &e.admin},
		{false, "GET", "/api/v1/export/realm/consents", nil, &e.admin},
		{true, "GET", "/api/v1/export/realm/consents", nil, &e.bob},
		{false, "DELETE", exportItem, nil, &e.admin},
		{true, "DELETE", exportItem, nil, &e.admin}, // already deleted
		{false, "GET", "/api/v1/events", url.Values{"queue_id": {exportQueue}, "last_event_id": {"-1"}, "dont_block": {"true"}}, &e.admin},
		{false, "POST", "/api/v1/export/realm", nil, &e.admin}, // made in the background: waited for below
		{false, "PATCH", generalPath, url.Values{"description": {"Contract again"}}, &e.admin},
		{false, "DELETE", "/api/v1/streams/" + strconv.FormatUint(mustCreateChannel(t, e.st, "contract-gone", false).ID, 10), nil, &e.admin},
		{false, "POST", "/api/v1/default_streams", url.Values{"stream_id": {general}}, &e.admin},
		{true, "PATCH", generalPath, url.Values{"new_name": {"mine"}}, &e.alice},
		{true, "PATCH", "/api/v1/streams/" + secret, url.Values{"new_name": {"mine"}}, &e.bob},
		{true, "DELETE", archivedPath, nil, &e.alice},
		{false, "POST", generalPath + "/delete_topic", url.Values{"topic_name": {"nothing here"}}, &e.admin},
		{true, "POST", "/api/v1/streams/" + secret + "/delete_topic", url.Values{"topic_name": {"plans"}}, &e.bob},
		{false, "GET", generalPath + "/members", nil, &e.bob},
		{true, "GET", "/api/v1/streams/" + secret + "/members", nil, &e.bob},
		{true, "POST", "/api/v1/default_streams", url.Values{"stream_id": {"9999"}}, &e.admin},
		{false, "DELETE", "/api/v1/default_streams", url.Values{"stream_id": {general}}, &e.admin},
		{true, "DELETE", "/api/v1/default_streams", url.Values{"stream_id": {secret}}, &e.bob},
		{false, "GET", "/api/v1/server_settings", nil, nil},
		{false, "GET", "/api/v1/user_groups", url.Values{"include_deactivated_groups": {"true"}}, &e.alice},
		{true, "GET", "/api/v1/user_groups", nil, &e.bot},
		{false, "POST", "/api/v1/user_groups/create", url.Values{"name": {"contract-new"}, "members": {"[]"}, "description": {""}, "can_join_group": {"5"}}, &e.alice},
		{true, "POST", "/api/v1/user_groups/create", url.Values{"members": {"[]"}, "description": {""}}, &e.alice},
		{false, "PATCH", groupPath, url.Values{"description": {"changed"}}, &e.alice},
		{true, "PATCH", groupPath, nil, &e.alice},
		{false, "POST", doomedGroup + "/deactivate", nil, &e.alice},
		{true, "POST", doomedGroup + "/deactivate", nil, &e.alice},
		{true, "POST", inUse + "/deactivate", nil, &e.alice},
		{false, "GET", groupPath + "/members", url.Values{"direct_member_only": {"false"}}, &e.bob},
		{true, "GET", "/api/v1/user_groups/999/members", nil, &e.bob},
		{false, "POST", groupPath + "/members", url.Values{"add": {jsonIDs(e.bob.ID)}}, &e.alice},
		{true, "POST", groupPath + "/members", url.Values{"add": {jsonIDs(e.bob.ID)}}, &e.alice},
		{false, "GET", groupPath + "/members/" + strconv.FormatUint(e.bob.ID, 10), nil, &e.bob},
		{true, "GET", groupPath + "/members/999999", nil, &e.bob},
		{false, "GET", groupPath + "/subgroups", nil, &e.bob},
		{true, "GET", "/api/v1/user_groups/999/subgroups", nil, &e.bob},
		{false, "POST", groupPath + "/subgroups", url.Values{"add": {"[3]"}}, &e.alice},
		{true, "POST", groupPath + "/subgroups", url.Values{"add": {"[3]"}}, &e.alice},
		{false, "POST", "/api/v1/fetch_api_key", url.Values{"username": {e.alice.Email}, "password": {"alice-password"}}, nil},
		{true, "POST", "/api/v1/fetch_api_key", url.Values{"username": {e.alice.Email}}, nil},
		{true, "POST", "/api/v1/fetch_api_key", url.Values{"username": {e.alice.Email}, "password": {"wrong"}}, nil},
		{false, "POST", "/api/v1/register", url.Values{
			"apply_markdown": {"true"}, "client_gravatar": {"false"}, "slim_presence": {"true"},
			"client_capabilities": {`{"notification_settings_null":true,"bulk_message_deletion":true,"user_avatar_url_field_optional":true,"stream_typing_notifications":true,"user_settings_object":true,"include_deactivated_groups":true,"empty_topic_name":true}`},
		}, &e.alice},
		{false, "POST", "/api/v1/register", url.Values{"event_types": {`["message"]`}}, &e.bot},
		{true, "POST", "/api/v1/register", url.Values{"event_types": {`"message"`}}, &e.alice},
		{true, "POST", "/api/v1/register", nil, nil},
		{false, "GET", "/api/v1/events", url.Values{"queue_id": {queue}, "last_event_id": {"-1"}, "dont_block": {"true"}}, &e.alice},
		{false, "GET", "/api/v1/events", url.Values{"queue_id": {archivedQueue}, "last_event_id": {"-1"}, "dont_block": {"true"}}, &e.alice},
		{true, "GET", "/api/v1/events", url.Values{"queue_id": {"no-such-queue"}, "last_event_id": {"-1"}, "dont_block": {"true"}}, &e.alice},
		{true, "GET", "/api/v1/events", url.Values{"last_event_id": {"-1"}}, &e.alice},
		{false, "DELETE", "/api/v1/events", url.Values{"queue_id": {queue}}, &e.alice},
		{true, "DELETE", "/api/v1/events", url.Values{"queue_id": {queue}}, &e.alice},
		{false, "GET", "/api/v1/users", nil, &e.alice},
		{true, "GET", "/api/v1/users", url.Values{"client_gravatar": {"maybe"}}, &e.alice},
		{false, "POST", "/api/v1/users", url.Values{"email": {"new@example.com"}, "password": {"new-password-1"}, "full_name": {"New"}}, &e.owner},
		{true, "POST", "/api/v1/users", url.Values{"email": {"new2@example.com"}, "full_name": {"New"}}, &e.alice},
		{true, "POST", "/api/v1/users", url.Values{"full_name": {"New"}}, &e.owner},
		{false, "GET", "/api/v1/users/me", nil, &e.alice},
		{true, "GET", "/api/v1/users/me", nil, nil},
		{false, "POST", "/api/v1/users/me/apns_device_token", url.Values{"token": {"c0ffee"}, "appid": {"org.zulip.Zulip"}}, &e.alice},
		{true, "POST", "/api/v1/users/me/apns_device_token", nil, &e.alice},
		{false, "DELETE", "/api/v1/users/me/apns_device_token", url.Values{"token": {"c0ffee"}}, &e.alice},
		{true, "DELETE", "/api/v1/users/me/apns_device_token", url.Values{"token": {"c0ffee"}}, &e.alice},
		{false, "POST", "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"fcm-token"}}, &e.alice},
		{true, "POST", "/api/v1/users/me/android_gcm_reg_id", nil, &e.alice},
		{false, "DELETE", "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"fcm-token"}}, &e.alice},
		{true, "DELETE", "/api/v1/users/me/android_gcm_reg_id", url.Values{"token": {"fcm-token"}}, &e.alice},
		{false, "GET", "/api/v1/users/me/subscriptions", url.Values{"include_subscribers": {"true"}}, &e.alice},
		{true, "GET", "/api/v1/users/me/subscriptions", url.Values{"include_subscribers": {"1"}}, &e.alice},
		{false, "POST", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"general"},{"name":"brand-new"}]`}}, &e.bob},
		{true, "POST", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":""}]`}}, &e.bob},
		{false, "DELETE", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`["brand-new"]`}}, &e.bob},
		{true, "DELETE", "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`"general"`}}, &e.bob},
		{false, "PATCH", "/api/v1/users/me/subscriptions", url.Values{"add": {`[{"name":"patched","color":"#abcdef"}]`}, "delete": {`["brand-new"]`}}, &e.bob},
		{true, "PATCH", "/api/v1/users/me/subscriptions", url.Values{"add": {`[]`}}, &e.bob},
		{false, "GET", "/api/v1/streams", nil, &e.alice},
		{true, "GET", "/api/v1/streams", url.Values{"include_public": {"maybe"}}, &e.alice},
		{false, "GET", "/api/v1/get_stream_id", url.Values{"stream": {"general"}}, &e.alice},
		{true, "GET", "/api/v1/get_stream_id", url.Values{"stream": {"nonexistent"}}, &e.alice},
		{false, "POST", "/api/v1/messages", url.Values{"type": {"channel"}, "to": {general}, "topic": {"lunch"}, "content": {"hi"}}, &e.alice},
		{false, "POST", "/api/v1/messages", url.Values{"type": {"channel"}, "to": {general}, "topic": {"started here"}, "content": {"hi"}}, &e.bob}, // automatic_new_visibility_policy
		{true, "POST", "/api/v1/messages", url.Values{"type": {"channel"}, "to": {"no-such-channel"}, "topic": {"lunch"}, "content": {"hi"}}, &e.alice},
		{true, "POST", "/api/v1/messages", url.Values{"type": {"channel"}, "to": {"999999"}, "topic": {"lunch"}, "content": {"hi"}}, &e.alice},
		{false, "GET", "/api/v1/messages", url.Values{"narrow": {narrow}, "anchor": {"newest"}, "num_before": {"10"}, "num_after": {"0"}, "allow_empty_topic_name": {"true"}, "client_gravatar": {"false"}, "apply_markdown": {"true"}}, &e.alice},
		{true, "GET", "/api/v1/messages", url.Values{"anchor": {"sideways"}, "num_before": {"1"}, "num_after": {"0"}}, &e.alice},
		{false, "POST", "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(msgID)}, "op": {"add"}, "flag": {"starred"}}, &e.alice},
		{true, "POST", "/api/v1/messages/flags", url.Values{"messages": {jsonIDs(msgID)}, "op": {"toggle"}, "flag": {"starred"}}, &e.alice},
		{false, "POST", "/api/v1/messages/flags/narrow", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"1000"}, "narrow": {narrow}, "op": {"add"}, "flag": {"read"}}, &e.alice},
		{true, "POST", "/api/v1/messages/flags/narrow", url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"1000"}, "op": {"add"}, "flag": {"read"}}, &e.alice},
		{false, "POST", reactions, url.Values{"emoji_name": {"octopus"}}, &e.alice},
		{true, "POST", reactions, url.Values{"emoji_name": {"octopus"}}, &e.alice},
		{false, "DELETE", reactions, url.Values{"emoji_name": {"octopus"}}, &e.alice},
		{true, "DELETE", reactions, url.Values{"emoji_name": {"octopus"}}, &e.alice},
		{false, "POST", "/api/v1/submessage", vote, &e.bob},
		{true, "POST", "/api/v1/submessage", url.Values{"message_id": {poll}, "msg_type": {"widget"}, "content": {`{"type":"bogus"}`}}, &e.alice},
		{true, "POST", "/api/v1/submessage", url.Values{"message_id": {poll}, "msg_type": {"widget"}}, &e.alice},
		{false, "PATCH", editPath, url.Values{"content": {"lunch at one"}, "send_notification_to_old_thread": {"false"}}, &e.alice},
		{true, "PATCH", editPath, nil, &e.alice},
		{false, "GET", editPath, url.Values{"apply_markdown": {"false"}}, &e.alice},
		{true, "GET", "/api/v1/messages/999999", nil, &e.alice},
		{false, "GET", editPath + "/history", nil, &e.alice},
		{true, "GET", "/api/v1/messages/999999/history", nil, &e.alice},
		{true, "PATCH", direct, url.Values{"topic": {"lunch"}}, &e.alice},
		{false, "PATCH", direct, url.Values{"content": {"lunch at two"}}, &e.alice},
		{false, "DELETE", direct, nil, &e.alice},
		{false, "DELETE", doomed, nil, &e.alice},
		{true, "DELETE", doomed, nil, &e.alice},
		{false, "POST", "/api/v1/mark_stream_as_read", url.Values{"stream_id": {secret}}, &e.alice},
		{true, "POST", "/api/v1/mark_stream_as_read", url.Values{"stream_id": {"999999"}}, &e.alice},
		{false, "POST", "/api/v1/mark_topic_as_read", url.Values{"stream_id": {general}, "topic_name": {"lunch"}}, &e.alice},
		{true, "POST", "/api/v1/mark_topic_as_read", url.Values{"stream_id": {general}}, &e.alice},
		{false, "POST", "/api/v1/mark_all_as_read", nil, &e.alice},
		{true, "POST", "/api/v1/mark_all_as_read", nil, nil},
		// Routes other issue-12 helpers add; they count once served.
		{false, "GET", "/api/v1/streams/" + general, nil, &e.alice},
		{true, "GET", "/api/v1/streams/999999", nil, &e.alice},
		{false, "GET", "/api/v1/users/" + alice, nil, &e.bob},
		{true, "GET", "/api/v1/users/999999", nil, &e.bob},
		{false, "GET", "/api/v1/users/" + e.alice.Email, nil, &e.bob},
		{true, "GET", "/api/v1/users/nobody@example.com", nil, &e.bob},
		{false, "GET", "/api/v1/users/me/" + general + "/topics", url.Values{"allow_empty_topic_name": {"true"}}, &e.alice},
		{true, "GET", "/api/v1/users/me/999999/topics", nil, &e.alice},
		{false, "POST", "/api/v1/users/me/subscriptions/properties", url.Values{"subscription_data": {`[{"stream_id":` + general + `,"property":"pin_to_top","value":true}]`}}, &e.alice},
		{true, "POST", "/api/v1/users/me/subscriptions/properties", url.Values{"subscription_data": {`[{"stream_id":999999,"property":"pin_to_top","value":true}]`}}, &e.alice},
		{false, "PATCH", "/api/v1/settings", url.Values{"enter_sends": {"true"}}, &e.alice},
		{true, "PATCH", "/api/v1/settings", url.Values{"enter_sends": {"maybe"}}, &e.alice},
		{false, "PATCH", "/api/v1/settings", url.Values{"automatically_follow_topics_policy": {"1"}, "automatically_follow_topics_where_mentioned": {"false"}}, &e.alice},
		{true, "PATCH", "/api/v1/settings", url.Values{"automatically_unmute_topics_in_muted_streams_policy": {"0"}}, &e.alice},
		{true, "PATCH", "/api/v1/settings", url.Values{"old_password": {"guess"}, "new_password": {"long-new-password"}}, &e.alice},
		{true, "PATCH", "/api/v1/settings", url.Values{"full_name": {"Alice @ home"}}, &e.alice},
		{false, "PATCH", "/api/v1/settings", url.Values{"full_name": {e.alice.FullName}}, &e.alice},
		{false, "GET", "/api/v1/users/" + alice + "/subscriptions/" + general, nil, &e.bob},
		{true, "GET", "/api/v1/users/999999/subscriptions/" + general, nil, &e.bob},
		{false, "POST", "/api/v1/users/me/presence", url.Values{"status": {"active"}, "slim_presence": {"true"}}, &e.alice},
		{false, "POST", "/api/v1/users/me/presence", url.Values{"status": {"idle"}}, &e.alice},
		{true, "POST", "/api/v1/users/me/presence", url.Values{"status": {"away"}}, &e.alice},
		{false, "GET", "/api/v1/realm/presence", nil, &e.alice},
		{true, "GET", "/api/v1/realm/presence", nil, nil},
		{false, "GET", "/api/v1/users/" + alice + "/presence", nil, &e.bob},
		{true, "GET", "/api/v1/users/999999/presence", nil, &e.bob},
		{false, "POST", "/api/v1/typing", url.Values{"op": {"start"}, "to": {jsonIDs(e.bob.ID)}}, &e.alice},
		{true, "POST", "/api/v1/typing", url.Values{"op": {"go"}, "to": {jsonIDs(e.bob.ID)}}, &e.alice},
		{false, "POST", "/api/v1/users/me/status", url.Values{"status_text": {"busy"}}, &e.alice},
		{true, "POST", "/api/v1/users/me/status", nil, &e.alice},
		{false, "GET", "/api/v1/users/" + strconv.FormatUint(e.bob.ID, 10) + "/status", nil, &e.alice},
		{true, "GET", "/api/v1/users/999999/status", nil, &e.alice},
		{false, "GET", "/api/v1/users/me/alert_words", nil, &e.bob},
		{true, "GET", "/api/v1/users/me/alert_words", nil, nil},
		{false, "POST", "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["coffee", "tea"]`}}, &e.bob},
		{true, "POST", "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["` + strings.Repeat("x", 101) + `"]`}}, &e.bob},
		{false, "DELETE", "/api/v1/users/me/alert_words", url.Values{"alert_words": {`["tea"]`}}, &e.bob},
		{true, "DELETE", "/api/v1/users/me/alert_words", nil, &e.bob},
		{false, "POST", "/api/v1/users/me/muted_users/" + alice, nil, &e.bob},
		{true, "POST", "/api/v1/users/me/muted_users/" + alice, nil, &e.bob},
		{false, "DELETE", "/api/v1/users/me/muted_users/" + alice, nil, &e.bob},
		{true, "DELETE", "/api/v1/users/me/muted_users/" + alice, nil, &e.bob},
		{true, "POST", "/api/v1/user_uploads", nil, &e.alice},
		{false, "GET", "/api/v1" + upload, nil, &e.alice},
		{true, "GET", "/api/v1" + upload, nil, &e.bob},
		{false, "POST", "/api/v1/user_topics", url.Values{"stream_id": {general}, "topic": {"lunch"}, "visibility_policy": {"3"}}, &e.alice},
		{true, "POST", "/api/v1/user_topics", url.Values{"stream_id": {"999999"}, "topic": {"lunch"}, "visibility_policy": {"3"}}, &e.alice},
		{false, "PATCH", "/api/v1/users/me/subscriptions/muted_topics", url.Values{"stream": {"general"}, "topic": {"lunch"}, "op": {"add"}}, &e.alice},
		{true, "PATCH", "/api/v1/users/me/subscriptions/muted_topics", url.Values{"stream_id": {general}, "stream": {"general"}, "topic": {"lunch"}, "op": {"add"}}, &e.alice},
		{false, "GET", "/api/v1/drafts", nil, &e.alice},
		{false, "POST", "/api/v1/drafts", url.Values{"drafts": {"[" + aDraft["draft"][0] + "]"}}, &e.alice},
		{true, "POST", "/api/v1/drafts", url.Values{"drafts": {`[{"type":"stream","to":[],"topic":"","content":"c"}]`}}, &e.alice},
		{false, "PATCH", draftPath, aDraft, &e.alice},
		{true, "PATCH", "/api/v1/drafts/999999", aDraft, &e.alice},
		{true, "DELETE", "/api/v1/drafts/999999", nil, &e.alice},
		{false, "DELETE", draftPath, nil, &e.alice},
		{true, "GET", "/api/v1/drafts", nil, nil},
		{false, "GET", "/api/v1/saved_snippets", nil, &e.alice},
		{true, "GET", "/api/v1/saved_snippets", nil, nil},
		{false, "POST", "/api/v1/saved_snippets", url.Values{"title": {"t"}, "content": {"c"}}, &e.alice},
		{true, "POST", "/api/v1/saved_snippets", url.Values{"title": {" "}, "content": {"c"}}, &e.alice},
		{false, "PATCH", snippetPath, url.Values{"content": {"new"}}, &e.alice},
		{true, "PATCH", "/api/v1/saved_snippets/999999", url.Values{"content": {"new"}}, &e.alice},
		{false, "DELETE", snippetPath, nil, &e.alice},
		{true, "DELETE", snippetPath, nil, &e.alice},
		{false, "GET", "/api/v1/scheduled_messages", nil, &e.alice},
		{true, "GET", "/api/v1/scheduled_messages", nil, nil},
		{false, "POST", "/api/v1/scheduled_messages", aSchedule, &e.alice},
		{true, "POST", "/api/v1/scheduled_messages", url.Values{"type": {"stream"}, "to": {"999999"}, "topic": {"t"}, "content": {"c"}, "scheduled_delivery_timestamp": {soon}}, &e.alice},
		{true, "POST", "/api/v1/scheduled_messages", url.Values{"type": {"direct"}, "to": {"[999999]"}, "content": {"c"}, "scheduled_delivery_timestamp": {soon}}, &e.alice},
		{false, "PATCH", schedPath, url.Values{"topic": {"new"}}, &e.alice},
		{true, "PATCH", schedPath, nil, &e.alice},
		{true, "PATCH", schedPath, url.Values{"to": {"999999"}}, &e.alice},
		{true, "PATCH", "/api/v1/scheduled_messages/999999", url.Values{"topic": {"new"}}, &e.alice},
		{false, "DELETE", schedPath, nil, &e.alice},
		{true, "DELETE", schedPath, nil, &e.alice},
		{false, "GET", "/api/v1/reminders", nil, &e.alice},
		{true, "GET", "/api/v1/reminders", nil, nil},
		{false, "POST", "/api/v1/reminders", aReminder, &e.alice},
		{true, "POST", "/api/v1/reminders", url.Values{"message_id": {"999999"}, "scheduled_delivery_timestamp": {soon}}, &e.alice},
		{true, "POST", "/api/v1/reminders", url.Values{"message_id": aReminder["message_id"], "scheduled_delivery_timestamp": {"1"}}, &e.alice},
		{false, "DELETE", reminderAt, nil, &e.alice},
		{true, "DELETE", reminderAt, nil, &e.alice},
		{false, "POST", "/api/v1/messages/render", url.Values{"content": {"**lunch** :)"}}, &e.alice},
		{true, "POST", "/api/v1/messages/render", nil, &e.alice},
		{false, "GET", "/api/v1/messages/matches_narrow", url.Values{"msg_ids": {jsonIDs(msgID, 999999)}, "narrow": {`[["search","lunch"]]`}}, &e.alice},
		{true, "GET", "/api/v1/messages/matches_narrow", url.Values{"msg_ids": {jsonIDs(msgID)}}, &e.alice},
		{false, "GET", "/api/v1/messages/" + strconv.FormatUint(msgID, 10) + "/read_receipts", nil, &e.alice},
		{true, "GET", "/api/v1/messages/999999/read_receipts", nil, &e.alice},
		{false, "POST", "/api/v1/mobile_push/test_notification", nil, &e.alice},
		{true, "POST", "/api/v1/mobile_push/test_notification", url.Values{"token": {"nope"}}, &e.alice},
		{false, "GET", "/api/v1/attachments", nil, &e.alice},
		{true, "GET", "/api/v1/attachments", nil, nil},
		{true, "DELETE", "/api/v1/attachments/999999", nil, &e.alice},
		{true, "DELETE", doomedUpload, nil, nil},
		{false, "DELETE", doomedUpload, nil, &e.alice},
		{false, "PATCH", promoted, url.Values{"full_name": {"Promoted Again"}, "profile_data": {`[{"id":` + field + `,"value":"9"}]`}}, &e.admin},
		{true, "PATCH", promoted, url.Values{"role": {"100"}}, &e.admin},
		{true, "PATCH", promoted, url.Values{"role": {"150"}}, &e.admin},
		{false, "DELETE", promoted, url.Values{"deactivation_notification_comment": {"Thanks"}}, &e.admin},
		{true, "DELETE", "/api/v1/users/" + strconv.FormatUint(e.owner.ID, 10), nil, &e.owner},
		{false, "POST", leaver + "/reactivate", nil, &e.admin},
		{true, "POST", leaver + "/reactivate", nil, &e.bob},
		{false, "GET", fieldsPath, nil, &e.alice},
		{true, "GET", fieldsPath, nil, nil},
		{false, "POST", fieldsPath, url.Values{"name": {"Editor"}, "field_type": {"3"}, "field_data": {`{"v":{"text":"Vim","order":"1"}}`}}, &e.admin},
		{true, "POST", fieldsPath, url.Values{"name": {"Phone"}, "field_type": {"1"}}, &e.admin},
		{true, "POST", fieldsPath, url.Values{"name": {"Phone"}, "field_type": {"1"}}, &e.alice},
		{false, "PATCH", fieldsPath, url.Values{"order": {"[9,8,7,6,5,4,3,2,1]"}}, &e.admin},
		{true, "PATCH", fieldsPath, url.Values{"order": {"[]"}}, &e.admin},
		{false, "PATCH", fieldsPath + "/" + field, url.Values{"hint": {"Your number"}}, &e.admin},
		{true, "PATCH", fieldsPath + "/999999", url.Values{"hint": {"Your number"}}, &e.admin},
		{false, "DELETE", fieldsPath + "/" + doomedField, nil, &e.admin},
		{true, "DELETE", fieldsPath + "/" + doomedField, nil, &e.admin},
		{false, "PATCH", "/api/v1/users/me/profile_data", fieldValue, &e.alice},
		{true, "PATCH", "/api/v1/users/me/profile_data", url.Values{"data": {`[{"id":999999,"value":"x"}]`}}, &e.alice},
		{false, "DELETE", "/api/v1/users/me/profile_data", url.Values{"data": {"[" + field + "]"}}, &e.alice},
		{true, "DELETE", "/api/v1/users/me/profile_data", url.Values{"data": {"[999999]"}}, &e.alice},
		{false, "PATCH", "/api/v1/realm/user_settings_defaults", url.Values{"enter_sends": {"false"}, "not_a_setting": {"1"}}, &e.admin},
		{true, "PATCH", "/api/v1/realm/user_settings_defaults", url.Values{"color_scheme": {"9"}}, &e.admin},
		{true, "DELETE", "/api/v1/users/me", nil, &e.owner}, // the only owner
		{false, "DELETE", "/api/v1/users/me", nil, &leaving},
		{false, "POST", editTyping, url.Values{"op": {"start"}}, &e.alice},
		{true, "POST", editTyping, url.Values{"op": {"start"}}, &e.bob},
		{false, "GET", "/api/v1/events", url.Values{"queue_id": {linkifierQueue}, "last_event_id": {"-1"}, "dont_block": {"true"}}, &e.alice},
		{false, "GET", "/api/v1/realm/emoji", nil, &e.bob},
		{true, "GET", "/api/v1/realm/emoji", nil, nil},
		{false, "DELETE", "/api/v1/realm/emoji/contract_two", nil, &e.alice},
		{true, "DELETE", "/api/v1/realm/emoji/contract_two", nil, &e.alice}, // 404: no longer active
		{false, "GET", "/api/v1/realm/linkifiers", nil, &e.bob},
		{true, "GET", "/api/v1/realm/linkifiers", nil, nil},
		{false, "PATCH", "/api/v1/realm/linkifiers", url.Values{"ordered_linkifier_ids": {"[" + secondLinkifier + "," + firstLinkifier + "]"}}, &e.admin},
		{true, "PATCH", "/api/v1/realm/linkifiers", url.Values{"ordered_linkifier_ids": {"[" + firstLinkifier + "]"}}, &e.admin},
		{false, "PATCH", "/api/v1/realm/filters/" + firstLinkifier, url.Values{"pattern": {`#(?P<id>[0-9]+)`}, "url_template": {"https://z.test/{id}"}}, &e.admin},
		{true, "PATCH", "/api/v1/realm/filters/999", url.Values{"pattern": {`#(?P<id>[0-9]+)`}, "url_template": {"https://z.test/{id}"}}, &e.admin},
		{false, "DELETE", "/api/v1/realm/filters/" + secondLinkifier, nil, &e.admin},
		{true, "DELETE", "/api/v1/realm/filters/" + secondLinkifier, nil, &e.admin},
		{false, "POST", "/api/v1/realm/filters", url.Values{"pattern": {`@(?P<id>\d+)`}, "url_template": {"https://w.test/{id}"}}, &e.admin},
		{true, "POST", "/api/v1/realm/filters", url.Values{"pattern": {`&(?P<id>\d+)`}, "url_template": {"https://w.test/{id}"}}, &e.alice},
		{false, "POST", "/api/v1/realm/playgrounds", url.Values{"name": {"Go"}, "pygments_language": {"go"}, "url_template": {"https://go.test/?c={code}"}}, &e.admin},
		{true, "POST", "/api/v1/realm/playgrounds", url.Values{"name": {"Go"}, "pygments_language": {"go"}, "url_template": {"https://go.test/?c={code}"}}, &e.bob},
		{false, "DELETE", "/api/v1/realm/playgrounds/" + playground, nil, &e.admin},
		{true, "DELETE", "/api/v1/realm/playgrounds/" + playground, nil, &e.admin},
		{false, "GET", "/api/v1/invites", nil, &e.admin},
		{false, "GET", "/api/v1/invites", nil, &e.alice},
		{true, "GET", "/api/v1/invites", nil, &e.bot},
		{false, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"three@example.com"}, "stream_ids": {"[]"}, "include_realm_default_subscriptions": {"true"}}, &e.alice},
		{true, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"four@example.com, bob@example.com"}, "stream_ids": {"[]"}}, &e.alice},
		{true, "POST", "/api/v1/invites", url.Values{"invitee_emails": {""}, "stream_ids": {"[]"}}, &e.alice},
		{false, "POST", "/api/v1/invites/multiuse", url.Values{"stream_ids": {"[" + general + "]"}, "invite_as": {"600"}}, &e.admin},
		{true, "POST", "/api/v1/invites/multiuse", nil, &e.alice},
		{false, "POST", inviteOne + "/resend", nil, &e.alice},
		{true, "POST", "/api/v1/invites/999999/resend", nil, &e.alice},
		{false, "DELETE", inviteTwo, nil, &e.admin},
		{true, "DELETE", "/api/v1/invites/999999", nil, &e.admin},
		{false, "DELETE", inviteLink, nil, &e.admin},
		{true, "DELETE", inviteLink, nil, &e.admin},
	}

	// A mux with every served pattern tells which route a request reaches.
	// A pattern that conflicts with one before it (the server serves
	// such routes through one pattern that tells them apart) gets a mux
	// of its own, asked when the shared one finds nothing.
	routes := e.server.routeList()
	patterns := http.NewServeMux()
	var apart []*http.ServeMux
	for _, r := range routes {
		func() {
			defer func() {
				if recover() != nil {
					own := http.NewServeMux()
					own.HandleFunc(r, func(http.ResponseWriter, *http.Request) {})
					apart = append(apart, own)
				}
			}()
			patterns.HandleFunc(r, func(http.ResponseWriter, *http.Request) {})
		}()
	}
	type found struct{ route, status, path, problem string }
	var seen []found
	covered := map[string][2]bool{} // route → {success seen, error seen}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, c.path, nil)
		_, route := patterns.Handler(req)
		for _, own := range apart {
			if route == "" || route == "/" {
				_, route = own.Handler(req)
			}
		}
		if route == "" || route == "/" {
			t.Logf("%s %s: not served yet, not checked", c.method, c.path)
			continue
		}
		r := e.request(t, c.method, c.path, c.params, c.creds)
		if isErr := r.status >= 400; isErr != c.wantError {
			t.Errorf("%s %s: got %d %s, want %s", c.method, c.path, r.status, r.raw, map[bool]string{true: "an error", false: "a success"}[c.wantError])
		}
		cov := covered[route]
		cov[boolIndex(r.status >= 400)] = true
		covered[route] = cov
		apiPath, ok := strings.CutPrefix(c.path, "/api/v1")
		if !ok {
			continue
		}
		_, op := spec.operation(c.method, apiPath)
		if op == nil {
			seen = append(seen, found{route, strconv.Itoa(r.status), "(operation)", "no operation in the extract for " + c.method + " " + apiPath})
			continue
		}
		body, err := decodeNumbers(r.raw)
		if err != nil {
			t.Errorf("%s %s: body is not JSON: %v", c.method, c.path, err)
			continue
		}
		for _, v := range spec.checkAnswer(op, r.status, body) {
			seen = append(seen, found{route, strconv.Itoa(r.status), v.path, v.problem})
		}
	}
	// A multipart upload, which the cases above cannot send.
	if r := e.upload(t, &e.alice, "/api/v1/user_uploads", uploadPart{"file", "a.txt", "text/plain", "a"}); r.status != 200 {
		t.Errorf("POST /api/v1/user_uploads: got %d %s", r.status, r.raw)
	} else if body, err := decodeNumbers(r.raw); err == nil {
		_, op := spec.operation("POST", "/user_uploads")
		for _, v := range spec.checkAnswer(op, r.status, body) {
			seen = append(seen, found{"POST /api/v1/user_uploads", "200", v.path, v.problem})
		}
		covered["POST /api/v1/user_uploads"] = [2]bool{true, covered["POST /api/v1/user_uploads"][1]}
	}
	// A custom emoji's upload, multipart too: a success, and a refusal.
	for i, r := range []response{e.uploadEmoji(t, &e.alice, "contract_three", uploadPart{"f", "e.png", "image/png", pngOf(t, 8, 8)}), e.uploadEmoji(t, &e.alice, "contract_four")} {
		if (r.status >= 400) != (i == 1) {
			t.Errorf("POST /api/v1/realm/emoji/{emoji_name} %d: got %d %s", i, r.status, r.raw)
		} else if body, err := decodeNumbers(r.raw); err == nil {
			_, op := spec.operation("POST", "/realm/emoji/contract")
			for _, v := range spec.checkAnswer(op, r.status, body) {
				seen = append(seen, found{"POST /api/v1/realm/emoji/{emoji_name}", strconv.Itoa(r.status), v.path, v.problem})
			}
			cov := covered["POST /api/v1/realm/emoji/{emoji_name}"]
			cov[i] = true
			covered["POST /api/v1/realm/emoji/{emoji_name}"] = cov
		}
	}
	// The last case's export, made in the background, ends before the
	// test's directory goes.
	if all := mustRealmExports(t, e.st); len(all) > 0 {
		e.waitForExport(t, all[len(all)-1].ID)
	}
	for _, route := range routes {
		if _, ok := zuliteOnlyRoutes[route]; ok {
			continue
		}
		cov := covered[route]
		if !cov[0] {
			t.Errorf("route %s: no success answer checked: add a case", route)
		}
		if _, ok := noErrorAnswer[route]; !ok && !cov[1] {
			t.Errorf("route %s: no error answer checked: add a case", route)
		}
	}

	// Report: every violation fails, listed; zulipYAMLDrift is no
	// violation. (A gap known and accepted was a skip once; a skip reads
	// as a pass in CI, so a gap is a failure until it is fixed.)
	indices := regexp.MustCompile(`\[\d+\]`)
	drift := map[string]bool{}
	for _, d := range zulipYAMLDrift {
		drift[d.route+" "+d.path] = false
	}
	for _, f := range seen {
		key := f.route + " " + indices.ReplaceAllString(f.path, "[]")
		if _, ok := drift[key]; ok {
			drift[key] = true
			continue
		}
		t.Errorf("contract violation: %s → %s at %s: %s", f.route, f.status, f.path, f.problem)
	}
	for _, d := range zulipYAMLDrift {
		if !drift[d.route+" "+d.path] {
			t.Errorf("zulipYAMLDrift entry {%q, %q} is no longer seen: remove it", d.route, d.path)
		}
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestOpenAPI_ValidatorCatchesEachKindOfViolation(t *testing.T) {
	spec := &openapiSpec{}
	if err := json.Unmarshal([]byte(`{"components":{"schemas":{
		"Base": {"type":"object","properties":{"id":{"type":"integer"},"creator_id":{"type":"integer"}}},
		"Thing": {"allOf":[{"$ref":"#/components/schemas/Base"},{"additionalProperties":false,"required":["id","kind"],
			"properties":{"id":{},"creator_id":{"nullable":true},"kind":{"type":"string","enum":["a","b"]},
			"tags":{"type":"array","items":{"type":"string"}},
			"value":{"oneOf":[{"type":"integer"},{"type":"object","additionalProperties":false,"properties":{"direct_members":{"type":"array","items":{"type":"integer"}}}}]}}}]}
	}}}`), &spec.doc); err != nil {
		t.Fatal(err)
	}
	thing := map[string]any{"$ref": "#/components/schemas/Thing"}
	for _, c := range []struct {
		rule, body string
		want       []schemaViolation
	}{
		{"a conforming value passes", `{"id":1,"kind":"a","creator_id":null,"tags":["x"],"value":{"direct_members":[2]}}`, nil},
		{"a missing required key", `{"kind":"a"}`, []schemaViolation{{"$.id", "missing required key"}}},
		{"a wrong type", `{"id":"1","kind":"a"}`, []schemaViolation{{"$.id", `is a string "1", want integer`}}},
		{"a number is not an integer", `{"id":1.5,"kind":"a"}`, []schemaViolation{{"$.id", "is a number 1.5, want integer"}}},
		{"an unexpected key under additionalProperties false", `{"id":1,"kind":"a","extra":true}`, []schemaViolation{{"$.extra", "unexpected key (additionalProperties: false)"}}},
		{"a bad enum value", `{"id":1,"kind":"c"}`, []schemaViolation{{"$.kind", `"c" is not one of ["a","b"]`}}},
		{"null where the schema is not nullable", `{"id":null,"kind":"a"}`, []schemaViolation{{"$.id", "null, but the schema is not nullable"}}},
		{"a wrong array item", `{"id":1,"kind":"a","tags":[1]}`, []schemaViolation{{"$.tags[0]", "is an integer 1, want string"}}},
		{"no oneOf alternative", `{"id":1,"kind":"a","value":"x"}`, []schemaViolation{
			{"$.value", "matches none of the 2 alternatives; the closest says:"}, {"$.value", `is a string "x", want integer`}}},
	} {
		body, err := decodeNumbers(c.body)
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.validate(thing, body, "$"); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.rule, got, c.want)
		}
	}
}

func TestOpenAPI_ExtractIsWellFormed(t *testing.T) {
	spec := loadOpenAPISpec(t)
	raw, _ := json.Marshal(spec.doc)
	for _, m := range regexp.MustCompile(`"\$ref":"([^"]+)"`).FindAllSubmatch(raw, -1) {
		if spec.ref(string(m[1])) == nil {
			t.Errorf("unresolved %s", m[1])
		}
	}
	if !bytes.Contains(raw, []byte(`"JsonSuccessBase"`)) {
		t.Errorf("the extract lacks JsonSuccessBase")
	}
	// A stub accepts anything, so a stubbed component would hide violations.
	if stubs, _ := spec.doc["x-zulite-stubbed-schemas"].([]any); len(stubs) > 0 {
		t.Errorf("components referenced but not transcribed: %v", stubs)
	}
}
