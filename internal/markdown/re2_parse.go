package markdown

// The RE2 matcher's parser: a pattern, in RE2's syntax, into the tree
// re2.go compiles, with RE2's error texts and its bounds on depth and
// size.

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ---- parsing: pattern → tree ----

type nodeKind uint8

const (
	nodeEmpty nodeKind = iota
	nodeClass
	nodeAny
	nodeAnyNL
	nodeAssert
	nodeCapture
	nodeConcat
	nodeAlternate
	nodeRepeat
)

type node struct {
	kind     nodeKind
	class    *runeClass
	assert   uint32
	group    int // capture: its number
	subs     []*node
	min, max int // repeat: max -1 for no bound
	lazy     bool
	fromOp   bool // a repeat: another operator right after it is an error
	opAt     int  // where its operator stands
}

// reFlags are the flags in force.
type reFlags struct{ fold, multiLine, dotNL, ungreedy bool }

type reParser struct {
	src   string
	pos   int
	names []string
}

func compileRE2(pattern string) (*re2, error) {
	if len(pattern) > MaxPatternBytes {
		return nil, errTooLarge
	}
	if !utf8.ValidString(pattern) {
		return nil, badPattern("invalid UTF-8", pattern)
	}
	p := &reParser{src: pattern, names: []string{""}}
	tree, err := p.alternation(reFlags{}, 0)
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) { // a ) that closes nothing
		return nil, badPattern("unexpected )", pattern)
	}
	re := &re2{names: p.names, ncap: 2 * len(p.names), prog: []inst{{op: opFail}}}
	match := re.emit(inst{op: opMatch})
	start, err := re.compile(tree, match)
	if err != nil {
		return nil, err
	}
	re.start = start
	re.anchored = startsAnchored(tree)
	return re, nil
}

func startsAnchored(n *node) bool {
	switch n.kind {
	case nodeAssert:
		return n.assert&emptyBeginText != 0
	case nodeConcat:
		return len(n.subs) > 0 && startsAnchored(n.subs[0])
	case nodeCapture:
		return startsAnchored(n.subs[0])
	}
	return false
}

func (p *reParser) more() bool { return p.pos < len(p.src) }

func (p *reParser) peek() rune {
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return r
}

func (p *reParser) next() rune {
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return r
}

// alternation reads alternatives up to an unmatched ) or the end.
func (p *reParser) alternation(f reFlags, depth int) (*node, error) {
	if depth > 1000 {
		return nil, errTooLarge
	}
	var alts []*node
	for {
		c, err := p.concat(&f, depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, c)
		if p.more() && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &node{kind: nodeAlternate, subs: alts}, nil
}

// concat reads one alternative; flags set by (?i) hold to its end.
func (p *reParser) concat(f *reFlags, depth int) (*node, error) {
	var items []*node
	for p.more() && p.src[p.pos] != '|' && p.src[p.pos] != ')' {
		start := p.pos
		switch c := p.src[p.pos]; c {
		case '*', '+', '?':
			if len(items) == 0 {
				return nil, badPattern("missing argument to repetition operator", p.src[start:start+1])
			}
			p.pos++
			last := items[len(items)-1]
			if last.kind == nodeRepeat && last.fromOp {
				return nil, badPattern("bad repetition operator", p.src[last.opAt:p.pos])
			}
			min, max := 0, -1
			if c == '+' {
				min = 1
			} else if c == '?' {
				max = 1
			}
			items[len(items)-1] = p.repeat(last, min, max, *f, start)
			continue
		case '{':
			if min, max, ok := p.repeatBounds(); ok {
				if len(items) == 0 {
					return nil, badPattern("missing argument to repetition operator", p.src[start:p.pos])
				}
				if min > maxRepeat || max > maxRepeat || max >= 0 && max < min {
					return nil, badPattern("bad repetition operator", p.src[start:p.pos])
				}
				last := items[len(items)-1]
				if last.kind == nodeRepeat && last.fromOp {
					return nil, badPattern("bad repetition operator", p.src[last.opAt:p.pos])
				}
				items[len(items)-1] = p.repeat(last, min, max, *f, start)
				continue
			}
			p.pos++
			items = append(items, literal('{', *f))
			continue
		}
		item, flagsOnly, err := p.atom(f, depth)
		if err != nil {
			return nil, err
		}
		if !flagsOnly {
			items = append(items, item)
		}
	}
	switch len(items) {
	case 0:
		return &node{kind: nodeEmpty}, nil
	case 1:
		return items[0], nil
	}
	return &node{kind: nodeConcat, subs: items}, nil
}

// repeat wraps sub in a repetition read at opAt (its operator, and a
// ? after it for a lazy one).
func (p *reParser) repeat(sub *node, min, max int, f reFlags, opAt int) *node {
	lazy := false
	if p.more() && p.src[p.pos] == '?' {
		p.pos++
		lazy = true
	}
	if f.ungreedy {
		lazy = !lazy
	}
	return &node{kind: nodeRepeat, subs: []*node{sub}, min: min, max: max, lazy: lazy, fromOp: true, opAt: opAt}
}

// repeatBounds reads {n}, {n,} or {n,m} at pos; false (pos unmoved) if
// what is there is not one, and then { is a literal.
func (p *reParser) repeatBounds() (min, max int, ok bool) {
	s := p.src[p.pos:]
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return 0, 0, false
	}
	body := s[1:end]
	lo, hi, comma := strings.Cut(body, ",")
	num := func(t string) (int, bool) {
		if t == "" || len(t) > 8 || strings.Trim(t, "0123456789") != "" {
			return 0, false
		}
		n, _ := strconv.Atoi(t)
		return n, true
	}
	if min, ok = num(lo); !ok {
		return 0, 0, false
	}
	max = min
	if comma {
		max = -1
		if hi != "" {
			if max, ok = num(hi); !ok {
				return 0, 0, false
			}
		}
	}
	p.pos += end + 1
	return min, max, true
}

func literal(r rune, f reFlags) *node {
	return &node{kind: nodeClass, class: &runeClass{ranges: []rune{r, r}, fold: f.fold}}
}

// atom reads one item; flagsOnly for a (?flags) group, which sets f.
func (p *reParser) atom(f *reFlags, depth int) (*node, bool, error) {
	start := p.pos
	switch c := p.next(); c {
	case '(':
		return p.group(f, depth, start)
	case '[':
		cl, err := p.class(*f, start)
		return &node{kind: nodeClass, class: cl}, false, err
	case '.':
		if f.dotNL {
			return &node{kind: nodeAny}, false, nil
		}
		return &node{kind: nodeAnyNL}, false, nil
	case '^':
		if f.multiLine {
			return &node{kind: nodeAssert, assert: emptyBeginLine}, false, nil
		}
		return &node{kind: nodeAssert, assert: emptyBeginText}, false, nil
	case '$':
		if f.multiLine {
			return &node{kind: nodeAssert, assert: emptyEndLine}, false, nil
		}
		return &node{kind: nodeAssert, assert: emptyEndText}, false, nil
	case '\\':
		if !p.more() {
			return nil, false, badPattern("trailing \\", "")
		}
		switch p.src[p.pos] {
		case 'A':
			p.pos++
			return &node{kind: nodeAssert, assert: emptyBeginText}, false, nil
		case 'z':
			p.pos++
			return &node{kind: nodeAssert, assert: emptyEndText}, false, nil
		case 'b':
			p.pos++
			return &node{kind: nodeAssert, assert: emptyWordBoundary}, false, nil
		case 'B':
			p.pos++
			return &node{kind: nodeAssert, assert: emptyNoWordBoundary}, false, nil
		case 'Q':
			p.pos++
			lit := p.src[p.pos:]
			if end := strings.Index(lit, `\E`); end >= 0 {
				lit = lit[:end]
				p.pos += 2
			}
			p.pos += len(lit)
			var items []*node
			for _, r := range lit {
				items = append(items, literal(r, *f))
			}
			if len(items) == 0 {
				return nil, true, nil
			}
			return &node{kind: nodeConcat, subs: items}, false, nil
		}
		cl, err := p.escape(*f, start, false)
		if err != nil {
			return nil, false, err
		}
		return &node{kind: nodeClass, class: cl}, false, nil
	default:
		return literal(c, *f), false, nil
	}
}

// group reads what follows a (.
func (p *reParser) group(f *reFlags, depth, start int) (*node, bool, error) {
	inner := *f
	capture, name := true, ""
	if strings.HasPrefix(p.src[p.pos:], "?P<") || strings.HasPrefix(p.src[p.pos:], "?<") && !strings.HasPrefix(p.src[p.pos:], "?<=") && !strings.HasPrefix(p.src[p.pos:], "?<!") {
		p.pos += strings.IndexByte(p.src[p.pos:], '<') + 1
		end := strings.IndexByte(p.src[p.pos:], '>')
		if end < 0 {
			return nil, false, badPattern("invalid named capture group", p.src[start:])
		}
		name = p.src[p.pos : p.pos+end]
		p.pos += end + 1
		if name == "" || strings.Trim(name, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") != "" || containsName(p.names, name) {
			return nil, false, badPattern("invalid named capture group", p.src[start:p.pos])
		}
	} else if strings.HasPrefix(p.src[p.pos:], "?") {
		p.pos++
		neg, sawFlag := false, false
		for {
			if !p.more() {
				return nil, false, badPattern("missing )", p.src)
			}
			c := p.next()
			switch c {
			case 'i':
				inner.fold, sawFlag = !neg, true
			case 'm':
				inner.multiLine, sawFlag = !neg, true
			case 's':
				inner.dotNL, sawFlag = !neg, true
			case 'U':
				inner.ungreedy, sawFlag = !neg, true
			case '-':
				if neg {
					return nil, false, badPattern("invalid perl operator", p.src[start:p.pos])
				}
				neg, sawFlag = true, false
				continue
			case ')':
				if neg && !sawFlag || p.pos-start == 3 { // (?) or (?-)
					return nil, false, badPattern("invalid perl operator", p.src[start:p.pos])
				}
				*f = inner
				return nil, true, nil
			case ':':
				if neg && !sawFlag {
					return nil, false, badPattern("invalid perl operator", p.src[start:p.pos])
				}
				capture = false
			default:
				return nil, false, badPattern("invalid perl operator", p.src[start:p.pos])
			}
			if !capture {
				break
			}
		}
	}
	group := 0
	if capture {
		group = len(p.names)
		p.names = append(p.names, name)
	}
	sub, err := p.alternation(inner, depth+1)
	if err != nil {
		return nil, false, err
	}
	if !p.more() || p.src[p.pos] != ')' {
		return nil, false, badPattern("missing )", p.src)
	}
	p.pos++
	if !capture {
		return sub, false, nil
	}
	return &node{kind: nodeCapture, group: group, subs: []*node{sub}}, false, nil
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// Perl classes and POSIX classes, as RE2 defines them (ASCII).
var (
	perlDigit = []rune{'0', '9'}
	perlSpace = []rune{'\t', '\n', '\f', '\f', '\r', '\r', ' ', ' '}
	perlWord  = []rune{'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}
	posix     = map[string][]rune{
		"alnum": {'0', '9', 'A', 'Z', 'a', 'z'}, "alpha": {'A', 'Z', 'a', 'z'}, "ascii": {0, 0x7f},
		"blank": {'\t', '\t', ' ', ' '}, "cntrl": {0, 0x1f, 0x7f, 0x7f}, "digit": {'0', '9'},
		"graph": {'!', '~'}, "lower": {'a', 'z'}, "print": {' ', '~'}, "punct": {'!', '/', ':', '@', '[', '`', '{', '~'},
		"space": {'\t', '\r', ' ', ' '}, "upper": {'A', 'Z'}, "word": {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'},
		"xdigit": {'0', '9', 'A', 'F', 'a', 'f'},
	}
)

// escape reads an escape after its backslash: a rune or a class.
// Inside a class (inClass) \b is not allowed, as in RE2.
func (p *reParser) escape(f reFlags, start int, inClass bool) (*runeClass, error) {
	c := p.next()
	one := func(r rune) *runeClass { return &runeClass{ranges: []rune{r, r}, fold: f.fold} }
	switch c {
	case 'a':
		return one('\a'), nil
	case 'f':
		return one('\f'), nil
	case 't':
		return one('\t'), nil
	case 'n':
		return one('\n'), nil
	case 'r':
		return one('\r'), nil
	case 'v':
		return one('\v'), nil
	case 'd', 'D':
		return &runeClass{ranges: perlDigit, negate: c == 'D'}, nil
	case 's', 'S':
		return &runeClass{ranges: perlSpace, negate: c == 'S'}, nil
	case 'w', 'W':
		return &runeClass{ranges: perlWord, negate: c == 'W'}, nil
	case 'p', 'P':
		return p.unicodeClass(f, start, c == 'P')
	case '0', '1', '2', '3', '4', '5', '6', '7':
		if c != '0' && (!p.more() || p.src[p.pos] < '0' || p.src[p.pos] > '7') {
			break // a backreference: RE2 has none
		}
		v := int(c - '0')
		for i := 0; i < 2 && p.more() && p.src[p.pos] >= '0' && p.src[p.pos] <= '7'; i++ {
			v = v*8 + int(p.src[p.pos]-'0')
			p.pos++
		}
		return one(rune(v)), nil
	case 'x':
		if !p.more() {
			break
		}
		if p.src[p.pos] == '{' {
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 2 {
				break
			}
			v, err := strconv.ParseUint(p.src[p.pos+1:p.pos+end], 16, 32)
			if err != nil || v > unicode.MaxRune {
				break
			}
			p.pos += end + 1
			return one(rune(v)), nil
		}
		if p.pos+2 > len(p.src) {
			break
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+2], 16, 8)
		if err != nil {
			break
		}
		p.pos += 2
		return one(rune(v)), nil
	default:
		if c < utf8.RuneSelf && !isWordByte(byte(c)) {
			return one(c), nil // escaped punctuation
		}
	}
	end := p.pos
	if end > len(p.src) {
		end = len(p.src)
	}
	return nil, badPattern("invalid escape sequence", p.src[start:end])
}

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// unicodeClass reads \pL, \p{Name}, \p{^Name} (after the p or P): a
// Unicode general category or Any.
func (p *reParser) unicodeClass(f reFlags, start int, negate bool) (*runeClass, error) {
	if !p.more() {
		return nil, badPattern("invalid character class range", p.src[start:])
	}
	var name string
	if p.src[p.pos] == '{' {
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return nil, badPattern("invalid character class range", p.src[start:])
		}
		name = p.src[p.pos+1 : p.pos+end]
		p.pos += end + 1
	} else {
		name = string(p.next())
	}
	if rest, ok := strings.CutPrefix(name, "^"); ok {
		name, negate = rest, !negate
	}
	if name == "Any" {
		return &runeClass{ranges: []rune{0, unicode.MaxRune}, negate: negate}, nil
	}
	table, ok := unicode.Categories[name]
	if !ok {
		return nil, badPattern("invalid character class range", p.src[start:p.pos])
	}
	return &runeClass{tables: []*unicode.RangeTable{table}, negate: negate, fold: f.fold}, nil
}

// class reads a bracketed class after its [.
func (p *reParser) class(f reFlags, start int) (*runeClass, error) {
	out := &runeClass{fold: f.fold}
	if p.more() && p.src[p.pos] == '^' {
		p.pos++
		out.negate = true
	}
	first := true
	for {
		if !p.more() {
			return nil, badPattern("missing ]", p.src[start:])
		}
		if p.src[p.pos] == ']' && !first {
			p.pos++
			break
		}
		first = false
		itemAt := p.pos
		if strings.HasPrefix(p.src[p.pos:], "[:") {
			if end := strings.Index(p.src[p.pos+2:], ":]"); end >= 0 {
				name := p.src[p.pos+2 : p.pos+2+end]
				neg := strings.HasPrefix(name, "^")
				ranges, ok := posix[strings.TrimPrefix(name, "^")]
				if !ok {
					return nil, badPattern("invalid character class range", p.src[p.pos:p.pos+4+end])
				}
				p.pos += 4 + end
				if neg {
					ranges = negateRanges(ranges)
				}
				out.ranges = append(out.ranges, ranges...)
				continue
			}
		}
		lo, sub, err := p.classRune(f, itemAt)
		if err != nil {
			return nil, err
		}
		if sub != nil {
			if len(sub.tables) > 0 && sub.negate {
				out.notTables = append(out.notTables, sub.tables...)
				continue
			}
			out.tables = append(out.tables, sub.tables...)
			ranges := sub.ranges
			if sub.negate {
				ranges = negateRanges(ranges)
			}
			out.ranges = append(out.ranges, ranges...)
			continue
		}
		hi := lo
		if strings.HasPrefix(p.src[p.pos:], "-") && p.pos+1 < len(p.src) && p.src[p.pos+1] != ']' {
			p.pos++
			var hiSub *runeClass
			if hi, hiSub, err = p.classRune(f, p.pos); err != nil {
				return nil, err
			}
			if hiSub != nil || hi < lo {
				return nil, badPattern("invalid character class range", p.src[itemAt:p.pos])
			}
		}
		out.ranges = append(out.ranges, lo, hi)
	}
	return out, nil
}

// classRune reads one rune of a class, or an escape that is a class
// (sub).
func (p *reParser) classRune(f reFlags, at int) (rune, *runeClass, error) {
	c := p.next()
	if c != '\\' {
		return c, nil, nil
	}
	if !p.more() {
		return 0, nil, badPattern("trailing \\", "")
	}
	cl, err := p.escape(f, at, true)
	if err != nil {
		return 0, nil, err
	}
	if len(cl.tables) == 0 && !cl.negate && len(cl.ranges) == 2 && cl.ranges[0] == cl.ranges[1] {
		return cl.ranges[0], nil, nil
	}
	return 0, cl, nil
}

// negateRanges is the complement of sorted, disjoint ranges.
func negateRanges(ranges []rune) []rune {
	var out []rune
	next := rune(0)
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i] > next {
			out = append(out, next, ranges[i]-1)
		}
		next = ranges[i+1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, next, unicode.MaxRune)
	}
	return out
}
