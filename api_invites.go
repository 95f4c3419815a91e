package main

// Invitations (zerver/views/invite.py): e-mail invitations (POST
// /invites, resent by POST /invites/{invite_id}/resend, revoked by
// DELETE /invites/{invite_id}), reusable invitation links (POST
// /invites/multiuse, revoked by DELETE /invites/multiuse/{invite_id})
// and the list of both (GET /invites). Who may invite is the
// organisation's can_invite_users_group (members, by default) and
// create_multiuse_invite_group (administrators); signup.go is the page
// an invitation's link opens.

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Zulip's PreregistrationUser.INVITE_AS values, and its
// Realm.MAX_REALM_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH.
var inviteRoles = []int64{roleOwner, roleAdmin, roleModerator, roleMember, roleGuest}

const maxWelcomeTextLength = 8000

// membersOnly is Zulip's require_member_or_admin: no guests, no bots.
func membersOnly(u user) error {
	switch {
	case u.Role == roleGuest:
		return errGuestsNotAllowed
	case u.Bot:
		return errBotRequest
	}
	return nil
}

// inviteParams are the parameters both kinds of invitation take, read
// in Zulip's order (its typed_endpoint's, by name).
type inviteParams struct {
	groups   []int64
	defaults bool
	as       int
	minutes  *int64
}

func readInviteParams(p *params) (inviteParams, error) {
	var ip inviteParams
	var err error
	if _, ok := p.lookup("group_ids"); ok {
		if ip.groups, err = intList(p, "group_ids"); err != nil {
			return ip, err
		}
	}
	if ip.defaults, err = p.optionalBool("include_realm_default_subscriptions", false); err != nil {
		return ip, err
	}
	ip.as = roleMember
	if v, ok := p.lookup("invite_as"); ok {
		n, err := parseInt("invite_as", v)
		if err != nil {
			return ip, err
		}
		if !containsInt(inviteRoles, n) {
			return ip, errNotInPossibleValues("invite_as")
		}
		ip.as = int(n)
	}
	minutes := int64(defaultInviteMinutes)
	ip.minutes = &minutes
	if v, ok := p.lookup("invite_expires_in_minutes"); ok {
		if strings.TrimSpace(v) == "null" {
			ip.minutes = nil
		} else if minutes, err = parseInt("invite_expires_in_minutes", v); err != nil {
			return ip, err
		}
	}
	return ip, nil
}

func containsInt(list []int64, n int64) bool {
	for _, v := range list {
		if v == n {
			return true
		}
	}
	return false
}

// readWelcomeText reads welcome_message_custom_text (absent: null).
func readWelcomeText(p *params) (*string, error) {
	v, ok := p.lookup("welcome_message_custom_text")
	if !ok {
		return nil, nil
	}
	if utf8.RuneCountInString(v) > maxWelcomeTextLength {
		return nil, errInviteWelcomeTooLong
	}
	return &v, nil
}

// checkInviteRole is check_role_based_permissions: an owner's
// invitation needs an owner, an administrator's or moderator's an
// administrator.
func checkInviteRole(caller user, as int) error {
	if as == roleOwner && caller.Role != roleOwner {
		return errNotOwner
	}
	if as <= roleModerator && !caller.isAdmin() {
		return errInviteNeedsAdmin
	}
	return nil
}

// sendInvites serves POST /api/v1/invites: one invitation per address,
// mailed once stored.
func (s *server) sendInvites(r *apiRequest) (any, error) {
	ip, err := readInviteParams(r.params)
	if err != nil {
		return nil, err
	}
	raw, err := r.params.requiredString("invitee_emails")
	if err != nil {
		return nil, err
	}
	notify, err := r.params.optionalBool("notify_referrer_on_join", true)
	if err != nil {
		return nil, err
	}
	channels, err := intList(r.params, "stream_ids")
	if err != nil {
		return nil, err
	}
	welcome, err := readWelcomeText(r.params)
	if err != nil {
		return nil, err
	}
	if !s.store.allowed(r.user, realmCanInviteUsersGroup) {
		return nil, errInsufficientPermission
	}
	if err := checkInviteRole(r.user, ip.as); err != nil {
		return nil, err
	}
	if raw == "" {
		return nil, errNoInviteeEmails
	}
	var valid []string
	var invalid []skippedInvitee
	for _, email := range inviteeEmails(raw) {
		if checkEmail(email) != nil {
			invalid = append(invalid, skippedInvitee{email, "Invalid address.", false})
		} else {
			valid = append(valid, email)
		}
	}
	req := s.inviteRequest(r.user, ip, channels, welcome)
	req.Emails, req.Invalid, req.Notify = valid, invalid, notify
	if s.mailer == nil && req.LateRefusal == nil {
		req.LateRefusal = refusal(errNoMailRelay)
	}
	made, skipped, err := s.store.createInvites(req)
	if err != nil {
		return nil, err
	}
	for _, iv := range made {
		s.mailInvite(iv, r.user)
	}
	if len(skipped) > 0 {
		return nil, errInvitationFailed("Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!", skipped, true)
	}
	return nil, nil
}

// inviteeEmails is get_invitee_emails_set: addresses split at commas
// and newlines (empty parts kept, which then fail to validate), "Name
// <address>" taken for its address, trimmed, each once (in the order
// first given; Zulip's set has none).
func inviteeEmails(raw string) []string {
	var out []string
	for _, part := range strings.Split(strings.ReplaceAll(raw, "\n", ","), ",") {
		if open := strings.IndexByte(part, '<'); open >= 0 {
			if end := strings.LastIndexByte(part, '>'); end > open {
				part = part[open+1 : end]
			}
		}
		part = strings.TrimSpace(part)
		if !containsString(out, part) {
			out = append(out, part)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// inviteRequest is what both kinds of invitation hand the store.
func (s *server) inviteRequest(caller user, ip inviteParams, channels []int64, welcome *string) inviteRequest {
	req := inviteRequest{Caller: caller, As: ip.as, Minutes: ip.minutes, Defaults: ip.defaults, Welcome: welcome, Channels: channels,
		Groups: ip.groups, ChannelRefusal: errInviteChannel, SubscribeRefusal: refusal(errCannotSubscribe)}
	if welcome != nil && !caller.isAdmin() {
		req.LateRefusal = refusal(errInviteNeedsAdmin)
	}
	return req
}

// createInviteLink serves POST /api/v1/invites/multiuse: a reusable
// link, {"invite_link": URL}, in Zulip's form /join/KEY/.
func (s *server) createInviteLink(r *apiRequest) (any, error) {
	ip, err := readInviteParams(r.params)
	if err != nil {
		return nil, err
	}
	var channels []int64
	if _, ok := r.params.lookup("stream_ids"); ok {
		if channels, err = intList(r.params, "stream_ids"); err != nil {
			return nil, err
		}
	}
	welcome, err := readWelcomeText(r.params)
	if err != nil {
		return nil, err
	}
	if !s.store.allowed(r.user, realmCreateMultiuseInviteGroup) {
		return nil, errInsufficientPermission
	}
	if err := checkInviteRole(r.user, ip.as); err != nil {
		return nil, err
	}
	req := s.inviteRequest(r.user, ip, channels, welcome)
	req.Multiuse = true
	made, _, err := s.store.createInvites(req)
	if err != nil {
		return nil, err
	}
	return struct {
		InviteLink string `json:"invite_link"`
	}{s.joinURL(made[0])}, nil
}

// joinURL is an invitation's link: Zulip's confirmation_url, /join/KEY/
// for a reusable link and /accounts/do_confirm/KEY for an e-mail one.
func (s *server) joinURL(iv invite) string {
	if iv.Multiuse {
		return s.baseURL + "/join/" + iv.Key + "/"
	}
	return s.baseURL + "/accounts/do_confirm/" + iv.Key
}

// inviteObject is Zulip's Invite: PreregistrationInviteData for an
// e-mail invitation, MultiuseInviteData for a link, in their order.
type inviteObject struct {
	Email            string `json:"email,omitempty"`
	InvitedByUserID  uint64 `json:"invited_by_user_id"`
	Invited          int64  `json:"invited"`
	ExpiryDate       *int64 `json:"expiry_date"`
	ID               uint64 `json:"id"`
	LinkURL          string `json:"link_url,omitempty"`
	InvitedAs        int    `json:"invited_as"`
	IsMultiuse       bool   `json:"is_multiuse"`
	NotifyReferrerOn *bool  `json:"notify_referrer_on_join,omitempty"`
}

// listInvites serves GET /api/v1/invites: the live invitations the
// caller may manage.
func (s *server) listInvites(r *apiRequest) (any, error) {
	list, err := s.store.invites(r.user)
	if err != nil {
		return nil, err
	}
	out := make([]inviteObject, 0, len(list))
	for _, iv := range list {
		o := inviteObject{InvitedByUserID: iv.Referrer, Invited: iv.Invited, ID: iv.ID, InvitedAs: iv.As, IsMultiuse: iv.Multiuse}
		if iv.Expires != 0 {
			expires := iv.Expires
			o.ExpiryDate = &expires
		}
		if iv.Multiuse {
			o.LinkURL = s.joinURL(iv)
		} else {
			notify := iv.Notify
			o.Email, o.NotifyReferrerOn = iv.Email, &notify
		}
		out = append(out, o)
	}
	return struct {
		Invites []inviteObject `json:"invites"`
	}{out}, nil
}

// inviteAccess reads {invite_id} (Zulip's URL pattern: digits, else 404)
// and says how a caller may reach someone else's invitation.
func (s *server) inviteAccess(r *apiRequest, multiuse bool) (inviteAccess, error) {
	id, err := pathDigits(r, "invite_id", errInviteNoSuchInvite)
	if err != nil {
		return inviteAccess{}, err
	}
	return inviteAccess{Caller: r.user, Multiuse: multiuse, ID: id, Refuse: func(as int) error {
		if as == roleOwner && r.user.Role != roleOwner {
			return refusal(errNotOwner)
		}
		if !r.user.isAdmin() {
			return refusal(errInviteNeedsAdmin)
		}
		return nil
	}}, nil
}

// revokeInvite serves DELETE /api/v1/invites/{invite_id}.
func (s *server) revokeInvite(r *apiRequest) (any, error) {
	a, err := s.inviteAccess(r, false)
	if err != nil {
		return nil, err
	}
	return nil, s.store.revokeInvite(a)
}

// revokeInviteLink serves DELETE /api/v1/invites/multiuse/{invite_id}.
func (s *server) revokeInviteLink(r *apiRequest) (any, error) {
	a, err := s.inviteAccess(r, true)
	if err != nil {
		return nil, err
	}
	return nil, s.store.revokeInvite(a)
}

// resendInvite serves POST /api/v1/invites/{invite_id}/resend: the
// same invitation mailed again (Zulip's do_send_user_invite_email: its
// link and its expiry stay as they were).
func (s *server) resendInvite(r *apiRequest) (any, error) {
	a, err := s.inviteAccess(r, false)
	if err != nil {
		return nil, err
	}
	iv, referrer, err := s.store.inviteToResend(a)
	if err != nil {
		return nil, err
	}
	if s.mailer == nil {
		return nil, errNoMailRelay
	}
	s.mailInvite(iv, referrer)
	return nil, nil
}

// mailInvite queues an invitation's e-mail: Zulip's
// zerver/emails/invitation templates (their text part), with the
// relay's From address as the address to write to.
func (s *server) mailInvite(iv invite, referrer user) {
	if s.mailer == nil {
		return
	}
	subject := referrer.FullName + " has invited you to join " + s.realmName
	body := "Hi there,\n\n" +
		referrer.FullName + " (" + referrer.Email + ") wants you to join them on Zulip -- the team communication tool designed for productivity.\n\n" +
		"To get started, click the link below.\n    <" + s.joinURL(iv) + ">\n\n" +
		"If you have any questions, please contact this Zulip server's administrators at " + s.mailer.cfg.From + ".\n"
	s.mailer.enqueue(outgoingMail{To: iv.Email, Subject: subject, Body: body})
}

// errorsIsInvite tells the store's invitation refusals (for signup.go).
func errorsIsInvite(err error) bool {
	return errors.Is(err, errNoSuchInvite) || errors.Is(err, errInviteExpired)
}
