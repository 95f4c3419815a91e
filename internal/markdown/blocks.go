package markdown

// Block Markdown: Python-Markdown's BlockParser with the block
// processors Zulip keeps, in Zulip's priority order (empty blocks,
// indented code, headings, rules, lists, quotes, tables, paragraphs).
// Each block (text between blank lines) goes to the first processor
// that claims it; nested content is parsed again under its element.

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// isState, pushState and popState track the nesting the processors are
// in (Python-Markdown's parser state: list items, quotes, ...).
func (r *renderer) isState(s string) bool {
	return len(r.state) > 0 && r.state[len(r.state)-1] == s
}

func (r *renderer) pushState(s string) { r.state = append(r.state, s) }

func (r *renderer) popState() { r.state = r.state[:len(r.state)-1] }

func (r *renderer) parseChunk(parent *mdElement, text string) {
	r.parseBlocks(parent, strings.Split(text, "\n\n"))
}

// parseBlocks hands each block to the first processor that takes it,
// in Zulip's priority order: empty, list indent, indented code, hash
// header, table, rule, ordered list, bullet list, quote, paragraph.
func (r *renderer) parseBlocks(parent *mdElement, blocks []string) {
	if len(r.state) > 100 { // deeper than any message means: stay text
		for _, b := range blocks {
			if pyStrip(b) != "" {
				parent.sub("p").text = pyLstrip(b)
			}
		}
		return
	}
	for len(blocks) > 0 {
		block := blocks[0]
		switch {
		case block == "" || block[0] == '\n':
			blocks = r.emptyBlock(parent, blocks)
		case r.testListIndent(parent, block):
			blocks = r.listIndent(parent, blocks)
		case strings.HasPrefix(block, "    "):
			blocks = r.codeBlock(parent, blocks)
		case mayHaveHeader(block) && hasHashHeader(block):
			blocks = r.hashHeader(parent, blocks)
		case testTable(block) != nil:
			blocks = r.table(parent, blocks, testTable(block))
		case hrLine(block) >= 0:
			blocks = r.rule(parent, blocks)
		case listItemStart(block, true):
			blocks = r.list(parent, blocks, true)
		case listItemStart(block, false):
			blocks = r.list(parent, blocks, false)
		case quoteStart(block) >= 0:
			blocks = r.quote(parent, blocks)
		default:
			blocks = r.paragraph(parent, blocks)
		}
	}
}

// emptyBlock is Python-Markdown's EmptyBlockProcessor.
func (r *renderer) emptyBlock(parent *mdElement, blocks []string) []string {
	block := blocks[0]
	blocks = blocks[1:]
	filler := "\n\n"
	if block != "" {
		filler = "\n"
		if rest := block[1:]; rest != "" {
			blocks = append([]string{rest}, blocks...)
		}
	}
	if s := parent.last(); s != nil && s.tag == "pre" && len(s.children) > 0 && s.children[0].tag == "code" {
		s.children[0].text += filler
	}
	return blocks
}

// testListIndent is Zulip's ListIndentProcessor.test (two-space
// indents): an indented block inside a list item or after a list.
func (r *renderer) testListIndent(parent *mdElement, block string) bool {
	if !strings.HasPrefix(block, "  ") || r.isState("detabbed") {
		return false
	}
	if parent.tag == "li" {
		return true
	}
	l := parent.last()
	return l != nil && (l.tag == "ul" || l.tag == "ol")
}

func (r *renderer) listIndent(parent *mdElement, blocks []string) []string {
	block := blocks[0]
	blocks = blocks[1:]
	level, sibling := r.indentLevel(parent, block)
	block = looseDetab(block, level, 2)
	r.pushState("detabbed")
	switch {
	case parent.tag == "li":
		if l := parent.last(); l != nil && (l.tag == "ul" || l.tag == "ol") {
			r.parseBlocks(l, []string{block})
		} else {
			r.parseBlocks(parent, []string{block})
		}
	case sibling.tag == "li":
		r.parseBlocks(sibling, []string{block})
	case len(sibling.children) > 0 && sibling.last().tag == "li":
		li := sibling.last()
		if li.text != "" {
			p := &mdElement{tag: "p", text: li.text}
			li.text = ""
			li.insert(0, p)
		}
		r.parseChunk(li, block)
	default:
		li := sibling.sub("li")
		r.parseBlocks(li, []string{block})
	}
	r.popState()
	return blocks
}

func (r *renderer) indentLevel(parent *mdElement, block string) (int, *mdElement) {
	spaces := len(block) - len(strings.TrimLeft(block, " "))
	indent := spaces / 2
	level := 0
	if r.isState("list") {
		level = 1
	}
	for indent > level {
		child := parent.last()
		if child == nil || (child.tag != "ul" && child.tag != "ol" && child.tag != "li") {
			break
		}
		if child.tag == "ul" || child.tag == "ol" {
			level++
		}
		parent = child
	}
	return level, parent
}

// looseDetab removes level indents of size spaces from the lines that
// have them.
func looseDetab(text string, level, size int) string {
	lines := strings.Split(text, "\n")
	prefix := strings.Repeat(" ", size*level)
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, prefix)
	}
	return strings.Join(lines, "\n")
}

// detab removes one indent from the leading lines that have it (or are
// blank) and answers them and the rest.
func detab(text string, size int) (string, string) {
	lines := strings.Split(text, "\n")
	prefix := strings.Repeat(" ", size)
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l[size:])
		} else if pyStrip(l) == "" {
			out = append(out, "")
		} else {
			break
		}
	}
	return strings.Join(out, "\n"), strings.Join(lines[len(out):], "\n")
}

// codeBlock is Python-Markdown's CodeBlockProcessor (four spaces); the
// code is written out as a fenced block without a language would be.
func (r *renderer) codeBlock(parent *mdElement, blocks []string) []string {
	block := blocks[0]
	blocks = blocks[1:]
	code, rest := detab(block, 4)
	if s := parent.last(); s != nil && s.tag == "pre" && len(s.children) > 0 && s.children[0].tag == "code" {
		s.children[0].text += "\n" + pyRstrip(code) + "\n"
	} else {
		pre := parent.sub("pre")
		c := pre.sub("code")
		c.text, c.atomic = pyRstrip(code)+"\n", true
	}
	if rest != "" {
		blocks = append([]string{rest}, blocks...)
	}
	return blocks
}

// indentedCode writes out the indented code blocks as Python-Markdown's
// codehilite does (HiliteTreeprocessor): stashed HTML in a paragraph of
// its own, with the line break Pygments ends it with.
func (r *renderer) indentedCode(e *mdElement) {
	for _, c := range e.children {
		if c.tag == "pre" && len(c.children) == 1 && c.children[0].tag == "code" {
			if text := c.children[0].text; text != "" {
				c.tag, c.children, c.text = "p", nil, r.stash(formatCode("", text)+"\n")
			}
			continue
		}
		r.indentedCode(c)
	}
}

// hashHeaderIn is Zulip's heading, one to six #, a space, the heading:
// the pattern (?:^|\n)(#{1,6})[pyWhitespace]((?:\\.|[^\\])*?)#*(?:\n|\z)
// as Go's regexp finds it (FindStringSubmatchIndex's six offsets;
// markdown_test.go holds the two alike), written out because regexp
// would cost the binary 240 KB. From each start (the block's, then each
// newline), the heading text runs to the first newline or the end,
// less a closing run of #; a backslash right before that newline or the
// end leaves that start without a match.
func hashHeaderIn(block string) ([6]int, bool) {
	at := func(q int) (m [6]int, ok bool) {
		n := 0
		for q+n < len(block) && block[q+n] == '#' {
			n++
		}
		r, size := utf8.DecodeRuneInString(block[q+n:])
		if n < 1 || n > 6 || size == 0 || !isPySpace(r) {
			return m, false
		}
		m[2], m[3], m[4] = q, q+n, q+n+size
		for x := m[4]; ; x++ {
			end := x
			for end < len(block) && block[end] == '#' {
				end++
			}
			if end == len(block) || block[end] == '\n' {
				m[5], m[1] = x, min(end+1, len(block))
				return m, true
			}
			if block[x] == '\\' {
				if x+1 == len(block) || block[x+1] == '\n' {
					return m, false
				}
				x++
			}
		}
	}
	if m, ok := at(0); ok {
		return m, true
	}
	for p := 0; p < len(block); p++ {
		if block[p] != '\n' {
			continue
		}
		if m, ok := at(p + 1); ok {
			m[0] = p
			return m, true
		}
	}
	return [6]int{}, false
}

func hasHashHeader(block string) bool { _, ok := hashHeaderIn(block); return ok }

// mayHaveHeader is a quick test before hashHeaderIn's: a line starting
// with #.
func mayHaveHeader(block string) bool {
	return strings.HasPrefix(block, "#") || strings.Contains(block, "\n#")
}

func (r *renderer) hashHeader(parent *mdElement, blocks []string) []string {
	block := blocks[0]
	blocks = blocks[1:]
	m, _ := hashHeaderIn(block)
	before, after := block[:m[0]], block[m[1]:]
	if before != "" {
		r.parseBlocks(parent, []string{before})
	}
	h := parent.sub("h" + strconv.Itoa(m[3]-m[2]))
	h.text = pyStrip(block[m[4]:m[5]])
	if after != "" {
		blocks = append([]string{after}, blocks...)
	}
	return blocks
}

// hrLine is the byte offset of the first line of the block that is a
// horizontal rule (three or more -, _ or *, at most two spaces between
// them), or -1.
func hrLine(block string) int {
	at := 0
	for rest := block; ; {
		line, more, found := strings.Cut(rest, "\n")
		if isRule(line) {
			return at
		}
		if !found {
			return -1
		}
		at += len(line) + 1
		rest = more
	}
}

func isRule(line string) bool {
	s := line
	for i := 0; i < 3 && strings.HasPrefix(s, " "); i++ {
		s = s[1:]
	}
	s = strings.TrimRight(s, " ")
	if s == "" || !strings.ContainsRune("-_*", rune(s[0])) {
		return false
	}
	c, count, spaces := s[0], 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == c:
			count, spaces = count+1, 0
		case s[i] == ' ':
			if spaces++; spaces > 2 {
				return false
			}
		default:
			return false
		}
	}
	return count >= 3
}

func (r *renderer) rule(parent *mdElement, blocks []string) []string {
	block := blocks[0]
	blocks = blocks[1:]
	at := hrLine(block)
	end := strings.IndexByte(block[at:], '\n')
	if end < 0 {
		end = len(block)
	} else {
		end += at
	}
	if pre := strings.TrimRight(block[:at], "\n"); pre != "" {
		r.parseBlocks(parent, []string{pre})
	}
	parent.sub("hr")
	if post := strings.TrimLeft(block[end:], "\n"); post != "" {
		blocks = append([]string{post}, blocks...)
	}
	return blocks
}

// listItemStart is the list processors' test, with Zulip's two-space
// indents: at most one space, then a number and a dot (ordered) or one
// of * + - (bullets), then a space.
func listItemStart(block string, ordered bool) bool {
	_, _, ok := listItem(block, ordered)
	return ok
}

// listItem reads a first line as an item of the kind: the item's text
// and, for an ordered list, its number as written.
func listItem(line string, ordered bool) (text, number string, ok bool) {
	s := strings.TrimPrefix(line, " ")
	if ordered {
		i := 0
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if !unicode.IsDigit(r) {
				break
			}
			i += size
		}
		if i == 0 || !strings.HasPrefix(s[i:], ".") {
			return "", "", false
		}
		number, s = s[:i], s[i+1:]
	} else {
		if s == "" || !strings.ContainsRune("*+-", rune(s[0])) {
			return "", "", false
		}
		s = s[1:]
	}
	if !strings.HasPrefix(s, " ") {
		return "", "", false
	}
	text = strings.TrimLeft(s, " ")
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	return text, number, true
}

// nestedItem is the list processors' INDENT_RE: two or three spaces,
// then an item of either kind.
func nestedItem(line string) bool {
	n := len(line) - len(strings.TrimLeft(line, " "))
	if n < 2 || n > 3 {
		return false
	}
	_, _, ordered := listItem(line[n:], true)
	_, _, bullet := listItem(line[n:], false)
	return ordered || bullet
}

// list is Python-Markdown's sane OListProcessor and UListProcessor.
func (r *renderer) list(parent *mdElement, blocks []string, ordered bool) []string {
	tag := "ul"
	if ordered {
		tag = "ol"
	}
	items, start := listItems(blocks[0], ordered)
	blocks = blocks[1:]
	var lst *mdElement
	if s := parent.last(); s != nil && s.tag == tag {
		lst = s
		li := lst.last()
		if li.text != "" {
			p := &mdElement{tag: "p", text: li.text}
			li.text = ""
			li.insert(0, p)
		}
		if lch := li.last(); lch != nil && lch.tail != "" {
			p := li.sub("p")
			p.text = pyLstrip(lch.tail)
			lch.tail = ""
		}
		item := lst.sub("li")
		r.pushState("looselist")
		r.parseBlocks(item, []string{items[0]})
		r.popState()
		items = items[1:]
	} else if parent.tag == "ol" || parent.tag == "ul" {
		lst = parent
	} else {
		lst = parent.sub(tag)
		if ordered && start != "1" {
			lst.set("start", start)
		}
	}
	r.pushState("list")
	for _, item := range items {
		if strings.HasPrefix(item, "  ") && len(lst.children) > 0 {
			r.parseBlocks(lst.last(), []string{item})
		} else {
			r.parseBlocks(lst.sub("li"), []string{item})
		}
	}
	r.popState()
	return blocks
}

// listItems splits a list block into its items (OListProcessor's
// get_items, sane: items of the other kind continue the previous one).
func listItems(block string, ordered bool) (items []string, start string) {
	for _, line := range strings.Split(block, "\n") {
		if text, number, ok := listItem(line, ordered); ok && !strings.HasPrefix(line, "  ") {
			if len(items) == 0 {
				start = number
			}
			items = append(items, text)
		} else if nestedItem(line) && len(items) > 0 && !strings.HasPrefix(items[len(items)-1], "  ") {
			items = append(items, line)
		} else if len(items) > 0 {
			items[len(items)-1] += "\n" + line
		}
	}
	return items, start
}

// quoteStart is the byte offset where Zulip's blockquote starts in a
// block: the first line that is "> " (up to three spaces before the
// >), unless it and every line after it are empty quote lines; or -1.
func quoteStart(block string) int {
	lines := strings.Split(block, "\n")
	at := 0
	for i, line := range lines {
		if _, ok := quoteLine(line); ok && !emptyQuoteRun(lines[i:]) {
			return at
		}
		at += len(line) + 1
	}
	return -1
}

// quoteLine strips a line's quote marker: [ ]{0,3}>[ ]?.
func quoteLine(line string) (string, bool) {
	s := line
	for i := 0; i < 3 && strings.HasPrefix(s, " "); i++ {
		s = s[1:]
	}
	if !strings.HasPrefix(s, ">") {
		return "", false
	}
	return strings.TrimPrefix(s[1:], " "), true
}

// emptyQuoteRun is the negative lookahead of Zulip's blockquote RE:
// lines that are only ">" and white space, up to the end or a blank
// line.
func emptyQuoteRun(lines []string) bool {
	for _, l := range lines {
		if pyStrip(l) == "" {
			return true
		}
		rest, ok := quoteLine(l)
		if !ok || pyStrip(rest) != "" {
			return false
		}
	}
	return true
}

// quote is Zulip's BlockQuoteProcessor: lines before the quote are
// parsed first, mentions in the quote are silenced, and a quote never
// joins the one before it.
func (r *renderer) quote(parent *mdElement, blocks []string) []string {
	block := blocks[0]
	blocks = blocks[1:]
	at := quoteStart(block)
	if at > 0 {
		r.parseBlocks(parent, []string{block[:at-1]})
		block = block[at-1:]
	}
	lines := strings.Split(block, "\n")
	for i, l := range lines {
		lines[i] = cleanQuoteLine(l)
	}
	q := parent.sub("blockquote")
	r.pushState("blockquote")
	r.parseChunk(q, strings.Join(lines, "\n"))
	r.popState()
	return blocks
}

func cleanQuoteLine(line string) string {
	line = silenceMentions(line)
	if pyStrip(line) == ">" {
		return ""
	}
	if rest, ok := quoteLine(line); ok && !emptyQuoteRun([]string{line}) {
		return rest
	}
	return line
}

// paragraph is Python-Markdown's ParagraphProcessor: in a tight list
// the text joins the item.
func (r *renderer) paragraph(parent *mdElement, blocks []string) []string {
	block := blocks[0]
	blocks = blocks[1:]
	if pyStrip(block) == "" {
		return blocks
	}
	if !r.isState("list") {
		parent.sub("p").text = pyLstrip(block)
		return blocks
	}
	if s := parent.last(); s != nil {
		if s.tail != "" {
			s.tail += "\n" + block
		} else {
			s.tail = "\n" + block
		}
	} else if parent.text != "" {
		parent.text += "\n" + block
	} else {
		parent.text = pyLstrip(block)
	}
	return blocks
}

type tableShape struct {
	border    bool
	separator []string
}

// testTable answers the table a block starts, or nil: a header row and
// a separator row of as many cells, made of | : - and spaces.
func testTable(block string) *tableShape {
	first, rest, ok := strings.Cut(block, "\n")
	if !ok {
		return nil
	}
	second, _, _ := strings.Cut(rest, "\n")
	if !strings.Contains(first, "|") && !strings.Contains(second, "|") {
		return nil // no pipe, no row of more than one cell, no border
	}
	rows := strings.Split(block, "\n")
	for i := range rows {
		rows[i] = strings.Trim(rows[i], " ")
	}
	t := &tableShape{}
	header := rows[0]
	t.border = strings.HasPrefix(header, "|") || endsWithBorder(header)
	row0 := t.splitRow(header)
	isTable := len(row0) > 1
	if !isTable && len(row0) == 1 && t.border {
		for _, row := range rows[1:] {
			isTable = strings.HasPrefix(row, "|") || endsWithBorder(row)
			if !isTable {
				break
			}
		}
	}
	if !isTable {
		return nil
	}
	sep := t.splitRow(rows[1])
	if len(sep) != len(row0) || strings.Trim(strings.Join(sep, ""), "|:- ") != "" {
		return nil
	}
	t.separator = sep
	return t
}

// endsWithBorder is RE_END_BORDER: a | at the end not escaped by an odd
// number of backslashes.
func endsWithBorder(row string) bool {
	if !strings.HasSuffix(row, "|") {
		return false
	}
	n := 0
	for i := len(row) - 2; i >= 0 && row[i] == '\\'; i-- {
		n++
	}
	return n%2 == 0
}

func (t *tableShape) splitRow(row string) []string {
	if t.border {
		row = strings.TrimPrefix(row, "|")
		if endsWithBorder(row) {
			row = row[:len(row)-1]
		}
	}
	return splitCells(row)
}

// splitCells splits a row at the pipes that are neither escaped nor in
// a code span (the extension's _split).
func splitCells(row string) []string {
	type tic struct{ start, end, escape, size int }
	var pipes []int
	var tics []tic
	for i := 0; i < len(row); {
		switch {
		case strings.HasPrefix(row[i:], `\\`):
			i += 2
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '`':
			j := i + 1
			for j < len(row) && row[j] == '`' {
				j++
			}
			tics = append(tics, tic{i, j - 1, 1, j - i - 1})
			i = j
		case row[i] == '`':
			j := i
			for j < len(row) && row[j] == '`' {
				j++
			}
			tics = append(tics, tic{i, j - 1, 0, j - i})
			i = j
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			i += 2
		case row[i] == '|':
			pipes = append(pipes, i)
			i++
		default:
			i++
		}
	}
	var regions [][2]int
	for pos := 0; pos < len(tics); {
		size := tics[pos].size - tics[pos].escape
		closed := false
		if size > 0 {
			for k := pos + 1; k < len(tics); k++ {
				if tics[k].size == size {
					regions = append(regions, [2]int{tics[pos].start, tics[k].end})
					pos, closed = k+1, true
					break
				}
			}
		}
		if !closed {
			pos++
		}
	}
	var cells []string
	from := 0
	for _, p := range pipes {
		inCode := false
		for _, reg := range regions {
			if p < reg[0] {
				break
			}
			if reg[0] <= p && p <= reg[1] {
				inCode = true
				break
			}
		}
		if !inCode {
			cells = append(cells, row[from:p])
			from = p + 1
		}
	}
	return append(cells, row[from:])
}

func (r *renderer) table(parent *mdElement, blocks []string, t *tableShape) []string {
	rows := strings.Split(blocks[0], "\n")
	blocks = blocks[1:]
	var align []string
	for _, c := range t.separator {
		c = strings.Trim(c, " ")
		switch {
		case strings.HasPrefix(c, ":") && strings.HasSuffix(c, ":") && len(c) > 1:
			align = append(align, "center")
		case strings.HasPrefix(c, ":") && len(c) > 1 || c == ":":
			align = append(align, "left")
		case strings.HasSuffix(c, ":"):
			align = append(align, "right")
		default:
			align = append(align, "")
		}
	}
	table := parent.sub("table")
	t.row(table.sub("thead"), strings.Trim(rows[0], " "), align, "th")
	body := table.sub("tbody")
	if len(rows) < 3 {
		tr := body.sub("tr")
		for range align {
			tr.sub("td")
		}
		return blocks
	}
	for _, row := range rows[2:] {
		t.row(body, strings.Trim(row, " "), align, "td")
	}
	return blocks
}

func (t *tableShape) row(parent *mdElement, row string, align []string, tag string) {
	tr := parent.sub("tr")
	cells := t.splitRow(row)
	for i, a := range align {
		c := tr.sub(tag)
		if i < len(cells) {
			c.text = strings.Trim(cells[i], " ")
		}
		if a != "" {
			c.set("style", "text-align: "+a+";")
		}
	}
}
