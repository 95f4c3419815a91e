package main

// Zulip's push payloads (zerver/lib/push_notifications.py:
// get_message_payload_apns, get_message_payload_gcm,
// get_remove_payload_apns, get_remove_payload_gcm), as they go to the
// bouncer; the direct transports reshape them as Zulip does before
// sending (push_apns.go, push_fcm.go).

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// pushMessage is a message with what its payloads name.
type pushMessage struct {
	message
	sender     user
	channel    channel
	trigger    string   // Zulip's NotificationTriggers value
	recipients []uint64 // a direct message's recipients; nil for a channel message
	names      []string // a group direct message's participants' names, sorted
}

// basePayload is get_base_payload.
func (p *pusher) basePayload(u user) map[string]any {
	host := p.baseURL
	if parsed, err := url.Parse(p.baseURL); err == nil && parsed.Host != "" {
		host = parsed.Host
	}
	realmID, _ := strconv.Atoi(uploadRealmID)
	return map[string]any{
		"server":     host,
		"realm_id":   realmID,
		"realm_name": p.realmName,
		"realm_uri":  p.baseURL,
		"realm_url":  p.baseURL,
		"user_id":    u.ID,
	}
}

// messagePayload is get_message_payload.
func (p *pusher) messagePayload(u user, m pushMessage) map[string]any {
	data := p.basePayload(u)
	data["sender_id"] = m.sender.ID
	data["sender_email"] = m.sender.Email
	data["time"] = m.Timestamp
	if m.recipients == nil {
		data["recipient_type"] = "stream"
		data["stream"] = m.channel.Name
		data["stream_id"] = m.channel.ID
		data["topic"] = m.Topic
	} else {
		data["recipient_type"] = "private"
		if len(m.recipients) > 2 { // a group: huddle_users, the ids sorted
			ids := slices.Clone(m.recipients)
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
func (p *pusher) payloads(u user, m pushMessage) (apns, fcm json.RawMessage) {
	content, truncated := truncatePushContent(pushContent(m.Rendered, m.Content))
	zulip := p.messagePayload(u, m)
	zulip["message_ids"] = []uint64{m.ID}
	// get_apns_alert_title: the channel and topic; a group's participants;
	// for one-to-one, the sender.
	title := m.sender.FullName
	switch {
	case m.recipients == nil:
		title = "#" + m.channel.Name + " > " + m.Topic
	case len(m.names) > 0:
		title = strings.Join(m.names, ", ")
	}
	a := map[string]any{
		"alert":  map[string]any{"title": title, "subtitle": pushSubtitle(m), "body": content},
		"sound":  "default",
		"badge":  0,
		"custom": map[string]any{"zulip": zulip},
	}
	g := p.messagePayload(u, m)
	g["event"] = "message"
	g["zulip_message_id"] = m.ID
	g["content"] = content
	g["content_truncated"] = truncated
	g["sender_full_name"] = m.sender.FullName
	g["sender_avatar_url"] = p.baseURL + avatarURL(m.sender, true)
	apns, _ = json.Marshal(a)
	fcm, _ = json.Marshal(g)
	return apns, fcm
}

// payloadTemplates are a message's payloads by trigger, encoded once
// for user 0: a recipient's differ only in user_id, written in place,
// so that a channel's thousand recipients cost one encoding, not a
// thousand.
type payloadTemplates map[string][2]json.RawMessage

var userIDZero = []byte(`"user_id":0`)

func (t payloadTemplates) payloads(p *pusher, u user, m pushMessage) (apns, fcm json.RawMessage) {
	tmpl, ok := t[m.trigger]
	if !ok {
		a, f := p.payloads(user{}, m)
		tmpl = [2]json.RawMessage{a, f}
		t[m.trigger] = tmpl
	}
	own := []byte(`"user_id":` + strconv.FormatUint(u.ID, 10))
	if bytes.Count(tmpl[0], userIDZero) != 1 || bytes.Count(tmpl[1], userIDZero) != 1 {
		return p.payloads(u, m)
	}
	return bytes.Replace(tmpl[0], userIDZero, own, 1), bytes.Replace(tmpl[1], userIDZero, own, 1)
}

// pushSubtitle is get_apns_alert_subtitle.
func pushSubtitle(m pushMessage) string {
	switch m.trigger {
	case "mentioned":
		return m.sender.FullName + " mentioned you:"
	case "topic_wildcard_mentioned", "stream_wildcard_mentioned":
		return m.sender.FullName + " mentioned everyone:"
	}
	if m.recipients != nil && len(m.recipients) <= 2 {
		return ""
	}
	return m.sender.FullName + ":"
}

// removePayloads are get_remove_payload_apns and get_remove_payload_gcm.
func (p *pusher) removePayloads(u user, ids []uint64) (apns, fcm json.RawMessage) {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	zulip := p.basePayload(u)
	zulip["event"] = "remove"
	zulip["zulip_message_ids"] = strings.Join(parts, ",")
	apns, _ = json.Marshal(map[string]any{"badge": 0, "custom": map[string]any{"zulip": zulip}})
	g := p.basePayload(u)
	g["event"] = "remove"
	g["zulip_message_ids"] = strings.Join(parts, ",")
	g["zulip_message_id"] = ids[0]
	fcm, _ = json.Marshal(g)
	return apns, fcm
}

// truncatePushContent is truncate_content: 200 characters, then "…".
func truncatePushContent(s string) (string, bool) {
	if utf8.RuneCountInString(s) <= 200 {
		return s, false
	}
	r := []rune(s)
	return string(r[:200]) + "…", true
}

// pushContent is get_mobile_push_content: the rendering as plain text,
// emoji as their characters, images as their alt text, quotes as "> "
// lines. A message without a rendering is its source.
func pushContent(rendered, source string) string {
	if rendered == "" {
		return source
	}
	nodes, err := html.ParseFragment(strings.NewReader(rendered), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
	if err != nil {
		return source
	}
	var b strings.Builder
	for _, n := range nodes {
		pushText(&b, n)
	}
	return b.String()
}

func pushText(b *strings.Builder, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		b.WriteString(n.Data)
		return
	case html.ElementNode:
	default:
		return
	}
	attr := func(name string) string {
		for _, a := range n.Attr {
			if a.Key == name {
				return a.Val
			}
		}
		return ""
	}
	if class := attr("class"); strings.Contains(class, "emoji") {
		for _, c := range strings.Fields(class) {
			if code, ok := strings.CutPrefix(c, "emoji-"); ok {
				if s, ok := emojiFromCode(code); ok {
					b.WriteString(s)
					return
				}
			}
		}
	}
	switch n.Data {
	case "img":
		b.WriteString(attr("alt"))
		return
	case "blockquote":
		var inner strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			pushText(&inner, c)
		}
		for _, line := range strings.Split(inner.String(), "\n") {
			if line != "" {
				b.WriteString("> " + line + "\n")
			}
		}
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		pushText(b, c)
	}
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
