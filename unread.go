package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"
)

// Unread state is kept per (user, channel) without an entry per message,
// so that a send writes the message and its indexes and nothing for its
// readers, whether the channel has 10 subscribers or 100,000:
//
//   - a read watermark (bucketWatermarks): the messages of the channel at
//     or below it are read, those above it unread,
//   - but for two sets of exceptions: unread_below holds the messages at
//     or below the watermark that are unread, read_above those above it
//     that are read.
//
// The watermark exists exactly while the user is subscribed, and starts
// at the subscription's start (the largest message id when they joined),
// so messages sent before never count. Leaving drops it with its
// exceptions: nothing is unread in a channel one is not subscribed to.
// A message sent to the channel is above every subscriber's watermark,
// unread without a write; a sender reads their own message by moving
// their own state.
//
// Two rules keep the exceptions down to what was read or marked unread
// out of order:
//
//  1. the first message of the channel above the watermark is never in
//     read_above: reading it moves the watermark up past it and past the
//     read messages that follow (so a sender who has read the rest only
//     moves their watermark to their new message);
//  2. marking the messages just at and below the watermark unread moves
//     it down past them instead of listing them in unread_below.
//
// Marking a channel read moves the watermark to the newest message and
// drops both sets, whatever the number of messages that were unread.
// Listing walks unread_below and the channel's index above the watermark,
// skipping read_above: its cost is what it returns plus the read
// exceptions it passes over, never the channel's history below the
// watermark or its subscribers.
//
// A direct-message conversation fits as it is: a conversation is a
// channel for its members, keyed by 1<<63 | its id (store_dms.go), its
// messages in conversation_messages, which readMark.index walks as it
// walks a channel's.
//
// Each exception set is a bucket of its own, keyed user ‖ channel inside
// its family's bucket, so that dropping one is one DeleteBucket, and
// holds the message ids sorted, cut into chunks of at most
// unreadChunkSize ids. A chunk's key is its first id (8 bytes,
// big-endian); its value is
//
//	count (4 bytes) ‖ last id (8 bytes) ‖ uvarint deltas
//
// where the first delta is taken from the key (so it is 0) and each next
// one from the previous id. Ids grow, so an id added to a set is nearly
// always appended to its last chunk: one small value rewritten, however
// many the set holds.
const unreadChunkSize = 1000

const unreadHeaderSize = 12

func unreadKey(userID, channelID uint64) []byte {
	return append(itob(userID), itob(channelID)...)
}

// readMark is one user's unread state in one channel, as a transaction
// sees it.
type readMark struct {
	tx        *bbolt.Tx
	key       []byte // user id ‖ channel id
	channelID uint64
	watermark uint64
}

// loadMark reads the user's state in the channel; false when they are
// not subscribed (nothing there is unread for them).
func loadMark(tx *bbolt.Tx, userID, channelID uint64) (readMark, bool) {
	key := unreadKey(userID, channelID)
	v := tx.Bucket(bucketWatermarks).Get(key)
	if v == nil {
		return readMark{}, false
	}
	return readMark{tx: tx, key: key, channelID: channelID, watermark: btoi(v)}, true
}

func (m readMark) belowSets() *bbolt.Bucket { return m.tx.Bucket(bucketUnreadBelow) }
func (m readMark) aboveSets() *bbolt.Bucket { return m.tx.Bucket(bucketReadAbove) }

// below and above are the exception sets, nil when empty.
func (m readMark) below() *bbolt.Bucket { return m.belowSets().Bucket(m.key) }
func (m readMark) above() *bbolt.Bucket { return m.aboveSets().Bucket(m.key) }

// index walks the channel's messages, or the conversation's when
// channelID is a conversation's key (store_dms.go).
func (m readMark) index() indexSource {
	return recipientIndex(m.tx, m.channelID)
}

func (m *readMark) setWatermark(w uint64) error {
	if w == m.watermark {
		return nil
	}
	m.watermark = w
	return m.tx.Bucket(bucketWatermarks).Put(m.key, itob(w))
}

// startUnread begins the user's state in a channel they join: every
// message up to start (the largest id so far) is read.
func startUnread(tx *bbolt.Tx, userID, channelID, start uint64) error {
	return tx.Bucket(bucketWatermarks).Put(unreadKey(userID, channelID), itob(start))
}

// dropUnread ends the user's state in a channel they leave.
func dropUnread(tx *bbolt.Tx, userID, channelID uint64) error {
	key := unreadKey(userID, channelID)
	if err := dropSet(tx.Bucket(bucketUnreadBelow), key); err != nil {
		return err
	}
	if err := dropSet(tx.Bucket(bucketReadAbove), key); err != nil {
		return err
	}
	return tx.Bucket(bucketWatermarks).Delete(key)
}

// hasUnread tells whether anything is unread: an unread exception, or a
// message above the watermark (the first one is unread by rule 1).
func (m readMark) hasUnread() bool {
	if m.below() != nil {
		return true
	}
	_, above := m.index().iter(m.watermark+1, true)()
	return above
}

// readAll marks every message of the channel read for the user: the
// watermark goes to the newest message and both sets are dropped. It
// answers whether anything was unread (when nothing was, it writes
// nothing).
func readAll(tx *bbolt.Tx, userID, channelID uint64) (bool, error) {
	m, ok := loadMark(tx, userID, channelID)
	if !ok || !m.hasUnread() {
		return false, nil
	}
	if err := dropSet(m.belowSets(), m.key); err != nil {
		return false, err
	}
	if err := dropSet(m.aboveSets(), m.key); err != nil {
		return false, err
	}
	return true, m.setWatermark(tx.Bucket(bucketMessages).Sequence())
}

// markRead marks ids (messages of the channel, sorted, without
// duplicates) read for the user and answers those that were unread.
func markRead(tx *bbolt.Tx, userID, channelID uint64, ids []uint64) ([]uint64, error) {
	m, ok := loadMark(tx, userID, channelID)
	if !ok || len(ids) == 0 {
		return nil, nil
	}
	split, _ := slices.BinarySearch(ids, m.watermark+1)
	changed, err := removeFromSet(m.belowSets(), m.key, ids[:split])
	if err != nil || split == len(ids) {
		return changed, err
	}
	above := ids[split:]
	already, err := setAmong(m.above(), above)
	if err != nil {
		return nil, err
	}
	fresh := without(above, already)
	if len(fresh) == 0 {
		return changed, nil
	}
	return append(changed, fresh...), m.raise(fresh)
}

// raise records fresh (sorted, above the watermark, not yet read) as read
// and keeps rule 1: the watermark climbs the channel's index while the
// next message is read, and what it passes leaves read_above.
func (m *readMark) raise(fresh []uint64) error {
	next := m.index().iter(m.watermark+1, true)
	var readNext func() (uint64, bool)
	readHead, readLive := uint64(0), false
	if b := m.above(); b != nil {
		readNext = chunkSource{b}.iter(m.watermark+1, true)
		readHead, readLive = readNext()
	}
	w, passed, passedRead := m.watermark, 0, false
	for id, ok := next(); ok; id, ok = next() {
		switch {
		case passed < len(fresh) && fresh[passed] == id:
			passed++
		case readLive && readHead == id:
			passedRead = true
			readHead, readLive = readNext()
		default:
			return m.settleRaise(w, fresh[passed:], passedRead, readLive)
		}
		w = id
	}
	return m.settleRaise(w, fresh[passed:], passedRead, readLive)
}

func (m *readMark) settleRaise(w uint64, rest []uint64, passedRead, readLeft bool) error {
	switch {
	case passedRead && !readLeft:
		if err := dropSet(m.aboveSets(), m.key); err != nil {
			return err
		}
	case passedRead:
		if err := removeSetRange(m.aboveSets(), m.key, 0, w); err != nil {
			return err
		}
	}
	if err := addToSet(m.aboveSets(), m.key, rest); err != nil {
		return err
	}
	return m.setWatermark(w)
}

// markUnread marks ids (messages of the channel, sorted, without
// duplicates) unread for the user and answers those that were read.
// Callers make sure the user is subscribed; when not, nothing changes.
func markUnread(tx *bbolt.Tx, userID, channelID uint64, ids []uint64) ([]uint64, error) {
	m, ok := loadMark(tx, userID, channelID)
	if !ok || len(ids) == 0 {
		return nil, nil
	}
	split, _ := slices.BinarySearch(ids, m.watermark+1)
	below, above := ids[:split], ids[split:]
	// Those above first: lowering the watermark leaves read_above as it is.
	changed, err := removeFromSet(m.aboveSets(), m.key, above)
	if err != nil || len(below) == 0 {
		return changed, err
	}
	already, err := setAmong(m.below(), below)
	if err != nil {
		return nil, err
	}
	fresh := without(below, already)
	if len(fresh) == 0 {
		return changed, nil
	}
	if err := m.lower(fresh); err != nil {
		return nil, err
	}
	return mergeSorted(fresh, changed), nil
}

// lower records fresh (sorted, at or below the watermark, not yet unread)
// as unread, by rule 2: the watermark steps down the channel's index
// while the message at it is unread, and what it passes leaves
// unread_below.
func (m *readMark) lower(fresh []uint64) error {
	next := m.index().iter(m.watermark, false)
	var unreadNext func() (uint64, bool)
	unreadHead, unreadLive := uint64(0), false
	if b := m.below(); b != nil {
		unreadNext = chunkSource{b}.iter(m.watermark, false)
		unreadHead, unreadLive = unreadNext()
	}
	w, left, passedUnread := m.watermark, len(fresh), false
	for id, ok := next(); ok; id, ok = next() {
		switch {
		case left > 0 && fresh[left-1] == id:
			left--
		case unreadLive && unreadHead == id:
			passedUnread = true
			unreadHead, unreadLive = unreadNext()
		default:
			return m.settleLower(w, fresh[:left], passedUnread, unreadLive)
		}
		w = id - 1
	}
	return m.settleLower(w, fresh[:left], passedUnread, unreadLive)
}

func (m *readMark) settleLower(w uint64, rest []uint64, passedUnread, unreadLeft bool) error {
	switch {
	case passedUnread && !unreadLeft:
		if err := dropSet(m.belowSets(), m.key); err != nil {
			return err
		}
	case passedUnread:
		if err := removeSetRange(m.belowSets(), m.key, w+1, 1<<64-1); err != nil {
			return err
		}
	}
	if err := addToSet(m.belowSets(), m.key, rest); err != nil {
		return err
	}
	return m.setWatermark(w)
}

// without returns the ids of a (sorted) not in b (sorted).
func without(a, b []uint64) []uint64 {
	if len(b) == 0 {
		return a
	}
	out := make([]uint64, 0, len(a)-len(b))
	for _, id := range a {
		for len(b) > 0 && b[0] < id {
			b = b[1:]
		}
		if len(b) == 0 || b[0] != id {
			out = append(out, id)
		}
	}
	return out
}

// unread is the user's unread messages in the channel as an id source:
// unread_below, then the index above the watermark less read_above.
func (m readMark) unread() idSource {
	above := idSource(boundedSource{m.index(), m.watermark + 1})
	if b := m.above(); b != nil {
		above = exceptSource{above, chunkSource{b}}
	}
	if b := m.below(); b != nil {
		return mergeSource{chunkSource{b}, above}
	}
	return above
}

// userUnread is the user's unread messages in every channel.
func userUnread(tx *bbolt.Tx, userID uint64) idSource {
	var parts mergeSource
	prefix := itob(userID)
	c := tx.Bucket(bucketWatermarks).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		parts = append(parts, readMark{tx: tx, key: slices.Clone(k), channelID: btoi(k[8:]), watermark: btoi(v)}.unread())
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return parts
}

// collect takes every id of a source, ascending.
func collect(src idSource) []uint64 {
	var ids []uint64
	next := src.iter(0, true)
	for id, ok := next(); ok; id, ok = next() {
		ids = append(ids, id)
	}
	return ids
}

// allUnreadIDs returns the user's unread message ids in every channel,
// sorted.
func allUnreadIDs(tx *bbolt.Tx, userID uint64) ([]uint64, error) {
	return collect(userUnread(tx, userID)), nil
}

// unreadIDs returns the user's unread message ids in the channel, sorted.
func unreadIDs(tx *bbolt.Tx, userID, channelID uint64) ([]uint64, error) {
	m, ok := loadMark(tx, userID, channelID)
	if !ok {
		return nil, nil
	}
	return collect(m.unread()), nil
}

// unreadAmong answers which of ids (messages of the channel, sorted) are
// unread, decoding only the exception chunks that could hold them.
func unreadAmong(tx *bbolt.Tx, userID, channelID uint64, ids []uint64) ([]uint64, error) {
	m, ok := loadMark(tx, userID, channelID)
	if !ok || len(ids) == 0 {
		return nil, nil
	}
	split, _ := slices.BinarySearch(ids, m.watermark+1)
	unread, err := setAmong(m.below(), ids[:split])
	if err != nil {
		return nil, err
	}
	read, err := setAmong(m.above(), ids[split:])
	if err != nil {
		return nil, err
	}
	return append(unread, without(ids[split:], read)...), nil
}

// ---- exception sets ----

// addToSet adds ids (sorted ascending, no duplicates) to the set under
// key in parent. Ids already there stay as they are.
func addToSet(parent *bbolt.Bucket, key []byte, ids []uint64) error {
	if len(ids) == 0 {
		return nil
	}
	b, err := parent.CreateBucketIfNotExists(key)
	if err != nil {
		return err
	}
	b.FillPercent = 0.95 // ids mostly grow: fill pages instead of splitting them in half
	lastKey, lastValue := b.Cursor().Last()
	if lastKey != nil && ids[0] <= chunkLast(lastValue) {
		return mergeIntoSet(b, ids)
	}
	// The common case: every id is larger than any in the set.
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

// mergeIntoSet is the rarer path: ids that fall among those already
// stored. Only the chunks that receive an id are rewritten, split again
// to at most unreadChunkSize ids each.
func mergeIntoSet(b *bbolt.Bucket, ids []uint64) error {
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

// dropSet deletes the set under key in parent, if there is one. A set
// stored inline in its parent's page goes at once; a larger one frees
// its pages without rewriting them.
func dropSet(parent *bbolt.Bucket, key []byte) error {
	if parent.Bucket(key) == nil {
		return nil
	}
	return parent.DeleteBucket(key)
}

// removeFromSet removes ids (sorted ascending) from the set under key in
// parent and returns those that were in it. Only the chunks whose range
// holds one of the ids are decoded and rewritten.
func removeFromSet(parent *bbolt.Bucket, key []byte, ids []uint64) ([]uint64, error) {
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

// removeSetRange removes the ids from lo to hi from the set under key in
// parent: the chunks wholly inside go without being decoded, the two at
// the ends are rewritten.
func removeSetRange(parent *bbolt.Bucket, key []byte, lo, hi uint64) error {
	b := parent.Bucket(key)
	if b == nil {
		return nil
	}
	var gone [][]byte
	var kept []uint64
	c := b.Cursor()
	for k, v := seekChunk(c, lo); k != nil && btoi(k) <= hi; k, v = c.Next() {
		first, last := btoi(k), chunkLast(v)
		if last < lo {
			continue
		}
		gone = append(gone, slices.Clone(k))
		if first < lo || last > hi {
			held, err := decodeChunk(nil, first, v)
			if err != nil {
				return err
			}
			for _, id := range held {
				if id < lo || id > hi {
					kept = append(kept, id)
				}
			}
		}
	}
	for _, k := range gone { // after the walk: no writes under a live cursor
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	if err := putChunks(b, kept); err != nil {
		return err
	}
	if k, _ := b.Cursor().First(); k == nil {
		return parent.DeleteBucket(key)
	}
	return nil
}

// setAmong answers which of ids (sorted) are in the set b (nil: empty),
// decoding only the chunks that could hold them.
func setAmong(b *bbolt.Bucket, ids []uint64) ([]uint64, error) {
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

// chunkIDs returns every id of a set, sorted.
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

// migrateUnread converts schema 2's unread bucket (user id ‖ channel id →
// bucket of every unread id, in chunks) into watermarks and exceptions,
// and gives every subscription the start 0 (they joined before any
// message that is still to come). A subscription without unread
// messages gets the largest message id as its watermark. Otherwise the
// watermark goes where it leaves the fewest exceptions: placeMark walks
// the channel down from its newest message, and stops once the read
// messages it passed outnumber the best count of exceptions found, so it
// costs about twice the unread ids at most, not the channel's history.
// The old buckets are deleted by migrate once this is done.
func migrateUnread(tx *bbolt.Tx) error {
	seq := tx.Bucket(bucketMessages).Sequence()
	subscribers := tx.Bucket(bucketSubscribers)
	var keys [][]byte
	subscribers.ForEach(func(k, _ []byte) error {
		keys = append(keys, slices.Clone(k))
		return nil
	})
	for _, k := range keys { // written after the walk: no writes under a live cursor
		if err := subscribers.Put(k, itob(0)); err != nil {
			return err
		}
	}
	old := tx.Bucket([]byte("unread"))
	keys = keys[:0]
	tx.Bucket(bucketSubscriptions).ForEach(func(k, _ []byte) error {
		keys = append(keys, slices.Clone(k))
		return nil
	})
	for _, k := range keys {
		var unread []uint64
		if old != nil {
			if b := old.Bucket(k); b != nil {
				var err error
				if unread, err = chunkIDs(b); err != nil {
					return fmt.Errorf("unread of user %d in channel %d: %w", btoi(k[:8]), btoi(k[8:]), err)
				}
			}
		}
		if err := placeMark(tx, btoi(k[:8]), btoi(k[8:]), unread, seq); err != nil {
			return err
		}
	}
	return nil
}

// placeMark writes the state that leaves exactly unread (sorted message
// ids of the channel) unread, with the fewest exceptions placeMark can
// find cheaply (migrateUnread says how).
func placeMark(tx *bbolt.Tx, userID, channelID uint64, unread []uint64, seq uint64) error {
	index := indexSource{tx.Bucket(bucketChannelMessages), itob(channelID)}
	// Passing a message down moves it above the watermark: one exception
	// fewer if it is unread, one more if it is read.
	w, best := seq, len(unread)
	exceptions, read, left := len(unread), 0, len(unread)
	next := index.iter(seq, false)
	for id, ok := next(); ok && read < best && left > 0; id, ok = next() {
		for left > 0 && unread[left-1] > id {
			left-- // not a message of the channel: no state can hold it
		}
		if left > 0 && unread[left-1] == id {
			left--
			if exceptions--; exceptions < best {
				w, best = id-1, exceptions
			}
			continue
		}
		read++
		exceptions++
	}
	if err := startUnread(tx, userID, channelID, w); err != nil {
		return err
	}
	split, _ := slices.BinarySearch(unread, w+1)
	key := unreadKey(userID, channelID)
	if err := addToSet(tx.Bucket(bucketUnreadBelow), key, unread[:split]); err != nil {
		return err
	}
	var readAbove []uint64
	above := unread[split:]
	next = index.iter(w+1, true)
	for id, ok := next(); ok && id <= seq; id, ok = next() {
		for len(above) > 0 && above[0] < id {
			above = above[1:]
		}
		if len(above) == 0 || above[0] != id {
			readAbove = append(readAbove, id)
		}
	}
	return addToSet(tx.Bucket(bucketReadAbove), key, readAbove)
}
