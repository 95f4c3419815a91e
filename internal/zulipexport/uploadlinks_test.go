package zulipexport

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// uploadLinks is the upload-link pattern written out (regexp would cost
// the binary 240 KB): it must replace what Go's regexp replaced, on
// texts built from what the pattern cares about.
func TestUploadLinks_ReplaceAsTheRegexpDid(t *testing.T) {
	re := regexp.MustCompile(`/user_uploads/([0-9]+/[^\s()\[\]<>"'` + "`" + `]+)`)
	pieces := []string{"/user_uploads/", "/user_uploads/2/", "2", "15", "/", "a", "x.png", " ", "\n", "\v", "(", ")", "[", "]", "<", ">", "'", "\"", "`", ".", "é", "\xff"}
	r := rand.New(rand.NewPCG(9, 4))
	texts := []string{"", "/user_uploads/", "/user_uploads/2/a", "/user_uploads//a", "/user_uploads/2/", "see /user_uploads/2/ab/c.png) and /user_uploads/3/x"}
	for range 200000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	mark := func(link string) string { return "<" + strings.ToUpper(link) + ">" }
	for _, text := range texts {
		if got, want := uploadLinks(text, mark), re.ReplaceAllStringFunc(text, mark); got != want {
			t.Fatalf("uploadLinks(%q) = %q, want %q", text, got, want)
		}
	}
}
