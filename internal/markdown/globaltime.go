package markdown

// Global times, <time:...>: Zulip's Timestamp pattern reads the text
// with python-dateutil's parser (dateutil.parser.parse, with Zulip's
// common_timezones as its tzinfos), or else as a Unix timestamp
// (float, datetime.fromtimestamp). What follows is dateutil 2.9.0's
// parser (Zulip 11's), in its order and with its quirks, for its
// default options (not fuzzy, neither dayfirst nor yearfirst), so that
// a text means the moment it means in Zulip; testdata/global_times.json
// holds what dateutil makes of a few hundred texts.

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

// ---- dateutil.parser ----

// timelex is dateutil's _timelex.split: runs of letters, runs of digits
// (with the points and commas of decimals), single other characters,
// and a space for each run of white space. NULs are dropped; decimal
// digits of any script are read as their ASCII digit.
func timelex(s string) []string {
	var chars []rune
	for _, r := range s {
		if r == 0 {
			continue
		}
		if d, ok := decimalValue(r); ok {
			r = rune('0' + d)
		}
		chars = append(chars, r)
	}
	isWord := unicode.IsLetter
	isNum := func(r rune) bool { return r >= '0' && r <= '9' }
	var tokens, stack []string
	pos := 0
	for pos < len(chars) || len(stack) > 0 {
		if len(stack) > 0 {
			tokens = append(tokens, stack[0])
			stack = stack[1:]
			continue
		}
		seenLetters := false
		var token []rune
		state := ""
	scan:
		for pos < len(chars) {
			c := chars[pos]
			switch state {
			case "":
				token = []rune{c}
				pos++
				switch {
				case isWord(c):
					state = "a"
				case isNum(c):
					state = "0"
				case isPyStrSpace(c):
					token = []rune{' '}
					break scan
				default:
					break scan
				}
			case "a":
				seenLetters = true
				if isWord(c) {
					token = append(token, c)
				} else if c == '.' {
					token = append(token, c)
					state = "a."
				} else {
					break scan
				}
				pos++
			case "0":
				if isNum(c) {
					token = append(token, c)
				} else if c == '.' || (c == ',' && len(token) >= 2) {
					token = append(token, c)
					state = "0."
				} else {
					break scan
				}
				pos++
			case "a.":
				seenLetters = true
				if c == '.' || isWord(c) {
					token = append(token, c)
				} else if isNum(c) && token[len(token)-1] == '.' {
					token = append(token, c)
					state = "0."
				} else {
					break scan
				}
				pos++
			case "0.":
				if c == '.' || isNum(c) {
					token = append(token, c)
				} else if isWord(c) && token[len(token)-1] == '.' {
					token = append(token, c)
					state = "a."
				} else {
					break scan
				}
				pos++
			}
		}
		tok := string(token)
		if (state == "a." || state == "0.") && (seenLetters || strings.Count(tok, ".") > 1 || strings.ContainsRune(".,", token[len(token)-1])) {
			// re.split("([.,])", token): the pieces and the separators.
			var parts []string
			last := 0
			for i, r := range tok {
				if r == '.' || r == ',' {
					parts = append(parts, tok[last:i], string(r))
					last = i + 1
				}
			}
			parts = append(parts, tok[last:])
			tok = parts[0]
			for _, p := range parts[1:] {
				if p != "" {
					stack = append(stack, p)
				}
			}
		}
		if state == "0." && !strings.Contains(tok, ".") {
			tok = strings.ReplaceAll(tok, ",", ".")
		}
		tokens = append(tokens, tok)
	}
	return tokens
}

// parserinfo's word lists, lower-cased.
var (
	dateJump = map[string]bool{" ": true, ".": true, ",": true, ";": true, "-": true, "/": true, "'": true,
		"at": true, "on": true, "and": true, "ad": true, "m": true, "t": true, "of": true,
		"st": true, "nd": true, "rd": true, "th": true}
	dateWeekdays = map[string]int{"mon": 0, "monday": 0, "tue": 1, "tuesday": 1, "wed": 2, "wednesday": 2,
		"thu": 3, "thursday": 3, "fri": 4, "friday": 4, "sat": 5, "saturday": 5, "sun": 6, "sunday": 6}
	dateMonths = map[string]int{"jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3,
		"apr": 4, "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8,
		"sep": 9, "sept": 9, "september": 9, "oct": 10, "october": 10, "nov": 11, "november": 11,
		"dec": 12, "december": 12}
	dateHMS  = map[string]int{"h": 0, "hour": 0, "hours": 0, "m": 1, "minute": 1, "minutes": 1, "s": 2, "second": 2, "seconds": 2}
	dateAMPM = map[string]int{"am": 0, "a": 0, "pm": 1, "p": 1}
)

func lookup(m map[string]int, s string) (int, bool) {
	v, ok := m[strings.ToLower(s)]
	return v, ok
}

func isUTCZoneName(s string) bool {
	switch strings.ToLower(s) {
	case "utc", "gmt", "z":
		return true
	}
	return false
}

// optInt is one of dateutil's result fields, None until set.
type optInt struct {
	v   int
	set bool
}

func some(v int) optInt { return optInt{v, true} }

// dateResult is dateutil's parser._result.
type dateResult struct {
	year, month, day, weekday, hour, minute, second, microsecond optInt
	tzname                                                       string
	hasTZName                                                    bool
	tzoffset                                                     optInt
	ampm                                                         optInt
	centurySpecified                                             bool
}

// numToken is a numeric token's value (a Decimal in dateutil): its
// text, and the integer part (saturated far beyond any date field).
type numToken struct {
	repr  string
	value float64
	whole int
}

// parseNum is float(token) for a token: only numeric tokens (digits,
// with one point) read as numbers here; a word that float() reads (inf,
// nan) makes _to_decimal fail, so it fails the parse (bad).
func parseNum(tok string) (n numToken, isNum, bad bool) {
	switch strings.ToLower(tok) {
	case "inf", "infinity", "nan":
		return n, false, true
	}
	if tok == "" || tok == "." {
		return n, false, false
	}
	intPart, frac, _ := strings.Cut(tok, ".")
	for _, p := range []string{intPart, frac} {
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return n, false, false
			}
		}
	}
	if intPart == "" && frac == "" {
		return n, false, false
	}
	f, _ := strconv.ParseFloat(tok, 64)
	whole := 0
	for i := 0; i < len(intPart); i++ {
		if whole > saturated/10 {
			whole = saturated
			break
		}
		whole = whole*10 + int(intPart[i]-'0')
	}
	return numToken{repr: tok, value: f, whole: whole}, true, false
}

// saturated stands for a number beyond any date field's: on a 32-bit
// int it is 524,287, so that an hour of it times 3,600 still fits.
const saturated = math.MaxInt >> 12

// atoi is int() of a token slice (digits only, else the parse fails);
// a number beyond any date field's is saturated.
func atoi(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		if n < saturated/10 {
			n = n*10 + int(s[i]-'0')
		}
	}
	return n, true
}

// dateYMD is dateutil's _ymd: up to three numbers, with which of them
// are known to be the year, the month and the day.
type dateYMD struct {
	vals                      []int
	centurySpecified          bool
	ystridx, mstridx, dstridx int // -1: unknown
}

// appendStr is _ymd.append of a string (digits).
func (y *dateYMD) appendStr(s string, label byte) bool {
	n, ok := atoi(s)
	if !ok {
		return false
	}
	if len(s) > 2 {
		y.centurySpecified = true
		label = 'Y'
	}
	return y.add(n, label)
}

// appendNum is _ymd.append of a number.
func (y *dateYMD) appendNum(v float64, whole int, label byte) bool {
	if v > 100 {
		y.centurySpecified = true
		label = 'Y'
	}
	return y.add(whole, label)
}

func (y *dateYMD) add(n int, label byte) bool {
	y.vals = append(y.vals, n)
	idx := len(y.vals) - 1
	switch label {
	case 'M':
		if y.mstridx >= 0 {
			return false
		}
		y.mstridx = idx
	case 'D':
		if y.dstridx >= 0 {
			return false
		}
		y.dstridx = idx
	case 'Y':
		if y.ystridx >= 0 {
			return false
		}
		y.ystridx = idx
	}
	return true
}

func daysIn(year, month int) int {
	if month < 1 || month > 12 {
		return 0
	}
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func (y *dateYMD) couldBeDay(v float64) bool {
	switch {
	case y.dstridx >= 0:
		return false
	case y.mstridx < 0:
		return 1 <= v && v <= 31
	case y.ystridx < 0:
		return 1 <= v && v <= float64(daysIn(2000, y.vals[y.mstridx]))
	default:
		year := y.vals[y.ystridx]
		if year < 1 || year > 9999 {
			return false // monthrange's ValueError ends the parse the same way
		}
		return 1 <= v && v <= float64(daysIn(year, y.vals[y.mstridx]))
	}
}

// resolve is _ymd.resolve_ymd(yearfirst=False, dayfirst=False).
func (y *dateYMD) resolve() (year, month, day optInt, ok bool) {
	n := len(y.vals)
	strids := map[byte]int{}
	if y.ystridx >= 0 {
		strids['y'] = y.ystridx
	}
	if y.mstridx >= 0 {
		strids['m'] = y.mstridx
	}
	if y.dstridx >= 0 {
		strids['d'] = y.dstridx
	}
	if (n == len(strids) && n > 0) || (n == 3 && len(strids) == 2) {
		if n == 3 && len(strids) == 2 {
			used := map[int]bool{}
			for _, v := range strids {
				used[v] = true
			}
			for _, k := range []byte{'y', 'm', 'd'} {
				if _, has := strids[k]; !has {
					for i := 0; i < 3; i++ {
						if !used[i] {
							strids[k] = i
						}
					}
				}
			}
		}
		if i, has := strids['y']; has {
			year = some(y.vals[i])
		}
		if i, has := strids['m']; has {
			month = some(y.vals[i])
		}
		if i, has := strids['d']; has {
			day = some(y.vals[i])
		}
		return year, month, day, true
	}
	v := y.vals
	switch {
	case n > 3:
		return year, month, day, false
	case n == 1 || (y.mstridx >= 0 && n == 2):
		var other int
		if y.mstridx >= 0 {
			month = some(v[y.mstridx])
			other = v[(y.mstridx+n-1)%n] // self[mstridx-1]
		} else {
			other = v[0]
		}
		if n > 1 || y.mstridx < 0 {
			if other > 31 {
				year = some(other)
			} else {
				day = some(other)
			}
		}
	case n == 2:
		switch {
		case v[0] > 31:
			year, month = some(v[0]), some(v[1])
		case v[1] > 31:
			month, year = some(v[0]), some(v[1])
		default:
			month, day = some(v[0]), some(v[1])
		}
	case n == 3:
		switch y.mstridx {
		case 0:
			if v[1] > 31 {
				month, year, day = some(v[0]), some(v[1]), some(v[2])
			} else {
				month, day, year = some(v[0]), some(v[1]), some(v[2])
			}
		case 1:
			if v[0] > 31 {
				year, month, day = some(v[0]), some(v[1]), some(v[2])
			} else {
				day, month, year = some(v[0]), some(v[1]), some(v[2])
			}
		case 2:
			if v[1] > 31 {
				day, year, month = some(v[0]), some(v[1]), some(v[2])
			} else {
				year, day, month = some(v[0]), some(v[1]), some(v[2])
			}
		default:
			switch {
			case v[0] > 31 || y.ystridx == 0:
				year, month, day = some(v[0]), some(v[1]), some(v[2])
			case v[0] > 12:
				day, month, year = some(v[0]), some(v[1]), some(v[2])
			default:
				month, day, year = some(v[0]), some(v[1]), some(v[2])
			}
		}
	}
	return year, month, day, true
}

// dateutilParse is dateutil.parser.parse(text, tzinfos=common_timezones)
// with today as its default: the moment, and whether it is aware (has
// an offset); false where dateutil raises.
func dateutilParse(text string, today time.Time) (time.Time, bool, bool) {
	res, ok := dateutilFields(text, today.Year())
	if !ok {
		return time.Time{}, false, false
	}
	return dateutilBuild(res, today)
}

// dateutilFields is parser._parse and parserinfo.validate.
func dateutilFields(text string, thisYear int) (dateResult, bool) {
	var res dateResult
	l := timelex(text)
	ymd := &dateYMD{ystridx: -1, mstridx: -1, dstridx: -1}
	n := len(l)
	at := func(i int) string {
		if i < n {
			return l[i]
		}
		return ""
	}
	for i := 0; i < n; i++ {
		tok := l[i]
		num, isNum, bad := parseNum(tok)
		if bad {
			return res, false
		}
		if isNum {
			var ok bool
			if i, ok = parseNumericToken(l, i, num, ymd, &res); !ok {
				return res, false
			}
			continue
		}
		if wd, ok := lookup(dateWeekdays, tok); ok {
			res.weekday = some(wd)
			continue
		}
		if mo, ok := lookup(dateMonths, tok); ok {
			if !ymd.add(mo, 'M') {
				return res, false
			}
			if i+1 < n {
				if sep := l[i+1]; sep == "-" || sep == "/" {
					if i+2 >= n || !ymd.appendStr(l[i+2], 0) {
						return res, false
					}
					if i+3 < n && l[i+3] == sep {
						if i+4 >= n || !ymd.appendStr(l[i+4], 0) {
							return res, false
						}
						i += 2
					}
					i += 2
				} else if i+4 < n && l[i+1] == " " && l[i+3] == " " && strings.ToLower(l[i+2]) == "of" {
					if isASCIIDigits(l[i+4]) {
						y, ok := atoi(l[i+4])
						if !ok || !ymd.appendStr(strconv.Itoa(convertYear(y, false, thisYear)), 'Y') {
							return res, false
						}
					}
					i += 4
				}
			}
			continue
		}
		if ap, ok := lookup(dateAMPM, tok); ok {
			// _ampm_valid, not fuzzy: an hour of 0 to 12 must come first.
			if !res.hour.set || res.hour.v < 0 || res.hour.v > 12 {
				return res, false
			}
			res.hour = some(adjustAMPM(res.hour.v, ap))
			res.ampm = some(ap)
			continue
		}
		if couldBeTZName(res, tok) {
			res.tzname, res.hasTZName = tok, true
			res.tzoffset = tzOffsetOf(tok)
			if i+1 < n && (l[i+1] == "+" || l[i+1] == "-") {
				// GMT+3 means GMT-3's offset in dateutil's reading.
				if l[i+1] == "+" {
					l[i+1] = "-"
				} else {
					l[i+1] = "+"
				}
				res.tzoffset = optInt{}
				if isUTCZoneName(tok) {
					res.tzname, res.hasTZName = "", false
				}
			}
			continue
		}
		if res.hour.set && (tok == "+" || tok == "-") {
			sign := -1
			if tok == "+" {
				sign = 1
			}
			if i+1 >= n {
				return res, false
			}
			next := l[i+1]
			var hours, minutes int
			var ok bool
			switch {
			case len([]rune(next)) == 4:
				var ok2 bool
				hours, ok = atoi(next[:2])
				minutes, ok2 = atoi(next[2:])
				ok = ok && ok2 && isASCIIDigits(next)
			case i+2 < n && l[i+2] == ":":
				var ok2 bool
				hours, ok = atoi(next)
				minutes, ok2 = atoi(at(i + 3))
				ok = ok && ok2
				i += 2
			case len([]rune(next)) <= 2:
				hours, ok = atoi(next)
			}
			if !ok {
				return res, false
			}
			res.tzoffset = some(sign * (hours*3600 + minutes*60))
			if i+5 < n && dateJump[strings.ToLower(l[i+2])] && l[i+3] == "(" && l[i+5] == ")" &&
				len([]rune(l[i+4])) >= 3 && couldBeTZName(dateResult{hour: res.hour, tzname: res.tzname, hasTZName: res.hasTZName}, l[i+4]) {
				res.tzname, res.hasTZName = l[i+4], true
				i += 4
			}
			i++
			continue
		}
		if !dateJump[strings.ToLower(tok)] {
			return res, false
		}
	}
	year, month, day, ok := ymd.resolve()
	if !ok {
		return res, false
	}
	res.centurySpecified = ymd.centurySpecified
	res.year, res.month, res.day = year, month, day
	// parse's "String does not contain a date": no field at all.
	if !res.year.set && !res.month.set && !res.day.set && !res.weekday.set && !res.hour.set && !res.minute.set &&
		!res.second.set && !res.microsecond.set && !res.hasTZName && !res.tzoffset.set && !res.ampm.set {
		return res, false
	}
	// validate
	if res.year.set {
		if res.year.v < 0 {
			return res, false
		}
		res.year.v = convertYear(res.year.v, res.centurySpecified, thisYear)
	}
	if (res.tzoffset.set && res.tzoffset.v == 0 && res.tzname == "") || res.tzname == "Z" || res.tzname == "z" {
		res.tzname, res.hasTZName = "UTC", true
		res.tzoffset = some(0)
	} else if !(res.tzoffset.set && res.tzoffset.v == 0) && res.tzname != "" && isUTCZoneName(res.tzname) {
		res.tzoffset = some(0)
	}
	return res, true
}

func isASCIIDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// tzOffsetOf is parserinfo.tzoffset: 0 for z, Z, utc or gmt written in
// lower case (parserinfo's UTCZONE lookup is of the lower-cased names),
// else unknown.
func tzOffsetOf(name string) optInt {
	switch name {
	case "utc", "gmt", "z":
		return some(0)
	}
	return optInt{}
}

// couldBeTZName is _could_be_tzname: after an hour, before any zone, at
// most five upper-case ASCII letters or one of UTC, GMT, Z, z.
func couldBeTZName(res dateResult, tok string) bool {
	if !res.hour.set || res.hasTZName || res.tzoffset.set || len(tok) > 5 {
		return false
	}
	switch tok {
	case "UTC", "GMT", "Z", "z":
		return true
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < 'A' || tok[i] > 'Z' {
			return false
		}
	}
	return true // all() of nothing is true: an empty token never comes
}

func adjustAMPM(hour, ampm int) int {
	if hour < 12 && ampm == 1 {
		return hour + 12
	}
	if hour == 12 && ampm == 0 {
		return 0
	}
	return hour
}

// convertYear is parserinfo.convertyear: a two-digit year is the one
// within 50 years of this year.
func convertYear(year int, centurySpecified bool, thisYear int) int {
	if year < 100 && !centurySpecified {
		year += thisYear / 100 * 100
		if year >= thisYear+50 {
			year -= 100
		} else if year < thisYear-50 {
			year += 100
		}
	}
	return year
}

// parseMS is _parsems: seconds and microseconds of I[.F].
func parseMS(s string) (int, int, bool) {
	i, f, hasDot := strings.Cut(s, ".")
	sec, ok := atoi(i)
	if !ok {
		return 0, 0, false
	}
	if !hasDot {
		return sec, 0, true
	}
	f = (f + "000000")[:6]
	us, ok := atoi(f)
	return sec, us, ok
}

// minSec is _parse_min_sec.
func minSec(v numToken) (optInt, optInt) {
	minute := some(v.whole)
	if s, ok := sixtieths(v); ok {
		return minute, some(s)
	}
	return minute, optInt{}
}

// sixtieths is int(60 * (value % 1)) of a Decimal, exactly: whether the
// value has a fraction, and how many whole sixtieths it holds.
func sixtieths(v numToken) (int, bool) {
	_, frac, _ := strings.Cut(v.repr, ".")
	frac = strings.TrimRight(frac, "0")
	if frac == "" {
		return 0, false
	}
	if len(frac) > 15 {
		frac = frac[:15]
	}
	f, _ := strconv.ParseInt(frac, 10, 64)
	scale := int64(1)
	for range frac {
		scale *= 10
	}
	return int(60 * f / scale), true
}

// parseNumericToken is _parse_numeric_token, not fuzzy: the index of
// the last token it read, and false where dateutil raises.
func parseNumericToken(l []string, idx int, num numToken, ymd *dateYMD, res *dateResult) (int, bool) {
	n := len(l)
	s := num.repr
	lenLi := len(s)
	hms := func(i int) (int, bool) {
		if i < 0 || i >= n {
			return 0, false
		}
		return lookup(dateHMS, l[i])
	}
	if len(ymd.vals) == 3 && (lenLi == 2 || lenLi == 4) && !res.hour.set &&
		(idx+1 >= n || (l[idx+1] != ":" && !isHMS(l[idx+1]))) {
		h, ok := atoi(s[:2])
		if !ok {
			return idx, false
		}
		res.hour = some(h)
		if lenLi == 4 {
			m, ok := atoi(s[2:])
			if !ok {
				return idx, false
			}
			res.minute = some(m)
		}
		return idx, true
	}
	if lenLi == 6 || (lenLi > 6 && strings.Index(s, ".") == 6) {
		if len(ymd.vals) == 0 && !strings.Contains(s, ".") {
			return idx, ymd.appendStr(s[:2], 0) && ymd.appendStr(s[2:4], 0) && ymd.appendStr(s[4:], 0)
		}
		h, ok1 := atoi(s[:2])
		m, ok2 := atoi(s[2:4])
		sec, us, ok3 := parseMS(s[4:])
		if !ok1 || !ok2 || !ok3 {
			return idx, false
		}
		res.hour, res.minute, res.second, res.microsecond = some(h), some(m), some(sec), some(us)
		return idx, true
	}
	if lenLi == 8 || lenLi == 12 || lenLi == 14 {
		if !ymd.appendStr(s[:4], 'Y') || !ymd.appendStr(s[4:6], 0) || !ymd.appendStr(s[6:8], 0) {
			return idx, false
		}
		if lenLi > 8 {
			h, ok1 := atoi(s[8:10])
			m, ok2 := atoi(s[10:12])
			if !ok1 || !ok2 {
				return idx, false
			}
			res.hour, res.minute = some(h), some(m)
			if lenLi > 12 {
				sec, ok := atoi(s[12:])
				if !ok {
					return idx, false
				}
				res.second = some(sec)
			}
		}
		return idx, true
	}
	// _find_hms_idx(allow_jump=True)
	hmsIdx := -1
	switch {
	case idx+1 < n && isHMS(l[idx+1]):
		hmsIdx = idx + 1
	case idx+2 < n && l[idx+1] == " " && isHMS(l[idx+2]):
		hmsIdx = idx + 2
	case idx > 0 && isHMS(l[idx-1]):
		hmsIdx = idx - 1
	case 1 < idx && idx == n-1 && l[idx-1] == " " && isHMS(l[idx-2]):
		hmsIdx = idx - 2
	}
	if hmsIdx >= 0 {
		var which int
		if hmsIdx > idx {
			which, _ = hms(hmsIdx)
			idx = hmsIdx
		} else {
			which, _ = hms(hmsIdx)
			which++
		}
		switch which {
		case 0:
			res.hour = some(num.whole)
			if m, ok := sixtieths(num); ok {
				res.minute = some(m)
			}
		case 1:
			res.minute, res.second = minSec(num)
		case 2:
			sec, us, ok := parseMS(num.repr)
			if !ok {
				return idx, false
			}
			res.second, res.microsecond = some(sec), some(us)
		}
		// hms 3 (seconds before an "s"): dateutil assigns nothing.
		return idx, true
	}
	if idx+2 < n && l[idx+1] == ":" {
		res.hour = some(num.whole)
		next, isNum, _ := parseNum(l[idx+2])
		if !isNum {
			return idx, false
		}
		res.minute, res.second = minSec(next)
		if idx+4 < n && l[idx+3] == ":" {
			sec, us, ok := parseMS(l[idx+4])
			if !ok {
				return idx, false
			}
			res.second, res.microsecond = some(sec), some(us)
			idx += 2
		}
		return idx + 2, true
	}
	if idx+1 < n && (l[idx+1] == "-" || l[idx+1] == "/" || l[idx+1] == ".") {
		sep := l[idx+1]
		if !ymd.appendStr(num.repr, 0) {
			return idx, false
		}
		if idx+2 < n && !dateJump[strings.ToLower(l[idx+2])] {
			if isPyDigits(l[idx+2]) {
				if !ymd.appendStr(l[idx+2], 0) {
					return idx, false
				}
			} else if mo, ok := lookup(dateMonths, l[idx+2]); ok {
				if !ymd.add(mo, 'M') {
					return idx, false
				}
			} else {
				return idx, false
			}
			if idx+3 < n && l[idx+3] == sep {
				if idx+4 >= n {
					return idx, false
				}
				if mo, ok := lookup(dateMonths, l[idx+4]); ok {
					if !ymd.add(mo, 'M') {
						return idx, false
					}
				} else if !ymd.appendStr(l[idx+4], 0) {
					return idx, false
				}
				idx += 2
			}
			idx++
		}
		return idx + 1, true
	}
	if idx+1 >= n || dateJump[strings.ToLower(l[idx+1])] {
		if idx+2 < n {
			if ap, ok := lookup(dateAMPM, l[idx+2]); ok {
				res.hour = some(adjustAMPM(num.whole, ap))
				return idx + 2, true
			}
		}
		return idx + 1, ymd.appendNum(num.value, num.whole, 0)
	}
	if ap, ok := lookup(dateAMPM, l[idx+1]); ok && 0 <= num.value && num.value < 24 {
		res.hour = some(adjustAMPM(num.whole, ap))
		return idx + 1, true
	}
	if ymd.couldBeDay(num.value) {
		return idx, ymd.appendNum(num.value, num.whole, 0)
	}
	return idx, false
}

// isPyDigits is str.isdigit of a token (its digits are ASCII by now).
func isPyDigits(s string) bool { return isASCIIDigits(s) }

func isHMS(s string) bool {
	_, ok := lookup(dateHMS, s)
	return ok
}

// dateutilBuild is _build_naive and _build_tzaware: the fields over
// today's, a weekday moving the date to that day on or after it, and the
// zone's offset (a name from common_timezones, or a written offset).
func dateutilBuild(res dateResult, today time.Time) (time.Time, bool, bool) {
	year, month, day := today.Year(), int(today.Month()), today.Day()
	if res.year.set {
		year = res.year.v
	}
	if res.month.set {
		month = res.month.v
	}
	if res.day.set {
		day = res.day.v
	} else if year >= 1 && year <= 9999 && month >= 1 && month <= 12 && day > daysIn(year, month) {
		day = daysIn(year, month)
	}
	hour, minute, second, us := 0, 0, 0, 0
	if res.hour.set {
		hour = res.hour.v
	}
	if res.minute.set {
		minute = res.minute.v
	}
	if res.second.set {
		second = res.second.v
	}
	if res.microsecond.set {
		us = res.microsecond.v
	}
	// datetime.replace's checks.
	if year < 1 || year > 9999 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || us < 0 || us > 999999 {
		return time.Time{}, false, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, us*1000, time.UTC)
	if res.weekday.set && (!res.day.set || res.day.v == 0) {
		// relativedelta(weekday=n): the next such day, today included.
		goWeekday := (res.weekday.v + 1) % 7 // Monday is 0 in Python, 1 in Go
		ahead := (goWeekday - int(t.Weekday()) + 7) % 7
		t = t.AddDate(0, 0, ahead)
		if t.Year() > 9999 {
			return time.Time{}, false, false
		}
	}
	if off, ok := commonTimezones[res.tzname]; ok && res.hasTZName {
		return t.Add(-time.Duration(off) * time.Second), true, true
	}
	if res.tzoffset.set && res.tzoffset.v != 0 {
		if res.tzoffset.v <= -86400 || res.tzoffset.v >= 86400 {
			// A timezone's offset is less than a day: Zulip's astimezone
			// raises, and the text is an invalid time.
			return offsetBeyondADay, true, true
		}
		return t.Add(-time.Duration(res.tzoffset.v) * time.Second), true, true
	}
	// UTC (an offset of 0), no zone, or a name dateutil does not know
	// (which it warns of and leaves naive): the time as written, in UTC.
	return t, res.tzoffset.set, true
}
