package main

// Channels and subscriptions: listing, looking up, subscribing (which
// creates channels) and unsubscribing.

import (
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	maxChannelNameLength        = 60
	maxChannelDescriptionLength = 1024
)

// streamObject is Zulip's channel object, as GET /streams answers it.
type streamObject struct {
	StreamID                   uint64  `json:"stream_id"`
	Name                       string  `json:"name"`
	Description                string  `json:"description"`
	RenderedDescription        string  `json:"rendered_description"`
	DateCreated                int64   `json:"date_created"`
	CreatorID                  *uint64 `json:"creator_id"`
	InviteOnly                 bool    `json:"invite_only"`
	IsWebPublic                bool    `json:"is_web_public"`
	HistoryPublicToSubscribers bool    `json:"history_public_to_subscribers"`
	FirstMessageID             *uint64 `json:"first_message_id"`
	MessageRetentionDays       *int    `json:"message_retention_days"`
	StreamPostPolicy           int     `json:"stream_post_policy"`
	IsAnnouncementOnly         bool    `json:"is_announcement_only"`
	CanRemoveSubscribersGroup  int     `json:"can_remove_subscribers_group"`
	StreamWeeklyTraffic        *int    `json:"stream_weekly_traffic"`
}

func newStreamObject(ch channel) streamObject {
	o := streamObject{
		StreamID:                   ch.ID,
		Name:                       ch.Name,
		Description:                ch.Description,
		RenderedDescription:        renderDescription(ch.Description),
		DateCreated:                ch.Created,
		InviteOnly:                 ch.Private,
		HistoryPublicToSubscribers: true, // subscribers of a private channel see its history
		StreamPostPolicy:           1,
	}
	if ch.CreatorID != 0 {
		id := ch.CreatorID
		o.CreatorID = &id
	}
	return o
}

// subscriptionObject is Zulip's subscription object.
type subscriptionObject struct {
	streamObject
	Color                  string   `json:"color"`
	IsMuted                bool     `json:"is_muted"`
	InHomeView             bool     `json:"in_home_view"`
	PinToTop               bool     `json:"pin_to_top"`
	DesktopNotifications   *bool    `json:"desktop_notifications"`
	AudibleNotifications   *bool    `json:"audible_notifications"`
	PushNotifications      *bool    `json:"push_notifications"`
	EmailNotifications     *bool    `json:"email_notifications"`
	WildcardMentionsNotify *bool    `json:"wildcard_mentions_notify"`
	Subscribers            []uint64 `json:"subscribers,omitempty"`
}

func newSubscriptionObject(sub subscribedChannel) subscriptionObject {
	return subscriptionObject{streamObject: newStreamObject(sub.channel), Color: sub.Color, InHomeView: true}
}

// listSubscriptions serves GET /api/v1/users/me/subscriptions.
func (s *server) listSubscriptions(r *apiRequest) (any, error) {
	withSubscribers, err := r.params.optionalBool("include_subscribers", false)
	if err != nil {
		return nil, err
	}
	subs, err := s.store.subscriptions(r.user.ID)
	if err != nil {
		return nil, err
	}
	list := make([]subscriptionObject, 0, len(subs))
	for _, sub := range subs {
		o := newSubscriptionObject(sub)
		if withSubscribers {
			o.Subscribers = append([]uint64{}, sub.Subscribers...)
		}
		list = append(list, o)
	}
	return struct {
		Subscriptions []subscriptionObject `json:"subscriptions"`
	}{list}, nil
}

// subscribe serves POST /api/v1/users/me/subscriptions: it subscribes the
// caller, creating channels that do not exist yet.
func (s *server) subscribe(r *apiRequest) (any, error) {
	raw, err := r.params.requiredJSON("subscriptions")
	if err != nil {
		return nil, err
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, errNotList("subscriptions")
	}
	inviteOnly, err := r.params.optionalBool("invite_only", false)
	if err != nil {
		return nil, err
	}
	specs := make([]channelSpec, 0, len(list))
	for i, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, errNotDict(elemName("subscriptions", i))
		}
		name, ok := obj["name"].(string)
		if !ok {
			return nil, errKeyMissing("name", elemName("subscriptions", i))
		}
		description, _ := obj["description"].(string)
		spec := channelSpec{Name: strings.TrimSpace(name), Description: description}
		if err := validateChannel(spec); err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(specs, func(s channelSpec) bool { return sameChannelName(s.Name, spec.Name) }) {
			specs = append(specs, spec)
		}
	}
	subscribed, already, _, err := s.store.subscribe(r.user, specs, inviteOnly)
	if err != nil {
		return nil, err
	}
	byEmail := func(names []string) map[string][]string {
		m := map[string][]string{}
		if len(names) > 0 {
			m[r.user.Email] = names
		}
		return m
	}
	return struct {
		Subscribed        map[string][]string `json:"subscribed"`
		AlreadySubscribed map[string][]string `json:"already_subscribed"`
	}{byEmail(subscribed), byEmail(already)}, nil
}

func validateChannel(spec channelSpec) error {
	switch {
	case spec.Name == "":
		return errChannelNameEmpty
	case utf8.RuneCountInString(spec.Name) > maxChannelNameLength:
		return errChannelNameTooLong
	case strings.ContainsFunc(spec.Name, isUnsafeChar):
		i := strings.IndexFunc(spec.Name, isUnsafeChar)
		return errChannelNameCharacter(spec.Name, i)
	case strings.ContainsRune(spec.Description, 0):
		return errChannelDescriptionCharacter
	case utf8.RuneCountInString(spec.Description) > maxChannelDescriptionLength:
		return errChannelDescriptionTooLong
	}
	return nil
}

// isUnsafeChar is what Zulip refuses in names and topics: control
// characters, surrogates and non-characters.
func isUnsafeChar(r rune) bool {
	return unicode.IsControl(r) || r == utf8.RuneError || (r >= 0xfdd0 && r <= 0xfdef) || r&0xfffe == 0xfffe
}

// unsubscribe serves DELETE /api/v1/users/me/subscriptions.
func (s *server) unsubscribe(r *apiRequest) (any, error) {
	names, err := stringList(r.params, "subscriptions")
	if err != nil {
		return nil, err
	}
	for i, name := range names {
		names[i] = strings.TrimSpace(name)
		if err := validateChannel(channelSpec{Name: names[i]}); err != nil {
			return nil, err
		}
	}
	removed, notRemoved, _, _, err := s.store.unsubscribe(r.user, names)
	if errors.Is(err, errNoSuchChannel) {
		return nil, errChannelsDoNotExist(nameOf(err))
	}
	if err != nil {
		return nil, err
	}
	return struct {
		Removed    []string `json:"removed"`
		NotRemoved []string `json:"not_removed"`
	}{nonNil(removed), nonNil(notRemoved)}, nil
}

// listChannels serves GET /api/v1/streams: the channels the caller may
// see, public and subscribed ones by default.
func (s *server) listChannels(r *apiRequest) (any, error) {
	var f channelFilter
	var err error
	if f.Public, err = r.params.optionalBool("include_public", true); err != nil {
		return nil, err
	}
	if f.Subscribed, err = r.params.optionalBool("include_subscribed", true); err != nil {
		return nil, err
	}
	if f.AllActive, err = r.params.optionalBool("include_all_active", false); err != nil {
		return nil, err
	}
	if f.AllActive && !r.user.isAdmin() {
		return nil, errNotAuthorizedForQuery
	}
	channels, err := s.store.visibleChannels(r.user, f)
	if err != nil {
		return nil, err
	}
	list := make([]streamObject, 0, len(channels))
	for _, ch := range channels {
		list = append(list, newStreamObject(ch))
	}
	return struct {
		Streams []streamObject `json:"streams"`
	}{list}, nil
}

// channelID serves GET /api/v1/get_stream_id.
func (s *server) channelID(r *apiRequest) (any, error) {
	name, err := r.params.requiredString("stream")
	if err != nil {
		return nil, err
	}
	ch, err := s.store.accessibleChannel(r.user, name)
	if err != nil {
		return nil, err
	}
	return struct {
		StreamID uint64 `json:"stream_id"`
	}{ch.ID}, nil
}

// renderDescription is the minimal safe rendering of a description: the
// text HTML-escaped in a paragraph (the binary carries no Markdown).
func renderDescription(text string) string {
	if text == "" {
		return ""
	}
	return "<p>" + htmlEscaper.Replace(text) + "</p>"
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")
