package main

// The export's files: attachments with the messages that link them,
// uploaded avatars and custom emoji, copied into the export's uploads/,
// avatars/ and emoji/ with the records Zulip's import reads (export.go
// writes the rest).

import (
	"encoding/json"
	"fmt"

	"go.etcd.io/bbolt"

	"zulite/internal/zulipexport"
)

// attachments writes attachment.json and uploads/: every uploaded file,
// with the messages that link it.
func (x *exporter) attachments() error {
	records := []zulipexport.RecordRow{}
	rows := []zulipexport.AttachmentRow{}
	c := x.tx.Bucket(bucketAttachments).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var a attachment
		if err := json.Unmarshal(v, &a); err != nil {
			return fmt.Errorf("attachment %s: %w", k, err)
		}
		if x.publicOnly && len(x.links[a.PathID]) == 0 { // linked from no exported message
			continue
		}
		if err := x.out.CopyFile("uploads", a.PathID, blobPath(x.blobs, a.SHA256)); err != nil {
			return fmt.Errorf("attachment %s: %w", a.PathID, err)
		}
		links := x.links[a.PathID]
		if links == nil {
			links = []uint64{}
		}
		rows = append(rows, zulipexport.AttachmentRow{ID: uint64(len(rows) + 1), FileName: a.Name, PathID: a.PathID, Owner: a.Owner, Realm: exportRealmID,
			CreateTime: zulipexport.Timestamp(a.Created), Size: a.Size, ContentType: a.ContentType, Messages: links, ScheduledMessages: []uint64{}})
		records = append(records, zulipexport.RecordRow{Path: a.PathID, S3Path: a.PathID, RealmID: exportRealmID, UserProfileID: a.Owner,
			ContentType: a.ContentType, Size: a.Size, LastModified: zulipexport.Timestamp(a.Created)})
	}
	x.report.Attachments = len(rows)
	if err := x.out.WriteRecords("uploads", records); err != nil {
		return err
	}
	return x.out.WriteAttachments(rows)
}

// avatars writes avatars/: for each user showing an uploaded avatar, the
// image as Zulip's "USER.png" and the larger one as "USER.original", from
// which the importer makes its medium size.
func (x *exporter) avatars() error {
	records := []zulipexport.RecordRow{}
	for _, u := range x.users {
		if u.Avatar == "" {
			continue
		}
		original := u.AvatarMedium
		if original == "" {
			original = u.Avatar
		}
		for _, f := range []struct{ name, sum string }{{fmt.Sprintf("%d.png", u.ID), u.Avatar}, {fmt.Sprintf("%d.original", u.ID), original}} {
			path := fmt.Sprintf("%d/%s", exportRealmID, f.name)
			if err := x.out.CopyFile("avatars", path, blobPath(x.blobs, f.sum)); err != nil {
				return fmt.Errorf("avatar of user %d: %w", u.ID, err)
			}
			records = append(records, zulipexport.RecordRow{Path: path, S3Path: path, RealmID: exportRealmID, UserProfileID: u.ID, ContentType: "image/png",
				AvatarVersion: avatarVersion(u)}) // as in the user's row
		}
		x.report.Avatars++
	}
	return x.out.WriteRecords("avatars", records)
}

// customEmoji writes emoji/: each custom emoji's image at Zulip's
// PATH_ID_TEMPLATE path ({realm}/emoji/images/{file_name}), its record
// naming the file, its author and whether it is deactivated, as Zulip's
// export_emoji_from_local writes them.
func (x *exporter) customEmoji() error {
	records := []zulipexport.RecordRow{}
	for _, e := range readRealmEmoji(x.tx) {
		deactivated := e.Deactivated
		path := fmt.Sprintf("%d/emoji/images/%s", exportRealmID, emojiFileName(e))
		if err := x.out.CopyFile("emoji", path, blobPath(x.blobs, e.File)); err != nil {
			return fmt.Errorf("custom emoji %q: %w", e.Name, err)
		}
		records = append(records, zulipexport.RecordRow{Path: path, S3Path: path, RealmID: exportRealmID, UserProfileID: e.AuthorID,
			ContentType: "image/png", FileName: emojiFileName(e), Name: e.Name, Author: e.AuthorID, Deactivated: &deactivated})
		x.report.Emoji++
	}
	if len(records) == 0 {
		return nil // Zulip's importer reads emoji/ only when it is there
	}
	return x.out.WriteRecords("emoji", records)
}

// emojiFileName is a custom emoji's file_name: its blob with the
// extension of its type, from which the importer guesses the type.
func emojiFileName(e realmEmoji) string { return e.File + ".png" }

// emojiRows are zerver_realmemoji's rows (date_created a float).
func (x *exporter) emojiRows(tx *bbolt.Tx) []map[string]any {
	var rows []map[string]any
	for _, e := range readRealmEmoji(tx) {
		rows = append(rows, map[string]any{"id": e.ID, "name": e.Name, "author": nilIfZero(e.AuthorID), "realm": exportRealmID,
			"file_name": emojiFileName(e), "deactivated": e.Deactivated, "is_animated": false, "date_created": zulipexport.Timestamp(e.Created)})
	}
	return rows
}

// linkifierRows are zerver_realmfilter's rows.
func linkifierRows(tx *bbolt.Tx) []map[string]any {
	var rows []map[string]any
	for _, l := range readLinkifiers(tx) {
		rows = append(rows, map[string]any{"id": l.ID, "realm": exportRealmID, "pattern": l.Pattern, "url_template": l.URLTemplate, "order": l.Order})
	}
	return rows
}

// playgroundRows are zerver_realmplayground's rows.
func playgroundRows(tx *bbolt.Tx) []map[string]any {
	var rows []map[string]any
	for _, p := range readPlaygrounds(tx) {
		rows = append(rows, map[string]any{"id": p.ID, "realm": exportRealmID, "name": p.Name, "pygments_language": p.PygmentsLanguage, "url_template": p.URLTemplate})
	}
	return rows
}
