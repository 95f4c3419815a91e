package main

// Custom emoji (zerver/views/realm_emoji.py, zerver/lib/emoji.py,
// zerver/actions/realm_emoji.py): GET /realm/emoji lists them, POST
// /realm/emoji/{emoji_name} uploads one (those in can_add_custom_emoji_group,
// members by default), DELETE deactivates one (its author or an
// administrator). Zulip scales an upload to 64 pixels with libvips and
// keeps its format (an animated GIF stays animated, with a still PNG
// beside it); zulite decodes PNG, JPEG and GIF with the standard library
// and keeps a 64-pixel PNG of the image's centre square, as it draws
// avatars: an animated GIF keeps its first frame, so still_url is always
// null. WebP and AVIF, which Zulip accepts, are refused as an "Invalid
// image format": the standard library has no decoder for them.

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"zulite/internal/emoji"
)

const (
	maxEmojiMiB = 5  // Zulip's MAX_EMOJI_FILE_SIZE_MIB
	emojiSize   = 64 // Zulip's DEFAULT_EMOJI_SIZE
)

// emojiJSON is Zulip's EmojiInfo as the API gives it (the RealmEmoji schema).
type emojiJSON struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	SourceURL   string  `json:"source_url"`
	Deactivated bool    `json:"deactivated"`
	AuthorID    *uint64 `json:"author_id"`
	StillURL    *string `json:"still_url"`
}

// emojiURL is where a custom emoji's image is served: Zulip's
// PATH_ID_TEMPLATE under /user_avatars/.
func emojiURL(e realmEmoji) string {
	return "/user_avatars/" + uploadRealmID + "/emoji/images/" + e.File + ".png"
}

// emojiMap is every custom emoji keyed by id, as Zulip's
// get_all_custom_emoji_for_realm gives them.
func emojiMap(set realmEmojiSet) map[string]emojiJSON {
	out := make(map[string]emojiJSON, len(set))
	for _, e := range set {
		id := strconv.FormatUint(e.ID, 10)
		j := emojiJSON{ID: id, Name: e.Name, SourceURL: emojiURL(e), Deactivated: e.Deactivated}
		if e.AuthorID != 0 {
			author := e.AuthorID
			j.AuthorID = &author
		}
		out[id] = j
	}
	return out
}

// listEmoji serves GET /api/v1/realm/emoji: every custom emoji,
// deactivated ones too (the list is public to the organisation).
func (s *server) listEmoji(r *apiRequest) (any, error) {
	return struct {
		Emoji map[string]emojiJSON `json:"emoji"`
	}{emojiMap(s.store.customEmoji())}, nil
}

// checkEmojiName is Zulip's check_valid_emoji_name.
func checkEmojiName(name string) error {
	if name == "" {
		return errEmojiNoName
	}
	for _, c := range []byte(name) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '_') {
			return errEmojiNameCharacters
		}
	}
	if last := name[len(name)-1]; last == '-' || last == '_' {
		return errEmojiNameEnd
	}
	return nil
}

// uploadEmoji serves POST /api/v1/realm/emoji/{emoji_name}: Zulip's
// upload_emoji, its checks in its order. Those that need no body (the
// caller's role, the name, the permission, a name already taken) come
// before the body is read.
func (s *server) uploadEmoji() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.admit(w, r, membersOrAdmins)
		if err == nil {
			var ignored []string
			if ignored, err = s.receiveEmoji(w, r, u); err == nil {
				if err = writeSuccess(w, nil, ignored); err != nil {
					err = internalError(err)
				}
			}
		}
		if err != nil {
			writeError(w, s.log, r, err)
		}
	})
}

// membersOrAdmins is Zulip's require_member_or_admin: no guests, no bots.
func membersOrAdmins(u user) error {
	if u.Role == roleGuest {
		return errGuestsNotAllowed
	}
	return humansOnly(u)
}

func (s *server) receiveEmoji(w http.ResponseWriter, r *http.Request, u user) ([]string, error) {
	name := strings.ReplaceAll(strings.TrimSpace(r.PathValue("emoji_name")), " ", "_")
	if err := checkEmojiName(name); err != nil {
		return nil, err
	}
	if !s.store.allowed(u, realmCanAddCustomEmojiGroup) {
		return nil, errInsufficientPermission
	}
	if _, taken := s.store.customEmoji().active(name); taken {
		return nil, errEmojiNameTaken
	}
	const limit = maxEmojiMiB << 20
	if r.ContentLength > limit+uploadOverhead {
		return nil, errEmojiTooLarge
	}
	up, err := readImageUpload(w, r, limit) // avatars.go
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, errEmojiTooLarge
	case err != nil:
		return nil, errOneEmojiFile
	}
	p, img, contentType := up.params, up.image, up.contentType
	if _, builtIn := emoji.CodeForName(name); builtIn && !u.isAdmin() { // name_to_codepoint: :zulip: is not among them
		return nil, errOverrideBuiltInEmoji
	}
	if len(img) > limit {
		return nil, errEmojiTooLarge
	}
	if bare, _, _ := mime.ParseMediaType(contentType); !avatarImageTypes[bare] {
		return nil, errInvalidImageFormat
	}
	scaled, err := emojiImage(img)
	if err != nil {
		return nil, err
	}
	// Below the disk reserve an emoji is refused as an upload is: Zulip's
	// emoji have no quota, nor an error of their own for it.
	want := int64(len(scaled))
	left, release, err := s.store.reserveUpload(u.ID, uploadQuota{}, s.uploads.reserve, want)
	if err != nil {
		return nil, err
	}
	defer release()
	if left < want {
		return nil, errUploadQuota
	}
	sum, _, err := s.store.writeBlob(bytes.NewReader(scaled), want)
	if err != nil {
		return nil, err
	}
	defer s.store.releaseBlob(sum)
	if _, err := s.store.addRealmEmoji(u, name, sum, time.Now().Unix()); err != nil {
		return nil, err
	}
	return p.ignored(), nil
}

// emojiImage decodes an uploaded image by its content, refusing one too
// large to decode safely, and draws its centre square at 64 pixels as PNG.
func emojiImage(data []byte) ([]byte, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, errBadImage
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxAvatarPixels {
		return nil, errImageTooBig
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, errBadImage
	}
	var out bytes.Buffer
	if err := png.Encode(&out, squareThumbnail(src, emojiSize)); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// deactivateEmoji serves DELETE /api/v1/realm/emoji/{emoji_name}:
// Zulip's delete_emoji. The emoji stays, deactivated, for the messages
// and reactions that show it.
func (s *server) deactivateEmoji(r *apiRequest) (any, error) {
	return nil, s.store.deactivateRealmEmoji(r.user, r.PathValue("emoji_name"))
}

// serveEmoji serves GET /user_avatars/{realm}/emoji/images/{file}
// without credentials, as Zulip serves custom emoji: the image of a
// custom emoji, deactivated or not.
func (s *server) serveEmoji() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		name, ok := strings.CutSuffix(r.PathValue("file"), ".png")
		if ok && r.PathValue("realm") == uploadRealmID && isBlobName(name) && s.store.isEmojiBlob(name) && s.serveImageBlob(w, r, name) { // avatars.go
			return
		}
		writeError(w, s.log, r, errNotFound)
	})
}

// publishRealmEmoji tells everyone of the custom emoji after a change,
// as Zulip's notify_realm_emoji.
func (s *server) publishRealmEmoji(c realmEmojiChanged) {
	s.events.tellEveryone("realm_emoji", nil, event{"type": "realm_emoji", "op": "update", "realm_emoji": emojiMap(c.All)})
}

// realmEmojiLookup is the renderer's view of the active custom emoji:
// a name's image (Options.RealmEmoji).
func realmEmojiLookup(set realmEmojiSet) func(string) (string, bool) {
	if len(set) == 0 {
		return nil
	}
	return func(name string) (string, bool) {
		e, ok := set.active(name)
		if !ok {
			return "", false
		}
		return emojiURL(e), true
	}
}
