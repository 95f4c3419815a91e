package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/bbolt"
)

// Reading messages: a narrow (Zulip's filter), an anchor and a range
// around it. The store walks one index (a topic's, a channel's, the
// user's unread ids, or every message) from the anchor outwards and keeps
// the messages that the user may see and that match every term, so a page
// costs about what it returns, not what the channel holds.

// largestMessageID is what Zulip answers as the anchor "newest" (and
// "first_unread" with nothing unread): larger than any message id.
const largestMessageID = 10_000_000_000_000_000

// narrowTerm is one term of a narrow, its operand already typed.
type narrowTerm struct {
	Operator string // channel, topic, is, sender, id, search, has, in, dm; aliases are mapped
	Name     string // channel or topic name, sender e-mail, or the operand of is/search/has/in
	ID       uint64 // channel, sender or message id, when given as a number
	Negated  bool
}

// anchor kinds besides a plain message id.
const (
	anchorID = iota
	anchorNewest
	anchorOldest
	anchorFirstUnread
)

// messageRange selects messages around an anchor within a narrow.
type messageRange struct {
	Narrow        []narrowTerm
	AnchorKind    int
	Anchor        uint64 // for anchorID
	NumBefore     int
	NumAfter      int
	IncludeAnchor bool
}

// messagePage is a selected range, oldest first, with what Zulip
// reports about it.
type messagePage struct {
	Messages    []pagedMessage
	Anchor      uint64
	FoundAnchor bool
	FoundOldest bool
	FoundNewest bool
}

// pagedMessage is a message as one user sees it.
type pagedMessage struct {
	message
	Channel    channel
	Sender     user
	Unread     bool
	Flags      byte // flagStarred, flagCollapsed
	Subscribed bool
}

var (
	errNarrowUnknownChannel = errors.New("unknown channel in narrow")
	errNarrowUnknownUser    = errors.New("unknown user in narrow")
)

// messages answers a range of the messages the user may see.
func (s *store) messages(u user, q messageRange) (messagePage, error) {
	var page messagePage
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		page, err = selectRange(tx, u, q)
		return err
	})
	return page, err
}

// flagUpdate is the outcome of POST /messages/flags/narrow.
type flagUpdate struct {
	messagePage
	Changed []uint64 // sorted
}

// updateFlagsInRange applies a flag change to a selected range, in one
// transaction.
func (s *store) updateFlagsInRange(u user, q messageRange, change flagChange) (flagUpdate, error) {
	var result flagUpdate
	err := s.update(func(tx *bbolt.Tx) error {
		page, err := selectRange(tx, u, q)
		if err != nil {
			return err
		}
		result = flagUpdate{messagePage: page}
		byChannel := map[uint64][]uint64{}
		for _, m := range page.Messages {
			if flagChanges(m, change) {
				byChannel[m.ChannelID] = append(byChannel[m.ChannelID], m.ID)
			}
		}
		for channelID, ids := range byChannel {
			done, err := s.applyFlag(tx, u.ID, channelID, ids, change)
			if err != nil {
				return err
			}
			result.Changed = append(result.Changed, done...)
		}
		return nil
	})
	slices.Sort(result.Changed)
	return result, err
}

// flagChanges tells whether the change would alter the message's flag.
func flagChanges(m pagedMessage, change flagChange) bool {
	switch change.Flag {
	case "read":
		return m.Unread == change.Add
	case "starred":
		return (m.Flags&flagStarred != 0) != change.Add
	}
	return (m.Flags&flagCollapsed != 0) != change.Add
}

// rangeReader holds what one selection looks up again and again.
type rangeReader struct {
	tx    *bbolt.Tx
	user  user
	terms []narrowTerm
	// history: a narrow to one channel (without is: terms) shows all of
	// its messages the user may access; otherwise only those of channels
	// they are subscribed to, as Zulip shows only messages received.
	history  bool
	channels map[uint64]channel
	access   map[uint64]bool
	senders  map[uint64]user
	chunks   map[uint64][]uint64 // channel → the unread chunk decoded last
}

func selectRange(tx *bbolt.Tx, u user, q messageRange) (messagePage, error) {
	r := &rangeReader{tx: tx, user: u, channels: map[uint64]channel{}, access: map[uint64]bool{}, senders: map[uint64]user{}, chunks: map[uint64][]uint64{}}
	if err := r.resolve(q.Narrow); err != nil {
		return messagePage{}, err
	}
	src := r.source()
	page := messagePage{}
	switch q.AnchorKind {
	case anchorNewest:
		page.Anchor = largestMessageID
	case anchorOldest:
		page.Anchor = 0
	case anchorFirstUnread:
		page.Anchor = largestMessageID
		if m, ok := r.firstUnread(); ok {
			page.Anchor = m
		}
	default:
		page.Anchor = q.Anchor
	}

	var before []pagedMessage
	if q.NumBefore > 0 && page.Anchor > 0 {
		src.walk(page.Anchor-1, false, func(id uint64) bool {
			if m, ok := r.match(id); ok {
				before = append(before, m)
			}
			return len(before) < q.NumBefore
		})
	}
	slices.Reverse(before)
	page.Messages = before
	if q.IncludeAnchor && page.Anchor != 0 && page.Anchor != largestMessageID {
		if m, ok := r.match(page.Anchor); ok {
			page.Messages = append(page.Messages, m)
			page.FoundAnchor = true
		}
	}
	after := 0
	if q.NumAfter > 0 && page.Anchor < largestMessageID {
		src.walk(page.Anchor+1, true, func(id uint64) bool {
			if m, ok := r.match(id); ok {
				page.Messages = append(page.Messages, m)
				after++
			}
			return after < q.NumAfter
		})
	}
	page.FoundOldest = q.AnchorKind == anchorOldest || len(before) < q.NumBefore
	page.FoundNewest = q.AnchorKind == anchorNewest || after < q.NumAfter
	return page, nil
}

// resolve turns channel and sender names into ids.
func (r *rangeReader) resolve(terms []narrowTerm) error {
	for _, t := range terms {
		switch t.Operator {
		case "channel":
			var ch channel
			var err error
			if t.Name != "" {
				ch, err = channelByName(r.tx, t.Name)
			} else {
				ch, err = channelByID(r.tx, t.ID)
			}
			if err != nil {
				return &namedError{errNarrowUnknownChannel, t.Name + idText(t)}
			}
			t.ID, t.Name = ch.ID, ""
		case "sender":
			if t.Name != "" {
				u, err := userByEmail(r.tx, t.Name)
				if err != nil {
					return &namedError{errNarrowUnknownUser, t.Name}
				}
				t.ID, t.Name = u.ID, ""
			} else if _, err := r.sender(t.ID); err != nil {
				return &namedError{errNarrowUnknownUser, idText(t)}
			}
		}
		r.terms = append(r.terms, t)
	}
	hasChannel, hasIs := false, false
	for _, t := range r.terms {
		hasChannel = hasChannel || (t.Operator == "channel" && !t.Negated)
		hasIs = hasIs || t.Operator == "is"
	}
	r.history = hasChannel && !hasIs
	return nil
}

func idText(t narrowTerm) string {
	if t.Name != "" {
		return ""
	}
	return strconv.FormatUint(t.ID, 10)
}

// source picks the narrowest index that every match must be in.
func (r *rangeReader) source() idSource {
	var channelID uint64
	topic, unread := "", false
	for _, t := range r.terms {
		if t.Negated {
			continue
		}
		switch {
		case t.Operator == "channel":
			channelID = t.ID
		case t.Operator == "topic":
			topic = t.Name
		case t.Operator == "is" && t.Name == "unread":
			unread = true
		case t.Operator == "id":
			return idList{t.ID}
		}
	}
	switch {
	case unread:
		return r.unreadIDs(channelID)
	case channelID != 0 && topic != "":
		return indexSource{r.tx.Bucket(bucketTopicMessages), topicPrefix(channelID, topic)}
	case channelID != 0:
		return indexSource{r.tx.Bucket(bucketChannelMessages), itob(channelID)}
	}
	return indexSource{r.tx.Bucket(bucketMessages), nil}
}

// unreadIDs lists the user's unread ids, in one channel or in all.
func (r *rangeReader) unreadIDs(channelID uint64) idList {
	var ids []uint64
	prefix := itob(r.user.ID)
	if channelID != 0 {
		prefix = unreadKey(r.user.ID, channelID)
	}
	unread := r.tx.Bucket(bucketUnread)
	c := unread.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if b := unread.Bucket(k); b != nil {
			ids, _ = chunkIDsAppend(ids, b)
		}
	}
	slices.Sort(ids)
	return ids
}

func chunkIDsAppend(ids []uint64, b *bbolt.Bucket) ([]uint64, error) {
	more, err := chunkIDs(b)
	return append(ids, more...), err
}

// firstUnread is the oldest unread message that matches the narrow.
func (r *rangeReader) firstUnread() (uint64, bool) {
	var channelID uint64
	for _, t := range r.terms {
		if t.Operator == "channel" && !t.Negated {
			channelID = t.ID
		}
	}
	var found uint64
	r.unreadIDs(channelID).walk(0, true, func(id uint64) bool {
		if _, ok := r.match(id); ok {
			found = id
			return false
		}
		return true
	})
	return found, found != 0
}

// match loads a message and checks access and every term.
func (r *rangeReader) match(id uint64) (pagedMessage, bool) {
	v := r.tx.Bucket(bucketMessages).Get(itob(id))
	if v == nil {
		return pagedMessage{}, false
	}
	var m pagedMessage
	if err := json.Unmarshal(v, &m.message); err != nil || !r.canSee(m.ChannelID) {
		return pagedMessage{}, false
	}
	m.Subscribed = isSubscribed(r.tx, r.user.ID, m.ChannelID)
	if !m.Subscribed && !r.history {
		return pagedMessage{}, false
	}
	m.Channel = r.channels[m.ChannelID]
	m.Unread = r.isUnread(m.ChannelID, id)
	if f := r.tx.Bucket(bucketFlags).Get(append(itob(r.user.ID), itob(id)...)); f != nil {
		m.Flags = f[0]
	}
	for _, t := range r.terms {
		var ok bool
		switch t.Operator {
		case "channel":
			ok = m.ChannelID == t.ID
		case "topic":
			ok = strings.EqualFold(m.Topic, t.Name)
		case "sender":
			ok = m.SenderID == t.ID
		case "id":
			ok = m.ID == t.ID
		case "is":
			switch t.Name {
			case "unread":
				ok = m.Unread
			case "starred":
				ok = m.Flags&flagStarred != 0
			case "resolved":
				ok = strings.HasPrefix(m.Topic, "✔ ")
			}
		case "search":
			ok = containsFold(m.Content, t.Name) || containsFold(m.Topic, t.Name)
		case "has":
			ok = t.Name == "link" && (strings.Contains(m.Content, "http://") || strings.Contains(m.Content, "https://"))
		case "in", "near":
			ok = true // nothing is muted in zulite, and near only positions a client's view
		case "channels":
			ok = !r.channels[m.ChannelID].Private
		}
		if ok == t.Negated {
			return pagedMessage{}, false
		}
	}
	sender, err := r.sender(m.SenderID)
	if err != nil {
		return pagedMessage{}, false
	}
	m.Sender = sender
	return m, true
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// canSee is the access rule for a channel's messages, cached.
func (r *rangeReader) canSee(channelID uint64) bool {
	if ok, seen := r.access[channelID]; seen {
		return ok
	}
	ch, err := channelByID(r.tx, channelID)
	ok := err == nil && canAccess(r.tx, r.user, ch)
	r.channels[channelID], r.access[channelID] = ch, ok
	return ok
}

func (r *rangeReader) sender(id uint64) (user, error) {
	if u, ok := r.senders[id]; ok {
		return u, nil
	}
	var u user
	if err := getJSON(r.tx.Bucket(bucketUsers), itob(id), &u); err != nil {
		return u, err
	}
	r.senders[id] = u
	return u, nil
}

// isUnread looks the id up in the one chunk that could hold it, keeping
// the chunk decoded for the neighbours that a page asks about next.
func (r *rangeReader) isUnread(channelID, id uint64) bool {
	if ids := r.chunks[channelID]; len(ids) > 0 && ids[0] <= id && id <= ids[len(ids)-1] {
		_, found := slices.BinarySearch(ids, id)
		return found
	}
	b := r.tx.Bucket(bucketUnread).Bucket(unreadKey(r.user.ID, channelID))
	if b == nil {
		return false
	}
	c := b.Cursor()
	k, v := c.Seek(itob(id))
	if k == nil || btoi(k) > id {
		k, v = c.Prev()
	}
	if k == nil || chunkLast(v) < id {
		return false
	}
	ids, err := decodeChunk(nil, btoi(k), v)
	if err != nil {
		return false
	}
	r.chunks[channelID] = ids
	_, found := slices.BinarySearch(ids, id)
	return found
}

// idSource walks message ids from a start, up or down, while fn says so.
type idSource interface {
	walk(from uint64, up bool, fn func(id uint64) bool)
}

// indexSource walks the keys of an index under a prefix; each key ends in
// a message id.
type indexSource struct {
	b      *bbolt.Bucket
	prefix []byte
}

func (s indexSource) walk(from uint64, up bool, fn func(id uint64) bool) {
	c := s.b.Cursor()
	k, _ := c.Seek(append(slices.Clone(s.prefix), itob(from)...))
	if !up { // step back to the largest key at or below prefix ‖ from
		if k == nil {
			k, _ = c.Last()
		} else if !bytes.HasPrefix(k, s.prefix) || btoi(k[len(s.prefix):]) > from {
			k, _ = c.Prev()
		}
	}
	for ; k != nil && bytes.HasPrefix(k, s.prefix); k = step(c, up) {
		if !fn(btoi(k[len(s.prefix):])) {
			return
		}
	}
}

func step(c *bbolt.Cursor, up bool) []byte {
	var k []byte
	if up {
		k, _ = c.Next()
	} else {
		k, _ = c.Prev()
	}
	return k
}

// idList is a sorted list of ids walked like an index.
type idList []uint64

func (l idList) walk(from uint64, up bool, fn func(id uint64) bool) {
	i, _ := slices.BinarySearch(l, from)
	if up {
		for ; i < len(l); i++ {
			if !fn(l[i]) {
				return
			}
		}
		return
	}
	if i == len(l) || l[i] > from {
		i--
	}
	for ; i >= 0; i-- {
		if !fn(l[i]) {
			return
		}
	}
}
