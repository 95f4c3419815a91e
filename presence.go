package main

// Presence: POST /users/me/presence, GET /realm/presence, GET
// /users/{user_id_or_email}/presence, register's presences and the
// presence events, in Zulip's two formats (zerver/lib/presence.py,
// zerver/actions/presence.py, zerver/views/presence.py): the modern one,
// keyed by user id (slim_presence, as the official app asks), and the
// legacy one, keyed by e-mail (the terminal client).

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// defaultPresenceEventsLimit is Zulip's
// USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS (zproject/default_settings.py).
const defaultPresenceEventsLimit = 100

// presenceLegacyActiveOffset is Zulip's
// PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS: in the legacy format
// a user active this close to their last connection is "active".
const presenceLegacyActiveOffset = 70

// modernPresence is Zulip's ModernPresenceFormat.
type modernPresence struct {
	ActiveTimestamp int64 `json:"active_timestamp"`
	IdleTimestamp   int64 `json:"idle_timestamp"`
}

// legacyPresence is one client's entry of Zulip's LegacyPresenceFormat.
type legacyPresence struct {
	Client    string `json:"client,omitempty"`
	Status    string `json:"status"`
	Timestamp int64  `json:"timestamp"`
	Pushable  *bool  `json:"pushable,omitempty"`
}

// legacyPresenceOf is Zulip's format_legacy_presence_dict: the client is
// always "website" (Zulip stores no client since feature level 178).
func legacyPresenceOf(row presenceRow) legacyPresence {
	pushable := false
	p := legacyPresence{Client: "website", Status: "idle", Timestamp: row.Connected, Pushable: &pushable}
	if row.Active+presenceLegacyActiveOffset >= row.Connected {
		p.Status, p.Timestamp = "active", row.Active
	}
	return p
}

// legacyUserPresence is a user's presence in the legacy format: the
// "website" entry and "aggregated" (which is the same, without pushable).
func legacyUserPresence(row presenceRow) map[string]legacyPresence {
	p := legacyPresenceOf(row)
	return map[string]legacyPresence{"aggregated": {Client: p.Client, Status: p.Status, Timestamp: p.Timestamp}, "website": p}
}

// presencesObject is "presences" keyed as the client asked: by user id
// (slim) or by e-mail (legacy). The slim one, which every app asks for
// each minute and which holds everyone's row in a large organisation,
// is written out here in the rows' order (the store's: by user id),
// without a map of every row and its
// reflection.
func presencesObject(rows []presenceRow, slim bool) any {
	if !slim {
		out := make(map[string]any, len(rows))
		for _, row := range rows {
			out[row.Email] = legacyUserPresence(row)
		}
		return out
	}
	b := make([]byte, 0, 2+len(rows)*64)
	b = append(b, '{')
	for i, row := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendUint(b, row.UserID, 10)
		b = append(b, `":{"active_timestamp":`...)
		b = strconv.AppendInt(b, row.Active, 10)
		b = append(b, `,"idle_timestamp":`...)
		b = strconv.AppendInt(b, row.Connected, 10)
		b = append(b, '}')
	}
	return json.RawMessage(append(b, '}'))
}

// presenceAnswer is POST /users/me/presence's and GET /realm/presence's
// answer (presence_last_update_id when last is set). With the slim
// presences already written out, the answer is spliced as it is, not
// checked and compacted again by the envelope's encoder.
func presenceAnswer(presences any, now time.Time, last *int64) any {
	raw, ok := presences.(json.RawMessage)
	if !ok {
		return presenceResponse{Presences: presences, ServerTimestamp: serverTimestamp(now), PresenceLastUpdateID: last}
	}
	b := make([]byte, 0, len(raw)+80)
	b = append(append(append(b, `"presences":`...), raw...), `,"server_timestamp":`...)
	b = strconv.AppendFloat(b, serverTimestamp(now), 'f', -1, 64)
	if last != nil {
		b = strconv.AppendInt(append(b, `,"presence_last_update_id":`...), *last, 10)
	}
	return encodedMembers(b)
}

// presenceResponse is what POST /users/me/presence and register answer.
type presenceResponse struct {
	Presences            any     `json:"presences"`
	ServerTimestamp      float64 `json:"server_timestamp"`
	PresenceLastUpdateID *int64  `json:"presence_last_update_id,omitempty"`
}

func serverTimestamp(now time.Time) float64 { return float64(now.UnixNano()) / 1e9 }

// presenceQueryFor turns history_limit_days and last_update_id into a
// query at now.
func presenceQueryFor(now time.Time, historyDays *int64, lastUpdateID *int64) presenceQuery {
	q := presenceQuery{Since: now.AddDate(0, 0, -presenceHistoryDays), AfterID: lastUpdateID}
	if historyDays != nil {
		q.Since = now.Add(-time.Duration(*historyDays) * 24 * time.Hour)
		q.NoHistory = *historyDays == 0
	}
	return q
}

// optionalInt reads an optional JSON integer; nil when absent.
func optionalInt(p *params, name string) (*int64, error) {
	raw, ok := p.lookup(name)
	if !ok {
		return nil, nil
	}
	n, err := parseInt(name, raw)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// updatePresence serves POST /api/v1/users/me/presence (humans only):
// the caller's report, and unless ping_only everyone's presence. A
// last_update_id asks for the changes since it, in the modern format.
func (s *server) updatePresence(r *apiRequest) (any, error) {
	historyDays, err := optionalInt(r.params, "history_limit_days")
	if err != nil {
		return nil, err
	}
	lastUpdateID, err := optionalInt(r.params, "last_update_id")
	if err != nil {
		return nil, err
	}
	if _, err := r.params.optionalBool("new_user_input", false); err != nil {
		return nil, err
	}
	pingOnly, err := r.params.optionalBool("ping_only", false)
	if err != nil {
		return nil, err
	}
	slim, err := r.params.optionalBool("slim_presence", false)
	if err != nil {
		return nil, err
	}
	status, err := r.params.requiredString("status")
	if err != nil {
		return nil, err
	}
	if status != "active" && status != "idle" {
		return nil, errInvalidPresenceStatus(status)
	}
	slim = slim || lastUpdateID != nil
	now := time.Now()
	news, err := s.store.reportPresence(r.user.ID, status == "active", now)
	if err != nil {
		return nil, err
	}
	if news.Appeared {
		s.publishPresence(r.user, news.Record, now)
	}
	if pingOnly {
		return nil, nil
	}
	rows, last, err := s.store.presences(presenceQueryFor(now, historyDays, lastUpdateID))
	if err != nil {
		return nil, err
	}
	return presenceAnswer(presencesObject(rows, slim), now, &last), nil
}

// realmPresence serves GET /api/v1/realm/presence: everyone's presence
// in the legacy format, without presence_last_update_id, as Zulip's
// get_statuses_for_realm.
func (s *server) realmPresence(r *apiRequest) (any, error) {
	now := time.Now()
	rows, _, err := s.store.presences(presenceQueryFor(now, nil, nil))
	if err != nil {
		return nil, err
	}
	return presenceResponse{Presences: presencesObject(rows, false), ServerTimestamp: serverTimestamp(now)}, nil
}

// userPresence serves GET /api/v1/users/{user_id_or_email}/presence: one
// active human's presence in the legacy format ("aggregated" says
// offline past the offline threshold), as Zulip's get_presence_backend
// at feature level 421.
func (s *server) userPresence(r *apiRequest) (any, error) {
	key := r.PathValue("user")
	target, err := s.store.presenceOf(key)
	if err != nil {
		return nil, err
	}
	p := legacyUserPresence(target)
	agg := p["aggregated"]
	if time.Now().Unix()-agg.Timestamp > presenceOfflineThresholdSeconds {
		agg.Status = "offline"
	}
	web := p["website"]
	web.Client, web.Pushable = "", nil
	agg.Client = ""
	return struct {
		Presence map[string]legacyPresence `json:"presence"`
	}{map[string]legacyPresence{"aggregated": agg, "website": web}}, nil
}

// presenceOf finds an active human's presence row by id or e-mail, with
// get_presence_backend's refusals.
func (s *store) presenceOf(key string) (presenceRow, error) {
	var u user
	var err error
	if id, perr := strconv.ParseUint(key, 10, 64); perr == nil && strings.Trim(key, "0123456789") == "" {
		u, err = s.userByID(id)
	} else {
		u, err = s.userByEmail(key)
	}
	if err != nil || !u.Active {
		return presenceRow{}, errNoSuchUser
	}
	if u.Bot {
		return presenceRow{}, refusal(errPresenceBot)
	}
	rows, _, err := s.presences(presenceQuery{OnlyUser: u.ID})
	if err != nil {
		return presenceRow{}, err
	}
	if len(rows) == 0 {
		return presenceRow{}, refusal(errNoPresenceData(key))
	}
	return rows[0], nil
}

// publishPresence tells every queue that the user appeared: queues
// with the simplified_presence_events capability in the modern format,
// the others in the legacy one (zerver/actions/presence.py
// send_presence_changed and the FL 419 event).
//
// Above presenceEventsLimit active users it tells nobody, as Zulip stops
// above USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS: every user coming
// online told to every client is work quadratic in the organisation's
// size, and clients learn presence from their own presence requests each
// minute anyway.
func (s *server) publishPresence(u user, rec presenceRecord, now time.Time) {
	if n, err := s.store.activeUserCount(); err != nil || n > s.presenceEventsLimit {
		return
	}
	row := presenceRow{UserID: u.ID, Email: u.Email, Active: rec.Active, Connected: rec.Connected, UpdateID: rec.UpdateID}
	if row.Active == 0 {
		row.Active = u.Joined
	}
	modern := event{"type": "presence", "presences": map[string]modernPresence{strconv.FormatUint(u.ID, 10): {row.Active, row.Connected}}}
	legacyEntry := legacyPresenceOf(row)
	legacy := event{"type": "presence", "user_id": u.ID, "email": u.Email, "server_timestamp": serverTimestamp(now),
		"presence": map[string]legacyPresence{"website": legacyEntry}}
	s.events.tellEveryone("presence", func(q *eventQueue) int { return b2i(q.simplifiedPresence) }, legacy, modern)
}

// addPresenceState adds register's presence fetch type: presences keyed
// as slim_presence asks, with server_timestamp and
// presence_last_update_id (presence_history_limit_days bounds how far
// back).
func (s *server) addPresenceState(state map[string]any, o registerOptions) error {
	now := time.Now()
	rows, last, err := s.store.presences(presenceQueryFor(now, o.presenceHistoryDays, nil))
	if err != nil {
		return err
	}
	state["presences"] = presencesObject(rows, o.slimPresence)
	state["server_timestamp"] = serverTimestamp(now)
	state["presence_last_update_id"] = last
	return nil
}
