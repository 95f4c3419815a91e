package zulipexport

// The rules of Zulip's importer that both directions keep.

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MessagesPerFile is Zulip's MESSAGE_BATCH_CHUNK_SIZE: how many messages
// one messages-NNNNNN.json holds.
const MessagesPerFile = 1000

// messageFileName is the nth message file's name, from 1.
func messageFileName(n int) string {
	return fmt.Sprintf("messages-%06d.json", n)
}

// Zulip's UserMessage.flags bits, in the order of UserMessage.ALL_FLAGS.
const (
	FlagRead                    = 1 << 0
	FlagStarred                 = 1 << 1
	FlagCollapsed               = 1 << 2
	FlagMentioned               = 1 << 3
	FlagStreamWildcardMentioned = 1 << 4
	FlagTopicWildcardMentioned  = 1 << 5
	FlagGroupMentioned          = 1 << 6
	FlagHistorical              = 1 << 10
	FlagIsPrivate               = 1 << 11
)

// Zulip's Recipient types (a stream's is 2).
const (
	RecipientPersonal = 1
	RecipientHuddle   = 3
)

// Timestamp is a Zulip export's date: seconds since the epoch (the
// importer's fix_datetime_fields), or null.
func Timestamp(unix int64) any {
	if unix == 0 {
		return nil
	}
	return float64(unix)
}

// UnixSeconds is a Zulip export's date as Unix seconds.
func UnixSeconds(t *float64) int64 {
	if t == nil {
		return 0
	}
	return int64(math.Floor(*t))
}

// HuddleHash is Zulip's get_huddle_hash: the SHA-1 of the sorted ids
// joined by commas (the importer computes it again from the members).
func HuddleHash(ids []uint64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	sum := sha1.Sum([]byte(strings.Join(parts, ",")))
	return hex.EncodeToString(sum[:])
}

// uploadLinks calls fn with each link to an uploaded file in a Zulip
// message, /user_uploads/REALM/…/NAME, as the pattern
// /user_uploads/([0-9]+/[^\s()\[\]<>"'`]+) finds them from left to
// right, and answers the text with each link replaced by what fn
// answers (rules_test.go holds it to the pattern; regexp would cost the
// binary 240 KB).
func uploadLinks(text string, fn func(link string) string) string {
	const prefix = "/user_uploads/"
	var b strings.Builder
	copied := 0
	for at := 0; ; {
		i := strings.Index(text[at:], prefix)
		if i < 0 {
			break
		}
		start := at + i
		at = start + 1
		k := start + len(prefix)
		for k < len(text) && '0' <= text[k] && text[k] <= '9' {
			k++
		}
		if k == start+len(prefix) || k == len(text) || text[k] != '/' {
			continue
		}
		end := k + 1
		for end < len(text) && strings.IndexByte("\t\n\f\r ()[]<>\"'`", text[end]) < 0 {
			end++
		}
		if end == k+1 {
			continue
		}
		b.WriteString(text[copied:start])
		b.WriteString(fn(text[start:end]))
		copied, at = end, end
	}
	if copied == 0 {
		return text
	}
	b.WriteString(text[copied:])
	return b.String()
}

// RewriteUploadLinks points the links to uploaded files in a message's
// content or rendering to their new path ids (paths: the export's path
// id → the new one), as Zulip's import does (fix_upload_links).
func RewriteUploadLinks(text string, paths map[string]string) string {
	if len(paths) == 0 || !strings.Contains(text, "/user_uploads/") {
		return text
	}
	return uploadLinks(text, func(link string) string {
		path := strings.TrimPrefix(link, "/user_uploads/")
		trimmed := strings.TrimRight(path, ".,;:!?")
		if here, ok := paths[trimmed]; ok {
			return "/user_uploads/" + here + path[len(trimmed):]
		}
		return link
	})
}

// ZulipVersion is the Zulip release an export is written for: 11.0, of
// API feature level 421, the level zulite reports. Zulip's import
// compares its major version with its own (check_migration_status in
// zerver/lib/import_realm.py), so the export imports into any 11.x.
const ZulipVersion = "11.0"

// ImportSource is realm.json's "import_source": the product an export
// comes from, as Zulip's converters name theirs ("slack", "mattermost").
// The importer reads it without a default, and treats an export of any
// source but "zulip" as a converter's: where the realm names no
// announcement channel it takes the most subscribed one, and it sends
// its welcome messages.
const ImportSource = "zulite"
