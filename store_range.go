package main

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"go.etcd.io/bbolt"
)

// Reading messages: a narrow (narrow.go), an anchor and a range around
// it. The store walks one index (a topic's, a channel's, the user's
// unread messages, or every message) from the anchor outwards and keeps the
// messages that the user may see and that match every term, so a page
// costs about what it returns, not what the channel holds.

// largestMessageID is what Zulip answers as the anchor "newest" (and
// "first_unread" with nothing unread): larger than any message id.
const largestMessageID = 10_000_000_000_000_000

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
	Flags      byte // flagStarred, flagCollapsed, the mention flags
	Subscribed bool
	Reactions  []storedReaction // oldest first (GET /messages only)
	// Submessages, oldest first: GET /messages reads them, a new
	// message's event carries its widget (store_submessages.go).
	Submessages []storedSubmessage

	// Participants: a direct message's, sorted by id (store_dms.go).
	Participants []user

	// The reader's visibility policy for a channel message's topic, and
	// whether the topic is muted by it or by its channel's muting
	// (store_user_topics.go): known (Policies) when the narrow asks.
	TopicPolicy int
	TopicMuted  bool
	Policies    bool
}

// messages answers a range of the messages the user may see.
func (s *store) messages(u user, q messageRange) (messagePage, error) {
	var page messagePage
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		page, err = s.selectRange(tx, u, q)
		attachReactions(tx, page.Messages)
		attachSubmessages(tx, page.Messages)
		return err
	})
	return page, err
}

// flagUpdate is the outcome of POST /messages/flags/narrow.
type flagUpdate struct {
	messagePage
	Changed      []uint64 // sorted
	Unsubscribed []uint64 // channels skipped when removing read
}

// updateFlagsInRange applies a flag change to a selected range. The
// selection runs in a read transaction: the walk costs what the narrow
// and the history make it cost, and only this caller waits for it. The
// commit then applies the change to the ids selected (at most 5000),
// each channel's access and subscription checked again, so the committer
// never does work that scales with history; applyFlag changes only what
// still needs changing, so a change made meanwhile is neither undone nor
// counted twice.
func (s *store) updateFlagsInRange(u user, q messageRange, change flagChange) (flagUpdate, error) {
	var page messagePage
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		page, err = s.selectRange(tx, u, q)
		return err
	})
	if err != nil {
		return flagUpdate{}, err
	}
	byChannel := map[uint64][]uint64{} // by read key: a conversation's is its own (store_dms.go)
	for _, m := range page.Messages {
		if flagChanges(m, change) {
			byChannel[m.readKey()] = append(byChannel[m.readKey()], m.ID)
		}
	}
	channels := slices.Sorted(maps.Keys(byChannel))
	if len(channels) == 0 { // nothing to change: no commit
		return flagUpdate{messagePage: page, Changed: []uint64{}}, nil
	}
	var result flagUpdate
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		result = flagUpdate{messagePage: page}
		for _, channelID := range channels {
			if isConversationKey(channelID) { // a participant stays one
				done, err := s.applyFlag(tx, u.ID, channelID, byChannel[channelID], change)
				if err != nil {
					return err
				}
				result.Changed = append(result.Changed, done...)
				continue
			}
			ch, err := s.channelByID(tx, channelID)
			if err != nil || !s.canAccess(tx, u, ch) && !(change.Flag == "read" && change.Add) {
				continue // gone, or no longer the user's to flag (reading what was unread is always fine)
			}
			if change.Flag == "read" && !change.Add && !isSubscribed(tx, u.ID, channelID) {
				result.Unsubscribed = append(result.Unsubscribed, channelID)
				continue
			}
			done, err := s.applyFlag(tx, u.ID, channelID, byChannel[channelID], change)
			if err != nil {
				return err
			}
			result.Changed = append(result.Changed, done...)
		}
		slices.Sort(result.Changed)
		return reportFlags(tx, report, u, change, result.Changed)
	})
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
	store *store
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
	marks    map[uint64]*markView // channel → the user's unread state there
	// conversations: participants of the conversations met (store_dms.go).
	conversations map[uint64][]uint64
	// policies and mutedChannels: the user's topic policies and muted
	// channels, read once when the narrow asks about muting or following.
	policies      topicPolicies
	mutedChannels map[uint64]bool
}

func (s *store) selectRange(tx *bbolt.Tx, u user, q messageRange) (messagePage, error) {
	r := &rangeReader{store: s, tx: tx, user: u, channels: map[uint64]channel{}, access: map[uint64]bool{}, senders: map[uint64]user{}, marks: map[uint64]*markView{}}
	if err := r.resolve(q.Narrow); err != nil {
		return messagePage{}, err
	}
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
	src := r.source(false)

	// With both counts 0, Zulip answers the anchor alone, included or not.
	includeAnchor := q.IncludeAnchor || (q.NumBefore == 0 && q.NumAfter == 0)
	var before []pagedMessage
	if q.NumBefore > 0 && page.Anchor > 0 {
		next := src.iter(page.Anchor-1, false)
		for id, ok := next(); ok && len(before) < q.NumBefore; id, ok = next() {
			if m, ok := r.match(id); ok {
				before = append(before, m)
			}
		}
	}
	slices.Reverse(before)
	page.Messages = before
	if includeAnchor && page.Anchor != 0 && page.Anchor < largestMessageID {
		if m, ok := r.match(page.Anchor); ok {
			page.Messages = append(page.Messages, m)
			page.FoundAnchor = true
		}
	}
	after := 0
	if q.NumAfter > 0 && page.Anchor < largestMessageID {
		next := src.iter(page.Anchor+1, true)
		for id, ok := next(); ok && after < q.NumAfter; id, ok = next() {
			if m, ok := r.match(id); ok {
				page.Messages = append(page.Messages, m)
				after++
			}
		}
	}
	page.FoundOldest = page.Anchor == 0 || len(before) < q.NumBefore
	page.FoundNewest = page.Anchor >= largestMessageID || after < q.NumAfter
	return page, nil
}

// resolve turns channel and sender names into ids.
func (r *rangeReader) resolve(terms []narrowTerm) error {
	for _, t := range terms {
		switch t.Operator {
		case opChannel:
			var ch channel
			var err error
			if t.Name != "" {
				ch, err = r.store.channelByName(r.tx, t.Name)
			} else {
				ch, err = r.store.channelByID(r.tx, t.ID)
			}
			if err != nil {
				return errNarrowUnknownChannel.about(t.Name + idText(t))
			}
			t.ID, t.Name = ch.ID, ""
		case opWith:
			// The conversation of a message: its channel and topic, wherever
			// the message has gone (zulite does not move messages).
			m, err := messageByID(r.tx, t.ID)
			if err == nil && m.isDirect() {
				if !isParticipant(r.tx, r.user.ID, m.ConversationID) {
					return errNarrowBadWith
				}
				ids, _ := conversationParticipants(r.tx, m.ConversationID)
				r.terms = append(r.terms, narrowTerm{Operator: opDM, IDs: ids})
				continue
			}
			if err != nil || !r.canSee(m.ChannelID) {
				return errNarrowBadWith
			}
			r.terms = append(r.terms, narrowTerm{Operator: opChannel, ID: m.ChannelID}, narrowTerm{Operator: opTopic, Name: m.Topic})
			continue
		case opDM, opDMIncluding, opGroupPMWith:
			var err error
			if t, err = r.resolveDirect(t); err != nil {
				return err
			}
		case opSender:
			if t.Name != "" {
				u, err := userByEmail(r.tx, t.Name)
				if err != nil {
					return errNarrowUnknownUser.about(t.Name)
				}
				t.ID, t.Name = u.ID, ""
			} else if _, err := r.sender(t.ID); err != nil {
				return errNarrowUnknownUser.about(idText(t))
			}
		}
		r.terms = append(r.terms, t)
	}
	for _, t := range r.terms {
		if t.Operator == opIsFollowed || t.Operator == opIsMuted || t.Operator == opIn && t.Name == "home" {
			r.policies, r.mutedChannels = userTopicPolicies(r.tx, r.user.ID), mutedChannels(r.tx, r.user.ID)
			break
		}
	}
	hasChannel, hasIs := false, false
	for _, t := range r.terms {
		hasChannel = hasChannel || (t.Operator == opChannel && !t.Negated)
		hasIs = hasIs || t.Operator.isTest()
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

// source picks the narrowest index that every match must be in, so that
// a page reads about as many ids as it answers. withUnread adds is:unread
// (for the first_unread anchor).
func (r *rangeReader) source(withUnread bool) idSource {
	var channelID, messageID uint64
	topic, unread, starred := (*string)(nil), withUnread, false // topic "" is the empty topic
	for _, t := range r.terms {
		if t.Negated {
			continue
		}
		switch t.Operator {
		case opChannel:
			channelID = t.ID
		case opTopic:
			topic = &t.Name
		case opIsUnread:
			unread = true
		case opIsStarred, opIsMentioned: // flags index both
			starred = true
		case opID:
			messageID = t.ID
		}
	}
	if src, ok := r.directSource(unread); ok && messageID == 0 { // store_dms.go
		return src
	}
	switch {
	case messageID != 0:
		return idList{messageID}
	case channelID != 0 && !r.canSee(channelID):
		return idList{} // nothing of it is visible: no need to look
	case channelID != 0 && topic != nil: // is:unread is checked per id, against the watermark
		return indexSource{r.tx.Bucket(bucketTopicMessages), topicPrefix(channelID, *topic)}
	case unread && channelID != 0:
		if m, ok := loadMark(r.tx, r.user.ID, channelID); ok {
			return m.unread()
		}
		return idList{} // not subscribed: nothing is unread there
	case unread:
		return userUnread(r.tx, r.user.ID)
	case starred:
		return indexSource{r.tx.Bucket(bucketFlags), itob(r.user.ID)}
	case channelID != 0:
		return indexSource{r.tx.Bucket(bucketChannelMessages), itob(channelID)}
	}
	// Everything the user received: their channels, and the messages they
	// hold a flag on (starred in a channel they are not subscribed to).
	parts := mergeSource{indexSource{r.tx.Bucket(bucketFlags), itob(r.user.ID)}, r.userDirect()}
	c := r.tx.Bucket(bucketSubscriptions).Cursor()
	prefix := itob(r.user.ID)
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		parts = append(parts, indexSource{r.tx.Bucket(bucketChannelMessages), slices.Clone(k[8:])})
	}
	return parts
}

// firstUnread is the oldest unread message that matches the narrow.
func (r *rangeReader) firstUnread() (uint64, bool) {
	next := r.source(true).iter(0, true)
	for id, ok := next(); ok; id, ok = next() {
		if m, ok := r.match(id); ok && m.Unread {
			return id, true
		}
	}
	return 0, false
}

// match loads a message and checks access and every term.
func (r *rangeReader) match(id uint64) (pagedMessage, bool) {
	v := r.tx.Bucket(bucketMessages).Get(itob(id))
	if v == nil {
		return pagedMessage{}, false
	}
	var m pagedMessage
	if err := json.Unmarshal(v, &m.message); err != nil {
		return pagedMessage{}, false
	}
	if m.isDirect() {
		if !r.seeDirect(&m) { // store_dms.go
			return pagedMessage{}, false
		}
	} else if !r.canSee(m.ChannelID) {
		return pagedMessage{}, false
	} else {
		m.Subscribed = isSubscribed(r.tx, r.user.ID, m.ChannelID)
	}
	flags := r.tx.Bucket(bucketFlags).Get(append(itob(r.user.ID), itob(id)...))
	if !m.Subscribed && !r.history && flags == nil { // a flag makes it the user's, as in Zulip
		return pagedMessage{}, false
	}
	if flags != nil {
		m.Flags = flags[0]
	}
	m.Channel = r.channels[m.ChannelID]
	m.Unread = r.isUnread(m.readKey(), id)
	if r.policies != nil {
		m.Policies = true
		if !m.isDirect() {
			m.TopicPolicy = r.policies.of(m.ChannelID, m.Topic)
			m.TopicMuted = topicIsMuted(r.mutedChannels[m.ChannelID], m.TopicPolicy)
		}
	}
	if !matchesNarrow(r.terms, m) {
		return pagedMessage{}, false
	}
	sender, err := r.sender(m.SenderID)
	if err != nil {
		return pagedMessage{}, false
	}
	m.Sender = sender
	return m, true
}

// canSee is the access rule for a channel's messages, cached.
func (r *rangeReader) canSee(channelID uint64) bool {
	if ok, seen := r.access[channelID]; seen {
		return ok
	}
	ch, err := r.store.channelByID(r.tx, channelID)
	ok := err == nil && r.store.canAccess(r.tx, r.user, ch)
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

// markView is the user's unread state in one channel as a selection
// reads it: the watermark, and the exception sets with the chunk of each
// decoded last, kept for the neighbours that a page asks about next.
type markView struct {
	subscribed bool
	watermark  uint64
	below      cachedSet // unread at or below the watermark
	above      cachedSet // read above it
}

// isUnread checks the id against the watermark and the one exception
// chunk that could hold it.
func (r *rangeReader) isUnread(channelID, id uint64) bool {
	v := r.marks[channelID]
	if v == nil {
		v = &markView{}
		if m, ok := loadMark(r.tx, r.user.ID, channelID); ok {
			*v = markView{subscribed: true, watermark: m.watermark, below: cachedSet{b: m.below()}, above: cachedSet{b: m.above()}}
		}
		r.marks[channelID] = v
	}
	switch {
	case !v.subscribed:
		return false
	case id > v.watermark:
		return !v.above.contains(id)
	}
	return v.below.contains(id)
}

// cachedSet looks ids up in an exception set (nil: empty), keeping the
// chunk it decoded last.
type cachedSet struct {
	b     *bbolt.Bucket
	chunk []uint64
}

func (s *cachedSet) contains(id uint64) bool {
	if s.b == nil {
		return false
	}
	if len(s.chunk) == 0 || id < s.chunk[0] || id > s.chunk[len(s.chunk)-1] {
		c := s.b.Cursor()
		k, v := c.Seek(itob(id))
		if k == nil || btoi(k) > id {
			k, v = c.Prev()
		}
		if k == nil || chunkLast(v) < id {
			return false
		}
		ids, err := decodeChunk(s.chunk[:0], btoi(k), v)
		if err != nil {
			return false
		}
		s.chunk = ids
	}
	_, found := slices.BinarySearch(s.chunk, id)
	return found
}

// idSource yields message ids in order from a start, up or down: iter
// returns a function answering the next id, or false at the end.
type idSource interface {
	iter(from uint64, up bool) func() (uint64, bool)
}

// indexSource walks the keys of an index under a prefix; each key ends in
// a message id.
type indexSource struct {
	b      *bbolt.Bucket
	prefix []byte
}

func (s indexSource) iter(from uint64, up bool) func() (uint64, bool) {
	c := s.b.Cursor()
	k, _ := c.Seek(append(slices.Clone(s.prefix), itob(from)...))
	if !up { // step back to the largest key at or below prefix ‖ from
		if k == nil {
			k, _ = c.Last()
		} else if !bytes.HasPrefix(k, s.prefix) || btoi(k[len(s.prefix):]) > from {
			k, _ = c.Prev()
		}
	}
	return func() (uint64, bool) {
		if k == nil || !bytes.HasPrefix(k, s.prefix) {
			return 0, false
		}
		id := btoi(k[len(s.prefix):])
		if up {
			k, _ = c.Next()
		} else {
			k, _ = c.Prev()
		}
		return id, true
	}
}

// boundedSource is a source's ids from lo up.
type boundedSource struct {
	src idSource
	lo  uint64
}

func (s boundedSource) iter(from uint64, up bool) func() (uint64, bool) {
	if up {
		return s.src.iter(max(from, s.lo), true)
	}
	if from < s.lo {
		return func() (uint64, bool) { return 0, false }
	}
	next := s.src.iter(from, false)
	return func() (uint64, bool) {
		id, ok := next()
		if !ok || id < s.lo {
			return 0, false
		}
		return id, true
	}
}

// exceptSource is a source's ids less those of another, both walked in
// step.
type exceptSource struct {
	src, minus idSource
}

func (s exceptSource) iter(from uint64, up bool) func() (uint64, bool) {
	next, skip := s.src.iter(from, up), s.minus.iter(from, up)
	head, live := skip()
	return func() (uint64, bool) {
		for {
			id, ok := next()
			if !ok {
				return 0, false
			}
			for live && (up && head < id || !up && head > id) {
				head, live = skip()
			}
			if !live || head != id {
				return id, true
			}
		}
	}
}

// chunkSource walks one exception set, decoding a chunk at a
// time.
type chunkSource struct{ b *bbolt.Bucket }

func (s chunkSource) iter(from uint64, up bool) func() (uint64, bool) {
	// Start at the chunk that would hold from: the last one whose first id
	// is at most from (or the first chunk), then re-seek it so that the
	// cursor steps cleanly from there.
	c := s.b.Cursor()
	start, _ := c.Seek(itob(from))
	switch {
	case start == nil:
		start, _ = c.Last()
	case btoi(start) > from:
		if prev, _ := c.Prev(); prev != nil {
			start = prev
		}
	}
	var k, v []byte
	if start != nil {
		k, v = c.Seek(slices.Clone(start))
	}
	var ids []uint64
	i := 0
	load := func() bool {
		for k != nil {
			ids, _ = decodeChunk(ids[:0], btoi(k), v)
			if up {
				i, _ = slices.BinarySearch(ids, from)
				k, v = c.Next()
			} else {
				i, _ = slices.BinarySearch(ids, from+1)
				i--
				k, v = c.Prev()
			}
			if i >= 0 && i < len(ids) {
				return true
			}
		}
		return false
	}
	loaded := load()
	return func() (uint64, bool) {
		for loaded && (i < 0 || i >= len(ids)) {
			loaded = load()
		}
		if !loaded {
			return 0, false
		}
		id := ids[i]
		if up {
			i++
		} else {
			i--
		}
		return id, true
	}
}

// idList is a sorted list of ids walked like an index.
type idList []uint64

func (l idList) iter(from uint64, up bool) func() (uint64, bool) {
	i, _ := slices.BinarySearch(l, from)
	if !up && (i == len(l) || l[i] > from) {
		i--
	}
	return func() (uint64, bool) {
		if i < 0 || i >= len(l) {
			return 0, false
		}
		id := l[i]
		if up {
			i++
		} else {
			i--
		}
		return id, true
	}
}

// mergeSource walks several sources as one, in order, without repeats.
// The sources' next ids are kept in a heap, so each id costs a step of
// its own source and log(sources), however many sources there are (one
// per subscription for "every unread message").
type mergeSource []idSource

func (m mergeSource) iter(from uint64, up bool) func() (uint64, bool) {
	h := &sourceHeap{up: up}
	for _, s := range m {
		next := s.iter(from, up)
		if id, ok := next(); ok {
			h.heads = append(h.heads, sourceHead{id, next})
		}
	}
	heap.Init(h)
	last, started := uint64(0), false
	return func() (uint64, bool) {
		for h.Len() > 0 {
			top := &h.heads[0]
			id := top.id
			if next, ok := top.next(); ok {
				top.id = next
				heap.Fix(h, 0)
			} else {
				heap.Pop(h)
			}
			if started && id == last { // the same id from several sources counts once
				continue
			}
			last, started = id, true
			return id, true
		}
		return 0, false
	}
}

type sourceHead struct {
	id   uint64
	next func() (uint64, bool)
}

// sourceHeap orders sources by their next id: smallest first walking up,
// largest first walking down.
type sourceHeap struct {
	heads []sourceHead
	up    bool
}

func (h *sourceHeap) Len() int { return len(h.heads) }
func (h *sourceHeap) Less(i, j int) bool {
	if h.up {
		return h.heads[i].id < h.heads[j].id
	}
	return h.heads[i].id > h.heads[j].id
}
func (h *sourceHeap) Swap(i, j int) { h.heads[i], h.heads[j] = h.heads[j], h.heads[i] }
func (h *sourceHeap) Push(x any)    { h.heads = append(h.heads, x.(sourceHead)) }
func (h *sourceHeap) Pop() any {
	last := h.heads[len(h.heads)-1]
	h.heads = h.heads[:len(h.heads)-1]
	return last
}
