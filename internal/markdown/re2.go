package markdown

// A linear-time matcher for linkifier patterns. Zulip compiles them with
// RE2 (google-re2); zulite reads the same syntax (Perl flags, as RE2 and
// Go's regexp read a pattern by default: . does not match a newline, ^
// and $ are the text's ends unless (?m)) into a small program of its
// own and runs it as a Pike VM: every thread steps over the text in
// lockstep, so a search costs at most the text's length times the
// program's size, whatever the pattern, with RE2's leftmost-first
// choice among matches and its submatches. Neither regexp (241 KB of
// the binary) nor regexp/syntax (160 KB, most of it the Unicode script
// tables) is linked in; re2_test.go holds this matcher to Go's regexp,
// and FuzzRE2 on any pattern both read.
//
// What RE2 has and this reads: literals and escapes (\a \f \t \n \r \v,
// \x41, \x{263a}, octal \0nn, \Q...\E, escaped punctuation), . ^ $ \A
// \z \b \B, classes ([a-z], [^...], [[:alpha:]], \d \s \w and their
// negations, \pL, \p{Lu}, \PN, \p{^L}: the Unicode general categories
// and Any), groups ((...), (?:...), (?P<name>...), (?<name>...)),
// flags (i, m, s, U, as (?i) or (?i:...)), alternation and the
// repetitions * + ? {n} {n,} {n,m} (at most 1000), each also lazy.
// Unicode scripts (\p{Greek}) are refused as an unknown class.

import (
	"unicode"
	"unicode/utf8"
)

// Bounds of one pattern: its length in bytes and its program's size.
const (
	MaxPatternBytes = 1000
	maxProgInsts    = 5000
	maxRepeat       = 1000
)

type instOp uint8

const (
	opFail instOp = iota
	opMatch
	opRune    // a rune of the class
	opAny     // any rune
	opAnyNL   // any rune but \n
	opAlt     // out first, then arg
	opEmpty   // an empty-width assertion: arg's flags hold
	opCapture // records the position in slot arg
)

// Empty-width assertions.
const (
	emptyBeginLine = 1 << iota
	emptyEndLine
	emptyBeginText
	emptyEndText
	emptyWordBoundary
	emptyNoWordBoundary
)

type inst struct {
	op    instOp
	out   uint32
	arg   uint32
	class *runeClass
}

// runeClass is a set of runes: sorted, disjoint ranges (lo, hi pairs),
// Unicode tables, negated as a whole; fold matches a rune when any rune
// of its simple case-folding orbit is in the set.
type runeClass struct {
	ranges    []rune
	tables    []*unicode.RangeTable
	notTables []*unicode.RangeTable // a rune in none of them is in the set
	negate    bool
	fold      bool
}

func (c *runeClass) has(r rune) bool {
	for i := 0; i+1 < len(c.ranges); i += 2 {
		if c.ranges[i] <= r && r <= c.ranges[i+1] {
			return true
		}
	}
	for _, t := range c.tables {
		if unicode.Is(t, r) {
			return true
		}
	}
	for _, t := range c.notTables {
		if !unicode.Is(t, r) {
			return true
		}
	}
	return false
}

func (c *runeClass) matches(r rune) bool {
	in := c.has(r)
	if !in && c.fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if c.has(f) {
				in = true
				break
			}
		}
	}
	return in != c.negate
}

// re2 is a compiled pattern.
type re2 struct {
	prog     []inst
	start    uint32
	names    []string // by group number; "" for an unnamed group
	ncap     int      // 2 × (groups + 1)
	anchored bool     // the pattern starts with \A or ^ (not multi-line)
	exceeded bool     // the program passed maxProgInsts
}

// PatternError is a pattern RE2 syntax refuses, in RE2's words (its
// RegexpStatus text: the error's kind, a colon, and the part of the
// pattern at fault).
type PatternError struct{ Text string }

func (e *PatternError) Error() string { return e.Text }

func badPattern(kind, part string) *PatternError { return &PatternError{kind + ": " + part} }

var errTooLarge = &PatternError{"pattern too large - compile failed"}

// ---- compiling: tree → program ----

func (re *re2) emit(i inst) uint32 {
	re.prog = append(re.prog, i)
	if len(re.prog) > maxProgInsts {
		re.exceeded = true
	}
	return uint32(len(re.prog) - 1)
}

// compile emits n so that it goes on to next, and answers its entry.
// The program is built back to front, so that every instruction's
// successor is known when it is made.
func (re *re2) compile(n *node, next uint32) (uint32, error) {
	if re.exceeded {
		return 0, errTooLarge
	}
	switch n.kind {
	case nodeEmpty:
		return next, nil
	case nodeClass:
		return re.emit(inst{op: opRune, out: next, class: n.class}), nil
	case nodeAny:
		return re.emit(inst{op: opAny, out: next}), nil
	case nodeAnyNL:
		return re.emit(inst{op: opAnyNL, out: next}), nil
	case nodeAssert:
		return re.emit(inst{op: opEmpty, out: next, arg: n.assert}), nil
	case nodeCapture:
		end := re.emit(inst{op: opCapture, out: next, arg: uint32(2*n.group + 1)})
		body, err := re.compile(n.subs[0], end)
		if err != nil {
			return 0, err
		}
		return re.emit(inst{op: opCapture, out: body, arg: uint32(2 * n.group)}), nil
	case nodeConcat:
		for i := len(n.subs) - 1; i >= 0; i-- {
			var err error
			if next, err = re.compile(n.subs[i], next); err != nil {
				return 0, err
			}
		}
		return next, nil
	case nodeAlternate:
		entry, err := re.compile(n.subs[len(n.subs)-1], next)
		if err != nil {
			return 0, err
		}
		for i := len(n.subs) - 2; i >= 0; i-- {
			first, err := re.compile(n.subs[i], next)
			if err != nil {
				return 0, err
			}
			entry = re.emit(inst{op: opAlt, out: first, arg: entry})
		}
		return entry, nil
	case nodeRepeat:
		return re.compileRepeat(n, next)
	}
	return 0, errTooLarge
}

// alt is a choice between body and skip, body first unless lazy.
func (re *re2) alt(body, skip uint32, lazy bool) uint32 {
	if lazy {
		return re.emit(inst{op: opAlt, out: skip, arg: body})
	}
	return re.emit(inst{op: opAlt, out: body, arg: skip})
}

// compileRepeat is x{min,max} as Go's regexp simplifies it: min copies
// of x, then x* for no bound or max-min nested optional copies
// (x(x(x)?)?)?; x* of an x that may match empty is (x+)?, which keeps
// Perl's choice of submatches.
func (re *re2) compileRepeat(n *node, next uint32) (uint32, error) {
	sub, lazy := n.subs[0], n.lazy
	tail := next
	if n.max < 0 {
		// x+ as a loop: x, then back to x or on.
		loop := re.emit(inst{op: opAlt}) // patched below
		body, err := re.compile(sub, loop)
		if err != nil {
			return 0, err
		}
		if lazy {
			re.prog[loop].out, re.prog[loop].arg = next, body
		} else {
			re.prog[loop].out, re.prog[loop].arg = body, next
		}
		tail = body // x+ enters at body
		if n.min == 0 {
			if nullable(sub) {
				tail = re.alt(body, next, lazy) // (x+)?
			} else {
				tail = loop // x*: the loop's choice first
			}
		}
		for i := 1; i < n.min; i++ {
			var err error
			if tail, err = re.compile(sub, tail); err != nil {
				return 0, err
			}
		}
		return tail, nil
	}
	for i := n.min; i < n.max; i++ {
		body, err := re.compile(sub, tail)
		if err != nil {
			return 0, err
		}
		tail = re.alt(body, next, lazy) // each optional copy skips to the end
	}
	for i := 0; i < n.min; i++ {
		var err error
		if tail, err = re.compile(sub, tail); err != nil {
			return 0, err
		}
	}
	return tail, nil
}

// nullable tells whether n can match the empty string.
func nullable(n *node) bool {
	switch n.kind {
	case nodeEmpty, nodeAssert:
		return true
	case nodeCapture:
		return nullable(n.subs[0])
	case nodeConcat:
		for _, s := range n.subs {
			if !nullable(s) {
				return false
			}
		}
		return true
	case nodeAlternate:
		for _, s := range n.subs {
			if nullable(s) {
				return true
			}
		}
		return false
	case nodeRepeat:
		return n.min == 0 || nullable(n.subs[0])
	}
	return false
}

// ---- matching ----

// vmThread is one thread: where it is in the program, and its submatches.
type vmThread struct {
	pc  uint32
	cap []int
}

// vmQueue is the threads of one step, in priority order, at most one
// per instruction (sparse is the dense index of each pc).
type vmQueue struct {
	sparse []uint32
	dense  []vmThread
}

func (q *vmQueue) has(pc uint32) bool {
	j := q.sparse[pc]
	return j < uint32(len(q.dense)) && q.dense[j].pc == pc
}

// vm is one search's state.
type vm struct {
	re      *re2
	matched []int // the best match's submatches so far, nil: none
	budget  *int  // thread steps left for the whole rendering
}

// emptyAt is the empty-width assertions that hold between before and
// after (-1: the text's start or end); \b is ASCII, as in RE2.
func emptyAt(before, after rune) uint32 {
	var op uint32
	if before < 0 {
		op |= emptyBeginText | emptyBeginLine
	} else if before == '\n' {
		op |= emptyBeginLine
	}
	if after < 0 {
		op |= emptyEndText | emptyEndLine
	} else if after == '\n' {
		op |= emptyEndLine
	}
	isWord := func(r rune) bool { return r >= 0 && r < utf8.RuneSelf && isWordByte(byte(r)) }
	if isWord(before) != isWord(after) {
		op |= emptyWordBoundary
	} else {
		op |= emptyNoWordBoundary
	}
	return op
}

// search answers the leftmost-first match at or after from in text, as
// RE2's Match with startpos: the text before from is context (^ holds
// only at the text's start, \b sees the rune before from). Every byte
// index of the submatches is in text; -1 for a group that took no part.
// ok is false when there is no match or when the budget ran out (then
// budget is 0 and no later search matches).
func (re *re2) search(text string, from int, budget *int) (caps []int, ok bool) {
	if *budget <= 0 || re.anchored && from > 0 {
		return nil, false
	}
	n := len(re.prog)
	m := &vm{re: re, budget: budget}
	run := [2]vmQueue{{sparse: make([]uint32, n), dense: make([]vmThread, 0, n)}, {sparse: make([]uint32, n), dense: make([]vmThread, 0, n)}}
	before := rune(-1)
	if from > 0 {
		before, _ = utf8.DecodeLastRuneInString(text[:from])
	}
	cur, next := &run[0], &run[1]
	pos := from
	r, width := decodeAt(text, pos)
	for {
		if len(cur.dense) == 0 && (m.matched != nil || re.anchored && pos > from) {
			break
		}
		if m.matched == nil && (!re.anchored || pos == from) {
			start := make([]int, re.ncap)
			for i := range start {
				start[i] = -1
			}
			start[0] = pos
			m.add(cur, re.start, pos, start, emptyAt(before, r))
		}
		after, afterWidth := rune(-1), 0
		if width > 0 {
			after, afterWidth = decodeAt(text, pos+width)
		}
		if !m.step(cur, next, pos, pos+width, r, emptyAt(r, after)) {
			return nil, false
		}
		if width == 0 {
			break
		}
		pos += width
		before, r, width = r, after, afterWidth
		cur, next = next, cur
	}
	return m.matched, m.matched != nil
}

// decodeAt is the rune at i (-1 at the end), invalid UTF-8 a byte of
// U+FFFD as Go's regexp reads it.
func decodeAt(text string, i int) (rune, int) {
	if i >= len(text) {
		return -1, 0
	}
	return utf8.DecodeRuneInString(text[i:])
}

// add puts the thread at pc into q, following the instructions that do
// not consume a rune (alternations in priority order, captures, empty
// assertions that hold at pos) to the ones that do.
func (m *vm) add(q *vmQueue, pc uint32, pos int, cap []int, cond uint32) {
	for {
		if q.has(pc) {
			return
		}
		q.sparse[pc] = uint32(len(q.dense))
		i := &m.re.prog[pc]
		switch i.op {
		case opFail:
			q.dense = append(q.dense, vmThread{pc: pc})
			return
		case opAlt:
			q.dense = append(q.dense, vmThread{pc: pc})
			m.add(q, i.out, pos, cap, cond)
			pc = i.arg
		case opEmpty:
			q.dense = append(q.dense, vmThread{pc: pc})
			if i.arg&^cond != 0 {
				return
			}
			pc = i.out
		case opCapture:
			q.dense = append(q.dense, vmThread{pc: pc})
			saved := cap[i.arg]
			cap[i.arg] = pos
			m.add(q, i.out, pos, cap, cond)
			cap[i.arg] = saved
			return
		default: // a thread that consumes a rune, or matches
			q.dense = append(q.dense, vmThread{pc: pc, cap: append([]int(nil), cap...)})
			return
		}
	}
}

// step moves every thread of cur over the rune r at pos into next, in
// priority order; a thread that matches drops those after it (they
// have lower priority). It answers false when the budget ran out.
func (m *vm) step(cur, next *vmQueue, pos, nextPos int, r rune, nextCond uint32) bool {
	*m.budget -= len(cur.dense) + 1
	if *m.budget <= 0 {
		*m.budget = 0
		return false
	}
	for _, t := range cur.dense {
		if t.cap == nil {
			continue
		}
		i := &m.re.prog[t.pc]
		var ok bool
		switch i.op {
		case opMatch:
			// The threads before it in cur, which went on into next, have
			// a higher priority and may still match; those after it lose.
			t.cap[1] = pos
			m.matched = t.cap
			cur.dense = cur.dense[:0]
			return true
		case opRune:
			ok = r >= 0 && i.class.matches(r)
		case opAny:
			ok = r >= 0
		case opAnyNL:
			ok = r >= 0 && r != '\n'
		}
		if ok {
			m.add(next, i.out, nextPos, t.cap, nextCond)
		}
	}
	cur.dense = cur.dense[:0]
	return true
}
