package markdown

// python-dateutil 2.9.0's parser (Zulip 11's), in its order and with its
// quirks, for its default options (not fuzzy, neither dayfirst nor
// yearfirst), so that a global time's text means the moment it means in
// Zulip (globaltime.go): here the fields a text gives and the moment
// built from them; the lexer in dateutil_lex.go, _ymd in dateutil_ymd.go.

import (
	"strconv"
	"strings"
	"time"
)

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
