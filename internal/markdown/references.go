package markdown

// Inline patterns that name things on the server: user mentions
// (@**name**, @**name|id**, silent @_**name**, the wildcards), group
// mentions left as text, and channel, topic and message links
// (#**channel>topic**), with Zulip's classes and data attributes
// (inline.go runs them; the server turns them into flags).

import (
	"strconv"
	"strings"
)

// findUserMention is MENTIONS_RE: @**name** or, silent, @_**name**.
func findUserMention(_ *inliner, data string, from int) (patternMatch, bool) {
	for i := from; i < len(data); i++ {
		if data[i] != '@' || !mentionMayStart(data, i) {
			continue
		}
		silent := false
		j := i + 1
		if strings.HasPrefix(data[j:], "_**") {
			silent, j = true, j+1
		}
		if !strings.HasPrefix(data[j:], "**") {
			continue
		}
		k := j + 2
		for k < len(data) && data[k] != '*' {
			k++
		}
		if k == j+2 || !strings.HasPrefix(data[k:], "**") {
			continue
		}
		return patternMatch{start: i, end: k + 2, parts: []string{data[j+2 : k]}, flag: silent}, true
	}
	return patternMatch{}, false
}

// resolve asks the resolver for what the message's mentions and
// channel links may name (Zulip's MentionData): the users of every
// @**name** and @**name|id**, and the channel of every #**channel**,
// #**channel>topic** and #**channel>topic@id**.
func (r *renderer) resolve(content string) error {
	r.channels = map[string]uint64{}
	names := map[string]bool{}
	ids := map[uint64]bool{}
	for i := 0; i < len(content); {
		m, ok := findUserMention(nil, content, i)
		if !ok {
			break
		}
		if fullName, id, ok := mentionIDSyntax(m.parts[0]); ok {
			ids[id] = true
			if fullName != "" {
				names[strings.ToLower(fullName)] = true
			}
		} else {
			names[strings.ToLower(m.parts[0])] = true
		}
		i = m.end
	}
	if len(names) > 0 || len(ids) > 0 {
		users, err := r.resolver.Users(names, ids)
		if err != nil {
			return err
		}
		for _, u := range users {
			name := strings.ToLower(u.FullName)
			if _, older := r.users.byName[name]; !older {
				r.users.byName[name] = u
			}
			r.users.byID[u.ID] = u
		}
	}
	if gr, ok := r.resolver.(GroupResolver); ok && strings.Contains(content, "@") {
		groupNames := map[string]bool{}
		for i := 0; i < len(content); i++ {
			if content[i] == '@' && mentionMayStart(content, i) {
				if _, name, ok := groupMentionAt(content, i); ok {
					groupNames[strings.ToLower(name)] = true
				}
			}
		}
		if len(groupNames) > 0 {
			groups, err := gr.UserGroups(groupNames)
			if err != nil {
				return err
			}
			r.groups = make(map[string]UserGroup, len(groups))
			for _, g := range groups {
				r.groups[strings.ToLower(g.Name)] = g
			}
		}
	}
	for i := strings.Index(content, "#**"); i >= 0; {
		if inner, _, ok := channelLinkAt(content, i); ok {
			for _, name := range []string{inner, strings.SplitN(inner, ">", 2)[0]} {
				if _, seen := r.channels[name]; seen || name == "" {
					continue
				}
				if id, ok := r.resolver.ChannelID(name); ok {
					r.channels[name] = id
				}
			}
		}
		next := strings.Index(content[i+1:], "#**")
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return nil
}

// channelWildcards and topicWildcard are Zulip's mention wildcards.
var channelWildcards = []string{"all", "everyone", "stream", "channel"}

const topicWildcard = "topic"

func handleUserMention(in *inliner, _ string, m patternMatch) (inlineNode, int, int, bool) {
	name, silent := m.parts[0], m.flag
	r := in.r
	topicWild := name == topicWildcard
	channelWild := false
	for _, w := range channelWildcards {
		channelWild = channelWild || name == w
	}
	var user User
	found := false
	if fullName, id, ok := mentionIDSyntax(name); ok {
		user, found = r.users.byID[id]
		if fullName != "" && found && user.FullName != fullName {
			return inlineNode{}, 0, 0, false
		}
	} else {
		user, found = r.users.byName[strings.ToLower(name)]
	}
	span := &mdElement{tag: "span", atomic: true}
	switch {
	case channelWild:
		if !silent {
			r.result.ChannelWildcard = true
		}
		span.set("data-user-id", "*")
		span.set("class", "user-mention channel-wildcard-mention")
	case topicWild:
		if !silent {
			r.result.TopicWildcard = true
		}
		span.set("class", "topic-mention")
	case found:
		if !user.Active {
			silent = true
		}
		if !silent {
			r.result.MentionedIDs = append(r.result.MentionedIDs, user.ID)
		}
		name = user.FullName
		span.set("data-user-id", strconv.FormatUint(user.ID, 10))
		span.set("class", "user-mention")
	default:
		return inlineNode{}, 0, 0, false // not a user: stays text
	}
	span.text = "@" + name
	if silent {
		span.set("class", span.get("class")+" silent")
		span.text = name
	}
	return inlineNode{el: span}, m.start, m.end, true
}

// mentionIDSyntax reads @**name|id** and @**|id**: (.+)?\|(\d+)$.
func mentionIDSyntax(name string) (fullName string, id uint64, ok bool) {
	s := strings.TrimSuffix(name, "\n")
	bar := strings.LastIndexByte(s, '|')
	if bar < 0 || bar == len(s)-1 || strings.Contains(s[:bar], "\n") {
		return "", 0, false
	}
	digits := s[bar+1:]
	for _, r := range digits {
		if r < '0' || r > '9' {
			return "", 0, false
		}
	}
	id, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return s[:bar], id, true
}

// silenceMentions is what Zulip's blockquote does to the lines it
// quotes: @**name** becomes @_**name** (and @*group* @_*group*).
func silenceMentions(line string) string {
	if !strings.Contains(line, "@") {
		return line
	}
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] == '@' && mentionMayStart(line, i) {
			if m, ok := findUserMention(nil, line, i); ok && m.start == i {
				b.WriteString("@_**" + m.parts[0] + "**")
				i = m.end
				continue
			}
			if end, name, ok := groupMentionAt(line, i); ok {
				b.WriteString("@_*" + name + "*")
				i = end
				continue
			}
		}
		b.WriteByte(line[i])
		i++
	}
	return b.String()
}

// findGroupMention is USER_GROUP_MENTIONS_RE: @*name* or, silent,
// @_*name*, after a character a mention may follow.
func findGroupMention(_ *inliner, data string, from int) (patternMatch, bool) {
	for i := from; i < len(data); i++ {
		if data[i] != '@' || !mentionMayStart(data, i) {
			continue
		}
		if end, name, ok := groupMentionAt(data, i); ok {
			return patternMatch{start: i, end: end, parts: []string{name}, flag: data[i+1] == '_'}, true
		}
	}
	return patternMatch{}, false
}

// handleGroupMention is Zulip's UserGroupMentionPattern: a group the
// resolver knew becomes its mention (user-group-mention, and silent for
// @_*name*); any other name stays text.
func handleGroupMention(in *inliner, _ string, m patternMatch) (inlineNode, int, int, bool) {
	g, found := in.r.groups[strings.ToLower(m.parts[0])]
	if !found {
		return inlineNode{}, 0, 0, false
	}
	span := &mdElement{tag: "span", atomic: true}
	span.set("class", "user-group-mention")
	span.set("data-user-group-id", strconv.Itoa(g.ID))
	span.text = "@" + g.Name
	if m.flag {
		span.set("class", "user-group-mention silent")
		span.text = g.Name
	} else {
		in.r.result.MentionedGroupIDs = append(in.r.result.MentionedGroupIDs, g.ID)
	}
	return inlineNode{el: span}, m.start, m.end, true
}

// groupMentionAt is USER_GROUP_MENTIONS_RE at i: @*name* or @_*name*.
func groupMentionAt(s string, i int) (end int, name string, ok bool) {
	j := i + 1
	if strings.HasPrefix(s[j:], "_*") {
		j++
	}
	if !strings.HasPrefix(s[j:], "*") {
		return 0, "", false
	}
	k := j + 1
	for k < len(s) && s[k] != '*' {
		k++
	}
	if k == j+1 || k >= len(s) {
		return 0, "", false
	}
	return k + 1, s[j+1 : k], true
}

// channelLinkAt reads #**...** at i, after a character a mention may
// follow: the text between the asterisks.
func channelLinkAt(data string, i int) (inner string, end int, ok bool) {
	if !strings.HasPrefix(data[i:], "#**") || !mentionMayStart(data, i) {
		return "", 0, false
	}
	k := i + 3
	for k < len(data) && data[k] != '*' {
		k++
	}
	if !strings.HasPrefix(data[k:], "**") {
		return "", 0, false
	}
	return data[i+3 : k], k + 2, true
}

func findChannelLinkWith(data string, from int, split func(inner string) ([]string, bool)) (patternMatch, bool) {
	for i := strings.Index(data[from:], "#**"); i >= 0; {
		at := from + i
		if inner, end, ok := channelLinkAt(data, at); ok {
			if parts, ok := split(inner); ok {
				return patternMatch{start: at, end: end, parts: parts}, true
			}
		}
		from = at + 1
		i = strings.Index(data[from:], "#**")
	}
	return patternMatch{}, false
}

// splitTopicLink splits "channel>topic": a channel name without ">",
// then any topic, perhaps empty.
func splitTopicLink(inner string) ([]string, bool) {
	ch, topic, ok := strings.Cut(inner, ">")
	if !ok || ch == "" {
		return nil, false
	}
	return []string{ch, topic}, true
}

// findChannelMessageLink is #**channel>topic@id**.
func findChannelMessageLink(_ *inliner, data string, from int) (patternMatch, bool) {
	return findChannelLinkWith(data, from, func(inner string) ([]string, bool) {
		parts, ok := splitTopicLink(inner)
		if !ok {
			return nil, false
		}
		at := strings.LastIndexByte(parts[1], '@')
		if at < 0 || at == len(parts[1])-1 {
			return nil, false
		}
		for _, r := range parts[1][at+1:] {
			if r < '0' || r > '9' {
				return nil, false
			}
		}
		return []string{parts[0], parts[1][:at], parts[1][at+1:]}, true
	})
}

func findChannelTopicLink(_ *inliner, data string, from int) (patternMatch, bool) {
	return findChannelLinkWith(data, from, splitTopicLink)
}

func findChannelLink(_ *inliner, data string, from int) (patternMatch, bool) {
	return findChannelLinkWith(data, from, func(inner string) ([]string, bool) {
		return []string{inner}, inner != ""
	})
}

// emptyTopicDisplayName is Zulip's Message.EMPTY_TOPIC_FALLBACK_NAME,
// the name a link to the empty topic shows (the server's constant of
// the same name).
const emptyTopicDisplayName = "general chat"

// topicLinkText is a topic link's text: "#channel > topic", the empty
// topic shown as Zulip shows it, in italics.
func topicLinkText(a *mdElement, channel, topic, suffix string) {
	if topic == "" {
		a.text = "#" + channel + " > "
		em := a.sub("em")
		em.text, em.atomic = emptyTopicDisplayName, true
		em.tail, em.tailAtomic = suffix, true
		return
	}
	a.text = "#" + channel + " > " + topic + suffix
}

func handleChannelMessageLink(in *inliner, _ string, m patternMatch) (inlineNode, int, int, bool) {
	id, ok := in.r.channels[m.parts[0]]
	if !ok {
		return inlineNode{}, 0, 0, false
	}
	a := &mdElement{tag: "a", atomic: true}
	a.set("class", "message-link")
	a.set("href", "/#narrow/channel/"+encodeChannel(id, m.parts[0])+"/topic/"+hashEncode(m.parts[1])+"/near/"+m.parts[2])
	topicLinkText(a, m.parts[0], m.parts[1], " @ 💬")
	return inlineNode{el: a}, m.start, m.end, true
}

func handleChannelTopicLink(in *inliner, _ string, m patternMatch) (inlineNode, int, int, bool) {
	id, ok := in.r.channels[m.parts[0]]
	if !ok {
		return inlineNode{}, 0, 0, false
	}
	a := &mdElement{tag: "a", atomic: true}
	a.set("class", "stream-topic")
	a.set("data-stream-id", strconv.FormatUint(id, 10))
	href := "/#narrow/channel/" + encodeChannel(id, m.parts[0]) + "/topic/" + hashEncode(m.parts[1])
	if in.r.resolver != nil {
		if first, ok := in.r.resolver.TopicStart(id, m.parts[1]); ok {
			href += "/with/" + strconv.FormatUint(first, 10)
		}
	}
	a.set("href", href)
	topicLinkText(a, m.parts[0], m.parts[1], "")
	return inlineNode{el: a}, m.start, m.end, true
}

func handleChannelLink(in *inliner, _ string, m patternMatch) (inlineNode, int, int, bool) {
	id, ok := in.r.channels[m.parts[0]]
	if !ok {
		return inlineNode{}, 0, 0, false
	}
	a := &mdElement{tag: "a", text: "#" + m.parts[0], atomic: true}
	a.set("class", "stream")
	a.set("data-stream-id", strconv.FormatUint(id, 10))
	a.set("href", "/#narrow/channel/"+encodeChannel(id, m.parts[0]))
	return inlineNode{el: a}, m.start, m.end, true
}
