package main

// The upload directory's housekeeping: indexing which messages link which
// uploads (attachment_refs), sweeping records and blobs nothing links
// once their grace has passed, the janitor that runs the sweep, and
// copying blobs for a backup. Writing, reading and counting uploads is
// store_uploads.go's.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"
)

// refsIndexBatch bounds the messages one indexing transaction reads.
const refsIndexBatch = 2000

// ensureRefsIndexed records the links of every message not yet indexed;
// it writes only when messages were sent since it last ran.
func (s *store) ensureRefsIndexed() error {
	if !s.refsLoaded.Load() {
		err := s.view(func(tx *bbolt.Tx) error {
			if v := tx.Bucket(bucketMeta).Get(keyRefsThrough); len(v) == 8 {
				s.refsThrough.Store(btoi(v))
			}
			return nil
		})
		if err != nil {
			return err
		}
		s.refsLoaded.Store(true)
	}
	for s.refsThrough.Load() < s.maxID.Load() {
		var through uint64
		err := s.update(func(tx *bbolt.Tx) error {
			meta := tx.Bucket(bucketMeta)
			through = 0
			if v := meta.Get(keyRefsThrough); len(v) == 8 {
				through = btoi(v)
			}
			attachments, refs := tx.Bucket(bucketAttachments), tx.Bucket(bucketAttachmentRefs)
			c := tx.Bucket(bucketMessages).Cursor()
			read := 0
			for k, v := c.Seek(itob(through + 1)); k != nil && read < refsIndexBatch; k, v = c.Next() {
				read++
				through = btoi(k)
				if !bytes.Contains(v, []byte("/user_uploads/")) {
					continue
				}
				var m message
				if err := json.Unmarshal(v, &m); err != nil {
					return err
				}
				for _, p := range linkedPaths(m.Content) {
					raw := attachments.Get([]byte(p))
					if raw == nil {
						continue
					}
					var a attachment
					if err := json.Unmarshal(raw, &a); err != nil {
						return err
					}
					if sender, err := lookUpUser(tx, m.SenderID); err != nil || (a.Owner != m.SenderID && !s.canSeeLinked(tx, sender, p)) {
						continue // Zulip's claim_attachment: only what the sender may see
					}
					if err := refs.Put(append(refPrefix(p), itob(m.ID)...), nil); err != nil {
						return err
					}
				}
			}
			if read == 0 { // the messages bucket ends before maxID says: nothing to read
				through = max(through, s.maxID.Load())
			}
			return meta.Put(keyRefsThrough, itob(through))
		})
		if err != nil {
			return err
		}
		s.refsThrough.Store(through)
	}
	return nil
}

// sweepUploads deletes files no message linked within grace of their
// upload, then the blobs that no record or avatar uses and that are as
// old as grace (in-flight uploads are younger), and temporary files left
// by uploads that never finished. It answers how many records and blobs
// went.
func (s *store) sweepUploads(now time.Time, grace time.Duration) (records, blobs int, err error) {
	if err := s.ensureRefsIndexed(); err != nil {
		return 0, 0, err
	}
	live := map[string]bool{}
	err = s.update(func(tx *bbolt.Tx) error {
		records = 0
		clear(live)
		attachments, refs, owned := tx.Bucket(bucketAttachments), tx.Bucket(bucketAttachmentRefs), tx.Bucket(bucketAttachmentOwners)
		var gone []attachment
		var kept int64 // the size of the records that stay: attachment_bytes, made exact
		err := attachments.ForEach(func(k, v []byte) error {
			var a attachment
			if err := json.Unmarshal(v, &a); err != nil {
				return err
			}
			linked, _ := refs.Cursor().Seek(refPrefix(a.PathID))
			if linked == nil || !bytes.HasPrefix(linked, refPrefix(a.PathID)) {
				if now.Sub(time.Unix(a.Created, 0)) >= grace {
					gone = append(gone, a)
					return nil
				}
			}
			live[a.SHA256] = true
			kept += a.Size
			return nil
		})
		if err != nil {
			return err
		}
		if v := tx.Bucket(bucketMeta).Get(keyAttachmentBytes); len(v) != 8 || int64(btoi(v)) != kept {
			if err := tx.Bucket(bucketMeta).Put(keyAttachmentBytes, itob(uint64(kept))); err != nil {
				return err
			}
		}
		for _, a := range gone {
			if err := attachments.Delete([]byte(a.PathID)); err != nil {
				return err
			}
			if err := owned.Delete(append(itob(a.Owner), a.PathID...)); err != nil {
				return err
			}
		}
		records = len(gone)
		for _, e := range readRealmEmoji(tx) { // store_realm_emoji.go
			live[e.File] = true
		}
		return tx.Bucket(bucketAvatarBlobs).ForEach(func(k, _ []byte) error {
			if len(k) > 64 {
				live[string(k[:64])] = true
			}
			return nil
		})
	})
	if err != nil {
		return 0, 0, err
	}
	dir := s.uploadsDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return records, 0, nil
	}
	if err != nil {
		return records, 0, err
	}
	for _, shard := range entries {
		if !shard.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, shard.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			info, err := f.Info()
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			path := filepath.Join(dir, shard.Name(), f.Name())
			if shard.Name() == "tmp" {
				if now.Sub(info.ModTime()) >= time.Hour {
					os.Remove(path)
				}
				continue
			}
			if !live[f.Name()] && now.Sub(info.ModTime()) >= grace && s.sweepBlob(path, f.Name(), now, grace) {
				blobs++
			}
		}
	}
	return records, blobs, nil
}

// uploadJanitor indexes links and sweeps unlinked files every interval
// until ctx ends.
func (s *store) uploadJanitor(ctx context.Context, interval, grace time.Duration, logf func(msg string, args ...any)) {
	s.sweepGrace.Store(int64(grace))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if records, blobs, err := s.sweepUploads(time.Now(), grace); err != nil && !errors.Is(err, errStoreClosed) {
			logf("upload sweep", "err", err)
		} else if records+blobs > 0 {
			logf("upload sweep", "records", records, "blobs", blobs)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// copyBlobs copies every blob of the directory src into dst (made 0700
// if need be), each written to a temporary file, fsynced and renamed:
// a backup's files. Blobs already in dst are the same bytes (their name
// is their hash) and are skipped, so a repeated backup copies only what
// is new. It answers how many it copied.
func copyBlobs(src, dst string) (int, error) {
	shards, err := os.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return 0, err
	}
	copied := 0
	for _, shard := range shards {
		if !shard.IsDir() || shard.Name() == "tmp" {
			continue
		}
		files, err := os.ReadDir(filepath.Join(src, shard.Name()))
		if err != nil {
			return copied, err
		}
		to := filepath.Join(dst, shard.Name())
		if err := os.MkdirAll(to, 0o700); err != nil {
			return copied, err
		}
		n := 0
		for _, f := range files {
			if !isBlobName(f.Name()) {
				continue
			}
			if _, err := os.Stat(filepath.Join(to, f.Name())); err == nil {
				continue
			}
			if err := copyBlob(filepath.Join(src, shard.Name(), f.Name()), to); err != nil {
				return copied, err
			}
			n++
		}
		if n > 0 {
			if err := syncDir(to); err != nil {
				return copied, err
			}
		}
		copied += n
	}
	return copied, syncDir(dst)
}

// copyBlob copies one blob into the directory to, atomically.
func copyBlob(from, to string) error {
	in, err := os.Open(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // swept meanwhile: it was no longer used
	}
	if err != nil {
		return err
	}
	defer in.Close()
	return writeFileAtomically(filepath.Join(to, filepath.Base(from)), func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}
