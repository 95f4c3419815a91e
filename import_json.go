package main

// The rows of a Zulip export that the import reads, and the readers that
// stream its files a row at a time (import.go).

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"syscall"
)

// The rows of a Zulip export that zulite reads; foreign keys are named
// as model_to_dict names them (sender, not sender_id).
type (
	zulipUser struct {
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
	zulipStream struct {
		ID          uint64   `json:"id"`
		Name        string   `json:"name"`
		Description string   `json:"description"`
		InviteOnly  bool     `json:"invite_only"`
		Creator     *uint64  `json:"creator"`
		DateCreated *float64 `json:"date_created"`
		Deactivated bool     `json:"deactivated"`
		IsWebPublic bool     `json:"is_web_public"`
	}
	zulipRecipient struct {
		ID     uint64 `json:"id"`
		Type   int    `json:"type"`
		TypeID uint64 `json:"type_id"`
	}
	zulipSubscription struct {
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
	zulipClient struct {
		ID   uint64 `json:"id"`
		Name string `json:"name"`
	}
	zulipMessage struct {
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
	zulipUserMessage struct {
		UserProfile uint64 `json:"user_profile"`
		Message     uint64 `json:"message"`
		FlagsMask   int64  `json:"flags_mask"`
	}
	zulipReaction struct {
		Message      uint64 `json:"message"`
		UserProfile  uint64 `json:"user_profile"`
		EmojiName    string `json:"emoji_name"`
		EmojiCode    string `json:"emoji_code"`
		ReactionType string `json:"reaction_type"`
	}
	zulipAttachment struct {
		FileName    string   `json:"file_name"`
		PathID      string   `json:"path_id"`
		Owner       uint64   `json:"owner"`
		CreateTime  *float64 `json:"create_time"`
		Size        int64    `json:"size"`
		ContentType *string  `json:"content_type"`
	}
	zulipRecord struct {
		Path          string `json:"path"`
		S3Path        string `json:"s3_path"`
		UserProfileID uint64 `json:"user_profile_id"`
		ContentType   string `json:"content_type"`
	}
)

// openExportFile opens the export's file name (a path inside the
// export, with the system's separators) through root, which refuses a
// name that leads out of the export, by .. or through a symlink. Only a
// regular file is opened: a named pipe would block the import, a device
// read on forever.
func openExportFile(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

var errNotRegular = errors.New("not a regular file")

// eachTable walks a JSON object of tables ({"name": [rows…], …}), the
// export's file name, as a stream, calling fn with each table's name and
// the decoder positioned at its value; fn reads the value with eachRow,
// or returns false to have it skipped, a row at a time.
func eachTable(root *os.Root, name string, fn func(table string, dec *json.Decoder) (bool, error)) error {
	f, err := openExportFile(root, name)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 64<<10))
	if err := expectDelim(dec, '{'); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		table, _ := tok.(string)
		read, err := fn(table, dec)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, table, err)
		}
		if !read {
			if err := skipValue(dec); err != nil {
				return fmt.Errorf("%s: %s: %w", name, table, err)
			}
		}
	}
	return nil
}

// eachRow decodes the array at dec a row at a time.
func eachRow[T any](dec *json.Decoder, fn func(row T) error) error {
	if err := expectDelim(dec, '['); err != nil {
		return err
	}
	for dec.More() {
		var row T
		if err := dec.Decode(&row); err != nil {
			return err
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	_, err := dec.Token() // ']'
	return err
}

// countRows skips the array at dec, counting its rows.
func countRows(dec *json.Decoder) (int, error) {
	n := 0
	err := eachRow(dec, func(json.RawMessage) error { n++; return nil })
	return n, err
}

// skipValue skips one value; an array is skipped a row at a time.
func skipValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('['):
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('{'):
		for dec.More() {
			if _, err := dec.Token(); err != nil {
				return err
			}
			if err := skipValue(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("expected %v, found %v", d, tok)
	}
	return nil
}

// unixSeconds is a Zulip export's date as Unix seconds.
func unixSeconds(t *float64) int64 {
	if t == nil {
		return 0
	}
	return int64(math.Floor(*t))
}
