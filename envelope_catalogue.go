package main

// The error catalogue, feature by feature, each with Zulip's texts and
// where they come from; envelope.go has the envelope itself and the
// errors every route shares (parameters, credentials, rate limits).

import (
	"encoding/json"
	"html"
	"net/http"
	"strconv"
	"strings"
)

// Push tokens (zerver/views/push_notifications.py).
var (
	errTokenLength      = badRequest("Empty or invalid length token")
	errInvalidAPNsToken = badRequest("Invalid APNS token")
)

// Channels and subscriptions (zerver/lib/streams.py,
// zerver/views/streams.py).
var (
	errChannelNameEmpty            = badRequest("Channel name can't be empty.")
	errChannelNameTooLong          = badRequest("Channel name too long (limit: " + strconv.Itoa(maxChannelNameLength) + " characters).")
	errChannelDescriptionCharacter = badRequest("Invalid character in channel description")
	errChannelDescriptionTooLong   = badRequest("description is too long (limit: " + strconv.Itoa(maxChannelDescriptionLength) + " characters)")
	errNotAuthorizedForQuery       = badRequest("User not authorized for this query")
	errInvalidChannelID            = badRequest("Invalid channel ID")
)

// Channel and subscription settings (zerver/views/streams.py,
// zerver/lib/streams.py, zerver/lib/user_groups.py, zerver/decorator.py,
// zerver/lib/typed_endpoint_validators.py).
var (
	errInsufficientPermission = badRequest("Insufficient permission")
	errGuestsNotAllowed       = badRequest("Not allowed for guest users")
	errWebPublicNotEnabled    = badRequest("Web-public channels are not enabled.")
	errInvalidChannelFolderID = badRequest("Invalid channel folder ID")
	errInvalidParameters      = badRequest("Invalid parameters")
	errDefaultChannelPrivate  = badRequest("A default channel cannot be private.")
	errNotOwner               = &apiError{status: http.StatusBadRequest, code: "UNAUTHORIZED_PRINCIPAL", msg: "Must be an organization owner"}
)

// Administering a channel (zerver/views/streams.py, zerver/lib/streams.py,
// zerver/actions/streams.py, zerver/lib/exceptions.py's
// CannotAdministerChannelError, CannotManageDefaultChannelError and
// PreviousSettingValueMismatchedError).
var (
	errCannotAdministerChannel     = badRequest("You do not have permission to administer this channel.")
	errCannotManageDefaultChannels = badRequest("You do not have permission to change default channels.")
	errContentAccessRequired       = badRequest("Channel content access is required.")
	errChannelSameName             = badRequest("Channel already has that name.")
	errChannelAlreadyArchived      = badRequest("Channel is already deactivated")
	errChannelNotArchived          = badRequest("Channel is not currently deactivated")
	errArchivedPrivateEmpty        = badRequest("Channel is private and have no subscribers")
	errPrivateCannotBeDefault      = badRequest("Private channels cannot be made default.")
	errGroupSettingMismatch        = &apiError{status: http.StatusBadRequest, code: "EXPECTATION_MISMATCH", msg: "'old' value does not match the expected value."}
)

// refusal makes an API error a store rejection, for a check the store
// makes only once it knows it is needed. Not inlined, as badRequest.
//
//go:noinline
func refusal(e *apiError) error { return &rejection{text: e.msg, told: e} }

// User groups' routes (zerver/views/user_groups.py).
var (
	errNothingToDoMembers = badRequest(`Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".`)
	errNoNewData          = badRequest("No new data supplied")
	// zulite's bound (user_groups.go's maxUserGroups); Zulip sets none.
	errTooManyUserGroups = badRequest("Too many user groups (limit: " + strconv.Itoa(maxUserGroups) + ").")
)

// errGroupInUse is Zulip's CannotDeactivateGroupInUseError, with the
// objections that keep the group from being deactivated.
func errGroupInUse(objections []map[string]any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "CANNOT_DEACTIVATE_GROUP_IN_USE", msg: "Cannot deactivate user group in use.",
		extra: []field{{"objections", objections}}}
}

// An organisation setting (zerver/views/realm.py).
var errRealmSettingChanged = badRequest("'old' value does not match the expected value.")

// How many channels may be created: per request and in all (zulite's
// bounds; Zulip sets none), and per account per hour (a rate limit).
var errTooManyNewChannels = badRequest("Too many new channels in one request (limit: " + strconv.Itoa(maxNewChannelsPerRequest) + ").")

// errGroupNotAllowed refuses a system group a permission setting may not
// have; it is a store rejection (the check runs in the transaction).
func errGroupNotAllowed(setting, group string) error {
	return refusal(badRequest("'" + setting + "' setting cannot be set to '" + group + "' group."))
}

func errUnknownSubscriptionProperty(property string) *apiError {
	return badRequest("Unknown subscription property: " + property)
}

// errInvalidValue is typed_endpoint's answer to a value a validator
// refused: elem is where the value is, reason the validator's words.
func errInvalidValue(elem, reason string) *apiError {
	return badRequest("Invalid " + elem + ": Value error, " + reason)
}

func errNotHexColor(name string) string { return name + " is not a valid hex color code" }

func errInvalidSetting(name string) *apiError { return badRequest("Invalid " + name) }

func errChannelNameCharacter(name string, i int) *apiError {
	return badRequest("Invalid character in channel name, at position " + runePosition(name, i) + ".")
}

func errChannelsDoNotExist(names string) *apiError {
	return badRequest("Channel(s) (" + echoed(names) + ") do not exist")
}

// Sending (zerver/views/message_send.py, zerver/actions/message_send.py).
var (
	errInvalidMessageType = badRequest("Invalid message type")
	errMissingTopic       = badRequest("Missing topic")
	errContentNullBytes   = badRequest("Message must not contain null bytes")
	errContentEmpty       = badRequest("Message must not be empty")
	errMissingChannel     = badRequest("Missing channel")
	errExpectedOneChannel = badRequest("Expected exactly one channel")
	errChannelDataType    = badRequest("Invalid data type for channel")
)

// topicsPolicyError carries, as Zulip's does, the display name it
// speaks of.
func topicsPolicyError(msg string) *apiError {
	e := badRequest(msg)
	e.extra = []field{{"empty_topic_display_name", emptyTopicDisplayName}}
	return e
}

// noSuchChannel is Zulip's STREAM_DOES_NOT_EXIST error, by name or by id.
func noSuchChannel(to channelRef) *apiError {
	e := &apiError{status: http.StatusBadRequest, code: "STREAM_DOES_NOT_EXIST"}
	if to.Name != "" {
		e.msg = "Channel '" + html.EscapeString(echoed(to.Name)) + "' does not exist"
		e.extra = []field{{"stream", echoed(to.Name)}}
	} else {
		id := to.IDText
		if id == "" {
			id = strconv.FormatUint(to.ID, 10)
		}
		e.msg = "Channel with ID '" + id + "' does not exist"
		e.extra = []field{{"stream_id", json.Number(id)}}
	}
	return e
}

func errTopicCharacter(topic string, i int) *apiError {
	return badRequest("Invalid character in topic, at position " + runePosition(topic, i) + "!")
}

func errNotAuthorizedToSend(channel string) *apiError {
	return badRequest("Not authorized to send to channel '" + echoed(channel) + "'")
}

// Reading, flags and read-marking (zerver/views/message_fetch.py,
// zerver/views/message_flags.py).
var (
	errInvalidMessages = badRequest("Invalid message(s)")
	errMissingAnchor   = badRequest("Missing 'anchor' argument.")
	errTooManyMessages = badRequest("Too many messages requested (maximum 5000).")
	errAnchorExcluded  = badRequest("The anchor can only be excluded at an end of the range")
	errInvalidAnchor   = badRequest("Invalid anchor")
)

func errNoSuchTopicNamed(topic string) *apiError {
	return badRequest("No such topic '" + echoed(topic) + "'")
}
func errInvalidFlag(flag string) *apiError { return badRequest("Invalid flag: '" + echoed(flag) + "'") }
func errFlagNotEditable(flag string) *apiError {
	return badRequest("Flag not editable: '" + echoed(flag) + "'")
}
func errInvalidFlagOperation(op string) *apiError {
	return badRequest("Invalid message flag operation: '" + echoed(op) + "'")
}

// Narrows (zerver/lib/narrow.py; the two bounds are zulite's).
var (
	errNarrowTooLong                 = badRequest("narrow has too many terms (limit: " + strconv.Itoa(maxNarrowTerms) + ")")
	errOperandTooLong                = badRequest(`elem["operand"] is too long (limit: ` + strconv.Itoa(maxOperandLength) + ")")
	errOperandNotStringOrInteger     = badRequest(`elem["operand"] is not a string or integer`)
	errOperandNotStringOrIntegerList = badRequest(`elem["operand"] is not a string or an integer list`)
	errOperandBlank                  = badRequest(`elem["operand"] cannot be blank.`)
)

func badNarrow(desc string) *apiError {
	desc = echoed(desc)
	return &apiError{status: http.StatusBadRequest, code: "BAD_NARROW", msg: "Invalid narrow operator: " + desc, extra: []field{{"desc", desc}}}
}

// An event queue's narrow (zerver/lib/narrow_predicate.py).
func errOperatorNotSupported(operator string) *apiError {
	return badRequest("Operator " + echoed(operator) + " not supported.")
}

func errOperandNotSupported(operand string) *apiError {
	return badRequest("Operand " + operand + " not supported.")
}

// Event queues (zerver/tornado/exceptions.py).
func badQueue(id string) *apiError {
	id = echoed(id)
	return &apiError{status: http.StatusBadRequest, code: "BAD_EVENT_QUEUE_ID", msg: "Bad event queue ID: " + id, extra: []field{{"queue_id", id}}}
}

// Presence (zerver/views/presence.py).
var errPresenceBot = badRequest("Presence is not supported for bot users.")

func errInvalidPresenceStatus(status string) *apiError {
	return badRequest("Invalid status: " + echoed(status))
}

func errNoPresenceData(userIDOrEmail string) *apiError {
	return badRequest("No presence data for " + echoed(userIDOrEmail))
}

// Typing (zerver/views/typing.py, zerver/actions/typing.py,
// zerver/lib/typed_endpoint.py).
var (
	errTypingOffForChannels = badRequest("User has disabled typing notifications for channel messages")
	errTypingOffForDirect   = badRequest("User has disabled typing notifications for direct messages")
	errTypingMissingChannel = badRequest("Missing 'stream_id' argument")
	errTypingMissingTo      = badRequest("Missing 'to' argument")
	errTypingEmptyTo        = badRequest("Empty 'to' list")
	errInvalidTypingOp      = badRequest("Invalid op")
	errInvalidTypingType    = badRequest("Invalid type")
)

// A test notification's token (zerver/lib/push_notifications.py's
// InvalidPushDeviceTokenError).
var errInvalidPushDevice = &apiError{status: http.StatusBadRequest, code: "INVALID_PUSH_DEVICE_TOKEN", msg: "Device not recognized"}

// A user's uploads (zerver/lib/attachments.py's access_attachment_by_id).
var errInvalidAttachment = badRequest("Invalid attachment")

// Deactivating one's own account (zerver/views/users.py's
// deactivate_user_own_backend; zerver/lib/exceptions.py's
// CannotDeactivateLastUserError).
var (
	errLastUser  = cannotDeactivateLast(false, "user")
	errLastOwner = cannotDeactivateLast(true, "organization owner")
)

func cannotDeactivateLast(owner bool, entity string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "CANNOT_DEACTIVATE_LAST_USER", msg: "Cannot deactivate the only " + entity + ".",
		extra: []field{{"is_last_owner", owner}, {"entity", entity}}}
}

func errInvalidTypingUser(id int64) *apiError {
	return badRequest("Invalid user ID " + strconv.FormatInt(id, 10))
}

// User status and emoji (zerver/lib/user_status.py, zerver/lib/emoji.py,
// zerver/lib/typed_endpoint.py).
var (
	errNoNewValues       = badRequest("Client did not pass any new values.")
	errEmojiNameMissing  = badRequest("Client must pass emoji_name if they pass either emoji_code or reaction_type.")
	errStatusTextTooLong = badRequest("status_text is too long (limit: " + strconv.Itoa(maxStatusTextLength) + " characters)")
)

// Uploads (zerver/views/upload.py, zerver/lib/upload/__init__.py). The
// missing and forbidden file errors are the texts of Zulip's HTML
// answers, in an envelope.
var (
	errNoFileGiven        = badRequest("You must specify a file to upload")
	errOneFileAtATime     = badRequest("You may only upload one file at a time")
	errInvalidUploadToken = badRequest("Invalid token")
	errInvalidUploadName  = badRequest("Invalid filename")
)

func errFileTooLarge(maxMiB int) *apiError {
	return badRequest("File is larger than this server's configured maximum upload size (" + strconv.Itoa(maxMiB) + " MiB).")
}

// Avatars (zerver/views/user_settings.py, zerver/lib/thumbnail.py).
var (
	errOneAvatar          = badRequest("You must upload exactly one avatar.")
	errAvatarTooLarge     = badRequest("Uploaded file is larger than the allowed limit of " + strconv.Itoa(maxAvatarMiB) + " MiB")
	errInvalidImageFormat = badRequest("Invalid image format")
	errBadImage           = badRequest("Could not decode image; did you upload an image file?")
	errImageTooBig        = badRequest("Image size exceeds limit.")
)

// Custom emoji (zerver/lib/emoji.py, zerver/views/realm_emoji.py,
// zerver/actions/realm_emoji.py); maxRealmEmoji is zulite's bound.
var (
	errEmojiNoName          = badRequest("Emoji name is missing")
	errEmojiNameEnd         = badRequest("Emoji names must end with either a letter or digit.")
	errEmojiNameCharacters  = badRequest("Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.")
	errEmojiNameTaken       = badRequest("A custom emoji with this name already exists.")
	errOneEmojiFile         = badRequest("You must upload exactly one file.")
	errOverrideBuiltInEmoji = badRequest("Only administrators can override built-in emoji.")
	errEmojiTooLarge        = badRequest("Uploaded file is larger than the allowed limit of " + strconv.Itoa(maxEmojiMiB) + " MiB")
	errNotEmojiAuthor       = badRequest("Must be an organization administrator or emoji author")
	errTooManyEmoji         = badRequest("This organization has too many custom emoji (limit: " + strconv.Itoa(maxRealmEmoji) + ").")
)

// errNoSuchCustomEmoji is delete_emoji's ResourceNotFoundError (a 404
// since Zulip 8.0, feature level 190).
func errNoSuchCustomEmoji(name string) *apiError {
	return &apiError{status: http.StatusNotFound, code: "BAD_REQUEST", msg: "Emoji '" + echoed(name) + "' does not exist"}
}

// Linkifiers and code playgrounds (zerver/views/realm_linkifiers.py,
// zerver/actions/realm_linkifiers.py, zerver/views/realm_playgrounds.py,
// and Django's unique_together message for RealmFilter and
// RealmPlayground, in a ValidationFailureError's "errors");
// maxLinkifiers and maxPlaygrounds are zulite's bounds.
var (
	errLinkifierExists          = validationFailure("__all__", "Realm filter with this Realm and Pattern already exists.")
	errNoSuchLinkifierWords     = badRequest("Linkifier not found.")
	errTooManyLinkifiers        = badRequest("This organization has too many linkifiers (limit: " + strconv.Itoa(maxLinkifiers) + ").")
	errLinkifierDuplicated      = badRequest("The ordered list must not contain duplicated linkifiers")
	errLinkifierOrderIncomplete = badRequest("The ordered list must enumerate all existing linkifiers exactly once")
	errPlaygroundExists         = validationFailure("__all__", "Realm playground with this Realm, Pygments language and Name already exists.")
	errNoSuchPlaygroundWords    = badRequest("Invalid playground")
	errPygmentsLanguage         = badRequest("Invalid characters in pygments language")
	errTooManyPlaygrounds       = badRequest("This organization has too many code playgrounds (limit: " + strconv.Itoa(maxPlaygrounds) + ").")
	errNoSuchLinkifier          = refusal(errNoSuchLinkifierWords)
	errNoSuchPlayground         = refusal(errNoSuchPlaygroundWords)
)

// validationFailure is Zulip's ValidationFailureError for one error:
// its text as msg, and by field in "errors".
func validationFailure(name, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "BAD_REQUEST", msg: msg, extra: []field{{"errors", map[string][]string{name: {msg}}}}}
}

// moveTimeLimitWords is Zulip's MessageMoveError: a change_all move of
// a topic whose older messages are past the realm's move limit.
func moveTimeLimitWords(l *moveTimeLimit) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
		msg:   "You only have permission to move the " + strconv.Itoa(l.allowed) + "/" + strconv.Itoa(l.total) + " most recent messages in this topic.",
		extra: []field{{"first_message_id_allowed_to_move", l.first}, {"total_messages_in_topic", l.total}, {"total_messages_allowed_to_move", l.allowed}}}
}

// nonNilIDs is ids as an answer lists them: [] rather than null when
// there are none, as Zulip's clients expect.
func nonNilIDs(ids []uint64) []uint64 {
	if ids == nil {
		return []uint64{}
	}
	return ids
}

// Submessages and widgets (zerver/views/submessage.py,
// zerver/actions/submessage.py, zerver/lib/validator.py's
// validate_poll_data and validate_todo_data, whose check_dict,
// check_int_in and check_int_range texts name the value checked, and
// zerver/actions/message_edit.py's validate_message_edit_payload).
var (
	errSubmessageNotAllowed  = badRequest("You cannot attach a submessage to this message.")
	errSubmessageNotJSON     = badRequest("Invalid json for submessage")
	errPollQuestionNotAuthor = badRequest("You can't edit a question unless you are the author.")
	errTodoTitleNotAuthor    = badRequest("You can't edit the task list title unless you are the author.")
	errWidgetEdit            = badRequest("Widgets cannot be edited.")
	// zulite's bound on a message's submessages (widgets.go); Zulip sets none.
	errSubmessagesFull = badRequest("This message's submessages are at their limit (" + strconv.Itoa(maxSubmessageBytes) + " bytes).")
)

// errNotOneOf is check_int_in's refusal.
func errNotOneOf(name string) *apiError      { return badRequest("Invalid " + name) }
func errValueTooLarge(name string) *apiError { return badRequest(name + " is too large") }
func errUnexpectedArguments(keys []string) *apiError {
	return badRequest("Unexpected arguments: " + strings.Join(keys, ", "))
}
func errUnknownWidgetData(name, kind string) *apiError {
	return badRequest("Unknown type for " + name + ": " + kind)
}

// widget_content (zerver/actions/message_send.py's check_message, which
// puts "Widgets: " before check_widget_content's texts: errWidgets).
var (
	errWidgetContentNotJSON = badRequest("Widgets: API programmer sent invalid JSON content")
	errWidgetContentNotDict = badRequest("widget_content is not a dict")
	errWidgetTypeMissing    = badRequest("widget_type is not in widget_content")
	errExtraDataMissing     = badRequest("extra_data is not in widget_content")
	errZformTypeMissing     = badRequest("zform is missing type field")
)

func errWidgets(e *apiError) *apiError           { return badRequest("Widgets: " + e.msg) }
func errUnknownWidgetType(kind string) *apiError { return badRequest("unknown widget type: " + kind) }
func errUnknownZformType(kind string) *apiError  { return badRequest("unknown zform type: " + kind) }

// Topics one mutes, unmutes or follows (zerver/views/user_topics.py;
// zerver/lib/streams.py's check_for_exactly_one_stream_arg, which words
// its missing channel as JsonableError, so without var_name;
// zerver/lib/exceptions.py's IncompatibleParametersError). The bound on
// a user's topics is zulite's: Zulip sets none.
var (
	errTopicTooLong            = badRequest("topic is too long (limit: " + strconv.Itoa(maxTopicLength) + " characters)")
	errTopicNotMuted           = badRequest("Topic is not muted")
	errMissingStreamIDArgument = badRequest("Missing 'stream_id' argument")
	errInvalidMutedTopicOp     = badRequest("Invalid op: Input should be 'add' or 'remove'")
	errTooManyUserTopics       = badRequest("This server keeps at most " + strconv.Itoa(maxUserTopics) + " muted, unmuted and followed topics for each user.")
)

func incompatibleParameters(names ...string) *apiError {
	list := ""
	for i, n := range names {
		if i > 0 {
			list += ", "
		}
		list += n
	}
	return &apiError{status: http.StatusBadRequest, code: "BAD_REQUEST", msg: "Unsupported parameter combination: " + list, extra: []field{{"parameters", list}}}
}

// Drafts and saved snippets (zerver/lib/drafts.py,
// zerver/actions/saved_snippets.py; the limits on counts and the
// timestamp's end are zulite's: store_drafts.go).
var (
	errDraftsNotSynced        = badRequest("User has disabled synchronizing drafts.")
	errDraftTimestampNegative = badRequest("Timestamp must not be negative.")
	errDraftTopicNullBytes    = badRequest("Topic must not contain null bytes")
	errDraftOneChannel        = badRequest("Must specify exactly 1 channel ID for channel messages")
	errNoSuchDraft            = &apiError{status: http.StatusNotFound, code: "BAD_REQUEST", msg: "Draft does not exist"}
	errNoSuchSnippet          = &apiError{status: http.StatusNotFound, code: "BAD_REQUEST", msg: "Saved snippet does not exist."}
	errDraftTimestampTooLarge = badRequest("Timestamp must not be after the year 9999.")
	errTooManyDrafts          = badRequest("You may keep at most " + strconv.Itoa(maxDraftsPerUser) + " drafts.")
	errTooManySnippets        = badRequest("You may keep at most " + strconv.Itoa(maxSnippetsPerUser) + " saved snippets.")
)

// typed_endpoint's texts for string_too_short (min_length 1),
// string_too_long, extra_forbidden, and its "Invalid {var_name}: {msg}"
// for Pydantic's own words.
func errCannotBeBlank(name string) *apiError { return badRequest(name + " cannot be blank") }
func errStringTooLong(name string, limit int) *apiError {
	return badRequest(name + " is too long (limit: " + strconv.Itoa(limit) + " characters)")
}
func errArgumentUnexpected(argument, name string) *apiError {
	return badRequest(`Argument "` + echoed(argument) + `" at ` + echoed(name) + " is unexpected")
}
func errFieldRequired(name string) *apiError {
	return badRequest("Invalid " + name + ": Field required")
}

// Muted users (zerver/views/muted_users.py).
var (
	errCannotMuteSelf   = badRequest("Cannot mute self")
	errUserAlreadyMuted = badRequest("User already muted")
	errUserNotMuted     = badRequest("User is not muted")
)

// Alert words (zerver/views/alert_words.py: a word of at most
// maxAlertWordLength characters, as typed_endpoint words it). zulite
// bounds a user's list (maxAlertWords); Zulip sets no bound.
var errTooManyAlertWords = badRequest("You may have at most " + strconv.Itoa(maxAlertWords) + " alert words.")

func errAlertWordTooLong(name string) *apiError {
	return badRequest(name + " is too long (limit: " + strconv.Itoa(maxAlertWordLength) + " characters)")
}

// Read receipts (zerver/views/read_receipts.py).
var errReadReceiptsDisabled = badRequest("Read receipts are disabled in this organization.")

// PATCH /users/me/subscriptions with neither list (zerver/views/streams.py
// update_subscriptions_backend).
var errNothingToDoSubscriptions = badRequest(`Nothing to do. Specify at least one of "add" or "delete".`)

// Scheduled messages (zerver/views/scheduled_messages.py,
// zerver/actions/scheduled_messages.py, zerver/lib/exceptions.py's
// DeliveryTimeNotInFutureError; the bound on their number is zulite's:
// store_scheduled_messages.go).
var (
	errNoSuchScheduled            = &apiError{status: http.StatusNotFound, code: "BAD_REQUEST", msg: "Scheduled message does not exist"}
	errDeliveryNotInFuture        = badRequest("Scheduled delivery time must be in the future.")
	errNoSuchReminder             = &apiError{status: http.StatusNotFound, code: "BAD_REQUEST", msg: "Reminder does not exist"}
	errReminderNoteTooLong        = badRequest("Maximum reminder note length: " + strconv.Itoa(maxReminderNoteLength) + " characters")
	errScheduledRecipientRequired = badRequest("Recipient required when updating type of scheduled message.")
	errScheduledTopicRequired     = badRequest("Topic required when updating scheduled message type to channel.")
	errChannelIDDataType          = badRequest("Invalid data type for channel ID")
	errTooManyScheduled           = badRequest("You may have at most " + strconv.Itoa(maxScheduledPerUser) + " scheduled messages.")
)

// Invitations (zerver/views/invite.py, zerver/actions/invites.py,
// zerver/lib/exceptions.py's InvitationError and its INVITATION_FAILED
// code, zerver/lib/email_validation.py).
var (
	errNoInviteeEmails      = badRequest("You must specify at least one email address.")
	errCannotSubscribe      = badRequest("You do not have permission to subscribe other users to channels.")
	errInviteNeedsAdmin     = badRequest("Must be an organization administrator") // a JsonableError: BAD_REQUEST
	errInviteNoSuchInvite   = badRequest("No such invitation")
	errInviteAlreadyGone    = badRequest("Invitation has already been revoked")
	errInviteWelcomeTooLong = errStringTooLong("welcome_message_custom_text", maxWelcomeTextLength)
	// errNoMailRelay is zulite's: Zulip always has an e-mail backend.
	errNoMailRelay = badRequest("This server cannot send e-mail: start zulite with --smtp-host (and --smtp-from) to send invitations, or create a reusable invitation link (POST /invites/multiuse) and share it.")
	// errTooManyInvites is zulite's bound (store_invites.go's maxInviteRecords).
	errTooManyInvites = badRequest("Too many invitations (limit: " + strconv.Itoa(maxInviteRecords) + "). Revoke some, or wait for expired ones to be cleared.")
)

func errInviteChannel(id int64) error {
	return refusal(badRequest("Invalid channel ID " + strconv.FormatInt(id, 10) + ". No invites were sent."))
}

// errInvitationFailed is Zulip's InvitationError: its message, then
// the (email, message, deactivated) triples, whether any invitation was
// sent, and the two limits zulite never reaches.
func errInvitationFailed(msg string, skipped []skippedInvitee, sent bool) *apiError {
	list := make([][]any, 0, len(skipped))
	for _, s := range skipped {
		list = append(list, []any{s.Email, s.Msg, s.Deactivated})
	}
	return &apiError{status: http.StatusBadRequest, code: "INVITATION_FAILED", msg: msg, extra: []field{
		{"errors", list}, {"sent_invitations", sent}, {"license_limit_reached", false}, {"daily_limit_reached", false}}}
}

// People: an administrator's edits of accounts (zerver/views/users.py,
// zerver/lib/users.py), custom profile fields
// (zerver/views/custom_profile_fields.py, zerver/actions/custom_profile_fields.py,
// zerver/lib/validator.py, zerver/lib/external_accounts.py,
// zerver/models/custom_profile_fields.py).
var (
	errOwnerRoleLastOwner  = badRequest("The owner permission cannot be removed from the only organization owner.")
	errDeactivateLastOwner = badRequest("Cannot deactivate the only organization owner")
	errFieldLabelTaken     = badRequest("A field with that label already exists.")
	errProfileSummaryLimit = badRequest("Only 2 custom profile fields can be displayed in the profile summary.")
	errInvalidOrderMapping = badRequest("Invalid order mapping.")
	errFieldNotEditable    = badRequest("You are not allowed to change this field. Contact an administrator to update it.")
	errLabelBlank          = badRequest("Label cannot be blank.")
	errInvalidFieldType    = badRequest("Invalid field type.")
	errSummaryFieldType    = badRequest("Field type not supported for display in profile summary.")
	errDefaultFieldUpdate  = badRequest("Default custom field cannot be updated.")
	errNoChoices           = badRequest("Field must have at least one choice.")
	errDuplicateChoices    = badRequest("Field must not have duplicate choices.")
	errCustomAccountURL    = badRequest("Custom external account must define URL pattern")
	errExternalAccountType = badRequest("Invalid external account type")
	errURLPatternUsername  = badRequest("URL pattern must contain '%(username)s'.")
)

func errFieldNotFound(id uint64) *apiError {
	return badRequest("Field id " + strconv.FormatUint(id, 10) + " not found.")
}

// Zulip's validator texts (zerver/lib/validator.py), for what names
// itself (a field's label, "field_data"): not echoed, as Zulip's are
// the server's own or at most 40 characters.
func errTooLongLimit(name string, limit int) *apiError {
	return badRequest(name + " is too long (limit: " + strconv.Itoa(limit) + " characters)")
}
func errBlank(name string) *apiError   { return badRequest(name + " cannot be blank.") }
func errNotDate(name string) *apiError { return badRequest(name + " is not a date") }
func errNotURL(name string) *apiError  { return badRequest(name + " is not a URL") }
func errNotChoice(value, field string) *apiError {
	return badRequest("'" + echoed(value) + "' is not a valid choice for '" + field + "'.")
}

// Data exports (zerver/views/realm_export.py). "Invalid export_type" is
// Zulip's check_int_in_validator text for a value not offered; zulite
// also answers it for 2, the standard export with consent, which it does
// not make (README).
var (
	errExportRateLimit     = badRequest("Exceeded rate limit.")
	errExportInProgress    = badRequest("Export still in progress")
	errNoSuchExport        = badRequest("Invalid data export ID")
	errExportDeleted       = badRequest("Export already deleted")
	errExportFailedNothing = badRequest("Export failed, nothing to delete")
	errInvalidExportType   = badRequest("Invalid export_type")
)
