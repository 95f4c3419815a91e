package main

// Drafts and saved snippets: what one person keeps for themselves, synced
// across their clients (zerver/lib/drafts.py, zerver/models/drafts.py,
// zerver/actions/saved_snippets.py, zerver/models/saved_snippets.py).
// Drafts live in the drafts bucket, snippets in saved_snippets, both keyed
// user id ‖ id, the id from the bucket's sequence as Zulip's are global.

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"go.etcd.io/bbolt"
)

// maxDraftsInRegister is Zulip's MAX_DRAFTS_IN_REGISTER_RESPONSE: register
// gives the newest this many drafts.
const maxDraftsInRegister = 1000

// maxDraftsPerUser and maxSnippetsPerUser are zulite's bounds (Zulip has
// none): a user keeps at most as many drafts as register shows, so that
// GET /drafts and register agree, and as many snippets.
const (
	maxDraftsPerUser   = maxDraftsInRegister
	maxSnippetsPerUser = 1000
)

// maxDraftTimestamp is the last second Python's datetime holds (the end
// of year 9999): Zulip fails on a later draft timestamp, zulite refuses it.
const maxDraftTimestamp = 253402300799

// maxSnippetTitleLength is Zulip's SavedSnippet.MAX_TITLE_LENGTH.
const maxSnippetTitleLength = 60

// draftInput is one draft as a request gives it, already read as Zulip's
// DraftData (api_drafts.go); the store does further_validated_draft_dict.
type draftInput struct {
	Type      string
	To        []int64
	Topic     string
	Content   string
	Timestamp *float64 // nil: now
}

// storedDraft is a draft as kept: To is what its to_dict answers (the
// channel, or the other participants of a direct message, or oneself).
type storedDraft struct {
	Type     string   `json:"type"`
	To       []uint64 `json:"to"`
	Topic    string   `json:"topic"`
	Content  string   `json:"content"`
	LastEdit float64  `json:"last_edit_time"` // Unix seconds, to the microsecond
}

// draftObject is Zulip's Draft.to_dict.
type draftObject struct {
	ID        uint64   `json:"id"`
	Type      string   `json:"type"`
	To        []uint64 `json:"to"`
	Topic     string   `json:"topic"`
	Content   string   `json:"content"`
	Timestamp int64    `json:"timestamp"`
}

func (d storedDraft) object(id uint64) draftObject {
	return draftObject{ID: id, Type: d.Type, To: nonNilIDs(d.To), Topic: d.Topic, Content: d.Content, Timestamp: int64(d.LastEdit)}
}

// draftsChanged: drafts of a user were added, updated or removed, told
// to that user's queues as Zulip's drafts events.
type draftsChanged struct {
	UserID  uint64
	Op      string // "add", "update", "remove"
	Drafts  []draftObject
	DraftID uint64
}

// savedSnippet is a snippet as kept.
type savedSnippet struct {
	Title   string  `json:"title"`
	Content string  `json:"content"`
	Created float64 `json:"date_created"` // Unix seconds
}

// snippetObject is Zulip's SavedSnippet.to_api_dict.
type snippetObject struct {
	ID          uint64 `json:"id"`
	Title       string `json:"title"`
	Content     string `json:"content"`
	DateCreated int64  `json:"date_created"`
}

func (sn savedSnippet) object(id uint64) snippetObject {
	return snippetObject{ID: id, Title: sn.Title, Content: sn.Content, DateCreated: int64(sn.Created)}
}

// snippetsChanged: a saved snippet was added, updated or removed.
type snippetsChanged struct {
	UserID    uint64
	Op        string
	Snippet   snippetObject
	SnippetID uint64
}

func userItemKey(userID, id uint64) []byte { return append(itob(userID), itob(id)...) }

// checkDraftsSynced is Zulip's draft_endpoint check.
func checkDraftsSynced(tx *bbolt.Tx, userID uint64) error {
	if !settingOn(tx, userID, "enable_drafts_synchronization") {
		return refusal(errDraftsNotSynced)
	}
	return nil
}

// draftsSynced tells whether the user syncs drafts, for the routes'
// first check (Zulip checks it before reading any parameter).
func (s *store) draftsSynced(userID uint64) (bool, error) {
	var on bool
	err := s.view(func(tx *bbolt.Tx) error {
		on = settingOn(tx, userID, "enable_drafts_synchronization")
		return nil
	})
	return on, err
}

// validDraft is further_validated_draft_dict: the content normalized
// and truncated, the timestamp checked, a channel draft's topic
// truncated and its channel one the user may access, a direct message
// draft's recipients existing and active users.
func (s *store) validDraft(tx *bbolt.Tx, u user, in draftInput) (storedDraft, error) {
	content, err := normalizeBody(in.Content)
	if err != nil {
		return storedDraft{}, refusal(asAPIError(err))
	}
	content = truncateContent(content)
	ts := float64(s.now().UnixMicro()) / 1e6
	if in.Timestamp != nil {
		ts = math.Round(*in.Timestamp*1e6) / 1e6
	}
	if ts < 0 {
		return storedDraft{}, refusal(errDraftTimestampNegative)
	}
	if ts > maxDraftTimestamp {
		return storedDraft{}, refusal(errDraftTimestampTooLarge)
	}
	d := storedDraft{Type: "", To: []uint64{}, Content: content, LastEdit: ts}
	switch {
	case in.Type == "stream":
		topic := truncateTopic(in.Topic)
		if bytes.IndexByte([]byte(topic), 0) >= 0 {
			return storedDraft{}, refusal(errDraftTopicNullBytes)
		}
		if len(in.To) != 1 {
			return storedDraft{}, refusal(errDraftOneChannel)
		}
		if in.To[0] <= 0 {
			return storedDraft{}, refusal(errInvalidChannelID)
		}
		ch, err := s.channelByID(tx, uint64(in.To[0]))
		if err != nil || !s.canAccess(tx, u, ch) {
			return storedDraft{}, refusal(errInvalidChannelID)
		}
		d.Type, d.To, d.Topic = "stream", []uint64{ch.ID}, topic
	case in.Type == "private" && len(in.To) > 0:
		ids := make([]int64, len(in.To))
		copy(ids, in.To)
		slices.Sort(ids)
		ids = slices.Compact(ids)
		users := tx.Bucket(bucketUsers)
		var others []uint64
		var recipients []user
		for _, id := range ids {
			var r user
			if id <= 0 || users.Get(itob(uint64(id))) == nil || getJSON(users, itob(uint64(id)), &r) != nil {
				return storedDraft{}, errDMInvalidUserID.about(strconv.FormatInt(id, 10))
			}
			recipients = append(recipients, r)
		}
		for _, r := range recipients {
			if !r.Active {
				return storedDraft{}, errDMRecipientDeactivated.about(r.Email)
			}
			if r.ID != u.ID {
				others = append(others, r.ID)
			}
		}
		if len(others) == 0 {
			others = []uint64{u.ID}
		}
		d.Type, d.To = "private", others
	}
	return d, nil
}

// createDrafts is do_create_drafts: every draft checked, in order, then
// all stored at once and told as one drafts add event.
func (s *store) createDrafts(u user, inputs []draftInput) ([]uint64, error) {
	var ids []uint64
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		ids = nil
		if err := checkDraftsSynced(tx, u.ID); err != nil {
			return err
		}
		drafts := make([]storedDraft, 0, len(inputs))
		for _, in := range inputs {
			d, err := s.validDraft(tx, u, in)
			if err != nil {
				return err
			}
			drafts = append(drafts, d)
		}
		b := tx.Bucket(bucketDrafts)
		if countPrefix(b, itob(u.ID))+len(drafts) > maxDraftsPerUser {
			return refusal(errTooManyDrafts)
		}
		objects := make([]draftObject, 0, len(drafts))
		for _, d := range drafts {
			id, err := b.NextSequence()
			if err != nil {
				return err
			}
			if err := putJSON(b, userItemKey(u.ID, id), d); err != nil {
				return err
			}
			ids = append(ids, id)
			objects = append(objects, d.object(id))
		}
		report(draftsChanged{UserID: u.ID, Op: "add", Drafts: objects})
		return nil
	})
	return nonNilIDs(ids), err
}

// editDraft is do_edit_draft.
func (s *store) editDraft(u user, id uint64, in draftInput) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		if err := checkDraftsSynced(tx, u.ID); err != nil {
			return err
		}
		b := tx.Bucket(bucketDrafts)
		if b.Get(userItemKey(u.ID, id)) == nil {
			return refusal(errNoSuchDraft)
		}
		d, err := s.validDraft(tx, u, in)
		if err != nil {
			return err
		}
		report(draftsChanged{UserID: u.ID, Op: "update", Drafts: []draftObject{d.object(id)}})
		return putJSON(b, userItemKey(u.ID, id), d)
	})
}

// deleteDraft is do_delete_draft.
func (s *store) deleteDraft(u user, id uint64) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		if err := checkDraftsSynced(tx, u.ID); err != nil {
			return err
		}
		b := tx.Bucket(bucketDrafts)
		if b.Get(userItemKey(u.ID, id)) == nil {
			return refusal(errNoSuchDraft)
		}
		report(draftsChanged{UserID: u.ID, Op: "remove", DraftID: id})
		return b.Delete(userItemKey(u.ID, id))
	})
}

// dropDrafts deletes every draft of the user, telling nobody: Zulip's
// do_change_user_setting when enable_drafts_synchronization goes off
// ("we stopped syncing changes, not deleted every previously synced
// draft").
func dropDrafts(tx *bbolt.Tx, userID uint64) error {
	return deletePrefix(tx.Bucket(bucketDrafts), itob(userID))
}

// drafts lists the user's drafts, oldest edit first (GET /drafts), or
// for register newest first and at most maxDraftsInRegister.
func (s *store) drafts(userID uint64, newestFirst bool) ([]draftObject, error) {
	var out []draftObject
	err := s.view(func(tx *bbolt.Tx) error {
		out = []draftObject{}
		var stored []storedDraft
		var ids []uint64
		c := tx.Bucket(bucketDrafts).Cursor()
		prefix := itob(userID)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var d storedDraft
			if err := json.Unmarshal(v, &d); err != nil {
				return err
			}
			stored, ids = append(stored, d), append(ids, btoi(k[8:]))
		}
		order := make([]int, len(stored))
		for i := range order {
			order[i] = i
		}
		sortStableFunc(order, func(a, b int) int {
			if stored[a].LastEdit < stored[b].LastEdit {
				return -1
			}
			if stored[a].LastEdit > stored[b].LastEdit {
				return 1
			}
			return 0
		})
		if newestFirst {
			slices.Reverse(order)
			if len(order) > maxDraftsInRegister {
				order = order[:maxDraftsInRegister]
			}
		}
		for _, i := range order {
			out = append(out, stored[i].object(ids[i]))
		}
		return nil
	})
	return out, err
}

// countPrefix counts the keys under prefix.
func countPrefix(b *bbolt.Bucket, prefix []byte) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}

// ---- saved snippets ----

// createSnippet is do_create_saved_snippet.
func (s *store) createSnippet(u user, title, content string) (uint64, error) {
	var id uint64
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		b := tx.Bucket(bucketSavedSnippets)
		if countPrefix(b, itob(u.ID)) >= maxSnippetsPerUser {
			return refusal(errTooManySnippets)
		}
		var err error
		if id, err = b.NextSequence(); err != nil {
			return err
		}
		sn := savedSnippet{Title: title, Content: content, Created: float64(s.now().UnixMicro()) / 1e6}
		report(snippetsChanged{UserID: u.ID, Op: "add", Snippet: sn.object(id)})
		return putJSON(b, userItemKey(u.ID, id), sn)
	})
	return id, err
}

// editSnippet is do_edit_saved_snippet: nil leaves a field as it is.
func (s *store) editSnippet(u user, id uint64, title, content *string) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		b := tx.Bucket(bucketSavedSnippets)
		v := b.Get(userItemKey(u.ID, id))
		if v == nil {
			return refusal(errNoSuchSnippet)
		}
		var sn savedSnippet
		if err := json.Unmarshal(v, &sn); err != nil {
			return err
		}
		if title != nil {
			sn.Title = *title
		}
		if content != nil {
			sn.Content = *content
		}
		report(snippetsChanged{UserID: u.ID, Op: "update", Snippet: sn.object(id)})
		return putJSON(b, userItemKey(u.ID, id), sn)
	})
}

// deleteSnippet is do_delete_saved_snippet.
func (s *store) deleteSnippet(u user, id uint64) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		b := tx.Bucket(bucketSavedSnippets)
		if b.Get(userItemKey(u.ID, id)) == nil {
			return refusal(errNoSuchSnippet)
		}
		report(snippetsChanged{UserID: u.ID, Op: "remove", SnippetID: id})
		return b.Delete(userItemKey(u.ID, id))
	})
}

// savedSnippets lists the user's snippets by id (do_get_saved_snippets).
func (s *store) savedSnippets(userID uint64) ([]snippetObject, error) {
	var out []snippetObject
	err := s.view(func(tx *bbolt.Tx) error {
		out = []snippetObject{}
		c := tx.Bucket(bucketSavedSnippets).Cursor()
		prefix := itob(userID)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var sn savedSnippet
			if err := json.Unmarshal(v, &sn); err != nil {
				return err
			}
			out = append(out, sn.object(btoi(k[8:])))
		}
		return nil
	})
	return out, err
}
