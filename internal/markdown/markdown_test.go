package markdown

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// zulipCases are Zulip's own rendering fixtures within zulite's
// rendering (testdata/zulip_cases.json names the source).
type zulipCases struct {
	Source  string `json:"source"`
	Regular []struct {
		Name     string `json:"name"`
		Input    string `json:"input"`
		Expected string `json:"expected_output"`
		// TranslateEmoticons: rendered for a sender with that setting.
		TranslateEmoticons bool `json:"translate_emoticons"`
	} `json:"regular_tests"`
	Linkify [][3]string `json:"linkify_tests"`
}

// fixtureRealm is how Zulip's test suite renders its fixtures: in a
// realm at http://zulip.testserver.
const fixtureRealm = "http://zulip.testserver"

// renderHTML is the HTML of content rendered in the realm at realmURL.
func renderHTML(t testing.TB, content, realmURL string, r Resolver) string {
	t.Helper()
	out, err := Render(content, realmURL, r)
	if err != nil {
		t.Fatalf("rendering %q: %v", content, err)
	}
	return out.HTML
}

// fixedResolver answers from what a test gives it: every user, whatever
// the names and ids asked, the channels by name, and each topic's
// oldest message by topicStart when there is one.
type fixedResolver struct {
	users      []User
	channels   map[string]uint64
	topicStart func(channelID uint64, topic string) (uint64, bool)
}

func (f fixedResolver) Users(map[string]bool, map[uint64]bool) ([]User, error) {
	return f.users, nil
}

func (f fixedResolver) ChannelID(name string) (uint64, bool) {
	id, ok := f.channels[name]
	return id, ok
}

func (f fixedResolver) TopicStart(channelID uint64, topic string) (uint64, bool) {
	if f.topicStart == nil {
		return 0, false
	}
	return f.topicStart(channelID, topic)
}

// linkifyExpected is test_markdown.py's replaced(): the reference with
// the URL linked (http:// added to a bare domain, mailto: to an
// address).
func linkifyExpected(reference, url string) string {
	if !strings.Contains(reference, "%s") {
		return reference
	}
	href := url
	switch {
	case strings.HasPrefix(url, "http"):
	case strings.Contains(url, "@"):
		href = "mailto:" + url
	default:
		href = "http://" + url
	}
	return strings.Replace(reference, "%s", `<a href="`+href+`">`+url+`</a>`, 1)
}

// markdownFixtureMismatches renders every case and answers those that
// differ, with the number of cases.
func markdownFixtureMismatches(t *testing.T) (mismatches []string, total int) {
	raw, err := os.ReadFile("testdata/zulip_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases zulipCases
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases.Regular {
		total++
		out, err := RenderWith(c.Input, fixtureRealm, nil, Options{TranslateEmoticons: c.TranslateEmoticons})
		if err != nil {
			t.Fatalf("rendering %q: %v", c.Input, err)
		}
		if got := out.HTML; got != c.Expected {
			mismatches = append(mismatches, fmt.Sprintf("%s: input %q\n got  %q\n want %q", c.Name, c.Input, got, c.Expected))
		}
	}
	for _, c := range cases.Linkify {
		total++
		want := linkifyExpected(c[1], c[2])
		if got := renderHTML(t, c[0], fixtureRealm, nil); got != want {
			mismatches = append(mismatches, fmt.Sprintf("linkify %q\n got  %q\n want %q", c[0], got, want))
		}
	}
	return mismatches, total
}

// TestMarkdown_ZulipFixturesShare reports the share of Zulip's fixtures
// that zulite renders exactly as Zulip does, and fails below the share
// reached (so that a change that renders fewer of them right is seen).
func TestMarkdown_ZulipFixturesShare(t *testing.T) {
	mismatches, total := markdownFixtureMismatches(t)
	matched := total - len(mismatches)
	t.Logf("Zulip's rendering fixtures: %d of %d match exactly (%.1f%%)", matched, total, 100*float64(matched)/float64(total))
	for _, m := range mismatches {
		t.Log(m)
	}
	if minimum := 217; matched < minimum {
		t.Errorf("got %d exact matches, want at least %d", matched, minimum)
	}
}

// TestCheckRenderedHTML_RefusesWhatZuliteNeverWrites shows that the
// fuzz target's check would catch a tag, an attribute, a class or a
// scheme zulite does not write.
func TestCheckRenderedHTML_RefusesWhatZuliteNeverWrites(t *testing.T) {
	for _, bad := range []string{
		`<p><script>alert(1)</script></p>`,
		`<p><a href="javascript:alert(1)">x</a></p>`,
		`<p><a href=" JavaScript:alert(1)">x</a></p>`,
		`<p><a href="java&#x09;script:alert(1)">x</a></p>`,
		`<p><a href="data:text/html,x">x</a></p>`,
		`<p onclick="x">y</p>`,
		`<p><span class="evil">x</span></p>`,
		`<p><img src="http://evil/x.png"></p>`,
		`<!-- x --><p>y</p>`,
		`<p><iframe></iframe></p>`,
	} {
		if err := checkRenderedHTML(bad); err == nil {
			t.Errorf("checkRenderedHTML(%q) accepted it", bad)
		}
	}
	good := renderHTML(t, "**a** [b](http://c.d) :zulip: `e`\n\n| f |\n|:-:|\n| g |", fixtureRealm, nil)
	if err := checkRenderedHTML(good); err != nil {
		t.Errorf("checkRenderedHTML refused zulite's own %q: %v", good, err)
	}
}

// TestMarkdown_ZulipsRulesBeyondTheFixtures: what Zulip's own fixtures do
// not show (its test_markdown.py does), rendered by the same rules.
func TestMarkdown_ZulipsRulesBeyondTheFixtures(t *testing.T) {
	in := fixedResolver{users: []User{{ID: 7, FullName: "Alice", Active: true}, {ID: 8, FullName: "Gone", Active: false}},
		channels: map[string]uint64{"general": 3}}
	for _, c := range []struct{ rule, content, want string }{
		{"a scheme Zulip does not allow stays text", "[a](javascript:alert(1)) [b](data:text/html,x) [c](vbscript:x)",
			"<p>[a](javascript:alert(1)) [b](data:text/html,x) [c](vbscript:x)</p>"},
		{"a scheme in any case, behind white space", "[a]( JavaScript:alert(1))", "<p>[a]( JavaScript:alert(1))</p>"},
		{"HTML is text", `<img src=x onerror="alert(1)">`, `<p>&lt;img src=x onerror="alert(1)"&gt;</p>`},
		{"a link's title", `[a](http://x.com "t")`, `<p><a href="http://x.com" title="t">a</a></p>`},
		{"no scheme means http", "[a](example.com)", `<p><a href="http://example.com">a</a></p>`},
		{"a quoted mention is silent", "```quote\n@**Alice**\n```", "<blockquote>\n<p><span class=\"user-mention silent\" data-user-id=\"7\">Alice</span></p>\n</blockquote>"},
		{"a deactivated user's mention is silent", "@**Gone**", `<p><span class="user-mention silent" data-user-id="8">Gone</span></p>`},
		{"the empty topic", "#**general>**", `<p><a class="stream-topic" data-stream-id="3" href="/#narrow/channel/3-general/topic/">#general &gt; <em>general chat</em></a></p>`},
		{"a message link", "#**general>t@12**", `<p><a class="message-link" href="/#narrow/channel/3-general/topic/t/near/12">#general &gt; t @ 💬</a></p>`},
		{"a spoiler's header is Markdown", "```spoiler **Big** news\nhidden\n```", "<div class=\"spoiler-block\"><div class=\"spoiler-header\">\n<p><strong>Big</strong> news</p>\n</div><div class=\"spoiler-content\" aria-hidden=\"true\">\n<p>hidden</p>\n</div></div>"},
		{"a fenced block names its language", "```js\nx < 1\n```", "<div class=\"codehilite\" data-code-language=\"JavaScript\"><pre><span></span><code>x &lt; 1\n</code></pre></div>"},
	} {
		if got := renderHTML(t, c.content, "http://zulite.test", in); got != c.want {
			t.Errorf("%s: %q rendered %q, want %q", c.rule, c.content, got, c.want)
		}
	}
}

// askingResolver knows two accounts of one name and one channel, and
// records what the renderer asks.
type askingResolver struct {
	names    []map[string]bool
	ids      []map[uint64]bool
	channels []string
}

func (a *askingResolver) Users(names map[string]bool, ids map[uint64]bool) ([]User, error) {
	a.names, a.ids = append(a.names, names), append(a.ids, ids)
	return []User{{ID: 7, FullName: "Alice", Active: true}, {ID: 9, FullName: "alice", Active: true}}, nil
}

func (a *askingResolver) ChannelID(name string) (uint64, bool) {
	a.channels = append(a.channels, name)
	return 3, name == "general"
}

func (a *askingResolver) TopicStart(uint64, string) (uint64, bool) { return 0, false }

// TestMarkdown_AsksTheResolverOnlyForWhatTheMessageNames: the users of
// every mention in one question, each channel name of its links until
// one is found, nothing for a message without them; of two accounts of
// one name the oldest is the one meant.
func TestMarkdown_AsksTheResolverOnlyForWhatTheMessageNames(t *testing.T) {
	a := &askingResolver{}
	got := renderHTML(t, "@**ALICE** @_**Bob|8** @**|12** #**general>lunch** #**general** #**a>b@3**", "", a)
	if !strings.Contains(got, `data-user-id="7">@Alice</span>`) {
		t.Errorf("@**ALICE** rendered %q, want the oldest Alice (7)", got)
	}
	wantNames := []map[string]bool{{"alice": true, "bob": true}}
	wantIDs := []map[uint64]bool{{8: true, 12: true}}
	if !reflect.DeepEqual(a.names, wantNames) || !reflect.DeepEqual(a.ids, wantIDs) {
		t.Errorf("asked for users %v %v, want %v %v", a.names, a.ids, wantNames, wantIDs)
	}
	if want := []string{"general>lunch", "general", "a>b@3", "a"}; !slices.Equal(a.channels, want) {
		t.Errorf("asked for channels %q, want %q", a.channels, want)
	}
	a = &askingResolver{}
	renderHTML(t, "no **mention** here, a@b.c #general @all", "", a)
	if a.names != nil || a.channels != nil {
		t.Errorf("a message naming nothing asked for users %v and channels %q, want nothing", a.names, a.channels)
	}
}

// BenchmarkRenderMarkdown: a typical message, Zulip's in-scope fixtures
// one after the other, and the slowest 10 KB message found (e-mail
// addresses, each linked, each a restart of the link pattern).
func BenchmarkRenderMarkdown(b *testing.B) {
	raw, err := os.ReadFile("testdata/zulip_cases.json")
	if err != nil {
		b.Fatal(err)
	}
	var cases zulipCases
	if err := json.Unmarshal(raw, &cases); err != nil {
		b.Fatal(err)
	}
	b.Run("typical", func(b *testing.B) {
		msg := "Hi @**Alice**, the **build** is green: see https://ci.example.com/runs/42 :tada:\n\n* `make test`\n* `make lint`"
		for b.Loop() {
			Render(msg, fixtureRealm, nil)
		}
	})
	b.Run("fixtures", func(b *testing.B) {
		for b.Loop() {
			for _, c := range cases.Regular {
				Render(c.Input, fixtureRealm, nil)
			}
		}
	})
	b.Run("worst-10KB", func(b *testing.B) {
		msg := strings.Repeat("a@b.c ", 1600)
		for b.Loop() {
			Render(msg, fixtureRealm, nil)
		}
	})
}

// groupResolver is fixedResolver that knows user groups too.
type groupResolver struct {
	fixedResolver
	groups []UserGroup
}

func (g groupResolver) UserGroups(names map[string]bool) ([]UserGroup, error) {
	var out []UserGroup
	for _, group := range g.groups {
		if names[strings.ToLower(group.Name)] {
			out = append(out, group)
		}
	}
	return out, nil
}

// TestMarkdown_UserGroupMentions: @*group* and silent @_*group* as
// Zulip's UserGroupMentionPattern renders them (its markdown fixtures:
// `<span class="user-group-mention" data-user-group-id="2">@Backend</span>`),
// a name no group has is left to the patterns after it, and only a loud mention counts.
func TestMarkdown_UserGroupMentions(t *testing.T) {
	in := groupResolver{groups: []UserGroup{{ID: 9, Name: "Backend"}, {ID: 10, Name: "hamletcharacters"}}}
	for _, c := range []struct {
		content, want string
		mentioned     []int
	}{
		{"User group mention: @*backend*", `<p>User group mention: <span class="user-group-mention" data-user-group-id="9">@Backend</span></p>`, []int{9}},
		{"silent: @_*hamletcharacters*", `<p>silent: <span class="user-group-mention silent" data-user-group-id="10">hamletcharacters</span></p>`, nil},
		{"@*nobody here*", `<p>@<em>nobody here</em></p>`, nil}, // not a group: the emphasis pattern has it
		{"mail@*backend*", `<p>mail@<em>backend</em></p>`, nil},
		{"> @*backend*", "<blockquote>\n<p><span class=\"user-group-mention silent\" data-user-group-id=\"9\">Backend</span></p>\n</blockquote>", nil},
		{"**see @*backend***", `<p><strong>see <span class="user-group-mention" data-user-group-id="9">@Backend</span></strong></p>`, []int{9}}, // inside strong
		{"(@*Backend*)", `<p>(<span class="user-group-mention" data-user-group-id="9">@Backend</span>)</p>`, []int{9}},
	} {
		r, err := Render(c.content, "http://zulite.test", in)
		if err != nil {
			t.Fatal(err)
		}
		if r.HTML != c.want || !slices.Equal(r.MentionedGroupIDs, c.mentioned) {
			t.Errorf("%q rendered %q mentioning %v, want %q mentioning %v", c.content, r.HTML, r.MentionedGroupIDs, c.want, c.mentioned)
		}
	}
}
