package markdown

// Linkifiers (zerver/lib/markdown/__init__.py's LinkifierPattern,
// zerver/models/linkifiers.py's checks): an organisation's patterns,
// each turning what it matches into a link made from an RFC 6570 URL
// template and the pattern's named groups. They run among the inline
// patterns where Zulip registers them (priority 45, after autolink and
// before entities), in the organisation's order, as new-style patterns:
// a match whose URL is not allowed stays text and the search goes on.

import (
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Zulip's prepare_linkifier_pattern: the three groups around the pattern.
const (
	linkifierBefore = "linkifier_before_match"
	linkifierActual = "linkifier_actual_match"
	linkifierAfter  = "linkifier_after_match"
)

// LinkifyBudget is how many matcher steps all the linkifiers of one
// rendering may take together (re2.go): past it, what is left of the
// message is not linkified.
const LinkifyBudget = 4_000_000

// MaxLinkified is how many links the linkifiers of one rendering make
// together: past it, the rest of the message is not linkified. (A
// pattern that matches what it made, such as ^.+, would otherwise go on
// until the budget ran out.)
const MaxLinkified = 1000

// Linkifier is one compiled linkifier.
type Linkifier struct {
	re       *re2 // the prepared pattern
	template []templatePart
	actual   int // the group number of linkifier_actual_match
}

// LinkifierError is why CompileLinkifier refused a linkifier, in the
// order Zulip's full_clean finds them: the URL template's own check,
// then the pattern, then the groups against the template's variables
// (the smallest name missing, as Zulip reports it).
type LinkifierError struct {
	BadTemplate       bool
	Pattern           *PatternError
	MissingInPattern  string // a template variable no group names
	MissingInTemplate string // a group no template variable names
}

func (e *LinkifierError) Error() string { return "invalid linkifier" }

// CompileLinkifier checks a linkifier as Zulip's RealmFilter.clean does
// and compiles it.
func CompileLinkifier(pattern, urlTemplate string) (*Linkifier, error) {
	var fail LinkifierError
	template, templateOK := parseTemplate(urlTemplate)
	fail.BadTemplate = !templateOK
	raw, err := compileRE2(pattern)
	if err != nil {
		fail.Pattern = err.(*PatternError)
		return nil, &fail
	}
	if !templateOK {
		return nil, &fail
	}
	groups := map[string]bool{}
	for _, name := range raw.names {
		if name != "" {
			groups[name] = true
		}
	}
	vars := map[string]bool{}
	for _, part := range template {
		for _, v := range part.vars {
			vars[v.name] = true
		}
	}
	if missing := smallestMissing(vars, groups); missing != "" {
		fail.MissingInPattern = missing
		return nil, &fail
	}
	if missing := smallestMissing(groups, vars); missing != "" {
		fail.MissingInTemplate = missing
		return nil, &fail
	}
	prepared, err := compileRE2(`(?P<` + linkifierBefore + `>^|\s|` + "\u0085" + `|\pZ|['"\(,:<])(?P<` + linkifierActual + `>` +
		pattern + `)(?P<` + linkifierAfter + `>$|[^\pL\pN])`)
	if err != nil {
		fail.Pattern = err.(*PatternError)
		return nil, &fail
	}
	l := &Linkifier{re: prepared, template: template}
	for i, name := range prepared.names {
		if name == linkifierActual {
			l.actual = i
		}
	}
	return l, nil
}

// TemplateVariables is a URL template's variable names, each once, in
// the order they first appear; false for one that is not a template.
func TemplateVariables(urlTemplate string) ([]string, bool) {
	parts, ok := parseTemplate(urlTemplate)
	if !ok {
		return nil, false
	}
	var names []string
	for _, p := range parts {
		for _, v := range p.vars {
			if !slices.Contains(names, v.name) {
				names = append(names, v.name)
			}
		}
	}
	return names, true
}

// smallestMissing is the smallest of names that have lacks (Python's
// min over the set difference), "" when none.
func smallestMissing(names, have map[string]bool) string {
	var missing []string
	for name := range names {
		if !have[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	sort.Strings(missing)
	return missing[0]
}

// linkifierPattern is a linkifier as an inline pattern.
func linkifierPattern(l *Linkifier) inlinePattern {
	return inlinePattern{name: "linkifier", newStyle: true, resumes: true,
		find: func(in *inliner, data string, from int) (patternMatch, bool) {
			if in.linkified >= MaxLinkified {
				return patternMatch{}, false
			}
			caps, ok := l.re.search(data, from, &in.linkifyBudget)
			if !ok {
				return patternMatch{}, false
			}
			return patternMatch{start: caps[0], end: caps[1], caps: caps}, true
		},
		handle: func(in *inliner, data string, m patternMatch) (inlineNode, int, int, bool) {
			values := map[string]string{}
			for i, name := range l.re.names {
				if name != "" && m.caps[2*i] >= 0 {
					values[name] = data[m.caps[2*i]:m.caps[2*i+1]]
				}
			}
			start, end := m.caps[2*l.actual], m.caps[2*l.actual+1]
			href, ok := sanitizeURL(expandTemplate(l.template, values))
			if !ok {
				return inlineNode{}, 0, 0, false
			}
			a := &mdElement{tag: "a", text: data[start:end], atomic: true}
			a.set("href", in.r.relativeToRealm(href))
			in.linkified++
			return inlineNode{el: a}, start, end, true
		}}
}

// ---- RFC 6570 URL templates, as Python's uri_template reads them ----

// templatePart is a literal, or an expression: its operator and variables.
type templatePart struct {
	literal string
	op      byte // 0 for a literal; ' ' for a simple expression
	vars    []templateVar
}

type templateVar struct {
	name    string
	prefix  int // :n, 0 for none
	explode bool
}

// parseTemplate reads a URL template: literals and {expressions} of
// Level 4 (an operator of + # . / ; ? &, variables with a :prefix or
// an * explode), false for one that is not a template.
func parseTemplate(t string) ([]templatePart, bool) {
	var parts []templatePart
	for t != "" {
		open := strings.IndexAny(t, "{}")
		if open < 0 {
			parts = append(parts, templatePart{literal: t})
			break
		}
		if t[open] == '}' {
			return nil, false
		}
		if open > 0 {
			parts = append(parts, templatePart{literal: t[:open]})
		}
		end := strings.IndexByte(t[open:], '}')
		if end < 0 {
			return nil, false
		}
		expr := t[open+1 : open+end]
		t = t[open+end+1:]
		part := templatePart{op: ' '}
		if expr != "" && strings.IndexByte("+#./;?&", expr[0]) >= 0 {
			part.op, expr = expr[0], expr[1:]
		} else if expr != "" && strings.IndexByte("=,!@|", expr[0]) >= 0 {
			return nil, false // reserved for future extensions
		}
		for _, spec := range strings.Split(expr, ",") {
			v := templateVar{name: spec}
			if name, ok := strings.CutSuffix(spec, "*"); ok {
				v.name, v.explode = name, true
			} else if name, length, ok := strings.Cut(spec, ":"); ok {
				n := 0
				if length == "" || len(length) > 4 || length[0] == '0' {
					return nil, false
				}
				for _, c := range []byte(length) {
					if c < '0' || c > '9' {
						return nil, false
					}
					n = n*10 + int(c-'0')
				}
				v.name, v.prefix = name, n
			}
			if !validVarName(v.name) {
				return nil, false
			}
			part.vars = append(part.vars, v)
		}
		parts = append(parts, part)
	}
	return parts, true
}

// validVarName is RFC 6570's varname: varchars (ALPHA, DIGIT, _ and
// pct-encoded triplets) joined by single dots.
func validVarName(name string) bool {
	if name == "" || name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.':
		case c == '%' && i+2 < len(name) && isHex(name[i+1]) && isHex(name[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// expandTemplate expands a template with string values (a variable
// without one is undefined, and left out, as RFC 6570 says).
func expandTemplate(parts []templatePart, values map[string]string) string {
	var b strings.Builder
	for _, p := range parts {
		if p.op == 0 {
			b.WriteString(p.literal)
			continue
		}
		first, sep, named, ifEmpty, reserved := "", ",", false, "", false
		switch p.op {
		case '+':
			reserved = true
		case '#':
			first, reserved = "#", true
		case '.':
			first, sep = ".", "."
		case '/':
			first, sep = "/", "/"
		case ';':
			first, sep, named = ";", ";", true
		case '?':
			first, sep, named, ifEmpty = "?", "&", true, "="
		case '&':
			first, sep, named, ifEmpty = "&", "&", true, "="
		}
		defined := 0
		for _, v := range p.vars {
			value, ok := values[v.name]
			if !ok {
				continue
			}
			if defined == 0 {
				b.WriteString(first)
			} else {
				b.WriteString(sep)
			}
			defined++
			if v.prefix > 0 {
				cut, runes := 0, 0
				for cut < len(value) && runes < v.prefix {
					_, n := utf8.DecodeRuneInString(value[cut:])
					cut, runes = cut+n, runes+1
				}
				value = value[:cut]
			}
			if named {
				b.WriteString(v.name)
				if value == "" {
					b.WriteString(ifEmpty)
					continue
				}
				b.WriteByte('=')
			}
			pctEncode(&b, value, reserved)
		}
	}
	return b.String()
}

// pctEncode writes value with every byte outside the unreserved set
// (and, for + and #, the reserved set and pct-encoded triplets)
// percent-encoded, in upper-case hex.
func pctEncode(b *strings.Builder, value string, reserved bool) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(value); i++ {
		c := value[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("-._~", c) >= 0:
			b.WriteByte(c)
		case reserved && strings.IndexByte(":/?#[]@!$&'()*+,;=", c) >= 0:
			b.WriteByte(c)
		case reserved && c == '%' && i+2 < len(value) && isHex(value[i+1]) && isHex(value[i+2]):
			b.WriteString(value[i : i+3])
			i += 2
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
}
