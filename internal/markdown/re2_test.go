package markdown

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// re2Cases are patterns and texts on which the matcher must agree with
// Go's regexp (the same syntax, the same leftmost-first semantics).
var re2Cases = []struct{ pattern, text string }{
	{`#(?P<id>[0-9]+)`, "see #123 and #45"},
	{`a|ab`, "xab"},
	{`(a+)(b*)`, "caaabbbd"},
	{`(a*?)b`, "aaab"},
	{`(?i)zulip`, "I like ZuLiP"},
	{`^abc`, "abcabc"},
	{`abc$`, "abcabc"},
	{`\bword\b`, "a word, swordfish"},
	{`\Bor\B`, "word or"},
	{`(x)?y`, "zy"},
	{`[^\pL\pN]`, "ab!c"},
	{`\pZ`, "a\u00a0b"},
	{`(?P<a>\d+)-(?P<b>\d+)`, "call 555-1234 now"},
	{`(a|b)*c`, "ababc"},
	{`(a*)*`, "b"},
	{`(a*)+$`, "aab"},
	{`.`, "\n"},
	{`x{2,3}`, "xxxxx"},
	{`(?:ab){2}`, "abababab"},
	{`[[:alpha:]]+`, "123abc456"},
	{`\x{1F600}`, "smile 😀!"},
	{`(é+)`, "café éé"},
	{`a`, "\xffa"},
	{``, "abc"},
	{`(?s).+`, "a\nb"},
	{`(?m)^b`, "a\nb"},
	{`(?i:ab)c`, "xABc ABC"},
	{`[\p{Lu}\d]+`, "abC9Dx"},
	{`\Qa.b\E`, "axb a.b"},
	{`a{2,}?`, "aaaa"},
	{`[^\PL]+`, "12ab3"},
	{`(?U)a+`, "aaa"},
	{`a(?i)b|c`, "C aB"},
	{`\x{263a}|\x41`, "zA☺"},
	{`[a-c-]+`, "x-ab-"},
	{`[]a]+`, "]a]"},
	{`(?s:.)`, "\n"},
	{`\pN\PN`, "1a"},
	{`(a)|(b)`, "b"},
	{`((a)|b)+`, "ab"},
}

// TestRE2_AgreesWithGoRegexp: every submatch of every case is Go's.
func TestRE2_AgreesWithGoRegexp(t *testing.T) {
	for _, c := range re2Cases {
		compareWithRegexp(t, c.pattern, c.text)
	}
}

func compareWithRegexp(t *testing.T, pattern, text string) {
	t.Helper()
	want := regexp.MustCompile(pattern).FindStringSubmatchIndex(text)
	re, err := compileRE2(pattern)
	if err != nil {
		t.Fatalf("compile %q: %v", pattern, err)
	}
	budget := LinkifyBudget
	got, ok := re.search(text, 0, &budget)
	if !ok {
		got = nil
	}
	if !slices.Equal(got, want) {
		t.Errorf("%q on %q: got %v, want %v", pattern, text, got, want)
	}
}

// TestRE2_SearchFromKeepsContext: a search from an offset sees the text
// before it, as RE2's Match with startpos: ^ holds only at the start,
// \b looks at the rune before.
func TestRE2_SearchFromKeepsContext(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		from          int
		want          []int
	}{
		{`^a`, "aa", 1, nil},
		{`\ba`, "ba a", 1, []int{3, 4}},
		{`a`, "aa", 1, []int{1, 2}},
	} {
		re, _ := compileRE2(c.pattern)
		budget := LinkifyBudget
		got, _ := re.search(c.text, c.from, &budget)
		if !slices.Equal(got, c.want) {
			t.Errorf("%q on %q from %d: got %v, want %v", c.pattern, c.text, c.from, got, c.want)
		}
	}
}

// TestRE2_IsLinearOnBacktrackingKillers: patterns that take a
// backtracking matcher exponential time finish at once, and the budget
// stops a search that would pass it.
func TestRE2_IsLinearOnBacktrackingKillers(t *testing.T) {
	text := strings.Repeat("a", 5000) + "!"
	start := time.Now()
	for _, p := range []string{`(a+)+$`, `(a|aa)+b`, `(a*)*b`, `(x+x+)+y`} {
		re, err := compileRE2(p)
		if err != nil {
			t.Fatal(err)
		}
		budget := LinkifyBudget
		re.search(text, 0, &budget)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("four searches took %v", d)
	}
	re, _ := compileRE2(`(a|b|c|d|e)*z`)
	budget := 1000
	if _, ok := re.search(strings.Repeat("abcde", 1000), 0, &budget); ok || budget != 0 {
		t.Errorf("a search past its budget: ok %v, budget left %d; want false, 0", ok, budget)
	}
}

// TestRE2_BoundsAndRE2Words: a pattern too long or too large is
// refused, and syntax errors are worded as RE2 words them.
func TestRE2_BoundsAndRE2Words(t *testing.T) {
	for _, c := range []struct{ pattern, want string }{
		{strings.Repeat("a", MaxPatternBytes+1), "pattern too large - compile failed"},
		{strings.Repeat(`[a-z]{1000}`, 6), "pattern too large - compile failed"},
		{`a{1001}`, "bad repetition operator: {1001}"},
		{`#(?P<id>[0-9]+`, "missing ): #(?P<id>[0-9]+"},
		{`[a`, "missing ]: [a"},
		{`a**`, "bad repetition operator: **"},
		{`\8`, "invalid escape sequence: \\8"},
		{`(?P<a-b>x)`, "invalid named capture group: (?P<a-b>"},
	} {
		_, err := compileRE2(c.pattern)
		if err == nil || err.Error() != c.want {
			t.Errorf("compile %.40q: got %v, want %q", c.pattern, err, c.want)
		}
	}
}

// FuzzRE2 holds the matcher to Go's regexp on any pattern it reads (Go's
// must read it too) and any text: the same match and submatches, or the
// budget ran out.
// Fuzz target: go test -run XXX -fuzz FuzzRE2 -fuzztime 10000x ./internal/markdown
func FuzzRE2(f *testing.F) {
	for _, c := range re2Cases {
		f.Add(c.pattern, c.text)
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if len(pattern) > 200 || len(text) > 2000 {
			return
		}
		re, err := compileRE2(pattern)
		goRE, goErr := regexp.Compile(pattern)
		if err != nil {
			return // refused: past zulite's bounds, a Unicode script, or what RE2 refuses and Go reads
		}
		if goErr != nil {
			t.Fatalf("%q: read, but Go's regexp refuses it: %v", pattern, goErr)
		}
		budget := LinkifyBudget
		got, ok := re.search(text, 0, &budget)
		if !ok && budget == 0 {
			return
		}
		if !ok {
			got = nil
		}
		if want := goRE.FindStringSubmatchIndex(text); !slices.Equal(got, want) {
			t.Fatalf("%q on %q: got %v, want %v", pattern, text, got, want)
		}
	})
}
