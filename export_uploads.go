package main

// The export's files: attachments with the messages that link them,
// and uploaded avatars, copied into the export's uploads/ and avatars/
// with the records Zulip's import reads (export.go writes the rest).

import (
	"encoding/json"
	"fmt"

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
