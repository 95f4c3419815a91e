package main

// Who hears someone typing (typing.go): nothing is stored, the store
// only answers who may type where and who listens.

import (
	"encoding/json"
	"slices"

	"go.etcd.io/bbolt"
)

// maxChannelSizeForTyping is Zulip's MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS:
// in a larger channel nobody is told who is typing.
const maxChannelSizeForTyping = 100

// decodeOverrides reads a user_settings value (store_users.go); a value
// that does not decode counts as no overrides.
func decodeOverrides(v []byte) map[string]json.RawMessage {
	overrides := map[string]json.RawMessage{}
	json.Unmarshal(v, &overrides)
	return overrides
}

// settingOn reads a boolean personal setting of the user inside a
// transaction: their override, else the default.
func settingOn(tx *bbolt.Tx, userID uint64, name string) bool {
	return settingOf[bool](decodeOverrides(tx.Bucket(bucketUserSettings).Get(itob(userID))), name)
}

// channelTyping checks that the sender may tell a channel they are
// typing (their send_stream_typing_notifications setting, then Zulip's
// access_stream_by_id_for_message and access_stream_for_send_message)
// and answers the subscribers who receive typing notifications.
func (s *store) channelTyping(sender user, channelID uint64) ([]uint64, error) {
	var audience []uint64
	err := s.view(func(tx *bbolt.Tx) error {
		audience = nil
		if !settingOn(tx, sender.ID, "send_stream_typing_notifications") {
			return refusal(errTypingOffForChannels)
		}
		ch, err := s.channelByID(tx, channelID)
		if err != nil || ch.Archived || !s.canAccess(tx, sender, ch) { // access_stream_by_id_for_message wants an active channel
			return refusal(errInvalidChannelID)
		}
		if !s.canPost(sender, ch) {
			return errCannotPost
		}
		audience = channelTypingAudience(tx, ch.ID)
		return nil
	})
	return audience, err
}

// channelTypingAudience answers a channel's active subscribers who
// receive typing notifications, none in a channel past
// maxChannelSizeForTyping.
func channelTypingAudience(tx *bbolt.Tx, channelID uint64) []uint64 {
	subscribers := subscriberIDs(tx, channelID)
	if len(subscribers) > maxChannelSizeForTyping {
		return nil
	}
	return typingListeners(tx, subscribers)
}

// typingListeners keeps the active users who receive typing
// notifications.
func typingListeners(tx *bbolt.Tx, ids []uint64) []uint64 {
	var out []uint64
	for _, id := range ids {
		if u, err := lookUpUser(tx, id); err == nil && u.Active && settingOn(tx, id, "receives_typing_notifications") {
			out = append(out, id)
		}
	}
	return out
}

// editTyping is what a typing_edit_message event needs: the message
// edited, where it is, and who is told.
type editTyping struct {
	Message  message
	Audience []uint64
}

// messageEditTyping checks that the user may say they are editing the
// message (Zulip's send_message_edit_notification_backend: access_message,
// validate_user_can_edit_message with no buffer, then their typing
// setting for its kind) and answers who is told: the channel's
// subscribers, or the conversation's participants, who listen.
func (s *store) messageEditTyping(u user, id uint64) (editTyping, error) {
	var t editTyping
	err := s.view(func(tx *bbolt.Tx) error {
		m, _, err := s.reactableMessage(tx, u, id)
		if err != nil {
			return err
		}
		if m.SenderID != u.ID {
			return errCannotEditMessage
		}
		if olderThan(s.now().Unix(), m.Timestamp, defaultMessageLimitSeconds) {
			return errEditTimeLimit
		}
		t = editTyping{Message: m}
		if !m.isDirect() {
			if !settingOn(tx, u.ID, "send_stream_typing_notifications") {
				return refusal(errTypingOffForChannels)
			}
			t.Audience = channelTypingAudience(tx, m.ChannelID)
			return nil
		}
		if !settingOn(tx, u.ID, "send_private_typing_notifications") {
			return refusal(errTypingOffForDirect)
		}
		participants, _ := conversationParticipants(tx, m.ConversationID)
		t.Audience = typingListeners(tx, participants)
		return nil
	})
	return t, err
}

// directTyping checks a direct conversation's participants (the sender
// among them), every one an account, and answers them all and those to
// tell: the active ones who receive typing notifications.
func (s *store) directTyping(sender user, to []int64) (participants []user, audience []uint64, err error) {
	err = s.view(func(tx *bbolt.Tx) error {
		participants, audience = nil, nil
		if !settingOn(tx, sender.ID, "send_private_typing_notifications") {
			return refusal(errTypingOffForDirect)
		}
		ids := to
		if !slices.Contains(ids, int64(sender.ID)) {
			ids = append(append([]int64{}, to...), int64(sender.ID))
		}
		for _, id := range ids {
			if id <= 0 {
				return refusal(errInvalidTypingUser(id))
			}
			u, err := lookUpUser(tx, uint64(id))
			if err != nil {
				return refusal(errInvalidTypingUser(id))
			}
			participants = append(participants, u)
		}
		for _, u := range participants {
			if u.Active && settingOn(tx, u.ID, "receives_typing_notifications") {
				audience = append(audience, u.ID)
			}
		}
		return nil
	})
	return participants, audience, err
}
