// Package markdown renders Zulip-flavoured Markdown as Zulip renders it
// (zerver/lib/markdown, Zulip 11.0): the same pipeline as the
// Python-Markdown engine Zulip configures, in the same order, so that a
// message looks the same in every client whether zulite or Zulip
// rendered it. Lines pass through the preprocessors (hanging lists,
// whitespace, fenced blocks), blocks are split at blank lines and handed
// to the block processors in Zulip's priority order (blocks.go), inline
// patterns run over the text of every element (inline.go), and the tree
// is written out with Python-Markdown's serializer. Everything that is
// not Markdown is escaped: no HTML from a message ever reaches the
// output, and links keep only the schemes Zulip allows (links.go).
// Global times (<time:...>) are read as Zulip reads them
// (globaltime.go), and emoticons become emoji for a sender who has
// translate_emoticons on (Options). Images, link previews, LaTeX,
// linkifiers, user-group mentions and syntax highlighting are left out:
// their syntax stays text (and a code block stays unhighlighted).
//
// What a message's mentions and channel links name is asked of a
// Resolver, which the server implements over its store
// (references.go reads the syntax). The package imports only the
// standard library and internal/emoji: never bbolt, net/http or package
// main's types.
package markdown

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
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

// Resolver is what rendering asks the server: who and what a message's
// mentions and links name. As Zulip's MentionData, it is asked only for
// the syntax the message holds: Render reads the message for @-mentions
// and #**links** first, asks once for all the users they may mean and
// for the channel of each name they link, then renders; a topic link
// asks for its topic's oldest message as it is rendered.
type Resolver interface {
	// Users answers the accounts whose lower-cased full name is in
	// names or whose id is in ids, oldest first: of two accounts of one
	// name, @**name** means the oldest.
	Users(names map[string]bool, ids map[uint64]bool) ([]User, error)
	// ChannelID answers the channel of exactly this name, if the sender
	// may read it, for #**channel** links.
	ChannelID(name string) (uint64, bool)
	// TopicStart answers the oldest message of a channel's topic, for a
	// #**channel>topic** link's "with" operand.
	TopicStart(channelID uint64, topic string) (uint64, bool)
}

// GroupResolver is what a Resolver answers, if it can, for user-group
// mentions (@*group*): the active user groups whose lower-cased name is
// in names. A Resolver without it renders group mentions as text.
type GroupResolver interface {
	UserGroups(names map[string]bool) ([]UserGroup, error)
}

// UserGroup is a user group a mention may name.
type UserGroup struct {
	ID   int
	Name string
}

// User is an account a mention may name.
type User struct {
	ID       uint64
	FullName string
	Active   bool
}

// Result is a message's HTML and what its mentions mean.
type Result struct {
	HTML string
	// MentionedIDs are the users mentioned by name, not silently.
	MentionedIDs []uint64
	// MentionedGroupIDs are the user groups mentioned, not silently
	// (Zulip's mentions_user_group_ids), sorted.
	MentionedGroupIDs []int
	// ChannelWildcard: @**all**, @**everyone**, @**channel** or
	// @**stream**; TopicWildcard: @**topic** (neither silent).
	ChannelWildcard bool
	TopicWildcard   bool
	// AlertText is what Zulip's AlertWordNotificationProcessor reads for
	// alert words: the lines after the preprocessors before it (hanging
	// lists, whitespace normalized, fenced blocks), so that a fenced code
	// block, stashed by then, holds none; inline code, indented code,
	// quotes and spoilers are still text there.
	AlertText string
}

// renderer holds one rendering's state.
type renderer struct {
	realmURL string // links to the realm itself become relative
	resolver Resolver
	raw      []string // stashed raw HTML, by placeholder number
	state    []string // the block parser's state stack
	result   Result
	users    struct {
		byName map[string]User // lower-cased full name
		byID   map[uint64]User
	}
	channels map[string]uint64    // by exact name, those the resolver knew
	groups   map[string]UserGroup // by lower-cased name, those the resolver knew
	opts     Options
}

// Options are what a rendering takes from its sender and its moment,
// as Zulip's markdown_convert takes them.
type Options struct {
	// TranslateEmoticons is the sender's translate_emoticons setting:
	// :) and the other emoticons Zulip knows become their emoji.
	TranslateEmoticons bool
	// Now is the moment of rendering, which fills in what a global time
	// leaves out (<time:10:30> is today's); the zero Time is time.Now().
	Now time.Time
	// RealmEmoji answers the image of the organisation's active custom
	// emoji of a name (Zulip's active_realm_emoji), which :name: shows
	// before any built-in emoji of the name; nil: there are none.
	RealmEmoji func(name string) (src string, ok bool)
	// Linkifiers are the organisation's linkifiers, in their order
	// (linkifiers.go); nil: none.
	Linkifiers []*Linkifier
}

// Render renders a message's content as Zulip would, in a realm
// at realmURL. A nil resolver renders without mentions or channel links
// (nothing resolves); an error is the resolver's.
func Render(content, realmURL string, resolver Resolver) (Result, error) {
	return RenderWith(content, realmURL, resolver, Options{})
}

// RenderWith is Render for a sender's options.
func RenderWith(content, realmURL string, resolver Resolver, opts Options) (Result, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	r := &renderer{realmURL: realmURL, resolver: resolver, opts: opts}
	r.users.byName = map[string]User{}
	r.users.byID = map[uint64]User{}
	if resolver != nil {
		if err := r.resolve(content); err != nil {
			return Result{}, err
		}
	}
	r.result.HTML = r.convert(content)
	slices.Sort(r.result.MentionedIDs)
	r.result.MentionedIDs = slices.Compact(r.result.MentionedIDs)
	slices.Sort(r.result.MentionedGroupIDs)
	r.result.MentionedGroupIDs = slices.Compact(r.result.MentionedGroupIDs)
	return r.result, nil
}

// convert is Python-Markdown's Markdown.convert with Zulip's processors.
func (r *renderer) convert(source string) string {
	if pyStrip(source) == "" {
		return ""
	}
	lines := strings.Split(source, "\n")
	lines = hangingLists(lines)
	lines = normalizeWhitespace(lines)
	lines = r.fencedBlocks(lines)
	r.result.AlertText = strings.Join(lines, "\n")
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
func (r *renderer) fencedBlocks(lines []string) []string {
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

// htmlEscaper is Pygments' escape_html: quotes too.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

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
func (r *renderer) stash(html string) string {
	r.raw = append(r.raw, html)
	return rawPlaceholder + strconv.Itoa(len(r.raw)-1) + etx
}

// restoreRaw is Python-Markdown's RawHtmlPostprocessor: each raw
// placeholder becomes its HTML, without the paragraph around it when
// the HTML is a block, until none is left.
func (r *renderer) restoreRaw(text string) string {
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

// ---- tables (Python-Markdown's tables extension) ----

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
		// sort.Slice, not slices.SortFunc: the same sort, without a copy of it
		// compiled for [2]string (the binary's size budget)
		sort.Slice(attrs, func(i, j int) bool { return attrs[i][0] < attrs[j][0] })
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

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
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
