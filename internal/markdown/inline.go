package markdown

// Inline Markdown: Python-Markdown's InlineProcessor with Zulip's
// patterns, in Zulip's priority order. Each pattern in turn replaces its
// matches in a text with placeholders for the nodes it makes; a node's
// own text is then worked on by the patterns after it. The placeholders
// are resolved into the tree at the end, with Python-Markdown's quirks
// kept (the children of a made node are worked on once more from the
// first pattern), so that the HTML is Zulip's.

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"zulite/internal/emoji"
)

// inlineNode is what a pattern makes: an element, or text that no later
// pattern may touch.
type inlineNode struct {
	el   *mdElement
	text string
}

// inlinePattern is one of Zulip's inline patterns. newStyle patterns
// (Python-Markdown's InlineProcessor) may refuse a match and let the
// search go on after it; the others stop at the first match their
// handler refuses.
type inlinePattern struct {
	name     string
	newStyle bool
	// resumes: no match can begin before a replaced match's start that
	// could not before, so the next search may start there instead of
	// at the beginning, as Python-Markdown's does (same result, without
	// the quadratic cost).
	resumes bool
	// streams: the pattern looks neither behind nor past its match, so
	// one pass replaces every match.
	streams bool
	// find answers the first match at or after from.
	find func(in *inliner, data string, from int) (patternMatch, bool)
	// handle makes the node for a match and says what it replaces;
	// ok false refuses the match.
	handle func(in *inliner, data string, m patternMatch) (node inlineNode, start, end int, ok bool)
}

// patternMatch is a match's bounds and the parts its handler needs.
type patternMatch struct {
	start, end int
	parts      []string
	flag       bool
	caps       []int // a linkifier's submatches (linkifiers.go)
}

type inliner struct {
	r        *renderer
	stash    []inlineNode
	patterns []inlinePattern // inlinePatterns with the rendering's linkifiers
	// linkifyBudget is the matcher steps the linkifiers have left;
	// linkified the links they made (linkifiers.go).
	linkifyBudget, linkified int
}

func newInliner(r *renderer) *inliner {
	in := &inliner{r: r, patterns: inlinePatterns, linkifyBudget: LinkifyBudget}
	if len(r.opts.Linkifiers) > 0 {
		// Zulip registers linkifiers at priority 45: after autolink (55),
		// before entity (40), in their order.
		at := linkifierPlace + 1
		in.patterns = append([]inlinePattern(nil), inlinePatterns[:at]...)
		for _, l := range r.opts.Linkifiers {
			in.patterns = append(in.patterns, linkifierPattern(l))
		}
		in.patterns = append(in.patterns, inlinePatterns[at:]...)
	}
	return in
}

// inlinePatterns is Zulip's registry, highest priority first (tex and
// the organisation's linkifiers come after autolink, at linkifierPlace).
var inlinePatterns []inlinePattern

// linkifierPlace is autolink's index in inlinePatterns.
const linkifierPlace = 9

func init() {
	inlinePatterns = []inlinePattern{
		{name: "backtick", newStyle: true, resumes: true, find: findBacktick, handle: handleBacktick},
		{name: "strong_em", find: findStrongEm, handle: handleStrongEm},
		{name: "usermention", newStyle: true, resumes: true, find: findUserMention, handle: handleUserMention},
		{name: "stream_topic_message", newStyle: true, resumes: true, find: findChannelMessageLink, handle: handleChannelMessageLink},
		{name: "topic", newStyle: true, resumes: true, find: findChannelTopicLink, handle: handleChannelTopicLink},
		{name: "stream", newStyle: true, resumes: true, find: findChannelLink, handle: handleChannelLink},
		{name: "timestamp", resumes: true, find: findTimestamp, handle: handleTimestamp},
		{name: "usergroupmention", newStyle: true, resumes: true, find: findGroupMention, handle: handleGroupMention},
		{name: "link", newStyle: true, resumes: true, find: findLink, handle: handleLink},
		{name: "autolink", find: findAutolink, handle: handleAutolink},
		{name: "entity", newStyle: true, resumes: true, find: findEntity, handle: handleEntity},
		{name: "strong", resumes: true, find: findStrong, handle: handleTag("strong")},
		{name: "emphasis", find: findEmphasis, handle: handleTag("em")},
		{name: "del", resumes: true, find: findDel, handle: handleTag("del")},
		{name: "emoji", resumes: true, streams: true, find: findEmoji, handle: handleEmoji},
		{name: "translate_emoticons", resumes: true, find: findEmoticon, handle: handleEmoticon},
		{name: "nl2br", resumes: true, streams: true, find: findNewline, handle: handleNewline},
		{name: "unicodeemoji", newStyle: true, resumes: true, streams: true, find: findUnicodeEmoji, handle: handleUnicodeEmoji},
	}
}

// handle is __handleInline: every pattern from idx on, each until it
// matches no more.
func (in *inliner) handle(data string, idx int) string {
	from := 0
	for idx < len(in.patterns) {
		var matched bool
		var at int
		data, matched, at = in.apply(idx, data, from)
		from = 0
		if !matched {
			idx++
		} else if in.patterns[idx].resumes {
			from = at
		}
	}
	return data
}

// apply is __applyPattern: the pattern's first accepted match is
// replaced by a placeholder, its node's text worked on by the patterns
// after it.
func (in *inliner) apply(idx int, data string, from int) (string, bool, int) {
	p := in.patterns[idx]
	if p.streams {
		return in.stream(idx, data), false, 0
	}
	var node inlineNode
	var start, end int
	for {
		m, ok := p.find(in, data, from)
		if !ok {
			return data, false, 0
		}
		var accepted bool
		node, start, end, accepted = p.handle(in, data, m)
		if accepted {
			break
		}
		if !p.newStyle {
			return data, false, 0 // Python's "matched, continue at the end"
		}
		from = max(m.end, m.start+1)
	}
	in.nested(node, idx)
	return data[:start] + in.put(node) + data[end:], true, start
}

// stream replaces every match of a streaming pattern in one pass.
func (in *inliner) stream(idx int, data string) string {
	p := in.patterns[idx]
	var b strings.Builder
	done, from := 0, 0
	for {
		m, ok := p.find(in, data, from)
		if !ok {
			break
		}
		node, start, end, accepted := p.handle(in, data, m)
		if !accepted {
			if !p.newStyle {
				break
			}
			from = max(m.end, m.start+1)
			continue
		}
		in.nested(node, idx)
		b.WriteString(data[done:start])
		b.WriteString(in.put(node))
		done, from = end, end
	}
	if done == 0 {
		return data
	}
	b.WriteString(data[done:])
	return b.String()
}

// nested works on a made node's own text with the patterns after idx
// (and on its children's tails with idx on).
func (in *inliner) nested(node inlineNode, idx int) {
	if node.el == nil || node.el.atomic {
		return
	}
	for _, child := range append([]*mdElement{node.el}, node.el.children...) {
		if child.text != "" {
			child.text = in.handle(child.text, idx+1)
		}
		if child.tail != "" {
			child.tail = in.handle(child.tail, idx)
		}
	}
}

func (in *inliner) put(n inlineNode) string {
	in.stash = append(in.stash, n)
	id := strconv.Itoa(len(in.stash) - 1)
	if len(id) < 4 {
		id = strings.Repeat("0", 4-len(id)) + id
	}
	return inlinePlaceholder + id + etx
}

// run is InlineProcessor.run: every element's text and tail, with the
// made nodes put into the tree.
func (in *inliner) run(root *mdElement) {
	stack := []*mdElement{root}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		type queued struct {
			el   *mdElement
			kids []*mdElement
		}
		var later []queued
		for i := 0; i < len(cur.children); i++ {
			child := cur.children[i]
			if child.text != "" && !child.atomic {
				text := child.text
				child.text = ""
				kids := in.placeholders(in.handle(text, 0), child, true)
				stack = append(stack, kids...)
				later = append(later, queued{child, kids})
			}
			if child.tail != "" && !child.tailAtomic {
				tail := in.handle(child.tail, 0)
				holder := &mdElement{}
				child.tail = ""
				kids := in.placeholders(tail, holder, false)
				child.tail = holder.tail
				for k, kid := range kids {
					cur.insert(i+1+k, kid)
				}
			}
			if len(child.children) > 0 {
				stack = append(stack, child)
			}
		}
		for _, q := range later {
			q.el.children = append(q.kids, q.el.children...)
		}
	}
}

// placeholders is __processPlaceholders: the text up to the first node
// goes to the parent's text (or tail), each node's text is resolved in
// turn, text after a node becomes its tail. It answers the nodes.
func (in *inliner) placeholders(data string, parent *mdElement, isText bool) []*mdElement {
	var result []*mdElement
	linkText := func(text string) {
		switch {
		case text == "":
		case len(result) > 0:
			result[len(result)-1].tail += text
		case !isText:
			parent.tail += text
		default:
			parent.text += text
		}
	}
	for data != "" {
		i := strings.Index(data, inlinePlaceholder)
		if i < 0 {
			linkText(data)
			break
		}
		n, end, ok := placeholderNumber(data, i+len(inlinePlaceholder))
		if !ok || n >= len(in.stash) {
			linkText(data[:i+len(inlinePlaceholder)])
			data = data[i+len(inlinePlaceholder):]
			continue
		}
		linkText(data[:i])
		data = data[end:]
		node := in.stash[n]
		if node.el == nil {
			linkText(node.text)
			continue
		}
		el := node.el
		for _, child := range append([]*mdElement{el}, el.children...) {
			if pyStrip(child.tail) != "" {
				in.elementText(el, child, false)
			}
			if pyStrip(child.text) != "" {
				in.elementText(child, child, true)
			}
		}
		result = append(result, el)
	}
	return result
}

// elementText is __processElementText: placeholders in a node's text
// (or a child's tail) become children of the node.
func (in *inliner) elementText(node, sub *mdElement, isText bool) {
	var text string
	if isText {
		text, sub.text = sub.text, ""
	} else {
		text, sub.tail = sub.tail, ""
	}
	kids := in.placeholders(text, sub, isText)
	pos := 0
	if !isText && node != sub {
		for i, c := range node.children {
			if c == sub {
				pos = i + 1
				break
			}
		}
	}
	for k, kid := range kids {
		node.insert(pos+k, kid)
	}
}

// ---- helpers ----

func prevRune(data string, i int) rune {
	if i == 0 {
		return -1
	}
	r, _ := utf8.DecodeLastRuneInString(data[:i])
	return r
}

// mentionMayStart is BEFORE_MENTION_ALLOWED_REGEX: the start, white
// space, or one of '"({[/<.
func mentionMayStart(data string, i int) bool {
	r := prevRune(data, i)
	return r == -1 || isPySpace(r) || strings.ContainsRune(`'"({[/<`, r)
}

func textNode(s string) inlineNode { return inlineNode{text: s} }

func elementNode(tag, text string, atomic bool) inlineNode {
	return inlineNode{el: &mdElement{tag: tag, text: text, atomic: atomic}}
}

// codeEscape is Python-Markdown's code_escape.
func codeEscape(s string) string {
	return codeEscaper.Replace(s)
}

var codeEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// ---- backticks ----

// findBacktick is BACKTICK_RE: pairs of backslashes before a backtick
// (they stand for single backslashes), or a code span: a run of n
// backticks, at least one character, and a run of exactly n backticks.
func findBacktick(_ *inliner, data string, from int) (patternMatch, bool) {
	var runs map[int][]int // backtick run length → starts, in order
	closing := func(n, after int) int {
		if runs == nil {
			runs = map[int][]int{}
			for i := 0; i < len(data); {
				if data[i] != '`' {
					i++
					continue
				}
				j := i
				for j < len(data) && data[j] == '`' {
					j++
				}
				runs[j-i] = append(runs[j-i], i)
				i = j
			}
		}
		for _, s := range runs[n] {
			if s >= after {
				return s
			}
		}
		return -1
	}
	for i := from; i < len(data); {
		switch c := data[i]; {
		case c == '\\' && (i == 0 || data[i-1] != '\\'):
			j := i
			for j < len(data) && data[j] == '\\' {
				j++
			}
			if (j-i)%2 == 0 && j < len(data) && data[j] == '`' {
				return patternMatch{start: i, end: j, flag: true}, true
			}
			i = j
		case c == '`':
			runEnd := i
			for runEnd < len(data) && data[runEnd] == '`' {
				runEnd++
			}
			at := i
			if at > 0 && data[at-1] == '\\' {
				at++ // the first backtick is escaped; the next may open
			}
			for n := runEnd - at; n >= 1; n-- {
				if s := closing(n, at+n+1); s >= 0 {
					return patternMatch{start: at, end: s + n, parts: []string{data[at+n : s]}}, true
				}
			}
			i = runEnd
		default:
			i++
		}
	}
	return patternMatch{}, false
}

func handleBacktick(_ *inliner, data string, m patternMatch) (inlineNode, int, int, bool) {
	if m.flag {
		return textNode(strings.Repeat(`\`, (m.end-m.start)/2)), m.start, m.end, true
	}
	return elementNode("code", codeEscape(m.parts[0]), true), m.start, m.end, true
}

// ---- bold and italics ----

func isStarContent(c byte) bool { return c != '*' && c != '^' && c != '\n' }

// findStrongEm is ***text***: not starting or ending with white space,
// no *, ^ or line break inside.
func findStrongEm(_ *inliner, data string, from int) (patternMatch, bool) {
	return findStarred(data, from, 3)
}

// findEmphasis is *text*, likewise.
func findEmphasis(_ *inliner, data string, from int) (patternMatch, bool) {
	return findStarred(data, from, 1)
}

func findStarred(data string, from, n int) (patternMatch, bool) {
	marker := strings.Repeat("*", n)
	for i := from; i+n < len(data); i++ {
		next := strings.Index(data[i:], marker)
		if next < 0 {
			break
		}
		if i += next; i+n >= len(data) {
			break
		}
		c := i + n
		if r, _ := utf8.DecodeRuneInString(data[c:]); isPySpace(r) {
			continue
		}
		k := c
		for k < len(data) && isStarContent(data[k]) {
			k++
		}
		if k == c || !strings.HasPrefix(data[k:], marker) {
			continue
		}
		if r, _ := utf8.DecodeLastRuneInString(data[:k]); isPySpace(r) {
			continue
		}
		return patternMatch{start: i, end: k + n, parts: []string{data[c:k]}}, true
	}
	return patternMatch{}, false
}

func handleStrongEm(_ *inliner, _ string, m patternMatch) (inlineNode, int, int, bool) {
	strong := &mdElement{tag: "strong"}
	strong.sub("em").text = m.parts[0]
	return inlineNode{el: strong}, m.start, m.end, true
}

// findStrong is **text**: at least one character, no line break.
func findStrong(_ *inliner, data string, from int) (patternMatch, bool) {
	for i := from; i+2 < len(data); i++ {
		if data[i] != '*' || data[i+1] != '*' {
			continue
		}
		for j := i + 3; j+1 < len(data); j++ {
			if data[j-1] == '\n' {
				break
			}
			if data[j] == '*' && data[j+1] == '*' {
				return patternMatch{start: i, end: j + 2, parts: []string{data[i+2 : j]}}, true
			}
		}
	}
	return patternMatch{}, false
}

// findDel is ~~text~~: not next to a third ~, no ~ or line break inside.
func findDel(_ *inliner, data string, from int) (patternMatch, bool) {
	for i := from; i+2 < len(data); i++ {
		if data[i] != '~' || data[i+1] != '~' || (i > 0 && data[i-1] == '~') {
			continue
		}
		k := i + 2
		for k < len(data) && data[k] != '~' && data[k] != '\n' {
			k++
		}
		if k == i+2 || !strings.HasPrefix(data[k:], "~~") || (k+2 < len(data) && data[k+2] == '~') {
			continue
		}
		return patternMatch{start: i, end: k + 2, parts: []string{data[i+2 : k]}}, true
	}
	return patternMatch{}, false
}

func handleTag(tag string) func(*inliner, string, patternMatch) (inlineNode, int, int, bool) {
	return func(_ *inliner, _ string, m patternMatch) (inlineNode, int, int, bool) {
		return elementNode(tag, m.parts[0], false), m.start, m.end, true
	}
}

// ---- mentions and channel links ----

// ---- links ----

// itertext is ElementTree's itertext joined.
func (e *mdElement) itertext() string {
	var b strings.Builder
	var walk func(e *mdElement, tail bool)
	walk = func(e *mdElement, tail bool) {
		b.WriteString(e.text)
		for _, c := range e.children {
			walk(c, true)
		}
		if tail {
			b.WriteString(e.tail)
		}
	}
	walk(e, false)
	return b.String()
}

// findEntity is ENTITY_RE: &name; &#digits; &#xhex;, kept as written.
func findEntity(_ *inliner, data string, from int) (patternMatch, bool) {
	run := func(j int, ok func(byte) bool) int {
		for j < len(data) && ok(data[j]) {
			j++
		}
		return j
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	for i := from; i < len(data); i++ {
		if data[i] != '&' {
			continue
		}
		j, k := i+1, i+1
		switch {
		case strings.HasPrefix(data[j:], "#x"):
			j += 2
			k = run(j, isHexDigit)
		case strings.HasPrefix(data[j:], "#"):
			j++
			k = run(j, isDigit)
		default:
			k = run(j, isASCIIAlnum)
		}
		if k > j && k < len(data) && data[k] == ';' {
			return patternMatch{start: i, end: k + 1}, true
		}
	}
	return patternMatch{}, false
}

func handleEntity(in *inliner, data string, m patternMatch) (inlineNode, int, int, bool) {
	return textNode(in.r.stash(data[m.start:m.end])), m.start, m.end, true
}

// ---- emoji and line breaks ----

// findEmoji is EMOJI_REGEX, :name: of word characters, + and -.
func findEmoji(_ *inliner, data string, from int) (patternMatch, bool) {
	for i := from; i < len(data); i++ {
		if data[i] != ':' {
			continue
		}
		j := i + 1
		for j < len(data) {
			r, n := utf8.DecodeRuneInString(data[j:])
			if !isPyWord(r) && r != '-' && r != '+' {
				break
			}
			j += n
		}
		if j > i+1 && j < len(data) && data[j] == ':' {
			return patternMatch{start: i, end: j + 1, parts: []string{data[i+1 : j]}}, true
		}
	}
	return patternMatch{}, false
}

// handleEmoji is Zulip's Emoji pattern: a known name becomes its emoji
// (an active custom emoji first, then :zulip: Zulip's image, then the
// Unicode ones); an unknown one stays text.
func handleEmoji(in *inliner, data string, m patternMatch) (inlineNode, int, int, bool) {
	syntax, name := data[m.start:m.end], m.parts[0]
	if custom := in.r.opts.RealmEmoji; custom != nil {
		if src, ok := custom(name); ok {
			return inlineNode{el: realmEmojiImage(src, syntax)}, m.start, m.end, true
		}
	}
	if name == emoji.Zulip {
		return inlineNode{el: realmEmojiImage("/static/generated/emoji/images/emoji/unicode/zulip.png", syntax)}, m.start, m.end, true
	}
	code, ok := emoji.CodeForName(name)
	if !ok {
		return textNode(syntax), m.start, m.end, true
	}
	return inlineNode{el: emojiSpan(code, syntax)}, m.start, m.end, true
}

// realmEmojiImage is make_realm_emoji: a custom emoji (or :zulip:) as
// its image.
func realmEmojiImage(src, syntax string) *mdElement {
	img := &mdElement{tag: "img", atomic: true}
	img.set("src", src)
	img.set("class", "emoji")
	img.set("alt", syntax)
	img.set("title", strings.ReplaceAll(syntax[1:len(syntax)-1], "_", " "))
	return img
}

// emojiSpan is make_emoji.
func emojiSpan(code, syntax string) *mdElement {
	title := strings.ReplaceAll(syntax[1:len(syntax)-1], "_", " ")
	span := &mdElement{tag: "span", text: syntax, atomic: true}
	span.set("class", "emoji emoji-"+code)
	span.set("title", title)
	span.set("role", "img")
	span.set("aria-label", title)
	return span
}

// emoticons is Zulip 11's EMOTICON_CONVERSIONS (emoji_codes.json's
// emoticon_conversions), in its order: the emoticons a sender with
// translate_emoticons sees become these emoji.
var emoticons = [][2]string{
	{":)", ":smile:"}, {"(:", ":smile:"}, {":(", ":frown:"}, {"<3", ":heart:"},
	{":|", ":neutral:"}, {":/", ":confused:"}, {";)", ":wink:"}, {":D", ":grinning:"},
	{":o", ":open_mouth:"}, {":O", ":open_mouth:"}, {":p", ":stuck_out_tongue:"}, {":P", ":stuck_out_tongue:"},
}

// isEmoticonBoundary is EMOTICON_RE's terminal_symbols: what may stand
// on either side of an emoticon (besides the text's start and end).
func isEmoticonBoundary(c byte) bool {
	return strings.IndexByte(",.;?!()[] \"'\n\t", c) >= 0
}

// findEmoticon is EMOTICON_RE, for a sender who translates emoticons:
// the first emoticon with a terminal symbol (or the text's edge) on
// each side. All emoticons are two bytes long.
func findEmoticon(in *inliner, data string, from int) (patternMatch, bool) {
	if !in.r.opts.TranslateEmoticons {
		return patternMatch{}, false
	}
	for i := from; i+2 <= len(data); i++ {
		if i > 0 && !isEmoticonBoundary(data[i-1]) {
			continue
		}
		if i+2 < len(data) && !isEmoticonBoundary(data[i+2]) {
			continue
		}
		for _, e := range emoticons {
			if data[i:i+2] == e[0] {
				return patternMatch{start: i, end: i + 2, parts: []string{e[1]}}, true
			}
		}
	}
	return patternMatch{}, false
}

// handleEmoticon is EmoticonTranslation: the emoticon's emoji, shown as
// :name: is.
func handleEmoticon(_ *inliner, _ string, m patternMatch) (inlineNode, int, int, bool) {
	syntax := m.parts[0]
	code, ok := emoji.CodeForName(syntax[1 : len(syntax)-1])
	if !ok {
		return inlineNode{}, 0, 0, false
	}
	return inlineNode{el: emojiSpan(code, syntax)}, m.start, m.end, true
}

func findNewline(_ *inliner, data string, from int) (patternMatch, bool) {
	if i := strings.IndexByte(data[from:], '\n'); i >= 0 {
		return patternMatch{start: from + i, end: from + i + 1}, true
	}
	return patternMatch{}, false
}

func handleNewline(_ *inliner, _ string, m patternMatch) (inlineNode, int, int, bool) {
	return inlineNode{el: &mdElement{tag: "br", atomic: true}}, m.start, m.end, true
}

func findUnicodeEmoji(_ *inliner, data string, from int) (patternMatch, bool) {
	for i := from; i < len(data); {
		// An ASCII emoji (a digit, # or *) is one only as a keycap: one
		// followed by ASCII would be a sequence of itself alone, which
		// names no emoji, so the search goes on past it either way.
		if c := data[i]; c < utf8.RuneSelf && (i+1 == len(data) || data[i+1] < utf8.RuneSelf) {
			i++
			continue
		}
		if end, ok := emoji.SequenceAt(data, i); ok {
			return patternMatch{start: i, end: end}, true
		}
		_, n := utf8.DecodeRuneInString(data[i:])
		i += n
	}
	return patternMatch{}, false
}

// handleUnicodeEmoji is Zulip's UnicodeEmoji: an emoji typed as a
// character is shown as Zulip's, by its canonical name.
func handleUnicodeEmoji(_ *inliner, data string, m patternMatch) (inlineNode, int, int, bool) {
	code, ok := emoji.Renderable(data[m.start:m.end])
	if !ok {
		return inlineNode{}, 0, 0, false
	}
	name, _ := emoji.CanonicalName(code)
	return inlineNode{el: emojiSpan(code, ":"+name+":")}, m.start, m.end, true
}

func init() {
	if inlinePatterns[linkifierPlace].name != "autolink" {
		panic("markdown: linkifierPlace is not autolink's index")
	}
}
