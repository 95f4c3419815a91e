package zulipexport

// The tarball `manage.py export` leaves: do_export_realm runs
// `tar -czf DIR.tar.gz -C PARENT DIR` on the export's directory DIR, and
// export_realm_wrapper removes DIR, so that the tarball is what an
// administrator carries to the new server. The import reads each file
// more than once (realm.json twice, each message file twice), which a
// forward pass over a gzip stream cannot give, so the tarball is
// unpacked into a directory first, and read there as an extracted export
// is.

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Unpack unpacks the .tar.gz r into dir, an empty directory, and answers
// the export's directory in it: the one directory the tarball holds, as
// `manage.py export` makes it, or dir itself. Every entry is written
// through one os.Root on dir, so that no name (.., an absolute one) writes
// outside it; only files and directories are taken, since an export holds
// nothing else, and a link or a device is refused, naming the entry, as a
// name given twice is. room is asked before each file is written, with
// the size its header declares, which bounds what is written for it; a
// file shorter than declared ends the tarball. Files are written 0600 and
// directories 0700, whatever the tarball says. On an error, what was
// written is left in dir for the caller to remove.
func Unpack(r io.Reader, dir string, room func(size int64) error) (string, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return "", fmt.Errorf("not a .tar.gz: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	tops := map[string]bool{} // the names at the top, and whether each is a directory
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader { // pax's: no file
			continue
		}
		name := filepath.FromSlash(path.Clean(hdr.Name))
		if name == "." && hdr.Typeflag == tar.TypeDir {
			continue
		}
		if !filepath.IsLocal(name) {
			return "", fmt.Errorf("entry %q is not inside the export", hdr.Name)
		}
		if err := unpackEntry(root, tr, hdr, name, room); err != nil {
			return "", err
		}
		top, _, below := cutPath(name)
		tops[top] = tops[top] || below || hdr.Typeflag == tar.TypeDir
	}
	// The rest of the gzip stream (the tar's end blocks, the trailer) is
	// read, so that its checksum is checked: a tarball cut short, or
	// changed, is refused.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return "", err
	}
	if len(tops) == 1 {
		for top, isDir := range tops {
			if isDir {
				return filepath.Join(dir, top), nil
			}
		}
	}
	return dir, nil
}

// cutPath splits a local name at its first separator: its first element,
// the rest, and whether there was a rest.
func cutPath(name string) (string, string, bool) {
	for i := range len(name) {
		if os.IsPathSeparator(name[i]) {
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}

// unpackEntry writes one entry, a directory or a file, at name.
func unpackEntry(root *os.Root, tr *tar.Reader, hdr *tar.Header, name string, room func(int64) error) error {
	refuse := func(what string) error {
		return fmt.Errorf("entry %q is %s: an export holds only files and directories", hdr.Name, what)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, 0o700); err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
		return nil
	case tar.TypeReg:
	case tar.TypeSymlink:
		return refuse(fmt.Sprintf("a symbolic link (to %q)", hdr.Linkname))
	case tar.TypeLink:
		return refuse(fmt.Sprintf("a hard link (to %q)", hdr.Linkname))
	case tar.TypeChar, tar.TypeBlock:
		return refuse("a device")
	case tar.TypeFifo:
		return refuse("a named pipe")
	default:
		return refuse(fmt.Sprintf("of type %q", hdr.Typeflag))
	}
	if err := room(hdr.Size); err != nil {
		return fmt.Errorf("entry %q (%d bytes): %w", hdr.Name, hdr.Size, err)
	}
	if parent := filepath.Dir(name); parent != "." {
		if err := root.MkdirAll(parent, 0o700); err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("entry %q is there twice", hdr.Name)
	}
	if err != nil {
		return fmt.Errorf("entry %q: %w", hdr.Name, err)
	}
	_, err = io.Copy(f, tr) // the header's size, no more: tar.Reader ends the entry there
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("entry %q: %w", hdr.Name, err)
	}
	return nil
}

// Pack writes the export in dir to w as `manage.py export` leaves it: a
// .tar.gz holding one directory, top, with the export's files. Only
// files and directories are taken (an export holds nothing else); any
// other entry is refused, naming it. The tar is written by hand, POSIX
// ustar with GNU's long names (what GNU tar, Python's tarfile and
// archive/tar read): archive/tar's writer would add more to the binary
// than the whole feature is allowed.
func Pack(w io.Writer, dir, top string) error {
	zw := gzip.NewWriter(w)
	err := filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, name)
		if err != nil {
			return err
		}
		entry := path.Join(top, filepath.ToSlash(rel))
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			return writeTarHeader(zw, entry+"/", tar.TypeDir, 0o700, 0, fi.ModTime().Unix())
		case fi.Mode().IsRegular():
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			size := fi.Size()
			if err := writeTarHeader(zw, entry, tar.TypeReg, 0o600, size, fi.ModTime().Unix()); err != nil {
				return err
			}
			if _, err := io.CopyN(zw, f, size); err != nil {
				return err
			}
			_, err = zw.Write(make([]byte, (512-size%512)%512))
			return err
		}
		return fmt.Errorf("%s: neither a file nor a directory", entry)
	})
	if err == nil {
		_, err = zw.Write(make([]byte, 1024)) // the end: two empty blocks
	}
	if err == nil {
		err = zw.Close()
	}
	return err
}

// writeTarHeader writes a ustar header; a name over 100 bytes that no
// slash splits into ustar's prefix and name goes first as a GNU long
// name entry.
func writeTarHeader(w io.Writer, name string, kind byte, mode, size, mtime int64) error {
	if size >= 1<<33 {
		return fmt.Errorf("%s: over 8 GiB", name)
	}
	prefix, short, gnu := "", name, false
	if len(name) > 100 {
		for i := len(name) - 1; i > 0; i-- {
			if name[i] == '/' && i <= 155 && len(name)-i-1 <= 100 && len(name)-i-1 > 0 {
				prefix, short = name[:i], name[i+1:]
				break
			}
		}
		if prefix == "" {
			if err := writeTarHeader1(w, "././@LongLink", tar.TypeGNULongName, 0o644, int64(len(name)+1), 0, "", true); err != nil {
				return err
			}
			long := make([]byte, (len(name)+1+511)/512*512)
			copy(long, name)
			if _, err := w.Write(long); err != nil {
				return err
			}
			short, gnu = name[:100], true
		}
	}
	return writeTarHeader1(w, short, kind, mode, size, mtime, prefix, gnu)
}

func writeTarHeader1(w io.Writer, name string, kind byte, mode, size, mtime int64, prefix string, gnu bool) error {
	var h [512]byte
	copy(h[0:100], name)
	octal := func(field []byte, v int64) {
		digits := fmt.Sprintf("%0*o", len(field)-1, v)
		copy(field, digits)
	}
	octal(h[100:108], mode)
	octal(h[108:116], 0)
	octal(h[116:124], 0)
	octal(h[124:136], size)
	octal(h[136:148], mtime)
	h[156] = kind
	if gnu {
		copy(h[257:265], "ustar  \x00")
	} else {
		copy(h[257:265], "ustar\x0000")
		copy(h[345:500], prefix)
	}
	copy(h[148:156], "        ")
	sum := 0
	for _, b := range h {
		sum += int(b)
	}
	copy(h[148:155], fmt.Sprintf("%06o\x00", sum))
	_, err := w.Write(h[:])
	return err
}
