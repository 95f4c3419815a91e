package main

// Avatars. Every user has an avatar_url: an uploaded image (POST
// /users/me/avatar), else a small image zulite draws from the user id
// (served here: no call to Gravatar or anyone). A client that asks to
// compute Gravatar URLs itself (client_gravatar) gets null for users
// without an uploaded avatar, as Zulip answers it; that call is then the
// client's choice.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	_ "image/gif" // decoders for uploaded avatars
	_ "image/jpeg"
	"image/png"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	maxAvatarMiB       = 5          // Zulip's MAX_AVATAR_FILE_SIZE_MIB
	avatarSize         = 100        // Zulip's DEFAULT_AVATAR_SIZE
	mediumAvatarSize   = 500        // Zulip's MEDIUM_AVATAR_SIZE
	maxAvatarPixels    = 16_000_000 // larger images are refused before they are decoded
	defaultAvatarPixel = 100
)

// avatarImageTypes are the uploads zulite can decode.
var avatarImageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true}

// avatarVersion is the user's avatar_version: 1 until it changes.
func avatarVersion(u user) int { return max(1, u.AvatarVersion) }

// avatarURL is the user's avatar, relative to the server as Zulip gives
// uploaded ones: the upload, or the drawn default.
func avatarURL(u user, medium bool) string {
	version := "?version=" + strconv.Itoa(avatarVersion(u))
	switch {
	case medium && u.AvatarMedium != "":
		return "/user_avatars/" + uploadRealmID + "/" + u.AvatarMedium + ".png" + version
	case u.Avatar != "":
		return "/user_avatars/" + uploadRealmID + "/" + u.Avatar + ".png" + version
	}
	return "/user_avatars/default/" + strconv.FormatUint(u.ID, 10) + ".png" + version
}

// avatarSource is Zulip's avatar_source: "U" uploaded, "G" the default.
func avatarSource(u user) string {
	if u.Avatar != "" {
		return "U"
	}
	return "G"
}

// setAvatar serves POST /api/v1/users/me/avatar: exactly one image, at
// most 5 MiB, made into a 100-pixel and a 500-pixel square PNG, stored
// while the disk keeps its reserve (--upload-disk-reserve-mib).
func (s *server) setAvatar() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.admit(w, r)
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		data, ignored, err := s.receiveAvatar(w, r, u)
		if err != nil {
			writeError(w, s.log, r, err)
			return
		}
		if err := writeSuccess(w, data, ignored); err != nil {
			writeError(w, s.log, r, internalError(err))
		}
	})
}

func (s *server) receiveAvatar(w http.ResponseWriter, r *http.Request, u user) (any, []string, error) {
	const limit = maxAvatarMiB << 20
	if r.ContentLength > limit+uploadOverhead {
		return nil, nil, errAvatarTooLarge
	}
	up, err := readImageUpload(w, r, limit)
	switch {
	case errors.Is(err, errNotOneImage):
		return nil, nil, errOneAvatar
	case err != nil:
		return nil, nil, uploadBodyError(err, maxAvatarMiB)
	}
	p, img, contentType := up.params, up.image, up.contentType
	if len(img) > limit {
		return nil, nil, errAvatarTooLarge
	}
	if bare, _, _ := mime.ParseMediaType(contentType); !avatarImageTypes[bare] {
		return nil, nil, errInvalidImageFormat
	}
	small, medium, err := avatarImages(img)
	if err != nil {
		return nil, nil, err
	}
	// Below the disk reserve an avatar is refused as an upload is: Zulip's
	// avatars have no quota, nor an error of their own for it.
	want := int64(len(small) + len(medium))
	left, release, err := s.store.reserveUpload(u.ID, uploadQuota{}, s.uploads.reserve, want)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	if left < want {
		return nil, nil, errUploadQuota
	}
	var sums [2]string
	for i, encoded := range [][]byte{small, medium} {
		if sums[i], _, err = s.store.writeBlob(bytes.NewReader(encoded), int64(len(encoded))); err != nil {
			return nil, nil, err
		}
		defer s.store.releaseBlob(sums[i])
	}
	after, err := s.store.setAvatar(u, sums[0], sums[1])
	if err != nil {
		return nil, nil, err
	}
	return struct {
		AvatarURL string `json:"avatar_url"`
	}{avatarURL(after, false)}, p.ignored(), nil
}

// deleteAvatar serves DELETE /api/v1/users/me/avatar: back to the
// default avatar.
func (s *server) deleteAvatar(r *apiRequest) (any, error) {
	after, err := s.store.setAvatar(r.user, "", "")
	if err != nil {
		return nil, err
	}
	return struct {
		AvatarURL string `json:"avatar_url"`
	}{avatarURL(after, false)}, nil
}

// avatarImages decodes an uploaded image, refusing one too large to
// decode safely, and draws its centre square at both sizes as PNG.
func avatarImages(data []byte) (small, medium []byte, err error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, nil, errBadImage
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxAvatarPixels {
		return nil, nil, errImageTooBig
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, nil, errBadImage
	}
	for i, size := range []int{avatarSize, mediumAvatarSize} {
		var out bytes.Buffer
		if err := png.Encode(&out, squareThumbnail(src, size)); err != nil {
			return nil, nil, err
		}
		if i == 0 {
			small = out.Bytes()
		} else {
			medium = out.Bytes()
		}
	}
	return small, medium, nil
}

// squareThumbnail crops the image's centre square and scales it to size
// pixels, each output pixel the average of the source pixels it covers.
func squareThumbnail(src image.Image, size int) *image.NRGBA {
	b := src.Bounds()
	side := min(b.Dx(), b.Dy())
	x0, y0 := b.Min.X+(b.Dx()-side)/2, b.Min.Y+(b.Dy()-side)/2
	dst := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		sy0, sy1 := y0+y*side/size, y0+max((y+1)*side/size, y*side/size+1)
		for x := range size {
			sx0, sx1 := x0+x*side/size, x0+max((x+1)*side/size, x*side/size+1)
			var r, g, bl, a, n uint64
			for sy := sy0; sy < sy1; sy++ {
				for sx := sx0; sx < sx1; sx++ {
					c := color.NRGBAModel.Convert(src.At(sx, sy)).(color.NRGBA)
					r, g, bl, a, n = r+uint64(c.R), g+uint64(c.G), bl+uint64(c.B), a+uint64(c.A), n+1
				}
			}
			dst.SetNRGBA(x, y, color.NRGBA{uint8(r / n), uint8(g / n), uint8(bl / n), uint8(a / n)})
		}
	}
	return dst
}

// serveAvatar serves GET /user_avatars/{realm}/{file} without
// credentials, as Zulip serves avatars (they appear in e-mails and
// notifications): an uploaded avatar someone shows, or a drawn default.
func (s *server) serveAvatar() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		named(w, r)
		name, ok := strings.CutSuffix(r.PathValue("file"), ".png")
		realm := r.PathValue("realm")
		switch {
		case ok && realm == "default":
			id, err := strconv.ParseUint(name, 10, 64)
			if err != nil {
				break
			}
			w.Header().Set("Content-Type", "image/png")
			w.Header().Set("Cache-Control", "public, max-age=86400")
			png.Encode(w, defaultAvatar(id))
			return
		case ok && realm == uploadRealmID && isBlobName(name) && s.store.isAvatarBlob(name):
			if s.serveImageBlob(w, r, name) {
				return
			}
		}
		writeError(w, s.log, r, errNotFound)
	})
}

// imageUpload is a multipart form of one image file (an avatar, a custom
// emoji) and its other fields.
type imageUpload struct {
	params      *params
	image       []byte // at most limit+1 bytes: longer is too large
	contentType string
}

// errNotOneImage: the body is not a multipart form holding exactly one file.
var errNotOneImage = errors.New("not one image file")

// readImageUpload reads a multipart form of exactly one file, bounded by
// limit (and the form's overhead): errNotOneImage, or the reading's
// error for the caller to name (uploadBodyError).
func readImageUpload(w http.ResponseWriter, r *http.Request, limit int64) (imageUpload, error) {
	up := imageUpload{params: &params{used: map[string]bool{}, body: map[string][]string{}}}
	mediaType, mediaParams, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" || mediaParams["boundary"] == "" {
		return up, errNotOneImage
	}
	mr := multipart.NewReader(http.MaxBytesReader(w, r.Body, limit+uploadOverhead), mediaParams["boundary"])
	files := 0
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return up, err
		}
		if part.FileName() == "" {
			value, _ := io.ReadAll(io.LimitReader(part, defaultMaxBody))
			up.params.body[part.FormName()] = append(up.params.body[part.FormName()], string(value))
			continue
		}
		if files++; files > 1 {
			return up, errNotOneImage
		}
		if up.image, err = io.ReadAll(io.LimitReader(part, limit+1)); err != nil {
			return up, err
		}
		up.contentType = uploadContentType(part.Header.Get("Content-Type"), part.FileName())
	}
	if files != 1 {
		return up, errNotOneImage
	}
	return up, nil
}

// serveImageBlob serves a stored PNG (an avatar's, a custom emoji's) by
// its name, which is its content's hash, so it never changes: false when
// it cannot be opened.
func (s *server) serveImageBlob(w http.ResponseWriter, r *http.Request, name string) bool {
	f, err := s.store.openBlob(name)
	if err != nil {
		return false
	}
	defer f.Close()
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.ServeContent(w, r, "", time.Time{}, f)
	return true
}

// defaultAvatar draws a user's default avatar: a symmetric 5×5 pattern
// in one colour, both chosen by a hash of the user id.
func defaultAvatar(userID uint64) image.Image {
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], userID)
	sum := sha256.Sum256(append([]byte("zulite avatar "), id[:]...))
	fg := color.RGBA{64 + sum[0]%160, 64 + sum[1]%160, 64 + sum[2]%160, 255}
	img := image.NewPaletted(image.Rect(0, 0, defaultAvatarPixel, defaultAvatarPixel), color.Palette{color.RGBA{240, 240, 240, 255}, fg})
	const cell, margin = 16, 10
	for row := range 5 {
		for col := range 3 {
			if sum[3+row*3+col]&1 == 0 {
				continue
			}
			for _, c := range []int{col, 4 - col} {
				for y := margin + row*cell; y < margin+(row+1)*cell; y++ {
					for x := margin + c*cell; x < margin+(c+1)*cell; x++ {
						img.SetColorIndex(x, y, 1)
					}
				}
			}
		}
	}
	return img
}

// avatarState is register's own avatar fields.
func avatarState(state map[string]any, u user) {
	state["avatar_source"] = avatarSource(u)
	state["avatar_url"] = avatarURL(u, false)
	state["avatar_url_medium"] = avatarURL(u, true)
}

// publishAvatar tells every queue of the user's new avatar, as Zulip's
// realm_user update (zerver/actions/user_settings.py do_change_avatar_fields).
func (s *server) publishAvatar(c avatarChanged) {
	person := map[string]any{"user_id": c.User.ID, "avatar_source": avatarSource(c.User), "avatar_url": avatarURL(c.User, false),
		"avatar_url_medium": avatarURL(c.User, true), "avatar_version": avatarVersion(c.User)}
	e := event{"type": "realm_user", "op": "update", "person": person}
	s.events.tellEveryone("realm_user", nil, e)
}
