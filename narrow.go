package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The narrow, Zulip's filter of messages, in one place: its terms as
// clients send them (parsed and checked here, in Zulip's order and
// words), and the one match that a page of messages, a flag update by
// narrow and a live event queue all use. Walking the store for a page is
// store_range.go's.

// narrowTerm is one term of a narrow, its operand already typed.
type narrowTerm struct {
	Operator narrowOperator
	Name     string // channel or topic name, sender e-mail, or the operand of search, has, in or channels
	ID       uint64 // channel, sender or message id, when given as a number
	Negated  bool
	// IDs: a dm term's user ids; once the store resolves it, the
	// conversation's participants, sorted (store_dms.go).
	IDs []uint64
}

// narrowOperator is what a term tests: Zulip's operator, its old names
// mapped to the new, and for is: the operand too, since each is: operand
// is a test of its own (and the store picks its index by some). Only
// this file reads the names clients send; the store and the event
// queues know a term by its narrowOperator alone.
type narrowOperator uint8

const (
	opChannel     narrowOperator = iota + 1 // channel, stream
	opChannels                              // channels, streams
	opTopic                                 // topic, subject
	opSender                                // sender
	opID                                    // id
	opWith                                  // with
	opNear                                  // near
	opIn                                    // in
	opSearch                                // search
	opHas                                   // has
	opDM                                    // dm, pm-with, pm_with
	opDMIncluding                           // dm-including
	opGroupPMWith                           // group-pm-with, group_pm_with
	opIsDM                                  // is:dm, is:private; the is: terms come last (isTest)
	opIsStarred                             // is:starred
	opIsUnread                              // is:unread
	opIsMentioned                           // is:mentioned
	opIsAlerted                             // is:alerted
	opIsResolved                            // is:resolved
	opIsFollowed                            // is:followed
	opIsMuted                               // is:muted
)

// isTest tells whether the term is an is: term.
func (op narrowOperator) isTest() bool { return op >= opIsDM }

// matchesNarrow is the one narrow match, for a page (store_range.go),
// a flag update by narrow and a live event queue alike: m as one user
// sees it, against every term. A term names its channel or sender by id
// (as the store resolves them for a page) or by name (as an event queue
// keeps them), compared the way the name indexes compare.
func matchesNarrow(terms []narrowTerm, m pagedMessage) bool {
	for _, t := range terms {
		var ok bool
		switch t.Operator {
		case opChannel:
			ok = (t.ID != 0 && m.ChannelID == t.ID) || (t.Name != "" && sameChannelName(m.Channel.Name, t.Name))
		case opTopic:
			ok = !m.isDirect() && foldTopic(m.Topic) == foldTopic(t.Name)
		case opSender:
			ok = (t.ID != 0 && m.SenderID == t.ID) || (t.Name != "" && foldEmail(m.Sender.Email) == foldEmail(t.Name))
		case opID:
			ok = m.ID == t.ID
		case opIsUnread:
			ok = m.Unread
		case opIsStarred:
			ok = m.Flags&flagStarred != 0
		case opIsMentioned: // Zulip's is:mentioned: any mention flag
			ok = m.Flags&flagsAnyMention != 0
		case opIsResolved:
			ok = strings.HasPrefix(m.Topic, resolvedPrefix)
		case opIsDM:
			ok = m.isDirect()
		case opSearch:
			ok = containsFold(m.Content, t.Name) || containsFold(m.Topic, t.Name)
		case opHas:
			ok = t.Name == "link" && (strings.Contains(m.Content, "http://") || strings.Contains(m.Content, "https://"))
		case opIsFollowed:
			ok = !m.isDirect() && m.TopicPolicy == policyFollowed
		case opIsMuted: // a live queue cannot tell, and lets every message through, as Zulip's narrow predicate
			ok = !m.Policies || m.TopicMuted
		case opIn: // in:home leaves out what the reader muted; in:all nothing
			ok = t.Name != "home" || !m.TopicMuted
		case opNear:
			ok = true // near only positions a client's view
		case opChannels:
			ok = !m.isDirect() && !m.Channel.Private
		case opDM: // the conversation exactly: its participants, the reader among them
			ok = m.isDirect() && slices.EqualFunc(m.Participants, t.IDs, func(u user, id uint64) bool { return u.ID == id })
		case opDMIncluding:
			ok = m.isDirect() && slices.ContainsFunc(m.Participants, func(u user) bool { return u.ID == t.ID })
		case opGroupPMWith: // Zulip's legacy operator: group conversations only
			ok = m.isDirect() && len(m.Participants) > 2 && slices.ContainsFunc(m.Participants, func(u user) bool { return u.ID == t.ID })
		}
		if ok == t.Negated {
			return false
		}
	}
	return true
}

// checkNarrowForEvents refuses, as Zulip's register does, the operators
// an event queue's narrow cannot filter live messages by.
func checkNarrowForEvents(terms []rawTerm) error {
	for _, t := range terms {
		op := narrowOperators[t.operator] // old names included, as the fetch narrow takes them
		if op != opChannel && op != opTopic && op != opSender && t.operator != "is" {
			return errOperatorNotSupported(t.operator)
		}
		if t.operator == "is" && t.operand == "followed" {
			return errOperandNotSupported("followed")
		}
	}
	return nil
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// maxMessagesPerRequest bounds one page or one flag update, as Zulip's.
const maxMessagesPerRequest = 5000

// narrowOperators maps Zulip's operator names, old ones included, to
// what zulite matches on; "is" is read with its operand (isOperands).
var narrowOperators = map[string]narrowOperator{
	"channel": opChannel, "stream": opChannel, "topic": opTopic, "subject": opTopic,
	"sender": opSender, "id": opID, "with": opWith, "search": opSearch, "has": opHas,
	"in": opIn, "near": opNear, "channels": opChannels, "streams": opChannels,
	"dm": opDM, "pm-with": opDM, "pm_with": opDM, "dm-including": opDMIncluding, "group-pm-with": opGroupPMWith, "group_pm_with": opGroupPMWith,
}

// isOperands maps the operands of "is" to what zulite matches on.
var isOperands = map[string]narrowOperator{
	"dm": opIsDM, "private": opIsDM, "starred": opIsStarred, "unread": opIsUnread,
	"mentioned": opIsMentioned, "alerted": opIsAlerted, "resolved": opIsResolved, "followed": opIsFollowed,
	"muted": opIsMuted,
}

var narrowOperands = map[narrowOperator][]string{
	opHas:      {"attachment", "image", "link", "reaction"},
	opIn:       {"home", "all"},
	opChannels: {"public", "web-public"},
}

// A narrow's size is bounded, so that what one request makes a page walk
// do per message stays small. Zulip sets no such limits (its requests are
// bounded by their size alone); these are far above what clients send (the
// app sends at most four terms; a channel or topic name is at most 60
// characters, an e-mail 254).
const (
	maxNarrowTerms   = 20
	maxOperandLength = 1000 // characters, or ids in a list
)

// decodeNarrowList decodes a narrow's JSON list one term at a time and
// stops past maxNarrowTerms, so that a megabyte of terms costs a quick
// validity scan, not the decoding of every term.
func decodeNarrowList(raw string) (list []any, tooLong, ok bool) {
	if !json.Valid([]byte(raw)) {
		return nil, false, false
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, false, false
	}
	for dec.More() {
		if len(list) == maxNarrowTerms {
			return nil, true, false
		}
		var elem any
		if err := dec.Decode(&elem); err != nil {
			return nil, false, false
		}
		list = append(list, elem)
	}
	if list == nil {
		list = []any{}
	}
	return list, false, true
}

// readNarrow reads the `narrow` parameter: a JSON list of terms, each an
// object {"operator","operand","negated"} or a legacy [operator, operand].
func readNarrow(p *params, required bool) ([]rawTerm, error) {
	raw, ok := p.lookup("narrow")
	if !ok {
		if required {
			return nil, missingArgument("narrow")
		}
		return nil, nil
	}
	badValue := errBadValue("narrow", raw)
	list, tooLong, ok := decodeNarrowList(raw)
	switch {
	case tooLong:
		return nil, errNarrowTooLong
	case !ok:
		return nil, badValue
	}
	terms := make([]rawTerm, 0, len(list))
	for _, elem := range list {
		var operator string
		var operand any
		negated := false
		switch e := elem.(type) {
		case []any:
			if len(e) != 2 {
				return nil, badValue
			}
			op, ok1 := e[0].(string)
			val, ok2 := e[1].(string)
			if !ok1 || !ok2 {
				return nil, badValue
			}
			operator, operand = op, val
		case map[string]any:
			op, ok := e["operator"]
			if !ok {
				return nil, errKeyMissing("operator", "elem")
			}
			if operator, ok = op.(string); !ok {
				return nil, errNotString(`elem["operator"]`)
			}
			if operand, ok = e["operand"]; !ok {
				return nil, errKeyMissing("operand", "elem")
			}
			if n, present := e["negated"]; present {
				if negated, ok = n.(bool); !ok {
					return nil, errNotBoolean(`elem["negated"]`)
				}
			}
		default:
			return nil, badValue
		}
		if err := checkOperand(operator, operand); err != nil {
			return nil, err
		}
		terms = append(terms, rawTerm{operator, operand, negated})
	}
	return terms, nil
}

// rawTerm is a narrow term as sent, its operand's type checked.
type rawTerm struct {
	operator string
	operand  any
	negated  bool
}

// renameEmptyTopicTerm makes the first `topic` term naming the empty
// topic by its display name name it "", as Zulip's
// update_narrow_terms_containing_empty_topic_fallback_name does for
// GET /messages and flags/narrow ("" itself already matches the empty
// topic).
func renameEmptyTopicTerm(terms []rawTerm) {
	for i, t := range terms {
		if t.operator == "topic" {
			if t.operand == emptyTopicDisplayName { // "(no topic)" stays a name here
				terms[i].operand = ""
			}
			return
		}
	}
}

// checkOperand is the type check of an operand, which depends on the
// operator (Zulip does it while parsing, before any other check).
func checkOperand(operator string, operand any) error {
	if text, isString := operand.(string); isString && utf8.RuneCountInString(text) > maxOperandLength {
		return errOperandTooLong
	}
	if list, isList := operand.([]any); isList && len(list) > maxOperandLength {
		return errOperandTooLong
	}
	switch narrowOperators[operator] {
	case opChannel, opSender, opID, opWith, opDMIncluding, opGroupPMWith:
		if _, isString := operand.(string); !isString {
			if _, isInt := jsonInt(operand); !isInt {
				return errOperandNotStringOrInteger
			}
		}
	case opDM:
		if _, isString := operand.(string); isString {
			return nil
		}
		list, isList := operand.([]any)
		if !isList {
			return errOperandNotStringOrIntegerList
		}
		for i, item := range list {
			if _, isInt := jsonInt(item); !isInt {
				return errNotInteger(elemName(`elem["operand"]`, i))
			}
		}
	case opSearch:
		if text, isString := operand.(string); !isString {
			return errNotString(`elem["operand"]`)
		} else if strings.TrimSpace(text) == "" {
			return errOperandBlank
		}
	default:
		if _, isString := operand.(string); !isString {
			return errNotString(`elem["operand"]`)
		}
	}
	return nil
}

// narrowTerms checks what each term means: known operators and operands,
// and no mix of channel and direct-message terms.
func narrowTerms(raw []rawTerm) ([]narrowTerm, error) {
	terms := make([]narrowTerm, 0, len(raw))
	channelish, dmish := false, false
	for _, r := range raw {
		t, err := narrowTermOf(r.operator, r.operand, r.negated)
		if err != nil {
			return nil, err
		}
		channelish = channelish || t.Operator == opChannel || t.Operator == opTopic || t.Operator == opChannels
		dmish = dmish || t.Operator == opDM || t.Operator == opDMIncluding || t.Operator == opGroupPMWith || t.Operator == opIsDM
		terms = append(terms, t)
	}
	if channelish && dmish {
		return nil, badNarrow("No message can be both a channel message and direct message")
	}
	return terms, nil
}

// narrowTermOf checks one term's operator and operand.
func narrowTermOf(operator string, operand any, negated bool) (narrowTerm, error) {
	op, known := narrowOperators[operator]
	if !known && operator != "is" {
		return narrowTerm{}, badNarrow("unknown operator " + operator)
	}
	t := narrowTerm{Operator: op, Negated: negated}
	switch op {
	case opChannel, opSender, opID, opWith, opDMIncluding, opGroupPMWith:
		if id, ok := jsonInt(operand); ok {
			if id <= 0 && (op == opID || op == opWith) {
				return t, badNarrow("Invalid message ID")
			}
			t.ID = uint64(max(id, 0))
			return t, nil
		}
		name, _ := operand.(string)
		if op == opID || op == opWith {
			id, err := strconv.ParseUint(name, 10, 64)
			if err != nil || id == 0 {
				return t, badNarrow("Invalid message ID")
			}
			t.ID = id
			return t, nil
		}
		t.Name = strings.TrimSpace(name)
		return t, nil
	case opDM: // e-mails joined by commas, or a list of user ids (store_dms.go resolves them)
		if text, isText := operand.(string); isText {
			t.Name = text
			return t, nil
		}
		t.IDs = []uint64{}
		for _, item := range operand.([]any) {
			id, _ := jsonInt(item)
			t.IDs = append(t.IDs, uint64(max(id, 0)))
		}
		return t, nil
	}
	name, ok := operand.(string)
	if !ok {
		return t, errNotString(`elem["operand"]`)
	}
	if !known { // is
		if t.Operator, known = isOperands[name]; !known {
			return t, badNarrow("unknown '" + operator + "' operand " + name)
		}
		return t, nil
	}
	if allowed, listed := narrowOperands[op]; listed && !slices.Contains(allowed, name) {
		if op == opChannels {
			return t, badNarrow("unknown channels operand " + name)
		}
		return t, badNarrow("unknown '" + operator + "' operand " + name)
	}
	t.Name = name
	return t, nil
}
