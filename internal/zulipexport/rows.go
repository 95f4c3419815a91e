package zulipexport

import "encoding/json"

// The rows of a Zulip export that zulite reads, with the fields it
// takes; foreign keys are named as model_to_dict names them (sender,
// not sender_id).
type (
	User struct {
		ID            uint64   `json:"id"`
		Email         string   `json:"email"`
		DeliveryEmail string   `json:"delivery_email"`
		FullName      string   `json:"full_name"`
		Role          int      `json:"role"`
		IsBot         bool     `json:"is_bot"`
		IsActive      bool     `json:"is_active"`
		IsMirrorDummy bool     `json:"is_mirror_dummy"`
		DateJoined    *float64 `json:"date_joined"`
	}
	Stream struct {
		ID          uint64   `json:"id"`
		Name        string   `json:"name"`
		Description string   `json:"description"`
		InviteOnly  bool     `json:"invite_only"`
		Creator     *uint64  `json:"creator"`
		DateCreated *float64 `json:"date_created"`
		Deactivated bool     `json:"deactivated"`
		IsWebPublic bool     `json:"is_web_public"`
	}
	Recipient struct {
		ID     uint64 `json:"id"`
		Type   int    `json:"type"`
		TypeID uint64 `json:"type_id"`
	}
	Subscription struct {
		UserProfile            uint64 `json:"user_profile"`
		Recipient              uint64 `json:"recipient"`
		Active                 bool   `json:"active"`
		Color                  string `json:"color"`
		IsMuted                bool   `json:"is_muted"`
		PinToTop               bool   `json:"pin_to_top"`
		DesktopNotifications   *bool  `json:"desktop_notifications"`
		AudibleNotifications   *bool  `json:"audible_notifications"`
		PushNotifications      *bool  `json:"push_notifications"`
		EmailNotifications     *bool  `json:"email_notifications"`
		WildcardMentionsNotify *bool  `json:"wildcard_mentions_notify"`
	}
	Client struct {
		ID   uint64 `json:"id"`
		Name string `json:"name"`
	}
	Message struct {
		ID              uint64          `json:"id"`
		Sender          uint64          `json:"sender"`
		Recipient       uint64          `json:"recipient"`
		Subject         string          `json:"subject"`
		Content         string          `json:"content"`
		RenderedContent *string         `json:"rendered_content"`
		DateSent        float64         `json:"date_sent"`
		SendingClient   uint64          `json:"sending_client"`
		LastEditTime    *float64        `json:"last_edit_time"`
		EditHistory     json.RawMessage `json:"edit_history"`
	}
	UserMessage struct {
		UserProfile uint64 `json:"user_profile"`
		Message     uint64 `json:"message"`
		FlagsMask   int64  `json:"flags_mask"`
	}
	Reaction struct {
		Message      uint64 `json:"message"`
		UserProfile  uint64 `json:"user_profile"`
		EmojiName    string `json:"emoji_name"`
		EmojiCode    string `json:"emoji_code"`
		ReactionType string `json:"reaction_type"`
	}
	Attachment struct {
		FileName    string   `json:"file_name"`
		PathID      string   `json:"path_id"`
		Owner       uint64   `json:"owner"`
		CreateTime  *float64 `json:"create_time"`
		Size        int64    `json:"size"`
		ContentType *string  `json:"content_type"`
	}
	Record struct {
		Path          string `json:"path"`
		S3Path        string `json:"s3_path"`
		UserProfileID uint64 `json:"user_profile_id"`
		ContentType   string `json:"content_type"`
		FileName      string `json:"file_name"` // a custom emoji's (emoji/records.json)
	}
)
