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
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// readRecords reads DIR/sub/records.json; a missing one is no records.
func (x *importer) readRecords(sub string) ([]zulipRecord, error) {
	var records []zulipRecord
	data, err := os.ReadFile(filepath.Join(x.dir, sub, "records.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &records)
	}
	return records, err
}

// zulipUploadLink is a link to an uploaded file in a Zulip message:
// /user_uploads/REALM/…/NAME.
var zulipUploadLink = regexp.MustCompile(`/user_uploads/([0-9]+/[^\s()\[\]<>"'` + "`" + `]+)`)

func validUploadPath(realm, rest string) bool {
	_, ok := uploadPathID(realm, rest)
	return ok
}

// rewriteLinks points the links to uploaded files in a message's
// content or rendering to their paths here, as Zulip's import does
// (fix_upload_links).
func (x *importer) rewriteLinks(text string) string {
	if len(x.paths) == 0 || !strings.Contains(text, "/user_uploads/") {
		return text
	}
	return zulipUploadLink.ReplaceAllStringFunc(text, func(link string) string {
		path := strings.TrimPrefix(link, "/user_uploads/")
		trimmed := strings.TrimRight(path, ".,;:!?")
		if here, ok := x.paths[trimmed]; ok {
			return "/user_uploads/" + here + path[len(trimmed):]
		}
		return link
	})
}

// attachments reads attachment.json and copies each file's bytes from
// uploads/ into the blob directory, under a path id of zulite's shape
// (realm 2, one random token: Zulip's have two parts and its own realm
// id), which the messages' links are rewritten to.
func (x *importer) attachments() error {
	records, err := x.readRecords("uploads")
	if err != nil {
		return fmt.Errorf("uploads/records.json: %w", err)
	}
	fileOf := map[string]string{}
	for _, r := range records {
		fileOf[r.S3Path] = r.Path
	}
	path := filepath.Join(x.dir, "attachment.json")
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return eachTable(path, func(name string, dec *json.Decoder) (bool, error) {
		if name != "zerver_attachment" {
			return false, nil
		}
		return true, eachRow(dec, func(za zulipAttachment) error {
			file, ok := fileOf[za.PathID]
			if !ok || !x.users[za.Owner] {
				x.report.leave("uploaded files missing from uploads/", 1)
				return nil
			}
			f, err := os.Open(filepath.Join(x.dir, "uploads", filepath.FromSlash(file)))
			if err != nil {
				x.report.leave("uploaded files missing from uploads/", 1)
				return nil
			}
			sum, size, err := x.s.writeBlob(f, math.MaxInt64-1)
			f.Close()
			if err != nil {
				return fmt.Errorf("uploaded file %s: %w", za.PathID, err)
			}
			pathID := za.PathID
			if realm, rest, _ := strings.Cut(pathID, "/"); !validUploadPath(realm, rest) {
				pathID = uploadRealmID + "/" + randomPathToken() + "/" + sanitizeUploadName(filepath.Base(za.PathID))
				x.paths[za.PathID] = pathID
			}
			a := attachment{PathID: pathID, Owner: za.Owner, Name: za.FileName, Size: size, SHA256: sum, Created: unixSeconds(za.CreateTime)}
			if za.ContentType != nil {
				a.ContentType = *za.ContentType
			}
			if err := x.s.addAttachment(user{ID: za.Owner}, a, 0); err != nil {
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
	records, err := x.readRecords("avatars")
	if err != nil {
		return fmt.Errorf("avatars/records.json: %w", err)
	}
	type pair struct{ small, medium, original string }
	byUser := map[uint64]*pair{}
	for _, r := range records {
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
			p.medium = r.Path
		case strings.HasSuffix(r.Path, ".original"):
			p.original = r.Path
		default:
			p.small = r.Path
		}
	}
	ids := make([]uint64, 0, len(byUser))
	for id := range byUser {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	blob := func(path string) (string, error) {
		if path == "" {
			return "", nil
		}
		f, err := os.Open(filepath.Join(x.dir, "avatars", filepath.FromSlash(path)))
		if err != nil {
			return "", err
		}
		defer f.Close()
		sum, _, err := x.s.writeBlob(f, math.MaxInt64-1)
		return sum, err
	}
	for _, id := range ids {
		p := byUser[id]
		if p.medium == "" {
			p.medium = p.original
		}
		if p.small == "" {
			p.small = p.medium
		}
		small, err := blob(p.small)
		if err != nil {
			x.report.leave("avatars missing from avatars/", 1)
			continue
		}
		medium, err := blob(p.medium)
		if err != nil || small == "" {
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
