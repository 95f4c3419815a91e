package main

// Linkifiers and code playgrounds: Zulip's RealmFilter and
// RealmPlayground rows. Both are few (maxLinkifiers, maxPlaygrounds) and
// the linkifiers are read, compiled, by every rendering, so both are
// held in memory, replaced after each committed change.

import (
	"encoding/json"
	"slices"

	"go.etcd.io/bbolt"

	"zulite/internal/markdown"
)

// zulite's bounds (Zulip sets none): every rendering runs every
// linkifier, and register sends them all.
const (
	maxLinkifiers  = 250
	maxPlaygrounds = 250
)

var (
	bucketLinkifiers  = []byte("linkifiers")
	bucketPlaygrounds = []byte("playgrounds")
)

// linkifier is one linkifier, in the order the organisation gave them.
type linkifier struct {
	ID          uint64              `json:"-"`
	Pattern     string              `json:"pattern"`
	URLTemplate string              `json:"url_template"`
	Order       int                 `json:"order"`
	compiled    *markdown.Linkifier // nil for a row that no longer compiles
}

// playground is one code playground.
type playground struct {
	ID               uint64 `json:"id"`
	Name             string `json:"name"`
	PygmentsLanguage string `json:"pygments_language"`
	URLTemplate      string `json:"url_template"`
}

// linkifiersChanged: the linkifiers changed; All is every one after it,
// in order.
type linkifiersChanged struct{ All []linkifier }

// playgroundsChanged: the playgrounds changed; All is every one after it.
type playgroundsChanged struct{ All []playground }

// readLinkifiers reads every linkifier in Zulip's order (by order, then id).
func readLinkifiers(tx *bbolt.Tx) []linkifier {
	var all []linkifier
	tx.Bucket(bucketLinkifiers).ForEach(func(k, v []byte) error {
		var l linkifier
		if len(k) == 8 && json.Unmarshal(v, &l) == nil {
			l.ID = btoi(k)
			all = append(all, l)
		}
		return nil
	})
	sortLinkifiers(all)
	return all
}

func sortLinkifiers(all []linkifier) {
	sortStableFunc(all, func(a, b linkifier) int { return a.Order - b.Order })
}

func readPlaygrounds(tx *bbolt.Tx) []playground {
	var all []playground
	tx.Bucket(bucketPlaygrounds).ForEach(func(k, v []byte) error {
		var p playground
		if len(k) == 8 && json.Unmarshal(v, &p) == nil {
			p.ID = btoi(k)
			all = append(all, p)
		}
		return nil
	})
	return all
}

// loadLinkifiers reads the linkifiers and playgrounds, compiling each
// linkifier once.
func (s *store) loadLinkifiers(tx *bbolt.Tx) {
	all := readLinkifiers(tx)
	s.holdLinkifiers(all, nil)
	p := readPlaygrounds(tx)
	s.playgrounds.Store(&p)
}

// holdLinkifiers keeps all in memory, compiled: those of known (the
// set before a change) as they were compiled.
func (s *store) holdLinkifiers(all, known []linkifier) {
	all = slices.Clone(all) // the change reported holds the original
	for i := range all {
		if j := slices.IndexFunc(known, func(k linkifier) bool {
			return k.ID == all[i].ID && k.Pattern == all[i].Pattern && k.URLTemplate == all[i].URLTemplate
		}); j >= 0 && known[j].compiled != nil {
			all[i].compiled = known[j].compiled
			continue
		}
		all[i].compiled, _ = markdown.CompileLinkifier(all[i].Pattern, all[i].URLTemplate)
	}
	s.linkifiers.Store(&all)
}

// allLinkifiers is every linkifier, in order.
func (s *store) allLinkifiers() []linkifier {
	if p := s.linkifiers.Load(); p != nil {
		return *p
	}
	return nil
}

// compiledLinkifiers is what the renderer runs (markdown.Options).
func (s *store) compiledLinkifiers() []*markdown.Linkifier {
	var out []*markdown.Linkifier
	for _, l := range s.allLinkifiers() {
		if l.compiled != nil {
			out = append(out, l.compiled)
		}
	}
	return out
}

// changeLinkifiers runs change over the linkifiers in a write
// transaction, writes those it returns changed, and holds the result.
func (s *store) changeLinkifiers(change func(tx *bbolt.Tx, all []linkifier) ([]linkifier, error)) error {
	var after []linkifier
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		var err error
		if after, err = change(tx, readLinkifiers(tx)); err != nil {
			return err
		}
		sortLinkifiers(after)
		report(linkifiersChanged{All: after})
		return nil
	})
	if err == nil {
		s.holdLinkifiers(after, s.allLinkifiers())
	}
	return err
}

// samePattern is Zulip's unique (realm, pattern): another linkifier's.
func samePattern(all []linkifier, pattern string, except uint64) bool {
	return slices.ContainsFunc(all, func(l linkifier) bool { return l.Pattern == pattern && l.ID != except })
}

// addLinkifier is Zulip's do_add_linkifier: a checked linkifier, last
// in the order.
func (s *store) addLinkifier(pattern, urlTemplate string) (uint64, error) {
	var id uint64
	err := s.changeLinkifiers(func(tx *bbolt.Tx, all []linkifier) ([]linkifier, error) {
		if samePattern(all, pattern, 0) {
			return nil, refusal(errLinkifierExists)
		}
		if len(all) >= maxLinkifiers {
			return nil, refusal(errTooManyLinkifiers)
		}
		order := 0
		for _, l := range all {
			order = max(order, l.Order)
		}
		b := tx.Bucket(bucketLinkifiers)
		var err error
		if id, err = b.NextSequence(); err != nil {
			return nil, err
		}
		l := linkifier{ID: id, Pattern: pattern, URLTemplate: urlTemplate, Order: order + 1}
		if err := putJSON(b, itob(id), l); err != nil {
			return nil, err
		}
		return append(all, l), nil
	})
	return id, err
}

// updateLinkifier is Zulip's do_update_linkifier.
func (s *store) updateLinkifier(id uint64, pattern, urlTemplate string) error {
	return s.changeLinkifiers(func(tx *bbolt.Tx, all []linkifier) ([]linkifier, error) {
		i := slices.IndexFunc(all, func(l linkifier) bool { return l.ID == id })
		if i < 0 {
			return nil, errNoSuchLinkifier
		}
		if samePattern(all, pattern, id) {
			return nil, refusal(errLinkifierExists)
		}
		all[i].Pattern, all[i].URLTemplate = pattern, urlTemplate
		return all, putJSON(tx.Bucket(bucketLinkifiers), itob(id), all[i])
	})
}

// removeLinkifier is Zulip's do_remove_linkifier.
func (s *store) removeLinkifier(id uint64) error {
	return s.changeLinkifiers(func(tx *bbolt.Tx, all []linkifier) ([]linkifier, error) {
		i := slices.IndexFunc(all, func(l linkifier) bool { return l.ID == id })
		if i < 0 {
			return nil, errNoSuchLinkifier
		}
		return slices.Delete(all, i, i+1), tx.Bucket(bucketLinkifiers).Delete(itob(id))
	})
}

// reorderLinkifiers is Zulip's check_reorder_linkifiers: ids names
// every linkifier once, in the new order.
func (s *store) reorderLinkifiers(ids []uint64) error {
	seen := map[uint64]bool{}
	for _, id := range ids {
		if seen[id] {
			return errLinkifierDuplicated
		}
		seen[id] = true
	}
	return s.changeLinkifiers(func(tx *bbolt.Tx, all []linkifier) ([]linkifier, error) {
		if len(all) != len(ids) || slices.ContainsFunc(all, func(l linkifier) bool { return !seen[l.ID] }) {
			return nil, refusal(errLinkifierOrderIncomplete)
		}
		for i := range all {
			all[i].Order = slices.Index(ids, all[i].ID)
			if err := putJSON(tx.Bucket(bucketLinkifiers), itob(all[i].ID), all[i]); err != nil {
				return nil, err
			}
		}
		return all, nil
	})
}

// allPlaygrounds is every code playground, oldest first.
func (s *store) allPlaygrounds() []playground {
	if p := s.playgrounds.Load(); p != nil {
		return *p
	}
	return nil
}

// addPlayground is Zulip's do_add_realm_playground, unique by
// (pygments_language, name).
func (s *store) addPlayground(p playground) (uint64, error) {
	var after []playground
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		all := readPlaygrounds(tx)
		if slices.ContainsFunc(all, func(o playground) bool { return o.Name == p.Name && o.PygmentsLanguage == p.PygmentsLanguage }) {
			return refusal(errPlaygroundExists)
		}
		if len(all) >= maxPlaygrounds {
			return refusal(errTooManyPlaygrounds)
		}
		b := tx.Bucket(bucketPlaygrounds)
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		p.ID = id
		if err := putJSON(b, itob(id), p); err != nil {
			return err
		}
		after = append(all, p)
		report(playgroundsChanged{All: after})
		return nil
	})
	if err != nil {
		return 0, err
	}
	s.playgrounds.Store(&after)
	return p.ID, nil
}

// removePlayground is Zulip's do_remove_realm_playground.
func (s *store) removePlayground(id uint64) error {
	var after []playground
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		all := readPlaygrounds(tx)
		i := slices.IndexFunc(all, func(p playground) bool { return p.ID == id })
		if i < 0 {
			return errNoSuchPlayground
		}
		if err := tx.Bucket(bucketPlaygrounds).Delete(itob(id)); err != nil {
			return err
		}
		after = slices.Delete(all, i, i+1)
		report(playgroundsChanged{All: after})
		return nil
	})
	if err == nil {
		s.playgrounds.Store(&after)
	}
	return err
}
