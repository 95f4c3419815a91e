package main

// User status: POST /users/me/status, GET /users/{user_id}/status,
// register's user_status and the user_status events
// (zerver/views/presence.py, zerver/lib/user_status.py,
// zerver/actions/user_status.py).

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxStatusTextLength is Zulip's limit on status_text, after trimming.
const maxStatusTextLength = 60

// setStatus serves POST /api/v1/users/me/status (humans only), checking
// parameters in Zulip's order: away, emoji_code, emoji_name,
// reaction_type, status_text, then check_update_user_status.
// Emoji are checked against the same table as reactions (internal/emoji).
func (s *server) setStatus(r *apiRequest) (any, error) {
	var c statusChange
	if _, ok := r.params.lookup("away"); ok {
		away, err := r.params.optionalBool("away", false)
		if err != nil {
			return nil, err
		}
		c.Away = &away
	}
	c.EmojiCode = optionalString(r.params, "emoji_code")
	c.EmojiName = optionalString(r.params, "emoji_name")
	c.EmojiRT = optionalString(r.params, "reaction_type")
	if text := optionalString(r.params, "status_text"); text != nil {
		trimmed := strings.TrimSpace(*text)
		if utf8.RuneCountInString(trimmed) > maxStatusTextLength {
			return nil, errStatusTextTooLong
		}
		c.Text = &trimmed
	}
	if c.Away == nil && c.Text == nil && c.EmojiName == nil {
		return nil, errNoNewValues
	}
	switch {
	case c.EmojiName != nil && *c.EmojiName == "":
		none, unicode := "", "unicode_emoji"
		c.EmojiCode, c.EmojiRT = &none, &unicode
	case c.EmojiName != nil:
		if c.EmojiCode == nil || c.EmojiRT == nil {
			code, kind, err := emojiFor(s.store.customEmoji(), *c.EmojiName)
			if err != nil {
				return nil, err
			}
			if c.EmojiCode == nil {
				c.EmojiCode = &code
			}
			if c.EmojiRT == nil {
				c.EmojiRT = &kind
			}
		}
		if err := checkEmoji(s.store.customEmoji(), *c.EmojiName, *c.EmojiCode, *c.EmojiRT); err != nil {
			return nil, err
		}
	case c.EmojiCode != nil || c.EmojiRT != nil:
		return nil, errEmojiNameMissing
	}
	c.Client = clientName(r)
	return nil, s.store.setUserStatus(r.user, c)
}

// userStatus serves GET /api/v1/users/{user_id}/status (feature level 262).
func (s *server) userStatus(r *apiRequest) (any, error) {
	id, err := strconv.ParseUint(r.PathValue("user"), 10, 64)
	if err != nil {
		return nil, errNoSuchUser
	}
	status, err := s.store.statusOf(id)
	if err != nil {
		return nil, err
	}
	return struct {
		Status statusObject `json:"status"`
	}{status}, nil
}

// addUserStatusState adds register's user_status: statuses by user id.
func (s *server) addUserStatusState(state map[string]any) error {
	statuses, err := s.store.userStatuses()
	if err != nil {
		return err
	}
	out := make(map[string]statusObject, len(statuses))
	for id, st := range statuses {
		out[strconv.FormatUint(id, 10)] = st
	}
	state["user_status"] = out
	return nil
}

// publishUserStatus tells every queue what the user set, the fields the
// request gave and no others (zerver/actions/user_status.py).
func (s *server) publishUserStatus(c userStatusChanged) {
	e := event{"type": "user_status", "user_id": c.UserID}
	if c.Change.Away != nil {
		e["away"] = *c.Change.Away
	}
	if c.Change.Text != nil {
		e["status_text"] = *c.Change.Text
	}
	if c.Change.EmojiName != nil {
		e["emoji_name"] = *c.Change.EmojiName
		e["emoji_code"] = *c.Change.EmojiCode
		e["reaction_type"] = *c.Change.EmojiRT
	}
	s.events.tellEveryone("user_status", nil, e)
}
