package push

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

var testRealm = Realm{URL: "https://chat.example.org", Name: "Example", ID: 2}

// testBase is get_base_payload's members for user 9, as JSON members.
const testBase = `"server":"chat.example.org","realm_id":2,"realm_name":"Example","realm_uri":"https://chat.example.org","realm_url":"https://chat.example.org","user_id":9`

func channelMessage() Message {
	return Message{Realm: testRealm, ID: 42, Timestamp: 1_700_000_000, Topic: "lunch",
		Rendered: `<p>hi <span aria-label="octopus" class="emoji emoji-1f419" role="img" title="octopus">:octopus:</span></p>`, Content: "hi :octopus:",
		SenderID: 1, SenderEmail: "owner@example.org", SenderFullName: "Owner", SenderAvatarURL: "https://chat.example.org/avatar/1",
		ChannelID: 3, ChannelName: "general"}
}

// TestMessagePayloads_ChannelMessage checks a channel message's payloads
// whole: get_message_payload_apns (the alert's title the channel and
// topic, custom.zulip with the message's id) and get_message_payload_gcm
// (the content as text, the sender's name and avatar).
func TestMessagePayloads_ChannelMessage(t *testing.T) {
	m := channelMessage()
	apns, fcm := NewTemplates(m).Payloads(9, "mentioned")
	sameJSON(t, "APNs", apns, `{"alert":{"title":"#general > lunch","subtitle":"Owner mentioned you:","body":"hi 🐙"},"sound":"default","badge":0,
		"custom":{"zulip":{`+testBase+`,"sender_id":1,"sender_email":"owner@example.org","time":1700000000,
		"recipient_type":"stream","stream":"general","stream_id":3,"topic":"lunch","message_ids":[42]}}}`)
	sameJSON(t, "FCM", fcm, `{`+testBase+`,"sender_id":1,"sender_email":"owner@example.org","time":1700000000,
		"recipient_type":"stream","stream":"general","stream_id":3,"topic":"lunch",
		"event":"message","zulip_message_id":42,"content":"hi 🐙","content_truncated":false,
		"sender_full_name":"Owner","sender_avatar_url":"https://chat.example.org/avatar/1"}`)
}

// TestMessagePayloads_DirectMessages checks direct messages: one-to-one
// titled by the sender, without a subtitle; a group titled by its
// participants, with pm_users the recipients' ids sorted.
func TestMessagePayloads_DirectMessages(t *testing.T) {
	m := channelMessage()
	m.ChannelID, m.ChannelName, m.Rendered, m.Content = 0, "", "", "psst"
	m.Recipients = []uint64{9, 1}
	apns, fcm := NewTemplates(m).Payloads(9, "private_message")
	sameJSON(t, "one-to-one APNs", apns, `{"alert":{"title":"Owner","subtitle":"","body":"psst"},"sound":"default","badge":0,
		"custom":{"zulip":{`+testBase+`,"sender_id":1,"sender_email":"owner@example.org","time":1700000000,"recipient_type":"private","message_ids":[42]}}}`)
	sameJSON(t, "one-to-one FCM", fcm, `{`+testBase+`,"sender_id":1,"sender_email":"owner@example.org","time":1700000000,"recipient_type":"private",
		"event":"message","zulip_message_id":42,"content":"psst","content_truncated":false,
		"sender_full_name":"Owner","sender_avatar_url":"https://chat.example.org/avatar/1"}`)

	g := m
	g.Recipients = []uint64{30, 9, 1}
	g.Names = []string{"Ann", "Bo", "Owner"}
	apns, fcm = NewTemplates(g).Payloads(9, "private_message")
	sameJSON(t, "group APNs", apns, `{"alert":{"title":"Ann, Bo, Owner","subtitle":"Owner:","body":"psst"},"sound":"default","badge":0,
		"custom":{"zulip":{`+testBase+`,"sender_id":1,"sender_email":"owner@example.org","time":1700000000,"recipient_type":"private","pm_users":"1,9,30","message_ids":[42]}}}`)
	sameJSON(t, "group FCM", fcm, `{`+testBase+`,"sender_id":1,"sender_email":"owner@example.org","time":1700000000,"recipient_type":"private","pm_users":"1,9,30",
		"event":"message","zulip_message_id":42,"content":"psst","content_truncated":false,
		"sender_full_name":"Owner","sender_avatar_url":"https://chat.example.org/avatar/1"}`)
	if g.Recipients[0] != 30 {
		t.Errorf("the recipients: got %v, want them left in their order", g.Recipients)
	}
}

// TestMessagePayloads_Subtitle checks get_apns_alert_subtitle by
// trigger.
func TestMessagePayloads_Subtitle(t *testing.T) {
	for _, tc := range []struct {
		trigger    string
		recipients []uint64
		want       string
	}{
		{"mentioned", nil, "Owner mentioned you:"},
		{"topic_wildcard_mentioned", nil, "Owner mentioned everyone:"},
		{"stream_wildcard_mentioned", nil, "Owner mentioned everyone:"},
		{"topic_wildcard_mentioned_in_followed_topic", nil, "Owner mentioned everyone:"},
		{"stream_wildcard_mentioned_in_followed_topic", nil, "Owner mentioned everyone:"},
		{"followed_topic_push_notify", nil, "Owner:"},
		{"stream_push_notify", nil, "Owner:"},
		{"private_message", []uint64{1, 9}, ""},
		{"private_message", []uint64{1, 9, 30}, "Owner:"},
		{"mentioned", []uint64{1, 9, 30}, "Owner mentioned you:"},
	} {
		m := channelMessage()
		m.Recipients = tc.recipients
		apns, _ := NewTemplates(m).Payloads(9, tc.trigger)
		var got struct {
			Alert struct {
				Subtitle string `json:"subtitle"`
			} `json:"alert"`
		}
		json.Unmarshal(apns, &got)
		if got.Alert.Subtitle != tc.want {
			t.Errorf("%s to %d recipients: got %q, want %q", tc.trigger, len(tc.recipients), got.Alert.Subtitle, tc.want)
		}
	}
}

// TestMessagePayloads_TemplatesAreEachUsersOwn checks that the payloads
// written from a trigger's template are, byte for byte, those made for
// the user alone, for every trigger and user, whichever came first.
func TestMessagePayloads_TemplatesAreEachUsersOwn(t *testing.T) {
	m := channelMessage()
	m.Content, m.Rendered = `user_id "user_id":0 <b>"user_id":0</b>`, ""
	templates := NewTemplates(m)
	for _, trigger := range []string{"mentioned", "stream_push_notify", "mentioned"} {
		for _, uid := range []uint64{9, 0, 1, 123456789012} {
			apns, fcm := templates.Payloads(uid, trigger)
			wantAPNs, wantFCM := m.payloads(uid, trigger)
			if !bytes.Equal(apns, wantAPNs) || !bytes.Equal(fcm, wantFCM) {
				t.Errorf("%s for %d:\ngot  %s\n     %s\nwant %s\n     %s", trigger, uid, apns, fcm, wantAPNs, wantFCM)
			}
			if !bytes.Contains(fcm, []byte(fmt.Sprintf(`"user_id":%d,`, uid))) {
				t.Errorf("%s for %d: got %s, want its user_id", trigger, uid, fcm)
			}
		}
	}
	if len(templates.byTrigger) != 2 {
		t.Errorf("templates: got %d, want one per trigger (2)", len(templates.byTrigger))
	}
}

// TestMessagePayloads_ContentTruncated checks truncate_content: 200
// characters (not bytes), then "…".
func TestMessagePayloads_ContentTruncated(t *testing.T) {
	for _, tc := range []struct {
		content, want string
		truncated     bool
	}{
		{strings.Repeat("é", 200), strings.Repeat("é", 200), false},
		{strings.Repeat("é", 201), strings.Repeat("é", 200) + "…", true},
	} {
		m := channelMessage()
		m.Rendered, m.Content = "", tc.content
		_, fcm := NewTemplates(m).Payloads(9, "mentioned")
		var got struct {
			Content   string `json:"content"`
			Truncated bool   `json:"content_truncated"`
		}
		json.Unmarshal(fcm, &got)
		if got.Content != tc.want || got.Truncated != tc.truncated {
			t.Errorf("%d characters: got %d characters, truncated %v; want %d, %v",
				len([]rune(tc.content)), len([]rune(got.Content)), got.Truncated, len([]rune(tc.want)), tc.truncated)
		}
	}
}

// TestPushContent checks get_mobile_push_content: the rendering as plain
// text, emoji as their characters, images as their alt text, quotes as
// "> " lines; the source when there is no rendering.
func TestPushContent(t *testing.T) {
	for _, tc := range []struct {
		name, rendered, source, want string
	}{
		{"no rendering: the source", "", "**bold** :octopus:", "**bold** :octopus:"},
		{"text", "<p>a <strong>bold</strong> <a href=\"https://x.org\">link</a></p>", "", "a bold link"},
		{"an emoji", `<p><span class="emoji emoji-1f419" title="octopus">:octopus:</span></p>`, "", "🐙"},
		{"a flag of two code points", `<span class="emoji emoji-1f1fa-1f1f8">:us:</span>`, "", "🇺🇸"},
		{"a custom emoji keeps its alt", `<img alt=":zulip:" class="emoji" src="/static/zulip.png">`, "", ":zulip:"},
		{"an emoji code that is none", `<span class="emoji emoji-zz">:zz:</span>`, "", ":zz:"},
		{"an image", `<p>see <img alt="a cat" src="cat.png"></p>`, "", "see a cat"},
		{"a quote", "<blockquote>\n<p>first\nsecond</p>\n</blockquote>\n<p>answer</p>", "", "> first\n> second\n\nanswer"},
	} {
		if got := pushContent(tc.rendered, tc.source); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRemovePayloads checks get_remove_payload_apns and
// get_remove_payload_gcm.
func TestRemovePayloads(t *testing.T) {
	apns, fcm := testRealm.RemovePayloads(9, []uint64{5, 8})
	sameJSON(t, "APNs", apns, `{"badge":0,"custom":{"zulip":{`+testBase+`,"event":"remove","zulip_message_ids":"5,8"}}}`)
	sameJSON(t, "FCM", fcm, `{`+testBase+`,"event":"remove","zulip_message_ids":"5,8","zulip_message_id":5}`)
}

// TestBasePayload_Server checks get_base_payload's server: the URL's
// host (with its port), or the URL itself when it has none.
func TestBasePayload_Server(t *testing.T) {
	for url, want := range map[string]string{
		"https://chat.example.org":      "chat.example.org",
		"http://127.0.0.1:9991/":        "127.0.0.1:9991",
		"zulite.localhost":              "zulite.localhost",
		"https://chat.example.org/base": "chat.example.org",
	} {
		r := Realm{URL: url}
		if got := r.basePayload(1)["server"]; got != want {
			t.Errorf("%s: got %v, want %s", url, got, want)
		}
	}
}

// TestTestPayloads checks send_test_push_notification_directly_to_devices'
// payloads whole: Apple's alert naming the organisation, Google's with
// the time, both event "test".
func TestTestPayloads(t *testing.T) {
	apns, fcm := testRealm.TestPayloads(9, 1_700_000_000)
	sameJSON(t, "APNs", apns, `{"alert":{"title":"Test notification","body":"This is a test notification from Example (https://chat.example.org)."},
		"sound":"default","custom":{"zulip":{`+testBase+`,"event":"test"}}}`)
	sameJSON(t, "FCM", fcm, `{`+testBase+`,"event":"test","time":1700000000}`)
}
