package main

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The core's patterns are written out instead of compiled by regexp,
// which would cost the binary 240 KB. Each must answer exactly what the
// pattern answered under Go's regexp, on strings built from the
// characters the pattern cares about.

var patternPieces = []string{"/", " ", "\n", "(", ")", "0", "7", "9", "a", "f", "F", "g", "Z", "#", "|", ".", "-", "_", "\t", "\r", "\f", "\v",
	"\\", "[", "]", "<", ">", "'", "\"", "`", "$", "*", "&", "é", "\xff", "\u00a0", "/user_uploads/", "/user_uploads/2/", "2/", "1/", "Mozilla/5.0 ", "ZulipMobile/27.1 (iOS)"}

func patternInputs(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 7))
	inputs := []string{"", "#", "#abc", "#ABCDEF", "#abcd1", "#abcdef0", "abc", "a|1", "|12", "x|", "x|1a",
		"ZulipElectron/5.0 Electron", "Mozilla/5.0 (X11; Linux x86_64)", "foo bar/1 baz", "/", " ", "a\nb /c", "a/b\n c"}
	for range n {
		var b strings.Builder
		for range r.IntN(14) {
			b.WriteString(patternPieces[r.IntN(len(patternPieces))])
		}
		inputs = append(inputs, b.String())
	}
	return inputs
}

func TestPatterns_AnswerAsTheirRegexps(t *testing.T) {
	hex := regexp.MustCompile(`^#([a-fA-F0-9]{3,6})$`)
	appID := regexp.MustCompile(`^[.a-zA-Z0-9-]+$`)
	userID := regexp.MustCompile(`\|\d+$`)
	agent := regexp.MustCompile(`^([^/ ]*[^0-9/(]*)(?:/[^/ ]*)?(?:[ /].*)?$`)
	upload := regexp.MustCompile(`/user_uploads/(` + uploadRealmID + `/[A-Za-z0-9_-]{1,64}/[^\s()\[\]<>"'` + "`" + `]+)`)
	linkBreaking := regexp.MustCompile("[`>*&\\[\\]]|(\\$\\$)") // topic_link_util's invalid_stream_topic_regex
	inputs := patternInputs(1, 200000)
	inputs = append(inputs, "/user_uploads/2/"+strings.Repeat("a", 64)+"/x", "/user_uploads/2/"+strings.Repeat("a", 65)+"/x")
	for _, s := range inputs {
		if got, want := isHexColor(s), hex.MatchString(s); got != want {
			t.Fatalf("isHexColor(%q) = %v, want %v", s, got, want)
		}
		if got, want := isAppID(s), appID.MatchString(s); got != want {
			t.Fatalf("isAppID(%q) = %v, want %v", s, got, want)
		}
		if got, want := breaksLinkSyntax(s), linkBreaking.MatchString(s); got != want {
			t.Fatalf("breaksLinkSyntax(%q) = %v, want %v", s, got, want)
		}
		if got, want := endsLikeUserID(s), userID.MatchString(s); got != want {
			t.Fatalf("endsLikeUserID(%q) = %v, want %v", s, got, want)
		}
		m := agent.FindStringSubmatch(s)
		if got, ok := userAgentName(s); ok != (m != nil) || ok && got != m[1] {
			t.Fatalf("userAgentName(%q) = %q, %v; want %q", s, got, ok, m)
		}
		var want []string
		for _, m := range upload.FindAllStringSubmatch(s, -1) {
			want = append(want, m[1])
		}
		if got := uploadLinks(s); !slices.Equal(got, want) {
			t.Fatalf("uploadLinks(%q) = %q, want %q", s, got, want)
		}
	}
}
