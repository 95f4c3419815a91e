package main

// Widgets: the /poll and /todo a message's content may start with,
// which Zulip makes the message's first submessage
// (zerver/lib/widget.py), and the checks a later submessage's content
// passes for its message's widget (zerver/lib/validator.py's
// validate_poll_data and validate_todo_data). Zulip's code is Python:
// its notions of white space and of a line, its json.dumps and its JSON
// values (a bool is an int) are Python's, and so are these.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// maxWidgetIdx is Zulip's MAX_IDX: the largest index of a poll option
// or a to-do task a user adds ("This should match MAX_IDX in our
// client widgets").
const maxWidgetIdx = 1000

// maxSubmessageBytes bounds the content of a message's submessages
// together (zulite's bound; Zulip sets none): every fetch of a message
// carries them all, so no one may grow them without end.
const maxSubmessageBytes = 1 << 20

// Widget types a message's content can start (get_widget_data's
// valid_widget_types).
const (
	widgetPoll = "poll"
	widgetTodo = "todo"
)

// widgetOf is Zulip's get_widget_data: the type of the widget a
// message's content asks for, and its submessage's content, the JSON
// Python's json.dumps makes of {widget_type, extra_data}; "" when the
// content asks for none. The content's first token, up to the first
// white space, must be /poll or /todo; the rest is the poll's question
// and options, or the to-do list's title and tasks, a line each.
func widgetOf(content string) (kind, submessage string) {
	first := content
	if end := strings.IndexFunc(content, isPySpace); end >= 0 {
		first = content[:end]
	}
	kind, ok := strings.CutPrefix(first, "/")
	if !ok || (kind != widgetPoll && kind != widgetTodo) {
		return "", ""
	}
	lines := pySplitLines(content[len(first):])
	heading := ""
	if len(lines) > 0 && lines[0] != "" {
		heading, lines = pyStrip(lines[0]), lines[1:]
	}
	var extra pyDict
	if kind == widgetPoll {
		options := []any{}
		for _, line := range lines {
			if option := dropListMarker(pyStrip(line)); option != "" {
				options = append(options, option)
			}
		}
		extra = pyDict{{"question", heading}, {"options", options}}
	} else {
		tasks := []any{}
		for _, line := range lines {
			data := dropListMarker(pyStrip(line))
			if data == "" {
				continue
			}
			// A task and its description are split at the first ": ".
			task, desc, _ := strings.Cut(data, ": ")
			tasks = append(tasks, pyDict{{"task", pyStrip(task)}, {"desc", pyStrip(desc)}})
		}
		extra = pyDict{{"task_list_title", heading}, {"tasks", tasks}}
	}
	return kind, pyDumps(pyDict{{"widget_type", kind}, {"extra_data", extra}})
}

// dropListMarker is re.sub(r"(\s*[-*]?\s*)", "", line, count=1) on a
// stripped line: a leading "-" or "*" and the white space after it go.
func dropListMarker(line string) string {
	if strings.HasPrefix(line, "-") || strings.HasPrefix(line, "*") {
		return strings.TrimLeftFunc(line[1:], isPySpace)
	}
	return line
}

// isPySpace is Python's str.isspace for one character, which its re
// module's \s and str.strip use: Unicode's white space and, unlike Go's
// unicode.IsSpace, the separators U+001C to U+001F.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyStrip is Python's str.strip().
func pyStrip(s string) string { return strings.TrimFunc(s, isPySpace) }

// pySplitLines is Python's str.splitlines(): lines end at \n, \r, \r\n,
// \v, \f, U+001C to U+001E, U+0085, U+2028 and U+2029; a last line
// break makes no empty line after it.
func pySplitLines(s string) []string {
	var lines []string
	start := 0
	for i, r := range s {
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		case '\r':
			if strings.HasPrefix(s[i+1:], "\n") {
				continue // \r\n: the line ends at the \n
			}
		default:
			continue
		}
		lines = append(lines, s[start:i])
		start = i + len(string(r))
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

// ---- JSON as Python holds it ----

// pyDict is a JSON object as Python's json modules hold it: its keys in
// the order they first came, a repeated key with its last value.
type pyDict []pyItem

type pyItem struct {
	key   string
	value any
}

func (d pyDict) get(key string) (any, bool) {
	for _, it := range d {
		if it.key == key {
			return it.value, true
		}
	}
	return nil, false
}

// pyInt is a JSON integer as Python reads it (orjson.loads: integers
// within 64 bits; beyond, a float).
type pyInt struct {
	text string // as written
}

// errNotJSONValue: the text is no JSON value orjson.loads reads.
var errNotJSONValue = errors.New("not JSON")

// pyLoads is orjson.loads into pyDict, []any, string, pyInt, float64,
// bool and nil. Go's decoder is as strict as orjson (yyjson's reader
// without flags) but for a lone surrogate escaped in a string, which
// Go reads as U+FFFD and orjson refuses, and a number too large for a
// float, which orjson refuses too; only the depth it allows differs
// (orjson stops at 1024 levels).
func pyLoads(text string) (any, error) {
	if !json.Valid([]byte(text)) || loneSurrogate(text) {
		return nil, errNotJSONValue
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := pyValue(dec)
	if err != nil {
		return nil, errNotJSONValue
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errNotJSONValue
	}
	return v, nil
}

func pyValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			list := []any{}
			for dec.More() {
				v, err := pyValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
		d := pyDict{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := pyValue(dec)
			if err != nil {
				return nil, err
			}
			key, _ := k.(string)
			replaced := false
			for i := range d {
				if d[i].key == key {
					d[i].value, replaced = v, true
				}
			}
			if !replaced {
				d = append(d, pyItem{key, v})
			}
		}
		_, err := dec.Token()
		return d, err
	case json.Number:
		if !strings.ContainsAny(string(t), ".eE") {
			if _, err := strconv.ParseInt(string(t), 10, 64); err == nil {
				return pyInt{string(t)}, nil
			}
			if _, err := strconv.ParseUint(string(t), 10, 64); err == nil {
				return pyInt{string(t)}, nil
			}
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil { // beyond a float's range (an integer beyond 64 bits is one)
			return nil, err
		}
		return f, nil
	default: // string, bool, nil
		return t, nil
	}
}

// loneSurrogate reports whether valid JSON text escapes half a
// surrogate pair in a string: \uD800 to \uDBFF not followed by an
// escaped \uDC00 to \uDFFF, or the latter alone.
func loneSurrogate(text string) bool {
	half := func(at int) rune {
		if at+6 > len(text) || text[at] != '\\' || text[at+1] != 'u' {
			return -1
		}
		n, err := strconv.ParseUint(text[at+2:at+6], 16, 16)
		if err != nil {
			return -1
		}
		return rune(n)
	}
	in := false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '"':
			in = !in
		case c == '\\' && in:
			r := half(i)
			switch {
			case r >= 0xd800 && r < 0xdc00:
				if low := half(i + 6); low < 0xdc00 || low > 0xdfff {
					return true
				}
				i += 11
			case r >= 0xdc00 && r <= 0xdfff:
				return true
			default:
				i++ // the escaped character
			}
		}
	}
	return false
}

// pyIntValue is v as Python's isinstance(v, int) sees it: an integer or
// a bool (True is 1); one beyond int64 is clamped, as only comparisons
// with small numbers are made of it.
func pyIntValue(v any) (int64, bool) {
	switch n := v.(type) {
	case bool:
		if n {
			return 1, true
		}
		return 0, true
	case pyInt:
		if i, err := strconv.ParseInt(n.text, 10, 64); err == nil {
			return i, true
		}
		return 1<<63 - 1, true // within uint64: above every bound
	}
	return 0, false
}

// pyDumps is Python's json.dumps with its defaults: ", " and ": "
// between items, every character but printable ASCII escaped.
func pyDumps(v any) string {
	var b bytes.Buffer
	pyWrite(&b, v)
	return b.String()
}

func pyWrite(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case string:
		pyQuote(b, x)
	case pyDict:
		b.WriteByte('{')
		for i, it := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			pyQuote(b, it.key)
			b.WriteString(": ")
			pyWrite(b, it.value)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			pyWrite(b, e)
		}
		b.WriteByte(']')
	case pyInt:
		if i, err := strconv.ParseInt(x.text, 10, 64); err == nil {
			b.WriteString(strconv.FormatInt(i, 10)) // -0 is 0
		} else {
			b.WriteString(x.text)
		}
	case float64:
		b.WriteString(pyFloatRepr(x))
	case bool:
		b.WriteString(map[bool]string{true: "true", false: "false"}[x])
	case nil:
		b.WriteString("null")
	}
}

// pyQuote is json.dumps' ensure_ascii string: \" \\ \n \r \t \b \f, and
// \uXXXX (lower-case, a surrogate pair beyond the BMP) for every other
// character outside space to tilde.
func pyQuote(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	u := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[(r>>shift)&0xf])
		}
	}
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r >= ' ' && r <= '~':
			b.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			u(hi)
			u(lo)
		default:
			u(r)
		}
	}
	b.WriteByte('"')
}

// pyFloatRepr is Python's repr of a float, which json.dumps writes: the
// shortest digits that read back the same, positional from 1e-4 up to
// below 1e16 (with ".0" when whole), in exponent form outside.
func pyFloatRepr(f float64) string {
	switch {
	case f != f:
		return "NaN"
	case f > 1.7976931348623157e308:
		return "Infinity"
	case f < -1.7976931348623157e308:
		return "-Infinity"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mantissa, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mantissa, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	point := x + 1 // digits[:point] before the decimal point
	if point > -4 && point <= 16 {
		switch {
		case point <= 0:
			return sign + "0." + strings.Repeat("0", -point) + digits
		case point >= len(digits):
			return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
		default:
			return sign + digits[:point] + "." + digits[point:]
		}
	}
	out := digits[:1]
	if len(digits) > 1 {
		out += "." + digits[1:]
	}
	expSign := "+"
	if x < 0 {
		expSign, x = "-", -x
	}
	expText := strconv.Itoa(x)
	if len(expText) < 2 {
		expText = "0" + expText
	}
	return sign + out + "e" + expSign + expText
}

// ---- validate_poll_data and validate_todo_data ----

// pyCheck is one of validator.py's checks of a value, named name in
// its errors.
type pyCheck func(name string, v any) *apiError

func checkPyString(name string, v any) *apiError {
	if _, ok := v.(string); !ok {
		return errNotString(name)
	}
	return nil
}

func checkPyBool(name string, v any) *apiError {
	if _, ok := v.(bool); !ok {
		return errNotBoolean(name)
	}
	return nil
}

// checkPyIntIn is check_int_in.
func checkPyIntIn(allowed ...int64) pyCheck {
	return func(name string, v any) *apiError {
		n, ok := pyIntValue(v)
		if !ok {
			return errNotInteger(name)
		}
		for _, a := range allowed {
			if n == a {
				return nil
			}
		}
		return errNotOneOf(name)
	}
}

// checkPyIntRange is check_int_range: low and high are allowed.
func checkPyIntRange(low, high int64) pyCheck {
	return func(name string, v any) *apiError {
		n, ok := pyIntValue(v)
		switch {
		case !ok:
			return errNotInteger(name)
		case n < low:
			return errTooSmall(name)
		case n > high:
			return errValueTooLarge(name)
		}
		return nil
	}
}

type pyKey struct {
	name  string
	check pyCheck
}

// checkPyDict is check_dict (only: check_dict_only): a dict, with each
// required key in turn, each valid, and with only: no other key.
func checkPyDict(name string, v any, only bool, keys ...pyKey) *apiError {
	d, ok := v.(pyDict)
	if !ok {
		return errNotDict(name)
	}
	for _, k := range keys {
		value, ok := d.get(k.name)
		if !ok {
			return errKeyMissing(k.name, name)
		}
		if err := k.check(name+`["`+k.name+`"]`, value); err != nil {
			return err
		}
	}
	if !only {
		return nil
	}
	var extra []string // Zulip's order is a Python set's, which varies; this is the content's
	for _, it := range d {
		listed := false
		for _, k := range keys {
			listed = listed || k.name == it.key
		}
		if !listed {
			extra = append(extra, it.key)
		}
	}
	if len(extra) > 0 {
		return errUnexpectedArguments(extra)
	}
	return nil
}

// validateWidgetData checks a submessage's content for its message's
// widget, as process_submessage does: a poll's with validate_poll_data,
// a to-do list's with validate_todo_data; any other widget's (or a
// message without one) is not checked. author: the submessage's sender
// sent the message.
func validateWidgetData(widget string, data any, author bool) *apiError {
	var name, authorOnly string
	var kinds map[string][]pyKey
	var notAuthor *apiError
	switch widget {
	case widgetPoll:
		name = "poll data"
		kinds = map[string][]pyKey{
			"vote":       {{"type", checkPyString}, {"key", checkPyString}, {"vote", checkPyIntIn(1, -1)}},
			"question":   {{"type", checkPyString}, {"question", checkPyString}},
			"new_option": {{"type", checkPyString}, {"option", checkPyString}, {"idx", checkPyIntRange(0, maxWidgetIdx)}},
		}
		authorOnly, notAuthor = "question", errPollQuestionNotAuthor
	case widgetTodo:
		name = "todo data"
		kinds = map[string][]pyKey{
			"new_task": {{"type", checkPyString}, {"key", checkPyIntRange(0, maxWidgetIdx)}, {"task", checkPyString},
				{"desc", checkPyString}, {"completed", checkPyBool}},
			"strike":              {{"type", checkPyString}, {"key", checkPyString}},
			"new_task_list_title": {{"type", checkPyString}, {"title", checkPyString}},
		}
		authorOnly, notAuthor = "new_task_list_title", errTodoTitleNotAuthor
	default:
		return nil
	}
	if err := checkPyDict(name, data, false, pyKey{"type", checkPyString}); err != nil {
		return err
	}
	kind, _ := data.(pyDict).get("type")
	keys, ok := kinds[kind.(string)]
	if !ok {
		return errUnknownWidgetData(name, kind.(string))
	}
	if kind == authorOnly && !author {
		return notAuthor
	}
	return checkPyDict(name, data, true, keys...)
}

// widgetTypeOf is Zulip's get_widget_type: the widget_type of the
// message's first submessage of type widget, when its content is a JSON
// object that has one ("" otherwise, or when it is no string, which
// then names no widget that is checked).
func widgetTypeOf(list []storedSubmessage) string {
	for _, s := range list {
		if s.MsgType != "widget" {
			continue
		}
		data, err := pyLoads(s.Content)
		if err != nil {
			return ""
		}
		d, _ := data.(pyDict)
		kind, _ := d.get("widget_type")
		name, _ := kind.(string)
		return name
	}
	return ""
}

// ---- widget_content ----

// widgetRequest is a send's widget_content (an undocumented parameter
// of POST /messages that bots use): when Given, the content of the
// message's widget submessage, which replaces what the message's content
// asks for, or why the send is refused, told once the recipients are
// checked (check_message's order).
type widgetRequest struct {
	Given   bool
	Content string
	Refused *apiError
}

// readWidgetContent reads widget_content as check_message does: JSON,
// checked by check_widget_content, and written back as
// do_widget_post_save_actions writes it, json.dumps of
// {widget_type, extra_data}.
func readWidgetContent(p *params) widgetRequest {
	text, ok := p.lookup("widget_content")
	if !ok {
		return widgetRequest{}
	}
	data, err := pyLoads(text)
	if err != nil {
		return widgetRequest{Given: true, Refused: errWidgetContentNotJSON}
	}
	if e := checkWidgetContent(data); e != nil {
		return widgetRequest{Given: true, Refused: errWidgets(e)}
	}
	d := data.(pyDict)
	kind, _ := d.get("widget_type")
	extra, _ := d.get("extra_data")
	return widgetRequest{Given: true, Content: pyDumps(pyDict{{"widget_type", kind}, {"extra_data", extra}})}
}

// checkWidgetContent is Zulip's check_widget_content, which takes a
// zform of choices alone. Where Zulip adds a type that is not a string
// to its text (and fails with a TypeError, a 500), zulite writes the
// value as JSON and refuses it.
func checkWidgetContent(data any) *apiError {
	d, ok := data.(pyDict)
	if !ok {
		return errWidgetContentNotDict
	}
	kind, ok := d.get("widget_type")
	if !ok {
		return errWidgetTypeMissing
	}
	extra, ok := d.get("extra_data")
	if !ok {
		return errExtraDataMissing
	}
	extraData, ok := extra.(pyDict)
	if !ok {
		return errNotDict("extra_data")
	}
	if kind != "zform" {
		return errUnknownWidgetType(pyText(kind))
	}
	formType, ok := extraData.get("type")
	if !ok {
		return errZformTypeMissing
	}
	if formType != "choices" {
		return errUnknownZformType(pyText(formType))
	}
	choice := func(name string, v any) *apiError {
		return checkPyDict(name, v, false, pyKey{"short_name", checkPyString}, pyKey{"long_name", checkPyString}, pyKey{"reply", checkPyString})
	}
	choices := func(name string, v any) *apiError {
		list, ok := v.([]any)
		if !ok {
			return errNotList(name)
		}
		for i, c := range list {
			if e := choice(elemName(name, i), c); e != nil {
				return e
			}
		}
		return nil
	}
	// type is checked again, by equals("choices"), which it is.
	return checkPyDict("extra_data", extraData, false, pyKey{"heading", checkPyString}, pyKey{"choices", choices})
}

// pyText is a value in an error's text: a string as it is, anything
// else as JSON.
func pyText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyDumps(v)
}
