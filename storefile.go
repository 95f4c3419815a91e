package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"syscall"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A damaged database file must end in one clear line, not in a bus error:
// bbolt maps the file into memory, so a page it expects past the end of a
// truncated file is a SIGBUS that no error value reports. Before bbolt
// opens a file, checkDatabaseFile reads its two meta pages as bbolt lays
// them out (go.etcd.io/bbolt internal/common/meta.go) and checks that the
// file holds every page the newer valid one counts; what the file holds
// beyond that is covered by openGuarded.

// errDamaged is a database file that cannot be opened as it is.
var errDamaged = errors.New("is damaged")

const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltPageHeader = 16 // id, flags, count, overflow
	boltMetaSize   = 56 // magic … txid, then the checksum
)

// boltMeta is the part of a bbolt meta page the check needs.
type boltMeta struct {
	pageSize   uint32
	highWater  uint64 // pages in use: the file holds at least this many
	txid       uint64
	checksumOK bool
}

func readBoltMeta(page []byte) (boltMeta, bool) {
	if len(page) < boltPageHeader+boltMetaSize+8 {
		return boltMeta{}, false
	}
	m := page[boltPageHeader:]
	e := binary.NativeEndian
	if e.Uint32(m[0:]) != boltMagic || e.Uint32(m[4:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	h.Write(m[:boltMetaSize])
	meta := boltMeta{pageSize: e.Uint32(m[8:]), highWater: e.Uint64(m[40:]), txid: e.Uint64(m[48:])}
	meta.checksumOK = h.Sum64() == e.Uint64(m[boltMetaSize:])
	return meta, meta.checksumOK && meta.pageSize >= 512
}

// checkDatabaseFile refuses a file that bbolt would read past its end.
// A new or empty file is fine (bbolt lays it out).
func checkDatabaseFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	damaged := func(why string) error {
		// A server writing the file holds its lock; what looks torn then is
		// only being written, and the open will say the file is in use.
		if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil {
			return nil
		}
		defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return damagedError(path, why)
	}
	first := make([]byte, 4096)
	n, err := f.ReadAt(first, 0)
	if err != nil && err != io.EOF {
		return err
	}
	m0, ok0 := readBoltMeta(first[:n])
	pageSize := int64(os.Getpagesize())
	if ok0 {
		pageSize = int64(m0.pageSize)
	}
	second := make([]byte, boltPageHeader+boltMetaSize+8)
	n, err = f.ReadAt(second, pageSize)
	if err != nil && err != io.EOF {
		return err
	}
	m1, ok1 := readBoltMeta(second[:n])
	meta := m0
	switch {
	case !ok0 && !ok1:
		return damaged("neither of its two headers is valid")
	case !ok0 || (ok1 && m1.txid > m0.txid):
		meta = m1
	}
	if need := int64(meta.highWater) * int64(meta.pageSize); fi.Size() < need {
		return damaged(fmt.Sprintf("truncated: %d bytes of the %d its header counts", fi.Size(), need))
	}
	return nil
}

func damagedError(path, why string) error {
	return fmt.Errorf("%s %w (%s); it was left as it is: restore it from a copy made with `zulite backup`, or move it away to start a new database", path, errDamaged, why)
}

// guarded runs fn, which reads the file through bbolt's memory map, with
// a fault on that memory (debug.SetPanicOnFault) or a panic of bbolt's
// over a page that is not what it should be turned into an error naming
// the file: damage checkDatabaseFile cannot see is reported where it is
// met, at open or on a later read, instead of killing the process.
func guarded(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = damagedError(path, fmt.Sprint("reading it failed: ", r))
		}
	}()
	return fn()
}

// view is db.View, guarded.
func (s *store) view(fn func(tx *bbolt.Tx) error) error {
	return guarded(s.db.Path(), func() error { return s.db.View(fn) })
}

// updateGuarded is db.Update, guarded; bbolt rolls the transaction back
// when fn panics. A commit refused at the size limit says so.
func (s *store) updateGuarded(fn func(tx *bbolt.Tx) error) error {
	err := guarded(s.db.Path(), func() error { return s.db.Update(fn) })
	if errors.Is(err, bolterrors.ErrMaxSizeReached) {
		return fmt.Errorf("%s has reached %d MiB, the most this build lets it grow to (a 32-bit build maps at most 2 GiB of database): the write was refused and nothing of it kept; to go on writing, move the database to a 64-bit build (arm64, amd64), e.g. with zulite backup: %w", s.db.Path(), s.db.MaxSize>>20, err)
	}
	return err
}

// databaseSizeLimit is the size the database file may grow to (bbolt's
// MaxSize; 0: no limit) on a platform whose ints have intSize bits. A
// 32-bit build maps at most 2 GiB of file (bbolt's MaxMapSize for arm and
// 386), and past 1 GiB it maps that whole, so a commit needing more fails
// in the map (a remap that fails leaves nothing mapped). Below the limit,
// bbolt refuses to allocate before it remaps (ErrMaxSizeReached), so the
// write past it is refused and everything else goes on; 16 MiB, one of
// bbolt's growth steps, is left below the map's end.
func databaseSizeLimit(intSize int) int {
	if intSize == 32 {
		return 1<<31 - 16<<20
	}
	return 0
}
