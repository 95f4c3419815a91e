package main

// Submessages (zerver/views/submessage.py): POST /submessage, which the
// apps call to vote in a poll or tick a to-do list's task, the
// submessage event everyone who sees the message hears, and the
// submessages array of message objects.

// addSubmessage serves POST /api/v1/submessage: content, message_id and
// msg_type, read in the order of Zulip's view (content first).
func (s *server) addSubmessage(r *apiRequest) (any, error) {
	content, err := r.params.requiredString("content")
	if err != nil {
		return nil, err
	}
	id, err := r.params.requiredInt("message_id")
	if err != nil {
		return nil, err
	}
	msgType, err := r.params.requiredString("msg_type")
	if err != nil {
		return nil, err
	}
	if id < 0 {
		return nil, errInvalidMessages // no message has it
	}
	req := submessageRequest{MessageID: uint64(id), MsgType: msgType, Content: content}
	if req.Data, err = pyLoads(content); err != nil {
		req.NotJSON = true
	}
	return nil, s.store.addSubmessage(r.user, req)
}

// submsg is one submessage of a message object, as Zulip's
// SubMessage.get_raw_db_rows gives it.
type submsg struct {
	ID        uint64 `json:"id"`
	MessageID uint64 `json:"message_id"`
	SenderID  uint64 `json:"sender_id"`
	MsgType   string `json:"msg_type"`
	Content   string `json:"content"`
}

// submessageObjects is a message's submessages as message objects list
// them, oldest first.
func submessageObjects(messageID uint64, list []storedSubmessage) []submsg {
	out := make([]submsg, 0, len(list))
	for _, s := range list {
		out = append(out, submsg{ID: s.ID, MessageID: messageID, SenderID: s.SenderID, MsgType: s.MsgType, Content: s.Content})
	}
	return out
}

// publishSubmessage tells the message's audience of a new submessage,
// in the submessage event's shape.
func (s *server) publishSubmessage(c submessageAdded) {
	e := event{"type": "submessage", "msg_type": c.Submessage.MsgType, "message_id": c.MessageID,
		"submessage_id": c.Submessage.ID, "sender_id": c.Submessage.SenderID, "content": c.Submessage.Content}
	s.events.tell("submessage", usersAudience(c.Audience...), e, nil)
}
