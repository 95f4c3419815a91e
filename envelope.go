package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
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

// jsonContentType is the Content-Type of every JSON answer, one slice
// for all (net/http and conns only read it), not one made per answer.
var jsonContentType = []string{"application/json"}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
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
	h["Content-Type"] = jsonContentType
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
