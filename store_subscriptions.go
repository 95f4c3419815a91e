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

// The store's subscriptions: who is in which channel, joining (which
// creates channels) and leaving, and each subscription's own settings.

// subscribedChannel is a channel as one subscriber sees it.
type subscribedChannel struct {
	channelView
	subscription
	Subscribers []uint64 // active subscribers
}

// subscriptions lists the user's channels, sorted by name, with their
// active subscribers.
func (s *store) subscriptions(userID uint64) ([]subscribedChannel, error) {
	return s.subscriptionsAmong(userID, nil)
}

// subscriptionsAmong is subscriptions limited to some channels (all
// when channelIDs is nil): the figures cost reads, so an event about
// two channels does not count every channel of the user.
func (s *store) subscriptionsAmong(userID uint64, channelIDs []uint64) ([]subscribedChannel, error) {
	var list []subscribedChannel
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		list, err = s.subscriptionsIn(tx, s.channelFigures(tx), userID, channelIDs, true)
		return err
	})
	return list, err
}

// subscriptionsOfMembers is, for each member of a subscription change,
// their subscriptions to the channels they joined, read in one
// transaction whose figures (the deactivated users, each channel's view
// and subscribers) are worked out once for all of them: joining a
// thousand people to a channel reads its subscribers once, not a
// thousand times.
func (s *store) subscriptionsOfMembers(members []membership) ([][]subscribedChannel, error) {
	var lists [][]subscribedChannel
	err := s.view(func(tx *bbolt.Tx) error {
		lists = make([][]subscribedChannel, len(members))
		f := s.channelFigures(tx)
		for i, m := range members {
			ids := make([]uint64, 0, len(m.Channels))
			for _, ch := range m.Channels {
				ids = append(ids, ch.ID)
			}
			var err error
			if lists[i], err = s.subscriptionsIn(tx, f, m.User.ID, ids, true); err != nil {
				return err
			}
		}
		return nil
	})
	return lists, err
}

// subscriptionsIn reads the user's subscriptions among channelIDs (all
// when nil), sorted by name, with figures from f; each with its
// subscribers when listSubscribers (counted only, otherwise: a register
// without include_subscribers listed some 16,700 ids at 3,000 people to
// drop them).
func (s *store) subscriptionsIn(tx *bbolt.Tx, f *figures, userID uint64, channelIDs []uint64, listSubscribers bool) ([]subscribedChannel, error) {
	var list []subscribedChannel
	prefix := itob(userID)
	c := tx.Bucket(bucketSubscriptions).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if channelIDs != nil && !slices.Contains(channelIDs, btoi(k[8:])) {
			continue
		}
		var sc subscribedChannel
		if err := json.Unmarshal(v, &sc.subscription); err != nil {
			return nil, err
		}
		ch, err := s.channelByID(tx, btoi(k[8:]))
		if err != nil {
			return nil, err
		}
		if listSubscribers {
			if sc.Subscribers, err = f.subscribers(ch.ID); err != nil { // first, for the view to count them
				return nil, err
			}
		}
		if sc.channelView, err = f.view(ch); err != nil {
			return nil, err
		}
		list = append(list, sc)
	}
	sortFunc(list, func(a, b subscribedChannel) int { return strings.Compare(a.Name, b.Name) })
	return list, nil
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

// subscribeRequest is POST /users/me/subscriptions as the store needs it.
type subscribeRequest struct {
	Caller user
	Specs  []channelSpec
	// Principals name the users to subscribe, by id or by e-mail (not
	// both); none means the caller.
	PrincipalIDs    []uint64
	PrincipalEmails []string
	// For channels the request creates.
	InviteOnly bool
	Groups     map[string]groupSetting // settings given other values than their defaults
	// AuthorizationErrorsFatal refuses the request when a channel may not
	// be accessed; otherwise such channels are listed and skipped.
	AuthorizationErrorsFatal bool
	// Refusal, when set, refuses the request once the settings are
	// checked; CreationRefusal refuses it if it would create a channel.
	// Both are rejections (envelope.go's refusal).
	Refusal, CreationRefusal error
	// MaxCreate is how many channels the request may create when
	// TooManyCreated (a rejection) is set to refuse one that would create more.
	MaxCreate      int
	TooManyCreated error
}

// usersChannels is, for one user, the names of some channels.
type usersChannels struct {
	UserID uint64
	Names  []string
}

type subscribeResult struct {
	Subscribed, Already []usersChannels
	Unauthorized        []string
	// Notified says whether everyone Zulip would have told of their new
	// subscription by a Notification Bot message was told: zulite sends
	// no such messages, so it is false whenever a human other than the
	// caller joined a channel the request did not create.
	Notified bool
	Created  int // channels the request created
}

// subscribe subscribes the user to each named channel, creating missing
// ones (private when inviteOnly), and answers the names newly subscribed
// and those already subscribed.
func (s *store) subscribe(u user, specs []channelSpec, inviteOnly bool) (subscribed, already []string, joined []channel, err error) {
	res, err := s.subscribeUsers(subscribeRequest{Caller: u, Specs: specs, InviteOnly: inviteOnly, AuthorizationErrorsFatal: true})
	for _, sc := range res.Subscribed {
		subscribed = append(subscribed, sc.Names...)
	}
	for _, sc := range res.Already {
		already = append(already, sc.Names...)
	}
	if err == nil {
		err = s.db.View(func(tx *bbolt.Tx) error {
			for _, name := range subscribed {
				ch, err := s.channelByName(tx, name)
				if err != nil {
					return err
				}
				joined = append(joined, ch)
			}
			return nil
		})
	}
	return subscribed, already, joined, err
}

// subscribeUsers is Zulip's add_subscriptions_backend after its
// parameters are read: every check (the settings, the channels, the
// caller's access, the principals) before the first write.
func (s *store) subscribeUsers(req subscribeRequest) (subscribeResult, error) {
	var res subscribeResult
	err := s.updateReporting(s.subscribingUsers(req, &res))
	return res, err
}

// subscribingUsers is subscribeUsers' transaction, which PATCH
// /users/me/subscriptions runs before unsubscribingUsers' in one. It is
// not inlined: inlined, the transaction it returns is compiled again in
// each of its two callers (7.6 KB of code each, for the binary's size).
//
//go:noinline
func (s *store) subscribingUsers(req subscribeRequest, res *subscribeResult) func(tx *bbolt.Tx, report func(any)) error {
	return func(tx *bbolt.Tx, report func(any)) error {
		*res = subscribeResult{}
		for p := range channelPermissionCount {
			if g, ok := req.Groups[p.name()]; ok {
				if err := checkGroupSetting(tx, p, g); err != nil {
					return err
				}
				if err := s.checkDeletePolicy(req.Caller, p, g); err != nil { // store_channel_admin.go
					return err
				}
			}
		}
		if req.Refusal != nil {
			return req.Refusal
		}
		var existing []channel
		var create []channelSpec
		for _, spec := range req.Specs {
			ch, err := s.channelByName(tx, spec.Name)
			switch {
			case errors.Is(err, errNoSuchChannel) && slices.ContainsFunc(create, func(c channelSpec) bool { return sameChannelName(c.Name, spec.Name) }):
				// named twice: created once
			case errors.Is(err, errNoSuchChannel):
				create = append(create, spec)
			case err != nil:
				return err
			case !slices.ContainsFunc(existing, func(c channel) bool { return c.ID == ch.ID }):
				existing = append(existing, ch)
			}
		}
		if len(create) > 0 && req.CreationRefusal != nil {
			return req.CreationRefusal
		}
		if req.TooManyCreated != nil && len(create) > req.MaxCreate {
			return req.TooManyCreated
		}
		if s.maxChannels > 0 && tx.Bucket(bucketChannels).Sequence()+uint64(len(create)) > s.maxChannels {
			return errChannelsFull.about(strconv.FormatUint(s.maxChannels, 10))
		}
		res.Created = len(create)
		var authorized []channel
		for _, ch := range existing {
			if s.canAccess(tx, req.Caller, ch) {
				authorized = append(authorized, ch)
				continue
			}
			if req.AuthorizationErrorsFatal {
				return errChannelForbidden.about(ch.Name)
			}
			res.Unauthorized = append(res.Unauthorized, ch.Name)
		}
		users, err := s.principals(tx, req)
		if err != nil {
			return err
		}
		colors := map[string]string{}
		for _, spec := range req.Specs {
			if spec.Color != "" {
				colors[string(nameKey(spec.Name))] = spec.Color
			}
		}

		// The checks are done: from here on, only writes.
		var created []channel
		for _, spec := range create {
			ch, err := s.createChannelTx(tx, channel{Name: spec.Name, Description: spec.Description, Private: req.InviteOnly, CreatorID: req.Caller.ID, Groups: req.Groups})
			if err != nil {
				return err
			}
			created = append(created, ch)
		}
		targets := append(authorized, created...)
		change := subscriptionsChanged{Op: "add"}
		res.Notified = true
		for _, target := range users {
			var joined []channel
			var names, already []string
			for _, ch := range targets {
				if isSubscribed(tx, target.ID, ch.ID) {
					already = append(already, ch.Name)
					continue
				}
				if err := s.addColoredSubscription(tx, target.ID, ch.ID, colors[string(nameKey(ch.Name))]); err != nil {
					return err
				}
				joined = append(joined, ch)
				names = append(names, ch.Name)
				if target.ID != req.Caller.ID && !target.Bot && !slices.ContainsFunc(created, func(c channel) bool { return c.ID == ch.ID }) {
					res.Notified = false
				}
			}
			if len(names) > 0 {
				res.Subscribed = append(res.Subscribed, usersChannels{target.ID, names})
				change.Members = append(change.Members, membership{User: target, Channels: joined})
			}
			if len(already) > 0 {
				res.Already = append(res.Already, usersChannels{target.ID, already})
			}
		}
		if len(change.Members) > 0 || len(created) > 0 {
			if err := s.audiences(tx, &change, created); err != nil {
				return err
			}
			report(change)
		}
		return nil
	}
}

// principals resolves the users a request names: all must exist and be
// active (bots may be named). Without principals it is the caller.
func (s *store) principals(tx *bbolt.Tx, req subscribeRequest) ([]user, error) {
	if len(req.PrincipalIDs) == 0 && len(req.PrincipalEmails) == 0 {
		return []user{req.Caller}, nil
	}
	var users []user
	add := func(u user) {
		if !slices.ContainsFunc(users, func(o user) bool { return o.ID == u.ID }) {
			users = append(users, u)
		}
	}
	var found []user
	for _, id := range req.PrincipalIDs {
		u, err := lookUpUser(tx, id)
		if err != nil {
			return nil, errNoSuchUser
		}
		found = append(found, u)
	}
	for _, email := range req.PrincipalEmails {
		u, err := userByEmail(tx, strings.TrimSpace(email))
		if err != nil {
			return nil, errNoSuchUser
		}
		found = append(found, u)
	}
	for _, u := range found { // every user is found before any is judged, as Zulip does
		if !u.Active {
			return nil, errUserDeactivated
		}
		add(u)
	}
	return users, nil
}

func (s *store) addSubscription(tx *bbolt.Tx, userID, channelID uint64) error {
	return s.addColoredSubscription(tx, userID, channelID, "")
}

// addColoredSubscription subscribes the user with the given colour, or
// the channel's own when none is given. The subscription starts at the
// largest message id so far: later messages reach the user, unread,
// earlier ones are read (their watermark starts there).
func (s *store) addColoredSubscription(tx *bbolt.Tx, userID, channelID uint64, color string) error {
	if color == "" {
		color = channelColor(channelID)
	}
	sub := subscription{Color: color, Joined: s.now().Unix()}
	if err := putJSON(tx.Bucket(bucketSubscriptions), append(itob(userID), itob(channelID)...), sub); err != nil {
		return err
	}
	start := tx.Bucket(bucketMessages).Sequence()
	if err := tx.Bucket(bucketSubscribers).Put(append(itob(channelID), itob(userID)...), itob(start)); err != nil {
		return err
	}
	return startUnread(tx, userID, channelID, start)
}

// unsubscribe removes the user from each named channel; names of
// channels they were not subscribed to come back in notRemoved.
func (s *store) unsubscribe(u user, names []string) (removed, notRemoved []string, left []channel, read []uint64, err error) {
	return s.unsubscribeUsers(u, names, nil, nil)
}

// unsubscribeUsers removes the users the principals name (the caller
// when none) from each named channel. As in Zulip, a user has no unread
// messages in channels they are not subscribed to, so their unread state
// there goes too. Removing someone other than oneself takes an
// administrator or, with metadata access, a member of the channel's
// can_administer_channel_group or can_remove_subscribers_group.
func (s *store) unsubscribeUsers(caller user, names []string, principalIDs []uint64, principalEmails []string) (removed, notRemoved []string, left []channel, read []uint64, err error) {
	var res unsubscribeResult
	err = s.updateReporting(s.unsubscribingUsers(caller, names, principalIDs, principalEmails, &res))
	return res.Removed, res.NotRemoved, res.Left, res.Read, err
}

// unsubscribeResult is what unsubscribeUsers answers.
type unsubscribeResult struct {
	Removed, NotRemoved []string
	Left                []channel
	Read                []uint64
}

// unsubscribingUsers is unsubscribeUsers' transaction, not inlined for
// the same reason as subscribingUsers.
//
//go:noinline
func (s *store) unsubscribingUsers(caller user, names []string, principalIDs []uint64, principalEmails []string, res *unsubscribeResult) func(tx *bbolt.Tx, report func(any)) error {
	return func(tx *bbolt.Tx, report func(any)) error {
		var removed, notRemoved []string
		var left []channel
		var read []uint64
		*res = unsubscribeResult{}
		defer func() { *res = unsubscribeResult{removed, notRemoved, left, read} }()
		users, err := s.principals(tx, subscribeRequest{Caller: caller, PrincipalIDs: principalIDs, PrincipalEmails: principalEmails})
		if err != nil {
			return err
		}
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
		if slices.ContainsFunc(users, func(o user) bool { return o.ID != caller.ID }) && !s.mayRemoveOthers(tx, caller, channels) {
			return errPermissionDenied
		}
		if len(missing) > 0 {
			return errNoSuchChannel.about(strings.Join(missing, ", "))
		}
		change := subscriptionsChanged{Op: "remove"}
		for _, target := range users {
			var gone []channel
			for _, ch := range channels {
				if !isSubscribed(tx, target.ID, ch.ID) {
					notRemoved = append(notRemoved, ch.Name)
					continue
				}
				if err := tx.Bucket(bucketSubscriptions).Delete(append(itob(target.ID), itob(ch.ID)...)); err != nil {
					return err
				}
				if err := tx.Bucket(bucketSubscribers).Delete(append(itob(ch.ID), itob(target.ID)...)); err != nil {
					return err
				}
				ids, err := unreadIDs(tx, target.ID, ch.ID)
				if err != nil {
					return err
				}
				if err := dropUnread(tx, target.ID, ch.ID); err != nil {
					return err
				}
				removed = append(removed, ch.Name)
				gone = append(gone, ch)
				if target.ID == caller.ID {
					read = append(read, ids...)
					left = append(left, ch)
				} else if err := reportFlags(tx, report, target, flagChange{Flag: "read", Add: true}, ids); err != nil {
					return err
				}
			}
			if len(gone) > 0 {
				change.Members = append(change.Members, membership{User: target, Channels: gone})
			}
		}
		if len(change.Members) > 0 {
			if err := s.audiences(tx, &change, nil); err != nil {
				return err
			}
			report(change)
		}
		slices.Sort(read)
		return reportFlags(tx, report, caller, flagChange{Flag: "read", Add: true}, read)
	}
}

// updateSubscriptions is PATCH /users/me/subscriptions (Zulip's
// update_subscriptions_backend and compose_views): add's subscriptions,
// then delete's removals, in one transaction. A refusal of the removals
// (or deleteRefusal, a name refused before the store) undoes the
// subscriptions made before it, as Zulip's rollback does.
func (s *store) updateSubscriptions(add subscribeRequest, del []string, deleteRefusal error) (subscribeResult, unsubscribeResult, error) {
	var added subscribeResult
	var removed unsubscribeResult
	subscribing := s.subscribingUsers(add, &added)
	unsubscribing := s.unsubscribingUsers(add.Caller, del, add.PrincipalIDs, add.PrincipalEmails, &removed)
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		if err := subscribing(tx, report); err != nil {
			return err
		}
		err := deleteRefusal
		if err == nil {
			err = unsubscribing(tx, report)
		}
		if isRejection(err) {
			return undone{err} // not a rejection: the transaction rolls back
		}
		return err
	})
	var u undone
	if errors.As(err, &u) {
		err = u.err
	}
	return added, removed, err
}

// undone carries a refusal that came after writes, as an error that
// rolls the transaction back rather than a rejection that commits it.
type undone struct{ err error }

func (u undone) Error() string { return u.err.Error() }

// audiences works out, in the transaction that made the change, who is
// told of it, as Zulip's bulk_add_subscriptions and
// bulk_remove_subscriptions decide: a new channel's creation to everyone
// who may now see it, a private channel's to those who could not see it
// before they joined, peer changes to those who follow its subscribers,
// and a private channel's deletion to those who left it and can no
// longer see it.
func (s *store) audiences(tx *bbolt.Tx, change *subscriptionsChanged, created []channel) error {
	users, _, _, err := s.directory.of(tx)
	if err != nil {
		return err
	}
	f := s.channelFigures(tx)
	views := map[uint64]channelView{}
	view := func(ch channel) (channelView, error) {
		if v, ok := views[ch.ID]; ok {
			return v, nil
		}
		v, err := f.view(ch)
		views[ch.ID] = v
		return v, err
	}
	// Who changed in each channel, in the order the channels came.
	var order []channel
	altered := map[uint64][]uint64{}
	for _, m := range change.Members {
		for _, ch := range m.Channels {
			if _, ok := altered[ch.ID]; !ok {
				order = append(order, ch)
			}
			altered[ch.ID] = append(altered[ch.ID], m.User.ID)
		}
	}
	// A channel's creation is told as it was before anyone joined it, so
	// that clients counting subscribers from the peer events that follow
	// count each once.
	for _, ch := range created {
		v, err := view(ch)
		if err != nil {
			return err
		}
		v.SubscriberCount = 0
		var audience []uint64
		for _, u := range users {
			if u.Active && s.canSeeMetadata(tx, u, ch) {
				audience = append(audience, u.ID)
			}
		}
		change.Created = append(change.Created, channelNews{Channel: v, Audience: audience})
	}
	for _, ch := range order {
		if slices.ContainsFunc(created, func(c channel) bool { return c.ID == ch.ID }) {
			continue
		}
		v, err := view(ch)
		if err != nil {
			return err
		}
		var revealed, hidden []uint64
		for _, id := range altered[ch.ID] {
			u, err := lookUpUser(tx, id)
			if err != nil {
				return err
			}
			// Seen from the other side of the change: before joining (or
			// after leaving), could the user see the channel?
			outside := u.Role == roleGuest || (ch.Private && !u.isAdmin() && !s.includes(ch.groupSetting(channelCanAdministerChannelGroup), u) &&
				!s.includes(ch.groupSetting(channelCanAddSubscribersGroup), u) && !s.includes(ch.groupSetting(channelCanSubscribeGroup), u))
			switch {
			case outside && change.Op == "add":
				revealed = append(revealed, id)
			case outside:
				hidden = append(hidden, id)
			}
		}
		if len(revealed) > 0 {
			before := v
			before.SubscriberCount -= len(altered[ch.ID])
			change.Created = append(change.Created, channelNews{Channel: before, Audience: revealed})
		}
		if len(hidden) > 0 {
			change.Deleted = append(change.Deleted, channelNews{Channel: v, Audience: hidden})
		}
	}
	for _, ch := range order {
		var audience []uint64
		for _, u := range users {
			if !u.Active || slices.Contains(altered[ch.ID], u.ID) {
				continue
			}
			if s.canSeeMetadata(tx, u, ch) { // those who may see the channel see its subscribers
				audience = append(audience, u.ID)
			}
		}
		if len(audience) > 0 {
			change.Peers = append(change.Peers, peerNews{ChannelID: ch.ID, UserIDs: slices.Sorted(slices.Values(altered[ch.ID])), Audience: audience})
		}
	}
	return nil
}

// subscriptionProperty is one change of POST
// /users/me/subscriptions/properties, checked.
type subscriptionProperty struct {
	ChannelID uint64
	Property  string
	Bool      bool
	Color     string
}

// setSubscriptionProperties applies the changes in order, after checking
// every channel: it exists and is accessible, and the user is subscribed.
func (s *store) setSubscriptionProperties(u user, changes []subscriptionProperty) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		for _, c := range changes {
			ch, err := s.channelByID(tx, c.ChannelID)
			if err != nil || !s.canAccess(tx, u, ch) {
				return errNoSuchChannel
			}
			if !isSubscribed(tx, u.ID, ch.ID) {
				return errNotSubscribedToChannel.about(strconv.FormatUint(ch.ID, 10))
			}
		}
		b := tx.Bucket(bucketSubscriptions)
		for _, c := range changes {
			key := append(itob(u.ID), itob(c.ChannelID)...)
			var sub subscription
			if err := getJSON(b, key, &sub); err != nil {
				return err
			}
			value := c.Bool
			switch c.Property {
			case "color":
				sub.Color = c.Color
			case "is_muted":
				sub.Muted = value
			case "in_home_view":
				sub.Muted = !value
			case "pin_to_top":
				sub.PinToTop = value
			case "desktop_notifications":
				sub.DesktopNotifications = &value
			case "audible_notifications":
				sub.AudibleNotifications = &value
			case "push_notifications":
				sub.PushNotifications = &value
			case "email_notifications":
				sub.EmailNotifications = &value
			case "wildcard_mentions_notify":
				sub.WildcardMentionsNotify = &value
			}
			if err := putJSON(b, key, sub); err != nil {
				return err
			}
			report(subscriptionPropertyChanged{User: u, ChannelID: c.ChannelID, Property: c.Property, Bool: c.Bool, Color: c.Color})
		}
		return nil
	})
}

func nonNilInts(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

// subscriptionStatus says whether the user is subscribed to the channel,
// after Zulip's checks in its order: access_user_by_id (an unknown id or
// a bot is no such user, a deactivated one is refused), then
// access_stream_by_id without content access (metadata suffices).
func (s *store) subscriptionStatus(caller user, userID, channelID uint64) (bool, error) {
	var subscribed bool
	err := s.db.View(func(tx *bbolt.Tx) error {
		target, err := lookUpUser(tx, userID)
		switch {
		case err != nil:
			return err
		case target.Bot:
			return errNoSuchUser
		case !target.Active:
			return errUserDeactivated
		}
		ch, err := s.channelByID(tx, channelID)
		if err != nil {
			return err
		}
		if !s.canSeeMetadata(tx, caller, ch) {
			return errNoSuchChannel
		}
		subscribed = isSubscribed(tx, target.ID, ch.ID)
		return nil
	})
	return subscribed, err
}
