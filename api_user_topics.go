package main

// Topics one mutes, unmutes or follows: POST /user_topics, the legacy
// PATCH /users/me/subscriptions/muted_topics, register's user_topics
// (and legacy muted_topics), and the user_topic (and legacy
// muted_topics) events (zerver/views/user_topics.py,
// zerver/actions/user_topics.py, zerver/lib/user_topics.py).

import (
	"slices"
	"unicode/utf8"
)

// updateUserTopic serves POST /api/v1/user_topics: stream_id, topic
// and visibility_policy, checked in that order (Zulip's
// update_user_topic). Inherit needs only the channel to exist; another
// policy needs the channel readable; both are refused "Invalid channel
// ID".
func (s *server) updateUserTopic(r *apiRequest) (any, error) {
	channelID, err := r.params.requiredInt("stream_id")
	if err != nil {
		return nil, err
	}
	topic, err := topicParam(r.params)
	if err != nil {
		return nil, err
	}
	policy, err := r.params.requiredInt("visibility_policy")
	if err != nil {
		return nil, err
	}
	if policy < policyInherit || policy > policyFollowed {
		return nil, errNotInPossibleValues("visibility_policy")
	}
	return nil, s.store.setUserTopic(r.user, topicTarget{ChannelID: uint64(channelID), Topic: storedUserTopic(topic), Policy: int(policy), Missing: refusal(errInvalidChannelID)})
}

// updateMutedTopic serves the legacy PATCH
// /api/v1/users/me/subscriptions/muted_topics: stream_id or stream
// (exactly one), topic, and op: add mutes the topic, remove takes its
// policy away, whatever it is (Zulip's update_muted_topic).
func (s *server) updateMutedTopic(r *apiRequest) (any, error) {
	var t topicTarget
	_, byID := r.params.lookup("stream_id")
	if byID {
		id, err := r.params.requiredInt("stream_id")
		if err != nil {
			return nil, err
		}
		t.ChannelID = uint64(id)
	}
	name, byName := r.params.lookup("stream")
	topic, err := topicParam(r.params)
	if err != nil {
		return nil, err
	}
	op, err := r.params.requiredString("op")
	if err != nil {
		return nil, err
	}
	if op != "add" && op != "remove" {
		return nil, errInvalidMutedTopicOp
	}
	switch {
	case !byID && !byName:
		return nil, errMissingStreamIDArgument
	case byID && byName:
		return nil, incompatibleParameters("stream_id", "stream")
	}
	t.ChannelName, t.Topic = name, storedUserTopic(topic)
	switch {
	case op == "remove":
		t.Policy, t.Missing = policyInherit, refusal(errTopicNotMuted)
	case byName:
		t.Policy, t.Missing = policyMuted, errNoSuchChannel.about(name)
	default:
		t.Policy, t.Missing = policyMuted, refusal(errInvalidChannelID)
	}
	return nil, s.store.setUserTopic(r.user, t)
}

// topicParam reads the required topic parameter, at most
// maxTopicLength characters.
func topicParam(p *params) (string, error) {
	topic, err := p.requiredString("topic")
	if err != nil {
		return "", err
	}
	if utf8.RuneCountInString(topic) > maxTopicLength {
		return "", errTopicTooLong
	}
	return topic, nil
}

// userTopicItem is one of register's user_topics.
type userTopicItem struct {
	StreamID         uint64 `json:"stream_id"`
	TopicName        string `json:"topic_name"`
	LastUpdated      int64  `json:"last_updated"`
	VisibilityPolicy int    `json:"visibility_policy"`
}

// addUserTopicState adds register's user_topics (fetch type user_topic),
// the empty topic by its display name for clients without the
// empty_topic_name capability, and the legacy muted_topics, which Zulip
// leaves out for clients that ask for user_topic.
func (s *server) addUserTopicState(state map[string]any, u user, o registerOptions) error {
	if o.want("user_topic") {
		rows, err := s.store.userTopics(u.ID)
		if err != nil {
			return err
		}
		items := make([]userTopicItem, 0, len(rows))
		for _, r := range rows {
			items = append(items, userTopicItem{r.ChannelID, displayTopic(r.Topic, o.capabilities.emptyTopicName), r.Updated, r.Policy})
		}
		state["user_topics"] = items
	}
	if o.want("muted_topics") && (o.fetchTypes == nil || !o.want("user_topic")) {
		muted, err := s.store.mutedTopics(u.ID)
		if err != nil {
			return err
		}
		state["muted_topics"] = muted
	}
	return nil
}

// publishUserTopic tells the user's queues of a changed topic policy:
// first the legacy muted_topics (the whole list), which a queue that
// asked for user_topic by name is not told (Zulip's accepts_event), then
// user_topic, with the empty topic by its display name for queues
// without empty_topic_name.
func (s *server) publishUserTopic(c userTopicChanged) {
	to := usersAudience(c.UserID)
	if c.MutedLater {
		c.Muted, _ = s.store.mutedTopics(c.UserID)
	}
	if c.Muted != nil {
		s.events.tell("muted_topics", to, event{"type": "muted_topics", "muted_topics": c.Muted}, func(q *eventQueue) bool {
			return !slices.Contains(q.types, "user_topic")
		})
	}
	e := event{"type": "user_topic", "stream_id": c.ChannelID, "topic_name": c.Topic, "last_updated": c.Updated, "visibility_policy": c.Policy}
	if c.Topic != "" {
		s.events.tell("user_topic", to, e, nil)
		return
	}
	s.events.tell("user_topic", to, e, func(q *eventQueue) bool { return q.emptyTopicName })
	named := cloneEvent(e)
	named["topic_name"] = emptyTopicDisplayName
	s.events.tell("user_topic", to, named, func(q *eventQueue) bool { return !q.emptyTopicName })
}
