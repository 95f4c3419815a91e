package main

// Channels and subscriptions: listing, looking up, subscribing (which
// creates channels), unsubscribing, subscription settings, a channel's
// topics, and the events these changes make.

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	maxChannelNameLength        = 60
	maxChannelDescriptionLength = 1024
)

// streamObject is Zulip's channel object at feature level 421, as GET
// /streams answers it. zulite has no web-public channels, no channel
// folders and no retention policy, so those fields
// say so; subscribers of a private channel see its whole history.
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
	IsArchived                 bool    `json:"is_archived"`
	FirstMessageID             *uint64 `json:"first_message_id"`
	FolderID                   *uint64 `json:"folder_id"`
	IsRecentlyActive           bool    `json:"is_recently_active"`
	MessageRetentionDays       *int    `json:"message_retention_days"`
	StreamPostPolicy           int     `json:"stream_post_policy"`
	IsAnnouncementOnly         bool    `json:"is_announcement_only"`
	StreamWeeklyTraffic        *int    `json:"stream_weekly_traffic"`
	SubscriberCount            int     `json:"subscriber_count"`
	TopicsPolicy               string  `json:"topics_policy"`

	CanAddSubscribersGroup            groupSetting `json:"can_add_subscribers_group"`
	CanAdministerChannelGroup         groupSetting `json:"can_administer_channel_group"`
	CanDeleteAnyMessageGroup          groupSetting `json:"can_delete_any_message_group"`
	CanDeleteOwnMessageGroup          groupSetting `json:"can_delete_own_message_group"`
	CanMoveMessagesOutOfChannelGroup  groupSetting `json:"can_move_messages_out_of_channel_group"`
	CanMoveMessagesWithinChannelGroup groupSetting `json:"can_move_messages_within_channel_group"`
	CanRemoveSubscribersGroup         groupSetting `json:"can_remove_subscribers_group"`
	CanSendMessageGroup               groupSetting `json:"can_send_message_group"`
	CanSubscribeGroup                 groupSetting `json:"can_subscribe_group"`
	CanResolveTopicsGroup             groupSetting `json:"can_resolve_topics_group"`
	IsDefault                         *bool        `json:"is_default,omitempty"` // GET /streams with include_default
}

// streamPostPolicies is Zulip's Stream.SYSTEM_GROUPS_ENUM_MAP: the
// deprecated stream_post_policy that best describes can_send_message_group.
var streamPostPolicies = map[int]int{groupEveryone: 1, groupAdministrators: 2, groupFullMembers: 3, groupModerators: 4}

func newStreamObject(ch channelView) streamObject {
	o := streamObject{
		StreamID:                   ch.ID,
		Name:                       ch.Name,
		Description:                ch.Description,
		RenderedDescription:        renderDescription(ch.Description),
		DateCreated:                ch.Created,
		InviteOnly:                 ch.Private,
		HistoryPublicToSubscribers: true,
		IsArchived:                 ch.Archived,
		IsRecentlyActive:           ch.RecentlyActive,
		StreamWeeklyTraffic:        ch.WeeklyTraffic,
		SubscriberCount:            ch.SubscriberCount,
		TopicsPolicy:               "inherit",

		CanAddSubscribersGroup:            ch.groupSetting(channelCanAddSubscribersGroup),
		CanAdministerChannelGroup:         ch.groupSetting(channelCanAdministerChannelGroup),
		CanDeleteAnyMessageGroup:          ch.groupSetting(channelCanDeleteAnyMessageGroup),
		CanDeleteOwnMessageGroup:          ch.groupSetting(channelCanDeleteOwnMessageGroup),
		CanMoveMessagesOutOfChannelGroup:  ch.groupSetting(channelCanMoveMessagesOutOfChannelGroup),
		CanMoveMessagesWithinChannelGroup: ch.groupSetting(channelCanMoveMessagesWithinChannelGroup),
		CanRemoveSubscribersGroup:         ch.groupSetting(channelCanRemoveSubscribersGroup),
		CanSendMessageGroup:               ch.groupSetting(channelCanSendMessageGroup),
		CanSubscribeGroup:                 ch.groupSetting(channelCanSubscribeGroup),
		CanResolveTopicsGroup:             ch.groupSetting(channelCanResolveTopicsGroup),
	}
	o.StreamPostPolicy = 1
	if send := o.CanSendMessageGroup; !send.Anonymous && streamPostPolicies[send.Group] != 0 {
		o.StreamPostPolicy = streamPostPolicies[send.Group]
	}
	o.IsAnnouncementOnly = o.StreamPostPolicy == 2
	if ch.CreatorID != 0 {
		id := ch.CreatorID
		o.CreatorID = &id
	}
	if ch.FirstMessageID != 0 {
		id := ch.FirstMessageID
		o.FirstMessageID = &id
	}
	return o
}

// subscriptionObject is Zulip's subscription object. A notification
// setting is null when the subscription inherits the user's default.
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
	return subscriptionObject{
		streamObject:           newStreamObject(sub.channelView),
		Color:                  sub.Color,
		IsMuted:                sub.Muted,
		InHomeView:             !sub.Muted,
		PinToTop:               sub.PinToTop,
		DesktopNotifications:   sub.DesktopNotifications,
		AudibleNotifications:   sub.AudibleNotifications,
		PushNotifications:      sub.PushNotifications,
		EmailNotifications:     sub.EmailNotifications,
		WildcardMentionsNotify: sub.WildcardMentionsNotify,
	}
}

// optionalIncludeSubscribers reads include_subscribers, which since
// feature level 412 may also be "partial": zulite then sends every
// subscriber, which that value allows.
func optionalIncludeSubscribers(p *params) (bool, error) {
	if v, ok := p.lookup("include_subscribers"); ok && (v == "partial" || v == `"partial"`) {
		return true, nil
	}
	return p.optionalBool("include_subscribers", false)
}

// listSubscriptions serves GET /api/v1/users/me/subscriptions.
func (s *server) listSubscriptions(r *apiRequest) (any, error) {
	withSubscribers, err := optionalIncludeSubscribers(r.params)
	if err != nil {
		return nil, err
	}
	subs, err := s.store.subscriptions(r.user.ID)
	if err != nil {
		return nil, err
	}
	list := make([]subscriptionObject, 0, len(subs))
	for _, sub := range subs {
		if sub.Archived { // Zulip's gather_subscriptions leaves archived channels out
			continue
		}
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

// subscribe serves POST /api/v1/users/me/subscriptions: it subscribes
// the caller, or the users the principals name, creating channels that
// do not exist yet (Zulip's add_subscriptions_backend).
func (s *server) subscribe(r *apiRequest) (any, error) {
	if r.user.Role == roleGuest {
		return nil, errGuestsNotAllowed
	}
	specs, err := readChannelSpecs(r.params)
	if err != nil {
		return nil, err
	}
	req, sendNotices, err := s.readSubscribeRequest(r, specs)
	if err != nil {
		return nil, err
	}
	res, err := s.store.subscribeUsers(req)
	if err != nil {
		return nil, err
	}
	s.channelBudget.spend(r.user.ID, res.Created, time.Now())
	return newSubscribeAnswer(req, res, sendNotices), nil
}

// readSubscribeRequest reads the parameters of Zulip's
// add_subscriptions_backend other than the channels, which POST and
// PATCH /users/me/subscriptions name differently.
func (s *server) readSubscribeRequest(r *apiRequest, specs []channelSpec) (req subscribeRequest, sendNotices bool, err error) {
	req = subscribeRequest{Caller: r.user, Specs: specs}
	if req.InviteOnly, err = r.params.optionalBool("invite_only", false); err != nil {
		return req, false, err
	}
	webPublic, err := r.params.optionalBool("is_web_public", false)
	if err != nil {
		return req, false, err
	}
	defaultChannel, err := r.params.optionalBool("is_default_stream", false)
	if err != nil {
		return req, false, err
	}
	historyPublic, err := r.params.optionalBool("history_public_to_subscribers", true)
	if err != nil {
		return req, false, err
	}
	retention, err := readRetention(r.params)
	if err != nil {
		return req, false, err
	}
	topicsPolicy, err := readTopicsPolicy(r.params)
	if err != nil {
		return req, false, err
	}
	for p := range channelPermissionCount {
		g, ok, err := readGroupSetting(r.params, p.name())
		if err != nil {
			return req, false, err
		}
		if ok {
			if req.Groups == nil {
				req.Groups = map[string]groupSetting{}
			}
			req.Groups[p.name()] = g
		}
	}
	if _, err := r.params.optionalBool("announce", false); err != nil { // zulite has no announcement channel
		return req, false, err
	}
	if req.PrincipalIDs, req.PrincipalEmails, err = readPrincipals(r.params); err != nil {
		return req, false, err
	}
	if req.AuthorizationErrorsFatal, err = r.params.optionalBool("authorization_errors_fatal", true); err != nil {
		return req, false, err
	}
	folder := false
	if raw, ok := r.params.lookup("folder_id"); ok && strings.TrimSpace(raw) != "null" {
		if _, err := parseInt("folder_id", raw); err != nil {
			return req, false, err
		}
		folder = true
	}
	if sendNotices, err = r.params.optionalBool("send_new_subscription_messages", true); err != nil {
		return req, false, err
	}
	if req.Specs, err = checkChannelSpecs(specs); err != nil {
		return req, false, err
	}
	switch { // after the group settings are checked, as in Zulip
	case folder:
		req.Refusal = refusal(errInvalidChannelFolderID) // zulite has no channel folders
	case topicsPolicy != "inherit" && len(specs) > 0:
		req.Refusal = refusal(errInsufficientPermission) // nobody may set a channel's topics policy
	}
	req.CreationRefusal = creationRefusal(r.user, req.InviteOnly, webPublic, defaultChannel, historyPublic, retention)
	if req.CreationRefusal == nil && !s.mayCreateChannels(r.user, req.InviteOnly) {
		req.CreationRefusal = refusal(errInsufficientPermission) // the organisation's setting
	}
	req.MaxCreate, req.TooManyCreated = maxNewChannelsPerRequest, refusal(errTooManyNewChannels)
	if left, wait := s.channelBudget.left(r.user.ID, time.Now()); left < maxNewChannelsPerRequest {
		req.MaxCreate, req.TooManyCreated = max(left, 0), refusal(rateLimited(wait))
	}
	return req, sendNotices, nil
}

// subscribeAnswer is the answer of Zulip's add_subscriptions_backend.
type subscribeAnswer struct {
	Subscribed                  map[string][]string `json:"subscribed"`
	AlreadySubscribed           map[string][]string `json:"already_subscribed"`
	Unauthorized                *[]string           `json:"unauthorized,omitempty"`
	NewSubscriptionMessagesSent *bool               `json:"new_subscription_messages_sent,omitempty"`
}

func newSubscribeAnswer(req subscribeRequest, res subscribeResult, sendNotices bool) subscribeAnswer {
	byUser := func(list []usersChannels) map[string][]string {
		m := map[string][]string{}
		for _, uc := range list {
			m[strconv.FormatUint(uc.UserID, 10)] = uc.Names
		}
		return m
	}
	answer := subscribeAnswer{Subscribed: byUser(res.Subscribed), AlreadySubscribed: byUser(res.Already)}
	if !req.AuthorizationErrorsFatal {
		unauthorized := nonNil(res.Unauthorized)
		answer.Unauthorized = &unauthorized
	}
	if sendNotices {
		answer.NewSubscriptionMessagesSent = &res.Notified
	}
	return answer
}

// unsubscribe serves DELETE /api/v1/users/me/subscriptions: the caller,
// or the users the principals name, leave the named channels.
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
	ids, emails, err := readPrincipals(r.params)
	if err != nil {
		return nil, err
	}
	removed, notRemoved, _, _, err := s.store.unsubscribeUsers(r.user, names, ids, emails)
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
// see, public and subscribed ones by default (Zulip's get_streams_backend).
func (s *server) listChannels(r *apiRequest) (any, error) {
	var f channelFilter
	err := s.takeListing(r)
	if err != nil {
		return nil, err
	}
	if f.Public, err = r.params.optionalBool("include_public", true); err != nil {
		return nil, err
	}
	if _, err = r.params.optionalBool("include_web_public", false); err != nil { // zulite has no web-public channels
		return nil, err
	}
	if f.Subscribed, err = r.params.optionalBool("include_subscribed", true); err != nil {
		return nil, err
	}
	excludeArchived, err := r.params.optionalBool("exclude_archived", true)
	if err != nil {
		return nil, err
	}
	f.Archived = !excludeArchived
	if f.All, err = r.params.optionalBool("include_all", false); err != nil {
		return nil, err
	}
	allActive, err := r.params.optionalBool("include_all_active", false) // the name before feature level 356
	if err != nil {
		return nil, err
	}
	f.All = f.All || allActive
	withDefault, err := r.params.optionalBool("include_default", false)
	if err != nil {
		return nil, err
	}
	if _, err = r.params.optionalBool("include_owner_subscribed", false); err != nil { // zulite's bots have no owners
		return nil, err
	}
	if f.ContentAccess, err = r.params.optionalBool("include_can_access_content", false); err != nil {
		return nil, err
	}
	channels, err := s.store.visibleChannels(r.user, f)
	if err != nil {
		return nil, err
	}
	list := make([]streamObject, 0, len(channels))
	for _, ch := range channels {
		o := newStreamObject(ch)
		if withDefault {
			o.IsDefault = &ch.Default
		}
		list = append(list, o)
	}
	return struct {
		Streams []streamObject `json:"streams"`
	}{list}, nil
}

// pathChannelID reads the {stream_id} of a route's path.
func pathChannelID(r *apiRequest) (uint64, error) {
	return pathDigits(r, "stream_id", errInvalidChannelID)
}

// pathDigits reads a numeric id of a route's path: digits, as Zulip's
// URL patterns want (anything else is no route at all), and tooBig for
// digits beyond an id.
func pathDigits(r *apiRequest, name string, tooBig error) (uint64, error) {
	text := r.PathValue(name)
	if text == "" || strings.Trim(text, "0123456789") != "" {
		return 0, errNotFound
	}
	id, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, tooBig
	}
	return id, nil
}

// channelByID serves GET /api/v1/streams/{stream_id}.
func (s *server) channelByID(r *apiRequest) (any, error) {
	id, err := pathChannelID(r)
	if err != nil {
		return nil, err
	}
	ch, err := s.store.channelFor(r.user, id)
	if errors.Is(err, errNoSuchChannel) {
		return nil, errInvalidChannelID
	}
	if err != nil {
		return nil, err
	}
	return struct {
		Stream streamObject `json:"stream"`
	}{newStreamObject(ch)}, nil
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

type topicObject struct {
	Name  string `json:"name"`
	MaxID uint64 `json:"max_id"`
}

// channelTopics serves GET /api/v1/users/me/{stream_id}/topics: the
// channel's topics, the most recently active first.
func (s *server) channelTopics(r *apiRequest) (any, error) {
	id, err := pathChannelID(r)
	if err != nil {
		return nil, err
	}
	allowEmpty, err := r.params.optionalBool("allow_empty_topic_name", false)
	if err != nil {
		return nil, err
	}
	topics, err := s.store.channelTopics(r.user, id)
	if errors.Is(err, errNoSuchChannel) {
		return nil, errInvalidChannelID
	}
	if err != nil {
		return nil, err
	}
	list := make([]topicObject, 0, len(topics))
	for _, t := range topics {
		list = append(list, topicObject{displayTopic(t.Name, allowEmpty), t.MaxID})
	}
	return struct {
		Topics []topicObject `json:"topics"`
	}{list}, nil
}

// subscriptionBoolProperties are the settings of a subscription that
// take a boolean (Zulip's SubscriptionPropertyChangeRequest).
var subscriptionBoolProperties = []string{"in_home_view", "is_muted", "desktop_notifications", "audible_notifications",
	"push_notifications", "email_notifications", "pin_to_top", "wildcard_mentions_notify"}

// setSubscriptionProperties serves POST
// /api/v1/users/me/subscriptions/properties. Every change is checked
// before any is made (Zulip makes them one by one, so that a bad change
// late in the list leaves the earlier ones made).
func (s *server) setSubscriptionProperties(r *apiRequest) (any, error) {
	raw, err := r.params.requiredJSON("subscription_data")
	if err != nil {
		return nil, err
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, errNotList("subscription_data")
	}
	changes := make([]subscriptionProperty, 0, len(list))
	for i, item := range list {
		elem := elemName("subscription_data", i)
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, errNotDict(elem)
		}
		for _, key := range []string{"stream_id", "property", "value"} {
			if _, ok := obj[key]; !ok {
				return nil, errKeyMissing(key, elem)
			}
		}
		id, ok := jsonInt(obj["stream_id"])
		if !ok {
			return nil, errNotInteger(elem + `["stream_id"]`)
		}
		property, ok := obj["property"].(string)
		if !ok {
			return nil, errNotString(elem + `["property"]`)
		}
		value := obj["value"]
		_, isBool := value.(bool)
		_, isString := value.(string)
		if !isBool && !isString {
			return nil, errNotBoolean(elem + `["value"]`)
		}
		change := subscriptionProperty{ChannelID: uint64(max(id, 0)), Property: property}
		switch {
		case property == "color":
			color, _ := value.(string)
			if !isHexColor(color) {
				return nil, errInvalidValue(elem, errNotHexColor("color"))
			}
			change.Color = strings.ToLower(color)
		case slices.Contains(subscriptionBoolProperties, property):
			if !isBool {
				return nil, errNotBoolean(property)
			}
			change.Bool = value.(bool)
		default:
			return nil, errUnknownSubscriptionProperty(property)
		}
		changes = append(changes, change)
	}
	err = s.store.setSubscriptionProperties(r.user, changes)
	if errors.Is(err, errNoSuchChannel) {
		return nil, errInvalidChannelID
	}
	return nil, err
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
