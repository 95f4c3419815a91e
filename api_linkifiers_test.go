package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

// rendered is POST /messages/render's HTML of content, as a.
func (e *testEnv) rendered(t *testing.T, a *account, content string) string {
	t.Helper()
	r := e.request(t, http.MethodPost, "/api/v1/messages/render", url.Values{"content": {content}}, a)
	wantAPISuccess(t, r)
	return r.str("rendered")
}

func (e *testEnv) linkifierList(t *testing.T) string {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/realm/linkifiers", nil, &e.bob)
	wantAPISuccess(t, r)
	b, _ := json.Marshal(r.body["linkifiers"])
	return string(b)
}

var withLinkifierCapability = url.Values{"client_capabilities": {`{"linkifier_url_template":true}`}}

func TestLinkifiers_AddRenderReorderUpdateRemoveAsZulip(t *testing.T) {
	e := newTestEnv(t)
	params := url.Values{"event_types": {`["realm_linkifiers","realm_filters"]`}, "client_capabilities": withLinkifierCapability["client_capabilities"]}
	modern := e.registerQueue(t, &e.bob, params).str("queue_id")
	legacy := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["realm_linkifiers","realm_filters"]`}}).str("queue_id")

	issues := mustID(t, e.request(t, http.MethodPost, "/api/v1/realm/filters",
		url.Values{"pattern": {` #(?P<id>[0-9]+) `}, "url_template": {"https://github.com/zulip/zulip/issues/{id}"}}, &e.admin))
	if got, want := e.linkifierList(t), `[{"id":`+strconv.FormatUint(issues, 10)+`,"pattern":"#(?P\u003cid\u003e[0-9]+)","url_template":"https://github.com/zulip/zulip/issues/{id}"}]`; got != want {
		t.Fatalf("GET /realm/linkifiers: got %s, want %s", got, want)
	}
	got := e.pollNow(t, &e.bob, modern, -1)
	if len(got) != 1 || got[0]["type"] != "realm_linkifiers" || len(got[0]["realm_linkifiers"].([]any)) != 1 {
		t.Fatalf("the modern client's events: got %v", got)
	}
	if got := e.pollNow(t, &e.alice, legacy, -1); len(got) != 0 {
		t.Errorf("a client without linkifier_url_template: got %v, want no event", got)
	}
	reg := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["realm_linkifiers","realm_filters"]`}, "client_capabilities": withLinkifierCapability["client_capabilities"]})
	if l, _ := reg.body["realm_linkifiers"].([]any); len(l) != 1 || len(reg.body["realm_filters"].([]any)) != 0 {
		t.Errorf("register with the capability: realm_linkifiers %v, realm_filters %v", reg.body["realm_linkifiers"], reg.body["realm_filters"])
	}
	reg = e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["realm_linkifiers"]`}})
	if l, _ := reg.body["realm_linkifiers"].([]any); l == nil || len(l) != 0 {
		t.Errorf("register without the capability: realm_linkifiers %v, want []", reg.body["realm_linkifiers"])
	}

	// Applied after a space, an opening delimiter or the start, and not
	// before a letter or digit (prepare_linkifier_pattern); after ** not
	// at all, as in Zulip, where strong (priority 35) comes later.
	if got, want := e.rendered(t, &e.bob, "#1 see #123, (#45) a#6 #7x **#8**"),
		`<p><a href="https://github.com/zulip/zulip/issues/1">#1</a> see <a href="https://github.com/zulip/zulip/issues/123">#123</a>, `+
			`(<a href="https://github.com/zulip/zulip/issues/45">#45</a>) a#6 #7x <strong>#8</strong></p>`; got != want {
		t.Errorf("rendered: got %s, want %s", got, want)
	}
	// Sent messages are linkified as they are stored.
	m, _ := e.st.messageByIDForTest(e.sendText(t, e.bob, e.general, "#9"))
	if want := `<p><a href="https://github.com/zulip/zulip/issues/9">#9</a></p>`; m.Rendered != want {
		t.Errorf("a sent message: got %s, want %s", m.Rendered, want)
	}
	// Overlapping linkifiers: the first in the order wins; reordering
	// changes which.
	other := mustID(t, e.request(t, http.MethodPost, "/api/v1/realm/filters",
		url.Values{"pattern": {`#1(?P<rest>[0-9]+)`}, "url_template": {"https://other.test/{rest}"}}, &e.admin))
	if got := e.rendered(t, &e.bob, "#123"); got != `<p><a href="https://github.com/zulip/zulip/issues/123">#123</a></p>` {
		t.Errorf("before the reorder: got %s", got)
	}
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/realm/linkifiers",
		url.Values{"ordered_linkifier_ids": {"[" + strconv.FormatUint(other, 10) + "," + strconv.FormatUint(issues, 10) + "]"}}, &e.admin))
	if got := e.rendered(t, &e.bob, "#123"); got != `<p><a href="https://other.test/23">#123</a></p>` {
		t.Errorf("after the reorder: got %s", got)
	}
	// RFC 6570 expansion: reserved characters encoded unless {+var}.
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/realm/filters/"+strconv.FormatUint(other, 10),
		url.Values{"pattern": {`T:(?P<q>[a-z/]+)`}, "url_template": {"https://t.test/{q}?r={+q}{&q}"}}, &e.admin))
	if got := e.rendered(t, &e.bob, "T:a/b"); got != `<p><a href="https://t.test/a%2Fb?r=a/b&amp;q=a%2Fb">T:a/b</a></p>` {
		t.Errorf("the updated linkifier: got %s", got)
	}
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/realm/filters/"+strconv.FormatUint(issues, 10), nil, &e.admin))
	if got := e.rendered(t, &e.bob, "#123"); got != "<p>#123</p>" {
		t.Errorf("after the removal: got %s", got)
	}
	if got := e.pollNow(t, &e.bob, modern, 0); len(got) != 4 {
		t.Errorf("the modern client's events after add, add, reorder, update, remove: %d beyond the first, want 4", len(got))
	}
}

func TestLinkifiers_RefusalsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	id := strconv.FormatUint(mustID(t, e.request(t, http.MethodPost, "/api/v1/realm/filters",
		url.Values{"pattern": {`#(?P<id>[0-9]+)`}, "url_template": {"https://x.test/{id}"}}, &e.admin)), 10)
	before := e.linkifierList(t)
	add := func(pattern, template string) url.Values {
		return url.Values{"pattern": {pattern}, "url_template": {template}}
	}
	for _, c := range []struct {
		rule, method, path string
		params             url.Values
		who                *account
		code, msg, errors  string
	}{
		{"a member may not add", "POST", "/api/v1/realm/filters", add(`a(?P<id>\d)`, "https://a.test/{id}"), &e.alice, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator", ""},
		{"a member may not reorder", "PATCH", "/api/v1/realm/linkifiers", url.Values{"ordered_linkifier_ids": {"[" + id + "]"}}, &e.alice, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator", ""},
		{"a bad regular expression", "POST", "/api/v1/realm/filters", add(`#(?P<id>[0-9]+`, "https://a.test/{id}"), &e.admin, "BAD_REQUEST",
			"Bad regular expression: missing ): #(?P<id>[0-9]+", `{"__all__":["Bad regular expression: missing ): #(?P\u003cid\u003e[0-9]+"]}`},
		{"an invalid URL template", "POST", "/api/v1/realm/filters", add(`a(?P<id>\d)`, "https://a.test/{id"), &e.admin, "BAD_REQUEST",
			"Invalid URL template.", `{"url_template":["Invalid URL template."]}`},
		{"a template variable no group names", "POST", "/api/v1/realm/filters", add(`a(?P<id>\d)`, "https://a.test/{id}/{zz}"), &e.admin, "BAD_REQUEST",
			"Group 'zz' in URL template is not present in linkifier pattern.", `{"__all__":["Group 'zz' in URL template is not present in linkifier pattern."]}`},
		{"a group no template variable names", "POST", "/api/v1/realm/filters", add(`a(?P<id>\d)(?P<b>x)`, "https://a.test/{id}"), &e.admin, "BAD_REQUEST",
			"Group 'b' in linkifier pattern is not present in URL template.", `{"__all__":["Group 'b' in linkifier pattern is not present in URL template."]}`},
		{"a pattern in use", "POST", "/api/v1/realm/filters", add(`#(?P<id>[0-9]+)`, "https://b.test/{id}"), &e.admin, "BAD_REQUEST",
			"Realm filter with this Realm and Pattern already exists.", `{"__all__":["Realm filter with this Realm and Pattern already exists."]}`},
		{"updating an unknown linkifier", "PATCH", "/api/v1/realm/filters/999", add(`b(?P<id>\d)`, "https://b.test/{id}"), &e.admin, "BAD_REQUEST", "Linkifier not found.", ""},
		{"removing an unknown linkifier", "DELETE", "/api/v1/realm/filters/999", nil, &e.admin, "BAD_REQUEST", "Linkifier not found.", ""},
		{"a reorder naming one twice", "PATCH", "/api/v1/realm/linkifiers", url.Values{"ordered_linkifier_ids": {"[" + id + "," + id + "]"}}, &e.admin, "BAD_REQUEST",
			"The ordered list must not contain duplicated linkifiers", ""},
		{"a reorder leaving one out", "PATCH", "/api/v1/realm/linkifiers", url.Values{"ordered_linkifier_ids": {"[]"}}, &e.admin, "BAD_REQUEST",
			"The ordered list must enumerate all existing linkifiers exactly once", ""},
	} {
		r := e.request(t, c.method, c.path, c.params, c.who)
		wantAPIError(t, r, 400, c.code, c.msg)
		if c.errors != "" {
			if b, _ := json.Marshal(r.body["errors"]); string(b) != c.errors {
				t.Errorf("%s: errors %s, want %s", c.rule, b, c.errors)
			}
		}
		if after := e.linkifierList(t); after != before {
			t.Errorf("%s: the linkifiers changed from %s to %s", c.rule, before, after)
		}
	}
}

func TestPlaygrounds_AddListRemoveAsZulip(t *testing.T) {
	e := newTestEnv(t)
	q := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["realm_playgrounds"]`}}).str("queue_id")
	id := mustID(t, e.request(t, http.MethodPost, "/api/v1/realm/playgrounds",
		url.Values{"name": {" Python playground "}, "pygments_language": {"Python"}, "url_template": {"https://python.example.com?code={code}"}}, &e.admin))
	want := `[{"id":` + strconv.FormatUint(id, 10) + `,"name":"Python playground","pygments_language":"Python","url_template":"https://python.example.com?code={code}"}]`
	got := e.pollNow(t, &e.bob, q, -1)
	if b, _ := json.Marshal(got[0]["realm_playgrounds"]); len(got) != 1 || got[0]["type"] != "realm_playgrounds" || string(b) != want {
		t.Fatalf("the realm_playgrounds event: got %v", got)
	}
	list := func() string {
		reg := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["realm_playgrounds"]`}})
		b, _ := json.Marshal(reg.body["realm_playgrounds"])
		return string(b)
	}
	if got := list(); got != want {
		t.Fatalf("register's realm_playgrounds: got %s, want %s", got, want)
	}
	add := func(name, lang, template string) url.Values {
		return url.Values{"name": {name}, "pygments_language": {lang}, "url_template": {template}}
	}
	for _, c := range []struct {
		rule, method, path string
		params             url.Values
		who                *account
		code, msg          string
	}{
		{"a member may not add", "POST", "/api/v1/realm/playgrounds", add("Go", "go", "https://go.test/?c={code}"), &e.alice, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator"},
		{"a member may not remove", "DELETE", "/api/v1/realm/playgrounds/" + strconv.FormatUint(id, 10), nil, &e.alice, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator"},
		{"another variable than code", "POST", "/api/v1/realm/playgrounds", add("Go", "go", "https://go.test/?c={src}"), &e.admin, "BAD_REQUEST", `"code" should be the only variable present in the URL template`},
		{"an invalid URL template", "POST", "/api/v1/realm/playgrounds", add("Go", "go", "https://go.test/?c={code"), &e.admin, "BAD_REQUEST", "Invalid URL template."},
		{"odd characters in the language", "POST", "/api/v1/realm/playgrounds", add("Go", "go!", "https://go.test/?c={code}"), &e.admin, "BAD_REQUEST", "Invalid characters in pygments language"},
		{"a name too long", "POST", "/api/v1/realm/playgrounds", add(string(make([]byte, 61)), "go", "https://go.test/?c={code}"), &e.admin, "BAD_REQUEST", "Ensure this value has at most 60 characters (it has 61)."},
		{"the same name and language", "POST", "/api/v1/realm/playgrounds", add("Python playground", "Python", "https://p.test/?c={code}"), &e.admin, "BAD_REQUEST", "Realm playground with this Realm, Pygments language and Name already exists."},
		{"an unknown playground", "DELETE", "/api/v1/realm/playgrounds/999", nil, &e.admin, "BAD_REQUEST", "Invalid playground"},
	} {
		wantAPIError(t, e.request(t, c.method, c.path, c.params, c.who), 400, c.code, c.msg)
		if got := list(); got != want {
			t.Errorf("%s: the playgrounds changed to %s", c.rule, got)
		}
	}
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/realm/playgrounds/"+strconv.FormatUint(id, 10), nil, &e.admin))
	if got := list(); got != "[]" {
		t.Errorf("after the removal: got %s", got)
	}
}
