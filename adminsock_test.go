package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

func TestServe_BootstrapsOnceAndAdministersThroughTheSocket(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "z.db")
	stdout, _, stop := startServe(t, db, nil)
	key := regexp.MustCompile(`key: ([A-Za-z0-9]{32})\n`).FindStringSubmatch(stdout.String())
	if key == nil || !strings.Contains(stdout.String(), "email: owner@zulite.localhost\n") {
		t.Fatalf("bootstrap output: got %d bytes without an e-mail and key", len(stdout.String()))
	}
	rc, err := os.ReadFile(filepath.Join(dir, "zuliprc"))
	if err != nil || !strings.HasPrefix(string(rc), "[api]\nemail=owner@zulite.localhost\nkey="+key[1]+"\nsite=http://127.0.0.1:") {
		t.Errorf("zuliprc: got %v, want [api] with the printed e-mail, key and site", err)
	}
	for _, path := range []string{filepath.Join(dir, "zuliprc"), db, socketPath(db)} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: got %v, %v; want mode 600", filepath.Base(path), fi.Mode().Perm(), err)
		}
	}

	// The server holds the file: this goes through the socket.
	out, _, err := runCLI(t, nil, "user", "add", "alice@example.com", "--db", db)
	if err != nil || !apiKeyLine.MatchString(out) {
		t.Fatalf("user add while serving: got %v", err)
	}
	if _, _, err := runCLI(t, nil, "user", "add", "ALICE@example.com", "--db", db); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("duplicate user add through the socket: got %v, want an already-in-use error", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve after cancel: %v", err)
	}
	if _, err := os.Stat(socketPath(db)); !os.IsNotExist(err) {
		t.Errorf("socket after shutdown: got %v, want it removed", err)
	}

	// Second start: accounts exist, so no new owner and no key printed.
	// The public URL loses its trailing slash; the realm name comes from
	// the environment.
	stdout, stderr, _ := startServe(t, db, map[string]string{"ZULITE_REALM_NAME": "Acme"}, "--url", "https://chat.example.com/")
	if stdout.String() != "" {
		t.Errorf("second start printed %d bytes, want nothing", len(stdout.String()))
	}
	addr := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`).FindStringSubmatch(stderr.String())
	resp, err := http.Get("http://" + addr[1] + "/api/v1/server_settings")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var settings map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&settings); err != nil {
		t.Fatalf("server_settings: %v", err)
	}
	if settings["realm_url"] != "https://chat.example.com" || settings["realm_uri"] != "https://chat.example.com" || settings["realm_name"] != "Acme" {
		t.Errorf("server_settings: got realm_url %v, realm_uri %v, realm_name %v; want https://chat.example.com twice and Acme",
			settings["realm_url"], settings["realm_uri"], settings["realm_name"])
	}
	out = mustRunCLI(t, nil, "user", "list", "--db", db)
	if strings.Count(out, "\n") != 2 {
		t.Errorf("accounts: got %q, want the owner and alice", out)
	}
}

// A backup client that asks for the copy and then reads nothing must hold
// up no write (issue 20). bbolt cannot grow its mapping of the file while
// a read transaction is open, so a server that streamed the copy from its
// read transaction let one stalled client stop every writer, for as long
// as the client was allowed (an hour). The database here is filled to
// just under its 64 MiB mapping, so that the sends below need the mapping
// to grow: they must all be answered in good time, a normal backup must
// still give a whole database, the server must give up on the stalled
// client, leave nothing beside the database, and stop on SIGTERM as
// usual.
func TestBackup_AClientThatStopsReadingHoldsUpNoWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary on a 64 MiB database; skipped with -short")
	}
	bin := e2eBuildBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "z.db")
	const mapping = 64 << 20
	senderKey, filled := fillToMapping(t, db, mapping)
	srv := e2eRestartServer(t, bin, db, "--rate-limit", "off")

	stalled, err := net.Dial("unix", socketPath(db))
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if err := json.NewEncoder(stalled).Encode(adminRequest{Command: "backup"}); err != nil {
		t.Fatal(err)
	}
	stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	in := bufio.NewReader(stalled)
	line, err := in.ReadBytes('\n') // the header, and then nothing read for a while
	stalledAt := time.Now()
	var header backupHeader
	if err == nil {
		err = json.Unmarshal(line, &header)
	}
	if err != nil || header.Size < mapping/2 {
		t.Fatalf("backup header: got %q, %v; want the size of the database", line, err)
	}

	// Sends go on meanwhile, and each is answered within 2 s. Before the
	// fix, the fifteenth or so was not answered at all: its commit had to
	// grow the mapping, and waited for the client to read.
	const senders, sendsEach, bound = 4, 25, 2 * time.Second
	client := &http.Client{Timeout: 5 * time.Second}
	content := strings.Repeat("a message of some length ", 360) // 9000 bytes
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	answered := 0
	for w := range senders {
		wg.Go(func() {
			for i := range sendsEach {
				params := url.Values{"type": {"stream"}, "to": {"general"}, "topic": {"load"}, "content": {content}}
				req, _ := http.NewRequest(http.MethodPost, srv.baseURL+"/api/v1/messages", strings.NewReader(params.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth("sender@example.com", senderKey)
				start := time.Now()
				resp, err := client.Do(req)
				took := time.Since(start)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				ok := err == nil && resp.StatusCode == http.StatusOK && took <= bound
				mu.Lock()
				slowest = max(slowest, took)
				if ok {
					answered++
				}
				mu.Unlock()
				if !ok {
					code := 0
					if err == nil {
						code = resp.StatusCode
					}
					t.Errorf("send %d of sender %d: got status %d, %v after %v; want 200 within %v, while a backup client reads nothing", i+1, w+1, code, err, took.Round(time.Millisecond), bound)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d sends of %d bytes answered in time while a backup client read nothing; the slowest took %v", answered, senders*sendsEach, len(content), slowest.Round(time.Millisecond))
	if t.Failed() {
		return // the rest would wait on the same stalled writes
	}

	// A normal backup, meanwhile, is a whole database with every message.
	copyPath := filepath.Join(dir, "copy.db")
	e2eRunCLI(t, bin, "backup", copyPath, "--db", db).wantOK(t, "backup beside a stalled one")
	backup, err := bbolt.Open(copyPath, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("the backup does not open: %v", err)
	}
	checkConsistency(t, backup)
	var messages int
	backup.View(func(tx *bbolt.Tx) error {
		messages = tx.Bucket(bucketMessages).Stats().KeyN
		return nil
	})
	backup.Close()
	if want := filled + senders*sendsEach; messages != want {
		t.Errorf("messages in the backup: got %d, want %d", messages, want)
	}

	// The server gives up on the stalled client after backupStallTimeout:
	// it closes its copy, and what the client then reads ends short.
	if held := waitForBackupCopiesClosed(t, srv.cmd.Process.Pid, backupStallTimeout+10*time.Second); held != "" {
		t.Errorf("%v after the client stopped reading, the server still holds %s; want it given up after %v", time.Since(stalledAt).Round(time.Second), held, backupStallTimeout)
	}
	stalled.SetReadDeadline(time.Now().Add(5 * time.Second))
	received, err := io.Copy(io.Discard, in)
	if err != nil || received >= header.Size {
		t.Errorf("the stalled client's copy: got %d of %d bytes, %v; want it cut short by the server", received, header.Size, err)
	}

	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if name := e.Name(); name != "z.db" && name != "z.db.sock" && name != "copy.db" {
			t.Errorf("beside the database: got %s, want no temporary file left", name)
		}
	}
	if err := srv.stop(); err != nil {
		t.Errorf("stop on SIGTERM: %v", err)
	}
	if fi, err := os.Stat(db); err != nil {
		t.Error(err)
	} else if fi.Size() <= mapping {
		t.Errorf("database after the sends: got %d bytes, want more than %d, or the sends did not need the mapping to grow and this test showed nothing", fi.Size(), mapping)
	}
}

// fillToMapping makes a database of one sender, a channel and filler
// messages whose pages reach to within 512 KiB of mapping, a power of
// two: bbolt maps a file of that size with exactly that, so a few more
// writes need it to grow the mapping. It returns the sender's key and the
// number of messages.
func fillToMapping(t *testing.T, db string, mapping int64) (string, int) {
	t.Helper()
	st, err := openStore(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	st.db.AllocSize = 1 << 30 // the file grows to its mapping's size, not 16 MiB past its pages
	sender, key, err := st.createUser("sender@example.com", "Sender", roleMember, false)
	if err != nil {
		t.Fatal(err)
	}
	ch := mustCreateChannel(t, st, "general", false)
	content := strings.Repeat("filler ", 250)
	count := 0
	for {
		var used int64
		st.db.View(func(tx *bbolt.Tx) error {
			used = tx.Size()
			return nil
		})
		room := mapping - used + int64(st.db.Stats().FreePageN*st.db.Info().PageSize)
		if room <= 512<<10 {
			break
		}
		n := max(1, min(5000, int(room/2/2048))) // half the room, at about 2 KiB a message
		err := st.db.Update(func(tx *bbolt.Tx) error {
			messages := tx.Bucket(bucketMessages)
			for range n {
				id, err := messages.NextSequence()
				if err != nil {
					return err
				}
				m := message{ID: id, SenderID: sender.ID, ChannelID: ch.ID, Topic: "filler", Content: content, Timestamp: time.Now().Unix()}
				if err := putJSON(messages, itob(id), m); err != nil {
					return err
				}
				if err := indexMessage(tx, m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		count += n
	}
	if fi, err := os.Stat(db); err != nil {
		t.Fatal(err)
	} else if fi.Size() != mapping {
		t.Fatalf("filled database: got %d bytes, want exactly %d", fi.Size(), mapping)
	}
	return key, count
}

// waitForBackupCopiesClosed waits up to limit for the process to hold no
// backup copy open (an unlinked file beside the database, seen in
// /proc/PID/fd), and answers one it still holds, or "" for none.
func waitForBackupCopiesClosed(t *testing.T, pid int, limit time.Duration) string {
	t.Helper()
	if runtime.GOOS != "linux" { // no /proc to look in: give it the time
		time.Sleep(backupStallTimeout + 5*time.Second)
		return ""
	}
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	for deadline := time.Now().Add(limit); ; time.Sleep(100 * time.Millisecond) {
		held := ""
		entries, err := os.ReadDir(fds)
		if err != nil {
			t.Fatalf("open files of the server: %v", err)
		}
		for _, e := range entries {
			if target, _ := os.Readlink(filepath.Join(fds, e.Name())); strings.Contains(target, "-backup-") {
				held = target
			}
		}
		if held == "" || time.Now().After(deadline) {
			return held
		}
	}
}
