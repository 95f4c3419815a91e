package markdown

// Global times, <time:...>: Zulip's Timestamp pattern reads the text
// with python-dateutil's parser (dateutil.parser.parse, with Zulip's
// common_timezones as its tzinfos), or else as a Unix timestamp
// (float, datetime.fromtimestamp). The parser is dateutil.go;
// testdata/global_times.json holds what dateutil makes of a few hundred
// texts.

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// findTimestamp is TIMESTAMP_RE, <time:(?P<time>[^>]*?)>: the first
// "<time:" with a ">" after it, up to that ">".
func findTimestamp(_ *inliner, data string, from int) (patternMatch, bool) {
	i := strings.Index(data[from:], "<time:")
	if i < 0 {
		return patternMatch{}, false
	}
	start := from + i
	j := strings.IndexByte(data[start+len("<time:"):], '>')
	if j < 0 {
		return patternMatch{}, false // no later "<time:" has one either
	}
	text := data[start+len("<time:") : start+len("<time:")+j]
	return patternMatch{start: start, end: start + len("<time:") + j + 1, parts: []string{text}}, true
}

// handleTimestamp is Timestamp.handleMatch: a <time> element with the
// moment in UTC, its text the text as written, so that a client
// showing the HTML as text shows something; or Zulip's error span.
// Either text is final.
func handleTimestamp(in *inliner, _ string, m patternMatch) (inlineNode, int, int, bool) {
	text := m.parts[0]
	moment, ok := globalTime(text, in.r.opts.Now.UTC())
	if !ok {
		span := &mdElement{tag: "span", text: "Invalid time format: " + text, atomic: true}
		span.set("class", "timestamp-error")
		return inlineNode{el: span}, m.start, m.end, true
	}
	el := &mdElement{tag: "time", text: text, atomic: true}
	el.set("datetime", moment)
	return inlineNode{el: el}, m.start, m.end, true
}

// offsetBeyondADay is what dateutilBuild answers for a moment written
// with an offset of a day or more, which no date read can be.
var offsetBeyondADay = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)

// commonTimezones is Zulip's common_timezones (zerver/lib/timezone.py):
// the abbreviations a global time may end with, in seconds east of UTC.
var commonTimezones = map[string]int{
	"SST": -39600, "HST": -36000, "AKST": -32400, "HDT": -32400, "AKDT": -28800,
	"PST": -28800, "MST": -25200, "PDT": -25200, "CST": -21600, "MDT": -21600,
	"CDT": -18000, "EST": -18000, "AST": -14400, "EDT": -14400, "NST": -12600,
	"ADT": -10800, "NDT": -9000, "GMT": 0, "UTC": 0, "WET": 0, "BST": +3600,
	"CET": +3600, "MET": +3600, "WAT": +3600, "WEST": +3600, "CAT": +7200,
	"CEST": +7200, "EET": +7200, "MEST": +7200, "SAST": +7200, "EAT": +10800,
	"EEST": +10800, "IDT": +10800, "MSK": +10800, "PKT": +18000, "IST": +19800,
	"WIB": +25200, "AWST": +28800, "HKT": +28800, "WITA": +28800, "JST": +32400,
	"KST": +32400, "WIT": +32400, "ACST": +34200, "AEST": +36000, "ChST": +36000,
	"ACDT": +37800, "AEDT": +39600, "NZST": +43200, "NZDT": +46800,
}

// globalTime is Timestamp.handleMatch's reading of a <time:...> text:
// the datetime attribute of its <time> element (UTC, in isoformat with
// Z), or false where Zulip writes "Invalid time format". today is the
// day a text without a date falls on (dateutil's default: the server's
// today, at midnight). A text Zulip cannot render at all (a timestamp
// beyond what gmtime takes raises past Timestamp, and Zulip refuses the
// message) is an invalid time here.
func globalTime(text string, today time.Time) (string, bool) {
	t, aware, ok := dateutilParse(text, today)
	if ok && aware && t.Equal(offsetBeyondADay) {
		return "", false // astimezone's ValueError
	}
	if !ok {
		f, ok := pyFloat(text)
		if !ok {
			return "", false
		}
		if t, ok = fromTimestamp(f); !ok {
			return "", false
		}
		aware = true
	}
	if aware {
		t = t.UTC()
	}
	if t.Year() < 1 || t.Year() > 9999 {
		return "", false // astimezone's OverflowError
	}
	s := t.Format("2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += "." + strconv.Itoa(1000000 + us)[1:]
	}
	return s + "Z", true
}

// fromTimestamp is datetime.fromtimestamp(f, tz=timezone.utc): the
// microseconds rounded half to even.
func fromTimestamp(f float64) (time.Time, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	us := math.RoundToEven(frac * 1e6)
	if us >= 1e6 {
		us -= 1e6
		sec++
	} else if us < 0 {
		us += 1e6
		sec--
	}
	// Years 1 to 9999 are -62135596800 to 253402300799 seconds.
	if sec < -62135596800 || sec > 253402300799 {
		return time.Time{}, false
	}
	return time.Unix(int64(sec), int64(us)*1000).UTC(), true
}

// pyFloat is Python's float() of a string: white space around it, an
// optional sign, digits (any script's, with single underscores between
// them), a point, an exponent; or inf, infinity or nan.
func pyFloat(s string) (float64, bool) {
	s = strings.TrimFunc(s, isPyStrSpace)
	var b strings.Builder
	for _, r := range s {
		if d, ok := decimalValue(r); ok {
			b.WriteByte(byte('0' + d))
		} else if r < 0x80 {
			b.WriteRune(r)
		} else {
			return 0, false
		}
	}
	s = b.String()
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	// digitpart = digit (["_"] digit)*; number = [digitpart] "." digitpart
	// | digitpart ["."]; then an optional exponent.
	i, digits := 0, 0
	digitPart := func() int {
		n := 0
		for i < len(body) {
			c := body[i]
			if c >= '0' && c <= '9' {
				n++
				i++
			} else if c == '_' && n > 0 && i+1 < len(body) && body[i+1] >= '0' && body[i+1] <= '9' {
				i++
			} else {
				break
			}
		}
		return n
	}
	digits += digitPart()
	if i < len(body) && body[i] == '.' {
		i++
		digits += digitPart()
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(body) && (body[i] == 'e' || body[i] == 'E') {
		i++
		if i < len(body) && (body[i] == '+' || body[i] == '-') {
			i++
		}
		if digitPart() == 0 {
			return 0, false
		}
	}
	if i != len(body) {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return 0, false
	}
	return f, true // out of range: ±Inf or 0, as Python's float() reads it
}

// decimalValue is a decimal digit's value, in any script (Python's
// str.isdigit of one, for the digits that float() and int() read).
func decimalValue(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r < 0x80 || !unicode.IsDigit(r) {
		return 0, false
	}
	// Unicode's decimal digits come in runs of ten from a zero.
	z := r
	for unicode.IsDigit(z - 1) {
		z--
	}
	return int(r-z) % 10, true
}

// isPyStrSpace is Python's str.isspace for one character.
func isPyStrSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}
