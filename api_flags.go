package main

// Personal flags and every mark-read route: mark_stream_as_read (the
// seed's second operation, deprecated in Zulip in favour of
// messages/flags/narrow), mark_topic_as_read, mark_all_as_read,
// messages/flags by id and messages/flags/narrow by range. The store's
// side is store_messages.go's and store_range.go's.

import (
	"errors"
	"slices"
)

// markStreamAsRead serves POST /api/v1/mark_stream_as_read (deprecated in
// Zulip in favour of POST /messages/flags/narrow).
func (s *server) markStreamAsRead(r *apiRequest) (any, error) {
	channelID, err := r.params.requiredInt("stream_id")
	if err != nil {
		return nil, err
	}
	if channelID <= 0 {
		return nil, errInvalidChannelID
	}
	err = s.store.markChannelRead(r.user, uint64(channelID))
	if errors.Is(err, errNoSuchChannel) {
		return nil, errInvalidChannelID
	}
	return nil, err
}

// markTopicAsRead serves POST /api/v1/mark_topic_as_read (deprecated in
// Zulip in favour of POST /messages/flags/narrow).
func (s *server) markTopicAsRead(r *apiRequest) (any, error) {
	channelID, err := r.params.requiredInt("stream_id")
	if err != nil {
		return nil, err
	}
	topic, err := r.params.requiredString("topic_name")
	if err != nil {
		return nil, err
	}
	if channelID <= 0 {
		return nil, errInvalidChannelID
	}
	_, err = s.store.markTopicRead(r.user, uint64(channelID), topic)
	switch {
	case errors.Is(err, errNoSuchChannel):
		return nil, errInvalidChannelID
	case errors.Is(err, errNoSuchTopic):
		return nil, errNoSuchTopicNamed(topic)
	}
	return nil, err
}

// markAllAsRead serves POST /api/v1/mark_all_as_read. zulite marks
// everything in one transaction, so the answer is always complete.
func (s *server) markAllAsRead(r *apiRequest) (any, error) {
	if err := s.store.markAllRead(r.user); err != nil {
		return nil, err
	}
	return struct {
		Complete bool `json:"complete"`
	}{true}, nil
}

// Zulip's personal message flags: the ones clients may name, and among
// them the ones they may change.
var (
	knownFlags    = []string{"read", "starred", "collapsed", "mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned", "group_mentioned", "has_alert_word", "historical"}
	editableFlags = []string{"read", "starred", "collapsed"}
)

// readFlagChange reads `op` and `flag` and checks them in Zulip's order.
func readFlagChange(p *params) (flagChange, error) {
	op, err := p.requiredString("op")
	if err != nil {
		return flagChange{}, err
	}
	flag, err := p.requiredString("flag")
	if err != nil {
		return flagChange{}, err
	}
	switch {
	case !slices.Contains(knownFlags, flag):
		return flagChange{}, errInvalidFlag(flag)
	case !slices.Contains(editableFlags, flag):
		return flagChange{}, errFlagNotEditable(flag)
	case op != "add" && op != "remove":
		return flagChange{}, errInvalidFlagOperation(op)
	}
	return flagChange{Flag: flag, Add: op == "add"}, nil
}

// updateFlags serves POST /api/v1/messages/flags.
func (s *server) updateFlags(r *apiRequest) (any, error) {
	ids, err := intList(r.params, "messages")
	if err != nil {
		return nil, err
	}
	change, err := readFlagChange(r.params)
	if err != nil {
		return nil, err
	}
	valid := make([]uint64, 0, len(ids))
	for _, id := range ids {
		if id <= 0 {
			return nil, errInvalidMessages
		}
		valid = append(valid, uint64(id))
	}
	_, unsubscribed, err := s.store.updateFlags(r.user, valid, change)
	if err != nil {
		return nil, err
	}
	return struct {
		Messages     []int64  `json:"messages"`
		Unsubscribed []uint64 `json:"ignored_because_not_subscribed_channels"`
	}{ids, nonNilIDs(unsubscribed)}, nil
}

// updateFlagsForNarrow serves POST /api/v1/messages/flags/narrow, the
// replacement for mark_stream_as_read. Like Zulip it clamps the range
// to 5000 messages rather than refusing it.
func (s *server) updateFlagsForNarrow(r *apiRequest) (any, error) {
	q, err := readRange(r.params, false)
	if err != nil {
		return nil, err
	}
	change, err := readFlagChange(r.params)
	if err != nil {
		return nil, err
	}
	q.NumBefore = min(q.NumBefore, max(maxMessagesPerRequest-q.NumAfter, maxMessagesPerRequest/2))
	q.NumAfter = min(q.NumAfter, maxMessagesPerRequest-q.NumBefore)
	release, err := s.walks.take(r.Context(), r.user.ID)
	if err != nil {
		return nil, err
	}
	result, err := s.store.updateFlagsInRange(r.user, q, change)
	release()
	if err != nil {
		return nil, err
	}
	var first, last *uint64
	if n := len(result.Messages); n > 0 {
		first, last = &result.Messages[0].ID, &result.Messages[n-1].ID
	}
	return struct {
		ProcessedCount   int      `json:"processed_count"`
		UpdatedCount     int      `json:"updated_count"`
		FirstProcessedID *uint64  `json:"first_processed_id"`
		LastProcessedID  *uint64  `json:"last_processed_id"`
		FoundOldest      bool     `json:"found_oldest"`
		FoundNewest      bool     `json:"found_newest"`
		Unsubscribed     []uint64 `json:"ignored_because_not_subscribed_channels"`
	}{len(result.Messages), len(result.Changed), first, last, result.FoundOldest, result.FoundNewest, nonNilIDs(result.Unsubscribed)}, nil
}
