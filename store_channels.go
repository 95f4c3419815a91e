package main

// The store's channels and subscriptions: channels, who is subscribed to
// what with which settings, a channel's topics, and who is told of a
// change. A channel's permissions are in channel_permissions.go, the
// figures of its API object in store_channel_figures.go.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.etcd.io/bbolt"
)

// channelSpec names a channel to subscribe to, and describes it should
// it need creating; Color, when set, is the new subscriptions' colour.
type channelSpec struct {
	Name        string
	Description string
	Color       string
}

// ---- lookups ----

func (s *store) createChannel(name, description string, private bool, creatorID uint64) (channel, error) {
	var ch channel
	err := s.update(func(tx *bbolt.Tx) error {
		var err error
		ch, err = s.createChannelTx(tx, channel{Name: name, Description: description, Private: private, CreatorID: creatorID})
		return err
	})
	return ch, err
}

// createChannelTx stores a new channel from ch's name, description,
// privacy, creator and settings.
func (s *store) createChannelTx(tx *bbolt.Tx, ch channel) (channel, error) {
	names := tx.Bucket(bucketChannelNames)
	if names.Get(nameKey(ch.Name)) != nil {
		return channel{}, errChannelExists.about(ch.Name)
	}
	channels := tx.Bucket(bucketChannels)
	id, err := channels.NextSequence()
	if err != nil {
		return channel{}, err
	}
	ch.ID, ch.Created = id, s.now().Unix()
	if err := putJSON(channels, itob(id), ch); err != nil {
		return channel{}, err
	}
	return ch, names.Put(nameKey(ch.Name), itob(id))
}

func (s *store) channels() ([]channel, error) { return listAll[channel](s, bucketChannels) }

func (s *store) channelByID(tx *bbolt.Tx, id uint64) (channel, error) {
	v := tx.Bucket(bucketChannels).Get(itob(id))
	if v == nil {
		return channel{}, errNoSuchChannel
	}
	if ch, ok := s.decoded.get(id, v); ok {
		return ch, nil
	}
	var ch channel
	if err := json.Unmarshal(v, &ch); err != nil {
		return channel{}, err
	}
	s.decoded.put(id, v, ch)
	return ch, nil
}

// channelMemo remembers channels as decoded, each with the bytes it was
// decoded from. Most requests look a channel up, some twice (a check in a
// read transaction, then again in the write, which the committer runs
// serially with every other write), and decoding JSON is most of a
// lookup's cost. A decoded channel is a function of its bytes alone: a
// lookup answers from here only when the stored bytes are the same, so
// nothing needs invalidating when a channel changes. It holds at most
// channelMemoBytes of stored channels (about as much again in their
// decoded strings), and starts afresh when full, so that channels in use
// come back and any number of channels costs a bounded amount of memory.
// Callers must not modify a channel's Groups: the memo shares them.
type channelMemo struct {
	mu    sync.RWMutex
	m     map[uint64]memoChannel
	bytes int // of the stored forms held
}

const channelMemoBytes = 1 << 20

type memoChannel struct {
	stored []byte // a copy: bbolt's bytes live only as long as their transaction
	ch     channel
}

func (c *channelMemo) get(id uint64, stored []byte) (channel, bool) {
	c.mu.RLock()
	e, ok := c.m[id]
	c.mu.RUnlock()
	if !ok || !bytes.Equal(e.stored, stored) {
		return channel{}, false
	}
	return e.ch, true
}

func (c *channelMemo) put(id uint64, stored []byte, ch channel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[id]; ok {
		c.bytes -= len(old.stored)
		delete(c.m, id)
	}
	if c.m == nil || c.bytes+len(stored) > channelMemoBytes {
		c.m, c.bytes = map[uint64]memoChannel{}, 0
	}
	c.m[id] = memoChannel{bytes.Clone(stored), ch}
	c.bytes += len(stored)
}

func (s *store) channelByName(tx *bbolt.Tx, name string) (channel, error) {
	id := tx.Bucket(bucketChannelNames).Get(nameKey(name))
	if id == nil {
		return channel{}, errNoSuchChannel.about(name)
	}
	return s.channelByID(tx, btoi(id))
}

// accessibleChannel returns the channel if it exists and the user may
// access it; otherwise errNoSuchChannel, so that a private channel's
// existence does not leak.
func (s *store) accessibleChannel(u user, name string) (channel, error) {
	var ch channel
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		ch, err = s.channelByName(tx, name)
		if err == nil && !s.canAccess(tx, u, ch) {
			err = errNoSuchChannel.about(name)
		}
		return err
	})
	return ch, err
}

// lookUpUser reads an account by id.
func lookUpUser(tx *bbolt.Tx, id uint64) (user, error) {
	var u user
	v := tx.Bucket(bucketUsers).Get(itob(id))
	if v == nil {
		return u, errNoSuchUser
	}
	return u, json.Unmarshal(v, &u)
}

func allUsers(tx *bbolt.Tx) ([]user, error) {
	var list []user
	err := tx.Bucket(bucketUsers).ForEach(func(_, v []byte) error {
		var u user
		if err := json.Unmarshal(v, &u); err != nil {
			return err
		}
		list = append(list, u)
		return nil
	})
	return list, err
}

// ---- listing ----

// channelFilter says which channels GET /streams lists.
type channelFilter struct {
	Public, Subscribed bool
	// All is every channel the user has metadata access to;
	// ContentAccess every channel they have content access to.
	All, ContentAccess bool
	// Archived: archived channels too (exclude_archived=false, or
	// register's archived_channels capability).
	Archived bool
	// Subscribers: each channel listed with its subscribers (register's
	// never_subscribed with include_subscribers); every channel a filter
	// lets the user see is one whose subscribers they may read.
	Subscribers bool
}

// visibleChannels lists, sorted by name, the channels the filter asks
// for (Zulip's get_streams_for_user; zulite has no web-public or
// archived channels and no bot owners).
func (s *store) visibleChannels(u user, f channelFilter) ([]channelView, error) {
	var list []channelView
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		list, err = s.visibleChannelsIn(tx, s.channelFigures(tx), u, f)
		return err
	})
	return list, err
}

// subscriptionsAndChannels is the user's subscriptions and the channels
// each filter lets them see, read in one transaction whose figures are
// worked out once: register lists all of them, and counting a big
// channel's subscribers again for each list cost more than the rest of
// its channels. The subscriptions list their subscribers when
// listSubscribers, a filter's channels when it says so.
func (s *store) subscriptionsAndChannels(u user, listSubscribers bool, filters ...channelFilter) ([]subscribedChannel, [][]channelView, error) {
	var subs []subscribedChannel
	var lists [][]channelView
	err := s.view(func(tx *bbolt.Tx) error {
		f := s.channelFigures(tx)
		var err error
		if subs, err = s.subscriptionsIn(tx, f, u.ID, nil, listSubscribers); err != nil { // store_subscriptions.go
			return err
		}
		lists = make([][]channelView, len(filters))
		for i, filter := range filters {
			if lists[i], err = s.visibleChannelsIn(tx, f, u, filter); err != nil {
				return err
			}
		}
		return nil
	})
	return subs, lists, err
}

// visibleChannelsIn is visibleChannels within tx, with figures from f.
func (s *store) visibleChannelsIn(tx *bbolt.Tx, figs *figures, u user, f channelFilter) ([]channelView, error) {
	var list []channelView
	err := tx.Bucket(bucketChannels).ForEach(func(k, _ []byte) error {
		ch, err := s.channelByID(tx, btoi(k))
		if err != nil {
			return err
		}
		var wanted bool
		switch {
		case ch.Archived && !f.Archived:
		case f.All:
			wanted = s.canSeeMetadata(tx, u, ch)
		case f.ContentAccess:
			wanted = s.canAccess(tx, u, ch)
		default:
			wanted = (f.Public && !ch.Private && u.Role != roleGuest) || (f.Subscribed && isSubscribed(tx, u.ID, ch.ID))
		}
		if !wanted {
			return nil
		}
		v, err := figs.view(ch)
		if err == nil && f.Subscribers {
			v.Subscribers, err = figs.subscribers(ch.ID) // read once for every list (figures)
		}
		list = append(list, v)
		return err
	})
	sortFunc(list, func(a, b channelView) int { return strings.Compare(a.Name, b.Name) })
	return list, err
}

// channelFor is one channel, for GET /streams/{stream_id}: the user
// needs metadata access, else it does not exist for them.
func (s *store) channelFor(u user, id uint64) (channelView, error) {
	var v channelView
	err := s.db.View(func(tx *bbolt.Tx) error {
		ch, err := s.channelByID(tx, id)
		if err != nil {
			return err
		}
		if ch.Archived || !s.canSeeMetadata(tx, u, ch) { // Zulip's access_stream_by_id wants an active channel
			return errNoSuchChannel
		}
		v, err = s.channelFigures(tx).view(ch)
		return err
	})
	return v, err
}

// ---- topics ----

// topicSummary is one topic of a channel: its newest message and, as
// that message writes it, its name.
type topicSummary struct {
	Name  string
	MaxID uint64
}

// channelTopics lists the channel's topics, newest first, for a user
// with content access. The topic index holds each topic's messages
// together, so the work is a few seeks and one decode a topic, however
// many messages the topics hold.
func (s *store) channelTopics(u user, channelID uint64) ([]topicSummary, error) {
	var list []topicSummary
	err := s.db.View(func(tx *bbolt.Tx) error {
		list = nil
		ch, err := s.channelByID(tx, channelID)
		if err != nil {
			return err
		}
		if ch.Archived || !s.canAccess(tx, u, ch) {
			return errNoSuchChannel
		}
		prefix := itob(ch.ID)
		c := tx.Bucket(bucketTopicMessages).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); {
			end := bytes.IndexByte(k[8:], 0)
			if end < 0 {
				return fmt.Errorf("topic key %x has no end", k)
			}
			topicEnd := append(slices.Clone(k[:8+end]), 1) // past every id of this topic
			next, _ := c.Seek(topicEnd)
			var last []byte
			if next == nil {
				last, _ = c.Last()
			} else {
				last, _ = c.Prev()
			}
			maxID := btoi(last[len(last)-8:])
			m, err := messageByID(tx, maxID)
			if err != nil {
				return err
			}
			list = append(list, topicSummary{Name: m.Topic, MaxID: maxID})
			k, _ = c.Seek(topicEnd)
		}
		return nil
	})
	sortFunc(list, func(a, b topicSummary) int { return cmpDesc(a.MaxID, b.MaxID) })
	return list, err
}

func cmpDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// ---- subscribing ----

// ---- unsubscribing ----

// ---- who hears of a change ----

// ---- subscription settings ----

// channelColor picks a stable colour from Zulip's default palette.
func channelColor(id uint64) string {
	palette := []string{"#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5", "#f5ce6e", "#c2726a"}
	return palette[id%uint64(len(palette))]
}
