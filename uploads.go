package main

// Uploads: POST /user_uploads streams a file to disk (store_uploads.go);
// GET /user_uploads/{realm_id}/{path} serves it to who may see it, with
// HTTP Basic auth as Zulip's apps send it; GET /api/v1/user_uploads/…
// answers a temporary URL that needs no credentials for a minute
// (zerver/views/upload.py). The request is read part by part: a 25 MiB
// upload never sits in memory whole.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/text/unicode/norm"
)

// Upload limits and their defaults.
const (
	defaultMaxUploadMiB = 25                 // Zulip's MAX_FILE_UPLOAD_SIZE
	defaultUploadGrace  = 7 * 24 * time.Hour // how long an unlinked upload is kept
	// The quotas' defaults are sized for a small device: without them one
	// member uploaded 4 × 26 MB in 1.9 s, ~50 GiB an hour, until the disk
	// was full and every write failed. The total is Zulip Cloud Free's
	// organisation quota (Realm.UPLOAD_QUOTA_LIMITED, 5 GB) and fits a
	// 16 GB card beside the system; each user may have a fifth of it; and
	// uploads stop while the disk has less than the reserve free, which
	// is left to the database, so that messages are still sent.
	defaultUploadQuotaMiB       = 1024
	defaultUploadTotalMiB       = 5120
	defaultUploadDiskReserveMiB = 512

	uploadSweepInterval = time.Hour
	// uploadOverhead is what a multipart request may carry besides the
	// file: boundaries, headers, small fields.
	uploadOverhead = 1 << 20
	// temporaryURLValidity is Zulip's SIGNED_ACCESS_TOKEN_VALIDITY_IN_SECONDS.
	temporaryURLValidity = 60 * time.Second
	maxUploadNameBytes   = 200 // a stored name is cut to this many bytes
)

// uploadLimits are the upload flags.
type uploadLimits struct {
	maxMiB  int           // --max-file-upload-size-mib; 0: uploads are off
	quota   uploadQuota   // --upload-quota-mib and --upload-total-mib, in bytes
	reserve int64         // --upload-disk-reserve-mib in bytes; 0: none
	grace   time.Duration // --upload-grace
}

func defaultUploadLimits() uploadLimits {
	return uploadLimits{maxMiB: defaultMaxUploadMiB, quota: uploadQuota{perUser: defaultUploadQuotaMiB << 20, total: defaultUploadTotalMiB << 20},
		reserve: defaultUploadDiskReserveMiB << 20, grace: defaultUploadGrace}
}

// uploadLimitsFrom reads the upload flags.
func uploadLimitsFrom(o options) (uploadLimits, error) {
	switch {
	case o.MaxUploadMiB < 0:
		return uploadLimits{}, fmt.Errorf("%w: --max-file-upload-size-mib must be 0 (no uploads) or more", errUsage)
	case o.UploadQuotaMiB < 0:
		return uploadLimits{}, fmt.Errorf("%w: --upload-quota-mib must be 0 (none) or more", errUsage)
	case o.UploadTotalMiB < 0:
		return uploadLimits{}, fmt.Errorf("%w: --upload-total-mib must be 0 (none) or more", errUsage)
	case o.UploadDiskReserveMiB < 0:
		return uploadLimits{}, fmt.Errorf("%w: --upload-disk-reserve-mib must be 0 (none) or more", errUsage)
	case o.UploadGrace <= 0:
		return uploadLimits{}, fmt.Errorf("%w: --upload-grace must be positive", errUsage)
	}
	return uploadLimits{maxMiB: o.MaxUploadMiB, quota: uploadQuota{perUser: int64(o.UploadQuotaMiB) << 20, total: int64(o.UploadTotalMiB) << 20},
		reserve: int64(o.UploadDiskReserveMiB) << 20, grace: o.UploadGrace}, nil
}

// uploadRoom is how many bytes an upload's file may have, and the
// refusal past them: the largest file's, or a quota's.
type uploadRoom struct {
	bytes   int64 // -1: not even an empty file
	refusal error
}

// uploadRoom takes the room for u's next file, before its body is read:
// the largest file, narrowed to what is left of u's quota, of the
// server's total and of the free disk above the reserve, each after the
// recorded files and the room that the uploads in flight hold. The file
// is streamed only that far, so that an upload refused for a quota
// writes nothing it keeps, and uploads streamed at the same time cannot
// together pass what one alone may. It holds want bytes of that room
// (the request's length, which the file cannot pass) until release.
func (s *server) uploadRoom(u user, want int64) (room uploadRoom, release func(), err error) {
	maxBytes := int64(s.uploads.maxMiB) << 20
	left, release, err := s.store.reserveUpload(u.ID, s.uploads.quota, s.uploads.reserve, min(want, maxBytes))
	if err != nil {
		return uploadRoom{}, nil, err
	}
	room = uploadRoom{maxBytes, errFileTooLarge(s.uploads.maxMiB)}
	if left < room.bytes {
		room = uploadRoom{max(left, -1), errUploadQuota}
	}
	return room, release, nil
}

// diskCheckEvery is how many bytes of a file are streamed between two
// looks at the free disk: one system call (diskFree) every 4 MiB.
const diskCheckEvery = 4 << 20

// reserveWatch refuses a stream, with Zulip's quota error, once the
// free disk is below the reserve: the room uploadRoom measured can be
// taken meanwhile by what no upload holds, the database first.
type reserveWatch struct {
	r       io.Reader
	store   *store
	reserve int64
	unread  int64 // bytes until the next look
}

func (w *reserveWatch) Read(p []byte) (int, error) {
	if w.unread <= 0 {
		if free, ok := w.store.uploadsDiskFree(); ok && free < w.reserve {
			return 0, errUploadQuota
		}
		w.unread = diskCheckEvery
	}
	n, err := w.r.Read(p[:min(int64(len(p)), w.unread)])
	w.unread -= int64(n)
	return n, err
}

// uploadFile serves POST /api/v1/user_uploads: one file, in a multipart
// part with a filename, streamed to disk within max_file_upload_size_mib,
// the quotas and the disk reserve (uploadRoom), recorded, and answered
// with its URL (url, and its older name uri) and name. Other parts are
// parameters, which this route does not use.
func (s *server) uploadFile() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.admit(w, r)
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		data, ignored, err := s.receiveUpload(w, r, u)
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		if err := writeSuccess(w, data, ignored); err != nil {
			writeError(w, s.log, r, internalError(err))
		}
	})
}

// uploadAnswer is POST /user_uploads' answer.
type uploadAnswer struct {
	URI      string `json:"uri"`
	URL      string `json:"url"`
	Filename string `json:"filename"`
}

// receivedFile is the one file part of an upload, written as a blob.
type receivedFile struct {
	name, contentType, sum string
	size                   int64
}

func (s *server) receiveUpload(w http.ResponseWriter, r *http.Request, u user) (any, []string, error) {
	p := &params{used: map[string]bool{}}
	if r.URL.RawQuery != "" {
		if tooManyPairs(r.URL.RawQuery) {
			return nil, nil, errTooManyParameters
		}
		query, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return nil, nil, errMalformedQuery
		}
		p.query = query
	}
	maxBytes := int64(s.uploads.maxMiB) << 20
	if r.ContentLength > maxBytes+uploadOverhead {
		return nil, nil, errFileTooLarge(s.uploads.maxMiB)
	}
	want := r.ContentLength
	if want < 0 { // its length is not told: the largest file's room is held
		want = maxBytes
	}
	room, release, err := s.uploadRoom(u, want)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	if r.ContentLength > room.bytes+uploadOverhead { // Zulip's order: the largest file, then the quota
		return nil, nil, room.refusal
	}
	mediaType, mediaParams, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" || mediaParams["boundary"] == "" {
		return nil, nil, errNoFileGiven // no multipart body: no file
	}
	file, fields, err := s.readUploadParts(w, r, mediaParams["boundary"], room)
	if err != nil {
		return nil, nil, err
	}
	p.body = fields
	if file == nil {
		return nil, nil, errNoFileGiven
	}
	pathID := uploadRealmID + "/" + randomPathToken() + "/" + sanitizeUploadName(file.name)
	a := attachment{PathID: pathID, Owner: u.ID, Name: file.name, Size: file.size, SHA256: file.sum,
		ContentType: file.contentType, Created: time.Now().Unix()}
	err = s.store.addAttachment(u, a, s.uploads.quota)
	s.store.releaseBlob(file.sum)
	if err != nil {
		s.discardUnrecorded(r, file.sum)
		return nil, nil, err
	}
	link := "/user_uploads/" + pathID
	return uploadAnswer{URI: link, URL: link, Filename: file.name}, p.ignored(), nil
}

// readUploadParts reads the multipart body: the first part with a file
// name goes to disk as it arrives, within room; a second one is refused
// (Zulip's "one file at a time"); the others are small parameters.
func (s *server) readUploadParts(w http.ResponseWriter, r *http.Request, boundary string, room uploadRoom) (_ *receivedFile, _ url.Values, err error) {
	body := http.MaxBytesReader(w, r.Body, int64(s.uploads.maxMiB)<<20+uploadOverhead)
	mr := multipart.NewReader(body, boundary)
	fields := url.Values{}
	var file *receivedFile
	defer func() { // a part after the file was refused: the file is not kept
		if err != nil && file != nil {
			s.store.releaseBlob(file.sum)
			s.discardUnrecorded(r, file.sum)
		}
	}()
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if err == io.EOF || (n == 0 && errors.Is(err, io.ErrUnexpectedEOF)) {
			return file, fields, nil
		}
		if err != nil {
			return nil, nil, uploadBodyError(err, s.uploads.maxMiB)
		}
		if n >= maxParams {
			return nil, nil, errTooManyParameters
		}
		name := part.FileName()
		if name == "" {
			var value bytes.Buffer
			if _, err := value.ReadFrom(io.LimitReader(part, defaultMaxBody+1)); err != nil {
				return nil, nil, uploadBodyError(err, s.uploads.maxMiB)
			}
			if value.Len() > defaultMaxBody {
				return nil, nil, errTooLarge
			}
			if !utf8.Valid(value.Bytes()) || !utf8.ValidString(part.FormName()) {
				return nil, nil, errInvalidUTF8(part.FormName())
			}
			if part.FormName() != "" {
				fields.Add(part.FormName(), value.String())
			}
			continue
		}
		if file != nil {
			return nil, nil, errOneFileAtATime
		}
		if room.bytes < 0 {
			return nil, nil, room.refusal
		}
		var stream io.Reader = part
		if s.uploads.reserve > 0 {
			stream = &reserveWatch{r: part, store: s.store, reserve: s.uploads.reserve}
		}
		sum, size, err := s.store.writeBlob(stream, room.bytes)
		if errors.Is(err, errBlobTooLarge) {
			return nil, nil, room.refusal
		}
		if err != nil {
			return nil, nil, uploadBodyError(err, s.uploads.maxMiB)
		}
		file = &receivedFile{name: uploadedName(name), contentType: uploadContentType(part.Header.Get("Content-Type"), name), sum: sum, size: size}
	}
}

// discardUnrecorded deletes the blob of an upload that was not recorded,
// unless something else uses it; if it cannot, the sweeper will.
func (s *server) discardUnrecorded(r *http.Request, sum string) {
	if err := s.store.discardBlob(sum); err != nil {
		s.log.Error("an unrecorded upload's blob", "err", err, "request", r.URL.Path)
	}
}

// uploadBodyError words a failure while reading the body: a body over
// the limit is a file over the limit.
func uploadBodyError(err error, maxMiB int) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errFileTooLarge(maxMiB)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "multipart") {
		return errMalformedBody
	}
	return err
}

// uploadedName is the file's name as Zulip keeps it: %-escapes decoded
// (Zulip's unquote), never empty.
func uploadedName(name string) string {
	if decoded, err := url.PathUnescape(name); err == nil && utf8.ValidString(decoded) {
		name = decoded
	}
	if !utf8.ValidString(name) {
		name = strings.ToValidUTF8(name, "")
	}
	if name == "" {
		return "uploaded-file"
	}
	return name
}

// uploadContentType is the part's type, else one guessed from the name,
// else application/octet-stream (Zulip's get_file_info).
func uploadContentType(declared, name string) string {
	if declared != "" {
		if _, _, err := mime.ParseMediaType(declared); err == nil {
			return declared
		}
	}
	if guessed := mime.TypeByExtension(path.Ext(name)); guessed != "" {
		return guessed
	}
	return "application/octet-stream"
}

// sanitizeUploadName is Zulip's sanitize_name: NFKC, only word
// characters, spaces, dots and dashes kept, runs of spaces and dashes
// made one dash; "", "." and ".." become "uploaded-file". zulite also
// cuts it to maxUploadNameBytes.
func sanitizeUploadName(name string) string {
	name = norm.NFKC.String(name)
	var b strings.Builder
	for _, r := range name {
		if r == '_' || r == '.' || r == '-' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsSpace(r) {
			b.WriteRune(r)
		}
	}
	name = strings.TrimFunc(b.String(), unicode.IsSpace)
	var out strings.Builder
	dash := false
	for _, r := range name {
		if r == '-' || unicode.IsSpace(r) {
			if !dash {
				out.WriteByte('-')
			}
			dash = true
			continue
		}
		dash = false
		out.WriteRune(r)
	}
	name = out.String()
	for len(name) > maxUploadNameBytes {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if name == "" || name == "." || name == ".." {
		return "uploaded-file"
	}
	return name
}

// randomPathToken is the random part of a path, as Zulip's
// secrets.token_urlsafe(18).
func randomPathToken() string {
	b := make([]byte, 18)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// uploadPathID turns a requested path into a path id, or refuses it: it
// must be the shape zulite makes, realm id/token/name, whatever encoding
// brought it (the router has decoded it once; a name holding a slash,
// a backslash, NUL or "..", however spelled, is no file of ours).
func uploadPathID(realmID, rest string) (string, bool) {
	token, name, ok := strings.Cut(rest, "/")
	if realmID != uploadRealmID || !ok || len(token) != 24 || strings.Trim(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
		return "", false
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00%") || !utf8.ValidString(name) {
		return "", false
	}
	return realmID + "/" + rest, true
}

// inlineTypes are Zulip's INLINE_MIME_TYPES: shown in the browser; any
// other file is served as a download.
var inlineTypes = map[string]bool{
	"application/pdf": true, "audio/aac": true, "audio/flac": true, "audio/mp4": true, "audio/mpeg": true,
	"audio/wav": true, "audio/webm": true, "image/apng": true, "image/avif": true, "image/gif": true,
	"image/jpeg": true, "image/png": true, "image/webp": true, "text/plain": true, "video/mp4": true, "video/webm": true,
}

// fileError answers a file route's failure with the envelope: Zulip's
// file views answer a short HTML page, but no client reads it, and one
// shape of error everywhere is simpler to rely on.
func (s *server) fileError(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, s.log, r, err)
}

// serveUpload serves GET /user_uploads/{realm_id}/{path...}: the file,
// to its uploader or a reader of a message that links it, with HTTP
// Basic auth.
func (s *server) serveUpload() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.admit(w, r)
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		pathID, ok := uploadPathID(r.PathValue("realm_id"), r.PathValue("path"))
		if !ok {
			s.fileError(w, r, errNoSuchAttachment)
			return
		}
		a, err := s.store.attachmentFor(u, pathID)
		if err != nil {
			s.fileError(w, r, err)
			return
		}
		s.sendFile(w, r, a)
	})
}

// sendFile writes a file's bytes with its type; only Zulip's inline
// types are shown inline, and nothing is sniffed or run.
func (s *server) sendFile(w http.ResponseWriter, r *http.Request, a attachment) {
	f, err := s.store.openBlob(a.SHA256)
	if err != nil {
		s.fileError(w, r, errNoSuchAttachment)
		return
	}
	defer f.Close()
	contentType := a.ContentType
	bare, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		contentType, bare = "application/octet-stream", "application/octet-stream"
	}
	disposition := "attachment"
	if inlineTypes[bare] {
		disposition = "inline"
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": a.Name}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, immutable")
	http.ServeContent(w, r, "", time.Unix(a.Created, 0), f)
}

// uploadURL serves GET /api/v1/user_uploads/{realm_id}/{path...}: a URL
// that serves the file without credentials for temporaryURLValidity,
// for a client that cannot send its credentials with a download.
func (s *server) uploadURL(r *apiRequest) (any, error) {
	pathID, ok := uploadPathID(r.PathValue("realm_id"), r.PathValue("path"))
	if !ok {
		return nil, errNoSuchAttachment
	}
	if _, err := s.store.attachmentFor(r.user, pathID); err != nil {
		return nil, err
	}
	return struct {
		URL string `json:"url"`
	}{"/user_uploads/temporary/" + s.store.uploadToken(pathID, time.Now()) + "/" + path.Base(pathID)}, nil
}

// uploadToken signs a path id and a time: hex of "path:time:mac", as
// Zulip's base-16 TimestampSigner token.
func (s *store) uploadToken(pathID string, now time.Time) string {
	data := pathID + ":" + strconv.FormatInt(now.Unix(), 36)
	return strings.ToUpper(hex.EncodeToString([]byte(data + ":" + s.uploadMAC(data))))
}

// uploadMAC is the keyed BLAKE2b of a token's data, with the database's
// secret and a prefix of its own, so that it cannot stand for an API key.
func (s *store) uploadMAC(data string) string {
	h, _ := blake2b.New256(s.keys.secret)
	h.Write([]byte("user_uploads\x00"))
	h.Write([]byte(data))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:20])
}

// checkUploadToken answers the path id a token signs, if it is genuine
// and not older than temporaryURLValidity.
func (s *store) checkUploadToken(token string, now time.Time) (string, bool) {
	raw, err := hex.DecodeString(token)
	if err != nil {
		return "", false
	}
	text := string(raw)
	i := strings.LastIndexByte(text, ':')
	if i < 0 {
		return "", false
	}
	data, mac := text[:i], text[i+1:]
	if !hmac.Equal([]byte(mac), []byte(s.uploadMAC(data))) {
		return "", false
	}
	j := strings.LastIndexByte(data, ':')
	if j < 0 {
		return "", false
	}
	at, err := strconv.ParseInt(data[j+1:], 36, 64)
	if err != nil || now.Sub(time.Unix(at, 0)) > temporaryURLValidity || time.Unix(at, 0).After(now.Add(time.Minute)) {
		return "", false
	}
	return data[:j], true
}

// serveTemporaryUpload serves GET /user_uploads/temporary/{token}/{filename}
// without credentials: the file the token signs, while it is fresh.
func (s *server) serveTemporaryUpload() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		pathID, ok := s.store.checkUploadToken(r.PathValue("token"), time.Now())
		if !ok {
			writeError(w, s.log, r, errInvalidUploadToken)
			return
		}
		if path.Base(pathID) != r.PathValue("filename") {
			writeError(w, s.log, r, errInvalidUploadName)
			return
		}
		a, err := s.store.attachmentByPath(pathID)
		if err != nil {
			writeError(w, s.log, r, errInvalidUploadToken)
			return
		}
		s.sendFile(w, r, a)
	})
}
