package main

// Data exports from the API (zerver/views/realm_export.py,
// zerver/actions/realm_export.py, zerver/lib/export.py's
// get_realm_exports_serialized and export_realm_wrapper): an
// administrator asks for one (POST /export/realm), it is made in the
// background as `zulite export` makes one, from a copy of the database,
// packed as `manage.py export` packs its directory, and kept in
// DB.exports/TOKEN/zulip-export-NAME.tar.gz, TOKEN random as Zulip's
// local upload backend makes it (secrets.token_urlsafe(18)). The tarball
// is served at /user_avatars/exports/REALM/TOKEN/NAME, Zulip's URL for
// it, to administrators only (Zulip's local backend serves it to
// whoever has the URL).

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"zulite/internal/zulipexport"
)

// exportsDir is where the exports' tarballs are kept.
func exportsDir(dbPath string) string { return dbPath + ".exports" }

// realmExportJSON is Zulip's RealmExport schema.
type realmExportJSON struct {
	ID               uint64   `json:"id"`
	ActingUserID     uint64   `json:"acting_user_id"`
	ExportTime       float64  `json:"export_time"`
	DeletedTimestamp *float64 `json:"deleted_timestamp"`
	FailedTimestamp  *float64 `json:"failed_timestamp"`
	ExportURL        *string  `json:"export_url"`
	Pending          bool     `json:"pending"`
	ExportType       int      `json:"export_type"`
}

func (s *server) realmExportsJSON(all []realmExport) []realmExportJSON {
	out := make([]realmExportJSON, 0, len(all))
	for _, e := range all {
		j := realmExportJSON{ID: e.ID, ActingUserID: e.ActingUser, ExportTime: e.Requested, Pending: e.pending(), ExportType: e.Type}
		if e.Deleted != 0 {
			j.DeletedTimestamp = &e.Deleted
		}
		if e.Failed != 0 {
			j.FailedTimestamp = &e.Failed
		}
		if e.Status == exportSucceeded {
			url := s.baseURL + "/user_avatars/exports/" + uploadRealmID + "/" + e.File
			j.ExportURL = &url
		}
		out = append(out, j)
	}
	return out
}

// listRealmExports serves GET /api/v1/export/realm.
func (s *server) listRealmExports(r *apiRequest) (any, error) {
	all, err := s.store.realmExports()
	if err != nil {
		return nil, err
	}
	return struct {
		Exports []realmExportJSON `json:"exports"`
	}{s.realmExportsJSON(all)}, nil
}

// startRealmExport serves POST /api/v1/export/realm: export_type 1, the
// public export (the default), is made; 2, the standard export with
// consent, is refused (README).
func (s *server) startRealmExport(r *apiRequest) (any, error) {
	exportType := exportPublic
	if v, ok := r.params.lookup("export_type"); ok {
		n, err := parseInt("export_type", v)
		if err != nil {
			return nil, err
		}
		if n != exportPublic {
			return nil, errInvalidExportType
		}
	}
	e, err := s.store.requestRealmExport(r.user, exportType, time.Now())
	if err != nil {
		return nil, err
	}
	go s.makeRealmExport(e)
	return struct {
		ID uint64 `json:"id"`
	}{e.ID}, nil
}

// deleteRealmExport serves DELETE /api/v1/export/realm/{export_id}: the
// export is marked deleted, then its tarball removed.
func (s *server) deleteRealmExport(r *apiRequest) (any, error) {
	id, err := pathDigits(r, "export_id", errNoSuchExport)
	if err != nil {
		return nil, err
	}
	file, err := s.store.deleteRealmExport(id, time.Now())
	if err != nil {
		return nil, err
	}
	if file != "" {
		dir := filepath.Join(exportsDir(s.store.path), filepath.Dir(filepath.FromSlash(file)))
		if err := os.RemoveAll(dir); err != nil {
			s.log.Warn("remove a deleted export", "export", id, "err", err)
		}
	}
	return nil, nil
}

// makeRealmExport makes export e, and records that it succeeded or
// failed. The database is copied in one read transaction, which holds up
// no write (store.snapshot), and the export is read from the copy, as
// `zulite export` does while a server runs; the writer is only taken to
// record the end.
func (s *server) makeRealmExport(e realmExport) {
	file, err := s.packRealmExport(e)
	if err != nil {
		s.log.Error("data export failed", "export", e.ID, "err", err)
		file = ""
	}
	if err := s.store.finishRealmExport(e.ID, file, time.Now()); err != nil {
		s.log.Error("record a data export's end", "export", e.ID, "err", err)
	}
}

// packRealmExport writes export e's tarball and answers its path under
// exportsDir.
func (s *server) packRealmExport(e realmExport) (string, error) {
	root := exportsDir(s.store.path)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", err
	}
	// Room for the copy and the export of it (about the database's size
	// each, and the uploads linked), above the disk reserve that the
	// database keeps for its own writes (--upload-disk-reserve-mib).
	if fi, err := os.Stat(s.store.path); err == nil {
		if free, ok := diskFree(root); ok && free-2*fi.Size() < s.uploads.reserve {
			return "", fmt.Errorf("%d bytes free, the database is %d and %d are kept free: no room for an export", free, fi.Size(), s.uploads.reserve)
		}
	}
	work, err := os.MkdirTemp(root, ".work-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	snapshot := filepath.Join(work, "snapshot.db")
	if err := writeFileAtomically(snapshot, func(w io.Writer) error { _, err := s.store.snapshot(w); return err }); err != nil {
		return "", fmt.Errorf("copy the database: %w", err)
	}
	copied, err := openStore(snapshot, lockTimeout)
	if err != nil {
		return "", err
	}
	out := filepath.Join(work, "export")
	if err := prepareExportDir(out); err != nil {
		return "", err
	}
	_, err = copied.exportOf(out, uploadsDir(s.store.path), e.Type == exportPublic)
	copied.close()
	if err != nil {
		return "", err
	}
	os.Remove(snapshot) // the tarball's room
	token := randomPathToken()
	top := "zulip-export-" + strings.ToLower(randomPathToken()[:8])
	dir := filepath.Join(root, token)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	tarball := filepath.Join(dir, top+".tar.gz")
	if err := writeFileAtomically(tarball, func(w io.Writer) error { return zulipexport.Pack(w, out, top) }); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return token + "/" + top + ".tar.gz", nil
}

// serveRealmExport serves GET /user_avatars/exports/{realm_id}/{token}/{file}:
// a succeeded export's tarball, to an administrator.
func (s *server) serveRealmExport(w http.ResponseWriter, r *http.Request) {
	if _, err := s.admit(w, r, adminsOnly); err != nil {
		writeError(w, s.log, r, err)
		return
	}
	token, name := r.PathValue("second"), r.PathValue("file")
	file := token + "/" + name
	if r.PathValue("first") != uploadRealmID || strings.ContainsAny(file, `\`) || token == "." || token == ".." || name == "." || name == ".." || !s.store.realmExportFile(file) {
		writeError(w, s.log, r, errNotFound)
		return
	}
	f, err := os.Open(filepath.Join(exportsDir(s.store.path), token, name))
	if err != nil {
		writeError(w, s.log, r, errNotFound)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		writeError(w, s.log, r, errNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/gzip")
	h.Set("Content-Disposition", "attachment; filename="+name)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-store")
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// publishRealmExports tells the administrators of the exports after a
// change, as Zulip's notify_realm_export.
func (s *server) publishRealmExports(c realmExportsChanged) {
	s.events.tell("realm_export", usersAudience(c.Admins...), event{"type": "realm_export", "exports": s.realmExportsJSON(c.All)}, nil)
}

// exportConsents serves GET /api/v1/export/realm/consents (feature level
// 295). Zulip 12 (feature level 430) adds email_address_visibility to
// each; Zulip 11 has not.
func (s *server) exportConsents(r *apiRequest) (any, error) {
	consents, err := s.store.exportConsents()
	if err != nil {
		return nil, err
	}
	return struct {
		Consents []exportConsent `json:"export_consents"`
	}{consents}, nil
}
