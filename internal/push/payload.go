package push

// Zulip's push payloads (zerver/lib/push_notifications.py:
// get_message_payload_apns, get_message_payload_gcm,
// get_remove_payload_apns, get_remove_payload_gcm), as they go to the
// bouncer; the direct transports reshape them as Zulip does before
// sending (apns.go, fcm.go).

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Realm is the server as every payload names it.
type Realm struct {
	URL  string // the server's base URL
	Name string
	ID   int
}

// Message is a message with what its payloads name; the core fills it
// in.
type Message struct {
	Realm     Realm // the server it is on
	ID        uint64
	Timestamp int64
	Topic     string
	// Rendered is the content as HTML; Content its source, pushed when
	// there is no rendering.
	Rendered, Content string

	SenderID                    uint64
	SenderEmail, SenderFullName string
	SenderAvatarURL             string // absolute

	ChannelID   uint64 // a channel message's
	ChannelName string

	Recipients []uint64 // a direct message's recipients; nil for a channel message
	Names      []string // a group direct message's participants' names, sorted
}

// Templates are one message's payloads by trigger, encoded once for
// user 0: a recipient's differ only in user_id, written in place, so
// that a channel's thousand recipients cost one encoding, not a
// thousand.
type Templates struct {
	message   Message
	byTrigger map[string][2]json.RawMessage
}

// NewTemplates holds the payloads of m, made as they are asked for.
func NewTemplates(m Message) *Templates {
	return &Templates{message: m, byTrigger: map[string][2]json.RawMessage{}}
}

var userIDZero = []byte(`"user_id":0`)

// Payloads are the message's APNs payload and FCM data for the user, to
// whom it is pushed for trigger (Zulip's NotificationTriggers value).
func (t *Templates) Payloads(userID uint64, trigger string) (apns, fcm json.RawMessage) {
	tmpl, ok := t.byTrigger[trigger]
	if !ok {
		a, f := t.message.payloads(0, trigger)
		tmpl = [2]json.RawMessage{a, f}
		t.byTrigger[trigger] = tmpl
	}
	own := []byte(`"user_id":` + strconv.FormatUint(userID, 10))
	if bytes.Count(tmpl[0], userIDZero) != 1 || bytes.Count(tmpl[1], userIDZero) != 1 {
		return t.message.payloads(userID, trigger)
	}
	return bytes.Replace(tmpl[0], userIDZero, own, 1), bytes.Replace(tmpl[1], userIDZero, own, 1)
}

// basePayload is get_base_payload.
func (r *Realm) basePayload(userID uint64) map[string]any {
	host := r.URL
	if parsed, err := url.Parse(r.URL); err == nil && parsed.Host != "" {
		host = parsed.Host
	}
	return map[string]any{
		"server":     host,
		"realm_id":   r.ID,
		"realm_name": r.Name,
		"realm_uri":  r.URL,
		"realm_url":  r.URL,
		"user_id":    userID,
	}
}

// messagePayload is get_message_payload.
func (m *Message) messagePayload(userID uint64) map[string]any {
	data := m.Realm.basePayload(userID)
	data["sender_id"] = m.SenderID
	data["sender_email"] = m.SenderEmail
	data["time"] = m.Timestamp
	if m.Recipients == nil {
		data["recipient_type"] = "stream"
		data["stream"] = m.ChannelName
		data["stream_id"] = m.ChannelID
		data["topic"] = m.Topic
	} else {
		data["recipient_type"] = "private"
		if len(m.Recipients) > 2 { // a group: huddle_users, the ids sorted
			ids := slices.Clone(m.Recipients)
			slices.Sort(ids)
			parts := make([]string, len(ids))
			for i, id := range ids {
				parts[i] = strconv.FormatUint(id, 10)
			}
			data["pm_users"] = strings.Join(parts, ",")
		}
	}
	return data
}

// payloads are the message's APNs payload (get_message_payload_apns)
// and FCM data (get_message_payload_gcm) for the user.
func (m *Message) payloads(userID uint64, trigger string) (apns, fcm json.RawMessage) {
	content, truncated := truncatePushContent(pushContent(m.Rendered, m.Content))
	zulip := m.messagePayload(userID)
	zulip["message_ids"] = []uint64{m.ID}
	// get_apns_alert_title: the channel and topic; a group's participants;
	// for one-to-one, the sender.
	title := m.SenderFullName
	switch {
	case m.Recipients == nil:
		title = "#" + m.ChannelName + " > " + m.Topic
	case len(m.Names) > 0:
		title = strings.Join(m.Names, ", ")
	}
	a := map[string]any{
		"alert":  map[string]any{"title": title, "subtitle": pushSubtitle(m, trigger), "body": content},
		"sound":  "default",
		"badge":  0,
		"custom": map[string]any{"zulip": zulip},
	}
	g := m.messagePayload(userID)
	g["event"] = "message"
	g["zulip_message_id"] = m.ID
	g["content"] = content
	g["content_truncated"] = truncated
	g["sender_full_name"] = m.SenderFullName
	g["sender_avatar_url"] = m.SenderAvatarURL
	apns, _ = json.Marshal(a)
	fcm, _ = json.Marshal(g)
	return apns, fcm
}

// pushSubtitle is get_apns_alert_subtitle.
func pushSubtitle(m *Message, trigger string) string {
	switch trigger {
	case "mentioned":
		return m.SenderFullName + " mentioned you:"
	case "topic_wildcard_mentioned", "stream_wildcard_mentioned",
		"topic_wildcard_mentioned_in_followed_topic", "stream_wildcard_mentioned_in_followed_topic":
		return m.SenderFullName + " mentioned everyone:"
	}
	if m.Recipients != nil && len(m.Recipients) <= 2 {
		return ""
	}
	return m.SenderFullName + ":"
}

// RemovePayloads are get_remove_payload_apns and get_remove_payload_gcm:
// the user read the messages ids (one at least), and their devices are
// to clear them.
func (r Realm) RemovePayloads(userID uint64, ids []uint64) (apns, fcm json.RawMessage) {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	zulip := r.basePayload(userID)
	zulip["event"] = "remove"
	zulip["zulip_message_ids"] = strings.Join(parts, ",")
	apns, _ = json.Marshal(map[string]any{"badge": 0, "custom": map[string]any{"zulip": zulip}})
	g := r.basePayload(userID)
	g["event"] = "remove"
	g["zulip_message_ids"] = strings.Join(parts, ",")
	g["zulip_message_id"] = ids[0]
	fcm, _ = json.Marshal(g)
	return apns, fcm
}

// TestPayloads are send_test_push_notification_directly_to_devices':
// the base payload with event "test", under an alert naming the
// organisation for Apple, and with the time (Unix seconds) for Google.
// The bouncer makes the same ones from the base payload.
func (r Realm) TestPayloads(userID uint64, now int64) (apns, fcm json.RawMessage) {
	zulip := r.basePayload(userID)
	zulip["event"] = "test"
	apns, _ = json.Marshal(map[string]any{
		"alert":  map[string]any{"title": "Test notification", "body": "This is a test notification from " + r.Name + " (" + r.URL + ")."},
		"sound":  "default",
		"custom": map[string]any{"zulip": zulip},
	})
	g := r.basePayload(userID)
	g["event"] = "test"
	g["time"] = now
	fcm, _ = json.Marshal(g)
	return apns, fcm
}

// pushContentLength is the characters of a message a push shows.
const pushContentLength = 200

// truncatePushContent is truncate_content: 200 characters, then "…".
func truncatePushContent(s string) (string, bool) {
	if utf8.RuneCountInString(s) <= pushContentLength {
		return s, false
	}
	r := []rune(s)
	return string(r[:pushContentLength]) + "…", true
}

// pushContent is get_mobile_push_content: the rendering as plain text,
// emoji as their characters, images as their alt text, quotes as "> "
// lines (renderedText), read no further than truncatePushContent needs.
// A message without a rendering, or one nested too deep to read, is its
// source.
func pushContent(rendered, source string) string {
	if rendered == "" {
		return source
	}
	text, ok := renderedText(rendered, pushContentLength+1)
	if !ok {
		return source
	}
	return text
}

// emojiFromCode is hex_codepoint_to_emoji: "1f419" or "1f1fa-1f1f8".
func emojiFromCode(code string) (string, bool) {
	var b strings.Builder
	for _, part := range strings.Split(code, "-") {
		v, err := strconv.ParseUint(part, 16, 32)
		if err != nil || !utf8.ValidRune(rune(v)) {
			return "", false
		}
		b.WriteRune(rune(v))
	}
	return b.String(), true
}
