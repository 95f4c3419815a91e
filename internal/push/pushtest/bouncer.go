package pushtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// Bouncer is Zulip's push bouncer on loopback: zilencer's remotes
// routes server/register, push/register, push/unregister and
// push/notify. server/register checks the org id and key it is given
// and remembers them; every other route refuses basic authentication
// that is not theirs with 401 INVALID_ZULIP_SERVER. A request's Token
// is its route.
type Bouncer struct {
	recorder
	orgID, orgKey string
	deleteNext    []string // android tokens push/notify reports deleted, once
}

// NewBouncer starts a bouncer fake, closed when the test ends.
func NewBouncer(t *testing.T) *Bouncer {
	f := &Bouncer{recorder: newRecorder("the bouncer")}
	f.serveOn(t, httptest.NewServer(http.HandlerFunc(f.serve)))
	return f
}

// Calls are the requests to one route ("push/notify", ...).
func (f *Bouncer) Calls(route string) []Request {
	return f.Matching(func(r Request) bool { return r.Token == route })
}

// DeleteNext makes the next successful push/notify report the android
// tokens deleted.
func (f *Bouncer) DeleteNext(tokens ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleteNext = tokens
}

func (f *Bouncer) serve(w http.ResponseWriter, r *http.Request) {
	req := received(r)
	route, ok := strings.CutPrefix(r.URL.Path, "/api/v1/remotes/")
	req.Token, req.Body = route, map[string]any{}
	req.User, req.Pass, _ = r.BasicAuth()
	if route == "push/notify" {
		if r.Header.Get("Content-Type") != "application/json" {
			f.violate("push/notify Content-Type %q", r.Header.Get("Content-Type"))
		}
		json.Unmarshal(req.Raw, &req.Body)
	} else {
		req.Form, _ = url.ParseQuery(string(req.Raw))
		for k := range req.Form {
			req.Body[k] = req.Form.Get(k)
		}
	}
	f.mu.Lock()
	orgID, orgKey := f.orgID, f.orgKey
	f.mu.Unlock()
	refused := 0
	switch {
	case r.Method != http.MethodPost || !ok:
		f.violate("bouncer request %s %s", r.Method, r.URL.Path)
		refused = http.StatusNotFound
	case route == "server/register":
		id, key := req.Form.Get("zulip_org_id"), req.Form.Get("zulip_org_key")
		if len(id) != 36 || len(key) != 64 || req.Form.Get("hostname") == "" || req.Form.Get("contact_email") == "" {
			f.violate("server/register: %v", req.Form)
			refused = http.StatusBadRequest
			break
		}
		f.mu.Lock()
		f.orgID, f.orgKey = id, key
		f.mu.Unlock()
	case req.User != orgID || req.Pass != orgKey || orgID == "":
		f.violate("%s: basic auth %q is not the registered server's", route, req.User)
		refused = http.StatusUnauthorized
	case route == "push/register" || route == "push/unregister":
		kind := req.Form.Get("token_kind")
		if req.Form.Get("user_id") == "" || req.Form.Get("token") == "" || (kind != "1" && kind != "2") ||
			(route == "push/register" && kind == "1" && req.Form.Get("ios_app_id") == "") {
			f.violate("%s: %v", route, req.Form)
		}
	case route != "push/notify":
		f.violate("bouncer route %s", route)
		refused = http.StatusNotFound
	}
	w.Header().Set("Content-Type", "application/json")
	status, told := f.answer(req, refused)
	if told != nil {
		if told.retryAfter != "" {
			w.Header().Set("Retry-After", told.retryAfter)
		}
		w.WriteHeader(status)
		body := told.text
		if body == "" {
			body = `{"result":"success","msg":""}`
		}
		io.WriteString(w, body)
		return
	}
	switch {
	case status == http.StatusNotFound:
		http.NotFound(w, r)
	case status == http.StatusBadRequest:
		w.WriteHeader(status)
		io.WriteString(w, `{"result":"error","msg":"Invalid","code":"BAD_REQUEST"}`)
	case status == http.StatusUnauthorized:
		w.WriteHeader(status)
		io.WriteString(w, `{"result":"error","msg":"Zulip server auth failure","code":"INVALID_ZULIP_SERVER"}`)
	case status != http.StatusOK:
		w.WriteHeader(status)
		io.WriteString(w, `{"result":"error","msg":"Internal server error"}`)
	case route == "server/register":
		io.WriteString(w, `{"result":"success","msg":"","created":true}`)
	case route == "push/notify":
		f.mu.Lock()
		deleted := f.deleteNext
		f.deleteNext = nil
		f.mu.Unlock()
		android, _ := req.Body["android_devices"].([]any)
		apple, _ := req.Body["apple_devices"].([]any)
		answer, _ := json.Marshal(map[string]any{"result": "success", "msg": "",
			"total_android_devices": len(android), "total_apple_devices": len(apple),
			"deleted_devices": map[string]any{"android_devices": append([]string{}, deleted...), "apple_devices": []string{}}})
		w.Write(answer)
	default:
		io.WriteString(w, `{"result":"success","msg":""}`)
	}
}
