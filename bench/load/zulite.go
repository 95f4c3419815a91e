package main

// The real zulite: its process, started on a fresh database, and the
// users, channels and unread state the load seeds it with.

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/bbolt"
)

type process struct {
	cmd  *exec.Cmd
	addr string
}

func (p *process) stop() {
	if p != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(os.Interrupt)
		p.cmd.Wait()
	}
}

var listening = regexp.MustCompile(`msg=listening addr=(127\.0\.0\.1:\d+)`)

var bootstrapKey = regexp.MustCompile(`(?m)^key: ([A-Za-z0-9]{32})$`)

// startZulite builds and starts zulite; it answers the process and the
// owner's key.
func startZulite(dir string) (*process, string, error) {
	bin := filepath.Join(dir, "zulite")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return nil, "", fmt.Errorf("build zulite (run from the repository root): %w", err)
	}
	args := []string{"serve", "--db", filepath.Join(dir, "z.db"), "--addr", "127.0.0.1:0"}
	if help, _ := exec.Command(bin, "serve", "--help").CombinedOutput(); strings.Contains(string(help), "-rate-limit") {
		args = append(args, "--rate-limit", "off") // SPEC §8: load tests switch limits off
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	keyc, addrc := make(chan string, 1), make(chan string, 1)
	go scanFor(stdout, bootstrapKey, keyc)
	go scanFor(stderr, listening, addrc)
	var key, addr string
	for key == "" || addr == "" {
		select {
		case key = <-keyc:
		case addr = <-addrc:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			return nil, "", errors.New("zulite did not start within 10 s")
		}
	}
	return &process{cmd, addr}, key, nil
}

// restartZulite starts the zulite built by startZulite again on its
// database, which has its owner already.
func restartZulite(dir string) (*process, error) {
	args := []string{"serve", "--db", filepath.Join(dir, "z.db"), "--addr", "127.0.0.1:0"}
	if help, _ := exec.Command(filepath.Join(dir, "zulite"), "serve", "--help").CombinedOutput(); strings.Contains(string(help), "-rate-limit") {
		args = append(args, "--rate-limit", "off")
	}
	cmd := exec.Command(filepath.Join(dir, "zulite"), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addrc := make(chan string, 1)
	go scanFor(stderr, listening, addrc)
	select {
	case addr := <-addrc:
		return &process{cmd, addr}, nil
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		return nil, errors.New("zulite did not start again within 10 s")
	}
}

func scanFor(r io.Reader, re *regexp.Regexp, found chan<- string) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		if m := re.FindStringSubmatch(s.Text()); m != nil {
			found <- m[1]
		}
	}
}

func pushTokenFor(i int) string { return fmt.Sprintf("%064x", i) }

// 15 channels a user: 15,000 (user, channel) pairs, each with unread
// messages after a refill, enough for every mark of a round's three write
// phases.
const users, channels, perUser, messages = 1000, 100, 15, 5000

// seed fills zulite with users (through the admin socket), channels and
// each user's subscriptions to 15 of them.
func seed(z *target, bin, db, ownerKey string) ([]account, error) {
	accounts := make([]account, users)
	var mu sync.Mutex
	var firstErr error
	parallel(8, users, func(i int) {
		out, err := exec.Command(bin, "user", "add", fmt.Sprintf("user%d@example.com", i), "--db", db).Output()
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("user add: %w", err)
		}
		accounts[i] = account{email: fmt.Sprintf("user%d@example.com", i), key: strings.TrimSpace(string(out))}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range accounts {
		for _, c := range rng.Perm(channels)[:perUser] {
			accounts[i].channels = append(accounts[i].channels, c+1)
		}
	}
	var names []string
	for c := range channels {
		names = append(names, fmt.Sprintf("channel%d", c))
	}
	// The owner creates the channels by subscribing, in id order.
	for _, n := range names {
		if r := drive(z, 1, 1, 200, func(int) *http.Request {
			return newRequest(z, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {`[{"name":"` + n + `"}]`}}, "owner@zulite.localhost", ownerKey)
		}); r.err != nil {
			return nil, r.err
		}
	}
	steps := []struct {
		what string
		n    int
		req  func(i int) *http.Request
	}{
		{"subscribe", users, func(i int) *http.Request {
			a := accounts[i]
			var subs []string
			for _, c := range a.channels {
				subs = append(subs, `{"name":"`+names[c-1]+`"}`)
			}
			return newRequest(z, http.MethodPost, "/api/v1/users/me/subscriptions", url.Values{"subscriptions": {"[" + strings.Join(subs, ",") + "]"}}, a.email, a.key)
		}},
	}
	for _, s := range steps {
		if r := drive(z, 64, s.n, 200, s.req); r.err != nil {
			return nil, fmt.Errorf("seed %s: %w", s.what, r.err)
		}
	}
	return accounts, nil
}

// refill readies a round: 5,000 messages, which leave every (user,
// channel) pair with unread messages (unread for the subscribers but
// their senders), and the push tokens the DELETE scenarios remove.
func refill(z *target, accounts []account, requests int) error {
	steps := []struct {
		what string
		n    int
		req  func(i int) *http.Request
	}{
		{"send", messages, func(i int) *http.Request {
			a := accounts[(i*7919)%users]
			return newRequest(z, http.MethodPost, "/api/v1/messages", url.Values{"type": {"stream"}, "to": {strconv.Itoa(a.channels[i%perUser])}, "topic": {"topic " + strconv.Itoa(i%20)}, "content": {"hello"}}, a.email, a.key)
		}},
		{"register push tokens", 3 * max(requests/4, 1), func(i int) *http.Request {
			a := accounts[i%users]
			return newRequest(z, http.MethodPost, "/api/v1/users/me/apns_device_token", url.Values{"token": {pushTokenFor(i)}, "appid": {"org.zulip.Zulip"}}, a.email, a.key)
		}},
	}
	for _, s := range steps {
		if r := drive(z, 64, s.n, 200, s.req); r.err != nil {
			return fmt.Errorf("refill %s: %w", s.what, r.err)
		}
	}
	return nil
}

// seedSubscribers subscribes the accounts of emails to the channel
// straight in the database file, writing what zulite's subscribe writes
// (the subscription's record, the subscribers index with the
// subscription's start, and, from schema 3 on, the read watermark),
// while no server holds the file. Through the API, each joiner costs a
// walk over every account (the subscription event's figures), so a
// channel of 100,000 would take hours to fill.
func seedSubscribers(db string, channelID uint64, emails []string) error {
	d, err := bbolt.Open(db, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer d.Close()
	be := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	return d.Update(func(tx *bbolt.Tx) error {
		start := be(tx.Bucket([]byte("messages")).Sequence())
		subscription := fmt.Sprintf(`{"color":"#76ce90","joined":%d}`, time.Now().Unix())
		watermarks := tx.Bucket([]byte("watermarks")) // nil before schema 3
		for _, email := range emails {
			id := tx.Bucket([]byte("user_emails")).Get([]byte(strings.ToLower(email)))
			if id == nil {
				return fmt.Errorf("seed subscribers: no account %s", email)
			}
			pair, byChannel := append(slices.Clone(id), be(channelID)...), append(be(channelID), id...)
			if err := tx.Bucket([]byte("subscriptions")).Put(pair, []byte(subscription)); err != nil {
				return err
			}
			value := start
			if watermarks == nil {
				value = nil
			}
			if err := tx.Bucket([]byte("subscribers")).Put(byChannel, value); err != nil {
				return err
			}
			if watermarks != nil {
				if err := watermarks.Put(pair, start); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// adminUserAdd makes an account through the admin socket at sock, as
// `zulite user add EMAIL` does while a server holds the database, and
// answers its API key.
func adminUserAdd(sock, email string) (string, error) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	req := map[string]any{"command": "user add", "args": []string{email}, "options": map[string]any{}}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return "", err
	}
	var resp struct {
		Output string `json:"output"`
		Error  string `json:"error"`
	}
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		return "", err
	}
	if resp.Error != "" {
		return "", errors.New(resp.Error)
	}
	return strings.TrimSpace(resp.Output), nil
}
