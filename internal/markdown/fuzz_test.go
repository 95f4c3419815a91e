package markdown

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// Fuzz target: go test -run XXX -fuzz FuzzMarkdown -fuzztime 10000x ./internal/markdown
// Seeds are in testdata/fuzz/FuzzMarkdown/ as well as below.

// maxMessageLength is the server's bound on a message (its
// maxMessageLength): longer messages are refused before rendering.
const maxMessageLength = 10000

// fuzzNow is the moment FuzzMarkdown renders at.
var fuzzNow = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// FuzzMarkdown holds the renderer to its safety contract whatever the
// message: it does not panic, and a browser reading the output (an HTML
// tokenizer) meets only the tags, attributes and class names zulite
// writes, and links only with the schemes Zulip allows.
func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{
		"**bold** *it* ~~del~~ `code` [link](http://x.com) http://y.org :smile: 😀",
		"> quote @**Alice** @**all**\n\n* a\n  * b\n1. x\n\n# h\n\n| a | b |\n|---|---|\n| 1 | 2 |",
		"```spoiler <b>\n```quote\n<i>\n```\n```\n~~~py\n<script>\n~~~",
		"[x](javascript:alert(1)) [y](JaVaScRiPt:alert(1)) [z]( java\tscript:x) [w](&#106;avascript:x) <a href=x>",
		"#**general** #**general>lunch** #**a\"b<c>t** #**general>lunch@1** @**Bob <script>|2** :zulip:",
		"[t](http://x.com \"ti\\\"tle\") [u](<http://a.b> 'q') [v](data:text/html,<script>) ![img](http://i.png)",
		"<time:Jun 5th 2017, 10:30PM> <time:<b>> <time:1496701800.5> <time:10:00 +05:30 (IST)> :) (: <3 ;)b",
		"#12 javascript:alert(1) data:x !<b>! :party: #**general** see #3, (#4)",
	} {
		f.Add(s)
	}
	in := fixedResolver{
		users:      []User{{ID: 1, FullName: "Alice", Active: true}, {ID: 2, FullName: "Bob <script>", Active: true}},
		channels:   map[string]uint64{"general": 3, `a"b<c`: 4},
		topicStart: func(uint64, string) (uint64, bool) { return 9, true }}
	// Linkifiers and custom emoji too, with templates that would make
	// unsafe links if expansion or the scheme check were wrong.
	var linkifiers []*Linkifier
	for _, l := range [][2]string{{`#(?P<id>[0-9]+)`, "https://x.test/{id}"}, {`(?P<s>[a-z]+):(?P<r>\S+)`, "{s}:{+r}"}, {`!(?P<q>.+?)!`, "https://q.test/?q={q}{&q}"}} {
		c, err := CompileLinkifier(l[0], l[1])
		if err != nil {
			f.Fatal(err)
		}
		linkifiers = append(linkifiers, c)
	}
	custom := func(name string) (string, bool) {
		return customEmojiSrc, name == "party"
	}
	f.Fuzz(func(t *testing.T, content string) {
		if len(content) > maxMessageLength {
			return
		}
		opts := Options{TranslateEmoticons: len(content)%2 == 0, Now: fuzzNow}
		if len(content)%3 == 0 {
			opts.Linkifiers, opts.RealmEmoji = linkifiers, custom
		}
		res, err := RenderWith(content, "http://zulite.test", in, opts)
		if err != nil {
			t.Fatal(err)
		}
		out := res.HTML
		if err := checkRenderedHTML(out); err != nil {
			t.Fatalf("rendering %q: %v\n%s", content, err, out)
		}
	})
}

// customEmojiSrc is the fuzz harness's custom emoji's URL, with the
// characters an unescaped attribute would break on.
const customEmojiSrc = "/user_avatars/2/emoji/images/party\"<x>.png"

// renderedAttrs are the attributes zulite's HTML may carry, by tag.
var renderedAttrs = map[string][]string{
	"p": nil, "br": nil, "strong": nil, "em": nil, "del": nil, "code": nil, "pre": nil, "blockquote": nil,
	"ul": nil, "ol": {"start"}, "li": nil, "h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
	"hr": nil, "table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": {"style"}, "td": {"style"},
	"a": {"href", "title", "class", "data-stream-id"}, "span": {"class", "data-user-id", "title", "role", "aria-label"},
	"div": {"class", "data-code-language", "aria-hidden"}, "img": {"alt", "class", "src", "title"},
	"time": {"datetime"},
}

var renderedClass = regexp.MustCompile(`^(timestamp-error|codehilite|spoiler-block|spoiler-header|spoiler-content|stream|stream-topic|message-link|topic-mention|user-mention( channel-wildcard-mention)?( silent)?|emoji( emoji-[0-9a-f]{4,6}(-[0-9a-f]{4,6})*)?)$`)

// renderedDatetime is a global time's moment, as isoformat writes it
// in UTC.
var renderedDatetime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$`)

// checkRenderedHTML reads rendered HTML as a browser's tokenizer does.
func checkRenderedHTML(out string) error {
	z := html.NewTokenizer(strings.NewReader(out))
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				return nil
			}
			return z.Err()
		case html.CommentToken, html.DoctypeToken:
			return fmt.Errorf("%v token %q", tt, z.Token().Data)
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			tok := z.Token()
			allowed, known := renderedAttrs[tok.Data]
			if !known {
				return fmt.Errorf("tag <%s>", tok.Data)
			}
			for _, a := range tok.Attr {
				if !slices.Contains(allowed, a.Key) {
					return fmt.Errorf("attribute %s on <%s>", a.Key, tok.Data)
				}
				if err := checkRenderedAttr(tok.Data, a); err != nil {
					return err
				}
			}
		}
	}
}

func checkRenderedAttr(tag string, a html.Attribute) error {
	switch a.Key {
	case "class":
		if !renderedClass.MatchString(a.Val) {
			return fmt.Errorf("class %q on <%s>", a.Val, tag)
		}
	case "href":
		// As the URL standard reads it: C0 controls and spaces around it
		// and tabs and line breaks in it are dropped.
		u := strings.TrimFunc(a.Val, func(r rune) bool { return r <= ' ' })
		u = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(u)
		if m := regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*):`).FindStringSubmatch(u); m != nil && !allowedSchemes[strings.ToLower(m[1])] {
			return fmt.Errorf("href %q", a.Val)
		}
	case "src":
		// :zulip:, or the harness's custom emoji, whose URL the resolver
		// makes hostile on purpose: the tokenizer must read back exactly
		// what it gave, escaped, never markup.
		if a.Val != "/static/generated/emoji/images/emoji/unicode/zulip.png" && a.Val != customEmojiSrc {
			return fmt.Errorf("src %q", a.Val)
		}
	case "style":
		if !slices.Contains([]string{"text-align: left;", "text-align: right;", "text-align: center;"}, a.Val) {
			return fmt.Errorf("style %q", a.Val)
		}
	case "start", "data-stream-id":
		if strings.Trim(a.Val, "0123456789") != "" && a.Key == "data-stream-id" {
			return fmt.Errorf("%s %q", a.Key, a.Val)
		}
	case "datetime":
		if !renderedDatetime.MatchString(a.Val) {
			return fmt.Errorf("datetime %q", a.Val)
		}
	case "aria-hidden":
		if a.Val != "true" {
			return fmt.Errorf("aria-hidden %q", a.Val)
		}
	}
	return nil
}
