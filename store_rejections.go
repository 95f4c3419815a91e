package main

// The store's refusals: the sentinels a store method answers when it
// refuses a request before writing anything (a rejection), each mapped
// to its API error here, so that handlers and the envelope name them.

import (
	"errors"
)

// ---- Refusals: the store's sentinels ----

// rejection is a store sentinel: a request the store refused before its
// first write, so nothing changed and the rest of its commit group
// stands (store.updateReporting). It says nothing in Zulip's words: what
// a client is told of each is envelope.go's rejectionWords. A refusal
// the route decided (envelope.go's refusal) carries what it tells.
type rejection struct {
	text string
	told error // set by refusal (envelope.go): what the route decided the client is told
}

func (r *rejection) Error() string { return r.text }

// about names what a rejection is about, for texts such as "Invalid
// channel name 'x'".
func (r *rejection) about(name string) error { return &namedError{r, name} }

// namedError is a rejection with the name it is about.
type namedError struct {
	err  *rejection
	name string
}

func (e *namedError) Error() string { return e.err.Error() + ": " + e.name }
func (e *namedError) Unwrap() error { return e.err }

// nameOf is the name a rejection is about, "" when it names nothing.
func nameOf(err error) string {
	var named *namedError
	if errors.As(err, &named) {
		return named.name
	}
	return ""
}

// isRejection tells a store refusal from a failure.
func isRejection(err error) bool {
	var rej *rejection
	return errors.As(err, &rej)
}

// The store's rejections, said in the store's words.
var (
	errEmailTaken        = &rejection{text: "e-mail already in use"}
	errNoSuchUser        = &rejection{text: "no such user"}
	errNoSuchSession     = &rejection{text: "no such web session"}
	errTokenNotFound     = &rejection{text: "token does not exist"}
	errChannelExists     = &rejection{text: "channel already exists"}
	errNoSuchChannel     = &rejection{text: "no such channel"}
	errChannelForbidden  = &rejection{text: "channel not accessible"}
	errNoSuchTopic       = &rejection{text: "no such topic"}
	errInvalidMessageIDs = &rejection{text: "invalid message(s)"}

	errEmptyTopicNotAllowed = &rejection{text: "empty topic not allowed"}
	errTopicsNotAllowed     = &rejection{text: "only the empty topic allowed"}

	errPermissionDenied       = &rejection{text: "insufficient permission"}
	errNoSuchGroup            = &rejection{text: "no such user group"}
	errNoSuchGroupID          = &rejection{text: "no such user group id"}
	errNoSuchUserID           = &rejection{text: "no such user id"}
	errUserDeactivated        = &rejection{text: "user deactivated"}
	errNotSubscribedToChannel = &rejection{text: "not subscribed"}
	errCannotPost             = &rejection{text: "may not post"}

	errChannelWildcardMentionNotAllowed = &rejection{text: "channel wildcard mention not allowed"}
	errTopicWildcardMentionNotAllowed   = &rejection{text: "topic wildcard mention not allowed"}

	errUnableToRender = &rejection{text: "unable to render"}

	// User groups (store_user_groups.go).
	errGroupDeactivated       = &rejection{text: "user group deactivated"}
	errGroupExists            = &rejection{text: "user group name taken"}
	errGroupDeactivatedRename = &rejection{text: "only a deactivated group's name may change"}
	errGroupNameEmpty         = &rejection{text: "empty user group name"}
	errGroupNameTooLong       = &rejection{text: "user group name too long"}
	errGroupNamePrefixed      = &rejection{text: "user group name has a reserved prefix"}
	errAlreadyGroupMember     = &rejection{text: "already a member"}
	errNotGroupMember         = &rejection{text: "not a member"}
	errAlreadySubgroup        = &rejection{text: "already a subgroup"}
	errNotSubgroup            = &rejection{text: "not a subgroup"}
	errSubgroupCycle          = &rejection{text: "subgroup cycle"}
	errSystemGroupNeeded      = &rejection{text: "system group required"}
	errGroupMentionForbidden  = &rejection{text: "may not mention user group"}

	errReactionExists         = &rejection{text: "reaction exists"}
	errReactionDoesNotExist   = &rejection{text: "reaction does not exist"}
	errNoSuchEmoji            = &rejection{text: "no such emoji"}
	errEmojiArgumentMissing   = &rejection{text: "no emoji given"}
	errInvalidEmojiCode       = &rejection{text: "invalid emoji code"}
	errInvalidEmojiName       = &rejection{text: "invalid emoji name"}
	errInvalidEmojiType       = &rejection{text: "invalid emoji type"}
	errInvalidCustomEmoji     = &rejection{text: "invalid custom emoji"}
	errInvalidCustomEmojiName = &rejection{text: "invalid custom emoji name"}
	errCustomEmojiDeactivated = &rejection{text: "custom emoji deactivated"}

	errNoSuchChannelID       = &rejection{text: "no such channel id"}
	errNothingToChange       = &rejection{text: "nothing to change"}
	errPropagateWithoutTopic = &rejection{text: "propagate mode without a move"}
	errResolveGeneralChat    = &rejection{text: "general chat resolved"}
	errContentWhileMoving    = &rejection{text: "content edit in a move"}
	errCannotEditMessage     = &rejection{text: "may not edit"}
	errCannotResolve         = &rejection{text: "may not resolve"}
	errCannotMoveMessage     = &rejection{text: "may not move"}
	errEditTimeLimit         = &rejection{text: "edit time limit"}
	errTopicTimeLimit        = &rejection{text: "topic time limit"}
	errChannelTimeLimit      = &rejection{text: "channel time limit"}
	errCannotDeleteMessage   = &rejection{text: "may not delete"}
	errContentMismatch       = &rejection{text: "content changed"}
	errDeleteTimeLimit       = &rejection{text: "delete time limit"}
	errDMToChannel           = &rejection{text: "direct message moved"}
	errDMTopic               = &rejection{text: "direct message topic"}

	// Invitations (store_invites.go): none has that id or key; one
	// revoked again; past maxInviteRecords; used, revoked or expired
	// (Zulip's ConfirmationKeyError.EXPIRED, one page for all three).
	errNoSuchInvite         = &rejection{text: "no such invitation"}
	errInviteRevokedAlready = &rejection{text: "invitation already revoked"}
	errInvitesFull          = &rejection{text: "too many invitations"}
	errInviteExpired        = &rejection{text: "invitation expired"}

	errNarrowUnknownChannel = &rejection{text: "unknown channel in narrow"}
	errNarrowUnknownUser    = &rejection{text: "unknown user in narrow"}
	errNarrowBadWith        = &rejection{text: "invalid 'with' operand"}

	errDMInvalidEmail         = &rejection{text: "unknown recipient"}
	errDMInvalidUserID        = &rejection{text: "unknown recipient id"}
	errDMRecipientDeactivated = &rejection{text: "recipient deactivated"}
	errDMsDisabled            = &rejection{text: "direct messages disabled"}
	errDMNotAuthorized        = &rejection{text: "no one may authorize the conversation"}
	errDMInitiation           = &rejection{text: "may not start conversations"}
	errNarrowUnknownDMUser    = &rejection{text: "unknown user in dm narrow"}

	errUploadQuota         = &rejection{text: "upload quota exceeded"}
	errNoSuchAttachment    = &rejection{text: "no such upload"}
	errAttachmentForbidden = &rejection{text: "upload not visible"}
	errChannelsFull        = &rejection{text: "the server holds its most channels"}
	errMoveTimeLimit       = &rejection{text: "move time limit"}
)

// moveTimeLimit refuses a change_all move of a topic whose older
// messages are past the realm's move limit: first is the oldest it may
// move, of total, allowed of them.
type moveTimeLimit struct {
	first          uint64
	total, allowed int
}

func (l *moveTimeLimit) Error() string { return errMoveTimeLimit.text }
func (l *moveTimeLimit) Unwrap() error { return errMoveTimeLimit }
