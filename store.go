package main

// The store keeps everything in one bbolt file. Bucket layout, schema
// version 3 (ids are big-endian uint64, so keys sort by id; "‖" joins):
//
//	meta             "schema_version" → uint64
//	                 "key_secret"     → 32 random bytes, the BLAKE2b key for API keys
//	                 "realm_groups"   → organisation permission settings changed by
//	                                    an administrator: setting name → named group id (JSON)
//	                 "users_version"  → uint64, counted up by every write of users (putUser)
//	                                    and of user groups (putGroup)
//	                 "realm_user_defaults" → the settings new users start with that differ
//	                                    from Zulip's defaults, as user_settings keeps a user's (JSON)
//	users            user id → user (JSON, with the user's custom profile field values:
//	                 field id → value and rendering, store_people.go)
//	profile_fields   field id → profileField (JSON: Zulip's custom profile field, its order
//	                 among the fields in it); the bucket's sequence numbers them
//	user_emails      lower-cased e-mail → user id
//	api_keys         user id ‖ BLAKE2b-256(secret, key) → created, unix seconds (uint64)
//	push_tokens      user id ‖ kind ('a' APNs, 'g' FCM) ‖ token key → pushToken (JSON);
//	                 the token key is the token lower-cased for APNs, verbatim for FCM
//	channels         channel id → channel (JSON, with the permission settings
//	                 given other values than Zulip's defaults, and whether it is
//	                 archived or a default channel: store_channel_admin.go)
//	channel_names    lower-cased channel name → channel id
//	subscriptions    user id ‖ channel id → subscription (JSON: colour, muting,
//	                 pinning, notification settings)
//	subscribers      channel id ‖ user id → the subscription's start (uint64): the
//	                 largest message id when the user joined (0 for those who
//	                 joined before schema 3); later messages reached them
//	messages         message id → message (JSON, with its content rendered to HTML
//	                 when it was sent or last edited: internal/markdown; its edit history,
//	                 newest first: store_message_edit.go)
//	channel_messages channel id ‖ message id → empty
//	topic_messages   channel id ‖ lower-cased topic ‖ 0x00 ‖ message id → empty
//	                 (topics hold no control characters, so 0x00 ends the topic)
//	flags            user id ‖ message id → one byte of personal flags (starred, collapsed,
//	                 and the mention flags set when it was sent: mentions.go)
//	reactions        message id ‖ sequence → reaction (JSON: user id, emoji name, code and
//	                 type), in the order they were added (store_reactions.go)
//	passwords        user id → argon2id hash, PHC string (passwords.go)
//	user_settings    user id → the user's settings that differ from Zulip's defaults, as a
//	                 JSON object: setting name → value (api_settings.go has the defaults)
//	watermarks       user id ‖ channel id → read watermark (uint64), exactly while
//	                 the user is subscribed: the channel's messages at or below it
//	                 are read, those above it unread, but for the two sets below
//	unread_below     user id ‖ channel id → bucket of the unread message ids at or
//	                 below the watermark, in chunks
//	read_above       user id ‖ channel id → bucket of the read message ids above the
//	                 watermark, in chunks
//	                   (a chunk: first message id → count (uint32) ‖ last id (uint64) ‖
//	                   uvarint deltas, at most 1000 ids; unread.go says why)
//	presence         user id → last active ‖ last connected (Unix seconds, uint64 each, 0: never)
//	                 ‖ update id (uint64); written at most every presenceWriteInterval per
//	                 user, from memory (store_presence.go)
//	user_status      user id → userStatus (JSON: status text, emoji, when, client; store_status.go)
//	attachments      upload path id ("2/random/name", as in /user_uploads/…) → attachment (JSON:
//	                 owner, name, size, type, the SHA-256 naming its blob in DB.uploads/;
//	                 store_uploads.go)
//	attachment_owners owner id ‖ path id → size (uint64), for quotas; meta's
//	                 "attachment_bytes" → uint64 is every record's size together, for
//	                 --upload-total-mib (made exact again by each sweep)
//	attachment_refs  path id ‖ 0x00 ‖ message id → empty: the messages that link an upload
//	                 (path ids hold no 0x00), indexed from the messages up to meta's
//	                 "attachment_refs_through" → message id (uint64)
//	avatar_blobs     SHA-256 (hex) of an avatar image in DB.uploads/ ‖ user id → empty: the
//	                 avatars users show (store_avatars.go)
//	conversations    conversation id → its participants' ids, sorted (8 bytes each): a
//	                 direct-message conversation, one-to-one, group or with oneself
//	                 (store_dms.go); made by its first message
//	conversation_ids participants' ids, sorted (8 bytes each) → conversation id
//	conversation_messages conversation id ‖ message id → empty
//	dm_messages      user id ‖ message id → conversation id (uint64): every direct message
//	                 of each participant, so that "all my messages" walks one index
//	push_outbox      sequence (uint64) → pushJob (JSON): pushes to deliver, oldest first: a
//	                 message to expand, a notification or a remove for a device (or, through
//	                 the bouncer, a user) (push_outbox.go)
//	push_sent        user id ‖ message id → the message's unread key (uint64: its channel,
//	                 or a direct message's conversation): a pushed message not yet read,
//	                 for Zulip's remove notification
//
// A direct message is stored in messages with channel_id 0 and its
// conversation_id. For unread state a conversation is a channel for its
// participants: watermarks, unread_below and read_above key it as
// user id ‖ (1<<63 | conversation id), which no channel id reaches, and
// its watermark is made at 0 for every participant with the conversation.
//	web_sessions     BLAKE2b-256(secret, session id) → user id (uint64) ‖ expiry (Unix seconds,
//	                 uint64) ‖ CSRF token: the web page's logins (store_sessions.go), kept on
//	                 disk so that a restart logs nobody out; expired ones go at the next login
//	submessages      message id ‖ submessage id → submessage (JSON: sender id, msg_type, content):
//	                 a message's widget and what its readers did with it, oldest first; the
//	                 bucket's sequence numbers them (store_submessages.go)
//	user_topics      user id ‖ channel id ‖ lower-cased topic → visibility policy (1 byte: muted,
//	                 unmuted, followed) ‖ last updated (Unix seconds, uint64) ‖ the topic as first
//	                 named; user id → how many of these the user has (uint64) (store_user_topics.go)
//	topic_users      channel id ‖ lower-cased topic ‖ 0x00 ‖ user id → empty: who has such a row
//	drafts           user id ‖ draft id → storedDraft (JSON: type, to as to_dict gives it,
//	                 topic, content, last edit in Unix seconds); the bucket's sequence
//	                 numbers them (store_drafts.go)
//	saved_snippets   user id ‖ snippet id → savedSnippet (JSON: title, content, created);
//	                 the bucket's sequence numbers them (store_drafts.go)
//	muted_users      muter id ‖ muted user id → when muted (Unix seconds, uint64) (store_mutes.go)
//	muted_by         muted user id ‖ muter id → empty: muted_users the other way round, for sends
//	alert_words      user id → the user's alert words (JSON list of strings, in the order added)
//	scheduled_messages user id ‖ scheduled message id → storedScheduled (JSON: type, channel or
//	                 recipients, topic, content and its rendering, due time in Unix seconds,
//	                 read_by_sender, client, failed and why, edit count, and for a reminder,
//	                 Zulip's REMIND type, its message's id); the bucket's sequence numbers
//	                 them, reminders among them (store_scheduled_messages.go, api_reminders.go)
//	scheduled_due    due time (Unix seconds, uint64) ‖ scheduled message id → user id (uint64):
//	                 those still to be sent, earliest first (scheduler.go); a sent one leaves both
//	                 buckets in the send's transaction, a failed one leaves this one
//	user_groups      user group id → userGroup (JSON: name, description, creator, creation
//	                 time, direct members and subgroups, its six permission settings,
//	                 deactivated); ids follow the system groups' (the bucket's sequence +
//	                 8); every write counts up meta's "users_version" (store_user_groups.go)
//	realm_emoji      emoji id → realmEmoji (JSON: name, the SHA-256 of its 64-pixel PNG in
//	                 DB.uploads/, author id, created, deactivated); the bucket's sequence
//	                 numbers them; a deactivated one stays (store_realm_emoji.go)
//	linkifiers       linkifier id → linkifier (JSON: pattern, url_template, order); the
//	                 bucket's sequence numbers them (store_linkifiers.go)
//	playgrounds      playground id → playground (JSON: name, pygments_language,
//	                 url_template); the bucket's sequence numbers them (store_linkifiers.go)
//	invites          invitation id → invite (JSON: address, referrer, role, when made and when it
//	                 expires, 0: never, confirmation key, channels, status: 1 used, 2 revoked, and
//	                 when it closed): e-mail invitations, Zulip's PreregistrationUser; the bucket's
//	                 sequence numbers them (store_invites.go)
//	invite_links     invitation id → invite (JSON, without address): reusable invitation links,
//	                 Zulip's MultiuseInvite, numbered apart from e-mail invitations as Zulip's are
//	invite_keys      confirmation key (24 characters) → 'e' or 'm' ‖ invitation id (uint64): the
//	                 invitation a link /accounts/do_confirm/KEY or /join/KEY/ opens
//	realm_exports    export id → realmExport (JSON: acting user, export_type, status, the
//	                 times it was requested, succeeded, failed, deleted, and its tarball's
//	                 path under DB.exports/); the bucket's sequence numbers them
//	                 (store_realm_export.go, api_realm_export.go)
//
// meta also holds "presence_update_id" → uint64, the presence update ids
// reserved so far (store_presence.go), and "push_bouncer" → the push
// bouncer's URL, zulip_org_id and zulip_org_key (JSON), once `zulite
// push register` ran (push_bouncer.go).
//
// Users, channels and messages take their ids from their own bucket's
// NextSequence. The read flag is not stored per message: a message is
// unread for a user when it is in a channel they are subscribed to and
// above their watermark there and not in read_above, or in unread_below
// (unread.go). Every store method is one
// transaction. Writes go through one committer so that concurrent
// requests share a commit: every function
// given to update may run more than once, and makes all its checks before
// its first write, so that a rejection (a sentinel below) can be handed
// back without failing the group it shares (commit.go).

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// schemaVersion 4 gives every upload's record an id (GET and DELETE
// /attachments name it by): opening a schema-3 file numbers its records
// in path order (numberAttachments).
//
// Schema 3 keeps unread state as a watermark and exceptions per
// (user, channel) instead of schema 2's unread bucket, which held every
// unread id (user id ‖ channel id → bucket of chunks): opening a schema-2
// file converts it (migrateUnread) and drops unread and unread_trash, the
// janitor's bucket of sets waiting to be deleted. It also records each
// subscription's start as the subscribers index's value, empty before.
//
// Schema 2 added topic_messages and flags to schema 1's buckets:
// opening a schema-1 file builds topic_messages from messages
// (indexTopics) and starts flags empty, as schema 1 kept no personal
// flags. passwords, unread_trash and user_settings came later with no change of
// schema: they are new buckets, made empty on open; so is reactions. A
// message stored before messages kept their rendering is rendered when
// it is read, without its mentions' names (internal/markdown).
//
// Every schema change comes with a test that builds a file of the schema
// before it with bbolt alone, opens it with openStore, and checks what
// migrate made of it, as migrate_test.go does for schemas 1 and 2.
const schemaVersion = 4

var (
	bucketMeta             = []byte("meta")
	bucketUsers            = []byte("users")
	bucketUserEmails       = []byte("user_emails")
	bucketAPIKeys          = []byte("api_keys")
	bucketPushTokens       = []byte("push_tokens")
	bucketChannels         = []byte("channels")
	bucketChannelNames     = []byte("channel_names")
	bucketSubscriptions    = []byte("subscriptions")
	bucketSubscribers      = []byte("subscribers")
	bucketMessages         = []byte("messages")
	bucketChannelMessages  = []byte("channel_messages")
	bucketTopicMessages    = []byte("topic_messages")
	bucketFlags            = []byte("flags")
	bucketPasswords        = []byte("passwords")
	bucketUserSettings     = []byte("user_settings")
	bucketPresence         = []byte("presence")
	bucketUserStatus       = []byte("user_status")
	bucketAttachments      = []byte("attachments")
	bucketAttachmentOwners = []byte("attachment_owners")
	bucketAttachmentRefs   = []byte("attachment_refs")
	bucketAvatarBlobs      = []byte("avatar_blobs")
	bucketWatermarks       = []byte("watermarks")
	bucketUnreadBelow      = []byte("unread_below")
	bucketReadAbove        = []byte("read_above")
	bucketReactions        = []byte("reactions")
	// Direct messages (store_dms.go).
	bucketConversations        = []byte("conversations")
	bucketConversationIDs      = []byte("conversation_ids")
	bucketConversationMessages = []byte("conversation_messages")
	bucketDMMessages           = []byte("dm_messages")
	// The web page (store_sessions.go).
	bucketWebSessions = []byte("web_sessions")
	// Submessages: polls and to-do lists (store_submessages.go).
	bucketSubmessages = []byte("submessages")
	// Drafts and saved snippets (store_drafts.go).
	bucketDrafts        = []byte("drafts")
	bucketSavedSnippets = []byte("saved_snippets")

	allBuckets = [][]byte{
		bucketMeta, bucketUsers, bucketUserEmails, bucketAPIKeys, bucketPushTokens,
		bucketChannels, bucketChannelNames, bucketSubscriptions, bucketSubscribers,
		bucketMessages, bucketChannelMessages, bucketTopicMessages, bucketFlags,
		bucketPasswords, bucketUserSettings, bucketWatermarks, bucketUnreadBelow, bucketReadAbove,
		bucketPresence, bucketUserStatus, bucketAttachments, bucketAttachmentOwners, bucketAttachmentRefs,
		bucketAvatarBlobs, bucketReactions, bucketWebSessions,
		bucketConversations, bucketConversationIDs, bucketConversationMessages, bucketDMMessages,
		bucketPushOutbox, bucketPushSent,
		bucketSubmessages,
		bucketUserTopics, bucketTopicUsers,
		bucketDrafts, bucketSavedSnippets,
		bucketMutedUsers, bucketMutedBy, bucketAlertWords,
		bucketScheduledMessages, bucketScheduledDue,
		bucketUserGroups,
		bucketRealmEmoji, bucketLinkifiers, bucketPlaygrounds,
		bucketInvites, bucketInviteLinks, bucketInviteKeys,
		bucketProfileFields,
		bucketRealmExports,
	}

	// retiredBuckets are older schemas' buckets that migrate removes.
	retiredBuckets = [][]byte{[]byte("unread"), []byte("unread_trash")}

	keySchemaVersion = []byte("schema_version")
	keyKeySecret     = []byte("key_secret")
	keyRealmGroups   = []byte("realm_groups")
	keyUsersVersion  = []byte("users_version")
)

// storeHooks are how the store tells of committed changes.
type storeHooks struct {
	// changes hears every committed change clients are told about (see
	// changes.go), in commit order, in the publisher goroutine. The
	// writer answers once its publication is handed on; the hook may let
	// it answer sooner by calling release (a message: before the polls it
	// wakes are answered, or, to a big channel, once the sender's own
	// queues have it). release is a no-op but for a publication's last
	// change.
	changes func(change any, release func())
	// listening tells whether a user has event queues, and the number of
	// the latest one registered, so that work only listeners need is
	// skipped when nobody listens.
	listening func(userID uint64) (bool, uint64)
	// commits hears the size and time of every commit group.
	commits func(writes int, elapsed time.Duration)
}

// The store's failures that are not a request's fault. Its rejections,
// with their words for clients, are in envelope.go's catalogue.
var (
	errDatabaseLocked = errors.New("database is in use by another process")
	errBadCredentials = errors.New("invalid API key")
)

// Zulip's role numbers.
const (
	roleOwner  = 100
	roleAdmin  = 200
	roleMember = 400
	roleGuest  = 600
)

type user struct {
	ID       uint64 `json:"id"`
	Email    string `json:"email"`
	FullName string `json:"full_name"`
	Role     int    `json:"role"`
	Bot      bool   `json:"bot,omitempty"`
	Active   bool   `json:"active"`
	Joined   int64  `json:"joined"`
	// Avatar and AvatarMedium are the blobs of an uploaded avatar (none:
	// the default); AvatarVersion counts changes (store_avatars.go).
	Avatar        string `json:"avatar,omitempty"`
	AvatarMedium  string `json:"avatar_medium,omitempty"`
	AvatarVersion int    `json:"avatar_version,omitempty"`
	// Profile holds the custom profile field values, by field id.
	Profile map[string]profileValue `json:"profile,omitempty"`
}

func (u user) isAdmin() bool { return u.Role == roleOwner || u.Role == roleAdmin }

// pushKind tells Apple (APNs) tokens from Android (FCM) ones.
type pushKind byte

const (
	pushAPNs pushKind = 'a'
	pushFCM  pushKind = 'g'
)

type pushToken struct {
	Kind    pushKind `json:"kind"`
	Token   string   `json:"token"` // verbatim, as the device sent it
	AppID   string   `json:"appid,omitempty"`
	Created int64    `json:"created"`
}

type channel struct {
	ID          uint64 `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Private     bool   `json:"private,omitempty"`
	Created     int64  `json:"created"`
	CreatorID   uint64 `json:"creator_id,omitempty"`
	// Groups holds the permission settings (can_*_group) given other
	// values than Zulip's defaults, by setting name (store_channels.go).
	Groups map[string]groupSetting `json:"groups,omitempty"`
	// Archived: nobody may post in it (DELETE /streams/{id}); Default: new
	// users join it (POST /default_streams) (store_channel_admin.go).
	Archived bool `json:"archived,omitempty"`
	Default  bool `json:"default,omitempty"`
}

// subscription is one user's settings for one channel. A nil
// notification setting inherits the user's default, as in Zulip.
type subscription struct {
	Color                  string `json:"color"`
	Joined                 int64  `json:"joined"`
	Muted                  bool   `json:"muted,omitempty"`
	PinToTop               bool   `json:"pin_to_top,omitempty"`
	DesktopNotifications   *bool  `json:"desktop_notifications,omitempty"`
	AudibleNotifications   *bool  `json:"audible_notifications,omitempty"`
	PushNotifications      *bool  `json:"push_notifications,omitempty"`
	EmailNotifications     *bool  `json:"email_notifications,omitempty"`
	WildcardMentionsNotify *bool  `json:"wildcard_mentions_notify,omitempty"`
}

type message struct {
	ID        uint64 `json:"id"`
	SenderID  uint64 `json:"sender_id"`
	ChannelID uint64 `json:"channel_id"`
	Topic     string `json:"topic"`
	Content   string `json:"content"`
	Timestamp int64  `json:"timestamp"`
	Client    string `json:"client,omitempty"`
	Rendered  string `json:"rendered,omitempty"` // the content as HTML (internal/markdown)
	// EditHistory, newest first, LastEdit (the last content edit) and
	// LastMoved (the last topic or channel change), Unix seconds: none
	// until it is edited (store_message_edit.go).
	EditHistory []editEntry `json:"edit_history,omitempty"`
	LastEdit    int64       `json:"last_edit,omitempty"`
	LastMoved   int64       `json:"last_moved,omitempty"`

	// ConversationID is a direct message's conversation, its ChannelID
	// then 0 (store_dms.go).
	ConversationID uint64 `json:"conversation_id,omitempty"`
}

type store struct {
	outbox pushOutbox // whether sends queue pushes, and the push metrics (push_outbox.go)
	db     *bbolt.DB
	path   string  // the database file, read without the db (which close clears)
	keys   keyring // API keys' and sessions' hashes, and the credential cache (authcache.go)
	now    func() time.Time

	commits     chan commitRequest // to the committer (commit.go)
	stop        chan struct{}      // closed by close
	finished    chan struct{}      // closed when the committer has stopped
	feed        changeFeed         // committed changes, handed on by its own goroutine (changes.go)
	closeOnce   sync.Once
	commitStats commitStats

	decoded channelMemo // channels as decoded, by their stored bytes

	// hooks connect the store to whoever tells clients about changes
	// (the server's event hub); set once, read by the committer and the
	// publisher.
	hooks atomic.Pointer[storeHooks]
	maxID atomic.Uint64 // the largest message id
	// directory is every account, decoded once per change of any
	// (store_users.go).
	directory userDirectory
	// realmGroups are the organisation permission settings an
	// administrator changed (meta's realm_groups), by setting name.
	realmGroups atomic.Pointer[map[string]int]
	// userGroups is the user-defined groups as last committed, with
	// what their membership reaches (store_user_groups.go).
	userGroups atomic.Pointer[groupDirectory]
	// realmEmoji, linkifiers and playgrounds are the organisation's
	// custom emoji, linkifiers and code playgrounds, read at open and
	// replaced after each change (store_realm_emoji.go, store_linkifiers.go).
	realmEmoji  atomic.Pointer[realmEmojiSet]
	linkifiers  atomic.Pointer[[]linkifier]
	playgrounds atomic.Pointer[[]playground]
	// maxChannels bounds the channels the server holds (--max-channels; 0:
	// no bound, as in tests).
	maxChannels uint64

	presence presenceTable // store_presence.go
	// refsThrough is the last message whose upload links are indexed
	// (store_uploads.go), once refsLoaded.
	refsThrough atomic.Uint64
	refsLoaded  atomic.Bool
	// inFlight is the room and the blobs the uploads being streamed
	// hold (store_uploads.go).
	inFlight uploadsInFlight
	// sweepGrace is the upload janitor's grace period (0 until it runs):
	// a retired blob is timed to outlast it by retiredBlobWait only.
	sweepGrace atomic.Int64
}

// openStore opens (creating if needed) the database at path, waiting at
// most lockTimeout for another process to release it.
func openStore(path string, lockTimeout time.Duration) (*store, error) {
	if err := checkDatabaseFile(path); err != nil {
		return nil, err
	}
	var db *bbolt.DB
	err := guarded(path, func() (err error) {
		db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: lockTimeout, MaxSize: databaseSizeLimit(strconv.IntSize)})
		return err
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w", path, errDatabaseLocked)
	}
	if errors.Is(err, errDamaged) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &store{db: db, path: path, now: time.Now, commits: make(chan commitRequest, maxCommitGroup), stop: make(chan struct{}), finished: make(chan struct{}),
		feed: newChangeFeed()}
	s.presence.db, s.presence.stop = s, s.stop
	if err := os.Chmod(path, 0o600); err != nil { // bbolt sets the mode only on files it creates
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := guarded(path, func() error { return s.migrateIfNeeded(db) }); err != nil {
		db.Close()
		if errors.Is(err, errDamaged) {
			return nil, err
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	go s.committer()
	go s.feed.run(s.finished, &s.hooks)
	return s, nil
}

// migrateIfNeeded migrates in a write transaction only when the file is
// not already laid out as this zulite lays it out, so that opening a file
// that needs nothing writes nothing (and a file found damaged later by
// a read is left as it was).
func (s *store) migrateIfNeeded(db *bbolt.DB) error {
	current := false
	err := db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return nil
		}
		if v := meta.Get(keySchemaVersion); v == nil || btoi(v) != schemaVersion || meta.Get(keyKeySecret) == nil {
			return nil
		}
		for _, name := range allBuckets {
			if tx.Bucket(name) == nil {
				return nil
			}
		}
		for _, name := range retiredBuckets {
			if tx.Bucket(name) != nil {
				return nil
			}
		}
		current = true
		s.load(tx)
		return nil
	})
	if err != nil || current {
		return err
	}
	return db.Update(s.migrate)
}

// migrate creates every bucket and the key secret, and refuses a file
// written by a newer zulite.
func (s *store) migrate(tx *bbolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	v := meta.Get(keySchemaVersion)
	if v != nil && btoi(v) > schemaVersion {
		return fmt.Errorf("schema version %d is newer than this zulite understands (%d)", btoi(v), schemaVersion)
	}
	if v != nil && btoi(v) < 4 { // records from before they had ids
		if err := numberAttachments(tx); err != nil {
			return fmt.Errorf("migrate to schema 4: %w", err)
		}
	}
	if v != nil && btoi(v) < 2 {
		if err := indexTopics(tx); err != nil {
			return fmt.Errorf("migrate to schema 2: %w", err)
		}
	}
	if v != nil && btoi(v) < 3 {
		if err := migrateUnread(tx); err != nil {
			return fmt.Errorf("migrate to schema 3: %w", err)
		}
	}
	for _, name := range retiredBuckets { // emptied by the migrations above
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
	}
	if err := meta.Put(keySchemaVersion, itob(schemaVersion)); err != nil {
		return err
	}
	secret := meta.Get(keyKeySecret)
	if secret == nil {
		secret = make([]byte, 32)
		rand.Read(secret)
		if err := meta.Put(keyKeySecret, secret); err != nil {
			return err
		}
	}
	s.load(tx)
	return nil
}

// load reads what the store keeps in memory from a laid-out file.
func (s *store) load(tx *bbolt.Tx) {
	s.keys.open(slices.Clone(tx.Bucket(bucketMeta).Get(keyKeySecret)), s)
	s.maxID.Store(tx.Bucket(bucketMessages).Sequence())
	s.loadRealmGroups(tx)
	s.loadUserGroups(tx)
	s.loadRealmEmoji(tx)
	s.loadLinkifiers(tx)
}

// close stops the committer (writes still waiting get errStoreClosed)
// and closes the file.
func (s *store) close() error {
	s.presence.close()
	s.quiesce()
	return s.db.Close()
}

// quiesce stops the store's writer, the committer, and the publisher
// once it has handed on every committed change;
// writes after it fail with errStoreClosed. (Tests check the file then:
// bbolt's check is only exact while nothing writes.)
func (s *store) quiesce() {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.finished
	<-s.feed.stopped
}

// update runs fn in a write transaction shared with concurrent callers.
// A rejection from fn is passed back to its caller alone: fn has written
// nothing yet, so the others' changes still commit, and a stream of bad
// requests cannot make every writer's work run twice.
func (s *store) update(fn func(tx *bbolt.Tx) error) error {
	return s.updateReporting(func(tx *bbolt.Tx, _ func(change any)) error { return fn(tx) })
}

// updateReporting is update for changes that clients hear about: fn
// reports them with report, and once the transaction is committed they
// go, in commit order, through the change feed to the hooks' changes (so
// events reach queues in the order the changes happened) while the
// committer goes on; the caller returns once they are handed on. A run
// that is repeated reports afresh.
func (s *store) updateReporting(fn func(tx *bbolt.Tx, report func(change any)) error) error {
	var rejection error
	var changes []any
	var published chan struct{} // closed once changes are handed on
	report := func(change any) { changes = append(changes, change) }
	err := s.commit(func(tx *bbolt.Tx) error {
		rejection, changes = nil, changes[:0]
		err := fn(tx, report)
		if isRejection(err) {
			rejection, err, changes = err, nil, changes[:0]
		}
		return err
	}, func() {
		for _, c := range changes {
			switch c := c.(type) {
			case accountChanged:
				s.keys.forget(c.Email)
			case groupsRebuilt:
				s.placeGroups(c.directory) // store_user_groups.go
			}
		}
		if len(changes) > 0 {
			published = make(chan struct{})
			s.feed.push(publication{changes, published})
		}
	})
	if err != nil {
		return err
	}
	if published != nil {
		<-published
	}
	return rejection
}

// ping answers whether the database can be read.
func (s *store) ping() error {
	return s.view(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			return errors.New("no meta bucket")
		}
		return nil
	})
}

// size is the database file's size in bytes.
// storeFigures is what /metrics reports of the database.
type storeFigures struct {
	bytes        int64 // the file's size
	pagesWritten int64 // data and freelist pages written by commits since the start
}

func (s *store) figures() (storeFigures, error) {
	var f storeFigures
	err := s.view(func(tx *bbolt.Tx) error {
		f.bytes = tx.Size()
		return nil
	})
	if err != nil {
		return f, err
	}
	stats := s.db.Stats()
	// PageCount counts every page a commit allocates, overflow pages
	// included, and each is written once; Write would count a page and
	// its overflow as one.
	f.pagesWritten = stats.TxStats.GetPageCount()
	return f, nil
}

// snapshot writes a consistent copy of the database to w from one read
// transaction, so writes go on meanwhile, and returns its size. While
// the transaction is open bbolt cannot grow its mapping of the file, so
// a write that needs more room waits for it to end: w should take the
// copy at the speed of a local disk (snapshotFile).
func (s *store) snapshot(w io.Writer) (int64, error) {
	var size int64
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		size, err = tx.WriteTo(w)
		return err
	})
	return size, err
}

// snapshotFile writes a consistent copy of the database to a new file
// beside it (mode 0600) and returns the file, to be read from its start,
// and its size. The read transaction has ended by then, so the copy may
// be read as slowly as a client likes without holding up a write. The
// file is unlinked at once: closing it gives its space back, and a server
// killed meanwhile leaves nothing behind.
func (s *store) snapshotFile() (*os.File, int64, error) {
	path := s.db.Path()
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-backup-*")
	if err != nil {
		return nil, 0, fmt.Errorf("copy beside the database: %w", err)
	}
	err = os.Remove(f.Name())
	var size int64
	if err == nil {
		size, err = s.snapshot(f)
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, 0, fmt.Errorf("copy beside the database: %w", err)
	}
	return f, size, nil
}

func itob(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func btoi(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func emailKey(email string) []byte { return []byte(foldEmail(email)) }
func nameKey(name string) []byte   { return []byte(foldChannelName(name)) }

// foldEmail, foldChannelName and foldTopic are the one case fold of each
// kind of name: the one its index's keys are made with (user_emails,
// channel_names, topic_messages), so that whatever else compares two
// names, a live narrow or a listing, agrees with the index. It is
// strings.ToLower, as Zulip's live narrow lowers with Python's
// str.lower: the Kelvin sign "K" is "k", but the long "ſ" is not "s".
// Changing one changes the keys of databases already written.
func foldEmail(email string) string      { return strings.ToLower(email) }
func foldChannelName(name string) string { return strings.ToLower(name) }
func foldTopic(topic string) string      { return strings.ToLower(topic) }

// sameChannelName tells whether two names are one channel's: the name
// index's normalisation, the only one used to compare names.
func sameChannelName(a, b string) bool { return foldChannelName(a) == foldChannelName(b) }

// listAll decodes every record of a bucket of JSON values, in key order.
func listAll[T any](s *store, bucket []byte) ([]T, error) {
	var list []T
	err := s.view(func(tx *bbolt.Tx) error {
		list = nil
		return tx.Bucket(bucket).ForEach(func(_, v []byte) error {
			var record T
			if err := json.Unmarshal(v, &record); err != nil {
				return err
			}
			list = append(list, record)
			return nil
		})
	})
	return list, err
}

func putJSON(b *bbolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, data)
}

func getJSON(b *bbolt.Bucket, key []byte, v any) error {
	data := b.Get(key)
	if data == nil {
		return fmt.Errorf("missing record %x", key)
	}
	return json.Unmarshal(data, v)
}

func deletePrefix(b *bbolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, slices.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
