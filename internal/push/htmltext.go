package push

// A message's push text is read from its rendering by renderedText, a
// walker over the HTML our renderer (internal/markdown) or Zulip's
// writes. It reads that HTML as golang.org/x/net/html's HTML5 parser
// did when the push text was taken from the parser's tree: the same
// tokens (tags and their attributes, character references, comments, a
// "<" that starts none of them as text) and the same tree for markup
// whose elements nest as written. It leaves out what that HTML never
// holds: elements an end tag or a start tag closes implicitly
// (<p><div>), misnested formatting elements, tables' foster parenting,
// the raw text of <script>, <style>, <textarea> and their kind, and SVG
// and MathML.
//
// The walk is one pass over the input with an explicit stack of open
// elements, bounded as the parser bounds it: no recursion. A push shows
// the text's first 200 characters, so the walker keeps no more of any
// element's text than that: quotes nested 500 deep around thousands of
// lines, whose whole text is 500 times as long as the input, cost no
// more than a constant times the input's length.

import (
	"html"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxOpenElements is the HTML5 parser's bound on open elements, the
// root counted: it refused deeper HTML, and the push was then the
// message's source.
const maxOpenElements = 512

// voidElements have no content: the parser closes them as it opens them
// (it reads "/>" on any other element as ">").
var voidElements = map[string]bool{
	"area": true, "base": true, "basefont": true, "bgsound": true, "br": true, "col": true,
	"embed": true, "hr": true, "img": true, "input": true, "keygen": true, "link": true,
	"meta": true, "param": true, "source": true, "track": true, "wbr": true,
}

// ignoredStartTags make no element inside a fragment: the parser drops
// them (their attributes go to the document's root or body, which a
// fragment's push text does not read).
var ignoredStartTags = map[string]bool{"html": true, "body": true, "frameset": true, "head": true, "frame": true}

// openElement is an element whose end tag has not come yet.
type openElement struct {
	name string
	// text is where the text inside goes: the parent's, the element's
	// own for a blockquote, nil where the element stands for something
	// else (an emoji, an image) and inside such an element.
	text  *textBuffer
	quote bool // a blockquote: at its end, its text goes to the parent's as "> " lines
	// filled: the element has a child (text, an element, a comment); a
	// <pre>'s or <listing>'s first newline is dropped only before its
	// first child.
	filled bool
}

// textBuffer holds an element's text, when limit >= 0 only up to its
// limit-th character other than a newline: it is then full and takes
// no more. That is enough for a push: a full blockquote's "> " lines
// start as its whole text's do (up to their last "\n") and hold more
// than limit such characters, so its parent's buffer fills in turn
// with the start of its own text, and a full root holds the push text
// up to its limit-th character other than a newline.
type textBuffer struct {
	b     strings.Builder
	runes int // characters other than newlines held
	limit int // < 0: the whole text
}

func (t *textBuffer) full() bool { return t.limit >= 0 && t.runes >= t.limit }

func (t *textBuffer) write(s string) {
	if t.limit < 0 {
		t.b.WriteString(s)
		return
	}
	if t.full() {
		return
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == '\n' {
			continue
		}
		if t.runes++; t.runes == t.limit {
			s = s[:i]
			break
		}
	}
	t.b.WriteString(s)
}

// textWalker reads one rendering.
type textWalker struct {
	open []openElement
	// openByName counts the open elements of each name, so that an end
	// tag no open element matches costs nothing.
	openByName map[string]int
	tooDeep    bool
	limit      int // every textBuffer's
}

// renderedText is a rendering's push text: its text, an emoji's
// character for an element of class "emoji emoji-<code>" (its content
// left out), an image's alt text, a blockquote's text as "> " lines.
// Past limit characters other than newlines (limit >= 0), it is a
// prefix of the text with that many. It is false for HTML nested
// deeper than maxOpenElements.
func renderedText(rendered string, limit int) (string, bool) {
	out := &textBuffer{limit: limit}
	w := &textWalker{open: []openElement{{name: "html", text: out}}, openByName: map[string]int{}, limit: limit}
	for s := rendered; s != "" && !w.tooDeep; {
		s = w.step(s)
	}
	if w.tooDeep {
		return "", false
	}
	w.closeAbove(0)
	return out.b.String(), true
}

// step reads the text and the one token at the start of s, and answers
// the rest. Its reading of "<" follows the tokenizer's (html.Tokenizer's
// Next): a letter starts a start tag, "/" an end tag, "!" or "?" a
// comment (or a doctype); anything else is text. A tag the input ends
// inside is dropped with the rest.
func (w *textWalker) step(s string) string {
	i := 0
	for {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			w.text(s)
			return ""
		}
		i += j
		if i+1 < len(s) && (isASCIILetter(s[i+1]) || s[i+1] == '!' || s[i+1] == '?' || s[i+1] == '/' && i+2 < len(s)) {
			break
		}
		i++
	}
	if i > 0 {
		w.text(s[:i])
	}
	s = s[i:]
	switch c := s[1]; {
	case isASCIILetter(c):
		name, attrs, rest, ok := readTag(s[1:])
		if ok {
			w.startTag(name, attrs)
		}
		return rest
	case c == '/' && s[2] == '>': // "</>" is nothing but a comment
		w.top().filled = true
		return s[3:]
	case c == '/' && isASCIILetter(s[2]):
		name, _, rest, ok := readTag(s[2:])
		if ok {
			w.endTag(name)
		}
		return rest
	case c == '!' && strings.HasPrefix(s[2:], "--"):
		w.top().filled = true
		return s[commentEnd(s, 4):]
	case c == '!' && len(s) >= 9 && lowerASCII(s[2:9]) == "doctype":
		return afterCloseAngle(s, 9) // a doctype: no node inside a body
	default: // "<!x", "<?x", "</ x": a bogus comment up to ">"
		w.top().filled = true
		return afterCloseAngle(s, 2)
	}
}

func (w *textWalker) top() *openElement { return &w.open[len(w.open)-1] }

// text adds a text token (raw, as it stands in the HTML) to the current
// element, as the parser's "in body" mode does: newlines normalized,
// character references decoded, a <pre>'s first newline dropped, NULs
// removed.
func (w *textWalker) text(raw string) {
	d := unescapeHTML(convertNewlines(raw), false)
	top := w.top()
	if !top.filled && (top.name == "pre" || top.name == "listing") {
		d = strings.TrimPrefix(d, "\r")
		d = strings.TrimPrefix(d, "\n")
	}
	d = strings.ReplaceAll(d, "\x00", "")
	if d == "" {
		return
	}
	top.filled = true
	if top.text != nil {
		top.text.write(d)
	}
}

// startTag opens an element as a child of the current one, writing
// what stands for it: an emoji's character, an image's alt text.
func (w *textWalker) startTag(name string, attrs tagAttrs) {
	if ignoredStartTags[name] {
		return
	}
	if name == "image" { // the parser reads <image> as <img>
		name = "img"
	}
	if len(w.open) >= maxOpenElements {
		w.tooDeep = true
		return
	}
	parent := w.top()
	parent.filled = true
	e := openElement{name: name, text: parent.text}
	emoji, isEmoji := emojiOfClass(attrs.class)
	switch {
	case isEmoji:
		if e.text != nil {
			e.text.write(emoji)
		}
		e.text = nil
	case name == "img":
		if e.text != nil {
			e.text.write(attrs.alt)
		}
		e.text = nil
	case name == "blockquote" && e.text != nil:
		e.text, e.quote = &textBuffer{limit: w.limit}, true
	}
	if voidElements[name] {
		return
	}
	w.open = append(w.open, e)
	w.openByName[name]++
}

// endTag closes the nearest open element of the name and every element
// opened inside it; with none open it is ignored, as the parser ignores
// it, but for </br> (read as <br>) and </p> (read as <p></p>).
func (w *textWalker) endTag(name string) {
	if w.openByName[name] == 0 {
		switch name {
		case "br":
			w.startTag("br", tagAttrs{})
		case "p":
			if w.startTag("p", tagAttrs{}); !w.tooDeep {
				w.closeAbove(len(w.open) - 2)
			}
		}
		return
	}
	for i := len(w.open) - 1; i > 0; i-- {
		if w.open[i].name == name {
			w.closeAbove(i - 1)
			return
		}
	}
}

// closeAbove closes the open elements above the i-th: a blockquote's
// text goes to its parent's as "> " lines, empty lines left out.
func (w *textWalker) closeAbove(i int) {
	for len(w.open) > i+1 {
		e := w.open[len(w.open)-1]
		w.open = w.open[:len(w.open)-1]
		w.openByName[e.name]--
		if e.quote {
			parent := w.top().text
			for line := range strings.SplitSeq(e.text.b.String(), "\n") {
				if parent.full() {
					break
				}
				if line != "" {
					parent.write("> " + line + "\n")
				}
			}
		}
	}
}

// emojiOfClass is the emoji an element of the class stands for: one
// whose class holds "emoji" and an emoji-<code> of a valid code.
func emojiOfClass(class string) (string, bool) {
	if !strings.Contains(class, "emoji") {
		return "", false
	}
	for _, c := range strings.Fields(class) {
		if code, ok := strings.CutPrefix(c, "emoji-"); ok {
			if s, ok := emojiFromCode(code); ok {
				return s, true
			}
		}
	}
	return "", false
}

// tagAttrs are the attributes of a start tag the push text reads, their
// values decoded; "" where the tag has none.
type tagAttrs struct{ class, alt string }

// readTag reads a tag after its "<" or "</" (s starts with the name's
// first letter) as html.Tokenizer's readTag does: the name up to white
// space, "/" or ">"; attributes named up to white space, "/", ">" or
// "=" (an "=" first is part of the name), their values quoted either
// way, unquoted, or absent; of two attributes of one name, the first
// counts. It is false when the input ends inside the tag.
func readTag(s string) (name string, attrs tagAttrs, rest string, ok bool) {
	i := 0
	for i < len(s) && !isHTMLSpace(s[i]) && s[i] != '/' && s[i] != '>' {
		i++
	}
	name = tagName(s[:i])
	var seenClass, seenAlt bool
	i = skipHTMLSpace(s, i)
	for i < len(s) && s[i] != '>' {
		k := i
		for k < len(s) && (s[k] == '=' && k == i || s[k] != '=' && !isHTMLSpace(s[k]) && s[k] != '/' && s[k] != '>') {
			k++
		}
		key := s[i:k]
		i = skipHTMLSpace(s, k)
		if i == len(s) {
			return "", tagAttrs{}, "", false
		}
		value := ""
		switch s[i] {
		case '/':
			i++
		case '=':
			i = skipHTMLSpace(s, i+1)
			if i == len(s) {
				return "", tagAttrs{}, "", false
			}
			switch q := s[i]; q {
			case '>':
			case '"', '\'':
				end := strings.IndexByte(s[i+1:], q)
				if end < 0 {
					return "", tagAttrs{}, "", false
				}
				value = s[i+1 : i+1+end]
				i += end + 2
			default:
				k := i
				for k < len(s) && !isHTMLSpace(s[k]) && s[k] != '>' {
					k++
				}
				value = s[i:k]
				i = k
			}
		}
		if len(key) <= len("class") {
			switch lowerASCII(key) {
			case "class":
				if !seenClass {
					attrs.class, seenClass = attrValue(value), true
				}
			case "alt":
				if !seenAlt {
					attrs.alt, seenAlt = attrValue(value), true
				}
			}
		}
		i = skipHTMLSpace(s, i)
	}
	if i == len(s) {
		return "", tagAttrs{}, "", false
	}
	return name, attrs, s[i+1:], true
}

// attrValue is an attribute's value as the tokenizer gives it: NUL
// replaced, newlines normalized, character references decoded.
func attrValue(raw string) string {
	return unescapeHTML(convertNewlines(strings.ReplaceAll(raw, "\x00", "\uFFFD")), true)
}

// tagName is a tag's or an attribute's name as the tokenizer gives it:
// ASCII lower-cased, NUL replaced.
func tagName(s string) string {
	return strings.ReplaceAll(lowerASCII(s), "\x00", "\uFFFD")
}

// lowerASCII lower-cases s's ASCII letters only, as the tokenizer does.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// commentEnd is the end of the comment "<!--" opened in s before i, as
// html.Tokenizer's readComment finds it: at "-->" (or "->" or ">" right
// after the opening), or "--!>"; the input's end if none.
func commentEnd(s string, i int) int {
	dashes, beginning := 0, true
	for ; i < len(s); i++ {
		switch s[i] {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return i + 1
			}
		case '!':
			if dashes >= 2 {
				if i++; i == len(s) {
					return i
				}
				switch s[i] {
				case '>':
					return i + 1
				case '-':
					dashes, beginning = 1, false
					continue
				}
			}
		}
		dashes, beginning = 0, false
	}
	return len(s)
}

// afterCloseAngle is s after the first ">" from i on, or "" without one.
func afterCloseAngle(s string, i int) string {
	if j := strings.IndexByte(s[i:], '>'); j >= 0 {
		return s[i+j+1:]
	}
	return ""
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isASCIIAlnum(c byte) bool { return isASCIILetter(c) || '0' <= c && c <= '9' }

func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f'
}

func skipHTMLSpace(s string, i int) int {
	for i < len(s) && isHTMLSpace(s[i]) {
		i++
	}
	return i
}

// convertNewlines makes "\r\n" and "\r" "\n", as the tokenizer does in
// text and attribute values.
func convertNewlines(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// unescapeHTML decodes the character references in text or, with
// attribute, in an attribute value, as html.Tokenizer does (its
// unescape, the HTML5 rules): in text, a name without ";" that is not
// one is read as the longest of the legacy names it starts with; in an
// attribute value, only a whole name is decoded, and not before "=".
func unescapeHTML(s string, attribute bool) string {
	i := strings.IndexByte(s, '&')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		s = s[i:]
		decoded, n := characterReference(s, attribute)
		if n == 0 {
			decoded, n = "&", 1
		}
		b.WriteString(decoded)
		s = s[n:]
		i = strings.IndexByte(s, '&')
	}
	b.WriteString(s)
	return b.String()
}

// characterReference decodes the reference at the start of s ("&...")
// and answers how many bytes it took; 0 when there is none.
func characterReference(s string, attribute bool) (string, int) {
	switch {
	case len(s) <= 1:
		return "", 0
	case s[1] != '#':
		return namedReference(s, attribute)
	case len(s) <= 2:
		return "", 0
	}
	i, base := 2, rune(10)
	if s[i] == 'x' || s[i] == 'X' {
		i, base = 3, 16
	}
	start := i
	var x rune
	for ; i < len(s); i++ {
		d := digitValue(s[i], base)
		if d < 0 {
			break
		}
		if x <= utf8.MaxRune {
			x = base*x + d
		}
	}
	if i == start {
		return "", 0
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	switch {
	case 0x80 <= x && x <= 0x9F:
		// Windows-1252's characters; std's html has the same table.
		return html.UnescapeString("&#" + strconv.Itoa(int(x)) + ";"), i
	case x == 0 || 0xD800 <= x && x <= 0xDFFF || x > utf8.MaxRune:
		x = utf8.RuneError
	}
	return string(x), i
}

func digitValue(c byte, base rune) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case base == 16 && 'a' <= c && c <= 'f':
		return rune(c-'a') + 10
	case base == 16 && 'A' <= c && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

// longestLegacyName is the longest name decoded without its ";" (std's
// and x/net/html's longestEntityWithoutSemicolon).
const longestLegacyName = 6

// namedReference decodes "&name" at the start of s, the name its ASCII
// letters and digits and a ";" after them.
func namedReference(s string, attribute bool) (string, int) {
	i := 1
	for i < len(s) && isASCIIAlnum(s[i]) {
		i++
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	name := s[1:i]
	switch {
	case name == "":
		return "", 0
	case attribute && !strings.HasSuffix(name, ";") && i < len(s) && s[i] == '=':
		return "", 0
	}
	if v, ok := entity(name); ok {
		return v, i
	}
	if !attribute {
		for j := min(len(name)-1, longestLegacyName); j > 1; j-- {
			if v, ok := entity(name[:j]); ok {
				return v, j + 1
			}
		}
	}
	return "", 0
}

// longestEntityName is the length of the longest name in HTML's table,
// "CounterClockwiseContourIntegral;".
const longestEntityName = 32

// entity is the character (or two) that HTML's table names, read
// through std's html.UnescapeString, whose table is x/net/html's but for
// nLt; and nGt; (two characters wider than their names, which std's
// in-place decoding leaves out). std decodes a name the table has
// exactly (one or two characters, one for a legacy name without ";");
// a name it lacks it leaves as it is or, as text, reads as a legacy
// name followed by the rest of the name, which is one character or more
// after it (two or more when the name ends in ";", as every legacy name
// is in the table with a ";" too).
func entity(name string) (string, bool) {
	switch name {
	case "nLt;":
		return "\u226A\u20D2", true
	case "nGt;":
		return "\u226B\u20D2", true
	}
	if len(name) > longestEntityName {
		return "", false
	}
	ref := "&" + name
	v := html.UnescapeString(ref)
	n := utf8.RuneCountInString(v)
	if v == ref || n > 2 || n == 2 && !strings.HasSuffix(name, ";") {
		return "", false
	}
	return v, true
}
