package main

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"

	"go.etcd.io/bbolt"
)

// Invitations: Zulip's PreregistrationUser (an e-mail invitation) and
// MultiuseInvite (a reusable link), each with its confirmation key
// (confirmation/models.py). The two kinds number their ids apart, as
// Zulip's two tables do, so an invitation is named by its kind and id.
// They are not exported (export.go), as Zulip's export lists them among
// its NON_EXPORTED_TABLES: their links name the old server.

var (
	bucketInvites     = []byte("invites")
	bucketInviteLinks = []byte("invite_links")
	bucketInviteKeys  = []byte("invite_keys")
)

// An invitation's status, confirmation/settings.py's STATUS_USED and
// STATUS_REVOKED (0: still usable). A reusable link is never used up.
const (
	inviteUsed    = 1
	inviteRevoked = 2
)

// Zulip's INVITATION_LINK_VALIDITY_DAYS (10): an invitation given no
// invite_expires_in_minutes lasts this long; null lasts forever.
const defaultInviteMinutes = 10 * 24 * 60

// maxInviteRecords bounds the invitations the store keeps, live and
// closed (zulite's bound; Zulip sets none but a daily quota on open
// servers): every listing walks them all. A closed one (used, revoked,
// expired) is dropped deadInviteRetention after it closed, making room.
const (
	maxInviteRecords    = 5000
	deadInviteRetention = 30 * 24 * 3600
)

// invite is one invitation as stored.
type invite struct {
	ID       uint64   `json:"id"`
	Multiuse bool     `json:"multiuse,omitempty"`
	Email    string   `json:"email,omitempty"` // e-mail invitations only
	Referrer uint64   `json:"referrer"`
	As       int      `json:"invited_as"`
	Invited  int64    `json:"invited"`           // Unix seconds
	Expires  int64    `json:"expires,omitempty"` // Unix seconds; 0: never
	Key      string   `json:"key"`
	Channels []uint64 `json:"channels,omitempty"`
	// Groups: the user groups the newcomer joins (Zulip's
	// PreregistrationUser.groups and MultiuseInvite.groups).
	Groups []int `json:"groups,omitempty"`
	// Defaults: the newcomer also joins the organisation's default
	// channels (include_realm_default_subscriptions).
	Defaults bool    `json:"defaults,omitempty"`
	Notify   bool    `json:"notify,omitempty"`  // notify_referrer_on_join
	Welcome  *string `json:"welcome,omitempty"` // welcome_message_custom_text
	Status   int     `json:"status,omitempty"`
	Closed   int64   `json:"closed,omitempty"` // when it was used or revoked
}

// live tells an invitation that may still be accepted at now.
func (iv invite) live(now int64) bool {
	return iv.Status == 0 && (iv.Expires == 0 || now <= iv.Expires)
}

// closedAt is when an invitation stopped being usable (0: it has not).
func (iv invite) closedAt(now int64) int64 {
	switch {
	case iv.Status != 0:
		return iv.Closed
	case iv.Expires != 0 && now > iv.Expires:
		return iv.Expires
	}
	return 0
}

// newConfirmationKey is confirmation/models.py's generate_key: 15 random
// bytes in lower-case base32, 24 characters.
func newConfirmationKey() string {
	b := make([]byte, 15)
	rand.Read(b)
	return strings.ToLower(base32.StdEncoding.EncodeToString(b))
}

// inviteExpiry is when an invitation made at now for that many minutes
// ends (nil: never). A negative count makes one already expired, as in
// Zulip; one beyond any date saturates instead of failing.
func inviteExpiry(now int64, minutes *int64) int64 {
	if minutes == nil {
		return 0
	}
	m := *minutes
	if m > (math.MaxInt64-now)/60 {
		return math.MaxInt64
	}
	if m < -now/60 {
		return 1
	}
	return now + m*60
}

// inviteRequest is POST /invites or POST /invites/multiuse as the
// store needs it, parameters read and checked.
type inviteRequest struct {
	Caller   user
	Multiuse bool
	Emails   []string // e-mail invitations
	As       int
	Minutes  *int64  // nil: never expires
	Channels []int64 // as given: an id of no channel is refused
	Groups   []int64 // group_ids as given: each a user group the caller may add members to
	Defaults bool
	Notify   bool
	Welcome  *string
	// Invalid are the addresses that did not validate: with any, nothing
	// is stored, and they are told with those skipped.
	Invalid []skippedInvitee
	// ChannelRefusal refuses a channel the caller may not reach, and
	// SubscribeRefusal one they may not add others to; LateRefusal, when
	// set, refuses the request once the channels are checked (rejections
	// made of Zulip's texts by the handler).
	ChannelRefusal   func(id int64) error
	SubscribeRefusal error
	LateRefusal      error
}

// skippedInvitee is Zulip's (email, message, deactivated) triple of an
// address not invited.
type skippedInvitee struct {
	Email       string
	Msg         string
	Deactivated bool
}

// createInvites stores invitations: one per address, or one reusable
// link. Addresses that already have an account are skipped (Zulip's
// do_invite_users); the channels are checked in the same transaction.
func (s *store) createInvites(req inviteRequest) (made []invite, skipped []skippedInvitee, err error) {
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		made, skipped = nil, nil
		now := s.now().Unix()
		var channels []uint64
		for _, id := range req.Channels {
			if id <= 0 {
				return req.ChannelRefusal(id)
			}
			ch, err := s.channelByID(tx, uint64(id))
			if err != nil || !s.canAccess(tx, req.Caller, ch) {
				return req.ChannelRefusal(id)
			}
			if !slices.Contains(channels, ch.ID) {
				channels = append(channels, ch.ID)
			}
		}
		for _, id := range channels {
			ch, err := s.channelByID(tx, id)
			if err != nil {
				return err
			}
			if !mayInviteTo(tx, s, req.Caller, ch) {
				return req.SubscribeRefusal
			}
		}
		groups, err := s.groupsForInvite(tx, req.Caller, req.Groups)
		if err != nil {
			return err
		}
		if req.LateRefusal != nil {
			return req.LateRefusal
		}
		var todo []string
		for _, email := range req.Emails {
			u, err := userByEmail(tx, email)
			switch {
			case err == nil && u.Active:
				skipped = append(skipped, skippedInvitee{email, "Already has an account.", false})
			case err == nil:
				skipped = append(skipped, skippedInvitee{email, "Account has been deactivated.", true})
			case errors.Is(err, errNoSuchUser):
				todo = append(todo, email)
			default:
				return err
			}
		}
		if len(req.Invalid) > 0 {
			return refusal(errInvitationFailed("Some emails did not validate, so we didn't send any invitations.", append(slices.Clone(req.Invalid), skipped...), false))
		}
		if !req.Multiuse && len(todo) == 0 {
			return refusal(errInvitationFailed("We weren't able to invite anyone.", skipped, false))
		}
		count := 1
		if !req.Multiuse {
			count = len(todo)
		}
		room, err := pruneInvites(tx, now)
		if err != nil {
			return err
		}
		if count > room {
			return errInvitesFull
		}
		iv := invite{Multiuse: req.Multiuse, Referrer: req.Caller.ID, As: req.As, Invited: now, Expires: inviteExpiry(now, req.Minutes),
			Channels: channels, Groups: groups, Defaults: req.Defaults, Notify: req.Notify, Welcome: req.Welcome}
		if req.Multiuse {
			todo = []string{""}
		}
		for _, email := range todo {
			iv.Email, iv.Key = email, newConfirmationKey()
			if err := putInvite(tx, &iv, true); err != nil {
				return err
			}
			made = append(made, iv)
		}
		report(invitesChanged{Audience: inviteAudience(tx, req.Caller.ID)})
		return nil
	})
	return made, skipped, err
}

// groupsForInvite is Zulip's access_user_groups_for_invite: each id a
// user group the caller may add members to (access_user_group_for_update
// with can_add_members_group; a system group is "Insufficient
// permission", an id of no group "Invalid user group"), checked in the
// order given; the groups once each, as Zulip's many-to-many keeps them.
func (s *store) groupsForInvite(tx *bbolt.Tx, caller user, ids []int64) ([]int, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	d, err := groupsIn(tx)
	if err != nil {
		return nil, err
	}
	var groups []int
	for _, id := range ids {
		if id <= 0 || id > math.MaxInt32 {
			return nil, errNoSuchGroup
		}
		if _, err := s.groupForUpdate(tx, d, caller, int(id), groupCanAddMembers, false); err != nil {
			return nil, err
		}
		if !slices.Contains(groups, int(id)) {
			groups = append(groups, int(id))
		}
	}
	return groups, nil
}

// joinInvitedGroups puts a newcomer in the user groups their invitation
// names (Zulip's set_up_streams_and_groups_for_new_human_user,
// bulk_add_members_to_user_groups: a user_group add_members event a
// group). A group deactivated since is left out: zulite adds nobody to
// a deactivated group, and queues without include_deactivated_groups
// have forgotten it.
func joinInvitedGroups(tx *bbolt.Tx, report func(any), u user, ids []int) error {
	for _, id := range ids {
		g, err := userGroupByID(tx, id)
		if err != nil || g.Deactivated {
			continue
		}
		if _, ok := slices.BinarySearch(g.Members, u.ID); ok {
			continue
		}
		g.Members = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(g.Members), u.ID))))
		if err := putGroup(tx, g); err != nil {
			return err
		}
		report(userGroupChanged{Op: "add_members", GroupID: id, UserIDs: []uint64{u.ID}})
	}
	return nil
}

// mayInviteTo is Zulip's get_streams_to_which_user_cannot_add_subscribers
// for one channel the caller can reach: the organisation's
// can_add_subscribers_group, an administrator, or the channel's
// can_administer_channel_group or can_add_subscribers_group. (zulite
// has no default channels, which Zulip also lets through.)
func mayInviteTo(tx *bbolt.Tx, s *store, u user, ch channel) bool {
	return u.isAdmin() || s.allowed(u, realmCanAddSubscribersGroup) ||
		s.includes(ch.groupSetting(channelCanAdministerChannelGroup), u) || s.includes(ch.groupSetting(channelCanAddSubscribersGroup), u)
}

// putInvite stores an invitation, numbering it when fresh.
func putInvite(tx *bbolt.Tx, iv *invite, fresh bool) error {
	b := tx.Bucket(bucketInvites)
	kind := byte('e')
	if iv.Multiuse {
		b, kind = tx.Bucket(bucketInviteLinks), 'm'
	}
	if fresh {
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		iv.ID = id
		if err := tx.Bucket(bucketInviteKeys).Put([]byte(iv.Key), append([]byte{kind}, itob(id)...)); err != nil {
			return err
		}
	}
	return putJSON(b, itob(iv.ID), iv)
}

// pruneInvites drops invitations closed longer than deadInviteRetention
// and answers how many more the store may hold.
func pruneInvites(tx *bbolt.Tx, now int64) (int, error) {
	kept := 0
	for _, name := range [][]byte{bucketInvites, bucketInviteLinks} {
		var gone []invite
		err := tx.Bucket(name).ForEach(func(_, v []byte) error {
			var iv invite
			if err := json.Unmarshal(v, &iv); err != nil {
				return err
			}
			if at := iv.closedAt(now); at != 0 && now-at > deadInviteRetention {
				gone = append(gone, iv)
			} else {
				kept++
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		for _, iv := range gone {
			if err := tx.Bucket(name).Delete(itob(iv.ID)); err != nil {
				return 0, err
			}
			if err := tx.Bucket(bucketInviteKeys).Delete([]byte(iv.Key)); err != nil {
				return 0, err
			}
		}
	}
	return max(0, maxInviteRecords-kept), nil
}

// inviteAudience is who hears invites_changed: the administrators
// (Zulip's get_admin_users_and_bots: active ones) and the invitation's
// referrer (zerver/lib/invites.py's notify_invites_changed).
func inviteAudience(tx *bbolt.Tx, referrer uint64) []uint64 {
	var ids []uint64
	tx.Bucket(bucketUsers).ForEach(func(_, v []byte) error {
		var u user
		if json.Unmarshal(v, &u) == nil && u.Active && u.isAdmin() {
			ids = append(ids, u.ID)
		}
		return nil
	})
	if referrer != 0 && !slices.Contains(ids, referrer) {
		ids = append(ids, referrer)
	}
	return ids
}

// invites lists the live invitations the user may manage, e-mail ones
// first, each kind by id: an administrator's are everyone's, anyone
// else's their own (do_get_invites_controlled_by_user).
func (s *store) invites(u user) ([]invite, error) {
	var list []invite
	err := s.view(func(tx *bbolt.Tx) error {
		list = nil
		now := s.now().Unix()
		for _, name := range [][]byte{bucketInvites, bucketInviteLinks} {
			err := tx.Bucket(name).ForEach(func(_, v []byte) error {
				var iv invite
				if err := json.Unmarshal(v, &iv); err != nil {
					return err
				}
				if iv.live(now) && (u.isAdmin() || iv.Referrer == u.ID) {
					list = append(list, iv)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return list, err
}

// inviteAccess is zerver/views/invite.py's access_invite_by_id and
// access_multiuse_invite_by_id: the invitation exists, and one that is
// not the caller's needs an administrator (an owner for an owner's
// invitation), which refuse says in Zulip's words.
type inviteAccess struct {
	Caller   user
	Multiuse bool
	ID       uint64
	Refuse   func(invitedAs int) error
}

func (a inviteAccess) check(tx *bbolt.Tx) (invite, error) {
	b := tx.Bucket(bucketInvites)
	if a.Multiuse {
		b = tx.Bucket(bucketInviteLinks)
	}
	v := b.Get(itob(a.ID))
	if v == nil {
		return invite{}, errNoSuchInvite
	}
	var iv invite
	if err := json.Unmarshal(v, &iv); err != nil {
		return invite{}, err
	}
	if iv.Referrer != a.Caller.ID {
		if err := a.Refuse(iv.As); err != nil {
			return invite{}, err
		}
	}
	if a.Multiuse && iv.Status == inviteRevoked {
		return invite{}, errInviteRevokedAlready
	}
	return iv, nil
}

// revokeInvite revokes an e-mail invitation or a reusable link
// (do_revoke_user_invite, do_revoke_multi_use_invite).
func (s *store) revokeInvite(a inviteAccess) error {
	return s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		iv, err := a.check(tx)
		if err != nil {
			return err
		}
		iv.Status, iv.Closed = inviteRevoked, s.now().Unix()
		if err := putInvite(tx, &iv, false); err != nil {
			return err
		}
		report(invitesChanged{Audience: inviteAudience(tx, iv.Referrer)})
		return nil
	})
}

// inviteToResend is the e-mail invitation POST /invites/{id}/resend
// mails again, with its referrer. As in Zulip's do_send_user_invite_email,
// nothing about the invitation changes: its link and expiry stay.
func (s *store) inviteToResend(a inviteAccess) (invite, user, error) {
	var iv invite
	var referrer user
	err := s.view(func(tx *bbolt.Tx) (err error) {
		if iv, err = a.check(tx); err != nil {
			return err
		}
		referrer, err = lookUpUser(tx, iv.Referrer)
		return err
	})
	return iv, referrer, err
}

// inviteByKey finds an invitation by its confirmation key, with its
// referrer; errNoSuchInvite when no invitation has that key.
func (s *store) inviteByKey(key string) (invite, user, error) {
	var iv invite
	var referrer user
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		iv, err = inviteOfKey(tx, key)
		if err != nil {
			return err
		}
		referrer, _ = lookUpUser(tx, iv.Referrer)
		return nil
	})
	return iv, referrer, err
}

func inviteOfKey(tx *bbolt.Tx, key string) (invite, error) {
	ref := tx.Bucket(bucketInviteKeys).Get([]byte(key))
	if len(ref) != 9 {
		return invite{}, errNoSuchInvite
	}
	b := tx.Bucket(bucketInvites)
	if ref[0] == 'm' {
		b = tx.Bucket(bucketInviteLinks)
	}
	v := b.Get(ref[1:])
	if v == nil {
		return invite{}, errNoSuchInvite
	}
	var iv invite
	err := json.Unmarshal(v, &iv)
	return iv, err
}

// signup is a newcomer's account made from an invitation.
type signup struct {
	Key      string
	Email    string // a reusable link's; an e-mail invitation has its own
	FullName string
	Hash     string // the password's
}

// acceptInvite makes the account an invitation offers, in one
// transaction: with the invited role, in the invited channels that
// still exist; an e-mail invitation is used up, and any other pending
// one to the same address revoked (Zulip's revoke_preregistration_users).
func (s *store) acceptInvite(in signup) (user, error) {
	var u user
	key := newAPIKey()
	err := s.updateGroups(func(tx *bbolt.Tx, report func(any)) error { // the invited groups: store_user_groups.go
		now := s.now().Unix()
		iv, err := inviteOfKey(tx, in.Key)
		if err != nil {
			return err
		}
		if !iv.live(now) {
			return errInviteExpired
		}
		email := in.Email
		if !iv.Multiuse {
			email = iv.Email
		}
		if existing, err := userByEmail(tx, email); err == nil {
			if existing.Active {
				return errEmailTaken
			}
			return errUserDeactivated
		}
		var channels []channel
		for _, id := range iv.Channels {
			if ch, err := s.channelByID(tx, id); err == nil {
				channels = append(channels, ch)
			}
		}
		// The checks are done: from here on, only writes.
		if u, err = s.createAccountTx(tx, report, email, in.FullName, iv.As, false, in.Hash, key); err != nil {
			return err
		}
		if iv.Defaults { // include_realm_default_subscriptions: the default channels too
			if err := s.joinDefaultChannels(tx, u, report); err != nil { // store_channel_admin.go
				return err
			}
			channels = slices.DeleteFunc(channels, func(ch channel) bool { return isSubscribed(tx, u.ID, ch.ID) })
		}
		change := subscriptionsChanged{Op: "add"}
		for _, ch := range channels {
			if err := s.addColoredSubscription(tx, u.ID, ch.ID, ""); err != nil {
				return err
			}
		}
		if len(channels) > 0 {
			change.Members = []membership{{User: u, Channels: channels}}
			if err := s.audiences(tx, &change, nil); err != nil {
				return err
			}
			report(change)
		}
		if err := joinInvitedGroups(tx, report, u, iv.Groups); err != nil {
			return err
		}
		if !iv.Multiuse {
			iv.Status, iv.Closed = inviteUsed, now
			if err := putInvite(tx, &iv, false); err != nil {
				return err
			}
		}
		if err := revokeOthers(tx, email, iv, now); err != nil {
			return err
		}
		report(invitesChanged{Audience: inviteAudience(tx, iv.Referrer)})
		return nil
	})
	return u, err
}

// revokeOthers revokes the pending e-mail invitations to an address
// that has just made its account, but the one it used.
func revokeOthers(tx *bbolt.Tx, email string, used invite, now int64) error {
	var others []invite
	err := tx.Bucket(bucketInvites).ForEach(func(_, v []byte) error {
		var iv invite
		if err := json.Unmarshal(v, &iv); err != nil {
			return err
		}
		if iv.Status == 0 && foldEmail(iv.Email) == foldEmail(email) && (used.Multiuse || iv.ID != used.ID) {
			others = append(others, iv)
		}
		return nil
	})
	for _, iv := range others {
		iv.Status, iv.Closed = inviteRevoked, now
		if err == nil {
			err = putInvite(tx, &iv, false)
		}
	}
	return err
}

// expireInvitesOf ends the live invitations a deactivated account made,
// as Zulip's revoke_invites_generated_by_user does (it sets their expiry
// to now) and tells the administrators.
func expireInvitesOf(tx *bbolt.Tx, referrer uint64, now int64, report func(any)) error {
	var ended []invite
	for _, name := range [][]byte{bucketInvites, bucketInviteLinks} {
		err := tx.Bucket(name).ForEach(func(_, v []byte) error {
			var iv invite
			if err := json.Unmarshal(v, &iv); err != nil {
				return err
			}
			if iv.Referrer == referrer && iv.live(now) {
				ended = append(ended, iv)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, iv := range ended {
		iv.Expires = max(1, now-1) // expired: live needs now <= Expires
		if err := putInvite(tx, &iv, false); err != nil {
			return err
		}
	}
	if len(ended) > 0 {
		report(invitesChanged{Audience: inviteAudience(tx, 0)})
	}
	return nil
}
