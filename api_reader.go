package main

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// realmReadReceipts is the organisation's enable_read_receipts. zulite
// has no setting for it: its organisation is invite-only
// (invite_required), and Zulip's do_create_realm turns read receipts on
// for such a closed organisation.
const realmReadReceipts = true

// renderMessage serves POST /api/v1/messages/render
// (render_message_backend): content, at most MAX_MESSAGE_LENGTH
// characters, rendered as the caller's message would be, and kept
// nowhere.
func (s *server) renderMessage(r *apiRequest) (any, error) {
	content, err := r.params.requiredString("content")
	if err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(content) > maxMessageLength {
		return nil, errStringTooLong("content", maxMessageLength)
	}
	rendering, err := s.store.renderForSend(r.user, outgoingMessage{Content: content, RealmURL: s.baseURL})
	if err != nil {
		return nil, err
	}
	return struct {
		Rendered string `json:"rendered"`
	}{rendering.HTML}, nil
}

// searchFields is what matches_narrow answers for one message.
type searchFields struct {
	MatchContent string `json:"match_content"`
	MatchSubject string `json:"match_subject"`
}

// djangoEscape is Django's escape, which Zulip's escape_html is.
var djangoEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;")

// messagesMatchNarrow serves GET /api/v1/messages/matches_narrow
// (messages_in_narrow_backend): of msg_ids, those the caller may read
// that match the narrow, each with its rendered content and its topic
// HTML-escaped. Zulip highlights a search's matches (ts_headline's
// word matches); zulite's search is a substring test and highlights
// nothing, as its GET /messages adds no match fields. zulite takes at
// most 5000 ids (Zulip's MAX_MESSAGES_PER_FETCH, with its text).
func (s *server) messagesMatchNarrow(r *apiRequest) (any, error) {
	ids, err := intList(r.params, "msg_ids")
	if err != nil {
		return nil, err
	}
	raw, err := readNarrow(r.params, true)
	if err != nil {
		return nil, err
	}
	renameEmptyTopicTerm(raw)
	terms, err := narrowTerms(raw)
	if err != nil {
		return nil, err
	}
	if len(ids) > maxMessagesPerRequest {
		return nil, errTooManyMessages
	}
	wanted := make([]uint64, 0, len(ids))
	for _, id := range ids {
		if id > 0 {
			wanted = append(wanted, uint64(id))
		}
	}
	release, err := s.walks.take(r.Context(), r.user.ID)
	if err != nil {
		return nil, err
	}
	matched, err := s.store.messagesMatching(r.user, wanted, terms)
	release()
	if err != nil {
		return nil, err
	}
	out := make(map[string]searchFields, len(matched))
	for _, m := range matched {
		out[strconv.FormatUint(m.ID, 10)] = searchFields{renderedContent(m.message), djangoEscape.Replace(m.Topic)}
	}
	return struct {
		Messages map[string]searchFields `json:"messages"`
	}{out}, nil
}

// readReceipts serves GET /api/v1/messages/{message_id}/read_receipts
// (read_receipts.py): who of the message's recipients read it, as
// store_read_receipts.go finds them.
func (s *server) readReceipts(r *apiRequest) (any, error) {
	id, err := pathMessageID(r)
	if err != nil {
		return nil, err
	}
	ids, err := s.store.readReceipts(r.user, id)
	if err != nil {
		return nil, err
	}
	return struct {
		UserIDs []uint64 `json:"user_ids"`
	}{ids}, nil
}
