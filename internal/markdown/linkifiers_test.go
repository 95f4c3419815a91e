package markdown

import (
	"strings"
	"testing"
)

// TestExpandTemplate_RFC6570Examples: Level 1 to 4 expansions of string
// values, as RFC 6570's examples give them (var "value", hello
// "Hello World!", path "/foo/bar", empty "", undef not set).
func TestExpandTemplate_RFC6570Examples(t *testing.T) {
	values := map[string]string{"var": "value", "hello": "Hello World!", "path": "/foo/bar", "empty": "", "x": "1024", "y": "768"}
	for _, c := range []struct{ template, want string }{
		{"{var}", "value"},
		{"{hello}", "Hello%20World%21"},
		{"{+hello}", "Hello%20World!"},
		{"{+path}/here", "/foo/bar/here"},
		{"here?ref={+path}", "here?ref=/foo/bar"},
		{"X{#var}", "X#value"},
		{"X{#hello}", "X#Hello%20World!"},
		{"map?{x,y}", "map?1024,768"},
		{"{x,hello,y}", "1024,Hello%20World%21,768"},
		{"{+x,hello,y}", "1024,Hello%20World!,768"},
		{"{+path,x}/here", "/foo/bar,1024/here"},
		{"X{.var}", "X.value"},
		{"X{.x,y}", "X.1024.768"},
		{"{/var}", "/value"},
		{"{/var,x}/here", "/value/1024/here"},
		{"{;x,y}", ";x=1024;y=768"},
		{"{;x,y,empty}", ";x=1024;y=768;empty"},
		{"{?x,y}", "?x=1024&y=768"},
		{"{?x,y,empty}", "?x=1024&y=768&empty="},
		{"?fixed=yes{&x}", "?fixed=yes&x=1024"},
		{"{&x,y,empty}", "&x=1024&y=768&empty="},
		{"{var:3}", "val"},
		{"{var:30}", "value"},
		{"{undef}", ""},
		{"{?undef}", ""},
		{"{/undef,var}", "/value"},
		{"{var*}", "value"},
	} {
		parts, ok := parseTemplate(c.template)
		if !ok {
			t.Errorf("%q: not read as a template", c.template)
			continue
		}
		if got := expandTemplate(parts, values); got != c.want {
			t.Errorf("%q: got %q, want %q", c.template, got, c.want)
		}
	}
	for _, bad := range []string{"{", "}", "a{b", "{}", "{=x}", "{x:0}", "{x:10000}", "{a b}", "{x.}", "{%zz}"} {
		if _, ok := parseTemplate(bad); ok {
			t.Errorf("%q: read as a template, want refused", bad)
		}
	}
}

// TestCompileLinkifier_ChecksAsZulipsClean: the groups and the
// template's variables must be the same names.
func TestCompileLinkifier_ChecksAsZulipsClean(t *testing.T) {
	for _, c := range []struct {
		pattern, template string
		want              LinkifierError
	}{
		{`#(?P<id>\d+)`, "https://x/{id}", LinkifierError{}},
		{`#(?P<id>\d+)`, "https://x/{id", LinkifierError{BadTemplate: true}},
		{`#(?P<id>\d+`, "https://x/{id", LinkifierError{BadTemplate: true, Pattern: &PatternError{`missing ): #(?P<id>\d+`}}},
		{`#(?P<id>\d+)`, "https://x/{id}/{b}/{a}", LinkifierError{MissingInPattern: "a"}},
		{`#(?P<id>\d+)(?P<z>x)(?P<y>y)`, "https://x/{id}", LinkifierError{MissingInTemplate: "y"}},
	} {
		_, err := CompileLinkifier(c.pattern, c.template)
		var got LinkifierError
		if err != nil {
			got = *err.(*LinkifierError)
		}
		if got.BadTemplate != c.want.BadTemplate || got.MissingInPattern != c.want.MissingInPattern || got.MissingInTemplate != c.want.MissingInTemplate ||
			(got.Pattern == nil) != (c.want.Pattern == nil) || got.Pattern != nil && got.Pattern.Text != c.want.Pattern.Text {
			t.Errorf("%q %q: got %+v, want %+v", c.pattern, c.template, got, c.want)
		}
	}
}

// TestLinkifiers_BoundedEvenWhenMatchingWhatTheyMade: a pattern that
// matches its own links' placeholders stops at MaxLinkified, and many
// matches in one message are all made up to it.
func TestLinkifiers_BoundedEvenWhenMatchingWhatTheyMade(t *testing.T) {
	loop, err := CompileLinkifier(`(?P<x>.+)`, "https://x.test/{x}")
	if err != nil {
		t.Fatal(err)
	}
	res, err := RenderWith("anything", "", nil, Options{Linkifiers: []*Linkifier{loop}})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(res.HTML, "<a "); n == 0 || n > MaxLinkified {
		t.Errorf("a self-matching linkifier: %d links, want 1 to %d", n, MaxLinkified)
	}
	issue, _ := CompileLinkifier(`#(?P<id>\d+)`, "https://x.test/{id}")
	res, _ = RenderWith(strings.Repeat("#1 ", 1500), "", nil, Options{Linkifiers: []*Linkifier{issue}})
	if n := strings.Count(res.HTML, "<a "); n != MaxLinkified {
		t.Errorf("1,500 matches: %d links, want %d", n, MaxLinkified)
	}
}
