package main

// Emoji reactions: each message's reactions, in the order they were
// added, as Zulip's Reaction rows (zerver/actions/reactions.py).

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"go.etcd.io/bbolt"

	"zulite/internal/emoji"
)

// Zulip's reaction types; a realm_emoji reaction's code is the custom
// emoji's id (store_realm_emoji.go).
const (
	reactionUnicode    = "unicode_emoji"
	reactionRealm      = "realm_emoji"
	reactionZulipExtra = "zulip_extra_emoji"
)

// storedReaction is one reaction as the reactions bucket holds it.
type storedReaction struct {
	UserID       uint64 `json:"user_id"`
	EmojiName    string `json:"emoji_name"`
	EmojiCode    string `json:"emoji_code"`
	ReactionType string `json:"reaction_type"`
}

// reactionRequest is an add or a remove as a client asks it: a name,
// and a code and a type when the client gives them.
type reactionRequest struct {
	Name *string
	Code *string
	Type *string
}

// reactionChanged: a user added (Add) or removed a reaction; Audience
// is who hears of it.
type reactionChanged struct {
	User      user
	MessageID uint64
	Reaction  storedReaction
	Add       bool
	Audience  []uint64
}

// reactionsOf is a message's reactions, oldest first.
func reactionsOf(tx *bbolt.Tx, messageID uint64) []storedReaction {
	var list []storedReaction
	prefix := itob(messageID)
	c := tx.Bucket(bucketReactions).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var r storedReaction
		if json.Unmarshal(v, &r) == nil {
			list = append(list, r)
		}
	}
	return list
}

// attachReactions gives each message of a page its reactions.
func attachReactions(tx *bbolt.Tx, page []pagedMessage) {
	for i := range page {
		page[i].Reactions = reactionsOf(tx, page[i].ID)
	}
}

// reactableMessage is a message the user may react to, edit, delete or
// add a submessage to: one of a channel they may read that is not
// archived (Zulip's access_message with is_modifying_message=True).
func (s *store) reactableMessage(tx *bbolt.Tx, u user, messageID uint64) (message, channel, error) {
	m, ch, err := s.readableMessage(tx, u, messageID)
	if err == nil && ch.Archived { // "You can't access messages in deactivated streams"
		return m, channel{}, errInvalidMessageIDs
	}
	return m, ch, err
}

// readableMessage is a message the user may read: one of a channel they
// may read, archived or not (Zulip's access_message).
func (s *store) readableMessage(tx *bbolt.Tx, u user, messageID uint64) (message, channel, error) {
	m, err := messageByID(tx, messageID)
	if err != nil {
		return m, channel{}, errInvalidMessageIDs
	}
	if m.isDirect() { // its participants' (store_dms.go)
		if !isParticipant(tx, u.ID, m.ConversationID) {
			return m, channel{}, errInvalidMessageIDs
		}
		return m, channel{}, nil
	}
	ch, err := s.channelByID(tx, m.ChannelID)
	if err != nil || !s.canAccess(tx, u, ch) {
		return m, channel{}, errInvalidMessageIDs
	}
	return m, ch, nil
}

// emojiFor is Zulip's get_emoji_data: a name's code and type, an active
// custom emoji first.
func emojiFor(custom realmEmojiSet, name string) (code, kind string, err error) {
	if e, ok := custom.active(name); ok {
		return strconv.FormatUint(e.ID, 10), reactionRealm, nil
	}
	if name == emoji.Zulip {
		return emoji.Zulip, reactionZulipExtra, nil
	}
	if code, ok := emoji.CodeForName(name); ok {
		return code, reactionUnicode, nil
	}
	return "", "", errNoSuchEmoji.about(name)
}

// checkEmoji is Zulip's check_emoji_request: a name, code and type that
// name one emoji.
func checkEmoji(custom realmEmojiSet, name, code, kind string) error {
	switch kind {
	case reactionRealm:
		e, ok := custom.byID(code)
		switch {
		case !ok:
			return errInvalidCustomEmoji
		case e.Name != name:
			return errInvalidCustomEmojiName
		case e.Deactivated:
			return errCustomEmojiDeactivated
		}
	case reactionZulipExtra:
		if code != emoji.Zulip {
			return errInvalidEmojiCode
		}
		if name != code {
			return errInvalidEmojiName
		}
	case reactionUnicode:
		if _, ok := emoji.CanonicalName(code); !ok {
			return errInvalidEmojiCode
		}
		if c, _ := emoji.CodeForName(name); c != code {
			return errInvalidEmojiName
		}
	default:
		return errInvalidEmojiType
	}
	return nil
}

// reactionAudience is who hears of a reaction: the channel's
// subscribers and whoever reacted (Zulip's
// event_recipient_ids_for_action_on_messages).
func reactionAudience(tx *bbolt.Tx, channelID, actorID uint64) []uint64 {
	ids := subscriberIDs(tx, channelID)
	if !slices.Contains(ids, actorID) {
		ids = append(ids, actorID)
	}
	return ids
}

// addReaction is Zulip's check_add_reaction: the message must be one the
// user may read; the emoji is looked up by name when the client gives
// no code or type; a second reaction of the user with the same emoji is
// refused; one with an emoji someone already reacted with takes that
// reaction's name (a vote for it), any other must name a real emoji.
func (s *store) addReaction(u user, messageID uint64, req reactionRequest) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		m, ch, err := s.reactableMessage(tx, u, messageID)
		if err != nil {
			return err
		}
		r := storedReaction{UserID: u.ID, EmojiName: *req.Name}
		if req.Code == nil || req.Type == nil {
			code, kind, err := emojiFor(s.customEmoji(), *req.Name)
			if err != nil {
				return err
			}
			r.EmojiCode, r.ReactionType = code, kind
		}
		if req.Code != nil {
			r.EmojiCode = *req.Code
		}
		if req.Type != nil {
			r.ReactionType = *req.Type
		}
		existing := reactionsOf(tx, messageID)
		if slices.ContainsFunc(existing, func(e storedReaction) bool {
			return e.UserID == u.ID && e.EmojiCode == r.EmojiCode && e.ReactionType == r.ReactionType
		}) {
			return errReactionExists
		}
		if i := slices.IndexFunc(existing, func(e storedReaction) bool {
			return e.EmojiCode == r.EmojiCode && e.ReactionType == r.ReactionType
		}); i >= 0 {
			r.EmojiName = existing[i].EmojiName
		} else if err := checkEmoji(s.customEmoji(), r.EmojiName, r.EmojiCode, r.ReactionType); err != nil {
			return err
		}
		b := tx.Bucket(bucketReactions)
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		if err := putJSON(b, append(itob(messageID), itob(seq)...), r); err != nil {
			return err
		}
		if err := s.followOnParticipation(tx, u, ch, m, report); err != nil {
			return err
		}
		report(reactionChanged{User: u, MessageID: messageID, Reaction: r, Add: true, Audience: messageAudience(tx, m, ch.ID, u.ID)})
		return nil
	})
}

// removeReaction is Zulip's remove_reaction: the user's reaction with
// the code (looked up by name when none is given) and type.
func (s *store) removeReaction(u user, messageID uint64, req reactionRequest) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		m, ch, err := s.reactableMessage(tx, u, messageID)
		if err != nil {
			return err
		}
		var code string
		if req.Code != nil {
			code = *req.Code
		} else {
			if req.Name == nil {
				return errEmojiArgumentMissing
			}
			if code, _, err = emojiFor(s.customEmoji(), *req.Name); err != nil {
				return err
			}
		}
		kind := reactionUnicode
		if req.Type != nil {
			kind = *req.Type
		}
		b := tx.Bucket(bucketReactions)
		prefix := itob(messageID)
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var r storedReaction
			if json.Unmarshal(v, &r) != nil || r.UserID != u.ID || r.EmojiCode != code || r.ReactionType != kind {
				continue
			}
			if err := b.Delete(slices.Clone(k)); err != nil {
				return err
			}
			report(reactionChanged{User: u, MessageID: messageID, Reaction: r, Audience: messageAudience(tx, m, ch.ID, u.ID)})
			return nil
		}
		return errReactionDoesNotExist
	})
}
