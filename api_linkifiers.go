package main

// Linkifiers (zerver/views/realm_linkifiers.py, zerver/models/linkifiers.py,
// zerver/actions/realm_linkifiers.py) and code playgrounds
// (zerver/views/realm_playgrounds.py, zerver/models/realm_playgrounds.py):
// everyone lists them (register's realm_linkifiers and
// realm_playgrounds, GET /realm/linkifiers); administrators change them.
// A linkifier's pattern is RE2 syntax run in linear time, within bounds
// (internal/markdown/re2.go): at most markdown.MaxPatternBytes bytes,
// maxLinkifiers of them, and markdown.LinkifyBudget matcher steps and
// markdown.MaxLinkified links for all of them in one message. As in Zulip since feature level 176, a
// client without the linkifier_url_template capability is given an
// empty realm_linkifiers and no realm_linkifiers events, and the legacy
// realm_filters is always empty and never sent.

import (
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"zulite/internal/markdown"
)

// linkifierJSON is a linkifier as the API gives it.
type linkifierJSON struct {
	Pattern     string `json:"pattern"`
	URLTemplate string `json:"url_template"`
	ID          uint64 `json:"id"`
}

func linkifiersJSON(all []linkifier) []linkifierJSON {
	out := make([]linkifierJSON, len(all))
	for i, l := range all {
		out[i] = linkifierJSON{l.Pattern, l.URLTemplate, l.ID}
	}
	return out
}

// listLinkifiers serves GET /api/v1/realm/linkifiers.
func (s *server) listLinkifiers(r *apiRequest) (any, error) {
	return struct {
		Linkifiers []linkifierJSON `json:"linkifiers"`
	}{linkifiersJSON(s.store.allLinkifiers())}, nil
}

// linkifierFields reads and checks pattern and url_template, stripped
// as Zulip's do_add_linkifier strips them.
func linkifierFields(r *apiRequest) (pattern, urlTemplate string, err error) {
	if pattern, err = r.params.requiredString("pattern"); err != nil {
		return "", "", err
	}
	if urlTemplate, err = r.params.requiredString("url_template"); err != nil {
		return "", "", err
	}
	pattern, urlTemplate = strings.TrimSpace(pattern), strings.TrimSpace(urlTemplate)
	if _, err := markdown.CompileLinkifier(pattern, urlTemplate); err != nil {
		return "", "", linkifierRefusal(err.(*markdown.LinkifierError))
	}
	return pattern, urlTemplate, nil
}

// addLinkifier serves POST /api/v1/realm/filters.
func (s *server) addLinkifier(r *apiRequest) (any, error) {
	pattern, urlTemplate, err := linkifierFields(r)
	if err != nil {
		return nil, err
	}
	id, err := s.store.addLinkifier(pattern, urlTemplate)
	if err != nil {
		return nil, err
	}
	return struct {
		ID uint64 `json:"id"`
	}{id}, nil
}

// updateLinkifier serves PATCH /api/v1/realm/filters/{filter_id}.
func (s *server) updateLinkifier(r *apiRequest) (any, error) {
	id, err := pathDigits(r, "filter_id", errNoSuchLinkifierWords)
	if err != nil {
		return nil, err
	}
	pattern, urlTemplate, err := linkifierFields(r)
	if err != nil {
		return nil, err
	}
	return nil, s.store.updateLinkifier(id, pattern, urlTemplate)
}

// removeLinkifier serves DELETE /api/v1/realm/filters/{filter_id}.
func (s *server) removeLinkifier(r *apiRequest) (any, error) {
	id, err := pathDigits(r, "filter_id", errNoSuchLinkifierWords)
	if err != nil {
		return nil, err
	}
	return nil, s.store.removeLinkifier(id)
}

// reorderLinkifiers serves PATCH /api/v1/realm/linkifiers.
func (s *server) reorderLinkifiers(r *apiRequest) (any, error) {
	list, err := intList(r.params, "ordered_linkifier_ids")
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, len(list))
	for i, id := range list {
		ids[i] = uint64(id) // a negative id names no linkifier: the list is then incomplete
	}
	return nil, s.store.reorderLinkifiers(ids)
}

// linkifierRefusal words a refused linkifier as Zulip's
// ValidationFailureError: the first error as msg, and every error by
// field in "errors", in the order full_clean finds them.
func linkifierRefusal(e *markdown.LinkifierError) error {
	type fieldError struct{ field, msg string }
	var found []fieldError
	if e.BadTemplate {
		found = append(found, fieldError{"url_template", "Invalid URL template."})
	}
	switch {
	case e.Pattern != nil:
		found = append(found, fieldError{"__all__", "Bad regular expression: " + e.Pattern.Text})
	case e.MissingInPattern != "":
		found = append(found, fieldError{"__all__", "Group " + pyRepr(e.MissingInPattern) + " in URL template is not present in linkifier pattern."})
	case e.MissingInTemplate != "":
		found = append(found, fieldError{"__all__", "Group " + pyRepr(e.MissingInTemplate) + " in linkifier pattern is not present in URL template."})
	}
	errors := map[string][]string{}
	for _, f := range found {
		errors[f.field] = append(errors[f.field], f.msg)
	}
	return &apiError{status: http.StatusBadRequest, code: "BAD_REQUEST", msg: found[0].msg, extra: []field{{"errors", errors}}}
}

// pyRepr is Python's repr of a string without quotes or backslashes in
// it (group and variable names).
func pyRepr(s string) string { return "'" + s + "'" }

// publishLinkifiers tells the queues that declared linkifier_url_template
// of the linkifiers after a change, as Zulip's notify_linkifiers.
func (s *server) publishLinkifiers(c linkifiersChanged) {
	shared := encodeEvent(event{"type": "realm_linkifiers", "realm_linkifiers": linkifiersJSON(c.All)})
	s.events.everyQueue("realm_linkifiers", func(q *eventQueue) *sharedEvent {
		if !q.linkifierURLTemplate {
			return nil
		}
		return shared
	})
}

// addLinkifierState is register's realm_linkifiers, realm_filters and
// realm_playgrounds.
func (s *server) addLinkifierState(state map[string]any, o registerOptions, want func(string) bool) {
	if want("realm_linkifiers") {
		state["realm_linkifiers"] = []linkifierJSON{}
		if o.capabilities.linkifierURLTemplate {
			state["realm_linkifiers"] = linkifiersJSON(s.store.allLinkifiers())
		}
	}
	if want("realm_playgrounds") {
		state["realm_playgrounds"] = nonNilPlaygrounds(s.store.allPlaygrounds())
	}
}

func nonNilPlaygrounds(all []playground) []playground {
	if all == nil {
		return []playground{}
	}
	return all
}

// Zulip's bounds on a playground's fields (RealmPlayground.MAX_NAME_LENGTH,
// MAX_PYGMENTS_NAME_LENGTH).
const (
	maxPlaygroundName     = 60
	maxPlaygroundLanguage = 40
)

// addPlayground serves POST /api/v1/realm/playgrounds: Zulip's
// add_realm_playground, its fields stripped and checked as full_clean
// checks them (the lengths and the URL template, then "code" as its one
// variable).
func (s *server) addPlayground(r *apiRequest) (any, error) {
	var p playground
	var err error
	if p.Name, err = r.params.requiredString("name"); err != nil {
		return nil, err
	}
	if p.URLTemplate, err = r.params.requiredString("url_template"); err != nil {
		return nil, err
	}
	if p.PygmentsLanguage, err = r.params.requiredString("pygments_language"); err != nil {
		return nil, err
	}
	if !validPygmentsLanguage(p.PygmentsLanguage) {
		return nil, errPygmentsLanguage
	}
	p.Name, p.PygmentsLanguage, p.URLTemplate = strings.TrimSpace(p.Name), strings.TrimSpace(p.PygmentsLanguage), strings.TrimSpace(p.URLTemplate)
	type fieldError struct{ field, msg string }
	var found []fieldError
	for _, f := range []struct {
		field, value string
		limit        int
	}{{"name", p.Name, maxPlaygroundName}, {"pygments_language", p.PygmentsLanguage, maxPlaygroundLanguage}} {
		if n := utf8.RuneCountInString(f.value); n > f.limit {
			found = append(found, fieldError{f.field, "Ensure this value has at most " + strconv.Itoa(f.limit) + " characters (it has " + strconv.Itoa(n) + ")."})
		} else if n == 0 {
			found = append(found, fieldError{f.field, "This field cannot be blank."})
		}
	}
	vars, ok := markdown.TemplateVariables(p.URLTemplate)
	switch {
	case !ok:
		found = append(found, fieldError{"url_template", "Invalid URL template."})
	case len(vars) != 1 || vars[0] != "code":
		found = append(found, fieldError{"__all__", `"code" should be the only variable present in the URL template`})
	}
	if len(found) > 0 {
		errors := map[string][]string{}
		for _, f := range found {
			errors[f.field] = append(errors[f.field], f.msg)
		}
		return nil, &apiError{status: http.StatusBadRequest, code: "BAD_REQUEST", msg: found[0].msg, extra: []field{{"errors", errors}}}
	}
	id, err := s.store.addPlayground(p)
	if err != nil {
		return nil, err
	}
	return struct {
		ID uint64 `json:"id"`
	}{id}, nil
}

// validPygmentsLanguage is check_pygments_language's \A[ \w.+#-]+\Z.
func validPygmentsLanguage(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || unicode.IsLetter(c) || unicode.IsNumber(c) || strings.ContainsRune(" .+#-", c)) {
			return false
		}
	}
	return true
}

// removePlayground serves DELETE /api/v1/realm/playgrounds/{playground_id}.
func (s *server) removePlayground(r *apiRequest) (any, error) {
	id, err := pathDigits(r, "playground_id", errNoSuchPlaygroundWords)
	if err != nil {
		return nil, err
	}
	return nil, s.store.removePlayground(id)
}

// publishPlaygrounds tells everyone of the playgrounds after a change,
// as Zulip's notify_realm_playgrounds.
func (s *server) publishPlaygrounds(c playgroundsChanged) {
	s.events.tellEveryone("realm_playgrounds", nil, event{"type": "realm_playgrounds", "realm_playgrounds": nonNilPlaygrounds(c.All)})
}
