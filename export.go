package main

// Moving to Zulip: `zulite export DIR` writes the organisation as a
// Zulip realm export, the directory `manage.py import` reads
// (zerver/lib/import_realm.py) in Zulip 11.x, the releases of the API
// level zulite reports:
//
//	DIR/migration_status.json the Zulip version (11.0), whose major version
//	                          the importer compares with its own, and no
//	                          app's migrations (zulipexport.WriteMigrationStatus)
//	DIR/realm.json            import_source ("zulite"), the realm, users,
//	                          channels (zerver_stream), recipients,
//	                          subscriptions, reactions, each user's own
//	                          view (muted and followed topics, muted
//	                          users, alert words, saved snippets) and the
//	                          tables the importer requires, empty
//	DIR/messages-000001.json  zerver_message and zerver_usermessage, 1000
//	DIR/messages-000002.json  messages a file, as Zulip writes them
//	DIR/attachment.json       zerver_attachment, with the messages linking each file
//	DIR/uploads/records.json  one record a file; the bytes at uploads/PATH_ID
//	DIR/avatars/records.json  one record an avatar image; the bytes beside it
//	DIR/zulite-export.txt     what was written and what Zulip will not get
//
// It is written the way Zulip's converters from other products write it
// (zerver/data_import/), not as a Zulip server's own export: an
// import_source of its own, no user groups (the importer makes the system
// groups and puts each user in their role's; the organisation's own
// groups are counted in the report as not exported), no audit log (it records
// the subscriptions), ids kept as zulite's, which the importer renumbers.
// A converter runs on the importing server and writes that server's
// migrations into migration_status.json; zulite, which cannot know them,
// lists none, which the importer warns about and accepts. Every table
// and field the importer reads is written (export_checker_test.go checks
// them against its lines), rows as Zulip's exporter writes them: users
// without credentials (EXCLUDED_USER_PROFILE_FIELDS: no password hash,
// API key or uuid; the importer sets unusable passwords, users reset
// theirs by e-mail, and makes new keys), a direct message marked
// is_channel_message false, and a "historical" user-message row for each
// message a user sees without having received it (messageFile). Push
// tokens are not exported (devices register again when they log in).
//
// While a server holds the database, the export is made from a backup
// the server streams over its admin socket (runBackup's path): one read
// transaction's copy, and no long read holds the live file's mapping
// (issue 20). Without a server, the file is read while this process
// holds its lock, so nothing writes to it meanwhile. Either way the
// export reads one state, in several read transactions with the file
// reopened between them (store.export says why).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"zulite/internal/zulipexport"
)

// exportRealmID is the realm id written in the export, the one in
// zulite's upload paths (uploadRealmID).
const exportRealmID = 2

// zulipFlags turns a flags-bucket byte and the read state into Zulip's
// bitmask.
func zulipFlags(b byte, read bool) int64 {
	var f int64
	if read {
		f |= zulipexport.FlagRead
	}
	for _, m := range []struct {
		ours   byte
		theirs int64
	}{{flagStarred, zulipexport.FlagStarred}, {flagCollapsed, zulipexport.FlagCollapsed}, {flagMentioned, zulipexport.FlagMentioned},
		{flagStreamWildcardMentioned, zulipexport.FlagStreamWildcardMentioned}, {flagTopicWildcardMentioned, zulipexport.FlagTopicWildcardMentioned}} {
		if b&m.ours != 0 {
			f |= m.theirs
		}
	}
	return f
}

// ourFlags is the flags-bucket byte for a Zulip bitmask; a group
// mention, which zulite does not model apart, is kept as a mention.
func ourFlags(f int64) byte {
	var b byte
	for _, m := range []struct {
		theirs int64
		ours   byte
	}{{zulipexport.FlagStarred, flagStarred}, {zulipexport.FlagCollapsed, flagCollapsed}, {zulipexport.FlagMentioned | zulipexport.FlagGroupMentioned, flagMentioned},
		{zulipexport.FlagStreamWildcardMentioned, flagStreamWildcardMentioned}, {zulipexport.FlagTopicWildcardMentioned, flagTopicWildcardMentioned}} {
		if f&m.theirs != 0 {
			b |= m.ours
		}
	}
	return b
}

// runExport writes the export of the database o.DB into dir.
func runExport(dir string, o options, stdout io.Writer) error {
	if _, err := os.Stat(o.DB); err != nil { // opening it would make an empty one
		return fmt.Errorf("export: %w", err)
	}
	if err := prepareExportDir(dir); err != nil {
		return err
	}
	var report exportReport
	conn, err := net.DialTimeout("unix", socketPath(o.DB), lockTimeout)
	if err != nil { // no server: the file itself, locked while it is read
		st, err := openStore(o.DB, lockTimeout)
		if err != nil {
			return err
		}
		defer st.close()
		if report, err = st.export(dir, uploadsDir(o.DB)); err != nil {
			return fmt.Errorf("export %s: %w", dir, err)
		}
	} else {
		defer conn.Close()
		snapshot := filepath.Join(dir, ".zulite-snapshot.db")
		defer os.Remove(snapshot)
		if err := backupOverSocket(conn, snapshot, o); err != nil {
			return err
		}
		st, err := openStore(snapshot, lockTimeout)
		if err != nil {
			return err
		}
		report, err = st.export(dir, uploadsDir(o.DB))
		st.close()
		if err != nil {
			return fmt.Errorf("export %s: %w", dir, err)
		}
	}
	text := report.String()
	if err := os.WriteFile(filepath.Join(dir, "zulite-export.txt"), []byte(text), 0o600); err != nil {
		return fmt.Errorf("export %s: %w", dir, err)
	}
	fmt.Fprint(stdout, text)
	return nil
}

// prepareExportDir makes dir, or accepts it empty: an export is never
// mixed with files already there.
func prepareExportDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return fmt.Errorf("export %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("export %s: the directory is not empty", dir)
	}
	return nil
}

// exportReport counts what was written and what Zulip does not get.
type exportReport struct {
	Users, Channels, Subscriptions, Messages, UserMessages, Reactions, Attachments, Avatars int
	Files                                                                                   int
	// Historical are the user-message rows of messages seen without
	// being received (starred where one was not subscribed, …).
	Historical int
	// Left out, with counts.
	APIKeys, Passwords, PushTokens, ChannelPermissions, StatusTexts int
	// Submessages: Zulip's export.py leaves zerver_submessage out
	// (NON_EXPORTED_TABLES), so a poll goes as its text.
	Submessages int
	// SavedSnippets go over (zerver_savedsnippet); Drafts do not: Zulip
	// leaves zerver_draft out ("Drafts don't need to be exported as they
	// are supposed to be more ephemeral").
	SavedSnippets, Drafts int
	// Scheduled messages go over (zerver_scheduledmessage) but for those
	// to a group that has no conversation yet (store_scheduled_messages.go).
	Scheduled, ScheduledLeftOut int
	// UserGroups: the organisation's own groups do not go over (the
	// export writes no groups; the importer makes the system ones).
	UserGroups int
	// Custom emoji (with their images), linkifiers and code playgrounds.
	Emoji, Linkifiers, Playgrounds int
	// Custom profile fields and their values go over.
	ProfileFields, ProfileValues int
}

func (r exportReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exported: %d users, %d channels, %d subscriptions, %d messages in %d files, %d user-message rows (%d historical: messages starred, marked unread or mentioned where the user was not subscribed then), %d reactions, %d uploaded files, %d avatars\n",
		r.Users, r.Channels, r.Subscriptions, r.Messages, r.Files, r.UserMessages, r.Historical, r.Reactions, r.Attachments, r.Avatars)
	fmt.Fprintf(&b, "not exported: %d API keys and %d password hashes (Zulip's import makes new keys and asks users to reset their passwords), %d push tokens (devices register again), %d channel permission settings changed from the defaults (Zulip starts from its defaults), %d user statuses\n",
		r.APIKeys, r.Passwords, r.PushTokens, r.ChannelPermissions, r.StatusTexts)
	if r.Submessages > 0 {
		fmt.Fprintf(&b, "not exported either: %d submessages (polls and to-do lists: Zulip's export has none; their messages go over as their text)\n", r.Submessages)
	}
	if r.Emoji > 0 || r.Linkifiers > 0 || r.Playgrounds > 0 {
		fmt.Fprintf(&b, "also exported: %d custom emoji, %d linkifiers, %d code playgrounds\n", r.Emoji, r.Linkifiers, r.Playgrounds)
	}
	if r.SavedSnippets > 0 || r.Drafts > 0 {
		fmt.Fprintf(&b, "saved snippets: %d exported; drafts: %d not exported (Zulip's export has none: they stay in their clients)\n", r.SavedSnippets, r.Drafts)
	}
	if r.ProfileFields > 0 {
		fmt.Fprintf(&b, "custom profile fields: %d exported, with %d values\n", r.ProfileFields, r.ProfileValues)
	}
	if r.Scheduled > 0 || r.ScheduledLeftOut > 0 {
		fmt.Fprintf(&b, "scheduled messages: %d exported, %d not (to a group with no message yet, which Zulip's export would need)\n", r.Scheduled, r.ScheduledLeftOut)
	}
	if r.UserGroups > 0 {
		fmt.Fprintf(&b, "not exported either: %d user groups (the export writes no groups: Zulip's import makes the system groups and puts each user in their role's)\n", r.UserGroups)
	}
	fmt.Fprintf(&b, "import on a Zulip %s.x server: ./manage.py import SUBDOMAIN DIR (see https://zulip.readthedocs.io/en/latest/production/export-and-import.html); it warns that the export lists no migrations of its apps, as zulite cannot know the server's\n",
		strings.Split(zulipexport.ZulipVersion, ".")[0])
	return b.String()
}

// export writes the export into dir; blobs is the directory holding the
// uploaded files' bytes. The store must have no other user while it
// runs (a backup's copy, or a file this process holds the lock of): then
// its read transactions, one a message file and one for the rest, read
// one state, and between them the file is reopened every
// importRemapFiles files (remapFile), so that the pages read are
// unmapped and resident memory does not grow with the database.
func (s *store) export(dir, blobs string) (exportReport, error) {
	return s.exportOf(dir, blobs, false)
}

// exportOf is export, or with publicOnly Zulip's public export
// (RealmExport.EXPORT_PUBLIC, POST /export/realm's export_type 1): only
// the messages of public channels, with their user-message rows and
// reactions, and only the uploaded files they link; no direct message,
// no private channel's message, no scheduled message and no saved
// snippet. Users, channels and subscriptions go over whole, as in
// Zulip's public export.
func (s *store) exportOf(dir, blobs string, publicOnly bool) (exportReport, error) {
	var r exportReport
	x := exporter{s: s, dir: dir, blobs: blobs, report: &r, links: map[string][]uint64{}, publicOnly: publicOnly}
	return r, x.run()
}

// in runs fn in a read transaction of its own, as x.tx.
func (x *exporter) in(fn func() error) error {
	return x.s.view(func(tx *bbolt.Tx) error {
		x.tx = tx
		defer func() { x.tx = nil }()
		return fn()
	})
}

type exporter struct {
	s      *store
	tx     *bbolt.Tx
	dir    string
	blobs  string
	report *exportReport
	users  []user
	// flagHolders are the users with a personal flag on some message.
	flagHolders []user
	// clients are the sending clients by name, numbered as met.
	clients []string
	// links are the messages linking each upload path.
	links map[string][]uint64
	// out writes the export's files.
	out *zulipexport.Writer
	// publicOnly: Zulip's public export (exportOf).
	publicOnly bool
}

func (x *exporter) run() error {
	err := x.in(func() (err error) {
		if x.users, err = allUsers(x.tx); err != nil {
			return err
		}
		x.flagHolders = flagHolders(x.tx, x.users)
		return nil
	})
	if err != nil {
		return err
	}
	x.out, err = zulipexport.NewWriter(x.dir, writeFileAtomically)
	if err != nil {
		return err
	}
	defer x.out.Close()
	if err := x.messages(); err != nil {
		return err
	}
	return x.in(func() error {
		if err := x.attachments(); err != nil {
			return err
		}
		if err := x.avatars(); err != nil {
			return err
		}
		if err := x.customEmoji(); err != nil { // export_uploads.go
			return err
		}
		if err := x.out.WriteMigrationStatus(); err != nil {
			return err
		}
		return x.realm()
	})
}

// client numbers a sending client's name for zerver_client.
func (x *exporter) client(name string) int {
	if name == "" {
		name = "zulite"
	}
	if i := slices.Index(x.clients, name); i >= 0 {
		return i + 1
	}
	x.clients = append(x.clients, name)
	return len(x.clients)
}

// exportSubscriber is a subscriber of a channel and the largest message
// id when they joined.
type exportSubscriber struct {
	userID, start uint64
}

// messages writes messages-NNNNNN.json, and adds their reactions.
func (x *exporter) messages() error {
	subscribers := map[uint64][]exportSubscriber{}
	subscribersOf := func(key uint64) []exportSubscriber {
		if list, ok := subscribers[key]; ok {
			return list
		}
		var list []exportSubscriber
		if isConversationKey(key) { // a conversation's participants, from its start
			ids, _ := conversationParticipants(x.tx, key&^conversationBit)
			for _, id := range ids {
				list = append(list, exportSubscriber{id, 0})
			}
		} else {
			prefix := itob(key)
			c := x.tx.Bucket(bucketSubscribers).Cursor()
			for k, v := c.Seek(prefix); k != nil && strings.HasPrefix(string(k), string(prefix)); k, v = c.Next() {
				start := uint64(0)
				if len(v) == 8 {
					start = btoi(v)
				}
				list = append(list, exportSubscriber{btoi(k[8:]), start})
			}
		}
		subscribers[key] = list
		return list
	}
	var batch []message
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		x.report.Files++
		err := x.messageFile(batch, subscribersOf)
		batch = batch[:0]
		return err
	}
	for after, files, more := uint64(0), 0, true; more; files++ {
		more = false
		if files > 0 && files%importRemapFiles == 0 {
			if err := x.s.remapFile(); err != nil {
				return err
			}
		}
		err := x.in(func() error {
			c := x.tx.Bucket(bucketMessages).Cursor()
			for k, v := c.Seek(itob(after + 1)); k != nil && len(batch) < zulipexport.MessagesPerFile; k, v = c.Next() {
				var m message
				if err := json.Unmarshal(v, &m); err != nil {
					return fmt.Errorf("message %d: %w", btoi(k), err)
				}
				after, more = m.ID, true
				if x.publicOnly && !x.publicMessage(m) {
					continue
				}
				batch = append(batch, m)
			}
			return flush()
		})
		if err != nil {
			return err
		}
	}
	if x.report.Files == 0 { // import_realm.py reads messages-000001.json, however few messages there are
		x.report.Files++
		return x.out.WriteMessages([]zulipexport.MessageRow{}, []zulipexport.UserMessageRow{})
	}
	return nil
}

// publicMessage tells a message of a public channel.
func (x *exporter) publicMessage(m message) bool {
	if m.isDirect() {
		return false
	}
	ch, err := x.s.channelByID(x.tx, m.ChannelID)
	return err == nil && !ch.Private
}

// flagHolders are the users who hold a personal flag on some message:
// those whose flags the message files look up.
func flagHolders(tx *bbolt.Tx, users []user) []user {
	var holders []user
	c := tx.Bucket(bucketFlags).Cursor()
	for _, u := range users {
		if k, _ := c.Seek(itob(u.ID)); k != nil && bytes.HasPrefix(k, itob(u.ID)) {
			holders = append(holders, u)
		}
	}
	return holders
}

// heldFlag is a personal flag byte one user holds on a message.
type heldFlag struct {
	user  user
	flags byte
}

// heldFlags are the flags the holders hold on messages first to last, by
// message: a seek and a short walk of the flags bucket per holder, its
// keys being user ‖ message.
func (x *exporter) heldFlags(first, last uint64) map[uint64][]heldFlag {
	held := map[uint64][]heldFlag{}
	c := x.tx.Bucket(bucketFlags).Cursor()
	for _, u := range x.flagHolders {
		prefix := itob(u.ID)
		for k, v := c.Seek(append(itob(u.ID), itob(first)...)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			id := btoi(k[8:])
			if id > last {
				break
			}
			if len(v) > 0 && v[0] != 0 {
				held[id] = append(held[id], heldFlag{u, v[0]})
			}
		}
	}
	return held
}

// messageFile writes one file of messages and their per-user rows. Each
// user who can see a message has one, as in Zulip: a subscriber who was
// subscribed when it came (its id above their start), a participant in a
// direct message, with the read bit from the unread state; and, as
// Zulip's "historical" rows (create_historical_user_messages: historical
// and read, less what the user changed), a subscriber who joined after it
// and starred it or marked it unread, and a user not subscribed who holds
// a flag on it (starred it, or was mentioned and left) in a channel whose
// messages they may read. Without the row, the importer would lose the
// message from their view and their starred messages.
func (x *exporter) messageFile(batch []message, subscribersOf func(uint64) []exportSubscriber) error {
	messageRows := make([]zulipexport.MessageRow, 0, len(batch))
	userMessageRows := []zulipexport.UserMessageRow{}
	byChannel := map[uint64][]uint64{} // by read key: a channel's id or a conversation's key
	for _, m := range batch {
		byChannel[m.readKey()] = append(byChannel[m.readKey()], m.ID)
	}
	// unread[user‖channel] is the batch's unread ids there, sorted;
	// subscribed[channel] its subscribers (or participants).
	unread := map[[2]uint64][]uint64{}
	subscribed := map[uint64]map[uint64]bool{}
	for channelID, ids := range byChannel {
		subscribed[channelID] = map[uint64]bool{}
		for _, sub := range subscribersOf(channelID) {
			subscribed[channelID][sub.userID] = true
			list, err := unreadAmong(x.tx, sub.userID, channelID, ids)
			if err != nil {
				return err
			}
			unread[[2]uint64{sub.userID, channelID}] = list
		}
	}
	held := x.heldFlags(batch[0].ID, batch[len(batch)-1].ID)
	channels := map[uint64]channel{}
	addRow := func(userID, messageID uint64, mask int64) {
		x.report.UserMessages++
		userMessageRows = append(userMessageRows, zulipexport.UserMessageRow{
			ID: uint64(x.report.UserMessages), UserProfile: userID, Message: messageID, FlagsMask: mask})
	}
	flags := x.tx.Bucket(bucketFlags)
	for _, m := range batch {
		paths := linkedPaths(m.Content)
		hasAttachment := false
		for _, p := range paths {
			if x.tx.Bucket(bucketAttachments).Get([]byte(p)) != nil {
				x.links[p] = append(x.links[p], m.ID)
				hasAttachment = true
			}
		}
		rendered := renderedContent(m)
		recipient, private := recipientID(recipientChannel, m.ChannelID), int64(0)
		if m.isDirect() {
			recipient, private = x.directRecipient(m), zulipexport.FlagIsPrivate
		}
		row := zulipexport.MessageRow{
			ID: m.ID, Sender: m.SenderID, Recipient: recipient, Realm: exportRealmID,
			Subject: m.Topic, Content: m.Content, RenderedContent: rendered, RenderedContentVersion: 1,
			DateSent: zulipexport.Timestamp(m.Timestamp), LastEditTime: zulipexport.Timestamp(max(m.LastEdit, m.LastMoved)), SendingClient: x.client(m.Client),
			HasAttachment: hasAttachment, HasImage: strings.Contains(rendered, "<img"), HasLink: strings.Contains(rendered, "<a "),
			IsChannelMessage: !m.isDirect(),
		}
		if len(m.EditHistory) > 0 { // Zulip's Message.edit_history: a JSON text, newest first, as zulite keeps it
			history, err := json.Marshal(m.EditHistory)
			if err != nil {
				return err
			}
			row.EditHistory = string(history)
		}
		messageRows = append(messageRows, row)
		key := m.readKey()
		for _, sub := range subscribersOf(key) {
			var b byte
			if v := flags.Get(append(itob(sub.userID), itob(m.ID)...)); len(v) > 0 {
				b = v[0]
			}
			_, isUnread := slices.BinarySearch(unread[[2]uint64{sub.userID, key}], m.ID)
			mask := zulipFlags(b, !isUnread) | private
			if m.ID <= sub.start { // before they joined: theirs only by what they did to it
				if b == 0 && !isUnread {
					continue
				}
				mask |= zulipexport.FlagHistorical
				x.report.Historical++
			}
			addRow(sub.userID, m.ID, mask)
		}
		if !m.isDirect() { // a direct message's flags are its participants'
			for _, h := range held[m.ID] {
				if subscribed[key][h.user.ID] {
					continue
				}
				ch, ok := channels[m.ChannelID]
				if !ok {
					var err error
					if ch, err = x.s.channelByID(x.tx, m.ChannelID); err != nil {
						return err
					}
					channels[m.ChannelID] = ch
				}
				if x.s.canAccess(x.tx, h.user, ch) {
					addRow(h.user.ID, m.ID, zulipFlags(h.flags, true)|zulipexport.FlagHistorical)
					x.report.Historical++
				}
			}
		}
		x.report.Submessages += keysWithPrefix(x.tx.Bucket(bucketSubmessages), itob(m.ID))
		for _, r := range reactionsOf(x.tx, m.ID) {
			x.report.Reactions++
			if err := x.out.AddReaction(zulipexport.ReactionRow{ID: uint64(x.report.Reactions), Message: m.ID, UserProfile: r.UserID,
				EmojiName: r.EmojiName, EmojiCode: r.EmojiCode, ReactionType: r.ReactionType}); err != nil {
				return err
			}
		}
	}
	x.report.Messages += len(batch)
	return x.out.WriteMessages(messageRows, userMessageRows)
}

// directRecipient is a direct message's Zulip recipient: a group's for
// three participants or more, else the personal recipient of the one who
// is not the sender (Zulip files a one-to-one message under the
// recipient's), or the sender's own.
func (x *exporter) directRecipient(m message) uint64 {
	ids, _ := conversationParticipants(x.tx, m.ConversationID)
	if len(ids) > 2 {
		return recipientID(zulipexport.RecipientHuddle, m.ConversationID)
	}
	for _, id := range ids {
		if id != m.SenderID {
			return recipientID(zulipexport.RecipientPersonal, id)
		}
	}
	return recipientID(zulipexport.RecipientPersonal, m.SenderID)
}

// realm writes realm.json.
func (x *exporter) realm() error {
	tx := x.tx
	var channels []channel
	if err := tx.Bucket(bucketChannels).ForEach(func(_, v []byte) error {
		var ch channel
		if err := json.Unmarshal(v, &ch); err != nil {
			return err
		}
		channels = append(channels, ch)
		return nil
	}); err != nil {
		return err
	}
	created := time.Now().Unix()
	for _, u := range x.users {
		if u.Joined > 0 && u.Joined < created {
			created = u.Joined
		}
	}
	realm := map[string]any{
		"id": exportRealmID, "name": "zulite", "string_id": "zulite", "description": "Organization imported from zulite.",
		"date_created": zulipexport.Timestamp(created), "deactivated": false, "moderation_request_channel": nil,
		"new_stream_announcements_stream": nil, "signup_announcements_stream": nil, "zulip_update_announcements_stream": nil,
	}
	var profiles []map[string]any
	var recipients []map[string]any
	var subscriptions []map[string]any
	for _, u := range x.users {
		avatarSource := "G"
		if u.Avatar != "" {
			avatarSource = "U"
		}
		role := u.Role
		if role == 0 {
			role = roleMember
		}
		var botType any
		if u.Bot {
			botType = 1 // a generic bot
		}
		// As Zulip's exporter writes a user: without api_key, password
		// and uuid (EXCLUDED_USER_PROFILE_FIELDS), which the importer
		// makes anew.
		profiles = append(profiles, map[string]any{
			"id": u.ID, "email": u.Email, "delivery_email": u.Email, "full_name": u.FullName, "role": role,
			"is_bot": u.Bot, "bot_type": botType, "bot_owner": nil, "is_active": u.Active, "is_mirror_dummy": false,
			"realm": exportRealmID, "date_joined": zulipexport.Timestamp(u.Joined), "last_login": nil, "last_reminder": nil,
			"default_sending_stream": nil, "default_events_register_stream": nil, "last_active_message_id": nil,
			"avatar_source": avatarSource, "avatar_version": avatarVersion(u), "timezone": "",
			"translate_emoticons": translatesEmoticons(tx, u.ID), "user_permissions": []any{}, "groups": []any{},
		})
		recipients = append(recipients, map[string]any{"id": recipientID(zulipexport.RecipientPersonal, u.ID), "type": zulipexport.RecipientPersonal, "type_id": u.ID})
		subscriptions = append(subscriptions, map[string]any{"id": len(subscriptions) + 1, "user_profile": u.ID,
			"recipient": recipientID(zulipexport.RecipientPersonal, u.ID), "active": true, "is_user_active": u.Active, "color": "#c2c2c2",
			"is_muted": false, "pin_to_top": false, "desktop_notifications": nil, "audible_notifications": nil,
			"push_notifications": nil, "email_notifications": nil, "wildcard_mentions_notify": nil})
		if n := keysWithPrefix(tx.Bucket(bucketAPIKeys), itob(u.ID)); n > 0 {
			x.report.APIKeys += n
		}
		if tx.Bucket(bucketPasswords).Get(itob(u.ID)) != nil {
			x.report.Passwords++
		}
		x.report.PushTokens += keysWithPrefix(tx.Bucket(bucketPushTokens), itob(u.ID))
		if tx.Bucket(bucketUserStatus).Get(itob(u.ID)) != nil {
			x.report.StatusTexts++
		}
	}
	active := map[uint64]bool{}
	for _, u := range x.users {
		active[u.ID] = u.Active
	}
	var streams, defaults []map[string]any
	for _, ch := range channels {
		if ch.Default { // Zulip's DefaultStream rows
			defaults = append(defaults, map[string]any{"id": len(defaults) + 1, "realm": exportRealmID, "stream": ch.ID})
		}
		streams = append(streams, map[string]any{
			"id": ch.ID, "name": ch.Name, "description": ch.Description, "rendered_description": "",
			"invite_only": ch.Private, "history_public_to_subscribers": true, "is_web_public": false,
			"realm": exportRealmID, "creator": nilIfZero(ch.CreatorID), "date_created": zulipexport.Timestamp(ch.Created),
			"deactivated": ch.Archived, "message_retention_days": nil, "folder": nil,
		})
		x.report.ChannelPermissions += len(ch.Groups)
		recipients = append(recipients, map[string]any{"id": recipientID(recipientChannel, ch.ID), "type": recipientChannel, "type_id": ch.ID})
	}
	c := tx.Bucket(bucketSubscriptions).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var sub subscription
		if err := json.Unmarshal(v, &sub); err != nil {
			return err
		}
		userID, channelID := btoi(k[:8]), btoi(k[8:16])
		subscriptions = append(subscriptions, map[string]any{"id": len(subscriptions) + 1, "user_profile": userID,
			"recipient": recipientID(recipientChannel, channelID), "active": true, "is_user_active": active[userID], "color": sub.Color,
			"is_muted": sub.Muted, "pin_to_top": sub.PinToTop, "desktop_notifications": sub.DesktopNotifications,
			"audible_notifications": sub.AudibleNotifications, "push_notifications": sub.PushNotifications,
			"email_notifications": sub.EmailNotifications, "wildcard_mentions_notify": sub.WildcardMentionsNotify})
		x.report.Subscriptions++
	}
	// Direct-message groups: a huddle, its recipient and its members'
	// subscriptions, from which the importer learns its members.
	var huddles []map[string]any
	cc := tx.Bucket(bucketConversations).Cursor()
	for k, v := cc.First(); k != nil; k, v = cc.Next() {
		ids := decodeIDs(v)
		if len(ids) < 3 {
			continue
		}
		id := btoi(k)
		huddles = append(huddles, map[string]any{"id": id, "huddle_hash": zulipexport.HuddleHash(ids), "group_size": len(ids)})
		recipients = append(recipients, map[string]any{"id": recipientID(zulipexport.RecipientHuddle, id), "type": zulipexport.RecipientHuddle, "type_id": id})
		for _, userID := range ids {
			subscriptions = append(subscriptions, map[string]any{"id": len(subscriptions) + 1, "user_profile": userID,
				"recipient": recipientID(zulipexport.RecipientHuddle, id), "active": true, "is_user_active": active[userID], "color": "#c2c2c2",
				"is_muted": false, "pin_to_top": false, "desktop_notifications": nil, "audible_notifications": nil,
				"push_notifications": nil, "email_notifications": nil, "wildcard_mentions_notify": nil})
		}
	}
	x.report.Users, x.report.Channels = len(x.users), len(channels)
	scheduled, err := x.exportScheduled(tx) // before zerver_client: it numbers their clients
	if err != nil {
		return err
	}
	var clients []map[string]any
	for i, name := range x.clients {
		clients = append(clients, map[string]any{"id": i + 1, "name": name})
	}
	snippets, err := x.savedSnippets(tx)
	if err != nil {
		return err
	}
	if x.publicOnly {
		scheduled, snippets = []scheduledRow{}, nil
	}
	userTopics, mutes, alertWords, err := ownViews(tx)
	if err != nil {
		return err
	}
	linkifiers, playgrounds := linkifierRows(tx), playgroundRows(tx)
	x.report.Linkifiers, x.report.Playgrounds = len(linkifiers), len(playgrounds)
	fields, values, err := x.profileFields(tx)
	if err != nil {
		return err
	}
	userDefault, err := realmUserDefaultRow(tx)
	if err != nil {
		return err
	}
	tables := map[string]any{
		"zerver_realmuserdefault":          []any{userDefault},
		"zerver_customprofilefield":        fields,
		"zerver_customprofilefieldvalue":   values,
		"zerver_savedsnippet":              orEmpty(snippets),
		"zerver_usertopic":                 userTopics,
		"zerver_muteduser":                 mutes,
		"zerver_alertword":                 alertWords,
		"zerver_scheduledmessage":          scheduled,
		"zerver_realm":                     []any{realm},
		"zerver_userprofile":               orEmpty(profiles),
		"zerver_stream":                    orEmpty(streams),
		"zerver_defaultstream":             orEmpty(defaults),
		"zerver_recipient":                 orEmpty(recipients),
		"zerver_subscription":              orEmpty(subscriptions),
		"zerver_huddle":                    orEmpty(huddles),
		"zerver_client":                    orEmpty(clients),
		"zerver_realmauthenticationmethod": []any{map[string]any{"id": 1, "realm": exportRealmID, "name": "Email"}},
		"zerver_realmemoji":                orEmpty(x.emojiRows(tx)), // export_uploads.go
		"zerver_realmfilter":               orEmpty(linkifiers),
		"zerver_realmplayground":           orEmpty(playgrounds),
	}
	return x.out.WriteRealm(tables)
}
