package zulipexport

// The reader: every file of an export opened through one os.Root on its
// directory, so that no name in it, by .. or through a symlink, reads a
// file outside it, and streamed a row at a time.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// openFile opens the export's file name (a path inside the export, with
// the system's separators) through root, which refuses a name that
// leads out of the export, by .. or through a symlink. Only a regular
// file is opened: a named pipe would block the import, a device read on
// forever. Nor one with another name (a hard link, where the system
// tells): root cannot tell whether that name is inside the export, and
// one to a file outside reads it as a symlink would.
func openFile(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
	}
	if err == nil {
		if n, ok := linkCount(fi); ok && n > 1 {
			err = &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("a hard link (%d names): it may be a file outside the export", n)}
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

var errNotRegular = errors.New("not a regular file")

// ReadTables walks a JSON object of tables ({"name": [rows…], …}), the
// export's file name, as a stream, calling fn with each table's name and
// the decoder positioned at its value; fn reads the value with ReadRows,
// or returns false to have it skipped, a row at a time. A key whose value
// is not a list is no table, and is skipped (ReadTablesAndValues names
// it).
func ReadTables(root *os.Root, name string, fn func(table string, dec *json.Decoder) (bool, error)) error {
	return ReadTablesAndValues(root, name, fn, nil)
}

// ReadTablesAndValues is ReadTables that also calls value, if not nil,
// with each key whose value is not a list, and that value: a string,
// number, boolean or nil, or json.Delim('{') for an object, which is
// skipped a member at a time. Zulip's realm.json has such keys beside its
// tables: "import_source": "zulip" (do_export_realm), "sort_by_date"
// (its converters'; import_realm.py reads it).
func ReadTablesAndValues(root *os.Root, name string, fn func(table string, dec *json.Decoder) (bool, error), value func(key string, v json.Token) error) error {
	f, err := openFile(root, name)
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
		key, _ := tok.(string)
		isTable, err := valueIsList(f, dec.InputOffset())
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, key, err)
		}
		if !isTable {
			if err := skipValue(dec, key, value); err != nil {
				return fmt.Errorf("%s: %s: %w", name, key, err)
			}
			continue
		}
		read, err := fn(key, dec)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, key, err)
		}
		if !read {
			if err := skipValue(dec, key, nil); err != nil {
				return fmt.Errorf("%s: %s: %w", name, key, err)
			}
		}
	}
	return nil
}

// valueIsList tells whether the value after the key that ends at off, in
// f, is a list. The decoder cannot be asked without taking the value's
// first token, and has read ahead of off, so the file is read there: the
// colon and the spaces before the value, a few bytes.
func valueIsList(f io.ReaderAt, off int64) (bool, error) {
	var buf [64]byte
	for {
		n, err := f.ReadAt(buf[:], off)
		for _, c := range buf[:n] {
			switch c {
			case ' ', '\t', '\r', '\n', ':':
				continue
			}
			return c == '[', nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return false, err
		}
		off += int64(n)
	}
}

// ReadRows decodes the array at dec a row at a time.
func ReadRows[T any](dec *json.Decoder, fn func(row T) error) error {
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

// CountRows skips the array at dec, counting its rows.
func CountRows(dec *json.Decoder) (int, error) {
	n := 0
	err := ReadRows(dec, func(json.RawMessage) error { n++; return nil })
	return n, err
}

// skipValue skips one value, an array a row at a time and an object a
// member at a time, after handing it to value, if not nil: its first
// token.
func skipValue(dec *json.Decoder, key string, value func(key string, v json.Token) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if value != nil {
		if err := value(key, tok); err != nil {
			return err
		}
	}
	return skipRest(dec, tok)
}

// skipRest skips the rest of the value whose first token was tok.
func skipRest(dec *json.Decoder, tok json.Token) error {
	var err error
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
			if err := skipValue(dec, "", nil); err != nil {
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

// MessageFiles are the export's messages-NNNNNN.json, in order.
func MessageFiles(root *os.Root) []string {
	var files []string
	for n := 1; ; n++ {
		name := messageFileName(n)
		if _, err := root.Lstat(name); err != nil {
			return files
		}
		files = append(files, name)
	}
}

// ReadRecords reads DIR/sub/records.json (sub is uploads or avatars); a
// missing one is no records. A record whose path is not inside sub/
// (.., an absolute path) refuses the export.
func ReadRecords(root *os.Root, sub string) ([]Record, error) {
	f, err := openFile(root, filepath.Join(sub, "records.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	f.Close()
	var records []Record
	if err == nil {
		err = json.Unmarshal(data, &records)
	}
	if err != nil {
		return nil, fmt.Errorf("%s/records.json: %w", sub, err)
	}
	for i, r := range records {
		if !filepath.IsLocal(filepath.FromSlash(r.Path)) {
			return nil, fmt.Errorf("%s/records.json: record %d: path %q is not inside the export", sub, i+1, r.Path)
		}
	}
	return records, nil
}

// OpenRecord opens the file of record n (from 1) of sub/records.json,
// at path. A file that is not there answers fs.ErrNotExist, to be
// reported as missing; any other failure (a symlink out of the export, a
// file that is no regular one) refuses the export, naming the record.
func OpenRecord(root *os.Root, sub string, n int, path string) (*os.File, error) {
	f, err := openFile(root, filepath.Join(sub, filepath.FromSlash(path)))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		err = pathErr.Err // the path is said once, as the record has it
	}
	return nil, fmt.Errorf("%s/records.json: record %d: path %q: %w", sub, n, path, err)
}
