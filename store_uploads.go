package main

// Uploaded files. Their bytes live beside the database in a
// content-addressed directory, DB.uploads/: a blob's name is the SHA-256
// of its bytes, DB.uploads/ab/abcdef… (directories 0700, files 0600).
// An upload streams into DB.uploads/tmp/, is fsynced, renamed into place
// and its directory fsynced, and only then recorded in the attachments
// bucket and answered: a 2xx means the bytes and the record are on disk.
// Nothing is ever written to a path a client names: a client's path is
// a key of the attachments bucket, and the file it reaches is named by
// the hash stored there.
//
// A file is visible to its uploader and to whoever can read a message
// that links it (Zulip's validate_attachment_request). Which messages
// link which file is indexed in attachment_refs, from the messages
// themselves, before any access check needs it (ensureRefsIndexed), so
// that sending a message costs nothing more. As Zulip's claim_attachment,
// a link counts only when its sender could see the file: linking someone
// else's private file in a public channel shows it to nobody.
//
// A file that no message links for the grace period (--upload-grace) is
// deleted, record and bytes (sweepUploads); so are blobs no record or
// avatar uses, once as old as the grace period. A blob an upload wrote
// and could not record goes at once (discardBlob), and uploads in flight
// hold their room against the quotas and the disk reserve
// (reserveUpload), so that uploads at the same time cannot pass them.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.etcd.io/bbolt"
)

// uploadRealmID is the realm id in upload paths (/user_uploads/2/…):
// Zulip's first organisation is 2, after its internal realm.
const uploadRealmID = "2"

// attachment is an uploaded file's record.
type attachment struct {
	ID          uint64 `json:"id,omitempty"` // its key in attachment_ids
	PathID      string `json:"path_id"`      // realm id/random/name, as in its URL
	Owner       uint64 `json:"owner"`
	Name        string `json:"name"` // as uploaded
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"` // the blob
	ContentType string `json:"content_type"`
	Created     int64  `json:"created"`
}

var (
	keyRefsThrough     = []byte("attachment_refs_through")
	keyAttachmentBytes = []byte("attachment_bytes")
)

// uploadQuota bounds the bytes of recorded files: each user's, and
// everyone's together (--upload-quota-mib, --upload-total-mib; 0: no
// bound). Zulip's quota is the organisation's; zulite has both.
type uploadQuota struct{ perUser, total int64 }

// errBlobTooLarge: the stream went past its limit (nothing was kept).
var errBlobTooLarge = errors.New("blob over its limit")

// uploadsDir is the blob directory beside the database.
func uploadsDir(dbPath string) string { return dbPath + ".uploads" }

func (s *store) uploadsDir() string { return uploadsDir(s.path) }

// isBlobName tells a SHA-256 in lower-case hex.
func isBlobName(name string) bool {
	if len(name) != 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// blobPath is where a blob's bytes are; sum must be isBlobName.
func blobPath(dir, sum string) string { return filepath.Join(dir, sum[:2], sum) }

// writeBlob streams r into the blob directory: at most limit bytes
// (errBlobTooLarge past it, and nothing kept), written to a temporary
// file, fsynced, renamed to its hash and the directory fsynced. It
// answers the hash and the size. A blob already there is kept, and its
// time renewed so that the sweeper gives it a new grace period. The
// blob it answers is held, so that discardBlob leaves it, until the
// caller has recorded it, or has failed to, and calls releaseBlob.
func (s *store) writeBlob(r io.Reader, limit int64) (sum string, size int64, err error) {
	dir := s.uploadsDir()
	tmpDir := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return "", 0, fmt.Errorf("blob directory: %w", err)
	}
	f, err := os.CreateTemp(tmpDir, "upload-*") // mode 0600
	if err != nil {
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	tmp := f.Name()
	kept := false
	defer func() {
		if !kept {
			f.Close()
			os.Remove(tmp)
		}
	}()
	h := sha256.New()
	buf := make([]byte, 32<<10)
	n, err := io.CopyBuffer(io.MultiWriter(f, h), io.LimitReader(r, limit+1), buf)
	if err != nil {
		return "", 0, err
	}
	if n > limit {
		return "", 0, errBlobTooLarge
	}
	if err := f.Sync(); err != nil {
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	held := hex.EncodeToString(h.Sum(nil))
	s.holdBlob(held) // before the blob is looked for: a discard now leaves it, or has finished
	defer func() {
		if err != nil {
			s.releaseBlob(held)
		}
	}()
	sum = held
	final := blobPath(dir, sum)
	shard := filepath.Dir(final)
	if _, err := os.Stat(shard); errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(shard, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", 0, fmt.Errorf("blob: %w", err)
		}
		if err := syncDir(dir); err != nil {
			return "", 0, err
		}
	}
	if _, err := os.Stat(final); err == nil {
		now := time.Now()
		os.Chtimes(final, now, now)
		return sum, n, nil // the deferred removal drops the copy
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	kept = true
	return sum, n, syncDir(shard)
}

// syncDir fsyncs a directory, so that a rename in it is on disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// openBlob opens a blob for reading.
func (s *store) openBlob(sum string) (*os.File, error) {
	if !isBlobName(sum) {
		return nil, fs.ErrNotExist
	}
	return os.Open(blobPath(s.uploadsDir(), sum))
}

// uploadsInFlight is what the uploads being streamed hold, so that
// uploads at the same time cannot together pass what one alone may: the
// room each took before its body was read, by user and in all
// (reserveUpload), and the blobs written and not yet recorded, with how
// many uploads hold each (writeBlob, releaseBlob).
type uploadsInFlight struct {
	mu      sync.Mutex
	byOwner map[uint64]int64
	total   int64
	held    map[string]int
}

// unbounded is what reserveUpload answers where nothing bounds a file.
const unbounded = math.MaxInt64

// reserveUpload takes room for one of owner's uploads before its body is
// read: what is left is measured against the recorded files and against
// the room the uploads in flight hold, for each quota, and for the free
// disk above diskReserve (0: none). It takes want bytes, or what is left
// if less, and answers what is left (unbounded where nothing bounds it;
// below zero when not even an empty file fits) and release, which gives
// the room back once the upload is recorded or refused.
func (s *store) reserveUpload(owner uint64, quota uploadQuota, diskReserve, want int64) (left int64, release func(), err error) {
	f := &s.inFlight
	f.mu.Lock()
	defer f.mu.Unlock() // held while the usage is read: an upload that ends gives its room back only once it is counted there
	left = unbounded
	if quota.perUser > 0 || quota.total > 0 {
		mine, all, err := s.uploadUsage(owner)
		if err != nil {
			return 0, nil, err
		}
		if quota.perUser > 0 {
			left = min(left, quota.perUser-mine-f.byOwner[owner])
		}
		if quota.total > 0 {
			left = min(left, quota.total-all-f.total)
		}
	}
	if diskReserve > 0 {
		if free, ok := s.uploadsDiskFree(); ok {
			left = min(left, free-diskReserve-f.total)
		}
	}
	taken := max(0, min(want, left))
	if f.byOwner == nil {
		f.byOwner = map[uint64]int64{}
	}
	f.byOwner[owner] += taken
	f.total += taken
	var once sync.Once
	return left, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.total -= taken
			if f.byOwner[owner] -= taken; f.byOwner[owner] == 0 {
				delete(f.byOwner, owner)
			}
		})
	}, nil
}

// holdBlob marks a blob as written by an upload in flight.
func (s *store) holdBlob(sum string) {
	f := &s.inFlight
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = map[string]int{}
	}
	f.held[sum]++
}

// releaseBlob lets go of a blob writeBlob answered, once it is recorded
// or will not be (then discardBlob deletes it, if nothing else uses it).
func (s *store) releaseBlob(sum string) {
	f := &s.inFlight
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held[sum]--; f.held[sum] <= 0 {
		delete(f.held, sum)
	}
}

// discardBlob deletes a blob at once unless something uses it: a record,
// an avatar, or an upload in flight that wrote the same bytes. An upload
// that could not be recorded hands its blob to it rather than to the
// sweeper, whose grace period would leave it on disk for a week, counted
// by no quota. (No database holds it, so no backup needs it.)
func (s *store) discardBlob(sum string) error {
	f := &s.inFlight
	f.mu.Lock()
	defer f.mu.Unlock() // held until the blob is gone: writeBlob holds a blob before it looks for it
	if f.held[sum] > 0 || !isBlobName(sum) {
		return nil
	}
	used := true
	if err := s.view(func(tx *bbolt.Tx) error {
		used = blobUsed(tx, sum)
		return nil
	}); err != nil {
		return err
	}
	if used {
		return nil
	}
	if err := os.Remove(blobPath(s.uploadsDir(), sum)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("discard blob: %w", err)
	}
	return nil
}

// sweepBlob removes a blob no record or avatar used when the sweep began,
// unless an upload in flight holds it or wrote it again since (its time
// is new): both are looked at under the lock writeBlob holds a blob by.
func (s *store) sweepBlob(path, sum string, now time.Time, grace time.Duration) bool {
	f := &s.inFlight
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held[sum] > 0 {
		return false
	}
	if info, err := os.Stat(path); err != nil || now.Sub(info.ModTime()) < grace {
		return false
	}
	return os.Remove(path) == nil
}

// retiredBlobWait is how long a blob an avatar change let go of stays
// on disk: a backup or an export copies the blobs after the database,
// so one replaced meanwhile must still be there for it.
const retiredBlobWait = time.Hour

// retireBlob hands a blob nothing uses any more (no record, avatar or
// upload in flight) to the sweeper within retiredBlobWait instead of its
// grace period: its time is set back so that it falls due then. A blob
// written again meanwhile gets a new time, and one used again is never
// swept.
func (s *store) retireBlob(sum string) {
	grace := time.Duration(s.sweepGrace.Load())
	if grace <= retiredBlobWait || !isBlobName(sum) {
		return
	}
	f := &s.inFlight
	f.mu.Lock()
	defer f.mu.Unlock() // as discardBlob: an upload writing the same bytes holds it first
	used := f.held[sum] > 0
	if !used && s.view(func(tx *bbolt.Tx) error { used = blobUsed(tx, sum); return nil }) != nil {
		return // unread: it waits out the grace period
	}
	if !used {
		at := time.Now().Add(retiredBlobWait - grace)
		os.Chtimes(blobPath(s.uploadsDir(), sum), at, at) // if it fails, the blob waits out the grace period
	}
}

// blobUsed tells whether an avatar, a custom emoji or a record uses a blob. The records
// have no index by blob, so they are all read: only an upload refused as
// it is recorded, or an avatar change, asks.
func blobUsed(tx *bbolt.Tx, sum string) bool {
	if k, _ := tx.Bucket(bucketAvatarBlobs).Cursor().Seek([]byte(sum)); k != nil && bytes.HasPrefix(k, []byte(sum)) {
		return true
	}
	if emojiBlobUsed(tx, sum) {
		return true
	}
	quoted := []byte(`"` + sum + `"`)
	c := tx.Bucket(bucketAttachments).Cursor()
	for _, v := c.First(); v != nil; _, v = c.Next() {
		if !bytes.Contains(v, quoted) {
			continue
		}
		var a attachment
		if err := json.Unmarshal(v, &a); err != nil || a.SHA256 == sum {
			return true // a record that cannot be read may use it
		}
	}
	return false
}

// addAttachment records an upload whose blob is written, within the
// quota: as Zulip's check_upload_within_quota, what is kept and the new
// file together may reach the quota, not pass it.
func (s *store) addAttachment(owner user, a attachment, quota uploadQuota) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		if tx.Bucket(bucketUsers).Get(itob(owner.ID)) == nil {
			return errNoSuchUser
		}
		if quota.perUser > 0 && ownedBytes(tx, owner.ID)+a.Size > quota.perUser {
			return errUploadQuota
		}
		total := attachmentBytes(tx)
		if quota.total > 0 && total+a.Size > quota.total {
			return errUploadQuota
		}
		id, err := tx.Bucket(bucketAttachments).NextSequence()
		if err != nil {
			return err
		}
		a.ID = id
		if err := putJSON(tx.Bucket(bucketAttachments), []byte(a.PathID), a); err != nil {
			return err
		}
		if err := tx.Bucket(bucketAttachmentOwners).Put(append(itob(owner.ID), a.PathID...), itob(uint64(a.Size))); err != nil {
			return err
		}
		report(attachmentChanged{Owner: owner.ID, Op: "add", Attachment: attachmentObjectOf(tx, a), SpaceUsed: total + a.Size})
		return tx.Bucket(bucketMeta).Put(keyAttachmentBytes, itob(uint64(total+a.Size)))
	})
}

// uploadUsage answers the bytes of the files owner keeps uploaded and of
// everyone's: what is left of the quotas before an upload is read.
func (s *store) uploadUsage(owner uint64) (mine, all int64, err error) {
	err = s.view(func(tx *bbolt.Tx) error {
		mine, all = ownedBytes(tx, owner), attachmentBytes(tx)
		return nil
	})
	return mine, all, err
}

// ownedBytes is the size of owner's recorded files together.
func ownedBytes(tx *bbolt.Tx, owner uint64) int64 {
	var used int64
	prefix := itob(owner)
	c := tx.Bucket(bucketAttachmentOwners).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		used += int64(btoi(v))
	}
	return used
}

// attachmentBytes is the size of every recorded file together: meta's
// count, or their sum in a database that has none yet.
func attachmentBytes(tx *bbolt.Tx) int64 {
	if v := tx.Bucket(bucketMeta).Get(keyAttachmentBytes); len(v) == 8 {
		return int64(btoi(v))
	}
	var total int64
	tx.Bucket(bucketAttachmentOwners).ForEach(func(_, v []byte) error {
		total += int64(btoi(v))
		return nil
	})
	return total
}

// uploadsDiskFree answers the bytes free on the filesystem holding the
// blobs (the database's, before the first upload makes their
// directory), and false where that cannot be known.
func (s *store) uploadsDiskFree() (int64, bool) {
	if free, ok := diskFree(s.uploadsDir()); ok {
		return free, true
	}
	return diskFree(filepath.Dir(s.path))
}

// attachmentFor answers the file at pathID if u may see it: as its
// uploader, or as a reader of a message that links it.
func (s *store) attachmentFor(u user, pathID string) (attachment, error) {
	if err := s.ensureRefsIndexed(); err != nil {
		return attachment{}, err
	}
	var a attachment
	err := s.view(func(tx *bbolt.Tx) error {
		a = attachment{}
		v := tx.Bucket(bucketAttachments).Get([]byte(pathID))
		if v == nil {
			return errNoSuchAttachment
		}
		if err := json.Unmarshal(v, &a); err != nil {
			return err
		}
		if a.Owner == u.ID || s.canSeeLinked(tx, u, pathID) {
			return nil
		}
		return errAttachmentForbidden
	})
	return a, err
}

// attachmentByPath answers a file's record, whoever asks (a temporary
// URL, already signed for someone who could see it).
func (s *store) attachmentByPath(pathID string) (attachment, error) {
	var a attachment
	err := s.view(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketAttachments).Get([]byte(pathID))
		if v == nil {
			return errNoSuchAttachment
		}
		return json.Unmarshal(v, &a)
	})
	return a, err
}

func refPrefix(pathID string) []byte { return append([]byte(pathID), 0) }

// canSeeLinked tells whether u can read a message that links pathID.
func (s *store) canSeeLinked(tx *bbolt.Tx, u user, pathID string) bool {
	prefix := refPrefix(pathID)
	c := tx.Bucket(bucketAttachmentRefs).Cursor()
	seen := map[uint64]bool{}
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		m, err := messageByID(tx, btoi(k[len(prefix):]))
		if err != nil || seen[m.readKey()] {
			continue
		}
		seen[m.readKey()] = true
		if m.isDirect() && isParticipant(tx, u.ID, m.ConversationID) { // store_dms.go
			return true
		}
		if ch, err := s.channelByID(tx, m.ChannelID); err == nil && s.canAccess(tx, u, ch) {
			return true
		}
	}
	return false
}

// uploadLinks finds the path ids a message's text links: the URL's path
// after /user_uploads/, as the pattern
// /user_uploads/(REALM/[A-Za-z0-9_-]{1,64}/[^\s()\[\]<>"'`]+) finds
// them from left to right (patterns_test.go holds the two alike; regexp
// would cost the binary 240 KB).
func uploadLinks(content string) []string {
	const prefix = "/user_uploads/" + uploadRealmID + "/"
	var found []string
	for at := 0; ; {
		i := strings.Index(content[at:], prefix)
		if i < 0 {
			return found
		}
		start := at + i + len("/user_uploads/")
		at += i + 1
		j := at - 1 + len(prefix)
		k := j
		for k < len(content) && k-j < 64 && isUploadDirByte(content[k]) {
			k++
		}
		if k == j || k == len(content) || content[k] != '/' {
			continue
		}
		end := k + 1
		for end < len(content) && !isUploadLinkEnd(content[end]) {
			end++
		}
		if end == k+1 {
			continue
		}
		found = append(found, content[start:end])
		at = end
	}
}

func isUploadDirByte(c byte) bool {
	return c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z'
}

// isUploadLinkEnd is the pattern's \s()[]<>"'` (Go's \s is ASCII).
func isUploadLinkEnd(c byte) bool {
	return strings.IndexByte("\t\n\f\r ()[]<>\"'`", c) >= 0
}

func linkedPaths(content string) []string {
	if !strings.Contains(content, "/user_uploads/") {
		return nil
	}
	var paths []string
	for _, link := range uploadLinks(content) {
		p := strings.TrimRight(link, ".,;:!?")
		paths = append(paths, p)
		if decoded, err := url.PathUnescape(p); err == nil && decoded != p {
			paths = append(paths, decoded)
		}
	}
	return paths
}
