package main

// Moving from Zulip: `zulite import DIR` reads a Zulip realm export (made
// by `manage.py export`, by `zulite export`, or by one of Zulip's
// converters) into a new, empty database, and prints what it brought
// over and what zulite cannot hold. DIR may be the tarball `manage.py
// export` leaves (import_tarball.go).
//
// Direct messages become conversations (store_dms.go): a message to a
// personal recipient is its sender's and that user's, one to a group
// (huddle) its members', read from the group's subscriptions as Zulip's
// own import reads them.
//
// Users and channels keep their Zulip ids (so the user ids in rendered
// mentions still name who they named), and their buckets' sequences
// are moved past the largest. Messages are numbered anew from 1, in the
// order of their Zulip ids, as Zulip's own import numbers them anew:
// zulite's message ids are dense (store_channel_figures.go searches them
// by time), and an export's are not (other organisations' messages,
// deleted ones, direct messages left out). The old ids, in order, go to
// a temporary file, so that a reaction's message is found by a binary
// search there, not in a map in memory. Messages keep Zulip's rendering
// of them.
//
// Every file of the export is opened through one os.Root on its
// directory (zulipexport's reader), so that no path in it, by .. or through a
// symlink, reads a file outside it: a hostile export's uploads/ or
// avatars/records.json naming another server's zuliprc would have made
// it an upload its readers download. Such an export is refused whole,
// naming the record: it is not one Zulip wrote, and what else in it was
// made up cannot be told.
//
// The import makes the database file and its upload directory, and
// refuses to start when either is there already; an import that fails
// removes both, so that it leaves nothing and the next attempt starts
// from nothing.
//
// Every file is read as a stream (json.Decoder, a row at a time), and
// what is held in memory is the realm's small tables (users, channels,
// recipients, subscriptions), a state of a few bytes per (user,
// channel), and one message file's (message id, channel) pairs and
// per-user rows, Zulip writing 1000 messages a file: memory does not grow
// with the number of messages (figures in the notes).
//
// Unread state is written as unread.go keeps it, per subscription: the
// watermark at the newest message read, the unread ones below it in
// unread_below, nothing in read_above (importedPair.take), so that
// scattered unread messages cost their own ids and nothing for the read
// ones. A subscription starts just below the first message the user
// received (Zulip's first UserMessage row); one with nothing unread at
// the end is marked read whole (readAll).

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.etcd.io/bbolt"

	"zulite/internal/zulipexport"
)

// importBatch is how many rows one write transaction takes.
const importBatch = 5000

// runImport imports the export at path, a directory or the tarball
// `manage.py export` leaves, into o.DB, which must be new; a failed import
// removes the database file and upload directory it made.
func runImport(path string, o options, stdout io.Writer) (err error) {
	if conn, err := net.DialTimeout("unix", socketPath(o.DB), lockTimeout); err == nil {
		conn.Close()
		return fmt.Errorf("import: a server is using %s: stop it, and import into a new database file", o.DB)
	}
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() {
		_, err = os.Stat(filepath.Join(path, "realm.json"))
	}
	if err != nil {
		return fmt.Errorf("import %s: no realm.json: %w", path, err)
	}
	if err := createDatabaseFile(o.DB); err != nil {
		return err
	}
	defer removeFailedImport(o.DB, &err)
	dir := path
	if !fi.IsDir() {
		var unpacked string
		dir, unpacked, err = unpackExport(path, o.DB)
		if unpacked != "" {
			defer os.RemoveAll(unpacked)
		}
		if err != nil {
			return fmt.Errorf("import %s: %w", path, err)
		}
	}
	st, err := openStore(o.DB, lockTimeout)
	if err != nil {
		return err
	}
	report, err := st.importZulip(dir)
	if closeErr := st.close(); err == nil && closeErr != nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("import %s: %w", path, err)
	}
	fmt.Fprint(stdout, report.String())
	return nil
}

// removeFailedImport, deferred, removes the database file and upload
// directory of an import that failed: one that returned an error, or
// one that panicked (whose error is still nil), before the panic goes on.
func removeFailedImport(db string, err *error) {
	p := recover()
	if p != nil || *err != nil {
		os.Remove(db)
		os.RemoveAll(uploadsDir(db))
	}
	if p != nil {
		panic(p)
	}
}

// createDatabaseFile makes the import's database file, empty (bbolt lays
// it out when it opens it), refusing one that is there already, or an
// upload directory without it: another database's uploaded files.
func createDatabaseFile(path string) error {
	if _, err := os.Lstat(uploadsDir(path)); err == nil {
		return fmt.Errorf("import: %s exists: it holds another database's uploaded files; import into a new database file", uploadsDir(path))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("import: %s exists: import only into a new database file", path)
	}
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return f.Close()
}

// importReport is what an import brought over and what it left.
type importReport struct {
	Users, Channels, Subscriptions, Messages, Flags, Reactions, Attachments, Avatars int
	Emoji, Linkifiers, Playgrounds                                                   int
	// What zulite cannot hold, in words, with counts.
	left map[string]int
}

func (r *importReport) leave(what string, n int) {
	if n == 0 {
		return
	}
	if r.left == nil {
		r.left = map[string]int{}
	}
	r.left[what] += n
}

func (r importReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "imported: %d users, %d channels, %d subscriptions, %d messages, %d personal flags, %d reactions, %d uploaded files, %d avatars\n",
		r.Users, r.Channels, r.Subscriptions, r.Messages, r.Flags, r.Reactions, r.Attachments, r.Avatars)
	if r.Emoji > 0 || r.Linkifiers > 0 || r.Playgrounds > 0 {
		fmt.Fprintf(&b, "also imported: %d custom emoji, %d linkifiers, %d code playgrounds\n", r.Emoji, r.Linkifiers, r.Playgrounds)
	}
	const credentials = "users have no password or API key: give each one with 'zulite user password EMAIL' or 'zulite user key EMAIL'\n"
	if len(r.left) == 0 {
		b.WriteString("nothing left out\n")
		b.WriteString(credentials)
		return b.String()
	}
	b.WriteString("not imported (zulite does not model it):\n")
	keys := make([]string, 0, len(r.left))
	for k := range r.left {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %d %s\n", r.left[k], k)
	}
	b.WriteString(credentials)
	return b.String()
}

// importedPair is the import's state of one subscription.
type importedPair struct {
	started   bool // a row has been seen: the watermark is set below it
	anyUnread bool
	watermark uint64
	pending   uint64 // the first unread message above the watermark, 0 for none
	// historicalUnread: messages from before the subscription that the
	// user marked unread (Zulip's historical rows without the read flag),
	// in order; they join the unread ids below the watermark at the end.
	historicalUnread []uint64
}

// importer carries an import's state.
type importer struct {
	s      *store
	root   *os.Root // the export's directory
	report importReport
	// users by id; channelOf: a stream recipient id → channel id.
	users      map[uint64]bool
	channelOf  map[uint64]uint64
	recipients map[uint64]zulipexport.Recipient
	clients    map[uint64]string
	pairs      map[[2]uint64]*importedPair
	channels   map[uint64]bool
	private    map[uint64]bool // the private channels
	// oldIDs is the temporary file of the imported messages' Zulip ids,
	// 8 bytes each, the nth holding message n's; lastOld the last written.
	// huddles are the members of each direct-message group, by its
	// recipient id; conversations the conversations made, by their
	// participants' ids (encodeIDs).
	huddles       map[uint64][]uint64
	conversations map[string]uint64
	// paths maps an upload's Zulip path id to its path id here.
	paths   map[string]string
	oldIDs  *os.File
	written *bufio.Writer
	lastOld uint64
	nextID  uint64
	// The organisation's custom emoji, linkifiers and playgrounds as
	// realm.json has them, and the emoji imported, by id
	// (import_realm_config.go).
	emoji          []importedEmoji
	linkifierRows  []importedLinkifier
	playgroundRows []playground
	emojiIDs       map[string]bool
}

// importZulip runs the import.
func (s *store) importZulip(dir string) (importReport, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return importReport{}, err
	}
	defer root.Close()
	x := &importer{s: s, root: root, users: map[uint64]bool{}, channelOf: map[uint64]uint64{}, recipients: map[uint64]zulipexport.Recipient{},
		clients: map[uint64]string{}, paths: map[string]string{}, huddles: map[uint64][]uint64{}, conversations: map[string]uint64{}, pairs: map[[2]uint64]*importedPair{}, channels: map[uint64]bool{}, private: map[uint64]bool{}}
	empty := true
	s.view(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketUsers, bucketChannels, bucketMessages} {
			if k, _ := tx.Bucket(b).Cursor().First(); k != nil {
				empty = false
			}
		}
		return nil
	})
	if !empty {
		return x.report, errors.New("the database is not empty: import only into a new database file")
	}
	if x.oldIDs, err = os.CreateTemp(filepath.Dir(s.path), ".import-ids-*"); err != nil {
		return x.report, err
	}
	defer os.Remove(x.oldIDs.Name())
	defer x.oldIDs.Close()
	x.written = bufio.NewWriter(x.oldIDs)
	// The file is new: a failed import is started again from nothing, so
	// the commits need not reach the disk one by one; it is synced once,
	// at the end, before the import reports success.
	s.db.NoSync = true
	defer func() { s.db.NoSync = false }()
	steps := []func() error{x.realm, x.attachments, x.messages, x.finishUnread, x.customEmoji, x.reactions, x.avatars, x.leftImages}
	for _, step := range steps {
		if err := step(); err != nil {
			return x.report, err
		}
	}
	return x.report, s.db.Sync()
}

// importedDefault is a row of zerver_defaultstream: a default channel.
type importedDefault struct {
	Stream uint64 `json:"stream"`
}

// realmTablesRead are the tables of realm.json that the import reads or
// has nothing to take from; any other table with rows is reported.
var realmTablesRead = map[string]bool{
	"zerver_realm": true, "zerver_userprofile": true, "zerver_userprofile_mirrordummy": true, "zerver_userprofile_crossrealm": true,
	"zerver_stream": true, "zerver_recipient": true, "zerver_subscription": true, "zerver_client": true, "zerver_reaction": true,
	// Bookkeeping zulite derives or does not need.
	"zerver_realmauditlog": true, "zerver_realmauthenticationmethod": true, "zerver_usergroup": true,
	"zerver_namedusergroup": true, "zerver_usergroupmembership": true, "zerver_groupgroupmembership": true,
	"zerver_useractivity": true, "zerver_useractivityinterval": true, "zerver_userpresence": true,
	"zerver_realmuserdefault": true, "zerver_onboardingstep": true, "zerver_huddle": true,
	"zerver_presencesequence": true, "zerver_realmexport": true, "zerver_onboardingusermessage": true,
}

// realm reads realm.json's users, channels and subscriptions and writes
// them in one transaction.
func (x *importer) realm() error {
	var users []zulipexport.User
	var streams []zulipexport.Stream
	var subs []zulipexport.Subscription
	defaults := map[uint64]bool{} // zerver_defaultstream's channels
	var snippets []importedSnippet
	var views []importedView // zerver_usertopic's, zerver_muteduser's, zerver_alertword's rows
	crossrealm := map[uint64]bool{}
	var fields []profileField
	var values []importedProfileValue
	var userDefaults map[string]json.RawMessage // nil: none in the export
	err := zulipexport.ReadTablesAndValues(x.root, "realm.json", func(name string, dec *json.Decoder) (bool, error) {
		switch name {
		case "zerver_customprofilefield":
			return true, zulipexport.ReadRows(dec, func(f importedProfileField) error {
				fields = append(fields, profileField{ID: f.ID, Name: f.Name, Type: f.FieldType, Hint: f.Hint, FieldData: f.FieldData, Order: f.Order,
					Required: f.Required, EditableByUser: f.EditableByUser == nil || *f.EditableByUser, DisplayInProfileSummary: f.DisplayInProfileSummary})
				return nil
			})
		case "zerver_realmuserdefault":
			return true, zulipexport.ReadRows(dec, func(row map[string]json.RawMessage) error {
				userDefaults = importedUserDefaults(row)
				return nil
			})
		case "zerver_customprofilefieldvalue":
			return true, zulipexport.ReadRows(dec, func(v importedProfileValue) error { values = append(values, v); return nil })
		case "zerver_userprofile", "zerver_userprofile_mirrordummy", "zerver_userprofile_crossrealm":
			return true, zulipexport.ReadRows(dec, func(u zulipexport.User) error {
				if name == "zerver_userprofile_crossrealm" {
					crossrealm[u.ID] = true
				}
				users = append(users, u)
				return nil
			})
		case "zerver_stream":
			return true, zulipexport.ReadRows(dec, func(s zulipexport.Stream) error { streams = append(streams, s); return nil })
		case "zerver_defaultstream":
			return true, zulipexport.ReadRows(dec, func(d importedDefault) error { defaults[d.Stream] = true; return nil })
		case "zerver_recipient":
			return true, zulipexport.ReadRows(dec, func(r zulipexport.Recipient) error { x.recipients[r.ID] = r; return nil })
		case "zerver_subscription":
			return true, zulipexport.ReadRows(dec, func(s zulipexport.Subscription) error { subs = append(subs, s); return nil })
		case "zerver_client":
			return true, zulipexport.ReadRows(dec, func(c zulipexport.Client) error { x.clients[c.ID] = c.Name; return nil })
		case "zerver_savedsnippet":
			return true, zulipexport.ReadRows(dec, func(sn importedSnippet) error { snippets = append(snippets, sn); return nil })
		case "zerver_usertopic", "zerver_muteduser", "zerver_alertword":
			return true, zulipexport.ReadRows(dec, func(r importedView) error { r.table = name; views = append(views, r); return nil })
		}
		if read, err := x.readRealmConfig(name, dec); read || err != nil { // import_realm_config.go
			return read, err
		}
		if realmTablesRead[name] {
			return false, nil
		}
		n, err := zulipexport.CountRows(dec)
		x.report.leave("rows of "+name, n)
		return true, err
	}, x.realmValue)
	if err != nil {
		return err
	}
	for _, r := range x.recipients {
		if r.Type == recipientChannel {
			x.channelOf[r.ID] = r.TypeID
		}
	}
	profiles := profilesOf(fields, values, &x.report)
	return x.s.updateGuarded(func(tx *bbolt.Tx) error {
		if err := putProfileFields(tx, fields); err != nil {
			return err
		}
		if len(userDefaults) > 0 {
			if err := putJSON(tx.Bucket(bucketMeta), keyRealmUserDefaults, userDefaults); err != nil {
				return err
			}
		}
		usersB, emails := tx.Bucket(bucketUsers), tx.Bucket(bucketUserEmails)
		var maxUser uint64
		for _, zu := range users {
			email := zu.DeliveryEmail
			if email == "" {
				email = zu.Email
			}
			if emails.Get(emailKey(email)) != nil || x.users[zu.ID] {
				return fmt.Errorf("user %d: e-mail %q or id used twice", zu.ID, email)
			}
			u := user{ID: zu.ID, Email: email, FullName: zu.FullName, Role: zu.Role, Bot: zu.IsBot, Active: zu.IsActive, Joined: zulipexport.UnixSeconds(zu.DateJoined)}
			switch {
			case crossrealm[zu.ID]:
				u.Bot, u.Active, u.Role = true, false, roleMember
				x.report.leave("system bots of Zulip (notification bot, …): imported as deactivated bots", 1)
			case zu.IsMirrorDummy:
				u.Active = false
				x.report.leave("mirror-dummy users: imported as deactivated users", 1)
			}
			switch u.Role {
			case roleOwner, roleAdmin, roleMember, roleGuest:
			case 300: // moderator
				u.Role = roleMember
				x.report.leave("moderators: zulite has no moderator role, imported as members", 1)
			default:
				u.Role = roleMember
			}
			u.Profile = profiles[u.ID]
			if err := putUser(tx, u); err != nil {
				return err
			}
			if err := emails.Put(emailKey(email), itob(u.ID)); err != nil {
				return err
			}
			x.users[u.ID] = true
			maxUser = max(maxUser, u.ID)
			x.report.Users++
		}
		if err := usersB.SetSequence(maxUser); err != nil {
			return err
		}
		channelsB, names := tx.Bucket(bucketChannels), tx.Bucket(bucketChannelNames)
		var maxChannel uint64
		for _, zs := range streams {
			if names.Get(nameKey(zs.Name)) != nil || x.channels[zs.ID] {
				return fmt.Errorf("channel %d: name %q or id used twice", zs.ID, zs.Name)
			}
			ch := channel{ID: zs.ID, Name: zs.Name, Description: zs.Description, Private: zs.InviteOnly, Created: zulipexport.UnixSeconds(zs.DateCreated)}
			if zs.Creator != nil && x.users[*zs.Creator] {
				ch.CreatorID = *zs.Creator
			}
			// Archived, it stays archived; a default channel, it stays
			// one, unless archived (do_deactivate_stream takes an archived
			// channel out of the defaults).
			ch.Archived, ch.Default = zs.Deactivated, defaults[zs.ID] && !zs.Deactivated
			if zs.IsWebPublic {
				x.report.leave("web-public channels: imported as public channels", 1)
			}
			if err := putJSON(channelsB, itob(ch.ID), ch); err != nil {
				return err
			}
			if err := names.Put(nameKey(ch.Name), itob(ch.ID)); err != nil {
				return err
			}
			x.channels[ch.ID], x.private[ch.ID] = true, ch.Private
			maxChannel = max(maxChannel, ch.ID)
			x.report.Channels++
		}
		if err := channelsB.SetSequence(maxChannel); err != nil {
			return err
		}
		for _, zs := range subs {
			if r := x.recipients[zs.Recipient]; r.Type == zulipexport.RecipientHuddle && x.users[zs.UserProfile] {
				x.huddles[zs.Recipient] = append(x.huddles[zs.Recipient], zs.UserProfile)
			}
			channelID, isChannel := x.channelOf[zs.Recipient]
			if !isChannel || !zs.Active || !x.users[zs.UserProfile] || !x.channels[channelID] {
				continue // a user's own recipient, a group's, or a channel left
			}
			key := [2]uint64{zs.UserProfile, channelID}
			if x.pairs[key] != nil {
				continue
			}
			color := zs.Color
			if color == "" {
				color = channelColor(channelID)
			}
			sub := subscription{Color: color, Muted: zs.IsMuted, PinToTop: zs.PinToTop, DesktopNotifications: zs.DesktopNotifications,
				AudibleNotifications: zs.AudibleNotifications, PushNotifications: zs.PushNotifications,
				EmailNotifications: zs.EmailNotifications, WildcardMentionsNotify: zs.WildcardMentionsNotify}
			if err := putJSON(tx.Bucket(bucketSubscriptions), append(itob(key[0]), itob(key[1])...), sub); err != nil {
				return err
			}
			if err := tx.Bucket(bucketSubscribers).Put(append(itob(key[1]), itob(key[0])...), itob(0)); err != nil {
				return err
			}
			if err := startUnread(tx, key[0], key[1], 0); err != nil {
				return err
			}
			x.pairs[key] = &importedPair{}
			x.report.Subscriptions++
		}
		if err := x.importSnippets(tx, snippets); err != nil {
			return err
		}
		if err := x.importLinkifiers(tx); err != nil {
			return err
		}
		return x.importViews(tx, views)
	})
}

// importedSnippet is a row of zerver_savedsnippet.
type importedSnippet struct {
	ID          uint64   `json:"id"`
	UserProfile uint64   `json:"user_profile"`
	Title       string   `json:"title"`
	Content     string   `json:"content"`
	DateCreated *float64 `json:"date_created"`
}

// importSnippets keeps each user's saved snippets with their ids, as
// Zulip's import_realm does; one of a user not imported is left out.
func (x *importer) importSnippets(tx *bbolt.Tx, snippets []importedSnippet) error {
	b := tx.Bucket(bucketSavedSnippets)
	var maxID uint64
	for _, zs := range snippets {
		if !x.users[zs.UserProfile] || zs.ID == 0 {
			x.report.leave("saved snippets of users not imported", 1)
			continue
		}
		sn := savedSnippet{Title: zs.Title, Content: zs.Content}
		if zs.DateCreated != nil {
			sn.Created = *zs.DateCreated
		}
		if err := putJSON(b, userItemKey(zs.UserProfile, zs.ID), sn); err != nil {
			return err
		}
		maxID = max(maxID, zs.ID)
	}
	return b.SetSequence(maxID)
}

// importedView is a row of what a user set for their own view, of
// zerver_usertopic (stream or recipient, topic_name, last_updated,
// visibility_policy), zerver_muteduser (muted_user, date_muted) or
// zerver_alertword (word), read as import_realm.py reads them
// (re_map_foreign_keys on user_profile, stream, recipient and
// muted_user: users and channels keep their ids here).
type importedView struct {
	table       string
	UserProfile uint64  `json:"user_profile"`
	Stream      uint64  `json:"stream"`
	Recipient   uint64  `json:"recipient"`
	TopicName   string  `json:"topic_name"`
	LastUpdated float64 `json:"last_updated"`
	Policy      int     `json:"visibility_policy"`
	MutedUser   uint64  `json:"muted_user"`
	DateMuted   float64 `json:"date_muted"`
	Word        string  `json:"word"`
}

// importViews writes each user's muted, unmuted and followed topics,
// muted users and alert words as the API would have left them: a topic
// once whatever its case, at most maxUserTopics a user, a word once
// whatever its case, at most maxAlertWords a user. A row of a user or a
// channel not imported, or past a bound, is named in the report.
func (x *importer) importViews(tx *bbolt.Tx, rows []importedView) error {
	topics := tx.Bucket(bucketUserTopics)
	counts := map[uint64]uint64{}
	words := map[uint64][]string{}
	seenTopic, seenWord := map[string]bool{}, map[string]bool{} // user ‖ folded topic, user ‖ lower-cased word
	var err error
	for _, r := range rows {
		channelID := r.Stream
		if channelID == 0 {
			channelID = x.channelOf[r.Recipient]
		}
		key := userTopicKey(r.UserProfile, channelID, r.TopicName)
		word := string(itob(r.UserProfile)) + strings.ToLower(r.Word)
		switch {
		case !x.users[r.UserProfile]:
			x.report.leave("topic settings, muted users and alert words of users not imported", 1)
		case r.table == "zerver_muteduser" && (!x.users[r.MutedUser] || r.MutedUser == r.UserProfile):
			x.report.leave("mutes of oneself or of users not imported", 1)
		case r.table == "zerver_muteduser":
			if err = tx.Bucket(bucketMutedUsers).Put(append(itob(r.UserProfile), itob(r.MutedUser)...), itob(uint64(max(r.DateMuted, 0)))); err == nil {
				err = tx.Bucket(bucketMutedBy).Put(append(itob(r.MutedUser), itob(r.UserProfile)...), nil)
			}
		case r.table == "zerver_alertword" && (seenWord[word] || strings.TrimSpace(r.Word) == ""):
		case r.table == "zerver_alertword" && len(words[r.UserProfile]) >= maxAlertWords:
			x.report.leave("alert words past the bound of a user's", 1)
		case r.table == "zerver_alertword":
			seenWord[word] = true
			words[r.UserProfile] = append(words[r.UserProfile], r.Word)
		case !x.channels[channelID] || r.Policy < policyMuted || r.Policy > policyFollowed:
			x.report.leave("topic settings (muted, unmuted, followed) of channels not imported, or of no policy", 1)
		case seenTopic[string(key)]:
		case counts[r.UserProfile] >= uint64(maxUserTopics):
			x.report.leave("topic settings past the bound of a user's", 1)
		default:
			seenTopic[string(key)] = true
			counts[r.UserProfile]++
			if err = topics.Put(key, encodeUserTopic(r.Policy, int64(r.LastUpdated), r.TopicName)); err == nil {
				err = tx.Bucket(bucketTopicUsers).Put(append(topicUsersPrefix(channelID, r.TopicName), itob(r.UserProfile)...), []byte{})
			}
		}
		if err != nil {
			return err
		}
	}
	for userID, n := range counts {
		if err := putCount(topics, userID, n); err != nil {
			return err
		}
	}
	for userID, list := range words {
		if err := putJSON(tx.Bucket(bucketAlertWords), itob(userID), list); err != nil {
			return err
		}
	}
	return nil
}

// realmValue takes a key of realm.json that is no table: "import_source"
// says which program wrote the export, and is read by nothing here;
// "sort_by_date" (Zulip's converters) asks for the messages to be
// numbered in the order of their dates, and they are numbered in the
// order of their ids; any other is named in the report.
func (x *importer) realmValue(key string, v json.Token) error {
	switch {
	case key == "import_source":
	case key == "sort_by_date":
		if v == true {
			x.report.leave("realm.json's sort_by_date: messages are numbered in the order of their ids, not of their dates", 1)
		}
	default:
		x.report.leave(fmt.Sprintf("realm.json's %q, which is no table", key), 1)
	}
	return nil
}

// importedProfileField and importedProfileValue are the rows of
// zerver_customprofilefield and zerver_customprofilefieldvalue.
type importedProfileField struct {
	ID                      uint64 `json:"id"`
	Name                    string `json:"name"`
	Hint                    string `json:"hint"`
	Order                   int64  `json:"order"`
	DisplayInProfileSummary bool   `json:"display_in_profile_summary"`
	Required                bool   `json:"required"`
	EditableByUser          *bool  `json:"editable_by_user"` // older exports have none: true
	FieldType               int    `json:"field_type"`
	FieldData               string `json:"field_data"`
}

type importedProfileValue struct {
	UserProfile   uint64  `json:"user_profile"`
	Field         uint64  `json:"field"`
	Value         string  `json:"value"`
	RenderedValue *string `json:"rendered_value"`
}

// profilesOf gathers each user's values of the imported fields (a text
// value without its rendering is rendered, as Zulip renders it); a value
// of no field is left out.
func profilesOf(fields []profileField, values []importedProfileValue, report *importReport) map[uint64]map[string]profileValue {
	byID := map[uint64]profileField{}
	for _, f := range fields {
		byID[f.ID] = f
	}
	profiles := map[uint64]map[string]profileValue{}
	for _, v := range values {
		f, ok := byID[v.Field]
		if !ok {
			report.leave("custom profile field values of no field", 1)
			continue
		}
		pv := profileValue{Value: v.Value}
		if f.Type == fieldShortText || f.Type == fieldLongText {
			if v.RenderedValue != nil {
				pv.Rendered = *v.RenderedValue
			} else {
				pv.Rendered = renderProfileValue(v.Value) // api_profile_fields.go
			}
		}
		if profiles[v.UserProfile] == nil {
			profiles[v.UserProfile] = map[string]profileValue{}
		}
		profiles[v.UserProfile][strconv.FormatUint(f.ID, 10)] = pv
	}
	return profiles
}

// putProfileFields stores the imported fields with their ids.
func putProfileFields(tx *bbolt.Tx, fields []profileField) error {
	b := tx.Bucket(bucketProfileFields)
	var maxID uint64
	for _, f := range fields {
		if err := putJSON(b, itob(f.ID), f); err != nil {
			return err
		}
		maxID = max(maxID, f.ID)
	}
	if maxID > b.Sequence() {
		return b.SetSequence(maxID)
	}
	return nil
}

// importedUserDefaults are the settings of zerver_realmuserdefault's row
// that zulite's PATCH /realm/user_settings_defaults changes and that
// differ from Zulip's defaults; a value of the wrong type or out of the
// setting's choices is left at the default.
func importedUserDefaults(row map[string]json.RawMessage) map[string]json.RawMessage {
	defaults := map[string]json.RawMessage{}
	for _, setting := range userSettingsTable {
		raw, ok := row[setting.name]
		if !setting.changeable || !ok {
			continue
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		if f, isNumber := v.(float64); isNumber && f == float64(int(f)) {
			v = int(f)
		}
		if fmt.Sprintf("%T", v) != fmt.Sprintf("%T", setting.def) || v == setting.def || (setting.choices != nil && !slices.Contains(setting.choices, v)) {
			continue
		}
		encoded, _ := json.Marshal(v)
		defaults[setting.name] = encoded
	}
	return defaults
}
