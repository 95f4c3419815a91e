package main

// A user's own uploads: GET /attachments and DELETE
// /attachments/{attachment_id} (zerver/views/attachments.py), and the
// attachment events that keep a client's list current.

// listAttachments serves GET /api/v1/attachments: the caller's uploads,
// each with the messages that link it, and upload_space_used, the bytes
// every user's files take together.
func (s *server) listAttachments(r *apiRequest) (any, error) {
	list, used, err := s.store.ownAttachments(r.user)
	if err != nil {
		return nil, err
	}
	return struct {
		Attachments     []attachmentObject `json:"attachments"`
		UploadSpaceUsed int64              `json:"upload_space_used"`
	}{list, used}, nil
}

// removeAttachment serves DELETE /api/v1/attachments/{attachment_id}:
// one of the caller's own uploads goes; the messages that link it keep
// the link, which then answers 404, as in Zulip.
func (s *server) removeAttachment(r *apiRequest) (any, error) {
	id, err := pathDigits(r, "attachment_id", errInvalidAttachment)
	if err != nil {
		return nil, err
	}
	return nil, s.store.removeAttachment(r.user, id)
}

// publishAttachment tells the owner's queues, as Zulip's
// notify_attachment_update.
func (s *server) publishAttachment(c attachmentChanged) {
	e := event{"type": "attachment", "op": c.Op, "attachment": c.Attachment, "upload_space_used": c.SpaceUsed}
	s.events.tell("attachment", usersAudience(c.Owner), e, nil)
}
