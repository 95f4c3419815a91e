package markdown

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// hashHeaderIn is the heading pattern written out (regexp would cost
// the binary 240 KB): it must find what Go's regexp found, offsets and
// all, on blocks built from what the pattern cares about.
func TestHashHeaderIn_FindsAsTheRegexpDid(t *testing.T) {
	re := regexp.MustCompile(`(?:^|\n)(#{1,6})[` + pyWhitespace + `]((?:\\.|[^\\])*?)#*(?:\n|\z)`)
	pieces := []string{"#", "##", "######", "#######", " ", "\t", "\n", "\\", "a", "b c", "é", "\xff", "\u00a0", "\u3000", "\x1c", "\x85"}
	r := rand.New(rand.NewPCG(3, 5))
	blocks := []string{"", "#", "# a", "# a #", "# a\\", "# a\\\n## b", "\n# a", "x\n####### a\n# b", "#\nfoo", "# a\\#\n"}
	for range 200000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		blocks = append(blocks, b.String())
	}
	for _, block := range blocks {
		want := re.FindStringSubmatchIndex(block)
		got, ok := hashHeaderIn(block)
		if ok != (want != nil) || ok && [6]int(want) != got {
			t.Fatalf("hashHeaderIn(%q) = %v, %v; want %v", block, got, ok, want)
		}
	}
}
