package main

// Importing custom emoji, linkifiers and code playgrounds: realm.json's
// zerver_realmemoji, zerver_realmfilter and zerver_realmplayground, each
// keeping its id, and emoji/'s images (import_realm.py reads the same).
// An image is made a 64-pixel PNG as an upload is (api_realm_emoji.go);
// one that is missing or is no image zulite decodes, a linkifier whose
// pattern or template zulite cannot read, and what passes zulite's
// bounds are reported, not imported.

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"go.etcd.io/bbolt"

	"zulite/internal/markdown"
	"zulite/internal/zulipexport"
)

// importedEmoji is a row of zerver_realmemoji.
type importedEmoji struct {
	ID          uint64   `json:"id"`
	Name        string   `json:"name"`
	Author      *uint64  `json:"author"`
	FileName    *string  `json:"file_name"`
	Deactivated bool     `json:"deactivated"`
	DateCreated *float64 `json:"date_created"`
}

// importedLinkifier is a row of zerver_realmfilter.
type importedLinkifier struct {
	ID          uint64 `json:"id"`
	Pattern     string `json:"pattern"`
	URLTemplate string `json:"url_template"`
	Order       int    `json:"order"`
}

// readRealmConfig reads the three tables of realm.json, for realm().
func (x *importer) readRealmConfig(name string, dec *json.Decoder) (bool, error) {
	switch name {
	case "zerver_realmemoji":
		return true, zulipexport.ReadRows(dec, func(e importedEmoji) error { x.emoji = append(x.emoji, e); return nil })
	case "zerver_realmfilter":
		return true, zulipexport.ReadRows(dec, func(l importedLinkifier) error { x.linkifierRows = append(x.linkifierRows, l); return nil })
	case "zerver_realmplayground":
		return true, zulipexport.ReadRows(dec, func(p playground) error { x.playgroundRows = append(x.playgroundRows, p); return nil })
	}
	return false, nil
}

// importLinkifiers writes the linkifiers and playgrounds, in realm()'s
// transaction.
func (x *importer) importLinkifiers(tx *bbolt.Tx) error {
	b := tx.Bucket(bucketLinkifiers)
	var maxID uint64
	for _, l := range x.linkifierRows {
		if _, err := markdown.CompileLinkifier(l.Pattern, l.URLTemplate); err != nil || l.ID == 0 || b.Stats().KeyN >= maxLinkifiers {
			x.report.leave("linkifiers zulite cannot read or hold (their pattern, URL template or number)", 1)
			continue
		}
		if err := putJSON(b, itob(l.ID), linkifier{Pattern: l.Pattern, URLTemplate: l.URLTemplate, Order: l.Order}); err != nil {
			return err
		}
		maxID = max(maxID, l.ID)
		x.report.Linkifiers++
	}
	if err := b.SetSequence(max(b.Sequence(), maxID)); err != nil {
		return err
	}
	p := tx.Bucket(bucketPlaygrounds)
	maxID = 0
	for i, pg := range x.playgroundRows {
		if pg.ID == 0 || i >= maxPlaygrounds {
			x.report.leave("code playgrounds past zulite's bound", 1)
			continue
		}
		if err := putJSON(p, itob(pg.ID), pg); err != nil {
			return err
		}
		maxID = max(maxID, pg.ID)
		x.report.Playgrounds++
	}
	return p.SetSequence(max(p.Sequence(), maxID))
}

// customEmoji imports the custom emoji with their images from emoji/,
// each found by its record's file_name (the .original one when it is the
// only one).
func (x *importer) customEmoji() error {
	records, err := zulipexport.ReadRecords(x.root, "emoji")
	if err != nil {
		return err
	}
	pathOf := map[string]int{} // file_name → record number
	for i, r := range records {
		name := strings.TrimSuffix(r.FileName, ".original")
		if _, seen := pathOf[name]; !seen || !strings.HasSuffix(r.Path, ".original") {
			pathOf[name] = i + 1
		}
	}
	var kept []realmEmoji
	for _, e := range x.emoji {
		n := 0
		if e.FileName != nil {
			n = pathOf[*e.FileName]
		}
		if n == 0 || e.ID == 0 || len(kept) >= maxRealmEmoji {
			x.report.leave("custom emoji without an image in emoji/, or past zulite's bound", 1)
			continue
		}
		f, err := zulipexport.OpenRecord(x.root, "emoji", n, records[n-1].Path)
		if err != nil {
			x.report.leave("custom emoji without an image in emoji/, or past zulite's bound", 1)
			continue
		}
		data, err := io.ReadAll(io.LimitReader(f, maxEmojiMiB<<20*5+1))
		f.Close()
		if err != nil {
			return err
		}
		scaled, err := emojiImage(data)
		if err != nil {
			x.report.leave("custom emoji whose image zulite cannot decode (PNG, JPEG and GIF only)", 1)
			continue
		}
		sum, _, err := x.s.writeBlob(strings.NewReader(string(scaled)), int64(len(scaled)))
		if err != nil {
			return err
		}
		x.s.releaseBlob(sum) // nothing discards blobs during an import
		imported := realmEmoji{ID: e.ID, Name: e.Name, File: sum, Deactivated: e.Deactivated}
		if e.Author != nil && x.users[*e.Author] {
			imported.AuthorID = *e.Author
		}
		if e.DateCreated != nil {
			imported.Created = int64(*e.DateCreated)
		}
		kept = append(kept, imported)
	}
	err = x.s.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketRealmEmoji)
		var maxID uint64
		for _, e := range kept {
			if err := putJSON(b, itob(e.ID), e); err != nil {
				return err
			}
			maxID = max(maxID, e.ID)
		}
		return b.SetSequence(max(b.Sequence(), maxID))
	})
	if err != nil {
		return err
	}
	x.emojiIDs = map[string]bool{}
	for _, e := range kept {
		x.emojiIDs[strconv.FormatUint(e.ID, 10)] = true
	}
	x.report.Emoji = len(kept)
	return x.s.view(func(tx *bbolt.Tx) error { x.s.loadRealmEmoji(tx); x.s.loadLinkifiers(tx); return nil })
}
