package main

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

func TestPresence_ReportIsSeenInBothFormats(t *testing.T) {
	e := newTestEnv(t)
	r := e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}, "slim_presence": {"true"}}, &e.alice)
	wantAPISuccess(t, r)
	modern := object(object(r.body["presences"])[idKey(e.alice)])
	if modern == nil || modern["active_timestamp"] == nil || modern["idle_timestamp"] == nil {
		t.Fatalf("slim presences: got %s, want alice by id with active_timestamp and idle_timestamp", r.raw)
	}
	first, _ := r.body["presence_last_update_id"].(float64)
	if first < 1 {
		t.Errorf("presence_last_update_id: got %v, want an update id", r.body["presence_last_update_id"])
	}
	if _, ok := r.body["server_timestamp"].(float64); !ok {
		t.Errorf("server_timestamp missing: %s", r.raw)
	}

	// Bob, as the terminal client asks: legacy, keyed by e-mail.
	r = e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"idle"}}, &e.bob)
	wantAPISuccess(t, r)
	legacy := object(object(r.body["presences"])[e.alice.Email])
	agg, web := object(legacy["aggregated"]), object(legacy["website"])
	if agg["status"] != "active" || agg["client"] != "website" || web["pushable"] != false || web["status"] != "active" {
		t.Errorf("legacy presence of alice: got %v", legacy)
	}
	if _, ok := object(r.body["presences"])[e.bob.Email]; !ok {
		t.Errorf("bob's own idle report missing: %s", r.raw)
	}
	if second, _ := r.body["presence_last_update_id"].(float64); second <= first {
		t.Errorf("presence_last_update_id: got %v after %v, want it to grow", second, first)
	}

	// ping_only answers nothing but success.
	r = e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}, "ping_only": {"true"}}, &e.alice)
	wantAPISuccess(t, r)
	if _, ok := r.body["presences"]; ok {
		t.Errorf("ping_only: got %s, want no presences", r.raw)
	}

	// last_update_id: only what changed since, in the modern format.
	r = e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}, "last_update_id": {strconv.Itoa(int(first))}}, &e.alice)
	wantAPISuccess(t, r)
	since := object(r.body["presences"])
	if _, ok := since[idKey(e.bob)]; !ok || len(since) != 1 {
		t.Errorf("last_update_id %v: got %v, want only bob's later change, by id", first, since)
	}
	// history_limit_days 0: no presence at all.
	r = e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}, "history_limit_days": {"0"}}, &e.alice)
	wantAPISuccess(t, r)
	if len(object(r.body["presences"])) != 0 {
		t.Errorf("history_limit_days 0: got %s, want no presences", r.raw)
	}

	// GET /realm/presence: legacy, without presence_last_update_id.
	r = e.request(t, http.MethodGet, "/api/v1/realm/presence", nil, &e.bot)
	wantAPISuccess(t, r)
	if _, ok := object(r.body["presences"])[e.alice.Email]; !ok {
		t.Errorf("realm presence: got %s, want alice by e-mail", r.raw)
	}
	if _, ok := r.body["presence_last_update_id"]; ok {
		t.Errorf("realm presence carries presence_last_update_id: %s", r.raw)
	}
}

func TestPresence_Refusals(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}}, &e.alice))
	gone, _ := mustCreateUser(t, e.st, "gone@example.com", roleMember, false)
	if err := e.st.setActive(gone.Email, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rule   string
		method string
		path   string
		params url.Values
		who    *account
		msg    string
	}{
		{"status is required", "POST", "/api/v1/users/me/presence", nil, &e.alice, "Missing 'status' argument"},
		{"status is active or idle", "POST", "/api/v1/users/me/presence", url.Values{"status": {"away"}}, &e.alice, "Invalid status: away"},
		{"ping_only is a boolean", "POST", "/api/v1/users/me/presence", url.Values{"status": {"active"}, "ping_only": {"1"}}, &e.alice, "ping_only is not a boolean"},
		{"last_update_id is an integer", "POST", "/api/v1/users/me/presence", url.Values{"status": {"active"}, "last_update_id": {"x"}}, &e.alice, "last_update_id is not valid JSON"},
		{"bots do not report presence", "POST", "/api/v1/users/me/presence", url.Values{"status": {"active"}}, &e.bot, "This endpoint does not accept bot requests."},
		{"an unknown user", "GET", "/api/v1/users/999/presence", nil, &e.bob, "No such user"},
		{"an unknown e-mail", "GET", "/api/v1/users/nobody@example.com/presence", nil, &e.bob, "No such user"},
		{"a deactivated user", "GET", "/api/v1/users/" + strconv.FormatUint(gone.ID, 10) + "/presence", nil, &e.bob, "No such user"},
		{"a bot", "GET", "/api/v1/users/" + e.bot.Email + "/presence", nil, &e.bob, "Presence is not supported for bot users."},
		{"nobody reported", "GET", "/api/v1/users/" + e.bob.Email + "/presence", nil, &e.alice, "No presence data for " + e.bob.Email},
	} {
		t.Run(c.rule, func(t *testing.T) {
			code := "BAD_REQUEST"
			if c.params == nil && c.method == "POST" {
				code = "REQUEST_VARIABLE_MISSING"
			}
			wantAPIError(t, e.request(t, c.method, c.path, c.params, c.who), http.StatusBadRequest, code, c.msg)
		})
	}
	r := e.request(t, http.MethodGet, "/api/v1/users/me/presence", nil, &e.alice)
	if r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET /users/me/presence: got %d %s, want 405", r.status, r.raw)
	}
	// A refused report changed nothing: bob still has no presence.
	rows, _, err := e.st.presences(presenceQuery{OnlyUser: e.bob.ID})
	if err != nil || len(rows) != 0 {
		t.Errorf("after refusals: bob's presence %v %v, want none", rows, err)
	}
}

func TestPresence_OneUserLegacyAndOffline(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}}, &e.alice))
	r := e.request(t, http.MethodGet, "/api/v1/users/"+idKey(e.alice)+"/presence", nil, &e.bob)
	wantAPISuccess(t, r)
	p := object(r.body["presence"])
	agg, web := object(p["aggregated"]), object(p["website"])
	if agg["status"] != "active" || web["status"] != "active" || agg["client"] != nil || web["pushable"] != nil {
		t.Errorf("presence of alice: got %v, want active, without client or pushable", p)
	}
	// Seen long ago: offline.
	e.st.presence.mu.Lock()
	rec := e.st.presence.entries[e.alice.ID]
	rec.Active, rec.Connected = time.Now().Add(-time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
	e.st.presence.mu.Unlock()
	r = e.request(t, http.MethodGet, "/api/v1/users/"+e.alice.Email+"/presence", nil, &e.bob)
	if got := object(object(r.body["presence"])["aggregated"])["status"]; got != "offline" {
		t.Errorf("an hour later: aggregated status %v, want offline", got)
	}
}

func TestPresence_HiddenPresenceIsNotUpdated(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/settings", url.Values{"presence_enabled": {"false"}}, &e.alice))
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}}, &e.alice))
	if rows, _, _ := e.st.presences(presenceQuery{OnlyUser: e.alice.ID}); len(rows) != 0 {
		t.Errorf("presence_enabled false: got %v, want no presence kept", rows)
	}
}

func TestPresence_EventsInTheFormatEachQueueAsked(t *testing.T) {
	e := newTestEnv(t)
	modernQueue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["presence"]`}, "client_capabilities": {`{"simplified_presence_events":true}`}}).str("queue_id")
	legacyQueue := e.registerQueue(t, &e.owner, url.Values{"event_types": {`["presence"]`}}).str("queue_id")
	otherTypes := e.registerQueue(t, &e.admin, url.Values{"event_types": {`["message"]`}}).str("queue_id")

	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}}, &e.alice))
	modern := e.pollNow(t, &e.bob, modernQueue, -1)
	if len(modern) != 1 || modern[0]["type"] != "presence" || object(object(modern[0]["presences"])[idKey(e.alice)])["active_timestamp"] == nil || modern[0]["email"] != nil {
		t.Errorf("simplified_presence_events queue: got %v, want one presence event keyed by alice's id", modern)
	}
	legacy := e.pollNow(t, &e.owner, legacyQueue, -1)
	if len(legacy) != 1 || legacy[0]["email"] != e.alice.Email || legacy[0]["user_id"] != float64(e.alice.ID) ||
		object(object(legacy[0]["presence"])["website"])["status"] != "active" || legacy[0]["server_timestamp"] == nil {
		t.Errorf("legacy queue: got %v, want alice's legacy presence", legacy)
	}
	if got := e.pollNow(t, &e.admin, otherTypes, -1); len(got) != 0 {
		t.Errorf("a queue without presence in event_types got %v", got)
	}
	// A second report a moment later is no news.
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}}, &e.alice))
	if got := e.pollNow(t, &e.bob, modernQueue, 0); len(got) != 0 {
		t.Errorf("a repeated report sent %v, want nothing", got)
	}
}

func TestPresence_RegisterStateBySlimPresence(t *testing.T) {
	e := newTestEnv(t)
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}}, &e.alice))
	r := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["presence"]`}, "slim_presence": {"true"}})
	if _, ok := object(r.body["presences"])[idKey(e.alice)]; !ok {
		t.Errorf("slim register presences: got %v, want alice by id", r.body["presences"])
	}
	if id, _ := r.body["presence_last_update_id"].(float64); id < 1 {
		t.Errorf("presence_last_update_id %v", r.body["presence_last_update_id"])
	}
	r = e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["presence"]`}})
	if _, ok := object(r.body["presences"])[e.alice.Email]; !ok {
		t.Errorf("legacy register presences: got %v, want alice by e-mail", r.body["presences"])
	}
	r = e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["presence"]`}, "presence_history_limit_days": {"0"}})
	if len(object(r.body["presences"])) != 0 {
		t.Errorf("presence_history_limit_days 0: got %v, want none", r.body["presences"])
	}
}

// Reports live in memory: a thousand of them commit nothing until the
// writer's tick, which writes them all at once, and a user's record at
// most once every presenceWriteInterval.
func TestPresence_ReportsCommitAtMostEveryIntervalPerUser(t *testing.T) {
	st := mustOpenStore(t)
	var ids []uint64
	for i := range 50 {
		u, _ := mustCreateUser(t, st, "p"+strconv.Itoa(i)+"@example.com", roleMember, false)
		ids = append(ids, u.ID)
	}
	start := time.Now()
	if _, err := st.reportPresence(ids[0], true, start); err != nil { // reserves the first block of ids
		t.Fatal(err)
	}
	before := st.commitStats.groups.Load()
	for minute := range 20 {
		for _, id := range ids {
			if _, err := st.reportPresence(id, true, start.Add(time.Duration(minute)*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
	}
	stored := func() int {
		n := 0
		st.view(func(tx *bbolt.Tx) error { n = tx.Bucket(bucketPresence).Stats().KeyN; return nil })
		return n
	}
	// At most one commit: a reservation of update ids, once a block is used up.
	if got := st.commitStats.groups.Load() - before; got > 1 || stored() != 0 {
		t.Errorf("1000 reports: %d commits, %d records written, want at most 1 commit and no record", got, stored())
	}
	at := start.Add(20 * time.Minute)
	before = st.commitStats.groups.Load()
	if err := st.presence.flush(at, false); err != nil {
		t.Fatal(err)
	}
	if got := st.commitStats.groups.Load() - before; got != 1 || stored() != 50 {
		t.Errorf("first flush: %d commits, %d records, want 1 commit of 50", got, stored())
	}
	for _, id := range ids {
		st.reportPresence(id, true, at.Add(time.Minute))
	}
	before = st.commitStats.groups.Load()
	st.presence.flush(at.Add(time.Minute), false)
	if got := st.commitStats.groups.Load() - before; got != 0 {
		t.Errorf("a minute after a write: %d commits, want none before presenceWriteInterval", got)
	}
	st.presence.flush(at.Add(presenceWriteInterval), false)
	if got := st.commitStats.groups.Load() - before; got != 1 {
		t.Errorf("presenceWriteInterval after a write: %d commits, want 1", got)
	}
}

func TestPresence_SurvivesRestartAndIDsNeverRepeat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	bob, _ := mustCreateUser(t, st, "bob@example.com", roleMember, false)
	now := time.Now()
	st.reportPresence(alice.ID, true, now)
	if err := st.close(); err != nil { // a clean stop writes what is pending
		t.Fatal(err)
	}
	st, err = openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := st.presences(presenceQuery{OnlyUser: alice.ID})
	if err != nil || len(rows) != 1 || rows[0].Active != now.Unix() {
		t.Fatalf("after a restart: %v %v, want alice active at %d", rows, err, now.Unix())
	}
	// A crash: the report below never reaches the file.
	news, _ := st.reportPresence(bob.ID, true, now)
	st.quiesce()
	st.db.Close()
	st, err = openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	later, _ := st.reportPresence(bob.ID, true, now.Add(time.Minute))
	if later.Record.UpdateID <= news.Record.UpdateID {
		t.Errorf("after a crash: update id %d, want more than %d, which a client may have seen", later.Record.UpdateID, news.Record.UpdateID)
	}
}

// Above --presence-events-limit active users (Zulip's
// USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS), a user coming online is
// told to nobody; clients learn it from their own presence requests. The
// count follows accounts made and deactivated.
func TestPresence_AboveTheLimitOfActiveUsersNoEventsAreSent(t *testing.T) {
	e := newTestEnv(t) // five active accounts, the bot among them
	e.server.presenceEventsLimit = 5
	carol, _ := mustCreateUser(t, e.st, "carol@example.com", roleMember, false) // six
	queue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["presence"]`}}).str("queue_id")

	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}}, &e.alice))
	if got := e.pollNow(t, &e.bob, queue, -1); len(got) != 0 {
		t.Errorf("six active users over a limit of five: got %v, want no presence event", got)
	}
	r := e.request(t, http.MethodGet, "/api/v1/realm/presence", nil, &e.bob)
	wantAPISuccess(t, r)
	if object(r.body["presences"])[e.alice.Email] == nil {
		t.Errorf("alice's report: got presences %v, want hers among them", r.body["presences"])
	}

	if err := e.st.setActive(carol.Email, false); err != nil { // five: at the limit, events again
		t.Fatal(err)
	}
	wantAPISuccess(t, e.request(t, http.MethodPost, "/api/v1/users/me/presence", url.Values{"status": {"active"}}, &e.admin))
	got := e.pollNow(t, &e.bob, queue, -1)
	if len(got) != 1 || got[0]["user_id"] != float64(e.admin.ID) {
		t.Errorf("five active users at a limit of five: got %v, want the admin's presence event", got)
	}
}

// TestPresenceAnswer_IsTheEncodingOfItsObject holds the slim answer,
// written out by hand, to what encoding/json makes of the same answer
// as a map of Zulip's modern format: the same members, the same values,
// for empty and large tables and any timestamps.
func TestPresenceAnswer_IsTheEncodingOfItsObject(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Unix(1_800_000_000, 123_456_789)
	for _, n := range []int{0, 1, 2, 17, 3000} {
		rows := make([]presenceRow, n)
		for i := range rows {
			rows[i] = presenceRow{UserID: rng.Uint64N(1 << 40), Active: rng.Int64N(1 << 33), Connected: rng.Int64N(1 << 33)}
		}
		sortFunc(rows, func(a, b presenceRow) int { return cmpUint(a.UserID, b.UserID) }) // as the store answers them
		want := map[string]any{}
		for _, row := range rows {
			want[strconv.FormatUint(row.UserID, 10)] = modernPresence{row.Active, row.Connected}
		}
		last := rng.Int64N(1 << 50)
		for _, lastID := range []*int64{nil, &last} {
			old, err := json.Marshal(struct {
				Presences            map[string]any `json:"presences"`
				ServerTimestamp      float64        `json:"server_timestamp"`
				PresenceLastUpdateID *int64         `json:"presence_last_update_id,omitempty"`
			}{want, serverTimestamp(now), lastID})
			if err != nil {
				t.Fatal(err)
			}
			members, ok := presenceAnswer(presencesObject(slices.Clone(rows), true), now, lastID).(encodedMembers)
			if !ok {
				t.Fatalf("%d rows: the slim answer is not written out", n)
			}
			got := append(append([]byte("{"), members...), '}')
			var a, b any
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatalf("%d rows: %v in %.200s", n, err, got)
			}
			json.Unmarshal(old, &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%d rows, last %v: got %.300s\nwant %.300s", n, lastID, got, old)
			}
		}
	}
}
