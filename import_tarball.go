package main

// The import of the tarball `manage.py export` leaves (DIR.tar.gz, the
// export's directory DIR in it): unpacked into a directory of its own
// beside the database, by zulipexport.Unpack, which writes nothing
// outside it and takes only files and directories, imported from there
// as an extracted export is, and removed when the import ends, whether
// it succeeded or not. It is unpacked rather than read as a stream
// because the import reads each file more than once (realm.json twice,
// each message file twice); the unpacked copy takes the export's size
// on that disk for as long as the import runs.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"zulite/internal/zulipexport"
)

// unpackExport unpacks the tarball at path into a new directory beside
// the database db, and answers the export's directory in it and that
// directory, which the caller removes when the import ends (also when
// unpackExport fails, if it is not ""). A file is unpacked only if the
// disk has room for the size its header declares.
func unpackExport(path, db string) (exportDir, unpacked string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	unpacked, err = os.MkdirTemp(filepath.Dir(db), "."+filepath.Base(db)+".unpack-*")
	if err != nil {
		return "", "", err
	}
	room := func(size int64) error {
		if free, ok := diskFree(unpacked); ok && size > free {
			return fmt.Errorf("the disk has %d bytes free", free)
		}
		return nil
	}
	exportDir, err = zulipexport.Unpack(f, unpacked, room)
	if err != nil {
		return "", unpacked, err
	}
	if _, err := os.Lstat(filepath.Join(exportDir, "realm.json")); errors.Is(err, fs.ErrNotExist) {
		return "", unpacked, errors.New("no realm.json in it, nor in its one directory")
	}
	return exportDir, unpacked, nil
}
