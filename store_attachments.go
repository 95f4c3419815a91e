package main

// A user's own uploads, as Zulip's zerver/lib/attachments.py lists and
// removes them: each file's record has an id (from attachments' sequence;
// a record is found by it among its owner's, as Zulip's query filters by
// owner), the messages that link it are attachment_refs' (store_uploads.go),
// and a removed file's record and links go at once, so its URL answers
// 404; its blob is retired to the sweeper (retireBlob), as a replaced
// avatar's is, since another record may share it and a backup in
// progress may still copy it.

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"

	"go.etcd.io/bbolt"
)

// attachmentChanged: a user's upload was added or removed (Zulip's
// notify_attachment_update). Attachment is the whole object for "add",
// only its id for "remove"; SpaceUsed is everyone's bytes after it.
type attachmentChanged struct {
	Owner      uint64
	Op         string
	Attachment any
	SpaceUsed  int64
}

// attachmentObject is Zulip's Attachment.to_dict: times in milliseconds.
type attachmentObject struct {
	ID         uint64          `json:"id"`
	Name       string          `json:"name"`
	PathID     string          `json:"path_id"`
	Size       int64           `json:"size"`
	CreateTime int64           `json:"create_time"`
	Messages   []attachmentUse `json:"messages"`
}

// attachmentUse is a message that links an upload.
type attachmentUse struct {
	ID       uint64 `json:"id"`
	DateSent int64  `json:"date_sent"`
}

// numberAttachments gives every record an id, in path order: for a file
// written before records had ids (migrate runs it once, on a schema-3
// file).
func numberAttachments(tx *bbolt.Tx) error {
	ids := tx.Bucket(bucketAttachments)
	c := ids.Cursor()
	var numbered [][2][]byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var a attachment
		if err := json.Unmarshal(v, &a); err != nil {
			return err
		}
		if a.ID != 0 {
			continue
		}
		id, err := ids.NextSequence()
		if err != nil {
			return err
		}
		a.ID = id
		raw, err := json.Marshal(a)
		if err != nil {
			return err
		}
		numbered = append(numbered, [2][]byte{slices.Clone(k), raw})
	}
	for _, kv := range numbered { // not while the cursor walks the bucket
		if err := ids.Put(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// attachmentObjectOf is a record as Zulip shows it, with the messages
// that link it, oldest first.
func attachmentObjectOf(tx *bbolt.Tx, a attachment) attachmentObject {
	o := attachmentObject{ID: a.ID, Name: a.Name, PathID: a.PathID, Size: a.Size, CreateTime: a.Created * 1000, Messages: []attachmentUse{}}
	prefix := refPrefix(a.PathID)
	c := tx.Bucket(bucketAttachmentRefs).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if m, err := messageByID(tx, btoi(k[len(prefix):])); err == nil {
			o.Messages = append(o.Messages, attachmentUse{m.ID, m.Timestamp * 1000})
		}
	}
	return o
}

// ownAttachments is Zulip's user_attachments, by id, and the bytes every
// user's files take together (upload_space_used).
func (s *store) ownAttachments(u user) ([]attachmentObject, int64, error) {
	if err := s.ensureRefsIndexed(); err != nil {
		return nil, 0, err
	}
	var list []attachmentObject
	var used int64
	err := s.view(func(tx *bbolt.Tx) error {
		list, used = []attachmentObject{}, attachmentBytes(tx)
		prefix := itob(u.ID)
		c := tx.Bucket(bucketAttachmentOwners).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			var a attachment
			if err := getJSON(tx.Bucket(bucketAttachments), k[8:], &a); err != nil {
				return err
			}
			list = append(list, attachmentObjectOf(tx, a))
		}
		return nil
	})
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID }) // sort.Slice: no generic sort instantiated for one call
	return list, used, err
}

// removeAttachment is Zulip's access_attachment_by_id (needs_owner) and
// remove_attachment: one of u's own files, its record, links and id.
func (s *store) removeAttachment(u user, id uint64) error {
	var sum string
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		a, found, err := ownAttachmentByID(tx, u, id)
		if err != nil {
			return err
		}
		if !found {
			return refusal(errInvalidAttachment)
		}
		pathID := []byte(a.PathID)
		if err := deletePrefix(tx.Bucket(bucketAttachmentRefs), refPrefix(a.PathID)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketAttachments).Delete(pathID); err != nil {
			return err
		}
		if err := tx.Bucket(bucketAttachmentOwners).Delete(append(itob(a.Owner), a.PathID...)); err != nil {
			return err
		}
		used := max(attachmentBytes(tx)-a.Size, 0)
		sum = a.SHA256
		report(attachmentChanged{Owner: u.ID, Op: "remove", Attachment: map[string]uint64{"id": id}, SpaceUsed: used})
		return tx.Bucket(bucketMeta).Put(keyAttachmentBytes, itob(uint64(used)))
	})
	if err == nil {
		s.retireBlob(sum)
	}
	return err
}

// ownAttachmentByID finds one of u's records by its id, among u's own
// (attachment_owners' prefix): as many reads as u has files, which GET
// /attachments reads anyway, and no index of ids to keep beside them.
func ownAttachmentByID(tx *bbolt.Tx, u user, id uint64) (attachment, bool, error) {
	prefix := itob(u.ID)
	c := tx.Bucket(bucketAttachmentOwners).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var a attachment
		if err := getJSON(tx.Bucket(bucketAttachments), k[8:], &a); err != nil {
			return attachment{}, false, err
		}
		if a.ID == id {
			return a, true, nil
		}
	}
	return attachment{}, false, nil
}
