package main

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// mustOpenStore opens a fresh database under t.TempDir and, when the test
// ends, runs bbolt's consistency check before closing it.
func mustOpenStore(t testing.TB) *store {
	t.Helper()
	st, err := openStore(filepath.Join(t.TempDir(), "test.db"), time.Second)
	if err != nil {
		t.Fatalf("openStore: %v", err)
	}
	t.Cleanup(func() {
		st.quiesce()
		checkConsistency(t, st.db)
		if err := st.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return st
}

func checkConsistency(t testing.TB, db *bbolt.DB) {
	t.Helper()
	err := db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		t.Errorf("consistency check: %v", err)
	}
}

func mustCreateUser(t testing.TB, st *store, email string, role int, bot bool) (user, string) {
	t.Helper()
	u, key, err := st.createUser(email, email, role, bot)
	if err != nil {
		t.Fatalf("createUser(%s): %v", email, err)
	}
	return u, key
}

func mustCreateChannel(t testing.TB, st *store, name string, private bool) channel {
	t.Helper()
	ch, err := st.createChannel(name, "", private, 0)
	if err != nil {
		t.Fatalf("createChannel(%s): %v", name, err)
	}
	return ch
}

func mustSubscribe(t testing.TB, st *store, u user, names ...string) {
	t.Helper()
	var specs []channelSpec
	for _, n := range names {
		specs = append(specs, channelSpec{Name: n})
	}
	if _, _, _, err := st.subscribe(u, specs, false); err != nil {
		t.Fatalf("subscribe(%s, %v): %v", u.Email, names, err)
	}
}

func mustSend(t testing.TB, st *store, sender user, ch channel) uint64 {
	t.Helper()
	sent, err := st.sendMessage(sender, channelRef{ID: ch.ID}, "topic", "hello", "test")
	if err != nil {
		t.Fatalf("sendMessage: %v", err)
	}
	return sent.ID
}

func mustUpdateFlags(t testing.TB, st *store, u user, ids []uint64, change flagChange) {
	t.Helper()
	if _, _, err := st.updateFlags(u, ids, change); err != nil {
		t.Fatalf("updateFlags(%s, %v, %+v): %v", u.Email, ids, change, err)
	}
}

func mustPushTokens(t testing.TB, st *store, userID uint64) []pushToken {
	t.Helper()
	tokens, err := st.pushTokens(userID)
	if err != nil {
		t.Fatalf("pushTokens(%d): %v", userID, err)
	}
	return tokens
}

// mustView and mustUpdate run fn in a transaction of their own: a test
// that reads or seeds the file directly stops if that fails.
func mustView(t testing.TB, st *store, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	if err := st.db.View(fn); err != nil {
		t.Fatalf("view: %v", err)
	}
}

func mustUpdate(t testing.TB, st *store, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	if err := st.db.Update(fn); err != nil {
		t.Fatalf("update: %v", err)
	}
}

func mustUnread(t testing.TB, st *store, u user, ch channel) []uint64 {
	t.Helper()
	ids, err := st.unread(u.ID, ch.ID)
	if err != nil {
		t.Fatalf("unread: %v", err)
	}
	return ids
}

func TestOpenStore_CreatesBucketsSchemaVersionAndPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "z.db")
	st, err := openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("file mode: got %o, want 600", got)
	}
	if st.db.NoSync {
		t.Errorf("NoSync: got true, want every commit synced")
	}
	mustView(t, st, func(tx *bbolt.Tx) error {
		for _, name := range allBuckets {
			if tx.Bucket(name) == nil {
				t.Errorf("bucket %s: missing", name)
			}
		}
		if got := btoi(tx.Bucket(bucketMeta).Get(keySchemaVersion)); got != schemaVersion {
			t.Errorf("schema version: got %d, want %d", got, schemaVersion)
		}
		return nil
	})
}

func TestOpenStore_ExistingFileMadePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "z.db")
	st, err := openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err = openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode after reopening: got %o, want 600", fi.Mode().Perm())
	}
}

func TestOpenStore_RefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "z.db")
	st, err := openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, st, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, itob(schemaVersion+1))
	})
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := openStore(path, time.Second); err == nil {
		t.Fatal("openStore on a newer schema: got nil error, want a refusal")
	}
}

func TestOpenStore_HeldDatabaseFailsFast(t *testing.T) {
	st := mustOpenStore(t)
	start := time.Now()
	_, err := openStore(st.db.Path(), 200*time.Millisecond)
	if !errors.Is(err, errDatabaseLocked) {
		t.Fatalf("second open: got %v, want errDatabaseLocked", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("second open waited %v, want about the lock timeout", waited)
	}
}

// Rejections inside a shared batch must not undo or repeat the others'
// writes: concurrent successful adds and refused removals all end right.
func TestBatchedWrites_RejectionsLeaveTheOthersCommitted(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	const n = 50
	errs := make(chan error, 2*n)
	for i := range n {
		go func() { errs <- st.addPushToken(alice.ID, pushToken{Kind: pushFCM, Token: "t" + strconv.Itoa(i)}) }()
		go func() { errs <- st.removePushToken(alice.ID, pushFCM, "missing"+strconv.Itoa(i)) }()
	}
	var added, refused int
	for range 2 * n {
		switch err := <-errs; {
		case err == nil:
			added++
		case errors.Is(err, errTokenNotFound):
			refused++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if added != n || refused != n {
		t.Errorf("got %d added and %d refused, want %d and %d", added, refused, n, n)
	}
	if tokens := mustPushTokens(t, st, alice.ID); len(tokens) != n {
		t.Errorf("tokens stored: got %d, want %d", len(tokens), n)
	}
}

// snapshotFile's copy is whole, private, read from its start, and has no
// name beside the database: nothing is left there, even by a killed
// server.
func TestSnapshotFile_AWholePrivateCopyWithNoNameBesideTheDatabase(t *testing.T) {
	st := mustOpenStore(t)
	mustCreateUser(t, st, "alice@example.com", roleMember, false)
	copied, size, err := st.snapshotFile()
	if err != nil {
		t.Fatal(err)
	}
	defer copied.Close()
	if entries, _ := os.ReadDir(filepath.Dir(st.db.Path())); len(entries) != 1 {
		t.Errorf("beside the database: got %d files, want the database alone", len(entries))
	}
	if fi, err := copied.Stat(); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != size {
		t.Errorf("the copy: got %v, %v; want mode 600 and %d bytes", fi.Mode().Perm(), err, size)
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	out, _ := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if _, err := io.Copy(out, copied); err != nil {
		t.Fatal(err)
	}
	out.Close()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("the copy does not open: %v", err)
	}
	defer db.Close()
	checkConsistency(t, db)
	db.View(func(tx *bbolt.Tx) error {
		if n := tx.Bucket(bucketUsers).Stats().KeyN; n != 1 {
			t.Errorf("users in the copy: got %d, want 1", n)
		}
		return nil
	})
}

// Every store rejection has its words for clients in envelope.go's
// rejectionWords (but the move limit's, told through its typed error):
// the store says nothing in Zulip's words, so a rejection left out of
// the map would reach a client as an internal error.
func TestRejections_EachHasItsWords(t *testing.T) {
	parse := func(file string) *ast.File {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	declared := map[string]bool{}
	ast.Inspect(parse("store_rejections.go"), func(n ast.Node) bool {
		if spec, ok := n.(*ast.ValueSpec); ok {
			for i, v := range spec.Values {
				if u, ok := v.(*ast.UnaryExpr); ok {
					if lit, ok := u.X.(*ast.CompositeLit); ok {
						if id, ok := lit.Type.(*ast.Ident); ok && id.Name == "rejection" {
							declared[spec.Names[i].Name] = true
						}
					}
				}
			}
		}
		return true
	})
	worded := map[string]bool{}
	ast.Inspect(parse("envelope.go"), func(n ast.Node) bool {
		if spec, ok := n.(*ast.ValueSpec); ok && spec.Names[0].Name == "rejectionWords" {
			for _, elt := range spec.Values[0].(*ast.CompositeLit).Elts {
				worded[elt.(*ast.KeyValueExpr).Key.(*ast.Ident).Name] = true
			}
		}
		return true
	})
	if len(declared) < 50 {
		t.Fatalf("store_rejections.go: got %d rejections, want the store's sentinels (50 or more)", len(declared))
	}
	delete(declared, "errMoveTimeLimit")
	for name := range declared {
		if !worded[name] {
			t.Errorf("%s: got no words in rejectionWords, want Zulip's", name)
		}
	}
	for name := range worded {
		if !declared[name] {
			t.Errorf("rejectionWords[%s]: got words for no rejection of store_rejections.go", name)
		}
	}
	if len(rejectionWords) != len(worded) {
		t.Errorf("rejectionWords: got %d entries at run time, %d in the source", len(rejectionWords), len(worded))
	}
}
