package main

// The store's channels and subscriptions.

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"go.etcd.io/bbolt"
)

// channelSpec names a channel to subscribe to, and describes it should
// it need creating.
type channelSpec struct {
	Name        string
	Description string
}

func (s *store) createChannel(name, description string, private bool, creatorID uint64) (channel, error) {
	var ch channel
	err := s.update(func(tx *bbolt.Tx) error {
		var err error
		ch, err = s.createChannelTx(tx, name, description, private, creatorID)
		return err
	})
	return ch, err
}

func (s *store) createChannelTx(tx *bbolt.Tx, name, description string, private bool, creatorID uint64) (channel, error) {
	names := tx.Bucket(bucketChannelNames)
	if names.Get(nameKey(name)) != nil {
		return channel{}, errChannelExists.about(name)
	}
	channels := tx.Bucket(bucketChannels)
	id, err := channels.NextSequence()
	if err != nil {
		return channel{}, err
	}
	ch := channel{ID: id, Name: name, Description: description, Private: private, Created: s.now().Unix(), CreatorID: creatorID}
	if err := putJSON(channels, itob(id), ch); err != nil {
		return channel{}, err
	}
	return ch, names.Put(nameKey(name), itob(id))
}

func (s *store) channels() ([]channel, error) {
	var list []channel
	err := s.view(func(tx *bbolt.Tx) error {
		list = nil
		return tx.Bucket(bucketChannels).ForEach(func(_, v []byte) error {
			var ch channel
			if err := json.Unmarshal(v, &ch); err != nil {
				return err
			}
			list = append(list, ch)
			return nil
		})
	})
	return list, err
}

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

func isSubscribed(tx *bbolt.Tx, userID, channelID uint64) bool {
	return tx.Bucket(bucketSubscriptions).Get(append(itob(userID), itob(channelID)...)) != nil
}

// canAccess is Zulip's rule: a public channel is open to every member
// but guests, a private one (and, for guests, any one) to its subscribers.
func canAccess(tx *bbolt.Tx, u user, ch channel) bool {
	if ch.Private || u.Role == roleGuest {
		return isSubscribed(tx, u.ID, ch.ID)
	}
	return true
}

// accessibleChannel returns the channel if it exists and the user may
// access it; otherwise errNoSuchChannel, so that a private channel's
// existence does not leak.
func (s *store) accessibleChannel(u user, name string) (channel, error) {
	var ch channel
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		ch, err = s.channelByName(tx, name)
		if err == nil && !canAccess(tx, u, ch) {
			err = errNoSuchChannel.about(name)
		}
		return err
	})
	return ch, err
}

// subscribe subscribes the user to each named channel, creating missing
// ones (private when inviteOnly). It answers the names newly subscribed
// and those already subscribed.
func (s *store) subscribe(u user, specs []channelSpec, inviteOnly bool) (subscribed, already []string, joined []channel, err error) {
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		subscribed, already, joined = nil, nil, nil
		var join []channel
		var create []channelSpec
		for _, spec := range specs { // every check before the first write
			ch, err := s.channelByName(tx, spec.Name)
			switch {
			case errors.Is(err, errNoSuchChannel) && slices.ContainsFunc(create, func(c channelSpec) bool { return sameChannelName(c.Name, spec.Name) }):
				// named twice: created once
			case errors.Is(err, errNoSuchChannel):
				create = append(create, spec)
			case err != nil:
				return err
			case isSubscribed(tx, u.ID, ch.ID):
				already = append(already, ch.Name)
			case !canAccess(tx, u, ch):
				return errChannelForbidden.about(spec.Name)
			default:
				join = append(join, ch)
			}
		}
		for _, spec := range create {
			ch, err := s.createChannelTx(tx, spec.Name, spec.Description, inviteOnly, u.ID)
			if err != nil {
				return err
			}
			join = append(join, ch)
		}
		for _, ch := range join {
			if err := s.addSubscription(tx, u.ID, ch.ID); err != nil {
				return err
			}
			subscribed = append(subscribed, ch.Name)
		}
		joined = join
		if len(join) > 0 {
			report(subscriptionsChanged{User: u, Op: "add", Channels: join})
		}
		return nil
	})
	return subscribed, already, joined, err
}

func (s *store) addSubscription(tx *bbolt.Tx, userID, channelID uint64) error {
	sub := subscription{Color: channelColor(channelID), Joined: s.now().Unix()}
	if err := putJSON(tx.Bucket(bucketSubscriptions), append(itob(userID), itob(channelID)...), sub); err != nil {
		return err
	}
	return tx.Bucket(bucketSubscribers).Put(append(itob(channelID), itob(userID)...), nil)
}

// unsubscribe removes the user from each named channel; names of
// channels they were not subscribed to come back in notRemoved. As in
// Zulip, a user has no unread messages in channels they are not
// subscribed to, so the channel's unread state goes too.
func (s *store) unsubscribe(u user, names []string) (removed, notRemoved []string, left []channel, read []uint64, err error) {
	trashed := false
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		removed, notRemoved, left, read, trashed = nil, nil, nil, nil, false
		var channels []channel
		var missing []string
		for _, name := range names {
			ch, err := s.channelByName(tx, name)
			if errors.Is(err, errNoSuchChannel) {
				missing = append(missing, name)
				continue
			}
			if err != nil {
				return err
			}
			channels = append(channels, ch)
		}
		if len(missing) > 0 {
			return errNoSuchChannel.about(strings.Join(missing, ", "))
		}
		for _, ch := range channels {
			if !isSubscribed(tx, u.ID, ch.ID) {
				notRemoved = append(notRemoved, ch.Name)
				continue
			}
			if err := tx.Bucket(bucketSubscriptions).Delete(append(itob(u.ID), itob(ch.ID)...)); err != nil {
				return err
			}
			if err := tx.Bucket(bucketSubscribers).Delete(append(itob(ch.ID), itob(u.ID)...)); err != nil {
				return err
			}
			ids, err := unreadIDs(tx, u.ID, ch.ID)
			if err != nil {
				return err
			}
			moved, err := removeAllUnread(tx, u.ID, ch.ID)
			if err != nil {
				return err
			}
			trashed = trashed || moved
			read = append(read, ids...)
			removed = append(removed, ch.Name)
			left = append(left, ch)
		}
		if len(left) > 0 {
			report(subscriptionsChanged{User: u, Op: "remove", Channels: left})
		}
		slices.Sort(read)
		return reportFlags(tx, report, u, flagChange{Flag: "read", Add: true}, read)
	})
	if trashed { // large sets were moved aside: the janitor deletes them
		s.wakeJanitor()
	}
	return removed, notRemoved, left, read, err
}

// subscribedChannel is a channel as one subscriber sees it.
type subscribedChannel struct {
	channel
	subscription
	Subscribers []uint64
}

// subscriptions lists the user's channels with the subscriber ids.
func (s *store) subscriptions(userID uint64) ([]subscribedChannel, error) {
	var list []subscribedChannel
	err := s.view(func(tx *bbolt.Tx) error {
		list = nil
		prefix := itob(userID)
		c := tx.Bucket(bucketSubscriptions).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var sc subscribedChannel
			if err := json.Unmarshal(v, &sc.subscription); err != nil {
				return err
			}
			ch, err := s.channelByID(tx, btoi(k[8:]))
			if err != nil {
				return err
			}
			sc.channel = ch
			sc.Subscribers = subscriberIDs(tx, ch.ID)
			list = append(list, sc)
		}
		return nil
	})
	slices.SortFunc(list, func(a, b subscribedChannel) int { return strings.Compare(a.Name, b.Name) })
	return list, err
}

func subscriberIDs(tx *bbolt.Tx, channelID uint64) []uint64 {
	var ids []uint64
	prefix := itob(channelID)
	c := tx.Bucket(bucketSubscribers).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, btoi(k[8:]))
	}
	return ids
}

// channelFilter says which channels GET /streams lists.
type channelFilter struct {
	Public, Subscribed, AllActive bool
}

// visibleChannels lists, sorted by name, the channels the filter asks
// for among those the user may see: public ones (not for guests) and the
// ones they are subscribed to; AllActive (admins) lists every channel.
func (s *store) visibleChannels(u user, f channelFilter) ([]channel, error) {
	var list []channel
	err := s.view(func(tx *bbolt.Tx) error {
		list = nil
		return tx.Bucket(bucketChannels).ForEach(func(_, v []byte) error {
			var ch channel
			if err := json.Unmarshal(v, &ch); err != nil {
				return err
			}
			public := !ch.Private && u.Role != roleGuest
			if f.AllActive || (f.Public && public) || (f.Subscribed && isSubscribed(tx, u.ID, ch.ID)) {
				list = append(list, ch)
			}
			return nil
		})
	})
	slices.SortFunc(list, func(a, b channel) int { return strings.Compare(a.Name, b.Name) })
	return list, err
}

// channelColor picks a stable colour from Zulip's default palette.
func channelColor(id uint64) string {
	palette := []string{"#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5", "#f5ce6e", "#c2726a"}
	return palette[id%uint64(len(palette))]
}
