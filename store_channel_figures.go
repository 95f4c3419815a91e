package main

// The figures a channel object carries beside the channel itself, read in
// the transaction that reads the channel.

import (
	"bytes"
	"slices"

	"go.etcd.io/bbolt"
)

// channelView is a channel with the figures its API object carries,
// read in the same transaction.
type channelView struct {
	channel
	SubscriberCount int    // active users subscribed
	FirstMessageID  uint64 // 0: no message yet
	RecentlyActive  bool
	WeeklyTraffic   *int // nil: too young to say
	// Subscribers are its active subscribers, listed only when its
	// filter asks (channelFilter.Subscribers); else nil.
	Subscribers []uint64
}

const (
	// recentlyActiveDays is Zulip's Stream.LAST_ACTIVITY_DAYS_BEFORE_FOR_ACTIVE.
	recentlyActiveDays = 180
	// trafficDays is the window of Zulip's stream traffic figure, and
	// trafficMinAgeDays the age below which it has none
	// (zerver/lib/stream_traffic.py).
	trafficDays       = 28
	trafficMinAgeDays = 7
	secondsPerDay     = 24 * 60 * 60
)

// figures works out channel views within one transaction, reading what
// all of them share (the deactivated users, where the traffic window
// starts) once, and each channel's view and subscribers once.
type figures struct {
	tx          *bbolt.Tx
	directory   *userDirectory
	now         int64
	inactive    map[uint64]bool // nil until read
	trafficFrom uint64          // first message id inside the traffic window; 0 until read
	views       map[uint64]channelView
	subscribed  map[uint64][]uint64 // channel id → its active subscribers
}

func (s *store) channelFigures(tx *bbolt.Tx) *figures {
	return &figures{tx: tx, directory: &s.directory, now: s.now().Unix()}
}

func (f *figures) isInactive(userID uint64) (bool, error) {
	if f.inactive == nil {
		_, _, inactive, err := f.directory.of(f.tx)
		if err != nil {
			return false, err
		}
		f.inactive = inactive
	}
	return f.inactive[userID], nil
}

// subscribers are the channel's active subscribers, by id, as Zulip
// lists them (deactivated users keep their subscriptions but are left
// out of lists and counts).
func (f *figures) subscribers(channelID uint64) ([]uint64, error) {
	if ids, ok := f.subscribed[channelID]; ok {
		return slices.Clone(ids), nil
	}
	ids := []uint64{}
	for _, id := range subscriberIDs(f.tx, channelID) {
		inactive, err := f.isInactive(id)
		if err != nil {
			return nil, err
		}
		if !inactive {
			ids = append(ids, id)
		}
	}
	if f.subscribed == nil {
		f.subscribed = map[uint64][]uint64{}
	}
	f.subscribed[channelID] = slices.Clone(ids)
	return ids, nil
}

func (f *figures) view(ch channel) (channelView, error) {
	if v, ok := f.views[ch.ID]; ok {
		return v, nil
	}
	v, err := f.viewOf(ch)
	if err == nil {
		if f.views == nil {
			f.views = map[uint64]channelView{}
		}
		f.views[ch.ID] = v
	}
	return v, err
}

// subscriberCount is len(f.subscribers(channelID)), counted without
// listing them when they were not listed already: register counts the
// subscribers of every channel it shows, thousands in a big one.
func (f *figures) subscriberCount(channelID uint64) (int, error) {
	if ids, ok := f.subscribed[channelID]; ok {
		return len(ids), nil
	}
	n := 0
	prefix := itob(channelID)
	c := f.tx.Bucket(bucketSubscribers).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		inactive, err := f.isInactive(btoi(k[8:]))
		if err != nil {
			return 0, err
		}
		if !inactive {
			n++
		}
	}
	return n, nil
}

func (f *figures) viewOf(ch channel) (channelView, error) {
	v := channelView{channel: ch}
	var err error
	if v.SubscriberCount, err = f.subscriberCount(ch.ID); err != nil {
		return v, err
	}
	prefix := itob(ch.ID)
	c := f.tx.Bucket(bucketChannelMessages).Cursor()
	if k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		v.FirstMessageID = btoi(k[8:])
	}
	lastActive := ch.Created // Zulip posts a notice into every new channel; zulite does not
	if last := lastInChannel(c, ch.ID); last != 0 {
		m, err := messageByID(f.tx, last)
		if err != nil {
			return v, err
		}
		lastActive = max(lastActive, m.Timestamp)
	}
	v.RecentlyActive = f.now-lastActive <= recentlyActiveDays*secondsPerDay
	traffic, err := f.recentMessages(c, ch.ID)
	if err != nil {
		return v, err
	}
	v.WeeklyTraffic = weeklyTraffic(traffic, (f.now-ch.Created)/secondsPerDay)
	return v, nil
}

// lastInChannel is the channel's newest message id, 0 when it has none.
func lastInChannel(c *bbolt.Cursor, channelID uint64) uint64 {
	k, _ := c.Seek(itob(channelID + 1))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if k == nil || btoi(k[:8]) != channelID {
		return 0
	}
	return btoi(k[8:])
}

// recentMessages counts the channel's messages of the last trafficDays.
func (f *figures) recentMessages(c *bbolt.Cursor, channelID uint64) (int, error) {
	if f.trafficFrom == 0 {
		from, err := firstMessageSince(f.tx, f.now-trafficDays*secondsPerDay)
		if err != nil {
			return 0, err
		}
		f.trafficFrom = from
	}
	n := 0
	prefix := itob(channelID)
	for k, _ := c.Seek(append(itob(channelID), itob(f.trafficFrom)...)); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n, nil
}

// firstMessageSince is the id of the first message sent at or after
// since (one past the last message when there is none). Message times
// rise with their ids, so it is a binary search: a few decodes, however
// many messages there are. Deleted messages leave gaps in the ids: a
// probe reads the first message at or after it, and the answer may be a
// missing id just before the first message since, which counts the same.
func firstMessageSince(tx *bbolt.Tx, since int64) (uint64, error) {
	lo, hi := uint64(1), tx.Bucket(bucketMessages).Sequence()+1
	c := tx.Bucket(bucketMessages).Cursor()
	for lo < hi {
		mid := lo + (hi-lo)/2
		k, _ := c.Seek(itob(mid))
		if k == nil || btoi(k) >= hi {
			hi = mid
			continue
		}
		m, err := messageByID(tx, btoi(k))
		if err != nil {
			return 0, err
		}
		if m.Timestamp >= since {
			hi = mid
		} else {
			lo = btoi(k) + 1
		}
	}
	return lo, nil
}

// weeklyTraffic is Zulip's get_average_weekly_stream_traffic: messages a
// week over the last four weeks (or the channel's life, when younger),
// at least 1 when there were any, to two significant digits; none for a
// channel younger than a week.
func weeklyTraffic(traffic int, ageDays int64) *int {
	var weekly int
	switch {
	case ageDays >= trafficDays:
		weekly = traffic / 4
	case ageDays >= trafficMinAgeDays:
		weekly = int(int64(traffic) * 7 / ageDays)
	default:
		return nil
	}
	if weekly == 0 && traffic > 0 {
		weekly = 1
	}
	weekly = roundToTwoDigits(weekly)
	return &weekly
}

// roundToTwoDigits keeps two significant digits, rounding half to even
// as Python's round does.
func roundToTwoDigits(n int) int {
	if n < 100 {
		return n
	}
	unit := 1
	for n/unit >= 100 {
		unit *= 10
	}
	q, r := n/unit, n%unit
	if 2*r > unit || (2*r == unit && q%2 == 1) {
		q++
	}
	return q * unit
}
