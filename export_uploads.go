package main

// The export's files: attachments with the messages that link them,
// and uploaded avatars, copied into the export's uploads/ and avatars/
// with the records Zulip's import reads (export.go writes the rest).

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"zulite/internal/zulipexport"
)

type exportRecord struct {
	Path          string `json:"path"`
	S3Path        string `json:"s3_path"`
	RealmID       int    `json:"realm_id"`
	UserProfileID uint64 `json:"user_profile_id"`
	ContentType   string `json:"content_type"`
	Size          int64  `json:"size"`
	LastModified  any    `json:"last_modified"`
}

type exportAttachment struct {
	ID                uint64   `json:"id"`
	FileName          string   `json:"file_name"`
	PathID            string   `json:"path_id"`
	Owner             uint64   `json:"owner"`
	Realm             int      `json:"realm"`
	CreateTime        any      `json:"create_time"`
	Size              int64    `json:"size"`
	ContentType       string   `json:"content_type"`
	IsRealmPublic     *bool    `json:"is_realm_public"`
	IsWebPublic       *bool    `json:"is_web_public"`
	Messages          []uint64 `json:"messages"`
	ScheduledMessages []uint64 `json:"scheduled_messages"`
}

// attachments writes attachment.json and uploads/: every uploaded file,
// with the messages that link it.
func (x *exporter) attachments() error {
	records := []exportRecord{}
	rows := []exportAttachment{}
	c := x.tx.Bucket(bucketAttachments).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var a attachment
		if err := json.Unmarshal(v, &a); err != nil {
			return fmt.Errorf("attachment %s: %w", k, err)
		}
		if err := copyFileInto(blobPath(x.blobs, a.SHA256), filepath.Join(x.dir, "uploads", filepath.FromSlash(a.PathID))); err != nil {
			return fmt.Errorf("attachment %s: %w", a.PathID, err)
		}
		links := x.links[a.PathID]
		if links == nil {
			links = []uint64{}
		}
		rows = append(rows, exportAttachment{ID: uint64(len(rows) + 1), FileName: a.Name, PathID: a.PathID, Owner: a.Owner, Realm: exportRealmID,
			CreateTime: zulipexport.Timestamp(a.Created), Size: a.Size, ContentType: a.ContentType, Messages: links, ScheduledMessages: []uint64{}})
		records = append(records, exportRecord{Path: a.PathID, S3Path: a.PathID, RealmID: exportRealmID, UserProfileID: a.Owner,
			ContentType: a.ContentType, Size: a.Size, LastModified: zulipexport.Timestamp(a.Created)})
	}
	x.report.Attachments = len(rows)
	if err := os.MkdirAll(filepath.Join(x.dir, "uploads"), 0o700); err != nil {
		return err
	}
	if err := writeJSONFile(filepath.Join(x.dir, "uploads", "records.json"), records); err != nil {
		return err
	}
	return writeJSONFile(filepath.Join(x.dir, "attachment.json"), map[string]any{"zerver_attachment": rows})
}

// avatars writes avatars/: for each user showing an uploaded avatar, the
// image as Zulip's "USER.png" and the larger one as "USER.original", from
// which the importer makes its medium size.
func (x *exporter) avatars() error {
	records := []exportRecord{}
	if err := os.MkdirAll(filepath.Join(x.dir, "avatars"), 0o700); err != nil {
		return err
	}
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
			if err := copyFileInto(blobPath(x.blobs, f.sum), filepath.Join(x.dir, "avatars", filepath.FromSlash(path))); err != nil {
				return fmt.Errorf("avatar of user %d: %w", u.ID, err)
			}
			records = append(records, exportRecord{Path: path, S3Path: path, RealmID: exportRealmID, UserProfileID: u.ID, ContentType: "image/png"})
		}
		x.report.Avatars++
	}
	return writeJSONFile(filepath.Join(x.dir, "avatars", "records.json"), records)
}

// copyFileInto copies the file from to the path to, making its directory.
func copyFileInto(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeFileAtomically(to, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}
