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
