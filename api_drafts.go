package main

// Drafts (GET/POST /drafts, PATCH/DELETE /drafts/{draft_id}) and saved
// snippets (GET/POST /saved_snippets, PATCH/DELETE
// /saved_snippets/{saved_snippet_id}), their register state and events
// (zerver/views/drafts.py, zerver/lib/drafts.py,
// zerver/views/saved_snippets.py, zerver/actions/saved_snippets.py).

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// draftFields are DraftData's fields, in the order Pydantic checks them.
var draftFields = []string{"type", "to", "topic", "content", "timestamp"}

// readDraft reads one DraftData (extra="forbid", strict) from decoded
// JSON; name is where it is, for typed_endpoint's texts
// (drafts[0], draft).
func readDraft(v any, name string) (draftInput, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return draftInput{}, badRequest("Invalid " + name + ": Input should be a valid dictionary or instance of DraftData")
	}
	field := func(key string) string { return name + `["` + key + `"]` }
	var in draftInput
	for _, key := range draftFields[:4] {
		if _, ok := obj[key]; !ok {
			return draftInput{}, errFieldRequired(field(key))
		}
	}
	switch t, _ := obj["type"].(string); {
	case obj["type"] == nil, t != "private" && t != "stream" && t != "":
		return draftInput{}, errInvalidSetting(field("type"))
	default:
		in.Type = t
	}
	list, ok := obj["to"].([]any)
	if !ok {
		return draftInput{}, errNotList(field("to"))
	}
	for i, item := range list {
		n, ok := jsonInt(item)
		if !ok {
			return draftInput{}, errNotInteger(elemName(field("to"), i))
		}
		in.To = append(in.To, n)
	}
	if in.Topic, ok = obj["topic"].(string); !ok {
		return draftInput{}, errNotString(field("topic"))
	}
	content, ok := obj["content"].(string)
	if !ok {
		return draftInput{}, errNotString(field("content"))
	}
	if in.Content = strings.TrimSpace(content); in.Content == "" {
		return draftInput{}, errCannotBeBlank(field("content"))
	}
	if ts, ok := obj["timestamp"]; ok && ts != nil {
		num, ok := ts.(json.Number)
		if !ok {
			return draftInput{}, errNotInteger(field("timestamp") + `["int"]`)
		}
		f, err := num.Float64()
		if err != nil {
			return draftInput{}, errNotInteger(field("timestamp") + `["int"]`)
		}
		in.Timestamp = &f
	}
	var extra []string
	for key := range obj {
		if !slices.Contains(draftFields, key) {
			extra = append(extra, key)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return draftInput{}, errArgumentUnexpected(extra[0], field(extra[0]))
	}
	return in, nil
}

// requireDraftsSynced is draft_endpoint: with enable_drafts_synchronization
// off, every drafts route answers the same error before reading anything.
func (s *server) requireDraftsSynced(r *apiRequest) error {
	on, err := s.store.draftsSynced(r.user.ID)
	if err != nil {
		return err
	}
	if !on {
		r.params.useAll()
		return errDraftsNotSynced
	}
	return nil
}

// listDrafts serves GET /api/v1/drafts: every draft, oldest edit first.
func (s *server) listDrafts(r *apiRequest) (any, error) {
	if err := s.requireDraftsSynced(r); err != nil {
		return nil, err
	}
	drafts, err := s.store.drafts(r.user.ID, false)
	if err != nil {
		return nil, err
	}
	return struct {
		Count  int           `json:"count"`
		Drafts []draftObject `json:"drafts"`
	}{len(drafts), drafts}, nil
}

// createDrafts serves POST /api/v1/drafts: drafts, a JSON list of
// DraftData; the new drafts' ids, in order.
func (s *server) createDrafts(r *apiRequest) (any, error) {
	if err := s.requireDraftsSynced(r); err != nil {
		return nil, err
	}
	raw, err := r.params.requiredJSON("drafts")
	if err != nil {
		return nil, err
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, errNotList("drafts")
	}
	if len(list) > maxDraftsPerUser {
		return nil, errTooManyDrafts
	}
	inputs := make([]draftInput, 0, len(list))
	for i, v := range list {
		in, err := readDraft(v, elemName("drafts", i))
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, in)
	}
	ids, err := s.store.createDrafts(r.user, inputs)
	if err != nil {
		return nil, err
	}
	return struct {
		IDs []uint64 `json:"ids"`
	}{ids}, nil
}

// editDraft serves PATCH /api/v1/drafts/{draft_id}: draft, one DraftData.
func (s *server) editDraft(r *apiRequest) (any, error) {
	id, err := s.draftPath(r)
	if err != nil {
		return nil, err
	}
	raw, err := r.params.requiredJSON("draft")
	if err != nil {
		return nil, err
	}
	in, err := readDraft(raw, "draft")
	if err != nil {
		return nil, err
	}
	return nil, s.store.editDraft(r.user, id, in)
}

// draftPath reads {draft_id} as Zulip's URL pattern ([0-9]+, else 404
// Not Found) before draft_endpoint's check; a number beyond any id is a
// draft that does not exist.
func (s *server) draftPath(r *apiRequest) (uint64, error) {
	id, err := pathDigits(r, "draft_id", errNoSuchDraft)
	if err == errNotFound {
		return 0, err
	}
	if err := s.requireDraftsSynced(r); err != nil {
		return 0, err
	}
	return id, err
}

// deleteDraft serves DELETE /api/v1/drafts/{draft_id}.
func (s *server) deleteDraft(r *apiRequest) (any, error) {
	id, err := s.draftPath(r)
	if err != nil {
		return nil, err
	}
	return nil, s.store.deleteDraft(r.user, id)
}

// snippetText reads a saved snippet's title or content as Zulip's
// StringConstraints(min_length=1, max_length=limit, strip_whitespace)
// does: stripped, then not blank and at most limit characters.
func snippetText(p *params, name string, limit int, required bool) (*string, error) {
	v, ok := p.lookup(name)
	if !ok {
		if required {
			return nil, missingArgument(name)
		}
		return nil, nil
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, errCannotBeBlank(name)
	}
	if utf8.RuneCountInString(v) > limit {
		return nil, errStringTooLong(name, limit)
	}
	return &v, nil
}

// listSnippets serves GET /api/v1/saved_snippets.
func (s *server) listSnippets(r *apiRequest) (any, error) {
	snippets, err := s.store.savedSnippets(r.user.ID)
	if err != nil {
		return nil, err
	}
	return struct {
		SavedSnippets []snippetObject `json:"saved_snippets"`
	}{snippets}, nil
}

// createSnippet serves POST /api/v1/saved_snippets: content, then title,
// as the view lists them.
func (s *server) createSnippet(r *apiRequest) (any, error) {
	content, err := snippetText(r.params, "content", maxMessageLength, true)
	if err != nil {
		return nil, err
	}
	title, err := snippetText(r.params, "title", maxSnippetTitleLength, true)
	if err != nil {
		return nil, err
	}
	id, err := s.store.createSnippet(r.user, *title, *content)
	if err != nil {
		return nil, err
	}
	return struct {
		ID uint64 `json:"saved_snippet_id"`
	}{id}, nil
}

// editSnippet serves PATCH /api/v1/saved_snippets/{saved_snippet_id}:
// neither title nor content is a success that changes and tells nothing.
func (s *server) editSnippet(r *apiRequest) (any, error) {
	id, err := pathDigits(r, "saved_snippet_id", errNoSuchSnippet)
	if err == errNotFound {
		return nil, err
	}
	content, cerr := snippetText(r.params, "content", maxMessageLength, false)
	if cerr != nil {
		return nil, cerr
	}
	title, terr := snippetText(r.params, "title", maxSnippetTitleLength, false)
	if terr != nil {
		return nil, terr
	}
	if title == nil && content == nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, s.store.editSnippet(r.user, id, title, content)
}

// deleteSnippet serves DELETE /api/v1/saved_snippets/{saved_snippet_id}.
func (s *server) deleteSnippet(r *apiRequest) (any, error) {
	id, err := pathDigits(r, "saved_snippet_id", errNoSuchSnippet)
	if err != nil {
		return nil, err
	}
	return nil, s.store.deleteSnippet(r.user, id)
}

// addDraftsState adds register's drafts (the newest 1000) and
// saved_snippets, each when asked for.
func (s *server) addDraftsState(state map[string]any, u user, want func(string) bool) error {
	if want("drafts") {
		drafts, err := s.store.drafts(u.ID, true)
		if err != nil {
			return err
		}
		state["drafts"] = drafts
	}
	if want("saved_snippets") {
		snippets, err := s.store.savedSnippets(u.ID)
		if err != nil {
			return err
		}
		state["saved_snippets"] = snippets
	}
	return nil
}

// publishDrafts tells the user's queues, as Zulip's drafts events.
func (s *server) publishDrafts(c draftsChanged) {
	e := event{"type": "drafts", "op": c.Op}
	switch c.Op {
	case "add":
		e["drafts"] = c.Drafts
	case "update":
		e["draft"] = c.Drafts[0]
	case "remove":
		e["draft_id"] = c.DraftID
	}
	s.events.publish("drafts", ownedBy(c.UserID), func(*eventQueue) event { return cloneEvent(e) })
}

// publishSnippets tells the user's queues, as Zulip's saved_snippets events.
func (s *server) publishSnippets(c snippetsChanged) {
	e := event{"type": "saved_snippets", "op": c.Op}
	if c.Op == "remove" {
		e["saved_snippet_id"] = c.SnippetID
	} else {
		e["saved_snippet"] = c.Snippet
	}
	s.events.publish("saved_snippets", ownedBy(c.UserID), func(*eventQueue) event { return cloneEvent(e) })
}
