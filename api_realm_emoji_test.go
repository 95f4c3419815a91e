package main

import (
	"image/png"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// customEmoji is GET /realm/emoji's emoji, as a sees them.
func (e *testEnv) customEmoji(t *testing.T, a *account) map[string]any {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/realm/emoji", nil, a)
	wantAPISuccess(t, r)
	return object(r.body["emoji"])
}

func (e *testEnv) uploadEmoji(t *testing.T, a *account, name string, parts ...uploadPart) response {
	t.Helper()
	return e.upload(t, a, "/api/v1/realm/emoji/"+url.PathEscape(name), parts...)
}

func TestRealmEmoji_UploadShowReactDeactivateAsZulip(t *testing.T) {
	e := newTestEnv(t)
	bobQueue := e.registerQueue(t, &e.bob, url.Values{"event_types": {`["realm_emoji"]`}}).str("queue_id")
	// A member may add one (can_add_custom_emoji_group: role:members); its
	// name is stripped and its spaces become underscores.
	r := e.uploadEmoji(t, &e.alice, " party parrot ", uploadPart{"f", "parrot.png", "image/png", pngOf(t, 200, 100)})
	wantAPISuccess(t, r)
	list := e.customEmoji(t, &e.bob)
	if len(list) != 1 {
		t.Fatalf("GET /realm/emoji after one upload: got %v", list)
	}
	var id string
	var emoji map[string]any
	for k, v := range list {
		id, emoji = k, object(v)
	}
	src, _ := emoji["source_url"].(string)
	if emoji["id"] != id || emoji["name"] != "party_parrot" || emoji["deactivated"] != false || emoji["author_id"] != float64(e.alice.ID) ||
		emoji["still_url"] != nil || !strings.HasPrefix(src, "/user_avatars/2/emoji/images/") {
		t.Fatalf("the emoji: got %v", emoji)
	}
	got := e.pollNow(t, &e.bob, bobQueue, -1)
	if len(got) != 1 || got[0]["type"] != "realm_emoji" || got[0]["op"] != "update" || object(object(got[0]["realm_emoji"])[id])["name"] != "party_parrot" {
		t.Fatalf("bob's realm_emoji event: got %v", got)
	}
	// Served without credentials, 64 pixels square, as Zulip's.
	rec := e.fetch(t, nil, src)
	img, err := png.Decode(rec.Body)
	if rec.Code != 200 || err != nil || img.Bounds().Dx() != emojiSize || img.Bounds().Dy() != emojiSize {
		t.Fatalf("the emoji's image: got %d %v", rec.Code, err)
	}
	if rec := e.fetch(t, nil, strings.Replace(src, "/emoji/images/", "/emoji/images/0", 1)); rec.Code != 404 {
		t.Errorf("another name under emoji/images: got %d, want 404", rec.Code)
	}
	// register's realm_emoji is the same object.
	if reg := e.registerQueue(t, &e.bob, url.Values{"fetch_event_types": {`["realm_emoji"]`}}); object(object(reg.body["realm_emoji"])[id])["source_url"] != src {
		t.Errorf("register's realm_emoji: got %v", reg.body["realm_emoji"])
	}
	// In a message it is its image (make_realm_emoji).
	msg := e.sendText(t, e.bob, e.general, "hi :party_parrot:")
	m, _ := e.st.messageByIDForTest(msg)
	if want := `<p>hi <img alt=":party_parrot:" class="emoji" src="` + src + `" title="party parrot"></p>`; m.Rendered != want {
		t.Errorf("the rendered message: got %s, want %s", m.Rendered, want)
	}
	// A reaction by name is a realm_emoji reaction coded by the emoji's id.
	path := reactionsPath(msg)
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"party_parrot"}}, &e.alice))
	reactions := e.reactionsOn(t, &e.bob, msg)
	if len(reactions) != 1 || object(reactions[0])["emoji_code"] != id || object(reactions[0])["reaction_type"] != "realm_emoji" {
		t.Fatalf("the reaction: got %v", reactions)
	}
	other := e.sendText(t, e.bob, e.general, "next")
	wantAPIError(t, e.request(t, http.MethodPost, reactionsPath(other), url.Values{"emoji_name": {"parrot"}, "emoji_code": {id}, "reaction_type": {"realm_emoji"}}, &e.bob),
		400, "BAD_REQUEST", "Invalid custom emoji name.")
	// Only its author or an administrator deactivates it.
	wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/realm/emoji/party_parrot", nil, &e.bob), 400, "BAD_REQUEST", "Must be an organization administrator or emoji author")
	if object(e.customEmoji(t, &e.bob)[id])["deactivated"] != false {
		t.Fatal("a refused deactivation deactivated the emoji")
	}
	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/realm/emoji/party_parrot", nil, &e.alice))
	if object(e.customEmoji(t, &e.bob)[id])["deactivated"] != true {
		t.Fatal("the deactivated emoji: not listed as deactivated")
	}
	// The upload sweeper keeps the image of every emoji, deactivated ones too.
	if _, _, err := e.st.sweepUploads(time.Now().Add(365*24*time.Hour), time.Hour); err != nil {
		t.Fatal(err)
	}
	if rec := e.fetch(t, nil, src); rec.Code != 200 {
		t.Errorf("a deactivated emoji's image after a sweep: got %d, want 200 (old messages show it)", rec.Code)
	}
	wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/realm/emoji/party_parrot", nil, &e.alice), 404, "BAD_REQUEST", "Emoji 'party_parrot' does not exist")
	// A deactivated emoji makes no new reaction, but the one that exists
	// still takes votes; in new messages its name stays text.
	wantAPIError(t, e.request(t, http.MethodPost, reactionsPath(other), url.Values{"emoji_name": {"party_parrot"}, "emoji_code": {id}, "reaction_type": {"realm_emoji"}}, &e.bob),
		400, "BAD_REQUEST", "This custom emoji has been deactivated.")
	wantAPISuccess(t, e.request(t, http.MethodPost, path, url.Values{"emoji_name": {"party_parrot"}, "emoji_code": {id}, "reaction_type": {"realm_emoji"}}, &e.bob))
	if n := len(e.reactionsOn(t, &e.bob, msg)); n != 2 {
		t.Errorf("a vote for the deactivated emoji's reaction: %d reactions, want 2", n)
	}
	later, _ := e.st.messageByIDForTest(e.sendText(t, e.bob, e.general, ":party_parrot:"))
	if later.Rendered != "<p>:party_parrot:</p>" {
		t.Errorf("a deactivated emoji in a new message: got %s", later.Rendered)
	}
	// The name is free again.
	wantAPISuccess(t, e.uploadEmoji(t, &e.alice, "party_parrot", uploadPart{"f", "p.png", "image/png", pngOf(t, 10, 10)}))
	if n := len(e.customEmoji(t, &e.bob)); n != 2 {
		t.Errorf("after a new emoji of the old name: %d emoji, want 2", n)
	}
}

func TestRealmEmoji_RefusedUploadsChangeNothing(t *testing.T) {
	e := newTestEnv(t)
	guestUser, guestKey := mustCreateUser(t, e.st, "guest@example.com", roleGuest, false)
	guest := account{guestUser, guestKey}
	wantAPISuccess(t, e.uploadEmoji(t, &e.alice, "taken", uploadPart{"f", "t.png", "image/png", pngOf(t, 8, 8)}))
	image := uploadPart{"f", "e.png", "image/png", pngOf(t, 8, 8)}
	for _, c := range []struct {
		rule  string
		who   *account
		name  string
		parts []uploadPart
		msg   string
	}{
		{"guests may not", &guest, "xyz", []uploadPart{image}, "Not allowed for guest users"},
		{"bots may not", &e.bot, "xyz", []uploadPart{image}, "This endpoint does not accept bot requests."},
		{"a name ending in a dash", &e.alice, "x-", []uploadPart{image}, "Emoji names must end with either a letter or digit."},
		{"upper case", &e.alice, "Party", []uploadPart{image}, "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores."},
		{"a period", &e.alice, "a.b", []uploadPart{image}, "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores."},
		{"a name in use", &e.alice, "taken", []uploadPart{image}, "A custom emoji with this name already exists."},
		{"no file", &e.alice, "xyz", nil, "You must upload exactly one file."},
		{"two files", &e.alice, "xyz", []uploadPart{image, image}, "You must upload exactly one file."},
		{"a member overriding a built-in emoji", &e.alice, "smile", []uploadPart{image}, "Only administrators can override built-in emoji."},
		{"over 5 MiB", &e.alice, "xyz", []uploadPart{{"f", "big.png", "image/png", strings.Repeat("x", 5<<20+1)}}, "Uploaded file is larger than the allowed limit of 5 MiB"},
		{"not an image type", &e.alice, "xyz", []uploadPart{{"f", "a.txt", "text/plain", "hello"}}, "Invalid image format"},
		{"WebP, which zulite cannot decode", &e.alice, "xyz", []uploadPart{{"f", "a.webp", "image/webp", "RIFF"}}, "Invalid image format"},
		{"an image type over other bytes", &e.alice, "xyz", []uploadPart{{"f", "a.png", "image/png", "not a png"}}, "Could not decode image; did you upload an image file?"},
	} {
		r := e.uploadEmoji(t, c.who, c.name, c.parts...)
		wantAPIError(t, r, 400, "BAD_REQUEST", c.msg)
		if n := len(e.customEmoji(t, &e.bob)); n != 1 {
			t.Errorf("%s: %d emoji after the refusal, want 1", c.rule, n)
		}
	}
	// An administrator may override a built-in emoji.
	wantAPISuccess(t, e.uploadEmoji(t, &e.admin, "smile", image))
	// can_add_custom_emoji_group decides who adds them.
	admins := strconv.Itoa(groupAdministrators)
	wantAPISuccess(t, e.request(t, http.MethodPatch, "/api/v1/realm", url.Values{"can_add_custom_emoji_group": {`{"new":` + admins + `}`}}, &e.owner))
	wantAPIError(t, e.uploadEmoji(t, &e.alice, "mine", image), 400, "BAD_REQUEST", "Insufficient permission")
	wantAPISuccess(t, e.uploadEmoji(t, &e.admin, "theirs", image))
	if n := len(e.customEmoji(t, &e.bob)); n != 3 {
		t.Errorf("after the permission change: %d emoji, want 3", n)
	}
}

// messageByIDForTest reads a stored message.
func (s *store) messageByIDForTest(id uint64) (message, error) {
	var m message
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		m, err = messageByID(tx, id)
		return err
	})
	return m, err
}

// mustID is the id a successful creation answers.
func mustID(t *testing.T, r response) uint64 {
	t.Helper()
	wantAPISuccess(t, r)
	id, ok := r.body["id"].(float64)
	if !ok {
		t.Fatalf("no id in %s", r.raw)
	}
	return uint64(id)
}
