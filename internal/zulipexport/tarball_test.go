package zulipexport

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// entry is one entry of a tarball a test writes: a file with its bytes,
// or any other header (a directory, a link, a device).
type entry struct {
	hdr  tar.Header
	body string
}

func file(name, body string) entry {
	return entry{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}, body}
}

func dirEntry(name string) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

// tarball is the entries as a .tar.gz.
func tarball(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := e.hdr
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// unpackInto unpacks data into a new directory inside a parent one,
// which has nothing else in it.
func unpackInto(t *testing.T, data []byte, room func(int64) error) (parent, dir, exportDir string, err error) {
	t.Helper()
	parent = t.TempDir()
	dir = filepath.Join(parent, "unpacked")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if room == nil {
		room = func(int64) error { return nil }
	}
	exportDir, err = Unpack(bytes.NewReader(data), dir, room)
	return parent, dir, exportDir, err
}

// TestUnpack_ManagePyExportsTarballIsItsDirectory: `manage.py export`
// runs `tar -czf DIR.tar.gz -C PARENT DIR`: one directory holds the
// export, and Unpack answers it.
func TestUnpack_ManagePyExportsTarballIsItsDirectory(t *testing.T) {
	data := tarball(t,
		dirEntry("zulip-export-4b2xk7ya/"),
		file("zulip-export-4b2xk7ya/realm.json", `{"zerver_realm": []}`),
		dirEntry("zulip-export-4b2xk7ya/uploads/"),
		dirEntry("zulip-export-4b2xk7ya/uploads/5/"),
		file("zulip-export-4b2xk7ya/uploads/5/ab/plan.txt", "the plans"), // its directory has no entry of its own
	)
	_, dir, got, err := unpackInto(t, data, nil)
	if want := filepath.Join(dir, "zulip-export-4b2xk7ya"); err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	for name, want := range map[string]string{"realm.json": `{"zerver_realm": []}`, "uploads/5/ab/plan.txt": "the plans"} {
		path := filepath.Join(got, filepath.FromSlash(name))
		data, err := os.ReadFile(path)
		if err != nil || string(data) != want {
			t.Errorf("%s: got %q, %v; want %q", name, data, err, want)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600 whatever the tarball says", name, fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(filepath.Join(got, "uploads", "5", "ab")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("uploads/5/ab: got %v, %v; want a directory of mode 0700", fi.Mode(), err)
	}

	// A tarball of the export's files themselves is the export.
	_, dir, got, err = unpackInto(t, tarball(t, file("./realm.json", "{}"), file("messages-000001.json", "{}")), nil)
	if err != nil || got != dir {
		t.Errorf("a tarball without a top directory: got %q, %v; want %q", got, err, dir)
	}
}

// TestUnpack_RefusesWhatNoExportHolds: an entry whose name leads out of
// the directory, a symbolic or hard link, a device or a named pipe, a name
// given twice, a file the disk has no room for, or a tarball cut short is
// refused, naming the entry, and nothing is written outside the
// directory.
func TestUnpack_RefusesWhatNoExportHolds(t *testing.T) {
	top := dirEntry("zulip-export-x/")
	realm := file("zulip-export-x/realm.json", "{}")
	link := func(typ byte, name, target string) entry {
		return entry{hdr: tar.Header{Name: name, Typeflag: typ, Linkname: target, Mode: 0o777}}
	}
	device := func(typ byte, name string) entry {
		return entry{hdr: tar.Header{Name: name, Typeflag: typ, Mode: 0o600, Devmajor: 1, Devminor: 3}}
	}
	noise := make([]byte, 64<<10) // incompressible: half the tarball is half the file
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	cut := tarball(t, top, file("zulip-export-x/realm.json", string(noise)))
	cut = cut[:len(cut)/2]
	for _, c := range []struct {
		name string
		data []byte
		room func(int64) error
		want string
	}{
		{"a name that climbs out with ..", tarball(t, top, file("zulip-export-x/../../evil", "owned")), nil,
			`entry "zulip-export-x/../../evil" is not inside the export`},
		{"an absolute name", tarball(t, file("/tmp/evil", "owned")), nil,
			`entry "/tmp/evil" is not inside the export`},
		{"a symbolic link", tarball(t, top, link(tar.TypeSymlink, "zulip-export-x/uploads", "/etc"), file("zulip-export-x/uploads/passwd", "owned")), nil,
			`entry "zulip-export-x/uploads" is a symbolic link (to "/etc"): an export holds only files and directories`},
		{"a hard link", tarball(t, top, link(tar.TypeLink, "zulip-export-x/realm.json", "/etc/passwd")), nil,
			`entry "zulip-export-x/realm.json" is a hard link (to "/etc/passwd"): an export holds only files and directories`},
		{"a character device", tarball(t, top, device(tar.TypeChar, "zulip-export-x/realm.json")), nil,
			`entry "zulip-export-x/realm.json" is a device: an export holds only files and directories`},
		{"a block device", tarball(t, top, device(tar.TypeBlock, "zulip-export-x/realm.json")), nil,
			`entry "zulip-export-x/realm.json" is a device: an export holds only files and directories`},
		{"a named pipe", tarball(t, top, device(tar.TypeFifo, "zulip-export-x/realm.json")), nil,
			`entry "zulip-export-x/realm.json" is a named pipe: an export holds only files and directories`},
		{"a file given twice", tarball(t, top, realm, file("zulip-export-x/./realm.json", "{}")), nil,
			`entry "zulip-export-x/./realm.json" is there twice`},
		{"a file where a directory is", tarball(t, top, file("zulip-export-x", "{}")), nil,
			`entry "zulip-export-x" is there twice`},
		{"a file the disk has no room for", tarball(t, top, realm), func(size int64) error {
			return errors.New("2 bytes are free on the disk")
		}, `entry "zulip-export-x/realm.json" (2 bytes): 2 bytes are free on the disk`},
		{"a tarball cut short", cut, nil, `entry "zulip-export-x/realm.json": unexpected EOF`},
		{"no gzip stream", []byte("realm.json\n"), nil, `not a .tar.gz: gzip: invalid header`},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent, _, _, err := unpackInto(t, c.data, c.room)
			if err == nil || err.Error() != c.want {
				t.Errorf("got %v, want %q", err, c.want)
			}
			if names := dirNames(t, parent); !slices.Equal(names, []string{"unpacked"}) {
				t.Errorf("beside the directory: got %v, want nothing but it", names)
			}
			if _, err := os.Lstat("/tmp/evil"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("/tmp/evil: got %v, want it never written", err)
			}
		})
	}
}

// dirNames is the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestPack_UnpacksToTheSameFiles: what Pack writes, archive/tar (Unpack)
// and GNU tar read back as the same files, a long name and a name no
// slash splits into ustar's fields among them.
func TestPack_UnpacksToTheSameFiles(t *testing.T) {
	src := t.TempDir()
	want := map[string]string{
		"realm.json":           `{"zerver_realm":[]}`,
		"messages-000001.json": "",
		filepath.Join("uploads", "1", "ab", "tokentokentokentokentoken", strings.Repeat("long-name-", 12)+".txt"): "a long name",
		filepath.Join("uploads", strings.Repeat("x", 130)+".bin"):                                                 strings.Repeat("z", 1500),
	}
	for name, body := range want {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := Pack(&buf, src, "zulip-export-abcdefgh"); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	top, err := Unpack(bytes.NewReader(buf.Bytes()), dst, func(int64) error { return nil })
	if err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	if got := filepath.Base(top); got != "zulip-export-abcdefgh" {
		t.Errorf("got top %q, want zulip-export-abcdefgh", got)
	}
	for name, body := range want {
		got, err := os.ReadFile(filepath.Join(top, name))
		if err != nil || string(got) != body {
			t.Errorf("%s: got %q (%v), want %q", name, got, err, body)
		}
	}
	if tarPath, err := exec.LookPath("tar"); err == nil {
		gnu := t.TempDir()
		cmd := exec.Command(tarPath, "-xzf", "-", "-C", gnu)
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tar -xzf: %v: %s", err, out)
		}
		for name, body := range want {
			got, err := os.ReadFile(filepath.Join(gnu, "zulip-export-abcdefgh", name))
			if err != nil || string(got) != body {
				t.Errorf("tar: %s: got %q (%v), want %q", name, got, err, body)
			}
		}
	}
}
