package main

// Zulip-flavoured Markdown, rendered as Zulip renders it
// (zerver/lib/markdown, Zulip 11.0): the same pipeline as the
// Python-Markdown engine Zulip configures, in the same order, so that a
// message looks the same in every client whether zulite or Zulip
// rendered it. Lines pass through the preprocessors (hanging lists,
// whitespace, fenced blocks), blocks are split at blank lines and handed
// to the block processors in Zulip's priority order, inline patterns
// run over the text of every element (markdown_inline.go), and the tree
// is written out with Python-Markdown's serializer. Everything that is
// not Markdown is escaped: no HTML from a message ever reaches the
// output, and links keep only the schemes Zulip allows
// (markdown_links.go). Images, link previews, LaTeX, timestamps,
// linkifiers, user-group mentions and syntax highlighting are left out:
// their syntax stays text (and a code block stays unhighlighted).

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// mdElement is one node of the tree, as Python-Markdown's ElementTree
// holds it: text before the first child, the children, and the tail
// after the element, inside its parent.
type mdElement struct {
	tag        string
	attrs      [][2]string
	text       string
	atomic     bool // the text is final: no inline pattern runs on it
	children   []*mdElement
	tail       string
	tailAtomic bool
}

func (e *mdElement) set(name, value string) {
	for i, a := range e.attrs {
		if a[0] == name {
			e.attrs[i][1] = value
			return
		}
	}
	e.attrs = append(e.attrs, [2]string{name, value})
}

func (e *mdElement) get(name string) string {
	for _, a := range e.attrs {
		if a[0] == name {
			return a[1]
		}
	}
	return ""
}

func (e *mdElement) sub(tag string) *mdElement {
	c := &mdElement{tag: tag}
	e.children = append(e.children, c)
	return c
}

func (e *mdElement) last() *mdElement {
	if len(e.children) == 0 {
		return nil
	}
	return e.children[len(e.children)-1]
}

func (e *mdElement) insert(i int, c *mdElement) {
	e.children = slices.Insert(e.children, i, c)
}

// Placeholders stand for stashed raw HTML (code blocks, spoiler
// boundaries, entities) and stashed inline nodes, as Python-Markdown's
// do. STX and ETX are removed from every message first, so a message
// cannot forge one.
const (
	stx               = "\x02"
	etx               = "\x03"
	rawPlaceholder    = stx + "wzxhzdk:"
	inlinePlaceholder = stx + "klzzwxh:"
)

// renderInput is what rendering a message needs besides its text: who
// and what it may mention and link to (mentions.go fills it from the
// store).
type renderInput struct {
	realmURL string // links to the realm itself become relative
	// users are the accounts the message's @**name** and @**name|id**
	// may mean, as Zulip's MentionData fetches them.
	users []mentionUser
	// channels are the channels the sender may read, by exact name, for
	// #**channel** links.
	channels map[string]uint64
	// topicStart answers the oldest message of a channel's topic, for a
	// #**channel>topic** link's "with" operand.
	topicStart func(channelID uint64, topic string) (uint64, bool)
}

type mentionUser struct {
	ID       uint64
	FullName string
	Active   bool
}

// renderedMessage is a message's HTML and what its mentions mean.
type renderedMessage struct {
	HTML string
	// MentionedIDs are the users mentioned by name, not silently.
	MentionedIDs []uint64
	// ChannelWildcard: @**all**, @**everyone**, @**channel** or
	// @**stream**; TopicWildcard: @**topic** (neither silent).
	ChannelWildcard bool
	TopicWildcard   bool
}

// markdownRenderer holds one rendering's state.
type markdownRenderer struct {
	in     *renderInput
	raw    []string // stashed raw HTML, by placeholder number
	state  []string // the block parser's state stack
	result renderedMessage
	users  struct {
		byName map[string]mentionUser // lower-cased full name
		byID   map[uint64]mentionUser
	}
}

// renderMarkdown renders a message's content as Zulip would. A nil
// input renders without mentions or channel links (nothing resolves).
func renderMarkdown(content string, in *renderInput) renderedMessage {
	if in == nil {
		in = &renderInput{}
	}
	r := &markdownRenderer{in: in}
	r.users.byName = map[string]mentionUser{}
	r.users.byID = map[uint64]mentionUser{}
	for _, u := range in.users {
		r.users.byName[strings.ToLower(u.FullName)] = u
		r.users.byID[u.ID] = u
	}
	r.result.HTML = r.convert(content)
	slices.Sort(r.result.MentionedIDs)
	r.result.MentionedIDs = slices.Compact(r.result.MentionedIDs)
	return r.result
}

// convert is Python-Markdown's Markdown.convert with Zulip's processors.
func (r *markdownRenderer) convert(source string) string {
	if pyStrip(source) == "" {
		return ""
	}
	lines := strings.Split(source, "\n")
	lines = hangingLists(lines)
	lines = normalizeWhitespace(lines)
	lines = r.fencedBlocks(lines)
	root := &mdElement{tag: "div"}
	r.parseChunk(root, strings.Join(lines, "\n"))
	r.indentedCode(root)
	newInliner(r).run(root)
	prettify(root)
	var b strings.Builder
	serialize(&b, root)
	out := b.String()
	out = out[len("<div>") : len(out)-len("</div>")-1] // root's tail is "\n"
	out = pyStrip(out)
	out = r.restoreRaw(out)
	return pyStrip(out)
}

// ---- preprocessors ----

// hangingLists is Zulip's MarkdownListPreprocessor: a list right after
// a line of text (or after a list of the other kind) starts a new
// block, as if a blank line stood between them. Lines in a code fence
// are left alone.
func hangingLists(lines []string) []string {
	type fence struct {
		str    string
		isCode bool
	}
	var open []fence
	inCode := false
	out := make([]string, 0, len(lines))
	for i, line := range lines {
		out = append(out, line)
		if i == len(lines)-1 {
			break
		}
		if f, lang, _, ok := matchFence(line); ok {
			isCode := lang != "quote" && lang != "quoted"
			closes := lang == "" && len(open) > 0 && open[len(open)-1].str == f
			if closes {
				open = open[:len(open)-1]
			} else {
				open = append(open, fence{f, isCode})
			}
			inCode = slices.ContainsFunc(open, func(f fence) bool { return f.isCode })
		}
		m1, short1 := hangingListItem(line)
		m2, short2 := hangingListItem(lines[i+1])
		if !inCode && line != "" && ((m2 && !m1) || (m1 && m2 && short1 != short2)) {
			out = append(out, "")
		}
	}
	return out
}

// hangingListItem is the preprocessor's LI_RE, ^[ ]*([*+-]|\d\.)[ ]+:
// whether the line starts a list item, and whether its marker is one
// character (a bullet) rather than a digit and a dot.
func hangingListItem(line string) (item, bullet bool) {
	s := strings.TrimLeft(line, " ")
	switch {
	case s != "" && strings.ContainsRune("*+-", rune(s[0])):
		s, bullet = s[1:], true
	default:
		r, size := utf8.DecodeRuneInString(s)
		if size == 0 || !unicode.IsDigit(r) || !strings.HasPrefix(s[size:], ".") {
			return false, false
		}
		s = s[size+1:]
	}
	return strings.HasPrefix(s, " "), bullet
}

// normalizeWhitespace is Python-Markdown's NormalizeWhitespace: no STX
// or ETX, Unix line ends, two blank lines at the end, tabs expanded to
// four columns, lines of spaces emptied.
func normalizeWhitespace(lines []string) []string {
	source := strings.Join(lines, "\n")
	source = whitespaceNormalizer.Replace(source) + "\n\n"
	source = expandTabs(source, 4)
	out := strings.Split(source, "\n")
	for i := 1; i < len(out); i++ {
		if out[i] != "" && strings.Trim(out[i], " ") == "" && i < len(out)-1 {
			out[i] = ""
		}
	}
	return out
}

var whitespaceNormalizer = strings.NewReplacer(stx, "", etx, "", "\r\n", "\n", "\r", "\n")

// expandTabs is Python's str.expandtabs.
func expandTabs(s string, size int) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		switch r {
		case '\t':
			n := size - col%size
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case '\n', '\r':
			b.WriteRune(r)
			col = 0
		default:
			b.WriteRune(r)
			col++
		}
	}
	return b.String()
}

// matchFence is Zulip's FENCE_RE: a line of three or more backticks or
// tildes, then optionally a language ([a-zA-Z0-9_+,-./#], after an
// optional "{" and "."), then optionally a header (a spoiler's title).
func matchFence(line string) (fence, lang, header string, ok bool) {
	n := 0
	for n < len(line) && line[n] == line[0] && (line[0] == '`' || line[0] == '~') {
		n++
	}
	if n < 3 {
		return "", "", "", false
	}
	fence, rest := line[:n], strings.TrimLeft(line[n:], " ")
	if rest == "" {
		return fence, "", "", true
	}
	s := strings.TrimPrefix(rest, "{")
	s = strings.TrimPrefix(s, ".")
	i := 0
	for i < len(s) && isFenceLangByte(s[i]) {
		i++
	}
	if i == 0 {
		return "", "", "", false
	}
	lang, s = s[:i], strings.TrimLeft(s[i:], " ")
	if s == "" {
		return fence, lang, "", true
	}
	if strings.ContainsAny(s, "~`") {
		return "", "", "", false
	}
	return fence, lang, s, true
}

func isFenceLangByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+,-./#", c) >= 0
}

// maxFenceDepth bounds how deep fenced blocks nest: a quote fence
// quotes every line inside it once more, so deeper fences would make
// the work grow with the square of the message. Deeper fence lines stay
// text (Zulip sets no bound, but fails to render such a message).
const maxFenceDepth = 16

// fenceHandler is one open fenced block (Zulip's fenced_code.py
// handlers): the outer text, a code block, a quote or a spoiler.
type fenceHandler struct {
	kind   string // "outer", "code", "quote", "spoiler"
	fence  string
	lang   string
	header string
	output *[]string // where done writes
	lines  []string
}

// fencedBlocks is Zulip's FencedBlockPreprocessor: code blocks become
// stashed HTML, quotes become "> " lines, spoilers stashed boundaries
// around their content; fences nest in quotes and spoilers, and a
// block left open at the end is closed there.
func (r *markdownRenderer) fencedBlocks(lines []string) []string {
	var output []string
	handlers := []*fenceHandler{{kind: "outer", output: &output}}
	open := func(line string, into *[]string) {
		fence, lang, header, ok := matchFence(line)
		if !ok || len(handlers) > maxFenceDepth {
			*into = append(*into, line)
			return
		}
		h := &fenceHandler{kind: "code", fence: fence, lang: strings.ToLower(lang), header: header, output: into}
		switch h.lang {
		case "quote", "quoted":
			h.kind = "quote"
		case "spoiler":
			h.kind = "spoiler"
		}
		handlers = append(handlers, h)
	}
	done := func() {
		h := handlers[len(handlers)-1]
		handlers = handlers[:len(handlers)-1]
		if h.kind == "outer" || len(h.lines) == 0 {
			return
		}
		text := strings.Join(h.lines, "\n")
		switch h.kind {
		case "code":
			text = r.stash(formatCode(h.lang, text))
		case "quote":
			quoted := strings.Split(text, "\n")
			for i, l := range quoted {
				quoted[i] = "> " + l
			}
			text = strings.Join(quoted, "\n")
		case "spoiler":
			parts := []string{r.stash(`<div class="spoiler-block"><div class="spoiler-header">`)}
			if h.header != "" {
				parts = append(parts, h.header)
			}
			parts = append(parts, r.stash(`</div><div class="spoiler-content" aria-hidden="true">`), text, r.stash(`</div></div>`))
			text = strings.Join(parts, "\n\n")
		}
		*h.output = append(*h.output, "")
		*h.output = append(*h.output, strings.Split(text, "\n")...)
		*h.output = append(*h.output, "")
	}
	for _, line := range lines {
		h := handlers[len(handlers)-1]
		switch {
		case h.kind == "outer":
			open(line, h.output)
		case pyRstrip(line) == h.fence:
			done()
		case h.kind == "code":
			h.lines = append(h.lines, pyRstrip(line))
		default: // quotes and spoilers hold fences of their own
			open(line, &h.lines)
		}
	}
	for len(handlers) > 0 {
		done()
	}
	if len(output) > 2 && output[len(output)-2] != "" {
		output = append(output, "")
	}
	return output
}

// formatCode is a code block as Zulip's CodeHilite writes it: Pygments'
// wrapper, without highlighting, the language named as Pygments names
// it (data-code-language) when the fence gave one. With a language
// Zulip re-serializes the block, which leaves quotes unescaped.
func formatCode(lang, text string) string {
	text = strings.Trim(text, "\n")
	var b strings.Builder
	b.WriteString(`<div class="codehilite"`)
	if lang != "" {
		b.WriteString(` data-code-language="`)
		b.WriteString(escapeAttr(codeLanguageName(lang)))
		b.WriteString(`"`)
		text = codeEscaper.Replace(text)
	} else {
		text = htmlEscaper.Replace(text) // Pygments': quotes too
	}
	b.WriteString("><pre><span></span><code>")
	b.WriteString(text)
	b.WriteString("\n</code></pre></div>")
	return b.String()
}

// codeLanguageName is Pygments' name for a language alias, for the
// common languages; others are shown as written, as Zulip shows a
// language Pygments does not know.
func codeLanguageName(lang string) string {
	if name, ok := pygmentsNames[lang]; ok {
		return name
	}
	return lang
}

var pygmentsNames = map[string]string{
	"python": "Python", "py": "Python", "python3": "Python", "py3": "Python", "sage": "Python",
	"python2": "Python 2.x", "py2": "Python 2.x", "pycon": "Python console session",
	"javascript": "JavaScript", "js": "JavaScript", "typescript": "TypeScript", "ts": "TypeScript",
	"java": "Java", "c": "C", "cpp": "C++", "c++": "C++", "csharp": "C#", "c#": "C#", "cs": "C#",
	"go": "Go", "golang": "Go", "rust": "Rust", "rs": "Rust", "ruby": "Ruby", "rb": "Ruby", "php": "PHP",
	"bash": "Bash", "sh": "Bash", "shell": "Bash", "zsh": "Bash", "ksh": "Bash", "console": "Bash Session",
	"sql": "SQL", "json": "JSON", "yaml": "YAML", "yml": "YAML", "html": "HTML", "xml": "XML", "css": "CSS",
	"markdown": "Markdown", "md": "Markdown", "kotlin": "Kotlin", "swift": "Swift", "haskell": "Haskell",
	"hs": "Haskell", "scala": "Scala", "perl": "Perl", "pl": "Perl", "lua": "Lua", "dart": "Dart",
	"elixir": "Elixir", "ex": "Elixir", "erlang": "Erlang", "clojure": "Clojure", "clj": "Clojure",
	"diff": "Diff", "udiff": "Diff", "dockerfile": "Docker", "docker": "Docker", "ini": "INI", "cfg": "INI",
	"toml": "TOML", "tex": "TeX", "latex": "TeX", "text": "Text only", "ocaml": "OCaml",
	"objective-c": "Objective-C", "objc": "Objective-C", "powershell": "PowerShell", "ps1": "PowerShell",
	"make": "Makefile", "makefile": "Makefile", "graphql": "GraphQL", "julia": "Julia", "jl": "Julia",
	"zig": "Zig", "nim": "Nim", "fortran": "Fortran", "vim": "VimL", "jsx": "JSX", "tsx": "TSX",
}

// stash keeps raw HTML aside, behind a placeholder.
func (r *markdownRenderer) stash(html string) string {
	r.raw = append(r.raw, html)
	return rawPlaceholder + strconv.Itoa(len(r.raw)-1) + etx
}

// restoreRaw is Python-Markdown's RawHtmlPostprocessor: each raw
// placeholder becomes its HTML, without the paragraph around it when
// the HTML is a block, until none is left.
func (r *markdownRenderer) restoreRaw(text string) string {
	for range 3 { // raw HTML never holds a placeholder of its own: one pass does it
		if !strings.Contains(text, rawPlaceholder) {
			break
		}
		var b strings.Builder
		for {
			i := strings.Index(text, rawPlaceholder)
			if i < 0 {
				b.WriteString(text)
				break
			}
			n, end, ok := placeholderNumber(text, i+len(rawPlaceholder))
			if !ok || n >= len(r.raw) {
				b.WriteString(text[:i+len(rawPlaceholder)])
				text = text[i+len(rawPlaceholder):]
				continue
			}
			html := r.raw[n]
			if strings.HasSuffix(text[:i], "<p>") && strings.HasPrefix(text[end:], "</p>") && isBlockHTML(html) {
				b.WriteString(text[:i-len("<p>")])
				b.WriteString(html)
				text = text[end+len("</p>"):]
				continue
			}
			b.WriteString(text[:i])
			b.WriteString(html)
			text = text[end:]
		}
		text = b.String()
	}
	return text
}

// placeholderNumber reads the digits and ETX of a placeholder.
func placeholderNumber(s string, at int) (n, end int, ok bool) {
	j := at
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == at || j >= len(s) || s[j] != etx[0] || j-at > 9 {
		return 0, 0, false
	}
	n, _ = strconv.Atoi(s[at:j])
	return n, j + 1, true
}

func isBlockHTML(html string) bool {
	if !strings.HasPrefix(html, "<") {
		return false
	}
	tag := strings.TrimPrefix(html[1:], "/")
	if i := strings.IndexAny(tag, " >"); i >= 0 {
		tag = tag[:i]
	}
	return isBlockTag(tag)
}

// isBlockTag is Python-Markdown's list of block-level elements, for
// the tags zulite writes.
func isBlockTag(tag string) bool {
	switch tag {
	case "p", "div", "ul", "ol", "li", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "pre",
		"table", "thead", "tbody", "tr", "th", "td":
		return true
	}
	return false
}

// ---- the block parser ----

func (r *markdownRenderer) isState(s string) bool {
	return len(r.state) > 0 && r.state[len(r.state)-1] == s
}

func (r *markdownRenderer) pushState(s string) { r.state = append(r.state, s) }
func (r *markdownRenderer) popState()          { r.state = r.state[:len(r.state)-1] }

func (r *markdownRenderer) parseChunk(parent *mdElement, text string) {
	r.parseBlocks(parent, strings.Split(text, "\n\n"))
}

// parseBlocks hands each block to the first processor that takes it,
// in Zulip's priority order: empty, list indent, indented code, hash
// header, table, rule, ordered list, bullet list, quote, paragraph.
func (r *markdownRenderer) parseBlocks(parent *mdElement, blocks []string) {
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
		case mayHaveHeader(block) && hashHeader.MatchString(block):
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
func (r *markdownRenderer) emptyBlock(parent *mdElement, blocks []string) []string {
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
func (r *markdownRenderer) testListIndent(parent *mdElement, block string) bool {
	if !strings.HasPrefix(block, "  ") || r.isState("detabbed") {
		return false
	}
	if parent.tag == "li" {
		return true
	}
	l := parent.last()
	return l != nil && (l.tag == "ul" || l.tag == "ol")
}

func (r *markdownRenderer) listIndent(parent *mdElement, blocks []string) []string {
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

func (r *markdownRenderer) indentLevel(parent *mdElement, block string) (int, *mdElement) {
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
func (r *markdownRenderer) codeBlock(parent *mdElement, blocks []string) []string {
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
func (r *markdownRenderer) indentedCode(e *mdElement) {
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

// hashHeader is Zulip's heading: one to six #, a space, the heading.
var hashHeader = regexp.MustCompile(`(?:^|\n)(#{1,6})[` + pyWhitespace + `]((?:\\.|[^\\])*?)#*(?:\n|\z)`)

// mayHaveHeader is a quick test before hashHeader's: a line starting
// with #.
func mayHaveHeader(block string) bool {
	return strings.HasPrefix(block, "#") || strings.Contains(block, "\n#")
}

func (r *markdownRenderer) hashHeader(parent *mdElement, blocks []string) []string {
	block := blocks[0]
	blocks = blocks[1:]
	m := hashHeader.FindStringSubmatchIndex(block)
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

func (r *markdownRenderer) rule(parent *mdElement, blocks []string) []string {
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
func (r *markdownRenderer) list(parent *mdElement, blocks []string, ordered bool) []string {
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
func (r *markdownRenderer) quote(parent *mdElement, blocks []string) []string {
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
func (r *markdownRenderer) paragraph(parent *mdElement, blocks []string) []string {
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

// ---- tables (Python-Markdown's tables extension) ----

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

func (r *markdownRenderer) table(parent *mdElement, blocks []string, t *tableShape) []string {
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

// ---- writing the tree ----

// prettify is Python-Markdown's PrettifyTreeprocessor: line breaks
// between blocks and after each <br>.
func prettify(root *mdElement) {
	var walk func(e *mdElement)
	walk = func(e *mdElement) {
		if isBlockTag(e.tag) || e.tag == "div" {
			if e.tag != "pre" && e.tag != "code" {
				if pyStrip(e.text) == "" && len(e.children) > 0 && isBlockTag(e.children[0].tag) {
					e.text = "\n"
				}
				for _, c := range e.children {
					if isBlockTag(c.tag) {
						walk(c)
					}
				}
			}
		}
		if pyStrip(e.tail) == "" {
			e.tail = "\n"
		}
	}
	walk(root)
	var brs func(e *mdElement)
	brs = func(e *mdElement) {
		for _, c := range e.children {
			if c.tag == "br" {
				if pyStrip(c.tail) == "" {
					c.tail = "\n"
				} else {
					c.tail = "\n" + c.tail
				}
			}
			brs(c)
		}
	}
	brs(root)
}

// serialize is Python-Markdown's HTML serializer: attributes sorted,
// text escaped (an & that starts an entity is left alone), no end tag
// for <br>, <hr> and <img>.
func serialize(b *strings.Builder, e *mdElement) {
	if e.tag == "" { // a bare text node
		b.WriteString(escapeText(e.text))
	} else {
		b.WriteString("<" + e.tag)
		attrs := slices.Clone(e.attrs)
		slices.SortFunc(attrs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		for _, a := range attrs {
			b.WriteString(" " + a[0] + `="` + escapeAttr(a[1]) + `"`)
		}
		b.WriteString(">")
		b.WriteString(escapeText(e.text))
		for _, c := range e.children {
			serialize(b, c)
		}
		if e.tag != "br" && e.tag != "hr" && e.tag != "img" {
			b.WriteString("</" + e.tag + ">")
		}
	}
	b.WriteString(escapeText(e.tail))
}

// escapeText is Python-Markdown's _escape_cdata.
func escapeText(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '&':
			if isEntityAt(s, i) {
				b.WriteByte('&')
			} else {
				b.WriteString("&amp;")
			}
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// escapeAttr is Python-Markdown's _escape_attrib_html.
func escapeAttr(s string) string {
	return strings.ReplaceAll(escapeText(s), `"`, "&quot;")
}

// isEntityAt is RE_AMP's lookahead: &#digits; &#xhex; or &alnum; (any
// case).
func isEntityAt(s string, i int) bool {
	j := i + 1
	switch {
	case strings.HasPrefix(s[j:], "#x") || strings.HasPrefix(s[j:], "#X"):
		k := j + 2
		for k < len(s) && isHexDigit(s[k]) {
			k++
		}
		return k > j+2 && k < len(s) && s[k] == ';'
	case strings.HasPrefix(s[j:], "#"):
		k := j + 1
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		return k > j+1 && k < len(s) && s[k] == ';'
	}
	k := j
	for k < len(s) && isASCIIAlnum(s[k]) {
		k++
	}
	return k > j && k < len(s) && s[k] == ';'
}

func isASCIIAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ---- Python's notion of white space ----

// pyWhitespace is the character class of Python's \s and str.isspace,
// for regular expressions.
const pyWhitespace = `\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`

func isPySpace(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r >= 0x1c && r <= 0x1f, r == ' ', r == 0x85, r == 0xa0, r == 0x1680,
		r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}

func pyStrip(s string) string  { return strings.TrimFunc(s, isPySpace) }
func pyLstrip(s string) string { return strings.TrimLeftFunc(s, isPySpace) }
func pyRstrip(s string) string { return strings.TrimRightFunc(s, isPySpace) }
