package main

// The import's files: uploads and avatars copied from the export's
// uploads/ and avatars/ records into zulite's upload directory, and the
// messages' links to them rewritten to zulite's paths.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"zulite/internal/zulipexport"
)

func validUploadPath(realm, rest string) bool {
	_, ok := uploadPathID(realm, rest)
	return ok
}

// attachments reads attachment.json and copies each file's bytes from
// uploads/ into the blob directory, under a path id of zulite's shape
// (realm 2, one random token: Zulip's have two parts and its own realm
// id), which the messages' links are rewritten to.
func (x *importer) attachments() error {
	records, err := zulipexport.ReadRecords(x.root, "uploads")
	if err != nil {
		return err
	}
	recordOf := map[string]int{} // from 1
	for i, r := range records {
		recordOf[r.S3Path] = i + 1
	}
	if _, err := x.root.Lstat("attachment.json"); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return zulipexport.ReadTables(x.root, "attachment.json", func(name string, dec *json.Decoder) (bool, error) {
		if name != "zerver_attachment" {
			return false, nil
		}
		return true, zulipexport.ReadRows(dec, func(za zulipexport.Attachment) error {
			n, ok := recordOf[za.PathID]
			if !ok || !x.users[za.Owner] {
				x.report.leave("uploaded files missing from uploads/", 1)
				return nil
			}
			f, err := zulipexport.OpenRecord(x.root, "uploads", n, records[n-1].Path)
			if errors.Is(err, fs.ErrNotExist) {
				x.report.leave("uploaded files missing from uploads/", 1)
				return nil
			}
			if err != nil {
				return err
			}
			sum, size, err := x.s.writeBlob(f, math.MaxInt64-1)
			f.Close()
			if err != nil {
				return fmt.Errorf("uploaded file %s: %w", za.PathID, err)
			}
			x.s.releaseBlob(sum) // nothing discards blobs during an import
			pathID := za.PathID
			if realm, rest, _ := strings.Cut(pathID, "/"); !validUploadPath(realm, rest) {
				pathID = uploadRealmID + "/" + randomPathToken() + "/" + sanitizeUploadName(filepath.Base(za.PathID))
				x.paths[za.PathID] = pathID
			}
			a := attachment{PathID: pathID, Owner: za.Owner, Name: za.FileName, Size: size, SHA256: sum, Created: zulipexport.UnixSeconds(za.CreateTime)}
			if za.ContentType != nil {
				a.ContentType = *za.ContentType
			}
			if err := x.s.addAttachment(user{ID: za.Owner}, a, uploadQuota{}); err != nil {
				return err
			}
			x.report.Attachments++
			return nil
		})
	})
}

// avatars reads avatars/: for each user, the 100-pixel image (NAME.png)
// and the medium one (NAME-medium.png, or NAME.original when there is no
// medium one) become their avatar.
func (x *importer) avatars() error {
	records, err := zulipexport.ReadRecords(x.root, "avatars")
	if err != nil {
		return err
	}
	type pair struct{ small, medium, original int } // records, from 1; 0 for none
	byUser := map[uint64]*pair{}
	for i, r := range records {
		if !x.users[r.UserProfileID] {
			continue
		}
		p := byUser[r.UserProfileID]
		if p == nil {
			p = &pair{}
			byUser[r.UserProfileID] = p
		}
		switch {
		case strings.HasSuffix(r.Path, "-medium.png"):
			p.medium = i + 1
		case strings.HasSuffix(r.Path, ".original"):
			p.original = i + 1
		default:
			p.small = i + 1
		}
	}
	ids := make([]uint64, 0, len(byUser))
	for id := range byUser {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// blob copies record n's file; "" for none, or one not there.
	blob := func(n int) (string, error) {
		if n == 0 {
			return "", nil
		}
		f, err := zulipexport.OpenRecord(x.root, "avatars", n, records[n-1].Path)
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		defer f.Close()
		sum, _, err := x.s.writeBlob(f, math.MaxInt64-1)
		if err == nil {
			x.s.releaseBlob(sum) // nothing discards blobs during an import
		}
		return sum, err
	}
	for _, id := range ids {
		p := byUser[id]
		if p.medium == 0 {
			p.medium = p.original
		}
		if p.small == 0 {
			p.small = p.medium
		}
		small, err := blob(p.small)
		if err != nil {
			return err
		}
		var medium string
		if small != "" {
			if medium, err = blob(p.medium); err != nil {
				return err
			}
		}
		if small == "" || p.medium != 0 && medium == "" {
			x.report.leave("avatars missing from avatars/", 1)
			continue
		}
		if _, err := x.s.setAvatar(user{ID: id}, small, medium); err != nil {
			return err
		}
		x.report.Avatars++
	}
	return nil
}

// leftImages reports the images of an export that zulite has no place
// for: the organisation's icon and logo
// (realm_icons/), one for each record but the .original ones Zulip keeps
// beside them. Their records are read as the others are, so that one
// whose path leads out of the export refuses it here too.
func (x *importer) leftImages() error {
	for _, folder := range []struct{ sub, what string }{
		{"realm_icons", "images in realm_icons/ (the organisation's icon and logo): zulite has none"},
	} {
		records, err := zulipexport.ReadRecords(x.root, folder.sub)
		if err != nil {
			return err
		}
		for _, r := range records {
			if !strings.HasSuffix(r.Path, ".original") {
				x.report.leave(folder.what, 1)
			}
		}
	}
	return nil
}
