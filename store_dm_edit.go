package main

// Editing and deleting direct messages, as Zulip's check_update_message
// and do_update_message (a DirectMessageEditRequest) and
// validate_can_delete_message and do_delete_messages do them for a
// message that is not a channel's: only its content changes, only its
// participants are concerned, and only they hear of it. The channel
// path is store_message_edit.go; a conversation's storage is
// store_dms.go's.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"go.etcd.io/bbolt"
)

// editDirect edits a direct message orig that the user may read (a
// participant): Zulip's checks in its order (the sender within the edit
// limit, then validate_message_edit_payload, where a direct message
// takes neither a channel nor a topic), the new content rendered as a
// direct message's send renders it, then in one transaction the
// message, its history, its upload links and its participants' mention
// flags.
func (s *store) editDirect(u user, e messageEdit, orig message) (int, error) {
	now := s.now().Unix()
	if e.Content != nil { // validate_user_can_edit_message
		if orig.SenderID != u.ID {
			return 0, errCannotEditMessage
		}
		if olderThan(now, orig.Timestamp, defaultMessageLimitSeconds+editLimitBuffer) {
			return 0, errEditTimeLimit
		}
	}
	topic := e.Topic
	if topic != nil && *topic == orig.Topic { // "" (or "general chat") is a direct message's topic
		topic = nil
	}
	switch {
	case topic == nil && e.Content == nil && e.ChannelID == nil:
		return 0, errNothingToChange
	case e.ChannelID != nil:
		return 0, errDMToChannel
	case topic != nil:
		return 0, errDMTopic
	case e.Propagate != changeOne:
		return 0, errPropagateWithoutTopic
	case s.isWidget(orig.ID):
		return 0, refusal(errWidgetEdit)
	}
	if e.PrevContentSHA256 != nil {
		if sum := sha256.Sum256([]byte(orig.Content)); *e.PrevContentSHA256 != hex.EncodeToString(sum[:]) {
			return 0, errContentMismatch
		}
	}
	rendering, err := s.renderForSend(u, outgoingMessage{Content: *e.Content, RealmURL: e.RealmURL})
	if err != nil {
		return 0, err
	}
	if len(rendering.HTML) > maxRenderedLength {
		return 0, errUnableToRender
	}
	if err := s.checkGroupMentions(u, rendering.Mentions); err != nil {
		return 0, err
	}
	err = s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		m, _, err := s.reactableMessage(tx, u, orig.ID) // deleted, or its sender's, since the read above?
		if err != nil {
			return err
		}
		if m.SenderID != u.ID {
			return errCannotEditMessage
		}
		if hasSubmessages(tx, m.ID) { // its sender's first since the read above
			return refusal(errWidgetEdit)
		}
		if e.PrevContentSHA256 != nil && m.Content != orig.Content {
			return errContentMismatch
		}
		now := s.now().Unix()
		participants, _ := conversationParticipants(tx, m.ConversationID)
		entry := editEntry{UserID: u.ID, Timestamp: now, PrevContent: ptr(m.Content), PrevRendered: ptr(renderedContent(m))}
		if err := s.relinkUploads(tx, m, *e.Content); err != nil {
			return err
		}
		edited := m
		edited.Content, edited.Rendered, edited.LastEdit = *e.Content, rendering.HTML, now
		edited.EditHistory = append([]editEntry{entry}, m.EditHistory...)
		if err := putJSON(tx.Bucket(bucketMessages), itob(m.ID), edited); err != nil {
			return err
		}
		if err := resetMentionFlags(tx, participants, m.ID, rendering.Mentions); err != nil {
			return err
		}
		change := messageEdited{Editor: u, Message: edited, Orig: m, ContentEdit: true, IDs: []uint64{m.ID}, Propagate: changeOne,
			Timestamp: now, Audience: participants, Flags: map[uint64][]string{}, Direct: true}
		for _, uid := range participants { // a few: each one's, listening or not (s.listens covers flag-event queues only)
			change.Flags[uid] = userFlags(tx, uid, edited)
		}
		report(change)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return 1, nil
}

// deleteDirect deletes a direct message m that the user may read (a
// participant: Zulip's access_message comes first, so even those in
// can_delete_any_message_group delete only the direct messages they
// are in). Those may delete it any time; its sender, when in the
// realm's can_delete_own_message_group, within the delete limit. The
// message goes with its conversation's index entry and each
// participant's dm_messages entry, unread exceptions and flags, its
// reactions and its upload links; the participants hear of it.
func (s *store) deleteDirect(tx *bbolt.Tx, u user, m message, report func(any)) error {
	if !s.allowed(u, realmCanDeleteAnyMessageGroup) {
		if m.SenderID != u.ID || !s.allowed(u, realmCanDeleteOwnMessageGroup) {
			return errCannotDeleteMessage
		}
		if olderThan(s.now().Unix(), m.Timestamp, defaultMessageLimitSeconds) {
			return errDeleteTimeLimit
		}
	}
	participants, _ := conversationParticipants(tx, m.ConversationID)
	key := append(itob(m.ConversationID), itob(m.ID)...)
	// Out of the conversation's index first: forgetInChannel then keeps
	// rule 1 over the messages that remain.
	if err := tx.Bucket(bucketConversationMessages).Delete(key); err != nil {
		return err
	}
	for _, uid := range participants {
		k := append(itob(uid), itob(m.ID)...)
		if err := tx.Bucket(bucketDMMessages).Delete(k); err != nil {
			return err
		}
		if err := tx.Bucket(bucketFlags).Delete(k); err != nil {
			return err
		}
		if err := forgetInChannel(tx, uid, conversationKey(m.ConversationID), []uint64{m.ID}); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketMessages).Delete(itob(m.ID)); err != nil {
		return err
	}
	if err := dropReactionsAndLinks(tx, m); err != nil {
		return err
	}
	report(messagesDeleted{IDs: []uint64{m.ID}, Audience: participants, Direct: true})
	return nil
}

// dropReactionsAndLinks deletes a deleted message's reactions, its
// upload links (attachment_refs) and its submessages.
func dropReactionsAndLinks(tx *bbolt.Tx, m message) error {
	var gone [][]byte
	prefix := itob(m.ID)
	c := tx.Bucket(bucketReactions).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		gone = append(gone, slices.Clone(k))
	}
	for _, k := range gone { // after the walk: no writes under a live cursor
		if err := tx.Bucket(bucketReactions).Delete(k); err != nil {
			return err
		}
	}
	for _, p := range linkedPaths(m.Content) {
		if err := tx.Bucket(bucketAttachmentRefs).Delete(append(refPrefix(p), itob(m.ID)...)); err != nil {
			return err
		}
	}
	return dropSubmessages(tx, m.ID) // store_submessages.go
}
