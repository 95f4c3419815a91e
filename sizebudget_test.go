package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The binary must stay under 12 MiB on every arch (.ci/run), and some
// of what it once held cost far more than it did: regexp, for seven
// patterns, 240 KB (written out beside their tests now); a
// slices.SortFunc of the core's own, about 20 KB each (sortFunc is the
// same sort). This keeps them out of the binary's code: tests and the
// load generator may use them.
func TestBinaryCode_UsesNoRegexpNorSlicesSortFunc(t *testing.T) {
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && path != "." && (path == "bench" || d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")):
			return filepath.SkipDir
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found %d Go files; the walk is wrong", len(files))
	}
	for _, path := range files {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "regexp" {
				t.Errorf("%s imports regexp, which costs the binary 240 KB; write the pattern out and hold it to the regexp in a test (patterns_test.go)", path)
			}
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), "slices.SortFunc(") || strings.Contains(string(src), "slices.SortStableFunc(") {
			t.Errorf("%s calls slices.SortFunc or SortStableFunc, a copy of the sort for each element type; call sortFunc or sortStableFunc (sortfunc.go), or sort.Slice outside the core", path)
		}
	}
}
