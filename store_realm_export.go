package main

// Data exports made from the API (zerver/models/realms.py's RealmExport,
// zerver/views/realm_export.py): a row per export, its state, and where
// its tarball lies under DB.exports/ (api_realm_export.go makes it).

import (
	"encoding/json"
	"time"

	"go.etcd.io/bbolt"
)

var bucketRealmExports = []byte("realm_exports")

// RealmExport's type and status values.
const (
	exportPublic          = 1 // EXPORT_PUBLIC
	exportFullWithConsent = 2 // EXPORT_FULL_WITH_CONSENT

	exportRequested = 1 // REQUESTED
	exportStarted   = 2 // STARTED
	exportSucceeded = 3 // SUCCEEDED
	exportFailed    = 4 // FAILED
	exportDeleted   = 5 // DELETED
)

// Zulip's limits in export_realm: EXPORT_LIMIT exports in a week.
const (
	exportLimit       = 5
	exportLimitWindow = 7 * 24 * time.Hour
)

// realmExport is one RealmExport row. Times are Unix seconds with a
// fraction, as datetime_to_timestamp gives them; File is the tarball's
// path under DB.exports/ ("TOKEN/zulip-export-NAME.tar.gz"), set once
// it succeeded.
type realmExport struct {
	ID         uint64  `json:"id"`
	ActingUser uint64  `json:"acting_user"`
	Type       int     `json:"type"`
	Status     int     `json:"status"`
	Requested  float64 `json:"date_requested"`
	Succeeded  float64 `json:"date_succeeded,omitempty"`
	Failed     float64 `json:"date_failed,omitempty"`
	Deleted    float64 `json:"date_deleted,omitempty"`
	File       string  `json:"file,omitempty"`
}

func (e realmExport) pending() bool { return e.Status == exportRequested || e.Status == exportStarted }

// realmExportsChanged: an export was requested, finished, failed or
// deleted; Admins (the active human administrators) hear of All.
type realmExportsChanged struct {
	Admins []uint64
	All    []realmExport
}

func unixFloat(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func readRealmExports(tx *bbolt.Tx) ([]realmExport, error) {
	all := []realmExport{}
	err := tx.Bucket(bucketRealmExports).ForEach(func(_, v []byte) error {
		var e realmExport
		if err := json.Unmarshal(v, &e); err != nil {
			return err
		}
		all = append(all, e)
		return nil
	})
	return all, err
}

// reportRealmExports reports the exports after a change to the
// administrators, as Zulip's notify_realm_export.
func (s *store) reportRealmExports(tx *bbolt.Tx, report func(any)) error {
	all, err := readRealmExports(tx)
	if err != nil {
		return err
	}
	users, _, _, err := s.directory.of(tx)
	if err != nil {
		return err
	}
	var admins []uint64
	for _, u := range users {
		if u.Active && !u.Bot && u.isAdmin() {
			admins = append(admins, u.ID)
		}
	}
	report(realmExportsChanged{Admins: admins, All: all})
	return nil
}

// realmExports lists every export, oldest first.
func (s *store) realmExports() ([]realmExport, error) {
	var all []realmExport
	err := s.view(func(tx *bbolt.Tx) (err error) {
		all, err = readRealmExports(tx)
		return err
	})
	return all, err
}

// requestRealmExport is export_realm's bookkeeping: at most exportLimit
// requested in exportLimitWindow ("Exceeded rate limit."), and, zulite's
// own bound, none while another is pending (Zulip queues them; zulite
// makes one at a time so that two copies of the database never fill the
// disk at once).
func (s *store) requestRealmExport(u user, exportType int, now time.Time) (realmExport, error) {
	var added realmExport
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		all, err := readRealmExports(tx)
		if err != nil {
			return err
		}
		recent, since := 0, unixFloat(now.Add(-exportLimitWindow))
		for _, e := range all {
			if e.Requested >= since {
				recent++
			}
			if e.pending() {
				return refusal(errExportInProgress)
			}
		}
		if recent >= exportLimit {
			return refusal(errExportRateLimit)
		}
		b := tx.Bucket(bucketRealmExports)
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		added = realmExport{ID: id, ActingUser: u.ID, Type: exportType, Status: exportRequested, Requested: unixFloat(now)}
		if err := putJSON(b, itob(id), added); err != nil {
			return err
		}
		return s.reportRealmExports(tx, report)
	})
	return added, err
}

// finishRealmExport records the end of export id: its tarball's file,
// or, with file "", that it failed.
func (s *store) finishRealmExport(id uint64, file string, now time.Time) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		b := tx.Bucket(bucketRealmExports)
		var e realmExport
		if v := b.Get(itob(id)); v == nil || json.Unmarshal(v, &e) != nil || !e.pending() {
			return nil
		}
		if file == "" {
			e.Status, e.Failed = exportFailed, unixFloat(now)
		} else {
			e.Status, e.Succeeded, e.File = exportSucceeded, unixFloat(now), file
		}
		if err := putJSON(b, itob(id), e); err != nil {
			return err
		}
		return s.reportRealmExports(tx, report)
	})
}

// failPendingExports marks failed every export still pending when the
// server starts: the process that made it is gone.
func (s *store) failPendingExports(now time.Time) (int, error) {
	failed := 0
	err := s.update(func(tx *bbolt.Tx) error {
		failed = 0
		all, err := readRealmExports(tx)
		if err != nil {
			return err
		}
		for _, e := range all {
			if e.pending() {
				e.Status, e.Failed = exportFailed, unixFloat(now)
				if err := putJSON(tx.Bucket(bucketRealmExports), itob(e.ID), e); err != nil {
					return err
				}
				failed++
			}
		}
		return nil
	})
	return failed, err
}

// deleteRealmExport is delete_realm_export: the export becomes deleted
// and the file it had is returned, for the caller to remove once this
// is committed.
func (s *store) deleteRealmExport(id uint64, now time.Time) (string, error) {
	var file string
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		b := tx.Bucket(bucketRealmExports)
		var e realmExport
		v := b.Get(itob(id))
		if v == nil {
			return refusal(errNoSuchExport)
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return err
		}
		switch e.Status {
		case exportDeleted:
			return refusal(errExportDeleted)
		case exportFailed:
			return refusal(errExportFailedNothing)
		case exportRequested, exportStarted:
			return refusal(errExportInProgress)
		}
		file = e.File
		e.Status, e.Deleted = exportDeleted, unixFloat(now)
		if err := putJSON(b, itob(id), e); err != nil {
			return err
		}
		return s.reportRealmExports(tx, report)
	})
	return file, err
}

// realmExportFile is the tarball of a succeeded export of the file name,
// if there is one.
func (s *store) realmExportFile(file string) bool {
	found := false
	s.view(func(tx *bbolt.Tx) error {
		all, err := readRealmExports(tx)
		for _, e := range all {
			if e.Status == exportSucceeded && e.File == file {
				found = true
			}
		}
		return err
	})
	return found
}

// exportConsent is one user's allow_private_data_export.
type exportConsent struct {
	UserID    uint64 `json:"user_id"`
	Consented bool   `json:"consented"`
}

// exportConsents is get_users_export_consents: each active human's
// allow_private_data_export setting (default false).
func (s *store) exportConsents() ([]exportConsent, error) {
	out := []exportConsent{}
	err := s.view(func(tx *bbolt.Tx) error {
		out = out[:0]
		users, _, _, err := s.directory.of(tx)
		if err != nil {
			return err
		}
		for _, u := range users {
			if !u.Active || u.Bot {
				continue
			}
			var settings struct {
				Consented bool `json:"allow_private_data_export"`
			}
			if v := tx.Bucket(bucketUserSettings).Get(itob(u.ID)); v != nil {
				if err := json.Unmarshal(v, &settings); err != nil {
					return err
				}
			}
			out = append(out, exportConsent{u.ID, settings.Consented})
		}
		return nil
	})
	return out, err
}
