package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

	"go.etcd.io/bbolt"
)

// Unread state is kept per (user, channel) in a bucket of its own inside
// bucketUnread, so that marking a channel read is one DeleteBucket: bbolt
// frees the nested bucket's pages without rewriting them, and the cost no
// longer depends on how many messages were unread.
//
// Inside that bucket the message ids are sorted and cut into chunks of at
// most unreadChunkSize ids. A chunk's key is its first id (8 bytes,
// big-endian); its value is
//
//	count (4 bytes) ‖ last id (8 bytes) ‖ uvarint deltas
//
// where the first delta is taken from the key (so it is 0) and each next
// one from the previous id. Message ids grow, so a new unread message is
// nearly always appended to the last chunk: one small value rewritten,
// however many ids are unread.
const unreadChunkSize = 1000

const unreadHeaderSize = 12

func unreadKey(userID, channelID uint64) []byte {
	return append(itob(userID), itob(channelID)...)
}

// addUnread records ids (sorted ascending, no duplicates) as unread for
// the user in the channel. Ids already unread stay as they are.
func addUnread(tx *bbolt.Tx, userID, channelID uint64, ids []uint64) error {
	if len(ids) == 0 {
		return nil
	}
	b, err := tx.Bucket(bucketUnread).CreateBucketIfNotExists(unreadKey(userID, channelID))
	if err != nil {
		return err
	}
	b.FillPercent = 0.95 // ids only grow: fill pages instead of splitting them in half
	lastKey, lastValue := b.Cursor().Last()
	if lastKey != nil && ids[0] <= chunkLast(lastValue) {
		return mergeUnread(b, ids)
	}
	// The common case: every id is newer than any unread one.
	if lastKey != nil && chunkCount(lastValue) < unreadChunkSize {
		room := unreadChunkSize - chunkCount(lastValue)
		n := min(room, len(ids))
		if err := b.Put(lastKey, appendToChunk(lastValue, ids[:n])); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return putChunks(b, ids)
}

// mergeUnread is the rarer path: ids that fall among those already
// stored (a client marked older messages unread again). Only the chunks
// that receive an id are rewritten, split again to at most
// unreadChunkSize ids each.
func mergeUnread(b *bbolt.Bucket, ids []uint64) error {
	type change struct {
		key, value []byte
		add        []uint64
	}
	var changes []change
	c := b.Cursor()
	for len(ids) > 0 {
		k, v := seekChunk(c, ids[0])
		bound := uint64(1<<64 - 1)
		if next, _ := c.Next(); next != nil {
			bound = btoi(next)
		}
		n := 0
		for n < len(ids) && ids[n] < bound {
			n++
		}
		changes = append(changes, change{slices.Clone(k), slices.Clone(v), ids[:n]})
		ids = ids[n:]
	}
	for _, ch := range changes { // written after the walk: no writes under a live cursor
		held, err := decodeChunk(nil, btoi(ch.key), ch.value)
		if err != nil {
			return err
		}
		merged := mergeSorted(held, ch.add)
		if len(merged) == len(held) {
			continue
		}
		if err := b.Delete(ch.key); err != nil {
			return err
		}
		if err := putChunks(b, merged); err != nil {
			return err
		}
	}
	return nil
}

// seekChunk positions c on the chunk that would hold id: the last one
// whose first id is at most id, or the first chunk. The bucket must not
// be empty.
func seekChunk(c *bbolt.Cursor, id uint64) (k, v []byte) {
	k, _ = c.Seek(itob(id))
	switch {
	case k == nil:
		k, _ = c.Last()
	case btoi(k) > id:
		if prev, _ := c.Prev(); prev != nil {
			k = prev
		}
	}
	return c.Seek(slices.Clone(k)) // a clean position to step from
}

// putChunks stores sorted ids as new chunks.
func putChunks(b *bbolt.Bucket, ids []uint64) error {
	for len(ids) > 0 {
		n := min(unreadChunkSize, len(ids))
		if err := b.Put(itob(ids[0]), appendToChunk(nil, ids[:n])); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// removeAllUnread marks every message of the channel read for the user.
// A small unread set (stored inline in its parent's page) is deleted at
// once. A larger one is not: deleting a bucket visits every one of its
// pages. It is moved, which rewrites only the parents' leaves, into a
// holder in bucketUnreadTrash that the janitor (janitor.go) deletes
// later, off the request path. So the cost of marking a channel read does
// not depend on how many messages were unread. trashed says whether the
// janitor has work.
func removeAllUnread(tx *bbolt.Tx, userID, channelID uint64) (trashed bool, err error) {
	parent, key := tx.Bucket(bucketUnread), unreadKey(userID, channelID)
	b := parent.Bucket(key)
	if b == nil {
		return false, nil
	}
	if b.Root() == 0 { // inline: no pages of its own to visit
		return false, parent.DeleteBucket(key)
	}
	trash := tx.Bucket(bucketUnreadTrash)
	seq, err := trash.NextSequence()
	if err != nil {
		return false, err
	}
	holder, err := trash.CreateBucket(itob(seq))
	if err != nil {
		return false, err
	}
	return true, parent.MoveBucket(key, holder)
}

// allUnreadIDs returns the user's unread message ids in every channel,
// sorted.
func allUnreadIDs(tx *bbolt.Tx, userID uint64) ([]uint64, error) {
	var ids []uint64
	prefix := itob(userID)
	unread := tx.Bucket(bucketUnread)
	c := unread.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		more, err := chunkIDs(unread.Bucket(k))
		if err != nil {
			return nil, err
		}
		ids = append(ids, more...)
	}
	slices.Sort(ids)
	return ids, nil
}

// unreadIDs returns the user's unread message ids in the channel, sorted.
func unreadIDs(tx *bbolt.Tx, userID, channelID uint64) ([]uint64, error) {
	b := tx.Bucket(bucketUnread).Bucket(unreadKey(userID, channelID))
	if b == nil {
		return nil, nil
	}
	return chunkIDs(b)
}

// unreadCount counts the user's unread messages in the channel from the
// chunk headers alone.
func unreadCount(tx *bbolt.Tx, userID, channelID uint64) int {
	b := tx.Bucket(bucketUnread).Bucket(unreadKey(userID, channelID))
	if b == nil {
		return 0
	}
	total := 0
	b.ForEach(func(_, v []byte) error {
		total += chunkCount(v)
		return nil
	})
	return total
}

func chunkIDs(b *bbolt.Bucket) ([]uint64, error) {
	var ids []uint64
	err := b.ForEach(func(k, v []byte) error {
		var err error
		ids, err = decodeChunk(ids, btoi(k), v)
		return err
	})
	return ids, err
}

func chunkCount(v []byte) int   { return int(binary.BigEndian.Uint32(v[0:4])) }
func chunkLast(v []byte) uint64 { return binary.BigEndian.Uint64(v[4:12]) }

// appendToChunk returns a new chunk value: chunk (nil for a new chunk)
// followed by ids, all larger than the chunk's last id. chunk itself is
// never modified, since it may point into bbolt's read-only mapping.
func appendToChunk(chunk []byte, ids []uint64) []byte {
	out := make([]byte, unreadHeaderSize, len(chunk)+unreadHeaderSize+len(ids)*binary.MaxVarintLen64)
	prev := ids[0] // a new chunk's first delta is 0: the key holds the id
	count := 0
	if chunk != nil {
		out = append(out[:0], chunk...)
		prev = chunkLast(chunk)
		count = chunkCount(chunk)
	}
	for _, id := range ids {
		out = binary.AppendUvarint(out, id-prev)
		prev = id
	}
	binary.BigEndian.PutUint32(out[0:4], uint32(count+len(ids)))
	binary.BigEndian.PutUint64(out[4:12], prev)
	return out
}

var errCorruptChunk = errors.New("corrupt unread chunk")

func decodeChunk(ids []uint64, first uint64, v []byte) ([]uint64, error) {
	if len(v) < unreadHeaderSize {
		return nil, errCorruptChunk
	}
	prev := first
	rest := v[unreadHeaderSize:]
	for n := chunkCount(v); n > 0; n-- {
		delta, size := binary.Uvarint(rest)
		if size <= 0 {
			return nil, errCorruptChunk
		}
		rest = rest[size:]
		prev += delta
		ids = append(ids, prev)
	}
	return ids, nil
}

// mergeSorted merges two sorted id lists, dropping duplicates.
func mergeSorted(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// removeUnread marks ids (sorted ascending) read for the user in the
// channel and returns those that were unread. Only the chunks whose range
// holds one of the ids are decoded and rewritten.
func removeUnread(tx *bbolt.Tx, userID, channelID uint64, ids []uint64) ([]uint64, error) {
	parent := tx.Bucket(bucketUnread)
	key := unreadKey(userID, channelID)
	b := parent.Bucket(key)
	if b == nil || len(ids) == 0 {
		return nil, nil
	}
	type chunk struct {
		first uint64
		ids   []uint64
	}
	var touched []chunk
	var removed []uint64
	c := b.Cursor()
	for k, v := seekChunk(c, ids[0]); k != nil && len(ids) > 0; k, v = c.Next() {
		first, last := btoi(k), chunkLast(v)
		for len(ids) > 0 && ids[0] < first {
			ids = ids[1:]
		}
		if len(ids) == 0 || ids[0] > last {
			continue
		}
		held, err := decodeChunk(nil, first, v)
		if err != nil {
			return nil, err
		}
		kept := held[:0:0]
		for _, id := range held {
			for len(ids) > 0 && ids[0] < id {
				ids = ids[1:]
			}
			if len(ids) > 0 && ids[0] == id {
				removed = append(removed, id)
				continue
			}
			kept = append(kept, id)
		}
		touched = append(touched, chunk{first, kept})
	}
	for _, ch := range touched { // rewrite after the walk: no writes under a live cursor
		if err := b.Delete(itob(ch.first)); err != nil {
			return nil, err
		}
		if err := putChunks(b, ch.ids); err != nil {
			return nil, err
		}
	}
	if k, _ := b.Cursor().First(); k == nil {
		return removed, parent.DeleteBucket(key)
	}
	return removed, nil
}

// removeAllUnreadOf marks every message read for the user, in every
// channel; trashed says whether the janitor has work, as for
// removeAllUnread.
func removeAllUnreadOf(tx *bbolt.Tx, userID uint64) (trashed bool, err error) {
	prefix := itob(userID)
	var channels []uint64
	c := tx.Bucket(bucketUnread).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		channels = append(channels, btoi(k[8:]))
	}
	for _, channelID := range channels {
		moved, err := removeAllUnread(tx, userID, channelID)
		if err != nil {
			return false, err
		}
		trashed = trashed || moved
	}
	return trashed, nil
}

// unreadAmong answers which of ids (sorted) are unread, decoding only the
// chunks that could hold them.
func unreadAmong(tx *bbolt.Tx, userID, channelID uint64, ids []uint64) ([]uint64, error) {
	b := tx.Bucket(bucketUnread).Bucket(unreadKey(userID, channelID))
	if b == nil || len(ids) == 0 {
		return nil, nil
	}
	var found, held []uint64
	var first, last uint64
	c := b.Cursor()
	for _, id := range ids {
		if held == nil || id < first || id > last {
			k, v := seekChunk(c, id)
			var err error
			if held, err = decodeChunk(held[:0], btoi(k), v); err != nil {
				return nil, err
			}
			first, last = btoi(k), chunkLast(v)
		}
		if _, ok := slices.BinarySearch(held, id); ok {
			found = append(found, id)
		}
	}
	return found, nil
}
