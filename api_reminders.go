package main

// Reminders: POST and GET /reminders, DELETE /reminders/{reminder_id},
// register's reminders and the reminders events (zerver/views/reminders.py,
// zerver/actions/reminders.py, zerver/lib/reminders.py). A reminder is a
// scheduled message of Zulip's REMIND delivery type: kept, bounded and
// sent by the same store and scheduler (store_scheduled_messages.go,
// scheduler.go). Zulip's Notification Bot sends it to the user; zulite
// has no such bot, and sends it as a direct message from the user to
// themself, unread, with Zulip's text.

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"zulite/internal/markdown"
)

// maxReminderNoteLength is Zulip's MAX_REMINDER_NOTE_LENGTH, in
// characters (its default was not found in the stored copies of
// zproject's settings; 1,000 is taken for it).
const maxReminderNoteLength = 1000

// createReminder serves POST /api/v1/reminders
// (create_reminders_message_backend, schedule_reminder_for_message).
func (s *server) createReminder(r *apiRequest) (any, error) {
	rawID, err := r.params.requiredString("message_id")
	if err != nil {
		return nil, err
	}
	target, err := parseInt("message_id", rawID)
	if err != nil {
		return nil, err
	}
	rawDue, err := r.params.requiredString("scheduled_delivery_timestamp")
	if err != nil {
		return nil, err
	}
	note, _ := r.params.lookup("note")
	due, err := s.futureTime(rawDue)
	if err != nil {
		return nil, err
	}
	if target <= 0 {
		return nil, errInvalidMessages
	}
	id := uint64(target)
	message, err := s.readableMessage(r.user, id)
	if err != nil {
		return nil, err
	}
	content, err := reminderContent(message, note, s.baseURL)
	if err != nil {
		return nil, err
	}
	m := storedScheduled{Type: "private", Recipients: []uint64{r.user.ID}, Due: due, Client: clientName(r), Target: id}
	if m.Content, m.Rendered, err = s.scheduledContent(r.user, content); err != nil {
		return nil, err
	}
	reminderID, err := s.store.createScheduled(r.user, m)
	if err != nil {
		return nil, err
	}
	return struct {
		ID uint64 `json:"reminder_id"`
	}{reminderID}, nil
}

// reminderContent is get_reminder_formatted_content: Zulip's words,
// the note quoted, who said it where with a link, and the message
// quoted in a fence it does not use (a poll or a to-do list is named,
// not quoted).
func reminderContent(m pagedMessage, note, realmURL string) (string, error) {
	note = strings.TrimLeft(strings.TrimRightFunc(note, unicode.IsSpace), "\n")
	if utf8.RuneCountInString(note) > maxReminderNoteLength {
		return "", errReminderNoteTooLong
	}
	id := strconv.FormatUint(m.ID, 10)
	mention := func(u user) string { return "@_**" + u.FullName + "|" + strconv.FormatUint(u.ID, 10) + "**" }
	var head, url, where string
	if m.isDirect() {
		head = "You requested a reminder for the following direct message."
		var ids, others []string
		for _, u := range m.Participants {
			ids = append(ids, strconv.FormatUint(u.ID, 10))
			if u.ID != m.SenderID {
				others = append(others, mention(u))
			}
		}
		if len(others) == 0 {
			others = []string{mention(m.Sender)}
		}
		url = realmURL + "/#narrow/dm/" + strings.Join(ids, ",") + "/near/" + id
		where = "to " + mentionList(others)
	} else {
		head = "You requested a reminder for the following message."
		url = realmURL + "/#narrow/channel/" + markdown.EncodeChannel(m.ChannelID, m.Channel.Name) + "/topic/" + markdown.HashEncode(m.Topic) + "/near/" + id
		where = "in " + messageLinkSyntax(m.ChannelID, m.Channel.Name, m.Topic, id)
	}
	if note != "" {
		head = strings.TrimSuffix(head, ".") + ". Note:\n > " + note
	}
	content := head + "\n\n" + mention(m.Sender)
	for prefix, widget := range map[string]string{"/poll": "poll", "/todo": "todo list"} {
		if strings.HasPrefix(m.Content, prefix) {
			return content + " [sent](" + url + ") a " + widget + " " + where + ".", nil
		}
	}
	content += " [said](" + url + ") " + where + ":\n"
	fence := unusedFence(content)
	const marker = "\n[message truncated]"
	quoted := m.Content
	if room := maxMessageLength - utf8.RuneCountInString(content+fence+"quote\n\n"+fence); utf8.RuneCountInString(quoted) > room {
		quoted = string([]rune(quoted)[:max(room-len(marker), 0)]) + marker
	}
	return content + fence + "quote\n" + quoted + "\n" + fence, nil
}

// linkEscapes is topic_link_util's escape_mapping.
var linkEscapes = strings.NewReplacer("`", "&#96;", ">", "&gt;", "*", "&#42;", "&", "&amp;", "$$", "&#36;&#36;", "[", "&#91;", "]", "&#93;")

// breaksLinkSyntax is will_produce_broken_stream_topic_link: the name
// matches invalid_stream_topic_regex, [`>*&\[\]]|(\$\$).
func breaksLinkSyntax(name string) bool {
	return strings.ContainsAny(name, "`>*&[]") || strings.Contains(name, "$$")
}

// messageLinkSyntax is get_message_link_syntax: #**channel>topic@id**,
// or a plain Markdown link when a name would break that syntax.
func messageLinkSyntax(channelID uint64, name, topic, id string) string {
	if !breaksLinkSyntax(name) && !breaksLinkSyntax(topic) {
		return "#**" + name + ">" + topic + "@" + id + "**"
	}
	// encode_hash_component keeps "*", which hash_util_encode escapes
	link := strings.ReplaceAll("#narrow/channel/"+markdown.EncodeChannel(channelID, name)+"/topic/"+markdown.HashEncode(topic), ".2A", "*") + "/near/" + id
	if topic == "" {
		topic = emptyTopicDisplayName
	}
	return "[#" + linkEscapes.Replace(name) + " > " + linkEscapes.Replace(topic) + " @ 💬](" + link + ")"
}

// mentionList is get_user_mentions_for_display's list: "a", "a and b",
// "a, b and c" (its Python was not read; web's people.js joins so).
func mentionList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// unusedFence is get_unused_fence: backticks one longer than any fence
// of three or more opening a line (after up to three spaces), at least three.
func unusedFence(content string) string {
	n := 3
	for _, line := range strings.Split(content, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if len(line)-len(trimmed) > 3 {
			continue
		}
		if run := len(trimmed) - len(strings.TrimLeft(trimmed, "`")); run >= 3 {
			n = max(n, run+1)
		}
	}
	return strings.Repeat("`", n)
}

// listReminders serves GET /api/v1/reminders.
func (s *server) listReminders(r *apiRequest) (any, error) {
	list, err := s.store.reminders(r.user.ID)
	if err != nil {
		return nil, err
	}
	return struct {
		Reminders []reminderObject `json:"reminders"`
	}{list}, nil
}

// deleteReminder serves DELETE /api/v1/reminders/{reminder_id}.
func (s *server) deleteReminder(r *apiRequest) (any, error) {
	id, err := pathDigits(r, "reminder_id", errNoSuchReminder)
	if err != nil {
		return nil, err
	}
	return nil, s.store.deleteScheduled(r.user, id, true)
}
