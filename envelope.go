package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
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

var (
	errNotFound = &apiError{status: http.StatusNotFound, code: "BAD_REQUEST", msg: "Not Found"}
	errTooLarge = &apiError{status: http.StatusRequestEntityTooLarge, code: "BAD_REQUEST", msg: "Request body too large"}
)

// asAPIError maps any error a handler returns to what the client sees.
// Store sentinels are translated in one place, storeErrors; anything
// unknown is an internal error whose cause stays in the log.
func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	for sentinel, public := range storeErrors {
		if errors.Is(err, sentinel) {
			return public
		}
	}
	return internalError(err)
}

// writeError writes the error envelope:
// {"result":"error","msg":...,<extra>...,"code":...}
func writeError(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error) {
	ae := asAPIError(err)
	if ae.status >= 500 {
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
		w.Header().Set("WWW-Authenticate", `Basic realm="zulip"`)
	}
	if ae.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	writeBody(w, ae.status, b.Bytes())
}

// writeSuccess writes {"result":"success","msg":"",<data>...,
// "ignored_parameters_unsupported":[...]}. data is a struct or map whose
// JSON object members are spliced in order; ignored may be nil.
func writeSuccess(w http.ResponseWriter, data any, ignored []string) error {
	out := envelopes.Get().(*envelopeBuffers)
	defer envelopes.Put(out)
	b := &out.body
	b.Reset()
	b.WriteString(`{"result":"success","msg":""`)
	if data != nil {
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

// writeJSON encodes v without HTML escaping, as Zulip (orjson) does.
func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.WriteString("null")
		return
	}
	b.Truncate(b.Len() - 1) // Encode appends a newline
}

// storeErrors maps the store's sentinels to what clients are told, in
// one place. Errors that name a channel are built in channelError.
var storeErrors = map[error]*apiError{
	errTokenNotFound:     badRequest("Token does not exist"),
	errInvalidMessageIDs: errInvalidMessages,
	errNoSuchUser:        badRequest("No such user"),
	errEmailTaken:        badRequest("Email is already in use."),
}
