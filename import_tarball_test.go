package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImport_ManagePyExportsTarballImportsAsItsDirectory: `manage.py
// export` leaves DIR.tar.gz (tar -czf DIR.tar.gz -C PARENT DIR); the import
// reads it as it reads DIR, and leaves nothing beside the database but
// the database and its uploaded files.
func TestImport_ManagePyExportsTarballImportsAsItsDirectory(t *testing.T) {
	tarCmd, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar on this system to make the tarball as manage.py export makes it")
	}
	bin := e2eBuildBinary(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "zulip-export-4b2xk7ya")
	if err := os.CopyFS(dir, os.DirFS(corpusDir)); err != nil {
		t.Fatal(err)
	}
	tarball := dir + ".tar.gz"
	if out, err := exec.Command(tarCmd, "-czf"+tarball, "-C"+parent, filepath.Base(dir)).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	if err := os.RemoveAll(dir); err != nil { // as export_realm_wrapper does
		t.Fatal(err)
	}

	r, left := importThroughBinary(t, bin, tarball)
	r.wantOK(t, "import "+tarball)
	if r.stdout != corpusReport {
		t.Errorf("the report of the tarball's import:\n got %s\nwant %s", r.stdout, corpusReport)
	}
	if want := []string{"z.db", "z.db.uploads"}; !slices.Equal(left, want) {
		t.Errorf("beside the database: got %v, want %v (the unpacked export removed)", left, want)
	}
	if names := dirNames(t, parent); !slices.Equal(names, []string{filepath.Base(tarball)}) {
		t.Errorf("beside the tarball: got %v, want the tarball alone", names)
	}
}

// tarEntry is an entry of a tarball a test writes.
type tarEntry struct {
	hdr  tar.Header
	body string
}

// writeTarball writes the entries as a .tar.gz at path.
func writeTarball(t *testing.T, path string, entries []tarEntry) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := e.hdr
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// corpusEntries are the corpus's files as tarball entries under top/.
func corpusEntries(t *testing.T, top string) []tarEntry {
	t.Helper()
	entries := []tarEntry{{hdr: tar.Header{Name: top + "/", Typeflag: tar.TypeDir, Mode: 0o755}}}
	err := fs.WalkDir(os.DirFS(corpusDir), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == "." {
			return err
		}
		if d.IsDir() {
			entries = append(entries, tarEntry{hdr: tar.Header{Name: top + "/" + path + "/", Typeflag: tar.TypeDir, Mode: 0o755}})
			return nil
		}
		data, err := os.ReadFile(filepath.Join(corpusDir, filepath.FromSlash(path)))
		entries = append(entries, tarEntry{tar.Header{Name: top + "/" + path, Typeflag: tar.TypeReg, Mode: 0o644}, string(data)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestImport_ATarballThatReachesOutIsRefusedAndLeavesNothing: a tarball
// whose entry climbs out of the directory it is unpacked in, or is a
// symbolic or hard link, or that holds no realm.json, is refused in one
// line naming the entry; nothing is written outside, and nothing is left
// beside the database (neither the database nor the unpacked export).
func TestImport_ATarballThatReachesOutIsRefusedAndLeavesNothing(t *testing.T) {
	bin := e2eBuildBinary(t)
	const top = "zulip-export-x"
	for _, c := range []struct {
		name  string
		extra []tarEntry
		want  string
	}{
		{"an entry that climbs out", []tarEntry{{tar.Header{Name: top + "/../../../escaped.txt", Typeflag: tar.TypeReg, Mode: 0o644}, "owned"}},
			`entry "zulip-export-x/../../../escaped.txt" is not inside the export`},
		{"a symbolic link", []tarEntry{{hdr: tar.Header{Name: top + "/uploads/5/ab/cdefghijklmnopqrstuvwxyz/plan.txt", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}},
			`entry "zulip-export-x/uploads/5/ab/cdefghijklmnopqrstuvwxyz/plan.txt" is a symbolic link (to "/etc/passwd"): an export holds only files and directories`},
		{"a hard link", []tarEntry{{hdr: tar.Header{Name: top + "/avatars/5/extra.png", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}}},
			`entry "zulip-export-x/avatars/5/extra.png" is a hard link (to "/etc/passwd"): an export holds only files and directories`},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			tarball := filepath.Join(parent, "sub", top+".tar.gz")
			if err := os.Mkdir(filepath.Dir(tarball), 0o700); err != nil {
				t.Fatal(err)
			}
			writeTarball(t, tarball, append(corpusEntries(t, top), c.extra...))
			r, left := importThroughBinary(t, bin, tarball)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("got exit %d, stderr %q; want a non-zero exit and one line with %q", r.code, r.stderr, c.want)
			}
			if len(left) != 0 {
				t.Errorf("beside the database: got %v, want nothing", left)
			}
			if names := dirNames(t, parent); !slices.Equal(names, []string{"sub"}) {
				t.Errorf("beside the tarball's directory: got %v, want nothing written", names)
			}
		})
	}

	parent := t.TempDir()
	tarball := filepath.Join(parent, "not-an-export.tar.gz")
	writeTarball(t, tarball, []tarEntry{{tar.Header{Name: "notes/readme.txt", Typeflag: tar.TypeReg, Mode: 0o644}, "hello"}})
	r, left := importThroughBinary(t, bin, tarball)
	if r.code == 0 || !strings.Contains(r.stderr, "no realm.json") || len(left) != 0 {
		t.Errorf("a tarball without realm.json: got exit %d, stderr %q, left %v; want a refusal that leaves nothing", r.code, r.stderr, left)
	}
}
