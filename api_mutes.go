package main

// Muted users and alert words: POST/DELETE /users/me/muted_users/{id},
// GET/POST/DELETE /users/me/alert_words, register's muted_users and
// alert_words and their events (zerver/views/muted_users.py,
// zerver/actions/muted_users.py, zerver/views/alert_words.py,
// zerver/actions/alert_words.py).

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxAlertWordLength is Zulip's bound on one alert word
// (StringConstraints(max_length=100) in its view), counted in
// characters before the word is trimmed.
const maxAlertWordLength = 100

// maxAlertWords is zulite's bound on one user's alert words, which
// Zulip does not bound: every message sent is matched against every
// user's words.
const maxAlertWords = 1000

// mutedUserID reads {muted_user_id}, an integer as Django's path
// converter takes it: anything else is no route.
func mutedUserID(r *apiRequest) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue("muted_user_id"), 10, 64)
	if err != nil {
		return 0, errNotFound
	}
	return id, nil
}

// muteUser serves POST /api/v1/users/me/muted_users/{muted_user_id}.
func (s *server) muteUser(r *apiRequest) (any, error) {
	id, err := mutedUserID(r)
	if err != nil {
		return nil, err
	}
	if id == r.user.ID {
		return nil, errCannotMuteSelf
	}
	return nil, s.store.muteUser(r.user, id)
}

// unmuteUser serves DELETE /api/v1/users/me/muted_users/{muted_user_id}.
func (s *server) unmuteUser(r *apiRequest) (any, error) {
	id, err := mutedUserID(r)
	if err != nil {
		return nil, err
	}
	return nil, s.store.unmuteUser(r.user, id)
}

// addMutedUsersState adds register's muted_users.
func (s *server) addMutedUsersState(state map[string]any, u user) error {
	muted, err := s.store.mutedUsers(u.ID)
	if err != nil {
		return err
	}
	state["muted_users"] = muted
	return nil
}

// publishMutedUsers tells the user's queues their list as it is now.
func (s *server) publishMutedUsers(c mutedUsersChanged) {
	s.events.tell("muted_users", usersAudience(c.UserID), event{"type": "muted_users", "muted_users": c.Muted}, nil)
}

type alertWordsAnswer struct {
	AlertWords []string `json:"alert_words"`
}

// listAlertWords serves GET /api/v1/users/me/alert_words.
func (s *server) listAlertWords(r *apiRequest) (any, error) {
	words, err := s.store.alertWords(r.user.ID)
	return alertWordsAnswer{words}, err
}

// addAlertWords serves POST /api/v1/users/me/alert_words: each word at
// most maxAlertWordLength characters, then trimmed, empty ones dropped
// (clean_alert_words).
func (s *server) addAlertWords(r *apiRequest) (any, error) {
	words, err := stringList(r.params, "alert_words")
	if err != nil {
		return nil, err
	}
	var clean []string
	for i, w := range words {
		if utf8.RuneCountInString(w) > maxAlertWordLength {
			return nil, errAlertWordTooLong(elemName("alert_words", i))
		}
		if w = strings.TrimFunc(w, pythonSpace); w != "" {
			clean = append(clean, w)
		}
	}
	words, err = s.store.addAlertWords(r.user, clean)
	return alertWordsAnswer{words}, err
}

// removeAlertWords serves DELETE /api/v1/users/me/alert_words.
func (s *server) removeAlertWords(r *apiRequest) (any, error) {
	words, err := stringList(r.params, "alert_words")
	if err != nil {
		return nil, err
	}
	words, err = s.store.removeAlertWords(r.user, words)
	return alertWordsAnswer{words}, err
}

// addAlertWordsState adds register's alert_words.
func (s *server) addAlertWordsState(state map[string]any, u user) error {
	words, err := s.store.alertWords(u.ID)
	if err != nil {
		return err
	}
	state["alert_words"] = words
	return nil
}

// publishAlertWords tells the user's queues their words as they are now.
func (s *server) publishAlertWords(c alertWordsChanged) {
	s.events.tell("alert_words", usersAudience(c.UserID), event{"type": "alert_words", "alert_words": c.Words}, nil)
}

// pythonSpace is Python's str.isspace, which str.strip trims: Unicode's
// white space and the four separators \x1c-\x1f.
func pythonSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }
