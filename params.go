package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// params are a request's parameters as SPEC §3 defines them: a name is
// looked up in the parsed body first, then in the query string, and a
// repeated name takes its last value. params remembers which names the
// handler asked for, so that the rest can be reported as
// ignored_parameters_unsupported.
type params struct {
	body  url.Values
	query url.Values
	used  map[string]bool
}

// maxParams bounds how many parameters one request may carry, so that a
// body of a million empty fields cannot cost a million map entries.
const maxParams = 1000

// readParams parses the query string and, for urlencoded and multipart
// bodies of any method, the body, which may be at most limit bytes.
func readParams(w http.ResponseWriter, r *http.Request, limit int64) (*params, error) {
	p := &params{used: make(map[string]bool)}
	if r.URL.RawQuery != "" {
		if tooManyPairs(r.URL.RawQuery) {
			return nil, errTooManyParameters
		}
		query, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return nil, errMalformedQuery
		}
		p.query = query
	}
	var err error
	p.body, err = readBody(w, r, limit)
	if err != nil {
		return nil, err
	}
	if len(p.body)+len(p.query) > maxParams {
		return nil, errTooManyParameters
	}
	for _, values := range []url.Values{p.body, p.query} {
		for name, list := range values {
			for _, v := range list {
				if !utf8.ValidString(name) || !utf8.ValidString(v) {
					return nil, errInvalidUTF8(name)
				}
			}
		}
	}
	return p, nil
}

const formType = "application/x-www-form-urlencoded"

func readBody(w http.ResponseWriter, r *http.Request, limit int64) (url.Values, error) {
	if r.ContentLength > limit {
		return nil, errTooLarge
	}
	contentType := r.Header.Get("Content-Type")
	if contentType == "" || r.ContentLength == 0 && !strings.HasPrefix(contentType, "multipart/") {
		drain(r, limit)
		return nil, nil // no body, or none to parse
	}
	mediaType, mediaParams := formType, map[string]string(nil) // what nearly every client sends, as it is
	if contentType != formType {
		var err error
		if mediaType, mediaParams, err = mime.ParseMediaType(contentType); err != nil {
			drain(r, limit)
			return url.Values{}, nil // no or unknown body type: no parameters
		}
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	switch mediaType {
	case formType:
		raw, err := readSized(body, r.ContentLength)
		if err != nil {
			return nil, bodyError(err)
		}
		if tooManyPairs(string(raw)) {
			return nil, errTooManyParameters
		}
		values, err := url.ParseQuery(string(raw))
		if err != nil {
			return nil, errMalformedBody
		}
		return values, nil
	case "multipart/form-data":
		return readMultipart(body, mediaParams["boundary"])
	}
	drain(r, limit)
	return url.Values{}, nil
}

// readSized reads a body whose length is told (at most the limit, checked
// before) into a buffer of that size, and one of unknown length as
// io.ReadAll does.
func readSized(body io.Reader, length int64) ([]byte, error) {
	if length <= 0 {
		return io.ReadAll(body)
	}
	raw := make([]byte, length)
	_, err := io.ReadFull(body, raw)
	return raw, err
}

// drain reads a body of known length that no parameter comes from, up to
// limit, to its end: a request counts as arrived, and its connection as
// served, only then (internal/conns). One of unknown length is left: a
// client may keep it open.
func drain(r *http.Request, limit int64) {
	if r.Body != nil && r.ContentLength > 0 {
		io.Copy(io.Discard, io.LimitReader(r.Body, limit))
	}
}

func readMultipart(body io.Reader, boundary string) (url.Values, error) {
	values := url.Values{}
	if boundary == "" {
		// Without a boundary only an empty body (an empty form) makes sense.
		if n, err := body.Read(make([]byte, 1)); n == 0 && err == io.EOF {
			return values, nil
		}
		return nil, errMalformedBody
	}
	mr := multipart.NewReader(body, boundary)
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if err == io.EOF || (n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF))) {
			return values, nil // an empty multipart body is an empty form
		}
		if err != nil {
			return nil, bodyError(err)
		}
		if n >= maxParams {
			return nil, errTooManyParameters
		}
		var value bytes.Buffer
		if _, err := value.ReadFrom(part); err != nil {
			return nil, bodyError(err)
		}
		if name := part.FormName(); name != "" {
			values.Add(name, value.String())
		}
	}
}

// tooManyPairs counts an urlencoded text's pairs, repeated names
// included, before anything is parsed.
func tooManyPairs(text string) bool {
	return strings.Count(text, "&")+strings.Count(text, ";") >= maxParams
}

func bodyError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errTooLarge
	}
	return errMalformedBody
}

// lookup returns the value of name and marks it as used.
func (p *params) lookup(name string) (string, bool) {
	p.used[name] = true
	if vs := p.body[name]; len(vs) > 0 {
		return vs[len(vs)-1], true
	}
	if vs := p.query[name]; len(vs) > 0 {
		return vs[len(vs)-1], true
	}
	return "", false
}

// ignored lists, sorted and without duplicates, the names that arrived
// but were never asked for; `client` is accepted silently everywhere.
func (p *params) ignored() []string {
	var names []string
	for _, values := range []url.Values{p.body, p.query} {
		for name := range values {
			if !p.used[name] && name != "client" && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// useAll marks every parameter as used, for routes that never report
// ignored ones.
func (p *params) useAll() {
	for _, values := range []url.Values{p.body, p.query} {
		for name := range values {
			p.used[name] = true
		}
	}
}

func (p *params) requiredString(name string) (string, error) {
	v, ok := p.lookup(name)
	if !ok {
		return "", missingArgument(name)
	}
	return v, nil
}

func (p *params) requiredInt(name string) (int64, error) {
	v, ok := p.lookup(name)
	if !ok {
		return 0, missingArgument(name)
	}
	return parseInt(name, v)
}

// optionalBool returns def when name is absent.
func (p *params) optionalBool(name string, def bool) (bool, error) {
	v, ok := p.lookup(name)
	if !ok {
		return def, nil
	}
	parsed, err := decodeJSON(name, v)
	if err != nil {
		return false, err
	}
	b, isBool := parsed.(bool)
	if !isBool {
		return false, errNotBoolean(name)
	}
	return b, nil
}

// matchString checks an optional string with match; def is used when it
// is absent.
func (p *params) matchString(name string, match func(string) bool, def string) (string, error) {
	v, ok := p.lookup(name)
	if !ok {
		return def, nil
	}
	if !match(v) {
		return "", errInvalidFormat(name)
	}
	return v, nil
}

// requiredJSON decodes a JSON-encoded parameter; numbers stay json.Number.
func (p *params) requiredJSON(name string) (any, error) {
	v, ok := p.lookup(name)
	if !ok {
		return nil, missingArgument(name)
	}
	return decodeJSON(name, v)
}

func decodeJSON(name, v string) (any, error) {
	if !json.Valid([]byte(v)) {
		return nil, errNotJSON(name)
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	var parsed any
	if err := dec.Decode(&parsed); err != nil {
		return nil, errNotJSON(name)
	}
	return parsed, nil
}

// parseInt reads a JSON integer: ` 7 ` is 7; 7.0, true, "7" and [7] are not.
// Nearly every value is a bare integer, which is read directly; anything
// else goes through the JSON decoder, for its answers and errors.
func parseInt(name, v string) (int64, error) {
	if plainJSONInt(v) {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n, nil
		}
	}
	return decodeJSONInt(name, v)
}

// decodeJSONInt is parseInt through the JSON decoder.
func decodeJSONInt(name, v string) (int64, error) {
	parsed, err := decodeJSON(name, v)
	if err != nil {
		return 0, err
	}
	n, ok := jsonInt(parsed)
	if !ok {
		return 0, errNotInteger(name)
	}
	return n, nil
}

// plainJSONInt reports whether v is exactly an integer in JSON's grammar,
// -?(0|[1-9][0-9]*), with no space around it.
func plainJSONInt(v string) bool {
	digits := strings.TrimPrefix(v, "-")
	if digits == "" || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// jsonInt reports whether a decoded JSON value is an integer that fits
// in an int64.
func jsonInt(v any) (int64, bool) {
	num, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(num), ".eE") {
		return 0, false
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	return n, err == nil
}

// intList reads a required JSON list of integers.
func intList(p *params, name string) ([]int64, error) {
	return jsonList(p, name, jsonInt, errNotInteger)
}

// stringList reads a required JSON list of strings.
func stringList(p *params, name string) ([]string, error) {
	return jsonList(p, name, func(v any) (string, bool) { s, ok := v.(string); return s, ok }, errNotString)
}

// requiredList reads a required JSON list, its elements as decoded.
func requiredList(p *params, name string) ([]any, error) {
	raw, err := p.requiredJSON(name)
	if err != nil {
		return nil, err
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, errNotList(name)
	}
	return list, nil
}

// jsonList reads a required JSON list whose every element convert
// accepts; the first it refuses is named in Zulip's words by refuse.
func jsonList[T any](p *params, name string, convert func(any) (T, bool), refuse func(string) *apiError) ([]T, error) {
	list, err := requiredList(p, name)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(list))
	for i, item := range list {
		v, ok := convert(item)
		if !ok {
			return nil, refuse(elemName(name, i))
		}
		out = append(out, v)
	}
	return out, nil
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// optionalBoolPtr reads an optional boolean: nil when absent, so that a
// change can tell "not given" from false.
func optionalBoolPtr(p *params, name string) (*bool, error) {
	if _, ok := p.lookup(name); !ok {
		return nil, nil
	}
	b, err := p.optionalBool(name, false)
	return &b, err
}

// groupChangeParam reads a group setting's change as Zulip's PATCH routes
// take it, {"new": value, "old": value} with old optional: ok is false
// when the parameter is absent; old is nil when not given (or null).
func groupChangeParam(p *params, name string) (next, old any, ok bool, err error) {
	raw, present := p.lookup(name)
	if !present {
		return nil, nil, false, nil
	}
	parsed, err := decodeJSON(name, raw)
	if err != nil {
		return nil, nil, false, err
	}
	obj, isDict := parsed.(map[string]any)
	if !isDict {
		return nil, nil, false, errNotDict(name)
	}
	next, present = obj["new"]
	if !present {
		return nil, nil, false, errKeyMissing("new", name)
	}
	return next, obj["old"], true, nil
}
