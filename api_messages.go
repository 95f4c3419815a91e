package main

// Messages: sending, fetching by narrow and by id, and the message
// object clients read. Personal flags and the mark-read routes are
// api_flags.go's.

import (
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"zulite/internal/markdown"
)

const (
	maxTopicLength   = 60
	maxMessageLength = 10000
)

// Empty topics (Zulip 10, feature levels 334 and 370). A channel
// message may have the topic "", which Zulip calls "general chat".
// Clients that do not declare the empty_topic_name capability, and GET
// /messages without allow_empty_topic_name, are shown
// emptyTopicDisplayName instead, and a topic sent as that name or as
// "(no topic)" is stored as "".
const (
	// emptyTopicDisplayName is Zulip's Message.EMPTY_TOPIC_FALLBACK_NAME,
	// which register reports as realm_empty_topic_display_name.
	emptyTopicDisplayName = "general chat"
	// noTopic is what clients before feature level 334 sent for "".
	noTopic = "(no topic)"
)

// displayTopic is the topic as a client is shown it: "" becomes the
// display name unless the client understands empty topics. Zulip uses
// it for message subjects, update_message_flags details and register's
// unread_msgs alike.
func displayTopic(topic string, allowEmpty bool) string {
	if topic == "" && !allowEmpty {
		return emptyTopicDisplayName
	}
	return topic
}

// unreadTopicsShown is register's unread_msgs.streams as Zulip's
// aggregate_streams builds it from the user's unread summary: the empty
// topic shown by name unless the queue has empty_topic_name, topics
// that differ only in case counted as one (under the name of its oldest
// unread message, the one Zulip meets first), ids ascending, ordered by
// channel id and lower-cased topic.
func unreadTopicsShown(topics []unreadTopic, allowEmptyTopic bool) []unreadTopic {
	type key struct {
		channelID uint64
		topic     string
	}
	index := map[key]int{}
	var out []unreadTopic
	for _, t := range topics {
		if len(t.IDs) == 0 {
			continue
		}
		name := displayTopic(t.Topic, allowEmptyTopic)
		k := key{t.ChannelID, foldTopic(name)}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, unreadTopic{ChannelID: t.ChannelID, Topic: name})
		}
		if ok && slices.Min(t.IDs) < out[i].IDs[0] {
			out[i].Topic = name
		}
		out[i].IDs = append(out[i].IDs, t.IDs...)
		slices.Sort(out[i].IDs)
	}
	sortFunc(out, func(a, b unreadTopic) int {
		if a.ChannelID != b.ChannelID {
			return cmp.Compare(a.ChannelID, b.ChannelID)
		}
		return strings.Compare(foldTopic(a.Topic), foldTopic(b.Topic))
	})
	return out
}

// storedTopic is a topic as a client sent it, as Zulip stores it: the
// display name and "(no topic)" mean the empty topic.
func storedTopic(topic string) string {
	if topic == emptyTopicDisplayName || topic == noTopic {
		return ""
	}
	return topic
}

// Topics policies (Zulip 11, feature levels 392 and 404): whether a
// channel takes the empty topic, named topics, or both. A channel's
// "inherit" means the realm's policy, which in zulite is always
// realmTopicsPolicy.
const (
	topicsPolicyInherit        = "inherit"
	topicsPolicyAllowEmpty     = "allow_empty_topic"
	topicsPolicyDisableEmpty   = "disable_empty_topic"
	topicsPolicyEmptyTopicOnly = "empty_topic_only"
	realmTopicsPolicy          = topicsPolicyAllowEmpty
)

// checkTopicsPolicy refuses a topic the channel's policy does not allow,
// in Zulip's words.
func checkTopicsPolicy(channelPolicy, topic string) error {
	policy := channelPolicy
	if policy == "" || policy == topicsPolicyInherit {
		policy = realmTopicsPolicy
	}
	switch {
	case policy == topicsPolicyDisableEmpty && topic == "":
		return errEmptyTopicNotAllowed
	case policy == topicsPolicyEmptyTopicOnly && topic != "":
		return errTopicsNotAllowed
	}
	return nil
}

// sendMessage serves POST /api/v1/messages for channel messages, with
// Zulip's checks in Zulip's order; direct messages go to sendDirect.
func (s *server) sendMessage(r *apiRequest) (any, error) {
	kind, err := r.params.requiredString("type")
	if err != nil {
		return nil, err
	}
	switch kind {
	case "stream", "channel":
	case "private", "direct":
		return s.sendDirect(r) // dms.go
	default:
		return nil, errInvalidMessageType
	}
	to, err := messageTarget(r.params)
	if err != nil {
		return nil, err
	}
	topic, ok := r.params.lookup("topic")
	if !ok {
		if topic, ok = r.params.lookup("subject"); !ok {
			return nil, errMissingTopic
		}
	}
	topic = storedTopic(strings.TrimSpace(topic))
	if i := strings.IndexFunc(topic, isUnsafeChar); i >= 0 {
		return nil, errTopicCharacter(topic, i)
	}
	content, err := r.params.requiredString("content")
	if err != nil {
		return nil, err
	}
	if content, err = sentContent(content); err != nil {
		return nil, err
	}
	readBySender, err := r.params.optionalBool("read_by_sender", defaultReadBySender)
	if err != nil {
		return nil, err
	}
	queueID, localID := localEcho(r.params)
	out := outgoingMessage{To: to, Topic: truncateTopic(topic), Content: content, Client: clientName(r),
		ReadBySender: readBySender, QueueID: queueID, LocalID: localID, RealmURL: s.baseURL, Widget: readWidgetContent(r.params)}
	sent, err := s.store.postMessage(r.user, out)
	switch {
	case errors.Is(err, errNoSuchChannel):
		return nil, noSuchChannel(to)
	case errors.Is(err, errChannelForbidden):
		return nil, errNotAuthorizedToSend(nameOf(err))
	case err != nil:
		return nil, err
	}
	// Zulip adds automatic_new_visibility_policy only when sending
	// changed the sender's visibility policy for the topic.
	return struct {
		ID        uint64 `json:"id"`
		Automatic int    `json:"automatic_new_visibility_policy,omitempty"`
	}{sent.ID, sent.AutomaticPolicy}, nil
}

// clientName is the name Zulip records as a message's client: the
// `client` parameter, else the name at the start of the User-Agent
// ("ZulipFlutter/30.0 (Android)" is ZulipFlutter), else "Unspecified";
// at most 30 characters, as Zulip's Client.name.
func clientName(r *apiRequest) string {
	name, ok := r.params.lookup("client")
	if !ok {
		agent, present := r.Header["User-Agent"]
		if !present || len(agent) == 0 {
			return "Unspecified"
		}
		if name, ok = userAgentName(agent[0]); !ok {
			return "Unspecified"
		}
	}
	if runes := []rune(name); len(runes) > 30 {
		name = string(runes[:30])
	}
	return name
}

// userAgentName is the first group of zerver/lib/user_agent.py's
// pattern, ^([^/ ]*[^0-9/(]*)(?:/[^/ ]*)?(?:[ /].*)?$, as Go's regexp
// finds it (patterns_test.go holds the two alike), written out for the
// binary's size. The group ends at the last place the rest can match
// from: [^/ ]* runs to the first / or space, [^0-9/(]* on to the first
// digit, / or ( after it (next); the rest matches at the end, at a / that
// is past the last newline or whose [^/ ]* run ends so, or at a space
// past the last newline, where .* reaches the end. A shorter [^/ ]*
// finds no other end: what it gives back holds no / or space.
func userAgentName(s string) (string, bool) {
	start := strings.IndexAny(s, "/ ")
	if start < 0 {
		return s, true
	}
	next := len(s)
	if i := strings.IndexAny(s[start:], "0123456789/("); i >= 0 {
		next = start + i
	}
	lastNewline := strings.LastIndexByte(s, '\n')
	restFrom := func(q int) bool { return q == len(s) || q > lastNewline } // (?:[ /].*)?$ at a space, a / or the end
	if next == len(s) {
		return s, true
	}
	if s[next] == '/' {
		run := len(s)
		if i := strings.IndexAny(s[next+1:], "/ "); i >= 0 {
			run = next + 1 + i
		}
		if restFrom(next) || restFrom(run) {
			return s[:next], true
		}
	}
	if from := max(start, lastNewline+1); from < next {
		if i := strings.LastIndexByte(s[from:next], ' '); i >= 0 {
			return s[:from+i], true
		}
	}
	return "", false
}

// defaultReadBySender is read_by_sender when a send does not say:
// SPEC §6 makes a message read for its sender whatever client sent it.
// (Zulip's own default, Client.default_read_by_sender, is true only for
// its apps: ZulipAndroid, ZulipiOS, ZulipDesktop, ZulipMobile,
// ZulipElectron, ZulipTerminal, snipe, website, ios, android; the
// flutter app and zulip-terminal send read_by_sender=true anyway.)
const defaultReadBySender = true

// truncateTopic shortens a topic over the limit as Zulip does, with "...".
func truncateTopic(topic string) string {
	if utf8.RuneCountInString(topic) <= maxTopicLength {
		return topic
	}
	runes := []rune(topic)
	return string(runes[:maxTopicLength-3]) + "..."
}

// truncateContent shortens content over the limit as Zulip does, marking
// the cut. The limit is in bytes, cut at a character boundary.
func truncateContent(content string) string {
	const marker = "\n[message truncated]"
	if len(content) <= maxMessageLength {
		return content
	}
	cut := maxMessageLength - len(marker)
	for cut > 0 && !utf8.RuneStart(content[cut]) {
		cut--
	}
	return content[:cut] + marker
}

// messageTarget reads `to`: a channel id, a name, or a JSON list holding
// exactly one of them. Text that is not JSON is a channel name.
func messageTarget(p *params) (channelRef, error) {
	raw, _ := p.lookup("to")
	if strings.TrimSpace(raw) == "" {
		return channelRef{}, errMissingChannel
	}
	parsed, err := decodeJSON("to", raw)
	if err != nil {
		return channelRef{Name: strings.TrimSpace(raw)}, nil
	}
	if list, ok := parsed.([]any); ok {
		if len(list) != 1 {
			return channelRef{}, errExpectedOneChannel
		}
		parsed = list[0]
	}
	if num, ok := parsed.(json.Number); ok && !strings.ContainsAny(string(num), ".eE") {
		id, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil || id == 0 {
			return channelRef{}, noSuchChannel(channelRef{IDText: string(num)})
		}
		return channelRef{ID: id}, nil
	}
	if name, ok := parsed.(string); ok && strings.TrimSpace(name) != "" {
		return channelRef{Name: strings.TrimSpace(name)}, nil
	}
	return channelRef{}, errChannelDataType
}

// runePosition is the 1-based character position of byte offset i.
func runePosition(s string, i int) string {
	return strconv.Itoa(utf8.RuneCountInString(s[:i]) + 1)
}

// messageObject is Zulip's message object for a channel message, as a
// message event carries it (GET /messages adds the caller's flags): the
// fields of zulip.yaml's MessagesBase at feature level 421. Those zulite
// never has a value for are left out, as Zulip leaves them out:
// edit_history, last_edit_timestamp and last_moved_timestamp (no
// message is edited or moved) and match_content/match_subject (search
// highlighting).
type messageObject struct {
	AvatarURL        *string     `json:"avatar_url"`
	Client           string      `json:"client"`
	Content          string      `json:"content"`
	ContentType      string      `json:"content_type"`
	DisplayRecipient any         `json:"display_recipient"` // a channel's name, or a direct message's participants (dms.go)
	ID               uint64      `json:"id"`
	IsMeMessage      bool        `json:"is_me_message"`
	Reactions        []reaction  `json:"reactions"`
	RecipientID      uint64      `json:"recipient_id"`
	SenderEmail      string      `json:"sender_email"`
	SenderFullName   string      `json:"sender_full_name"`
	SenderID         uint64      `json:"sender_id"`
	SenderRealmStr   string      `json:"sender_realm_str"`
	StreamID         uint64      `json:"stream_id,omitempty"` // none for a direct message
	Subject          string      `json:"subject"`
	Submessages      []submsg    `json:"submessages"`
	Timestamp        int64       `json:"timestamp"`
	TopicLinks       []topicLink `json:"topic_links"`
	Type             string      `json:"type"`
	// Only for a message edited or moved (api_message_edit.go).
	EditHistory        []editEntry `json:"edit_history,omitempty"`
	LastEditTimestamp  int64       `json:"last_edit_timestamp,omitempty"`
	LastMovedTimestamp int64       `json:"last_moved_timestamp,omitempty"`
}

// reaction is one emoji reaction of a message object, without the
// deprecated user dictionary (removed at feature level 328).
type reaction struct {
	EmojiName    string `json:"emoji_name"`
	EmojiCode    string `json:"emoji_code"`
	ReactionType string `json:"reaction_type"`
	UserID       uint64 `json:"user_id"`
}

// topicLink is a link Zulip finds in a topic (linkifiers, bare URLs);
// zulite finds none, so the list is always empty.
type topicLink struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// recipientChannel is Zulip's Recipient type of a channel (1 is a user,
// for 1:1 direct messages, 3 a direct-message group).
const recipientChannel = 2

// recipientID is the Zulip Recipient id of a conversation. Zulip keeps
// Recipients in a table of their own, one id space for users (1:1
// direct messages), channels and direct-message groups; zulite has no
// such table, so it derives the id: 3·(id−1) + type, with Zulip's type
// numbers. A channel's recipient id is stable, and a user's or a
// group's, when direct messages come, can never equal a channel's.
func recipientID(kind int, id uint64) uint64 {
	return 3*(id-1) + uint64(kind)
}

// newMessageObject builds the message object; with clientGravatar the
// avatar is left to the client (null), as Zulip does for Gravatar
// avatars; without allowEmptyTopic the empty topic is shown by its
// display name.
func newMessageObject(m pagedMessage, applyMarkdown, clientGravatar, allowEmptyTopic bool) messageObject {
	o := messageObject{
		Client:             m.Client,
		Content:            m.Content,
		ContentType:        "text/x-markdown",
		DisplayRecipient:   m.Channel.Name,
		ID:                 m.ID,
		IsMeMessage:        strings.HasPrefix(m.Content, "/me "),
		Reactions:          reactionObjects(m.Reactions),
		RecipientID:        recipientID(recipientChannel, m.ChannelID),
		SenderEmail:        m.Sender.Email,
		SenderFullName:     m.Sender.FullName,
		SenderID:           m.SenderID,
		SenderRealmStr:     "zulite",
		StreamID:           m.ChannelID,
		Subject:            displayTopic(m.Topic, allowEmptyTopic),
		Submessages:        submessageObjects(m.ID, m.Submessages), // api_submessage.go
		Timestamp:          m.Timestamp,
		TopicLinks:         []topicLink{},
		Type:               "stream",
		EditHistory:        editHistoryObjects(m.message, allowEmptyTopic),
		LastEditTimestamp:  m.LastEdit,
		LastMovedTimestamp: m.LastMoved,
	}
	if o.Client == "" { // messages stored before zulite recorded clients
		o.Client = "Unspecified"
	}
	if !clientGravatar || m.Sender.Avatar != "" {
		avatar := avatarURL(m.Sender, false)
		o.AvatarURL = &avatar
	}
	if applyMarkdown {
		o.Content, o.ContentType = renderedContent(m.message), "text/html"
	}
	if m.isDirect() {
		o.direct(m)
	}
	return o
}

// reactionObjects is a message's reactions as message objects list
// them, oldest first.
func reactionObjects(list []storedReaction) []reaction {
	out := make([]reaction, 0, len(list))
	for _, r := range list {
		out = append(out, reaction{EmojiName: r.EmojiName, EmojiCode: r.EmojiCode, ReactionType: r.ReactionType, UserID: r.UserID})
	}
	return out
}

// messageFlags lists the caller's flags on a message, in Zulip's words.
// A message of a channel the caller is not subscribed to is "historical".
func messageFlags(m pagedMessage) []string {
	flags := []string{}
	if !m.Unread {
		flags = append(flags, "read")
	}
	if m.Flags&flagStarred != 0 {
		flags = append(flags, "starred")
	}
	if m.Flags&flagCollapsed != 0 {
		flags = append(flags, "collapsed")
	}
	if m.Flags&flagMentioned != 0 {
		flags = append(flags, "mentioned")
	}
	if m.Flags&flagStreamWildcardMentioned != 0 {
		flags = append(flags, "stream_wildcard_mentioned")
	}
	if m.Flags&flagTopicWildcardMentioned != 0 {
		flags = append(flags, "topic_wildcard_mentioned")
	}
	if m.Flags&flagHasAlertWord != 0 {
		flags = append(flags, "has_alert_word")
	}
	if !m.Subscribed {
		flags = append(flags, "historical")
	}
	return flags
}

// renderedContent is a message's content as HTML: as it was rendered
// when it was sent (internal/markdown), or, for a message stored before
// zulite rendered Markdown, rendered now without its mentions and
// channel links (which name what they named then, not now).
func renderedContent(m message) string {
	if m.Rendered != "" {
		return m.Rendered
	}
	r, _ := markdown.Render(m.Content, "", nil) // nothing to resolve: no error
	return r.HTML
}

// readRange reads the anchor, the counts and the narrow, shared by GET
// /messages (forFetch: the anchor may come as use_first_unread_anchor,
// and more than 5000 messages are refused) and POST /messages/flags/narrow
// (the anchor and the narrow are required, and the range is clamped).
// The checks run in Zulip's order: every parameter's form, then the
// anchor, the size, the excluded anchor, and what the narrow means.
func readRange(p *params, forFetch bool) (messageRange, error) {
	var q messageRange
	anchor, hasAnchor := p.lookup("anchor")
	if !hasAnchor && !forFetch {
		return q, missingArgument("anchor")
	}
	includeAnchor, err := p.optionalBool("include_anchor", true)
	if err != nil {
		return q, err
	}
	q.IncludeAnchor = includeAnchor
	for _, count := range []struct {
		name string
		into *int
	}{{"num_before", &q.NumBefore}, {"num_after", &q.NumAfter}} {
		n, err := p.requiredInt(count.name)
		if err != nil {
			return q, err
		}
		if n < 0 {
			return q, errTooSmall(count.name)
		}
		*count.into = int(min(n, maxMessagesPerRequest+1))
	}
	raw, err := readNarrow(p, !forFetch)
	if err != nil {
		return q, err
	}
	renameEmptyTopicTerm(raw)
	firstUnread := false
	if forFetch {
		if firstUnread, err = p.optionalBool("use_first_unread_anchor", false); err != nil {
			return q, err
		}
	}
	switch {
	case firstUnread || anchor == "first_unread":
		q.AnchorKind = anchorFirstUnread
	case !hasAnchor:
		return q, errMissingAnchor
	case anchor == "newest":
		q.AnchorKind = anchorNewest
	case anchor == "oldest":
		q.AnchorKind = anchorOldest
	default:
		q.Anchor, err = parseAnchor(anchor)
		if err != nil {
			return q, err
		}
	}
	if forFetch && q.NumBefore+q.NumAfter > maxMessagesPerRequest {
		return q, errTooManyMessages
	}
	if !q.IncludeAnchor && q.NumBefore > 0 && q.NumAfter > 0 {
		return q, errAnchorExcluded
	}
	if q.Narrow, err = narrowTerms(raw); err != nil {
		return q, err
	}
	return q, nil
}

// parseAnchor reads a message id anchor as Zulip's int() would, clamped
// to 0 .. largestMessageID.
func parseAnchor(anchor string) (uint64, error) {
	text := strings.TrimSpace(anchor)
	digits := strings.TrimPrefix(strings.TrimPrefix(text, "-"), "+")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, errInvalidAnchor
	}
	if strings.HasPrefix(text, "-") {
		return 0, nil
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || n > largestMessageID { // overflow means huge
		return largestMessageID, nil
	}
	return n, nil
}

// getMessages serves GET /api/v1/messages.
func (s *server) getMessages(r *apiRequest) (any, error) {
	q, err := readRange(r.params, true)
	if err != nil {
		return nil, err
	}
	clientGravatar, err := r.params.optionalBool("client_gravatar", true)
	if err != nil {
		return nil, err
	}
	applyMarkdown, err := r.params.optionalBool("apply_markdown", true)
	if err != nil {
		return nil, err
	}
	allowEmptyTopic, err := r.params.optionalBool("allow_empty_topic_name", false)
	if err != nil {
		return nil, err
	}
	release, err := s.walks.take(r.Context(), r.user.ID)
	if err != nil {
		return nil, err
	}
	page, err := s.store.messages(r.user, q)
	release()
	if err != nil {
		return nil, err
	}
	list := make([]flaggedMessage, 0, len(page.Messages))
	for _, m := range page.Messages {
		list = append(list, flaggedMessage{newMessageObject(m, applyMarkdown, clientGravatar, allowEmptyTopic), messageFlags(m)})
	}
	return struct {
		Messages       []flaggedMessage `json:"messages"`
		Anchor         uint64           `json:"anchor"`
		FoundAnchor    bool             `json:"found_anchor"`
		FoundOldest    bool             `json:"found_oldest"`
		FoundNewest    bool             `json:"found_newest"`
		HistoryLimited bool             `json:"history_limited"`
	}{list, page.Anchor, page.FoundAnchor, page.FoundOldest, page.FoundNewest, false}, nil
}

// sentContent is a send's content as it is stored: normalized, not
// empty ("Message must not be empty"), truncated.
func sentContent(content string) (string, error) {
	content, err := normalizeBody(content)
	if err != nil {
		return "", err
	}
	if content == "" {
		return "", errContentEmpty
	}
	return truncateContent(content), nil
}

// localEcho is a send's queue_id and local_id: the sender's queue gets
// the local id back as local_message_id (nil: none sent).
func localEcho(p *params) (queueID string, localID *string) {
	queueID, _ = p.lookup("queue_id")
	if id, ok := p.lookup("local_id"); ok {
		localID = &id
	}
	return queueID, localID
}

// normalizeBody is Zulip's normalize_body without its emptiness check
// (a send refuses empty content, an edit stores "(deleted)"): no null
// bytes, trailing white space and leading blank lines dropped.
func normalizeBody(content string) (string, error) {
	if strings.Contains(content, "\x00") {
		return "", errContentNullBytes
	}
	return strings.TrimLeft(strings.TrimRightFunc(content, unicode.IsSpace), "\n"), nil
}

// getMessage serves GET /api/v1/messages/{message_id} (Zulip's
// json_fetch_raw_message, which zulip-terminal calls before an edit): the
// message as GET /messages shows it, with the caller's flags, and its
// raw Markdown; "Invalid message(s)" for one the caller may not read.
func (s *server) getMessage(r *apiRequest) (any, error) {
	id, err := pathMessageID(r)
	if err != nil {
		return nil, err
	}
	applyMarkdown, err := r.params.optionalBool("apply_markdown", true)
	if err != nil {
		return nil, err
	}
	allowEmptyTopic, err := r.params.optionalBool("allow_empty_topic_name", false)
	if err != nil {
		return nil, err
	}
	m, err := s.readableMessage(r.user, id)
	if err != nil {
		return nil, err
	}
	return struct {
		RawContent string         `json:"raw_content"`
		Message    flaggedMessage `json:"message"`
	}{m.Content, flaggedMessage{newMessageObject(m, applyMarkdown, true, allowEmptyTopic), messageFlags(m)}}, nil
}

// readableMessage is the message as u sees it, or "Invalid message(s)"
// for one u may not read (Zulip's access_message).
func (s *server) readableMessage(u user, id uint64) (pagedMessage, error) {
	page, err := s.store.messages(u, messageRange{Narrow: []narrowTerm{{Operator: opID, ID: id}}, AnchorKind: anchorID, Anchor: id, IncludeAnchor: true})
	if err != nil {
		return pagedMessage{}, err
	}
	if len(page.Messages) != 1 || page.Messages[0].ID != id {
		return pagedMessage{}, errInvalidMessages
	}
	return page.Messages[0], nil
}

// flaggedMessage is a message object with the caller's flags, as GET
// /messages and GET /messages/{message_id} give it.
type flaggedMessage struct {
	messageObject
	Flags []string `json:"flags"`
}
