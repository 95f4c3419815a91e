package markdown

// dateutil's lexer and its tokens (dateutil.go): runs of letters and
// digits, the words it knows, and numbers as dateutil reads them.

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

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
