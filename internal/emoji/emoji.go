// Package emoji is Unicode emoji, named as Zulip names them: the table
// Zulip builds its name_to_codepoint, codepoint_to_name and
// emoji_api.json from (tools/setup/emoji/emoji_names.py), generated
// into this folder by generate.py, which says where each file comes
// from. The renderer (internal/markdown), reactions, statuses and
// emoji_api.json read the one table.
//
// It imports only the standard library: never bbolt, net/http or
// package main's types.
package emoji

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// emojiTableGz is emoji.txt gzipped (generate.py writes both): 19 KB of
// the binary, where the text is 50. It is unpacked once, by the first
// call that needs the table, into the 50 KB the parsed maps point into.
//
//go:embed emoji.txt.gz
var emojiTableGz []byte

// emojiTable is emoji.txt, unpacked.
func emojiTable() string {
	zr, err := gzip.NewReader(bytes.NewReader(emojiTableGz))
	if err != nil {
		panic("emoji: embedded table: " + err.Error())
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		panic("emoji: embedded table: " + err.Error())
	}
	return string(text)
}

//go:embed emoji_property.txt
var emojiPropertyTable string

// emojiData is the parsed table.
type emojiData struct {
	nameToCode  map[string]string   // every name and alias → code
	codeToNames map[string][]string // code → canonical name, then aliases
	textFirst   map[string]bool     // codes Zulip leaves as text when typed bare
	property    [][2]rune           // ranges with the Emoji property, sorted
}

var emojiOnce = sync.OnceValue(func() *emojiData {
	d := &emojiData{nameToCode: map[string]string{}, codeToNames: map[string][]string{}, textFirst: map[string]bool{}}
	for line := range strings.Lines(emojiTable()) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		code, names := f[0], f[2:]
		d.codeToNames[code] = names
		for _, n := range names {
			d.nameToCode[n] = code
		}
		if f[1] == "t" {
			d.textFirst[code] = true
		}
	}
	for line := range strings.Lines(emojiPropertyTable) {
		first, last, _ := strings.Cut(strings.TrimSpace(line), "-")
		a, err1 := strconv.ParseUint(first, 16, 32)
		b, err2 := strconv.ParseUint(last, 16, 32)
		if err1 == nil && err2 == nil {
			d.property = append(d.property, [2]rune{rune(a), rune(b)})
		}
	}
	return d
})

// Zulip is the name of Zulip's one extra emoji (reaction type
// zulip_extra_emoji), whose code is its name.
const Zulip = "zulip"

// CodeForName is Zulip's name_to_codepoint.
func CodeForName(name string) (string, bool) {
	code, ok := emojiOnce().nameToCode[name]
	return code, ok
}

// CanonicalName is Zulip's codepoint_to_name.
func CanonicalName(code string) (string, bool) {
	names, ok := emojiOnce().codeToNames[code]
	if !ok {
		return "", false
	}
	return names[0], true
}

// CodeToNames is emoji_api.json's code_to_names.
func CodeToNames() map[string][]string {
	return emojiOnce().codeToNames
}

func hasEmojiProperty(r rune) bool {
	p := emojiOnce().property
	lo, hi := 0, len(p)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < p[m][0]:
			hi = m
		case r > p[m][1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

func isRegionalIndicator(r rune) bool { return r >= 0x1f1e6 && r <= 0x1f1ff }
func isEmojiModifier(r rune) bool     { return r >= 0x1f3fb && r <= 0x1f3ff }

// SequenceAt is Zulip's POSSIBLE_EMOJI_RE (UTS #51's EBNF) at byte
// i: two regional indicators, or an emoji with a modifier, a
// presentation selector (and keycap) or a tag sequence, joined by ZWJs
// to more of them. It answers the sequence's end.
func SequenceAt(s string, i int) (int, bool) {
	element := func(i int) (int, bool) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if isRegionalIndicator(r) {
			if r2, n2 := utf8.DecodeRuneInString(s[i+n:]); isRegionalIndicator(r2) {
				return i + n + n2, true
			}
		}
		if n == 0 || !hasEmojiProperty(r) {
			return i, false
		}
		j := i + n
		r, n = utf8.DecodeRuneInString(s[j:])
		switch {
		case isEmojiModifier(r):
			j += n
		case r == 0xfe0f:
			j += n
			if r, n = utf8.DecodeRuneInString(s[j:]); r == 0x20e3 {
				j += n
			}
		case r >= 0xe0020 && r <= 0xe007e:
			k := j
			for r >= 0xe0020 && r <= 0xe007e {
				k += n
				r, n = utf8.DecodeRuneInString(s[k:])
			}
			if r == 0xe007f {
				j = k + n
			}
		}
		return j, true
	}
	end, ok := element(i)
	if !ok {
		return i, false
	}
	for {
		r, n := utf8.DecodeRuneInString(s[end:])
		if r != 0x200d {
			return end, true
		}
		next, ok := element(end + n)
		if !ok {
			return end, true
		}
		end = next
	}
}

// unicodeEmojiCode is Zulip's emoji_to_hex_codepoint(unqualify_emoji(s)):
// the code points in hex, four digits at least, without U+FE0F.
func unicodeEmojiCode(seq string) string {
	var parts []string
	for _, r := range seq {
		if r == 0xfe0f {
			continue
		}
		h := strconv.FormatInt(int64(r), 16)
		if len(h) < 4 {
			h = strings.Repeat("0", 4-len(h)) + h
		}
		parts = append(parts, h)
	}
	return strings.Join(parts, "-")
}

// Renderable answers the code of an emoji sequence Zulip
// shows as an emoji: one it names, unless it is a single character
// typed without the emoji presentation selector that is text by
// default (TEXT_PRESENTATION_RE).
func Renderable(seq string) (string, bool) {
	code := unicodeEmojiCode(seq)
	if _, ok := emojiOnce().codeToNames[code]; !ok {
		return "", false
	}
	if utf8.RuneCountInString(seq) == 1 && emojiOnce().textFirst[code] {
		return "", false
	}
	return code, true
}
