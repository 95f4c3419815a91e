package main

// The events that joining, leaving and subscription settings make: who
// hears what, in Zulip's order (the store decides the audiences,
// store_channels.go).

// publishSubscriptions tells each audience its part of a change, in the
// order Zulip sends them: a channel's creation before anyone's joining
// it (clients need the channel first), the joiners' subscriptions, then
// the peers; on leaving, the leavers' removals, the channels they can no
// longer see, then the peers.
func (s *server) publishSubscriptions(c subscriptionsChanged) {
	for _, news := range c.Created {
		e := event{"type": "stream", "op": "create", "streams": []streamObject{newStreamObject(news.Channel)}}
		s.events.tell("stream", usersAudience(news.Audience...), e, nil)
	}
	// Only members with a queue hear of it, and their subscription
	// objects are read in one transaction, each channel's figures once.
	var members []membership
	for _, m := range c.Members {
		if s.events.hasQueue(m.User.ID) {
			members = append(members, m)
		}
	}
	var joined [][]subscribedChannel
	if c.Op == "add" && len(members) > 0 {
		var err error
		if joined, err = s.store.subscriptionsOfMembers(members); err != nil {
			s.log.Error("subscriptions for an event", "err", err)
			members = nil
		}
	}
	for i, m := range members {
		var list []any
		if c.Op == "add" {
			for _, sub := range joined[i] {
				o := newSubscriptionObject(sub)
				o.Subscribers = append([]uint64{}, sub.Subscribers...)
				list = append(list, o)
			}
		} else {
			for _, ch := range m.Channels {
				list = append(list, map[string]any{"name": ch.Name, "stream_id": ch.ID})
			}
		}
		e := event{"type": "subscription", "op": c.Op, "subscriptions": list}
		s.events.tell("subscription", usersAudience(m.User.ID), e, nil)
	}
	for _, news := range c.Deleted {
		e := event{"type": "stream", "op": "delete", "streams": []any{map[string]any{"stream_id": news.Channel.ID}}, "stream_ids": []uint64{news.Channel.ID}}
		s.events.tell("stream", usersAudience(news.Audience...), e, nil)
	}
	for _, peers := range c.Peers {
		e := event{"type": "subscription", "op": "peer_" + c.Op, "stream_ids": []uint64{peers.ChannelID}, "user_ids": peers.UserIDs}
		s.events.tell("subscription", usersAudience(peers.Audience...), e, nil)
	}
}

// publishSubscriptionProperty tells the user's queues of a changed
// subscription setting; a change of muting is told twice, as the
// deprecated in_home_view and as is_muted, as Zulip does.
func (s *server) publishSubscriptionProperty(c subscriptionPropertyChanged) {
	var events []event
	update := func(property string, value any) {
		events = append(events, event{"type": "subscription", "op": "update", "property": property, "value": value, "stream_id": c.ChannelID})
	}
	switch c.Property {
	case "color":
		update("color", c.Color)
	case "is_muted":
		update("in_home_view", !c.Bool)
		update("is_muted", c.Bool)
	case "in_home_view":
		update("in_home_view", c.Bool)
		update("is_muted", !c.Bool)
	default:
		update(c.Property, c.Bool)
	}
	for _, e := range events {
		s.events.tell("subscription", usersAudience(c.User.ID), e, nil)
	}
}

// Channel administration (store_channel_admin.go): what Zulip's
// do_change_stream_permission, do_rename_stream,
// do_change_stream_description, do_change_stream_group_based_setting,
// do_deactivate_stream, do_unarchive_stream and notify_default_streams
// send. A client without the archived_channels capability is told
// nothing of an archived channel (Zulip's archived_channels: "the server
// will not include data related to archived channels ... in events"):
// it hears of an archiving as the channel's deletion and of an
// unarchiving as its creation.

// withArchived is the queue filter of an event about a channel that is
// archived: only queues that take archived channels.
func withArchived(archived bool) func(q *eventQueue) bool {
	if !archived {
		return nil
	}
	return func(q *eventQueue) bool { return q.archivedChannels }
}

func (s *server) publishChannelUpdate(c channelUpdated) {
	ch := c.Channel
	only := withArchived(ch.Archived)
	if len(c.Gaining) > 0 {
		e := event{"type": "stream", "op": "create", "streams": []streamObject{newStreamObject(ch)}}
		s.events.tell("stream", usersAudience(c.Gaining...), e, only)
		peers := event{"type": "subscription", "op": "peer_add", "stream_ids": []uint64{ch.ID}, "user_ids": nonNilIDs(c.Subscribers)}
		s.events.tell("subscription", usersAudience(c.Gaining...), peers, only)
	}
	for _, p := range c.Properties {
		e := event{"type": "stream", "op": "update", "stream_id": ch.ID, "name": p.Name, "property": p.Property, "value": p.Value}
		for _, x := range p.Extra {
			e[x[0].(string)] = x[1]
		}
		s.events.tell("stream", usersAudience(c.Audience...), e, only)
	}
	if len(c.Losing) > 0 {
		e := event{"type": "stream", "op": "delete", "streams": []any{map[string]any{"stream_id": ch.ID}}, "stream_ids": []uint64{ch.ID}}
		s.events.tell("stream", usersAudience(c.Losing...), e, only)
	}
	if c.Defaults != nil {
		s.publishDefaultChannels(*c.Defaults, c.NonGuests)
	}
}

func (s *server) publishChannelArchived(c channelArchived) {
	if c.Defaults != nil {
		s.publishDefaultChannels(*c.Defaults, c.NonGuests)
	}
	ch := c.Channel
	update := event{"type": "stream", "op": "update", "stream_id": ch.ID, "name": ch.Name, "property": "is_archived", "value": !c.Unarchived}
	s.events.tell("stream", usersAudience(c.Audience...), update, func(q *eventQueue) bool { return q.archivedChannels })
	var other event
	if c.Unarchived {
		other = event{"type": "stream", "op": "create", "streams": []streamObject{newStreamObject(ch)}}
	} else {
		other = event{"type": "stream", "op": "delete", "streams": []any{map[string]any{"stream_id": ch.ID}}, "stream_ids": []uint64{ch.ID}}
	}
	s.events.tell("stream", usersAudience(c.Audience...), other, func(q *eventQueue) bool { return !q.archivedChannels })
}

// publishDefaultChannels is Zulip's notify_default_streams: the default
// channels' ids to every active member but guests.
func (s *server) publishDefaultChannels(ids, nonGuests []uint64) {
	e := event{"type": "default_streams", "default_streams": nonNilIDs(ids)}
	s.events.tell("default_streams", usersAudience(nonGuests...), e, nil)
}
