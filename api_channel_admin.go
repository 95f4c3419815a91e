package main

// Administering channels: PATCH and DELETE /streams/{id}, a topic's
// deletion, a channel's members and the default channels (Zulip 11's
// zerver/views/streams.py; the store's side is store_channel_admin.go).

import (
	"strings"
	"time"
	"unicode/utf8"
)

// topicDeleteTime is how long POST /streams/{id}/delete_topic deletes
// before it answers complete: false (Zulip's 50 seconds); the client
// asks again for the rest.
const topicDeleteTime = 50 * time.Second

// updateChannel serves PATCH /api/v1/streams/{stream_id}: Zulip's
// update_stream_backend, its parameters read in Zulip's order.
func (s *server) updateChannel(r *apiRequest) (any, error) {
	id, err := pathChannelID(r)
	if err != nil {
		return nil, err
	}
	c := channelUpdate{ChannelID: id}
	if v, ok := r.params.lookup("description"); ok {
		if utf8.RuneCountInString(v) > maxChannelDescriptionLength {
			return nil, errChannelDescriptionTooLong
		}
		if strings.ContainsRune(v, 0) {
			return nil, errChannelDescriptionCharacter
		}
		v = strings.ReplaceAll(v, "\n", " ") // Zulip allows no newlines in a description
		c.Description = &v
	}
	for _, b := range []struct {
		name string
		to   **bool
	}{{"is_private", &c.Private}, {"is_default_stream", &c.Default}, {"history_public_to_subscribers", &c.HistoryPublic}, {"is_web_public", &c.WebPublic}} {
		if *b.to, err = optionalBoolPtr(r.params, b.name); err != nil {
			return nil, err
		}
	}
	if v, ok := r.params.lookup("new_name"); ok {
		name := strings.TrimSpace(v)
		c.NewName = &name
	}
	if _, ok := r.params.lookup("message_retention_days"); ok {
		if _, err := readRetention(r.params); err != nil {
			return nil, err
		}
		c.Retention = true
	}
	archived, err := optionalBoolPtr(r.params, "is_archived")
	if err != nil {
		return nil, err
	}
	c.Unarchive = archived != nil && !*archived // is_archived=true does nothing: DELETE archives
	if v, ok := r.params.lookup("topics_policy"); ok {
		policy := strings.Trim(v, `"`)
		switch policy {
		case "inherit", "allow_empty_topic", "disable_empty_topic", "empty_topic_only":
		default:
			return nil, errInvalidSetting("topics_policy")
		}
		c.TopicsPolicy = &policy
	}
	for p := range channelPermissionCount {
		name := p.name()
		next, old, ok, err := groupChangeParam(r.params, name)
		if err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		g := groupChange{Setting: p}
		if g.New, err = groupSettingOf(name+`["new"]`, next); err != nil {
			return nil, err
		}
		if old != nil {
			o, err := groupSettingOf(name+`["old"]`, old)
			if err != nil {
				return nil, err
			}
			g.Old = &o
		}
		c.Groups = append(c.Groups, g)
	}
	if raw, ok := r.params.lookup("folder_id"); ok && strings.TrimSpace(raw) != "null" {
		if _, err := parseInt("folder_id", raw); err != nil {
			return nil, err
		}
		c.Folder = true
	}
	return nil, s.store.updateChannel(r.user, c)
}

// archiveChannel serves DELETE /api/v1/streams/{stream_id}: Zulip's
// deactivate_stream_backend.
func (s *server) archiveChannel(r *apiRequest) (any, error) {
	id, err := pathChannelID(r)
	if err != nil {
		return nil, err
	}
	return nil, s.store.archiveChannel(r.user, id)
}

// deleteTopic serves POST /api/v1/streams/{stream_id}/delete_topic, for
// administrators (Zulip's delete_in_topic): it deletes the topic's
// messages in batches for at most topicDeleteTime and says whether it
// deleted them all.
func (s *server) deleteTopic(r *apiRequest) (any, error) {
	id, err := pathChannelID(r)
	if err != nil {
		return nil, err
	}
	topic, err := r.params.requiredString("topic_name")
	if err != nil {
		return nil, err
	}
	if topic == emptyTopicDisplayName { // Zulip's maybe_rename_general_chat_to_empty_topic
		topic = ""
	}
	limit := s.topicDeleteTime
	if limit == 0 {
		limit = topicDeleteTime
	}
	complete, err := s.store.deleteTopic(r.user, id, topic, s.store.now().Add(limit))
	if err != nil {
		return nil, err
	}
	return struct {
		Complete bool `json:"complete"`
	}{complete}, nil
}

// channelMembers serves GET /api/v1/streams/{stream_id}/members: Zulip's
// get_subscribers_backend.
func (s *server) channelMembers(r *apiRequest) (any, error) {
	id, err := pathChannelID(r)
	if err != nil {
		return nil, err
	}
	ids, err := s.store.channelMembers(r.user, id)
	if err != nil {
		return nil, err
	}
	return struct {
		Subscribers []uint64 `json:"subscribers"`
	}{ids}, nil
}

// addDefaultChannel serves POST /api/v1/default_streams and
// removeDefaultChannel DELETE /api/v1/default_streams, for
// administrators (Zulip's check_if_user_can_manage_default_streams).
func (s *server) addDefaultChannel(r *apiRequest) (any, error) { return s.setDefaultChannel(r, true) }

func (s *server) removeDefaultChannel(r *apiRequest) (any, error) {
	return s.setDefaultChannel(r, false)
}

func (s *server) setDefaultChannel(r *apiRequest, add bool) (any, error) {
	id, err := r.params.requiredInt("stream_id")
	if err != nil {
		return nil, err
	}
	if id < 0 {
		return nil, errInvalidChannelID
	}
	return nil, s.store.setDefaultChannel(r.user, uint64(id), add)
}
