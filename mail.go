package main

// Outgoing e-mail: invitations, sent through the SMTP relay the
// --smtp-* flags name, with the standard library's net/smtp. As Zulip
// queues its mail (queue_event_on_commit("email_senders")) and sends it
// from a worker, an invitation is stored first and mailed after, by the
// mailer's goroutine: a slow or failing relay never holds a request.
// Like Zulip's email_senders worker, which retries a failed send
// MAX_REQUEST_RETRIES (3) times and then logs it, the mailer tries four
// times, waiting longer each time, then logs the failure; the invitation
// stays valid, and POST /invites/{id}/resend sends it again. Zulip's
// queue survives a restart; the mailer's does not: mail not yet sent
// when the server stops is lost (the log says so), and resend sends it.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// smtpConfig is the relay: --smtp-host, --smtp-port, --smtp-user,
// --smtp-from, and the password from ZULITE_SMTP_PASSWORD or
// --smtp-password-file (never a flag's value, so never in argv). Port
// 465 speaks TLS from the start; any other port must offer STARTTLS,
// unless the relay is on this machine (loopback).
type smtpConfig struct {
	Host, User, Password, From string
	Port                       int
	// tls is the TLS configuration for the relay; nil: the system's
	// roots and the host's name (tests give their own roots).
	tls *tls.Config
}

// mailerQueueSize bounds the mail waiting to be sent; past it, more is
// not queued and the log says so (resend sends it later).
const mailerQueueSize = 1000

// mailAttempts is how often a message is tried before it is given up.
const mailAttempts = 4

// outgoingMail is one message to one address.
type outgoingMail struct {
	To, Subject, Body string
}

// mailer sends queued mail through the relay, one message at a time.
type mailer struct {
	cfg   smtpConfig
	from  string // the From header: the organisation's name and --smtp-from
	log   *slog.Logger
	queue chan outgoingMail
	wait  time.Duration // before the second attempt; doubled after each
	// sent and failed count messages delivered and given up (or not
	// queued), for /metrics.
	sent, failed atomic.Int64
}

func newMailer(cfg smtpConfig, realmName string, log *slog.Logger) *mailer {
	return &mailer{cfg: cfg, from: (&mail.Address{Name: realmName, Address: cfg.From}).String(), log: log,
		queue: make(chan outgoingMail, mailerQueueSize), wait: 5 * time.Second}
}

// enqueue hands a message to the mailer without waiting.
func (m *mailer) enqueue(msg outgoingMail) {
	select {
	case m.queue <- msg:
	default:
		m.failed.Add(1)
		m.log.Warn("e-mail not queued: the mail queue is full", "to", msg.To)
	}
}

// run sends queued mail until ctx ends.
func (m *mailer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			if n := len(m.queue); n > 0 {
				m.log.Warn("stopping with e-mail not sent", "messages", n)
			}
			return
		case msg := <-m.queue:
			m.deliver(ctx, msg)
		}
	}
}

// deliver tries a message mailAttempts times.
func (m *mailer) deliver(ctx context.Context, msg outgoingMail) {
	wait := m.wait
	for attempt := 1; ; attempt++ {
		err := m.send(msg)
		if err == nil {
			m.sent.Add(1)
			m.log.Info("e-mail sent", "to", msg.To)
			return
		}
		if attempt == mailAttempts {
			m.failed.Add(1)
			m.log.Warn("e-mail not sent", "to", msg.To, "attempts", attempt, "err", err)
			return
		}
		select {
		case <-ctx.Done():
			m.failed.Add(1)
			m.log.Warn("e-mail not sent", "to", msg.To, "attempts", attempt, "err", err)
			return
		case <-time.After(wait):
		}
		wait *= 2
	}
}

var (
	errRelayNoTLS  = errors.New("the SMTP relay offers no STARTTLS; zulite sends no mail in the clear but on loopback")
	errRelayNoAuth = errors.New("the SMTP relay offers no AUTH, but --smtp-user is set")
)

// send delivers one message: connect, TLS (implicit on 465, else
// STARTTLS), AUTH PLAIN when a user is set, then the message.
func (m *mailer) send(msg outgoingMail) error {
	cfg := m.cfg
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	tlsConfig := cfg.tls
	if tlsConfig == nil {
		tlsConfig = &tls.Config{ServerName: cfg.Host, MinVersion: tls.VersionTLS12}
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second}
	var conn net.Conn
	var err error
	if cfg.Port == 465 {
		conn, err = tls.DialWithDialer(dialer, "tcp", addr, tlsConfig)
	} else {
		conn, err = dialer.Dial("tcp", addr)
	}
	if err != nil {
		return err
	}
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	c, err := smtp.NewClient(conn, cfg.Host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	if cfg.Port != 465 {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(tlsConfig); err != nil {
				return err
			}
		} else if !isLoopbackHost(cfg.Host) {
			return errRelayNoTLS
		}
	}
	if cfg.User != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return errRelayNoAuth
		}
		if err := c.Auth(smtp.PlainAuth("", cfg.User, cfg.Password, cfg.Host)); err != nil {
			return fmt.Errorf("SMTP authentication as %s: %w", cfg.User, err)
		}
	}
	if err := c.Mail(cfg.From); err != nil {
		return err
	}
	if err := c.Rcpt(msg.To); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(m.compose(msg)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// compose is the message as sent: headers, then the text body,
// quoted-printable.
func (m *mailer) compose(msg outgoingMail) []byte {
	var b bytes.Buffer
	id := make([]byte, 12)
	rand.Read(id)
	header := func(name, value string) {
		b.WriteString(name + ": " + strings.NewReplacer("\r", " ", "\n", " ").Replace(value) + "\r\n")
	}
	header("From", m.from)
	header("To", msg.To)
	header("Subject", mime.QEncoding.Encode("utf-8", msg.Subject))
	header("Date", time.Now().Format(time.RFC1123Z))
	header("Message-ID", "<"+hex.EncodeToString(id)+"@"+domainOf(m.cfg.From)+">")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	qp.Write([]byte(strings.ReplaceAll(msg.Body, "\n", "\r\n")))
	qp.Close()
	return b.Bytes()
}

func domainOf(address string) string {
	if at := strings.LastIndexByte(address, '@'); at >= 0 {
		return address[at+1:]
	}
	return "localhost"
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// smtpFrom reads the relay's configuration from the options; none
// (nil) without --smtp-host.
func smtpFrom(o options) (*smtpConfig, error) {
	if o.SMTPHost == "" {
		if o.SMTPUser != "" || o.SMTPFrom != "" || o.SMTPPasswordFile != "" {
			return nil, fmt.Errorf("%w: --smtp-user, --smtp-from and --smtp-password-file need --smtp-host", errUsage)
		}
		return nil, nil
	}
	cfg := &smtpConfig{Host: o.SMTPHost, Port: o.SMTPPort, User: o.SMTPUser, From: o.SMTPFrom, Password: o.SMTPPassword}
	if cfg.Port < 1 || cfg.Port > 65535 {
		return nil, fmt.Errorf("%w: --smtp-port must be between 1 and 65535", errUsage)
	}
	if checkEmail(cfg.From) != nil {
		return nil, fmt.Errorf("%w: --smtp-host needs --smtp-from, the address invitations come from", errUsage)
	}
	if o.SMTPPasswordFile != "" {
		if cfg.Password != "" {
			return nil, fmt.Errorf("%w: give the SMTP password in ZULITE_SMTP_PASSWORD or --smtp-password-file, not both", errUsage)
		}
		data, err := os.ReadFile(o.SMTPPasswordFile)
		if err != nil {
			return nil, fmt.Errorf("--smtp-password-file: %w", err)
		}
		cfg.Password = strings.TrimRight(string(data), "\r\n")
	}
	if (cfg.User == "") != (cfg.Password == "") {
		return nil, fmt.Errorf("%w: --smtp-user and an SMTP password (ZULITE_SMTP_PASSWORD or --smtp-password-file) go together", errUsage)
	}
	return cfg, nil
}
