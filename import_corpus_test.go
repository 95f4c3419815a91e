package main

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The import of testdata/zulip-export, an export of Zulip 11 written by
// hand from Zulip's export code (zerver/lib/export.py): through the
// binary, as an administrator runs it, and then through the API, as each
// person sees the organisation afterwards.

// corpusDir is the checked-in export.
var corpusDir = filepath.Join("testdata", "zulip-export")

// corpusReport is what importing the corpus prints: every kind zulite
// left out, with its count.
const corpusReport = `imported: 9 users, 3 channels, 5 subscriptions, 11 messages, 7 personal flags, 4 reactions, 2 uploaded files, 1 avatars
also imported: 1 custom emoji, 0 linkifiers, 0 code playgrounds
not imported (zulite does not model it):
  1 group mentions: kept as mentions
  1 images in realm_icons/ (the organisation's icon and logo): zulite has none
  1 messages of private channels their readers have left: zulite shows them to the channel's subscribers only
  1 moderators: zulite has no moderator role, imported as members
  1 rows of zerver_userstatus
  3 system bots of Zulip (notification bot, …): imported as deactivated bots
users have no password or API key: give each one with 'zulite user password EMAIL' or 'zulite user key EMAIL'
`

// corpusServer imports the corpus with the binary into a new database,
// checks the report, gives the people of the corpus keys and serves the
// database; it answers the server and a client per person.
func corpusServer(t *testing.T) (*e2eServer, map[string]*client) {
	t.Helper()
	bin := e2eBuildBinary(t)
	db := filepath.Join(t.TempDir(), "z.db")
	r := e2eRunCLI(t, bin, "import", corpusDir, "--db", db)
	r.wantOK(t, "import "+corpusDir)
	if r.stdout != corpusReport {
		t.Errorf("the import's report:\n got %s\nwant %s", r.stdout, corpusReport)
	}
	keys := map[string]string{}
	for _, name := range []string{"iago", "hamlet", "prospero", "desdemona"} {
		k := e2eRunCLI(t, bin, "user", "key", name+"@acme.example", "--db", db)
		k.wantOK(t, "user key "+name)
		keys[name] = strings.TrimSpace(k.stdout)
	}
	srv := e2eRestartServer(t, bin, db)
	clients := map[string]*client{}
	for name, key := range keys {
		c := e2eNewClient(srv.baseURL, name+"@acme.example", key)
		t.Cleanup(c.closeIdle)
		clients[name] = c
	}
	return srv, clients
}

// seen is what GET /messages answers c for the narrow (JSON; "" for
// none), from the oldest: each message as "ID flag,flag".
func seen(t *testing.T, c *client, narrow string) (int, []string, map[string]any) {
	t.Helper()
	params := url.Values{"anchor": {"oldest"}, "num_before": {"0"}, "num_after": {"100"}}
	if narrow != "" {
		params.Set("narrow", narrow)
	}
	status, body, _ := c.do(t, "GET", "/api/v1/messages", params, e2ePython)
	var got []string
	messages, _ := body["messages"].([]any)
	for _, m := range messages {
		var flags []string
		for _, f := range object(m)["flags"].([]any) {
			flags = append(flags, f.(string))
		}
		got = append(got, fmt.Sprintf("%v %s", object(m)["id"], strings.Join(flags, ",")))
	}
	return status, got, body
}

// TestImport_ZulipExportEachPersonSeesTheirs: the corpus, imported with
// the binary, shows each person the messages Zulip showed them, with
// their flags and reactions; the private channel's message only to its
// subscriber, the group's direct message only to its members, a direct
// message to its two people; the uploaded files to those who can read a
// message that links them; and the report names every kind left out,
// with its count.
func TestImport_ZulipExportEachPersonSeesTheirs(t *testing.T) {
	srv, as := corpusServer(t)
	// Zulip's messages 100 to 110 are 1 to 11 here: 3 is Verona's (the
	// private channel), 4 the group's (iago, hamlet, prospero), 7 and 8
	// iago's and hamlet's direct messages, 9 a wildcard mention, 10 in
	// the empty topic ("general chat"), 11 the notification bot's.
	const (
		dmIagoHamlet = `[{"operator": "dm", "operand": [10, 11]}]`
		dmGroup      = `[{"operator": "dm", "operand": [10, 11, 12]}]`
		verona       = `[{"operator": "channel", "operand": 21}]`
		denmark      = `[{"operator": "channel", "operand": 20}]`
	)
	for _, c := range []struct {
		who, narrow string
		want        []string
	}{
		{"hamlet", "", []string{"1 read", "2 read,starred", "3 ", "4 ", "5 ", "6 read", "7 starred", "8 read", "9 stream_wildcard_mentioned", "10 read", "11 read"}},
		{"hamlet", `[{"operator": "channel", "operand": 20}, {"operator": "topic", "operand": "castle"}]`, []string{"1 read", "2 read,starred", "6 read", "9 stream_wildcard_mentioned"}},
		{"hamlet", `[{"operator": "channel", "operand": 20}, {"operator": "topic", "operand": ""}]`, []string{"10 read"}},
		{"hamlet", `[{"operator": "is", "operand": "starred"}]`, []string{"2 read,starred", "7 starred"}},
		{"hamlet", `[{"operator": "is", "operand": "unread"}]`, []string{"3 ", "4 ", "5 ", "7 starred", "9 stream_wildcard_mentioned"}},
		{"hamlet", dmIagoHamlet, []string{"7 starred", "8 read"}},
		{"hamlet", dmGroup, []string{"4 "}},
		{"hamlet", verona, []string{"3 "}},
		{"iago", "", []string{"1 read", "2 read,mentioned", "4 read", "5 read", "6 ", "7 read", "8 read,mentioned", "9 read,stream_wildcard_mentioned", "10 ", "11 read"}},
		{"iago", `[{"operator": "is", "operand": "mentioned"}]`, []string{"2 read,mentioned", "8 read,mentioned", "9 read,stream_wildcard_mentioned"}},
		{"iago", dmIagoHamlet, []string{"7 read", "8 read,mentioned"}},
		// Prospero joined Denmark at 5 and reads its history; he left
		// Verona, and its 3 with it (the report counts it).
		{"prospero", "", []string{"1 read", "2 read", "4 ", "5 read", "6 read", "9 read", "10 read", "11 read"}},
		{"prospero", dmGroup, []string{"4 "}},
		{"prospero", dmIagoHamlet, []string{"4 "}}, // with him, the group: dm's operand is the others
		{"prospero", `[{"operator": "dm", "operand": [10]}]`, nil},
		// Desdemona is subscribed to no channel: she starred 1 in Denmark,
		// public, a historical row, and reads Denmark's history, read.
		{"desdemona", "", []string{"1 read,starred,historical"}},
		{"desdemona", `[{"operator": "is", "operand": "starred"}]`, []string{"1 read,starred,historical"}},
		{"desdemona", denmark, []string{"1 read,starred,historical", "2 read,historical", "5 read,historical", "6 read,historical", "9 read,historical", "10 read,historical", "11 read,historical"}},
		{"desdemona", dmGroup, nil},
		{"desdemona", dmIagoHamlet, nil},
	} {
		status, got, body := seen(t, as[c.who], c.narrow)
		if status != http.StatusOK || !slices.Equal(got, c.want) {
			t.Errorf("%s, narrow %s: got %d %q (%v), want 200 %q", c.who, c.narrow, status, got, body["msg"], c.want)
		}
	}

	// Verona is private: its message is nobody's but its subscriber's,
	// not an owner's, not an administrator's, not one who left it (its
	// history is protected; Zulip too answers such a narrow with none).
	for _, who := range []string{"iago", "desdemona", "prospero"} {
		status, got, body := seen(t, as[who], verona)
		if status != http.StatusOK || len(got) != 0 {
			t.Errorf("%s, narrow to Verona: got %d %v %q, want 200 and no message", who, status, body["msg"], got)
		}
		_, all, _ := seen(t, as[who], "")
		if slices.ContainsFunc(all, func(m string) bool { return strings.HasPrefix(m, "3 ") }) {
			t.Errorf("%s sees Verona's message: %q", who, all)
		}
	}

	// Reactions: the custom emoji's (on 2) was left out.
	_, _, body := seen(t, as["hamlet"], "")
	reactions := map[string]string{}
	for _, m := range body["messages"].([]any) {
		var r []string
		for _, x := range object(m)["reactions"].([]any) {
			r = append(r, fmt.Sprintf("%v by %v", object(x)["emoji_name"], object(x)["user_id"]))
		}
		if r != nil {
			reactions[fmt.Sprint(object(m)["id"])] = strings.Join(r, ", ")
		}
	}
	if want := map[string]string{"1": "octopus by 11", "2": "partyparrot by 10", "4": "heart by 11", "8": "+1 by 10"}; !maps.Equal(reactions, want) {
		t.Errorf("reactions: got %v, want %v", reactions, want)
	}

	// The uploaded files, at the links their messages now carry.
	links := map[string]string{}
	for _, m := range body["messages"].([]any) {
		content := object(m)["content"].(string)
		for _, name := range []string{"plan.txt", "castle.png"} {
			if i := strings.Index(content, "/user_uploads/"); i >= 0 && strings.Contains(content, name) {
				link := content[i:]
				links[name] = link[:strings.Index(link, name)+len(name)]
			}
		}
	}
	castle, err := os.ReadFile(filepath.Join(corpusDir, "uploads", "5", "3f", "Xq2-Lm9_Rt4Vw8Yz1Bc6Dh0K", "castle.png"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		who, file string
		status    int
		want      string
	}{
		{"hamlet", "plan.txt", 200, "the plans"}, // its uploader, in Verona
		{"hamlet", "castle.png", 200, string(castle)},
		{"iago", "castle.png", 200, string(castle)},
		{"iago", "plan.txt", 403, ""}, // linked only in Verona
		{"desdemona", "castle.png", 403, ""},
		{"prospero", "castle.png", 403, ""},
	} {
		status, got := fetchFile(t, as[c.who], links[c.file])
		if status != c.status || (c.status == 200 && got != c.want) {
			t.Errorf("%s fetches %s (%s): got %d, %d bytes; want %d", c.who, c.file, links[c.file], status, len(got), c.status)
		}
	}

	// Hamlet's avatar is the 100-pixel image of avatars/.
	_, me, _ := as["hamlet"].do(t, "GET", "/api/v1/users/me", nil, e2ePython)
	avatar, err := os.ReadFile(filepath.Join(corpusDir, "avatars", "5", "3a7c1e9b52d04f86a1b0c2d3e4f5a6b7c8d9e0f1.png"))
	if err != nil {
		t.Fatal(err)
	}
	if status, got := fetchFile(t, as["hamlet"], fmt.Sprint(me["avatar_url"])); status != 200 || got != string(avatar) {
		t.Errorf("hamlet's avatar (%v): got %d, %d bytes; want 200 and the avatar's %d", me["avatar_url"], status, len(got), len(avatar))
	}

	// What each one set for their own view: topics muted, followed (the
	// empty topic) and unmuted in a muted channel, muted users, alert
	// words, as register tells them.
	for who, want := range map[string]string{
		"hamlet": `[[{"last_updated":1600000500,"stream_id":20,"topic_name":"castle","visibility_policy":1},{"last_updated":1600000502,"stream_id":21,"topic_name":"balcony","visibility_policy":2}],` +
			`[{"id":13,"timestamp":1600000701}],["dusk","king"]]`,
		"iago":      `[[{"last_updated":1600000501,"stream_id":20,"topic_name":"","visibility_policy":3}],[],["ghost"]]`,
		"prospero":  `[[],[{"id":14,"timestamp":1600000700}],[]]`,
		"desdemona": `[[],[],[]]`,
	} {
		status, reg, _ := as[who].do(t, "POST", "/api/v1/register", url.Values{"fetch_event_types": {`["user_topic","muted_users","alert_words"]`},
			"client_capabilities": {`{"empty_topic_name":true}`}}, e2ePython)
		if got := asJSON([]any{reg["user_topics"], reg["muted_users"], reg["alert_words"]}); status != http.StatusOK || got != want {
			t.Errorf("%s's topics, muted users and alert words: got %d %s, want 200 %s", who, status, got, want)
		}
	}
	if strings.Contains(srv.logs(), "level=ERROR") {
		t.Errorf("the server logged errors:\n%s", srv.logs())
	}
}

// fetchFile GETs a file route (a path) as c, answering the status and body.
func fetchFile(t *testing.T, c *client, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", c.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(c.email, c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data)
}
