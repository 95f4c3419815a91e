package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// apiError is the one error type of the API surface: what the client is
// told (status, Zulip code, message, extra fields) and, separately, the
// internal cause, which is logged and never sent.
type apiError struct {
	status int
	code   string // empty for the few envelopes Zulip sends without one
	msg    string
	extra  []field
	cause  error
	// retryAfter, in seconds, is sent as a Retry-After header with a 429.
	retryAfter int
}

// field is one extra member of an error envelope, kept in order so that
// the JSON reads the way Zulip writes it.
type field struct {
	name  string
	value any
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return e.msg + ": " + e.cause.Error()
	}
	return e.msg
}

func (e *apiError) Unwrap() error { return e.cause }

// badRequest is not inlined: it is called from about 280 places, each
// of which inlined held the allocation and its stores (12 KB of code).
//
//go:noinline
func badRequest(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "BAD_REQUEST", msg: msg}
}

func missingArgument(name string) *apiError {
	return &apiError{
		status: http.StatusBadRequest,
		code:   "REQUEST_VARIABLE_MISSING",
		msg:    "Missing '" + name + "' argument",
		extra:  []field{{"var_name", name}},
	}
}

func unauthorized(msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, code: "UNAUTHORIZED", msg: msg}
}

func internalError(cause error) *apiError {
	return &apiError{status: http.StatusInternalServerError, msg: "Internal server error", cause: cause}
}

// asAPIError maps any error a handler returns to what the client sees: an
// apiError as it is, a store rejection in its catalogue wording, anything
// else as an internal error whose cause stays in the log.
func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var rej *rejection
	if errors.As(err, &rej) {
		var limit *moveTimeLimit
		switch {
		case rej.told != nil:
			return asAPIError(rej.told)
		case errors.As(err, &limit):
			return moveTimeLimitWords(limit)
		case rejectionWords[rej] != nil:
			return rejectionWords[rej](nameOf(err))
		}
	}
	return internalError(err)
}

// writeError writes the error envelope:
// {"result":"error","msg":...,<extra>...,"code":...}
func writeError(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error) {
	ae := asAPIError(err)
	if ae.status >= 500 && ae != errClosedForRoom {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	var b bytes.Buffer
	b.WriteString(`{"result":"error","msg":`)
	writeJSON(&b, ae.msg)
	for _, f := range ae.extra {
		b.WriteByte(',')
		writeJSON(&b, f.name)
		b.WriteByte(':')
		writeJSON(&b, f.value)
	}
	if ae.code != "" {
		b.WriteString(`,"code":`)
		writeJSON(&b, ae.code)
	}
	b.WriteString("}\n")
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", wwwAuthenticate(r))
	}
	if ae.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	writeBody(w, ae.status, b.Bytes())
}

// encodedMembers is data a handler has encoded itself: JSON object
// members, spliced as they are (a poll's events, whose bytes many queues
// share, are not encoded and checked again for each poll).
type encodedMembers []byte

// writeSuccess writes {"result":"success","msg":"",<data>...,
// "ignored_parameters_unsupported":[...]}. data is a struct or map whose
// JSON object members are spliced in order, or encodedMembers or
// encodedParts; ignored may be nil.
func writeSuccess(w http.ResponseWriter, data any, ignored []string) error {
	out := envelopes.Get().(*envelopeBuffers)
	defer envelopes.Put(out)
	b := &out.body
	b.Reset()
	b.WriteString(`{"result":"success","msg":""`)
	var parts encodedParts
	if members, ok := data.(encodedMembers); ok {
		b.WriteByte(',')
		b.Write(members)
	} else if parts, ok = data.(encodedParts); ok {
		b.WriteByte(',')
	} else if data != nil {
		out.data.Reset()
		if err := out.enc.Encode(data); err != nil {
			return err
		}
		obj := bytes.TrimSuffix(out.data.Bytes(), []byte("\n"))
		if len(obj) < 2 || obj[0] != '{' {
			return errors.New("response data is not a JSON object")
		}
		if inner := obj[1 : len(obj)-1]; len(inner) > 0 {
			b.WriteByte(',')
			b.Write(inner)
		}
	}
	if len(ignored) > 0 {
		b.WriteString(`,"ignored_parameters_unsupported":`)
		writeJSON(b, ignored)
	}
	b.WriteString("}\n")
	if parts != nil {
		writeParts(w, b.Bytes(), parts)
		return nil
	}
	writeBody(w, http.StatusOK, b.Bytes())
	if b.Cap() > 64<<10 { // keep large answers' buffers out of the pool
		out.body, out.data = bytes.Buffer{}, bytes.Buffer{} // the encoder keeps writing to &out.data
	}
	return nil
}

// envelopeBuffers are reused across answers: the envelope, and the data
// with an encoder bound to it.
type envelopeBuffers struct {
	body, data bytes.Buffer
	enc        *json.Encoder
}

func newEnvelopeBuffers() *envelopeBuffers {
	b := &envelopeBuffers{}
	b.enc = json.NewEncoder(&b.data)
	b.enc.SetEscapeHTML(false)
	return b
}

var envelopes = sync.Pool{New: func() any { return newEnvelopeBuffers() }}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// writeParts writes a 200 of envelope, the whole answer but for the
// parts, which go after its opening {"result":"success","msg":"",.
func writeParts(w http.ResponseWriter, envelope []byte, parts encodedParts) {
	head := envelope[:len(`{"result":"success","msg":"",`)]
	n := len(envelope)
	for _, p := range parts {
		n += len(p)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	w.Write(head)
	for _, p := range parts {
		w.Write(p)
	}
	w.Write(envelope[len(head):])
}

// encodeValue appends v's JSON without HTML escaping, as Zulip (orjson)
// does, and without the encoder's newline; on an error it appends
// nothing (the encoder writes only a whole value).
func encodeValue(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1)
	return nil
}

// writeJSON is encodeValue, with null for what cannot be encoded.
func writeJSON(b *bytes.Buffer, v any) {
	if encodeValue(b, v) != nil {
		b.WriteString("null")
	}
}

// ---- The catalogue: every error a client can be told, in Zulip's words ----
//
// To add an error, add it here: a fixed text is a variable, a text that
// names something is a function, and a store refusal (a rejection,
// store.go) has its words in rejectionWords. Texts are Zulip's, letter for letter; the comment
// above a group says where Zulip words them.

func always(e *apiError) func(string) *apiError { return func(string) *apiError { return e } }

// rejectionWords is what a client is told of each of the store's
// rejections (store.go), unless the route words it otherwise; name is
// what the rejection is about (a channel, a user), empty when it names
// nothing. TestRejections_EachHasItsWords checks that none is missing.
var rejectionWords = map[*rejection]func(name string) *apiError{
	errEmailTaken:        always(badRequest("Email is already in use.")),
	errNoSuchUser:        always(badRequest("No such user")),
	errNoSuchSession:     always(errNotLoggedIn),
	errTokenNotFound:     always(badRequest("Token does not exist")),
	errChannelExists:     always(badRequest("Channel name already in use.")), // Zulip 11's ChannelExistsError: its text is not in the stored copy of Zulip's exceptions.py, so unconfirmed
	errNoSuchChannel:     func(name string) *apiError { return badRequest("Invalid channel name '" + echoed(name) + "'") },
	errChannelForbidden:  func(name string) *apiError { return badRequest("Unable to access channel (" + echoed(name) + ").") },
	errNoSuchTopic:       errNoSuchTopicNamed,
	errInvalidMessageIDs: always(errInvalidMessages),

	// A channel's topics policy (zerver/lib/exceptions.py's
	// MessagesNotAllowedInEmptyTopicError and TopicsNotAllowedError).
	errEmptyTopicNotAllowed: always(topicsPolicyError("Sending messages to the " + emptyTopicDisplayName + " is not allowed in this channel.")),
	errTopicsNotAllowed:     always(topicsPolicyError("Only the " + emptyTopicDisplayName + " topic is allowed in this channel.")),

	errPermissionDenied:     always(errInsufficientPermission),
	errNoSuchInvite:         always(errInviteNoSuchInvite),
	errInviteRevokedAlready: always(errInviteAlreadyGone),
	errInvitesFull:          always(errTooManyInvites),
	errInviteExpired:        always(badRequest("The confirmation link has expired or been deactivated.")),
	errNoSuchGroup:          always(badRequest("Invalid user group")),
	errNoSuchGroupID:        func(id string) *apiError { return badRequest("Invalid user group ID: " + echoed(id)) },
	errNoSuchUserID:         func(id string) *apiError { return badRequest("Invalid user ID: " + echoed(id)) },

	// User groups (zerver/lib/user_groups.py, zerver/views/user_groups.py,
	// zerver/actions/user_groups.py, zerver/lib/exceptions.py's
	// SystemGroupRequiredError, zerver/actions/message_send.py's
	// check_user_group_mention_allowed).
	errGroupDeactivated:       always(badRequest("User group is deactivated.")),
	errGroupExists:            func(name string) *apiError { return badRequest("User group '" + name + "' already exists.") },
	errGroupDeactivatedRename: always(badRequest("You can only change name of deactivated user groups")),
	errGroupNameEmpty:         always(badRequest("User group name can't be empty!")),
	errGroupNameTooLong:       always(badRequest("User group name cannot exceed " + strconv.Itoa(maxGroupNameLength) + " characters.")),
	errGroupNamePrefixed: func(prefix string) *apiError {
		return badRequest("User group name cannot start with '" + prefix + "'.")
	},
	errAlreadyGroupMember: func(id string) *apiError { return badRequest("User " + id + " is already a member of this group") },
	errNotGroupMember:     func(id string) *apiError { return badRequest("There is no member '" + id + "' in this user group") },
	errAlreadySubgroup: func(id string) *apiError {
		return badRequest("User group " + id + " is already a subgroup of this group.")
	},
	errNotSubgroup: func(id string) *apiError { return badRequest("User group " + id + " is not a subgroup of this group.") },
	errSubgroupCycle: func(id string) *apiError {
		return badRequest("User group " + id + " is already a subgroup of one of the passed subgroups.")
	},
	errSystemGroupNeeded: func(setting string) *apiError {
		return &apiError{status: http.StatusBadRequest, code: "SYSTEM_GROUP_REQUIRED", msg: "'" + setting + "' must be a system user group."}
	},
	errGroupMentionForbidden: func(name string) *apiError {
		return badRequest("You are not allowed to mention user group '" + name + "'.")
	},
	errUserDeactivated:        always(badRequest("User is deactivated")),
	errNotSubscribedToChannel: func(id string) *apiError { return badRequest("Not subscribed to channel ID " + echoed(id)) },
	errCannotPost:             always(badRequest("You do not have permission to post in this channel.")),

	// Mentions (zerver/lib/exceptions.py's StreamWildcardMentionNotAllowedError
	// and TopicWildcardMentionNotAllowedError).
	errChannelWildcardMentionNotAllowed: always(&apiError{status: http.StatusBadRequest, code: "STREAM_WILDCARD_MENTION_NOT_ALLOWED", msg: "You do not have permission to use channel wildcard mentions in this channel."}),
	errTopicWildcardMentionNotAllowed:   always(&apiError{status: http.StatusBadRequest, code: "TOPIC_WILDCARD_MENTION_NOT_ALLOWED", msg: "You do not have permission to use topic wildcard mentions in this topic."}),

	// zerver/lib/message.py's answer when Markdown rendering fails (zulite:
	// the rendering would be over 100 times the longest message, Zulip's
	// own bound).
	errUnableToRender: always(badRequest("Unable to render message")),

	// Reactions (zerver/lib/exceptions.py's ReactionExistsError and
	// ReactionDoesNotExistError).
	errReactionExists:       always(&apiError{status: http.StatusBadRequest, code: "REACTION_ALREADY_EXISTS", msg: "Reaction already exists."}),
	errReactionDoesNotExist: always(&apiError{status: http.StatusBadRequest, code: "REACTION_DOES_NOT_EXIST", msg: "Reaction doesn't exist."}),
	// zerver/lib/emoji.py's get_emoji_data for a name it does not know;
	// zerver/views/reactions.py's remove_reaction without a name or a
	// code.
	errNoSuchEmoji:          func(name string) *apiError { return badRequest("Emoji '" + echoed(name) + "' does not exist") },
	errEmojiArgumentMissing: always(badRequest("At least one of the following arguments must be present: emoji_name, emoji_code")),
	// zerver/lib/emoji.py's check_emoji_request.
	errInvalidEmojiCode:       always(badRequest("Invalid emoji code.")),
	errInvalidEmojiName:       always(badRequest("Invalid emoji name.")),
	errInvalidEmojiType:       always(badRequest("Invalid emoji type.")),
	errInvalidCustomEmoji:     always(badRequest("Invalid custom emoji.")),
	errInvalidCustomEmojiName: always(badRequest("Invalid custom emoji name.")),
	errCustomEmojiDeactivated: always(badRequest("This custom emoji has been deactivated.")),

	// Editing, moving and deleting messages (zerver/actions/message_edit.py,
	// zerver/views/message_edit.py).
	errNoSuchChannelID:       always(errInvalidChannelID),
	errNothingToChange:       always(badRequest("Nothing to change")),
	errPropagateWithoutTopic: always(badRequest("Invalid propagate_mode without topic edit")),
	errResolveGeneralChat:    always(badRequest("General chat cannot be marked as resolved")),
	errContentWhileMoving:    always(badRequest("Cannot change message content while changing channel")),
	errCannotEditMessage:     always(badRequest("You don't have permission to edit this message")),
	errCannotResolve:         always(badRequest("You don't have permission to resolve topics in this channel.")),
	errCannotMoveMessage:     always(badRequest("You don't have permission to move this message")),
	errEditTimeLimit:         always(badRequest("The time limit for editing this message has passed")),
	errTopicTimeLimit:        always(badRequest("The time limit for editing this message's topic has passed.")),
	errChannelTimeLimit:      always(badRequest("The time limit for editing this message's channel has passed")),
	errCannotDeleteMessage:   always(badRequest("You don't have permission to delete this message")),
	errContentMismatch:       always(&apiError{status: http.StatusBadRequest, code: "EXPECTATION_MISMATCH", msg: "'prev_content_sha256' value does not match the expected value."}),
	errDeleteTimeLimit:       always(badRequest("The time limit for deleting this message has passed")),
	// validate_message_edit_payload on a direct message (store_dm_edit.go).
	errDMToChannel: always(badRequest("Direct messages cannot be moved to channels.")),
	errDMTopic:     always(badRequest("Direct messages cannot have topics.")),

	errNarrowUnknownChannel: func(name string) *apiError { return badNarrow("unknown channel " + echoed(name)) },
	errNarrowUnknownUser:    func(name string) *apiError { return badNarrow("unknown user " + echoed(name)) },
	errNarrowBadWith:        always(badNarrow("Invalid 'with' operand")),

	// Direct messages: zerver/actions/message_send.py's
	// extract_private_recipients and check_can_send_direct_message,
	// zerver/lib/addressee.py, zerver/lib/recipient_users.py's
	// validate_recipient_user_profiles, zerver/lib/exceptions.py's
	// DirectMessagePermissionError and DirectMessageInitiationError, and
	// zerver/lib/narrow.py's by_dm.
	errDMInvalidEmail:         func(email string) *apiError { return badRequest("Invalid email '" + echoed(email) + "'") },
	errDMInvalidUserID:        func(id string) *apiError { return badRequest("Invalid user ID " + echoed(id)) },
	errDMRecipientDeactivated: func(email string) *apiError { return badRequest("'" + echoed(email) + "' is no longer using Zulip.") },
	errDMsDisabled:            always(badRequest("Direct messages are disabled in this organization.")),
	errDMNotAuthorized:        always(badRequest("This conversation does not include any users who can authorize it.")),
	errDMInitiation:           always(badRequest("You do not have permission to initiate direct message conversations.")),
	errNarrowUnknownDMUser:    func(operand string) *apiError { return badNarrow("unknown user in " + echoed(operand)) },

	// Uploads (zerver/lib/upload/__init__.py; the missing and forbidden
	// file errors are the texts of Zulip's HTML answers, in an envelope).
	errUploadQuota:         always(&apiError{status: http.StatusBadRequest, code: "REALM_UPLOAD_QUOTA", msg: "Upload would exceed your organization's upload quota."}),
	errNoSuchAttachment:    always(&apiError{status: http.StatusNotFound, code: "BAD_REQUEST", msg: "This file does not exist or has been deleted."}),
	errAttachmentForbidden: always(&apiError{status: http.StatusForbidden, code: "BAD_REQUEST", msg: "You are not authorized to view this file."}),
	errChannelsFull: func(max string) *apiError {
		return badRequest("This server holds its most channels (" + max + "); ask its administrator.")
	},
}

// Direct messages' recipients, checked before the store is asked.
var (
	errNoRecipients       = badRequest("Message must have recipients")
	errRecipientsDataType = badRequest("Invalid data type for recipients")
	errRecipientsMixed    = badRequest("Recipient lists may contain emails or user IDs, but not both.")
)

// errClosedForRoom answers a request whose connection the connection
// bound closed while it was still a stranger's (internal/conns): nobody
// hears it, and it is no failure of the server's to log.
var errClosedForRoom = &apiError{status: http.StatusServiceUnavailable, msg: "Connection closed for room"}

// Routing and the request (Django's and zerver/lib/request.py's texts).
var (
	errNotFound          = &apiError{status: http.StatusNotFound, code: "BAD_REQUEST", msg: "Not Found"}
	errTooLarge          = &apiError{status: http.StatusRequestEntityTooLarge, code: "BAD_REQUEST", msg: "Request body too large"}
	errTooManyParameters = badRequest("Too many parameters")
	errMalformedQuery    = badRequest("Malformed query string")
	errMalformedBody     = badRequest("Malformed request body")
)

func errInvalidUTF8(name string) *apiError {
	return badRequest("Invalid UTF-8 in parameter " + strconv.Quote(echoed(name)))
}

// Typed parameter values (zerver/lib/typed_endpoint.py's texts). elemName
// names a list's element: name[i].
func elemName(name string, i int) string     { return name + "[" + strconv.Itoa(i) + "]" }
func errNotBoolean(name string) *apiError    { return badRequest(name + " is not a boolean") }
func errNotInteger(name string) *apiError    { return badRequest(name + " is not an integer") }
func errNotString(name string) *apiError     { return badRequest(name + " is not a string") }
func errNotList(name string) *apiError       { return badRequest(name + " is not a list") }
func errNotDict(name string) *apiError       { return badRequest(name + " is not a dict") }
func errNotJSON(name string) *apiError       { return badRequest(name + " is not valid JSON") }
func errInvalidFormat(name string) *apiError { return badRequest(name + " has invalid format") }
func errTooSmall(name string) *apiError      { return badRequest(name + " is too small") }

// errNotInPossibleValues is typed_endpoint's "Invalid {name}: {msg}" for
// a value its check_int_in/check_string_in validator refuses; msg is
// Pydantic's wording of that ValueError.
func errNotInPossibleValues(name string) *apiError {
	return badRequest("Invalid " + name + ": Value error, Not in the list of possible values")
}

func errKeyMissing(key, from string) *apiError {
	return badRequest(key + " key is missing from " + from)
}
func errBadValue(name, value string) *apiError {
	value = echoed(value)
	return &apiError{status: http.StatusBadRequest, code: "REQUEST_VARIABLE_INVALID", msg: "Bad value for '" + name + "': " + value,
		extra: []field{{"var_name", name}, {"bad_value", value}}}
}

// maxEchoed bounds what an error repeats of what a client sent: enough
// to recognise it, never a megabyte back.
const maxEchoed = 100

// echoed is a client's value as an error repeats it: at most maxEchoed
// characters, then "…".
//
// It is not inlined, as badRequest is not: error paths only.
//
//go:noinline
func echoed(value string) string {
	if utf8.RuneCountInString(value) <= maxEchoed {
		return value
	}
	return string([]rune(value)[:maxEchoed]) + "…"
}

// Authentication (SPEC §4; zerver/decorator.py) and roles.
var (
	errNotLoggedIn      = unauthorized("Not logged in: API authentication or user session required")
	errBadBasicHeader   = unauthorized("Invalid authorization header for basic auth")
	errMalformedAPIKey  = unauthorized("Malformed API key")
	errInvalidAPIKey    = unauthorized("Invalid API key")
	errDeactivated      = unauthorized("Account is deactivated")
	errNotBasic         = badRequest("This endpoint requires HTTP basic authentication.")
	errLoginFailed      = &apiError{status: http.StatusUnauthorized, code: "AUTHENTICATION_FAILED", msg: "Your username or password is incorrect"}
	errLoginDeactivated = &apiError{status: http.StatusUnauthorized, code: "USER_DEACTIVATED", msg: "Account is deactivated"}
	errNotAdmin         = &apiError{status: http.StatusBadRequest, code: "UNAUTHORIZED_PRINCIPAL", msg: "Must be an organization administrator"}
	errBotRequest       = badRequest("This endpoint does not accept bot requests.")
	// errCSRF answers a /json request of a session without its token
	// (Zulip: zerver/middleware.py, csrf_failure).
	errCSRF = &apiError{status: http.StatusForbidden, code: "CSRF_FAILED", msg: "CSRF error: CSRF token missing or incorrect."}
	// errCrossOrigin refuses a login form posted from another site.
	errCrossOrigin = &apiError{status: http.StatusForbidden, code: "CSRF_FAILED", msg: "CSRF error: Origin checking failed."}
)

// rateLimited is SPEC §8's 429 envelope.
func rateLimited(wait time.Duration) *apiError {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	return &apiError{status: http.StatusTooManyRequests, code: "RATE_LIMIT_HIT", msg: "API usage exceeded rate limit",
		extra: []field{{"retry-after", secs}}, retryAfter: secs}
}

// tooManySignIns is the 429 of an account whose password logins are
// held back after too many failures: Zulip's RATE_LIMIT_HIT and
// retry-after, with the words Zulip's login form shows then
// (zerver/forms.py, OurAuthenticationForm.clean), which say for how long.
// Zulip's fetch_api_key sends the general words instead; zulite's login
// page shows msg, and a client that shows it tells its user more.
func tooManySignIns(wait time.Duration) *apiError {
	e := rateLimited(wait)
	e.msg = fmt.Sprintf("You're making too many attempts to sign in. Try again in %d seconds or contact your organization administrator for help.", e.retryAfter)
	return e
}

// Accounts (zerver/views/users.py, zerver/lib/users.py).
var (
	errBadNameOrUsername = badRequest("Bad name or username")
	errNameTooShort      = badRequest("Name too short!")
	errNameCharacters    = badRequest("Invalid characters in name!")
	errNameTooLong       = badRequest("Name too long!")
	errNameFormat        = badRequest("Invalid format!")
	errPasswordTooWeak   = badRequest("The password is too weak.")
	// PATCH /settings (zerver/views/user_settings.py json_change_settings).
	errWrongPassword      = badRequest("Wrong password!")
	errNewPasswordTooWeak = badRequest("New password is too weak!")
)

func errEmailInUse(email string) *apiError {
	return badRequest("Email '" + echoed(email) + "' already in use")
}

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
