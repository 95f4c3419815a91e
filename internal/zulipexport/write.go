package zulipexport

// The writer: the export's files written a file at a time, each whole or
// not at all, zerver_reaction's rows kept in a temporary file until
// realm.json is written, last.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// The rows zulite writes, with every field Zulip's importer reads (the
// rows above hold only what zulite takes). Dates are Timestamp's: a
// number of seconds, or null.
type (
	MessageRow struct {
		ID                     uint64 `json:"id"`
		Sender                 uint64 `json:"sender"`
		Recipient              uint64 `json:"recipient"`
		Realm                  int    `json:"realm"`
		Subject                string `json:"subject"`
		Content                string `json:"content"`
		RenderedContent        string `json:"rendered_content"`
		RenderedContentVersion int    `json:"rendered_content_version"`
		DateSent               any    `json:"date_sent"`
		LastEditTime           any    `json:"last_edit_time"`
		EditHistory            any    `json:"edit_history"`
		SendingClient          int    `json:"sending_client"`
		HasAttachment          bool   `json:"has_attachment"`
		HasImage               bool   `json:"has_image"`
		HasLink                bool   `json:"has_link"`
		// IsChannelMessage is false for a direct message: Zulip's
		// Message.is_channel_message defaults to true.
		IsChannelMessage bool `json:"is_channel_message"`
	}
	UserMessageRow struct {
		ID          uint64 `json:"id"`
		UserProfile uint64 `json:"user_profile"`
		Message     uint64 `json:"message"`
		FlagsMask   int64  `json:"flags_mask"`
	}
	ReactionRow struct {
		ID           uint64 `json:"id"`
		Message      uint64 `json:"message"`
		UserProfile  uint64 `json:"user_profile"`
		EmojiName    string `json:"emoji_name"`
		EmojiCode    string `json:"emoji_code"`
		ReactionType string `json:"reaction_type"`
	}
	AttachmentRow struct {
		ID                uint64   `json:"id"`
		FileName          string   `json:"file_name"`
		PathID            string   `json:"path_id"`
		Owner             uint64   `json:"owner"`
		Realm             int      `json:"realm"`
		CreateTime        any      `json:"create_time"`
		Size              int64    `json:"size"`
		ContentType       string   `json:"content_type"`
		IsRealmPublic     *bool    `json:"is_realm_public"`
		IsWebPublic       *bool    `json:"is_web_public"`
		Messages          []uint64 `json:"messages"`
		ScheduledMessages []uint64 `json:"scheduled_messages"`
	}
	RecordRow struct {
		Path          string `json:"path"`
		S3Path        string `json:"s3_path"`
		RealmID       int    `json:"realm_id"`
		UserProfileID uint64 `json:"user_profile_id"`
		ContentType   string `json:"content_type"`
		Size          int64  `json:"size"`
		LastModified  any    `json:"last_modified"`
		// AvatarVersion is an avatar's record's: the importer stores the
		// image under the path it makes from the user's id and this
		// version, which must be the user's avatar_version.
		AvatarVersion int `json:"avatar_version,omitempty"`
		// A custom emoji's record (emoji/records.json) names its file, its
		// author and whether it is deactivated, as Zulip's exporter writes
		// them (the importer's process_emojis reads them).
		FileName    string `json:"file_name,omitempty"`
		Name        string `json:"name,omitempty"`
		Author      uint64 `json:"author,omitempty"`
		Deactivated *bool  `json:"deactivated,omitempty"`
	}
)

// realmTables are the tables of realm.json that Zulip's importer reads
// unconditionally (data[table]): each must be there, a list, even empty.
// zerver_reaction, read too, WriteRealm always writes.
var realmTables = []string{
	"zerver_realm", "zerver_userprofile", "zerver_userprofile_mirrordummy", "zerver_userprofile_crossrealm",
	"zerver_stream", "zerver_recipient", "zerver_subscription", "zerver_huddle", "zerver_client",
	"zerver_defaultstream", "zerver_realmemoji", "zerver_realmdomain", "zerver_realmfilter", "zerver_realmplayground",
	"zerver_realmauthenticationmethod", "zerver_userpresence", "zerver_useractivity", "zerver_useractivityinterval",
	"zerver_customprofilefield", "zerver_customprofilefieldvalue",
}

// Writer writes an export into its directory. Messages come first, a
// file of MessagesPerFile at a time, with their reactions, which wait in
// a temporary file of the directory; then the uploaded files and avatars
// with their records and migration_status.json; realm.json last, with
// the reactions.
type Writer struct {
	dir string
	// writeFile makes the file at path whole or not at all from what
	// write writes.
	writeFile func(path string, write func(w io.Writer) error) error
	files     int // message files written
	// reactions is a temporary file of reaction rows, each followed by a
	// comma, copied into realm.json at the end; pending buffers it.
	reactions *os.File
	pending   *bufio.Writer
}

// NewWriter starts an export into the directory dir, which is there and
// empty. writeFile makes the file at path whole or not at all from what
// write writes (a new file renamed into place once written and synced).
// Close removes the writer's temporary file.
func NewWriter(dir string, writeFile func(path string, write func(w io.Writer) error) error) (*Writer, error) {
	reactions, err := os.CreateTemp(dir, ".reactions-*")
	if err != nil {
		return nil, err
	}
	return &Writer{dir: dir, writeFile: writeFile, reactions: reactions, pending: bufio.NewWriter(reactions)}, nil
}

// Close removes the temporary file of reactions.
func (w *Writer) Close() error {
	err := w.reactions.Close()
	os.Remove(w.reactions.Name())
	return err
}

// WriteMessages writes the next messages-NNNNNN.json: messages and their
// per-user rows, each of a message of this file or an earlier one (the
// importer's bulk_import_user_message_data reads it so). Neither list
// may be nil: the importer reads a list, and nil is written as null; so
// for the lists of WriteRecords and WriteAttachments.
func (w *Writer) WriteMessages(messages []MessageRow, userMessages []UserMessageRow) error {
	var file struct {
		Messages     []MessageRow     `json:"zerver_message"`
		UserMessages []UserMessageRow `json:"zerver_usermessage"`
	}
	file.Messages, file.UserMessages = messages, userMessages
	w.files++
	return w.writeJSON(filepath.Join(w.dir, messageFileName(w.files)), file)
}

// AddReaction adds a row to zerver_reaction, which WriteRealm writes. A
// failure to write it is reported by WriteRealm.
func (w *Writer) AddReaction(r ReactionRow) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	w.pending.Write(line)
	w.pending.WriteByte(',')
	return nil
}

// CopyFile copies the file from into the export as sub/path (sub is
// uploads or avatars, path has slashes), making its directories.
func (w *Writer) CopyFile(sub, path, from string) error {
	to := filepath.Join(w.dir, sub, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	return w.writeFile(to, func(out io.Writer) error {
		_, err := io.Copy(out, in)
		return err
	})
}

// WriteRecords writes sub/records.json, the records of the files copied
// into sub (uploads or avatars), which Zulip's import_uploads reads.
func (w *Writer) WriteRecords(sub string, records []RecordRow) error {
	if err := os.MkdirAll(filepath.Join(w.dir, sub), 0o700); err != nil {
		return err
	}
	return w.writeJSON(filepath.Join(w.dir, sub, "records.json"), records)
}

// WriteAttachments writes attachment.json, zerver_attachment.
func (w *Writer) WriteAttachments(rows []AttachmentRow) error {
	return w.writeJSON(filepath.Join(w.dir, "attachment.json"), map[string]any{"zerver_attachment": rows})
}

// WriteMigrationStatus writes migration_status.json, which Zulip's
// import reads before anything else (check_migration_status): the Zulip
// version, whose major version must be the importing server's, and the
// migrations applied, by app. A listed app's must be exactly the
// server's, an app not listed is only warned about; zulite lists none,
// since it cannot know which a server applied (Zulip's converters run on
// the importing server and write its own: export_migration_status in
// zerver/lib/export.py).
func (w *Writer) WriteMigrationStatus() error {
	return w.writeJSON(filepath.Join(w.dir, "migration_status.json"), map[string]any{
		"migrations_by_app": map[string][]string{}, "zulip_version": ZulipVersion})
}

// WriteRealm writes realm.json: the tables given (name → its rows), each
// table the importer requires and not given as an empty list,
// import_source, and zerver_reaction last, the rows added, copied from
// their file.
func (w *Writer) WriteRealm(tables map[string]any) error {
	names := make([]string, 0, len(tables)+len(realmTables))
	for name := range tables {
		names = append(names, name)
	}
	for _, name := range realmTables {
		if _, ok := tables[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if err := w.pending.Flush(); err != nil {
		return err
	}
	return w.writeFile(filepath.Join(w.dir, "realm.json"), func(out io.Writer) error {
		bw := bufio.NewWriter(out)
		fmt.Fprintf(bw, "{%q:%q,\n", "import_source", ImportSource)
		for _, name := range names {
			rows, ok := tables[name]
			if !ok {
				rows = []any{}
			}
			body, err := json.Marshal(rows)
			if err != nil {
				return err
			}
			fmt.Fprintf(bw, "%q:%s,\n", name, body)
		}
		// zerver_reaction last, copied from its file without its last comma.
		bw.WriteString(`"zerver_reaction":[`)
		if err := w.copyReactions(bw); err != nil {
			return err
		}
		bw.WriteString("]}\n")
		return bw.Flush()
	})
}

// copyReactions copies the reaction rows, dropping the comma after the last.
func (w *Writer) copyReactions(out io.Writer) error {
	size, err := w.reactions.Seek(0, io.SeekEnd)
	if err != nil || size == 0 {
		return err
	}
	if _, err := w.reactions.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(out, io.LimitReader(w.reactions, size-1))
	return err
}

// writeJSON writes v as JSON to path, whole or not at all.
func (w *Writer) writeJSON(path string, v any) error {
	return w.writeFile(path, func(out io.Writer) error {
		bw := bufio.NewWriter(out)
		if err := json.NewEncoder(bw).Encode(v); err != nil {
			return err
		}
		return bw.Flush()
	})
}
