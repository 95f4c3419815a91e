package main

// What a subscribe or channel-creating request says of each channel, read
// and checked as Zulip checks it: the subscriptions list, colors,
// retention, topics policy, group settings, principals, names and the
// characters Zulip refuses in them. The handlers are api_channels.go's.

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// readChannelSpecs reads POST /users/me/subscriptions' subscriptions:
// a list of {name, description, color}.
func readChannelSpecs(p *params) ([]channelSpec, error) {
	raw, err := p.requiredJSON("subscriptions")
	if err != nil {
		return nil, err
	}
	return channelSpecsOf("subscriptions", raw)
}

// channelSpecsOf reads a list of Zulip's AddSubscriptionData, the
// parameter name's value.
func channelSpecsOf(name string, raw any) ([]channelSpec, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, errNotList(name)
	}
	specs := make([]channelSpec, 0, len(list))
	for i, item := range list {
		elem := elemName(name, i)
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, errNotDict(elem)
		}
		name, ok := obj["name"].(string)
		if !ok {
			return nil, errKeyMissing("name", elem)
		}
		description, _ := obj["description"].(string)
		// Zulip allows no newlines in a description.
		spec := channelSpec{Name: strings.TrimSpace(name), Description: strings.ReplaceAll(description, "\n", " ")}
		if color, ok := obj["color"]; ok && color != nil {
			text, isString := color.(string)
			if !isString {
				return nil, errNotString(elem + `["color"]`)
			}
			if !isHexColor(text) {
				return nil, errInvalidValue(elem, errNotHexColor("add.color"))
			}
			spec.Color = strings.ToLower(text)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// checkChannelSpecs checks the names and descriptions once every
// parameter is read, and drops a name given twice.
func checkChannelSpecs(specs []channelSpec) ([]channelSpec, error) {
	var unique []channelSpec
	for _, spec := range specs {
		if err := validateChannel(spec); err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(unique, func(s channelSpec) bool { return sameChannelName(s.Name, spec.Name) }) {
			unique = append(unique, spec)
		}
	}
	return unique, nil
}

// isHexColor is Zulip's check_color pattern, ^#([a-fA-F0-9]{3,6})$,
// written out: regexp would cost the binary 240 KB (patterns_test.go
// holds it to the pattern).
func isHexColor(s string) bool {
	if len(s) < 4 || len(s) > 7 || s[0] != '#' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i] | 0x20; !('0' <= s[i] && s[i] <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// readRetention reads message_retention_days: "realm_default" (the
// default, answered as ""), "unlimited", or a positive number of days.
func readRetention(p *params) (string, error) {
	raw, ok := p.lookup("message_retention_days")
	if !ok {
		return "", nil
	}
	parsed, err := decodeJSON("message_retention_days", raw)
	if err != nil {
		return "", err
	}
	switch v := parsed.(type) {
	case string:
		switch v {
		case "realm_default":
			return "", nil
		case "unlimited":
			return v, nil
		}
		return "", errBadValue("message_retention_days", v)
	}
	n, ok := jsonInt(parsed)
	if !ok {
		return "", errNotInteger("message_retention_days")
	}
	if n <= 0 {
		return "", errBadValue("message_retention_days", strconv.FormatInt(n, 10))
	}
	return strconv.FormatInt(n, 10), nil
}

// readTopicsPolicy reads topics_policy, a JSON string of Zulip's enum.
func readTopicsPolicy(p *params) (string, error) {
	raw, ok := p.lookup("topics_policy")
	if !ok {
		return "inherit", nil
	}
	parsed, err := decodeJSON("topics_policy", raw)
	if err != nil {
		return "", err
	}
	if parsed == nil {
		return "inherit", nil
	}
	policy, ok := parsed.(string)
	if !ok {
		return "", errNotString("topics_policy")
	}
	switch policy {
	case "inherit", "allow_empty_topic", "disable_empty_topic", "empty_topic_only":
		return policy, nil
	}
	return "", errInvalidSetting("topics_policy")
}

// readGroupSetting reads a group-setting value parameter: a group id, or
// {"direct_members": [ids], "direct_subgroups": [ids]}.
func readGroupSetting(p *params, name string) (groupSetting, bool, error) {
	raw, ok := p.lookup(name)
	if !ok {
		return groupSetting{}, false, nil
	}
	parsed, err := decodeJSON(name, raw)
	if err != nil {
		return groupSetting{}, false, err
	}
	if parsed == nil {
		return groupSetting{}, false, nil
	}
	g, err := groupSettingOf(name, parsed)
	return g, err == nil, err
}

// groupSettingOf reads a decoded group-setting value, the parameter
// name's.
func groupSettingOf(name string, parsed any) (groupSetting, error) {
	if n, ok := jsonInt(parsed); ok {
		return systemGroupSetting(int(n)), nil
	}
	obj, ok := parsed.(map[string]any)
	if !ok {
		return groupSetting{}, errNotDict(name)
	}
	g := groupSetting{Anonymous: true}
	for _, key := range []string{"direct_members", "direct_subgroups"} {
		list, ok := obj[key].([]any)
		if !ok {
			return groupSetting{}, errNotList(name + `["` + key + `"]`)
		}
		for i, item := range list {
			n, ok := jsonInt(item)
			if !ok || n < 0 {
				return groupSetting{}, errNotInteger(elemName(name+`["`+key+`"]`, i))
			}
			if key == "direct_members" {
				g.Members = append(g.Members, uint64(n))
			} else {
				g.Subgroups = append(g.Subgroups, int(n))
			}
		}
	}
	return g.canonical(), nil
}

// readPrincipals reads principals: a list of user ids or of e-mails.
func readPrincipals(p *params) ([]uint64, []string, error) {
	raw, ok := p.lookup("principals")
	if !ok {
		return nil, nil, nil
	}
	parsed, err := decodeJSON("principals", raw)
	if err != nil {
		return nil, nil, err
	}
	list, ok := parsed.([]any)
	if !ok {
		return nil, nil, errNotList("principals")
	}
	var ids []uint64
	var emails []string
	for i, item := range list {
		_, byEmail := list[0].(string)
		if byEmail {
			email, ok := item.(string)
			if !ok {
				return nil, nil, errNotString(elemName("principals", i))
			}
			emails = append(emails, email)
			continue
		}
		n, ok := jsonInt(item)
		if !ok {
			return nil, nil, errNotInteger(elemName("principals", i))
		}
		if n <= 0 {
			return nil, nil, errNoSuchUser
		}
		ids = append(ids, uint64(n))
	}
	return ids, emails, nil
}

// creationRefusal is why the request may not create a channel, if it
// would: Zulip's check_channel_creation_permissions, then what zulite
// cannot do (default channels, channel retention policies, protected
// history). Channels that exist already ignore these parameters.
func creationRefusal(u user, inviteOnly, webPublic, defaultChannel, historyPublic bool, retention string) error {
	switch {
	case defaultChannel && !u.isAdmin():
		return refusal(errInsufficientPermission)
	case inviteOnly && defaultChannel:
		return refusal(errDefaultChannelPrivate)
	case webPublic:
		return refusal(errWebPublicNotEnabled)
	case retention != "" && u.Role != roleOwner:
		return refusal(errNotOwner)
	case defaultChannel, retention != "", inviteOnly && !historyPublic:
		return refusal(errInvalidParameters)
	}
	return nil
}

func validateChannel(spec channelSpec) error {
	switch {
	case onlyInvisible(spec.Name): // Zulip checks only for "" after trimming; zulite also for names that show nothing
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
