package markdown

// Links in messages: the [text](url) and <url> patterns, the URLs Zulip
// links by itself (its link regex,
// get_web_link_regex), the schemes it allows (sanitize_url, which reads
// a URL as Python's urllib does), and the hash URLs of channels and
// topics (encode_stream, hash_util_encode).

import (
	_ "embed"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

//go:embed tlds.txt
var tldTable string

var tldOnce = sync.OnceValues(func() (map[string]bool, int) {
	set := map[string]bool{}
	longest := 0
	for line := range strings.Lines(tldTable) {
		if t := strings.TrimSpace(line); t != "" {
			set[t] = true
			longest = max(longest, len(t))
		}
	}
	return set, longest
})

// allowedSchemes is Zulip's allowed_schemes: http, https, ftp, file and
// the HTML standard's safelisted schemes.
var allowedSchemes = map[string]bool{
	"http": true, "https": true, "ftp": true, "file": true,
	"bitcoin": true, "geo": true, "im": true, "irc": true, "ircs": true, "magnet": true, "mailto": true,
	"matrix": true, "mms": true, "news": true, "nntp": true, "openpgp4fpr": true, "sip": true, "sms": true,
	"smsto": true, "ssh": true, "tel": true, "urn": true, "webcal": true, "wtai": true, "xmpp": true,
}

// urlParts is a URL split as Python's urlsplit splits it.
type urlParts struct{ scheme, netloc, path, query, fragment string }

// urlSplit is Python's urllib.parse.urlsplit: leading C0 controls and
// spaces and every tab and line break are dropped, the scheme is
// lower-cased; a netloc with unbalanced or bad brackets is an error.
func urlSplit(url string) (urlParts, bool) {
	url = strings.TrimLeftFunc(url, func(r rune) bool { return r <= ' ' })
	url = urlControlRemover.Replace(url)
	var p urlParts
	if i := strings.IndexByte(url, ':'); i > 0 && isASCIILetter(url[0]) {
		scheme := url[:i]
		if strings.Trim(scheme, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.") == "" {
			p.scheme, url = strings.ToLower(scheme), url[i+1:]
		}
	}
	if strings.HasPrefix(url, "//") {
		end := len(url)
		if i := strings.IndexAny(url[2:], "/?#"); i >= 0 {
			end = i + 2
		}
		p.netloc, url = url[2:end], url[end:]
		open, closed := strings.Contains(p.netloc, "["), strings.Contains(p.netloc, "]")
		if open != closed {
			return p, false
		}
		if open && !bracketedHostOK(p.netloc) {
			return p, false
		}
	}
	if i := strings.IndexByte(url, '#'); i >= 0 {
		url, p.fragment = url[:i], url[i+1:]
	}
	if i := strings.IndexByte(url, '?'); i >= 0 {
		url, p.query = url[:i], url[i+1:]
	}
	p.path = url
	return p, true
}

// bracketedHostOK is Python's _check_bracketed_netloc: [IPv6] or
// [vX.future-address], then nothing or a port.
func bracketedHostOK(netloc string) bool {
	host := netloc[strings.LastIndexByte(netloc, '@')+1:]
	before, bracketed, found := strings.Cut(host, "[")
	if !found || before != "" {
		return !found
	}
	addr, port, _ := strings.Cut(bracketed, "]")
	if port != "" && !strings.HasPrefix(port, ":") {
		return false
	}
	if strings.HasPrefix(addr, "v") || strings.HasPrefix(addr, "V") {
		return len(addr) > 3 && strings.Contains(addr, ".")
	}
	ip, err := netip.ParseAddr(addr)
	return err == nil && ip.Is6()
}

var urlControlRemover = strings.NewReplacer("\t", "", "\r", "", "\n", "")

// usesNetloc is Python's urllib.parse.uses_netloc.
var usesNetloc = map[string]bool{"": true, "ftp": true, "http": true, "gopher": true, "nntp": true, "telnet": true,
	"imap": true, "wais": true, "file": true, "mms": true, "https": true, "shttp": true, "snews": true,
	"prospero": true, "rtsp": true, "rtsps": true, "rtspu": true, "rsync": true, "svn": true, "svn+ssh": true,
	"sftp": true, "nfs": true, "git": true, "git+ssh": true, "ws": true, "wss": true, "itms-services": true}

// urlUnsplit is Python's urllib.parse.urlunsplit (3.11).
func urlUnsplit(p urlParts) string {
	url := p.path
	if p.netloc != "" || (p.scheme != "" && usesNetloc[p.scheme] && !strings.HasPrefix(url, "//")) {
		if url != "" && url[0] != '/' {
			url = "/" + url
		}
		url = "//" + p.netloc + url
	}
	if p.scheme != "" {
		url = p.scheme + ":" + url
	}
	if p.query != "" {
		url += "?" + p.query
	}
	if p.fragment != "" {
		url += "#" + p.fragment
	}
	return url
}

// sanitizeURL is Zulip's sanitize_url: a URL with an allowed scheme,
// http:// added to one without a scheme, mailto: to an address, and
// paths and fragments of the realm kept relative; false for any other
// scheme (javascript:, data:, ...).
func sanitizeURL(url string) (string, bool) {
	for range 2 { // the second round has http:// in front
		p, ok := urlSplit(strings.ReplaceAll(url, " ", "%20"))
		if !ok {
			return "", true
		}
		switch {
		case p.scheme == "" && p.netloc == "" && strings.Contains(p.path, "@"):
			p.scheme = "mailto"
		case p.scheme == "" && p.netloc == "" && strings.HasPrefix(p.path, "/"):
			return urlUnsplit(urlParts{path: p.path, query: p.query, fragment: p.fragment}), true
		case p.scheme == "" && p.netloc == "" && p.path == "" && p.query == "" && p.fragment != "":
			return "#" + p.fragment, true
		}
		if p.scheme == "" {
			url = "http://" + url
			continue
		}
		if !allowedSchemes[p.scheme] {
			return "", false
		}
		return urlUnsplit(p), true
	}
	return "", false
}

// relativeToRealm is Zulip's rewrite_local_links_to_relative: a link
// into the realm's own narrows or uploads opens in the same window.
func (r *renderer) relativeToRealm(href string) string {
	if r.realmURL == "" {
		return href
	}
	prefix := r.realmURL + "/"
	if strings.HasPrefix(href, prefix+"#") || strings.HasPrefix(href, prefix+"user_uploads/") {
		return href[len(prefix):]
	}
	return href
}

// hashEncode is Zulip's hash_util_encode: percent-encoding of all but
// letters, digits and _-~, with "." then "%" written as ".".
func hashEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isASCIIAlnum(c) || c == '_' || c == '-' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('.')
		b.WriteString(strings.ToUpper(strconv.FormatUint(uint64(c)>>4, 16) + strconv.FormatUint(uint64(c)&15, 16)))
	}
	return b.String()
}

// encodeChannel is Zulip's encode_stream: the id, a dash and the name
// with spaces as dashes.
func encodeChannel(id uint64, name string) string {
	return strconv.FormatUint(id, 10) + "-" + hashEncode(strings.ReplaceAll(name, " ", "-"))
}

// ---- Zulip's link regex ----

// autolinkAt finds the first URL at or after from, as Zulip's link
// regex does: it starts after white space or one of '"(,:< (or at the
// start), and is an http(s) URL, a domain with a known top-level domain
// (with an optional path, parentheses balanced to seven levels), an
// e-mail address or a bitcoin address, followed by nothing but
// punctuation up to white space or the end.
func autolinkAt(data string, from int) (start, end int, ok bool) {
	for p := from; p < len(data); {
		if data[p] == stx[0] { // a placeholder: no link starts inside one
			if end := strings.IndexByte(data[p:], etx[0]); end > 0 {
				p += end + 1
				continue
			}
		}
		if p == 0 || startsLink(data, p) {
			if e, ok := urlAt(data, p); ok {
				return p, e, true
			}
		}
		if data[p] < utf8.RuneSelf {
			p++
		} else {
			_, n := utf8.DecodeRuneInString(data[p:])
			p += n
		}
	}
	return 0, 0, false
}

func startsLink(data string, p int) bool {
	if c := data[p-1]; c < utf8.RuneSelf {
		return c == ' ' || c >= '\t' && c <= '\r' || c >= 0x1c && c <= 0x1f || strings.IndexByte(`'"(,:<`, c) >= 0
	}
	r, _ := utf8.DecodeLastRuneInString(data[:p])
	return isPySpace(r) || strings.ContainsRune(`'"(,:<`, r)
}

func urlAt(data string, p int) (int, bool) {
	if e, ok := httpURLAt(data, p); ok {
		return e, true
	}
	if e, ok := domainURLAt(data, p); ok {
		return e, true
	}
	if e, ok := emailAt(data, p); ok {
		return e, true
	}
	return bitcoinAt(data, p)
}

// linkEndsAt is the regex's lookahead: punctuation, then white space
// or the end.
func linkEndsAt(data string, i int) bool {
	for i < len(data) && strings.IndexByte(`!:;?),.'">`, data[i]) >= 0 {
		i++
	}
	if i == len(data) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(data[i:])
	return isPySpace(r)
}

func isPyWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// afterHost ends a URL whose host ends at i: a path if one follows
// (the shortest that leaves only punctuation), else nothing.
func afterHost(data string, i int) (int, bool) {
	if i < len(data) && data[i] == '/' {
		if e, ok := pathEnd(data, i+1); ok {
			return e, true
		}
	}
	if linkEndsAt(data, i) {
		return i, true
	}
	return 0, false
}

// pathEnd is the shortest end of a path starting at i whose
// parentheses balance (seven levels at most) and after which only
// punctuation is left before white space.
func pathEnd(data string, i int) (int, bool) {
	depth := 0
	for j := i; ; {
		if depth == 0 && linkEndsAt(data, j) {
			return j, true
		}
		if j >= len(data) {
			return 0, false
		}
		r, n := utf8.DecodeRuneInString(data[j:])
		switch {
		case isPySpace(r) || r == '"':
			return 0, false
		case r == '(':
			if depth++; depth > 7 {
				return 0, false
			}
		case r == ')':
			if depth == 0 {
				return 0, false
			}
			depth--
		}
		j += n
	}
}

func httpURLAt(data string, p int) (int, bool) {
	rest := data[p:]
	var d int
	switch {
	case strings.HasPrefix(rest, "http://"):
		d = p + len("http://")
	case strings.HasPrefix(rest, "https://"):
		d = p + len("https://")
	default:
		return 0, false
	}
	for j := d; j < len(data); {
		r, n := utf8.DecodeRuneInString(data[j:])
		if !isPyWord(r) && !strings.ContainsRune(".:@-", r) {
			break
		}
		j += n
		if e, ok := afterHost(data, j); ok {
			return e, true
		}
	}
	return 0, false
}

// domainURLAt is the regex's second form: labels and dots, a known
// top-level domain (the longest first), then a path or the end.
func domainURLAt(data string, p int) (int, bool) {
	var ends []int // positions after each "label."
	for j := p; ; {
		k := j
		for k < len(data) {
			r, n := utf8.DecodeRuneInString(data[k:])
			if !isPyWord(r) && r != '-' {
				break
			}
			k += n
		}
		if k == j || k >= len(data) || data[k] != '.' {
			break
		}
		j = k + 1
		ends = append(ends, j)
	}
	tlds, longest := tldOnce()
	for c := len(ends) - 1; c >= 0; c-- {
		at := ends[c]
		for l := min(longest, len(data)-at); l > 0; l-- {
			if !tlds[data[at:at+l]] {
				continue
			}
			if e, ok := afterHost(data, at+l); ok {
				return e, true
			}
		}
	}
	return 0, false
}

func isEmailByte(r rune) bool { return isPyWord(r) || r == '.' || r == '-' }

// emailAt is the regex's address form, [\w.-]+@[\w.-]+\.\w+, which
// takes no path.
func emailAt(data string, p int) (int, bool) {
	j := p
	for j < len(data) {
		r, n := utf8.DecodeRuneInString(data[j:])
		if !isEmailByte(r) {
			break
		}
		j += n
	}
	if j == p || j >= len(data) || data[j] != '@' {
		return 0, false
	}
	d := j + 1
	k := d
	for k < len(data) {
		r, n := utf8.DecodeRuneInString(data[k:])
		if !isEmailByte(r) {
			break
		}
		k += n
	}
	for dot := strings.LastIndexByte(data[d:k], '.'); dot >= 0; dot = strings.LastIndexByte(data[d:d+dot], '.') {
		if dot == 0 {
			break
		}
		var ends []int // ends of the \w+ after the dot, longest first
		for m := d + dot + 1; m < k; {
			r, n := utf8.DecodeRuneInString(data[m:])
			if !isPyWord(r) {
				break
			}
			m += n
			ends = append(ends, m)
		}
		for i := len(ends) - 1; i >= 0; i-- {
			if linkEndsAt(data, ends[i]) {
				return ends[i], true
			}
		}
	}
	return 0, false
}

func bitcoinAt(data string, p int) (int, bool) {
	rest := data[p:]
	if !strings.HasPrefix(rest, "bitcoin:") || len(rest) < len("bitcoin:")+26 || (rest[8] != '1' && rest[8] != '3') {
		return 0, false
	}
	const base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
	n := 0
	for 9+n < len(rest) && n < 34 && strings.IndexByte(base58, rest[9+n]) >= 0 {
		n++
	}
	for ; n >= 25; n-- {
		if linkEndsAt(data, p+9+n) {
			return p + 9 + n, true
		}
	}
	return 0, false
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// findLink is LINK_RE: a "[" not after "!".
func findLink(_ *inliner, data string, from int) (patternMatch, bool) {
	for i := from; i < len(data); i++ {
		if data[i] == '[' && (i == 0 || data[i-1] != '!') {
			return patternMatch{start: i, end: i + 1}, true
		}
	}
	return patternMatch{}, false
}

// handleLink is Python-Markdown's LinkInlineProcessor with Zulip's
// changes: the URL sanitized (a link with another scheme stays text),
// the realm's own links relative, an empty text replaced by the URL,
// and no pattern run on the text.
func handleLink(in *inliner, data string, m patternMatch) (inlineNode, int, int, bool) {
	text, index, ok := linkText(data, m.end)
	if !ok {
		return inlineNode{}, 0, 0, false
	}
	href, title, hasTitle, index, ok := linkTarget(in, data, index)
	if !ok {
		return inlineNode{}, 0, 0, false
	}
	href, allowed := sanitizeURL(in.unescape(pyStrip(href)))
	if !allowed {
		return inlineNode{}, 0, 0, false
	}
	href = in.r.relativeToRealm(href)
	a := &mdElement{tag: "a", text: text, atomic: true}
	a.set("href", href)
	if hasTitle {
		a.set("title", title)
	}
	if pyStrip(a.text) == "" {
		a.text = href
	}
	return inlineNode{el: a}, m.start, index, true
}

// linkText is getText: the text up to the "]" that balances the "[".
func linkText(data string, index int) (string, int, bool) {
	depth := 1
	for pos := index; pos < len(data); pos++ {
		switch data[pos] {
		case ']':
			depth--
		case '[':
			depth++
		}
		if depth == 0 {
			return data[index:pos], pos + 1, true
		}
	}
	return "", index, false
}

// linkTarget is getLink: "(" then either <url> with an optional quoted
// title, or a URL up to the balancing ")", a quoted title inside it
// taken as the title.
func linkTarget(in *inliner, data string, index int) (href, title string, hasTitle bool, end int, ok bool) {
	if index >= len(data) || data[index] != '(' {
		return "", "", false, 0, false
	}
	pos := index + 1
	for pos < len(data) {
		r, n := utf8.DecodeRuneInString(data[pos:])
		if !isPySpace(r) {
			break
		}
		pos += n
	}
	if strings.HasPrefix(data[pos:], "<") {
		if h, t, has, e, ok := angleLink(data, pos); ok {
			return in.finishLink(h, t, has, e)
		}
	}
	// Track bracket nesting, and quotes that may hold a title.
	bracketCount, backtrackCount := 1, 1
	start := pos
	index = pos
	lastBracket := -1
	var quote, altQuote byte
	startQuote, exitQuote, startAltQuote, exitAltQuote := -1, -1, -1, -1
	ignoreMatches := false
	var last byte
	for p := index; p < len(data); p++ {
		c := data[p]
		switch {
		case c == '(':
			if !ignoreMatches {
				bracketCount++
			} else if backtrackCount > 0 {
				backtrackCount--
			}
		case c == ')':
			switch {
			case (exitQuote != -1 && quote == last) || (exitAltQuote != -1 && altQuote == last):
				bracketCount = 0
			case !ignoreMatches:
				bracketCount--
			case backtrackCount > 0:
				backtrackCount--
				if backtrackCount == 0 {
					lastBracket = index + 1
				}
			}
		case c == '\'' || c == '"':
			switch {
			case quote == 0:
				ignoreMatches = true
				backtrackCount = bracketCount
				bracketCount = 1
				startQuote = index + 1
				quote = c
			case c != quote && altQuote == 0:
				startAltQuote = index + 1
				altQuote = c
			case c == quote:
				exitQuote = index + 1
			case altQuote != 0 && c == altQuote:
				exitAltQuote = index + 1
			}
		}
		index++
		if bracketCount == 0 {
			switch {
			case exitQuote >= 0 && quote == last:
				href = data[start : startQuote-1]
				title, hasTitle = data[startQuote:exitQuote-1], true
			case exitAltQuote >= 0 && altQuote == last:
				href = data[start : startAltQuote-1]
				title, hasTitle = data[startAltQuote:exitAltQuote-1], true
			default:
				href = data[start : index-1]
			}
			break
		}
		if c != ' ' {
			last = c
		}
	}
	if bracketCount != 0 && backtrackCount == 0 {
		if lastBracket < 0 {
			// A "(" inside a title used up the backtrack count before any
			// ")": Python slices with -1 and -2, that is from the end.
			href = data[start:max(start, len(data)-2)]
			return in.finishLink(href, title, hasTitle, len(data)-1)
		}
		href = data[start : lastBracket-1]
		index = lastBracket
		bracketCount = 0
	}
	if bracketCount != 0 {
		return "", "", false, 0, false
	}
	return in.finishLink(href, title, hasTitle, index)
}

// angleLink is RE_LINK's <url> form: <url>, then optionally a quoted
// title, then ")".
func angleLink(data string, pos int) (href, title string, hasTitle bool, end int, ok bool) {
	close := strings.IndexAny(data[pos+1:], "<>")
	if close < 0 || data[pos+1+close] != '>' {
		return "", "", false, 0, false
	}
	href = data[pos : pos+1+close+1]
	p := skipPySpace(data, pos+1+close+1)
	if p < len(data) && (data[p] == '\'' || data[p] == '"') {
		q := strings.IndexByte(data[p+1:], data[p])
		if q >= 0 {
			title, hasTitle = data[p:p+1+q+1], true
			p = skipPySpace(data, p+1+q+1)
		}
	}
	if p >= len(data) || data[p] != ')' {
		return "", "", false, 0, false
	}
	href = strings.TrimSpace(href[1 : len(href)-1])
	if hasTitle {
		title = title[1 : len(title)-1]
	}
	return href, title, hasTitle, p + 1, true
}

func skipPySpace(data string, p int) int {
	for p < len(data) {
		r, n := utf8.DecodeRuneInString(data[p:])
		if !isPySpace(r) {
			break
		}
		p += n
	}
	return p
}

func (in *inliner) finishLink(href, title string, hasTitle bool, end int) (string, string, bool, int, bool) {
	if hasTitle {
		title = dequote(in.unescape(pyStrip(title)))
		title = strings.Map(func(r rune) rune {
			if isPySpace(r) {
				return ' '
			}
			return r
		}, title)
	}
	return pyStrip(in.unescape(href)), title, hasTitle, end, true
}

func dequote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// unescape is InlineProcessor.unescape: placeholders become their
// text.
func (in *inliner) unescape(s string) string {
	if !strings.Contains(s, inlinePlaceholder) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, inlinePlaceholder)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		n, end, ok := placeholderNumber(s, i+len(inlinePlaceholder))
		if !ok || n >= len(in.stash) {
			b.WriteString(s[:i+len(inlinePlaceholder)])
			s = s[i+len(inlinePlaceholder):]
			continue
		}
		b.WriteString(s[:i])
		if node := in.stash[n]; node.el == nil {
			b.WriteString(node.text)
		} else {
			b.WriteString(node.el.itertext())
		}
		s = s[end:]
	}
}

// findAutolink is Zulip's link regex (links.go).
func findAutolink(_ *inliner, data string, from int) (patternMatch, bool) {
	s, e, ok := autolinkAt(data, from)
	return patternMatch{start: s, end: e}, ok
}

// handleAutolink is url_to_a: a link, or the text when the scheme is
// not allowed.
func handleAutolink(in *inliner, data string, m patternMatch) (inlineNode, int, int, bool) {
	url := data[m.start:m.end]
	href, ok := sanitizeURL(url)
	if !ok {
		return textNode(url), m.start, m.end, true
	}
	a := &mdElement{tag: "a", text: url, atomic: true}
	a.set("href", in.r.relativeToRealm(href))
	return inlineNode{el: a}, m.start, m.end, true
}

// HashEncode and EncodeChannel are hashEncode and encodeChannel for the
// links zulite writes into messages (a reminder's).
var HashEncode, EncodeChannel = hashEncode, encodeChannel
