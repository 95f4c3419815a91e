package main

// Emoji reactions (zerver/views/reactions.py): adding and removing one,
// and the reaction event every subscriber of the channel hears.

// pathMessageID reads the {message_id} of a route's path.
func pathMessageID(r *apiRequest) (uint64, error) {
	return pathDigits(r, "message_id", errInvalidMessages)
}

// optionalString is a string parameter that may be absent.
func optionalString(p *params, name string) *string {
	if v, ok := p.lookup(name); ok {
		return &v
	}
	return nil
}

// addReaction serves POST /api/v1/messages/{message_id}/reactions:
// emoji_name, and optionally emoji_code and reaction_type (without
// them, the name is looked up in Zulip's table).
func (s *server) addReaction(r *apiRequest) (any, error) {
	id, err := pathMessageID(r)
	if err != nil {
		return nil, err
	}
	name, err := r.params.requiredString("emoji_name")
	if err != nil {
		return nil, err
	}
	req := reactionRequest{Name: &name, Code: optionalString(r.params, "emoji_code"), Type: optionalString(r.params, "reaction_type")}
	return nil, s.store.addReaction(r.user, id, req)
}

// removeReaction serves DELETE /api/v1/messages/{message_id}/reactions:
// emoji_code or emoji_name (then looked up), and reaction_type
// (unicode_emoji when not given).
func (s *server) removeReaction(r *apiRequest) (any, error) {
	id, err := pathMessageID(r)
	if err != nil {
		return nil, err
	}
	req := reactionRequest{Name: optionalString(r.params, "emoji_name"), Code: optionalString(r.params, "emoji_code"),
		Type: optionalString(r.params, "reaction_type")}
	return nil, s.store.removeReaction(r.user, id, req)
}

// publishReaction tells the audience of a reaction that it was added or
// removed, in Zulip's shape at feature level 421: user_id and, restored
// at feature level 339 for older apps, the deprecated user object.
func (s *server) publishReaction(c reactionChanged) {
	op := "remove"
	if c.Add {
		op = "add"
	}
	e := event{"type": "reaction", "op": op, "user_id": c.User.ID,
		"user":       map[string]any{"user_id": c.User.ID, "email": c.User.Email, "full_name": c.User.FullName},
		"message_id": c.MessageID, "emoji_name": c.Reaction.EmojiName, "emoji_code": c.Reaction.EmojiCode,
		"reaction_type": c.Reaction.ReactionType}
	// The same bytes for everyone who hears it: encoded once, not once a
	// queue (a reaction in a channel of thousands encoded thousands of
	// times).
	s.events.tell("reaction", usersAudience(c.Audience...), e, nil)
}
