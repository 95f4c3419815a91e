package push

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"zulite/internal/markdown"
)

// The walker (renderedText) is held to what the push text was when it
// was read from golang.org/x/net/html's HTML5 parse of the rendering:
// referencePushContent is that code, kept here (the binary no longer
// links the parser; the tests may).

// referencePushContent is pushContent as it read the rendering with the
// HTML5 parser.
func referencePushContent(rendered, source string) string {
	if rendered == "" {
		return source
	}
	nodes, err := html.ParseFragment(strings.NewReader(rendered), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
	if err != nil {
		return source
	}
	var b strings.Builder
	for _, n := range nodes {
		referencePushText(&b, n)
	}
	return b.String()
}

func referencePushText(b *strings.Builder, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		b.WriteString(n.Data)
		return
	case html.ElementNode:
	default:
		return
	}
	attr := func(name string) string {
		for _, a := range n.Attr {
			if a.Key == name {
				return a.Val
			}
		}
		return ""
	}
	if class := attr("class"); strings.Contains(class, "emoji") {
		for _, c := range strings.Fields(class) {
			if code, ok := strings.CutPrefix(c, "emoji-"); ok {
				if s, ok := emojiFromCode(code); ok {
					b.WriteString(s)
					return
				}
			}
		}
	}
	switch n.Data {
	case "img":
		b.WriteString(attr("alt"))
		return
	case "blockquote":
		var inner strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			referencePushText(&inner, c)
		}
		for _, line := range strings.Split(inner.String(), "\n") {
			if line != "" {
				b.WriteString("> " + line + "\n")
			}
		}
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		referencePushText(b, c)
	}
}

// wholePushContent is pushContent read to the end.
func wholePushContent(rendered, source string) string {
	if rendered == "" {
		return source
	}
	if text, ok := renderedText(rendered, -1); ok {
		return text
	}
	return source
}

// sameAsParser fails the test when the walker reads rendered otherwise
// than the HTML5 parser did: the whole push text, and what a push shows
// of it (pushContent stops reading past that).
func sameAsParser(t *testing.T, what, rendered string) bool {
	t.Helper()
	const source = "(the source)"
	want := referencePushContent(rendered, source)
	if got := wholePushContent(rendered, source); got != want {
		t.Errorf("%s: pushContent(%q):\ngot  %q\nwant %q (the HTML5 parser's reading)", what, rendered, got, want)
		return false
	}
	got, gotCut := truncatePushContent(pushContent(rendered, source))
	want, wantCut := truncatePushContent(want)
	if got != want || gotCut != wantCut {
		t.Errorf("%s: shown of %q:\ngot  %q, truncated %v\nwant %q, %v (the HTML5 parser's reading)", what, rendered, got, gotCut, want, wantCut)
		return false
	}
	return true
}

// pushTestResolver names two users and two channels, so that renderings
// hold mentions and channel links.
type pushTestResolver struct{}

func (pushTestResolver) Users(map[string]bool, map[uint64]bool) ([]markdown.User, error) {
	return []markdown.User{{ID: 1, FullName: "Alice", Active: true}, {ID: 2, FullName: "Bob <b>&amp;", Active: true}}, nil
}

func (pushTestResolver) ChannelID(name string) (uint64, bool) {
	id, ok := map[string]uint64{"general": 3, `a"b<c&d`: 4}[name]
	return id, ok
}

func (pushTestResolver) TopicStart(uint64, string) (uint64, bool) { return 9, true }

func renderForPush(t testing.TB, content string) string {
	t.Helper()
	res, err := markdown.Render(content, testRealm.URL, pushTestResolver{})
	if err != nil {
		t.Fatalf("rendering %q: %v", content, err)
	}
	return res.HTML
}

// TestPushContent_SameAsHTML5ParserOnZulipsFixtures reads every
// rendering of Zulip's Markdown fixtures as the HTML5 parser did: Zulip's
// own (as an import brings them) and ours of the same input.
func TestPushContent_SameAsHTML5ParserOnZulipsFixtures(t *testing.T) {
	raw, err := os.ReadFile("../markdown/testdata/zulip_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases struct {
		Regular []struct {
			Name     string `json:"name"`
			Input    string `json:"input"`
			Expected string `json:"expected_output"`
		} `json:"regular_tests"`
		Linkify [][3]string `json:"linkify_tests"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, c := range cases.Regular {
		sameAsParser(t, c.Name+", Zulip's rendering", c.Expected)
		sameAsParser(t, c.Name+", ours", renderForPush(t, c.Input))
		compared += 2
	}
	for _, c := range cases.Linkify {
		sameAsParser(t, "linkify "+c[0]+", Zulip's rendering", strings.Replace(c[1], "%s", `<a href="`+c[2]+`">`+c[2]+`</a>`, 1))
		sameAsParser(t, "linkify "+c[0]+", ours", renderForPush(t, c[0]))
		compared += 2
	}
	if compared < 200 {
		t.Errorf("compared %d renderings, want the fixtures' (at least 200)", compared)
	}
}

// TestPushContent_SameAsHTML5ParserOnEdgeCases reads what a careful
// reader of HTML must get right as the HTML5 parser did: character
// references in text and attributes, every way of quoting an
// attribute, void elements, end tags that match nothing or close more
// than their element, comments, a "<" that starts no tag, and HTML the
// input ends inside.
func TestPushContent_SameAsHTML5ParserOnEdgeCases(t *testing.T) {
	for _, rendered := range []string{
		// Character references in text.
		"<p>&amp; &lt; &gt; &quot; &#39; &apos; &nbsp; &#x1f600; &#X1F600; &#128512; &copy &copyx &notin &notin; &notit;</p>",
		"&amp &ampx &amp= &AMP; &Amp; &; & &# &#; &#x; &#xg; &#1 &#1a &#12 &#x1 &#0; &#128; &#159; &#xD800; &#x110000; &#4294967361; &#99999999999999999999;",
		"&nLt; &nGt; &nLtv; &fjlig; &semi; &NotEqualTilde; &CounterClockwiseContourIntegral; &CounterClockwiseContourIntegralx; &amp;amp;",
		"a &", "a &#", "a &#x", "&", "&&&amp;&&", "x&lt", "x&lt;y",
		// Attributes: quoted either way, unquoted, bare, repeated, cased.
		`<img alt='single "quoted"' src=x>`, `<img alt="double 'quoted'">`, `<img alt=unquoted/>`, `<img src=x alt=a&amp;b>`,
		`<img alt>`, `<img alt=>`, `<img alt = "spaced" >`, `<img ALT="upper">`, `<IMG alt="upper tag">`, `<img alt="first" alt="second">`,
		`<img alt="a&ampx b&amp=c d&amp e&notin f&notin; g&#39 h&#x41;i &nLt; &fjlig; &copy=">`, `<img alt="&amp">`, `<img alt="&">`,
		`<img/alt="after a slash">`, `<img =alt="x" alt="y">`, `<img alt="line\r\nbreak\rs">`, "<img alt=\"nul\x00\">", `<img a=1 b='2' c alt="&lt;&gt;">`,
		`<img alt="a>b">`, `<img alt='>'>`, `<img alt=">"/>`, `<img alt=a>b`,
		// Emoji.
		`<span class="emoji emoji-1f419">:octopus:</span>`, `<span class="emoji emoji-1f1fa-1f1f8">:us:</span>`, `<span class="emoji emoji-zz">:zz:</span>`,
		`<span class="emoji">:none:</span>`, `<span class="emoji-1f419">no emoji class</span>`, `<span class="xemojix emoji-1f600">contains emoji</span>`,
		`<span class="emoji emoji-110000">too big</span>`, `<span class="emoji emoji-d800">surrogate</span>`, `<span class="emoji emoji-1f600 emoji-1f601">two</span>`,
		`<span class='emoji emoji-1f600'>single</span> <span class=emoji>unquoted</span>`, `<SPAN CLASS="EMOJI EMOJI-1F600">cased</SPAN>`,
		`<span class="emoji emoji-1f600"><b>inner</b><blockquote>q</blockquote><img alt="i"></span>after`,
		`<img alt=":zulip:" class="emoji" src="/static/zulip.png">`, `<img alt=":x:" class="emoji emoji-1f600">`, `<span class="emoji emoji-1f600" class="x">dup</span>`,
		`<span class="emoji&#32;emoji-1f600">referenced space</span>`, "<span class=\"emoji\temoji-1f600\">tab</span>",
		// Images.
		`<p>see <img alt="a cat &amp; a dog" src="cat.png"></p>`, `<img>`, `<img alt="">`, `<image alt="image is img">`, `<img alt="x">text after</img>more`,
		// Blockquotes.
		"<blockquote>\n<p>first\nsecond</p>\n</blockquote>\n<p>answer</p>",
		"<blockquote><p>outer</p><blockquote><p>inner\nlines</p></blockquote><p>tail</p></blockquote>after",
		"<blockquote>a<blockquote>b<blockquote>c</blockquote>d</blockquote>e</blockquote>",
		"x<blockquote>\n\n\n</blockquote>y", "<blockquote></blockquote>", "<blockquote>unclosed\nquote", "<blockquote><blockquote>two unclosed",
		"<p>a</p><blockquote><p>b</p></blockquote></blockquote></blockquote>c",
		"<blockquote>\r\ncr\rlf\r\n</blockquote>", "<blockquote>&#10;&#13;refs&#10;</blockquote>",
		// Void elements and "/>".
		"a<br>b<br/>c<br />d", "<hr>x<hr/>y", "<wbr>a<input>b<area>c<base>d<col>e<embed>f<link>g<meta>h<source>i<track>j<keygen>k<param>l",
		`<br class="emoji emoji-1f600">after`, `<hr class="emoji emoji-1f600">after`, `<input class="emoji emoji-1f600">after`, `<span/>inside the span`, `<blockquote/>inside the quote`, `<img/>`,
		// End tags.
		"<p>a</span>b</p>c", "<b>x</i>y</b>z", "<span><em>a</span>b</em>c", "</blockquote>stray end", "</p>x", "</br>x", "</img>x", "</ p>x", "</>x",
		"<div><span>a</div>b", "</html>a</body>b", "<body>x</body>", `<body class="emoji emoji-1f600">body</body>`, `<html class="emoji emoji-1f600">html</html>`,
		// Comments and doctypes.
		"a<!-- c -->b", "a<!---->b", "a<!-->b", "a<!--->b", "a<!-- -- -->b", "a<!-- --!>b", "a<!-- --!-->b", "a<!-- --!x-->b", "a<!-- unclosed",
		"a<!x>b", "a<?php x ?>b", "a<!DOCTYPE html>b", "a<!doctype>b", "a<!DOCTYP", "a<!", "a<!-", "a<!>b", "a<![CDATA[x]]>b",
		// A "<" that starts no tag.
		"a < b", "a <3 b", "a <", "a </", "a <<b>c</b>", "1<2 && 3>2", "a <= b", "<>", "< p>", "<1>",
		// The input ends inside a tag.
		"text<b", "text<b class", "text<img alt=\"unclosed", "text<img alt='x'", "text</b", "text<b>bold", "<p>a<em>b",
		// <pre>'s first newline.
		"<pre>\nx</pre>", "<pre>\n\nx</pre>", "<pre>\r\nx</pre>", "<pre>&#10;x</pre>", "<pre>&#13;&#10;x</pre>", "<pre><code>\nx</code></pre>",
		"<pre><!-- c -->\nx</pre>", "<pre></x>\nx</pre>", "<pre>\x00\nx</pre>", "<listing>\nx</listing>", "<pre></p>\nx</pre>", "<pre></br>\nx</pre>",
		"<pre><!DOCTYPE x>\nx</pre>", "<pre>\n</pre>",
		// NUL and newlines.
		"a\x00b", "<p>\x00</p>", "a\r\nb\rc", "<t\x00g>x</t\x00g>", "<img alt=\"\x00\">",
		// Invalid UTF-8 and non-ASCII names.
		"\xff\xfe<p>\xc3</p>", "<pÄ>x</pä>y", "<İmg alt=x>",
	} {
		sameAsParser(t, "edge case", rendered)
	}
}

// TestPushContent_SameAsHTML5ParserOnEveryEntity decodes every name of
// HTML's table, in text and in an attribute, whole, cut short of its
// ";", and followed by what changes its reading, as the parser did.
func TestPushContent_SameAsHTML5ParserOnEveryEntity(t *testing.T) {
	raw, err := os.ReadFile("testdata/html_entity_names.txt")
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Fields(string(raw))
	if len(names) != 2231 {
		t.Fatalf("got %d names, want HTML's 2231", len(names))
	}
	failures := 0
	for _, name := range names {
		for _, n := range []string{name, strings.TrimSuffix(name, ";")} {
			for _, tail := range []string{"", "x", "=", ";", "1", " "} {
				ref := "&" + n + tail
				if !sameAsParser(t, "text", "a"+ref) || !sameAsParser(t, "attribute", `<img alt="`+ref+`">`) {
					if failures++; failures > 20 {
						t.Fatal("too many failures")
					}
				}
			}
		}
	}
}

// TestPushContent_SameAsHTML5ParserAtItsDepthBound reads HTML nested to
// the parser's bound as it did, and HTML nested deeper as the message's
// source, as the parser refused it.
func TestPushContent_SameAsHTML5ParserAtItsDepthBound(t *testing.T) {
	for _, depth := range []int{maxOpenElements - 2, maxOpenElements - 1, maxOpenElements, maxOpenElements + 1} {
		spans := strings.Repeat("<span>", depth)
		quotes := strings.Repeat("<blockquote>", depth)
		for _, rendered := range []string{
			spans + "x",
			spans[len("<span>"):] + `<img alt="at the bound">`,
			spans + `<img alt="past the bound">`,
			quotes + "deep\nquote" + strings.Repeat("</blockquote>", depth) + "after",
			strings.Repeat("<span>a</span>", 2*depth),
			spans[len("<span>"):] + "</p>x",
			spans[len("<span>"):] + "</br>x",
		} {
			sameAsParser(t, fmt.Sprintf("depth %d", depth), rendered)
		}
	}
}

// TestPushContent_ShownSameAsHTML5ParserPastItsLength shows the first
// 200 characters of a long text as the HTML5 parser's reading did,
// though pushContent reads no further than it needs: wherever the 200th
// character falls (in text, a quote's "> ", an emoji of two code
// points, among newlines, in invalid UTF-8), and however deep quotes
// nest around it.
func TestPushContent_ShownSameAsHTML5ParserPastItsLength(t *testing.T) {
	long := strings.Repeat("abcdéfghi\n", 30)
	for _, rendered := range []string{
		long,
		"<p>" + long + "</p>",
		strings.Repeat("x", 199) + `<span class="emoji emoji-1f1fa-1f1f8">:us:</span>tail`,
		strings.Repeat("x", 200) + "\n\n\ny", strings.Repeat("x", 201), strings.Repeat("x", 200), strings.Repeat("\n", 500) + strings.Repeat("y", 300),
		strings.Repeat("é", 150) + "\xff\xfe" + strings.Repeat("\xc3", 100),
		"<blockquote>" + long + "</blockquote>",
		"<blockquote>" + strings.Repeat("x", 199) + "</blockquote>", "<blockquote>" + strings.Repeat("x", 198) + "\ny</blockquote>",
		"<blockquote>" + strings.Repeat("\n", 1000) + strings.Repeat("y", 250) + "\nz</blockquote>",
		strings.Repeat("<blockquote>", 50) + strings.Repeat("line\n", 1000) + strings.Repeat("</blockquote>after\n", 50),
		strings.Repeat("<blockquote>a\n", 150) + strings.Repeat("</blockquote>b\n", 150),
		strings.Repeat("<blockquote>", 3) + strings.Repeat("x", 197) + "</blockquote>" + strings.Repeat("y", 10) + "</blockquote>",
		"<blockquote>" + strings.Repeat("x", 300) + `<img alt="past">` + "</blockquote>" + long,
		strings.Repeat(`<span class="emoji emoji-1f600">:grinning:</span>`, 250),
		strings.Repeat(`<img alt="ab&amp;">`, 100),
	} {
		sameAsParser(t, "long", rendered)
	}
}

// FuzzPushContent holds the walker to the HTML5 parser's reading of our
// renderer's output: the fuzzed input is a message's Markdown, rendered
// by internal/markdown as the server renders it.
//
// go test -run XXX -fuzz '^FuzzPushContent$' -fuzztime 100000x ./internal/push
func FuzzPushContent(f *testing.F) {
	for _, s := range []string{
		"hi :octopus: :zulip: :flag_united_states: **bold** *it* ~~del~~ `code & <code>`",
		"> quote @**Alice** @**all**\n> > nested\n\n* a\n  * b\n1. x\n\n# h\n\n| a | b |\n|---|---|\n| 1 | 2 |",
		"```quote\nquoted **fence**\n```quote\ninner\n```\n```\n\n```spoiler header\nhidden\n```\n\n```py\n\n<code>\n```",
		"&amp; &lt; &#39; &#x1f600; &nbsp; &notin &copy <b> <!-- c --> < 3 </p>",
		"[link](http://x.com \"title & <t>\") https://y.org/?a=1&b=2 ![img](http://i.png) #**general** #**general>lunch** @**Bob <b>&amp;**",
		"    indented\n    code\n\n---\n\n2. two\n3. three\n\n\ttab\r\nline\rend\x00nul",
	} {
		f.Add(s)
	}
	const maxMessageLength = 10000 // the server's bound: longer messages are refused before rendering
	f.Fuzz(func(t *testing.T, content string) {
		if len(content) > maxMessageLength {
			return
		}
		sameAsParser(t, fmt.Sprintf("Markdown %q", content), renderForPush(t, content))
	})
}

// BenchmarkPushContent reads a long rendering of quotes, emoji, code
// and tables, with the walker and with the HTML5 parser it replaced.
func BenchmarkPushContent(b *testing.B) {
	rendered := renderForPush(b, strings.Repeat("> quote :octopus: **bold** @**Alice**\n> > nested\n\nplain `code` and [a link](http://x.com)\n\n```\ncode\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n", 40))
	b.Run("walker", func(b *testing.B) {
		b.SetBytes(int64(len(rendered)))
		for b.Loop() {
			pushContent(rendered, "")
		}
	})
	b.Run("HTML5 parser", func(b *testing.B) {
		b.SetBytes(int64(len(rendered)))
		for b.Loop() {
			referencePushContent(rendered, "")
		}
	})
	// Quotes as deep as the parser read, around 50,000 lines: their whole
	// text is 50 MB, and reading it whole copies each line at every depth.
	deep := strings.Repeat("<blockquote>", maxOpenElements-1) + strings.Repeat("a\n", 50000)
	b.Run("walker, deep quotes", func(b *testing.B) {
		b.SetBytes(int64(len(deep)))
		for b.Loop() {
			pushContent(deep, "")
		}
	})
}
