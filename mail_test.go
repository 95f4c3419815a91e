package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"io"
	"log/slog"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// smtpPeer is an SMTP relay on loopback, written for the test: it
// offers STARTTLS, then AUTH PLAIN once the session is encrypted, and
// keeps what it was given.
type smtpPeer struct {
	ln       net.Listener
	tls      *tls.Config
	roots    *x509.CertPool
	user     string
	mu       sync.Mutex
	password string
	got      []peerMessage
	arrived  chan struct{}
}

type peerMessage struct {
	from, to  string
	data      string
	encrypted bool // STARTTLS came before AUTH and MAIL
	authed    bool
}

func startSMTPPeer(t *testing.T, user, password string) *smtpPeer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "relay"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &smtpPeer{ln: ln, roots: roots, user: user, password: password, arrived: make(chan struct{}, 100),
		tls: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(conn)
		}
	}()
	return p
}

func (p *smtpPeer) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *smtpPeer) serve(conn net.Conn) {
	defer func() { conn.Close() }()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	say := func(line string) { io.WriteString(conn, line+"\r\n") }
	var msg peerMessage
	encrypted := false
	say("220 relay ESMTP")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		switch verb {
		case "EHLO", "HELO":
			io.WriteString(conn, "250-relay\r\n")
			if encrypted {
				io.WriteString(conn, "250-AUTH PLAIN\r\n")
			} else {
				io.WriteString(conn, "250-STARTTLS\r\n")
			}
			say("250 8BITMIME")
		case "STARTTLS":
			say("220 go ahead")
			tc := tls.Server(conn, p.tls)
			if tc.Handshake() != nil {
				return
			}
			conn, r, encrypted = tc, bufio.NewReader(tc), true
		case "AUTH":
			fields := strings.Fields(line)
			raw, _ := base64.StdEncoding.DecodeString(fields[len(fields)-1])
			parts := strings.Split(string(raw), "\x00")
			p.mu.Lock()
			ok := encrypted && len(parts) == 3 && parts[1] == p.user && parts[2] == p.password
			p.mu.Unlock()
			if !ok {
				say("535 5.7.8 Authentication credentials invalid")
				continue
			}
			msg.authed = true
			say("235 2.7.0 Authentication successful")
		case "MAIL":
			msg.from, msg.encrypted = strings.TrimPrefix(line, "MAIL FROM:"), encrypted
			say("250 ok")
		case "RCPT":
			msg.to = strings.TrimPrefix(line, "RCPT TO:")
			say("250 ok")
		case "DATA":
			say("354 end with .")
			var data strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				data.WriteString(l)
			}
			msg.data = data.String()
			p.mu.Lock()
			p.got = append(p.got, msg)
			p.mu.Unlock()
			p.arrived <- struct{}{}
			say("250 queued")
		case "QUIT":
			say("221 bye")
			return
		default:
			say("502 unknown")
		}
	}
}

func (p *smtpPeer) wait(t *testing.T, n int) []peerMessage {
	t.Helper()
	for range n {
		select {
		case <-p.arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("the relay got %d messages, want %d", len(p.messages()), n)
		}
	}
	return p.messages()
}

func (p *smtpPeer) messages() []peerMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]peerMessage(nil), p.got...)
}

func TestMailer_InvitationGoesThroughSTARTTLSAndAUTH(t *testing.T) {
	const password = "relay-secret-8f3k"
	peer := startSMTPPeer(t, "zulite-relay", password)
	var logs syncBuffer
	cfg := smtpConfig{Host: "127.0.0.1", Port: peer.port(), User: "zulite-relay", Password: password, From: "invites@example.com",
		tls: &tls.Config{RootCAs: peer.roots, ServerName: "127.0.0.1"}}
	e := newTestEnv(t)
	m := newMailer(cfg, "zulite", slog.New(slog.NewTextHandler(&logs, nil)))
	m.wait = 10 * time.Millisecond
	e.server.mailer = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites", url.Values{"invitee_emails": {"carol@example.com"}, "stream_ids": {"[]"}}, &e.bob))
	got := peer.wait(t, 1)[0]
	if !got.encrypted || !got.authed || !strings.HasPrefix(got.from, "<invites@example.com>") || got.to != "<carol@example.com>" {
		t.Fatalf("the relay saw %+v, want STARTTLS, AUTH, then the message from invites@ to carol@", got)
	}
	parsed, err := mail.ReadMessage(strings.NewReader(got.data))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(quotedprintable.NewReader(parsed.Body))
	subject, _ := new(mime.WordDecoder).DecodeHeader(parsed.Header.Get("Subject"))
	if subject != "bob@example.com has invited you to join zulite" || parsed.Header.Get("From") != `"zulite" <invites@example.com>` {
		t.Errorf("headers: subject %q from %q", subject, parsed.Header.Get("From"))
	}
	if !strings.Contains(string(body), "To get started, click the link below.\r\n    <http://zulite.test/accounts/do_confirm/") {
		t.Errorf("body: %q", body)
	}

	// The relay refuses the credentials: the mailer tries four times,
	// logs the failure, and never the password.
	peer.mu.Lock()
	peer.password = "changed"
	peer.mu.Unlock()
	id := listInvitesOf(t, e, &e.bob)[0]["id"].(float64)
	wantAPISuccess(t, e.request(t, "POST", "/api/v1/invites/"+big.NewInt(int64(id)).String()+"/resend", nil, &e.bob))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "e-mail not sent") {
		if time.Now().After(deadline) {
			t.Fatalf("no failure logged: %s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if log := logs.String(); strings.Contains(log, password) || !strings.Contains(log, "attempts=4") {
		t.Errorf("the log: %s (want 4 attempts, and no password)", log)
	}
	if len(peer.messages()) != 1 {
		t.Errorf("a refused login delivered mail")
	}
	e.server.metrics.mails = m
	var page strings.Builder
	e.server.metrics.render(&page, storeFigures{})
	if !strings.Contains(page.String(), `zulite_emails_total{result="sent"} 1`) || !strings.Contains(page.String(), `zulite_emails_total{result="failed"} 1`) {
		t.Errorf("metrics: %s", page.String())
	}
}

func TestSMTPConfig_FlagsPasswordAndTheirMistakes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "smtp-password")
	if err := os.WriteFile(file, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := options{SMTPHost: "smtp.example.com", SMTPPort: 587, SMTPFrom: "zulite@example.com", SMTPUser: "u"}
	withFile := base
	withFile.SMTPPasswordFile = file
	cfg, err := smtpFrom(withFile)
	if err != nil || cfg.Password != "from-a-file" {
		t.Fatalf("password file: %+v %v", cfg, err)
	}
	withEnv := base
	withEnv.SMTPPassword = "from-env"
	if cfg, err := smtpFrom(withEnv); err != nil || cfg.Password != "from-env" {
		t.Fatalf("password env: %+v %v", cfg, err)
	}
	for _, c := range []struct {
		name string
		o    options
	}{
		{"no --smtp-from", options{SMTPHost: "smtp.example.com", SMTPPort: 587}},
		{"a user without a password", base},
		{"both a file and the environment", func() options { o := withFile; o.SMTPPassword = "from-env-secret"; return o }()},
		{"a port out of range", func() options { o := withEnv; o.SMTPPort = 70000; o.SMTPPassword = "from-env-secret"; return o }()},
		{"--smtp-user without --smtp-host", options{SMTPUser: "u"}},
	} {
		_, err := smtpFrom(c.o)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error tells the password: %v", c.name, err)
		}
	}
	if cfg, err := smtpFrom(options{}); cfg != nil || err != nil {
		t.Errorf("no relay: got %+v %v, want none", cfg, err)
	}
	// The password is no flag: it cannot reach argv.
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"serve", "--smtp-password", "x"}, func(string) string { return "" }, nil, io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "smtp-password") {
		t.Errorf("--smtp-password: got %v, want an unknown flag", err)
	}
}
