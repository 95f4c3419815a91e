package main

import (
	"errors"
	"strings"
	"time"
)

// updateSubscriptions serves PATCH /api/v1/users/me/subscriptions,
// Zulip's update_subscriptions_backend: add (a list of {name, color,
// description}) subscribed as POST /users/me/subscriptions would, then
// delete (channel names) unsubscribed as DELETE would, in one
// transaction. As in Zulip, both halves read the request's other
// parameters (principals for both, invite_only and the rest for add),
// the add half always runs, so guests are refused even a delete alone,
// and a refused delete half undoes the add half.
func (s *server) updateSubscriptions(r *apiRequest) (any, error) {
	var del []string
	if raw, ok := r.params.lookup("delete"); ok && strings.TrimSpace(raw) != "null" {
		list, err := stringList(r.params, "delete")
		if err != nil {
			return nil, err
		}
		del = list
	}
	var specs []channelSpec
	if raw, ok := r.params.lookup("add"); ok && strings.TrimSpace(raw) != "null" {
		parsed, err := decodeJSON("add", raw)
		if err != nil {
			return nil, err
		}
		if specs, err = channelSpecsOf("add", parsed); err != nil {
			return nil, err
		}
	}
	if len(specs) == 0 && len(del) == 0 {
		return nil, errNothingToDoSubscriptions
	}
	if r.user.Role == roleGuest { // add_subscriptions_backend's require_non_guest_user
		return nil, errGuestsNotAllowed
	}
	req, sendNotices, err := s.readSubscribeRequest(r, specs)
	if err != nil {
		return nil, err
	}
	// remove_subscriptions_backend's names, judged after the add half.
	var deleteRefusal error
	for i, name := range del {
		del[i] = strings.TrimSpace(name)
		var refused *apiError
		if err := validateChannel(channelSpec{Name: del[i]}); errors.As(err, &refused) && deleteRefusal == nil {
			deleteRefusal = refusal(refused)
		}
	}
	added, removed, err := s.store.updateSubscriptions(req, del, deleteRefusal)
	if errors.Is(err, errNoSuchChannel) { // only the delete half looks channels up by name without creating them
		return nil, errChannelsDoNotExist(nameOf(err))
	}
	if err != nil {
		return nil, err
	}
	s.channelBudget.spend(r.user.ID, added.Created, time.Now())
	return struct {
		subscribeAnswer
		Removed    []string `json:"removed"`
		NotRemoved []string `json:"not_removed"`
	}{newSubscribeAnswer(req, added, sendNotices), nonNil(removed.Removed), nonNil(removed.NotRemoved)}, nil
}

// subscriptionStatus serves GET
// /api/v1/users/{user_id}/subscriptions/{stream_id} (Zulip's
// get_subscription_backend): whether that user is subscribed, for a
// caller who may see the channel's metadata.
func (s *server) subscriptionStatus(r *apiRequest) (any, error) {
	userID, err := pathDigits(r, "user_id", errNoSuchUser)
	if err != nil {
		return nil, err
	}
	channelID, err := pathChannelID(r)
	if err != nil {
		return nil, err
	}
	subscribed, err := s.store.subscriptionStatus(r.user, userID, channelID)
	if errors.Is(err, errNoSuchChannel) {
		return nil, errInvalidChannelID
	}
	if err != nil {
		return nil, err
	}
	return struct {
		IsSubscribed bool `json:"is_subscribed"`
	}{subscribed}, nil
}
