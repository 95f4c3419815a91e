package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"zulite/internal/conns"
)

// options are every flag of every command; each command accepts its own
// subset, as flagTable says.
type options struct {
	DB          string        `json:"-"`
	Addr        string        `json:"-"`
	URL         string        `json:"-"`
	RealmName   string        `json:"-"`
	OwnerEmail  string        `json:"-"`
	QueueIdle   time.Duration `json:"-"`
	RateLimit   string        `json:"-"`
	HeaderWait  time.Duration `json:"-"`
	BodyWait    time.Duration `json:"-"`
	LogFormat   string        `json:"-"`
	MetricsAddr string        `json:"-"`
	TLSCert     string        `json:"-"`
	TLSKey      string        `json:"-"`
	ACMEDomain  string        `json:"-"`
	ACMECache   string        `json:"-"`
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies string `json:"-"`
	MaxConns       int    `json:"-"`
	MaxChannels    int    `json:"-"`
	// PresenceEventsLimit: above this many active users, presence is not
	// told as events (presence.go).
	PresenceEventsLimit int `json:"-"`
	// ParkPolls lets waiting long polls park (parking.go); false serves
	// them with plain net/http.
	ParkPolls bool `json:"-"`
	// Uploads: the largest file, each user's quota, how long an unlinked
	// file is kept (uploads.go).
	MaxUploadMiB   int           `json:"-"`
	UploadQuotaMiB int           `json:"-"`
	UploadGrace    time.Duration `json:"-"`
	// UploadTotalMiB bounds every user's files together; below
	// UploadDiskReserveMiB of free disk no upload is taken.
	UploadTotalMiB       int `json:"-"`
	UploadDiskReserveMiB int `json:"-"`
	// Push: direct delivery's credentials and endpoints, the bouncer's
	// address, the idle window and the outbox's bound (push_outbox.go).
	PushAPNsKey, PushAPNsKeyID, PushAPNsTeamID, PushAPNsURL string        `json:"-"`
	PushFCMCredentials, PushFCMURL                          string        `json:"-"`
	PushBouncerURL                                          string        `json:"push_bouncer_url,omitempty"`
	PushIdle                                                time.Duration `json:"-"`
	PushOutboxMax                                           int           `json:"-"`
	// SMTP: the relay invitations are mailed through (mail.go). The
	// password comes from ZULITE_SMTP_PASSWORD or a file, never a flag.
	SMTPHost, SMTPUser, SMTPFrom, SMTPPasswordFile string `json:"-"`
	SMTPPort                                       int    `json:"-"`
	SMTPPassword                                   string `json:"-"`
	Name                                           string `json:"name,omitempty"`
	Description                                    string `json:"description,omitempty"`
	Admin                                          bool   `json:"admin,omitempty"`
	Bot                                            bool   `json:"bot,omitempty"`
	Private                                        bool   `json:"private,omitempty"`
	// PasswordStdin asks for the password on standard input; Password
	// carries it to the command (through the 0600 socket when a server
	// holds the database). It is never printed or logged.
	PasswordStdin bool   `json:"-"`
	Password      string `json:"password,omitempty"`
}

// command is one line of SPEC §2's table.
type command struct {
	name  string // "serve", "user add", ...
	args  string // positional arguments, for usage
	nargs int    // how many positional arguments it takes
	about string
	// admin commands run against the store: directly, or through the
	// socket of a server that holds the database.
	admin func(env adminEnv, args []string, o options, out io.Writer) error
}

var commands = []command{
	{name: "serve", about: "serve the API (the default command)"},
	{name: "user add", args: "EMAIL", nargs: 1, about: "create an account and print its API key", admin: userAdd},
	{name: "user password", args: "EMAIL", nargs: 1, about: "set the account's password, read from standard input, and end its web sessions", admin: userPassword},
	{name: "user list", about: "list accounts: id, e-mail, role, active", admin: userList},
	{name: "user key", args: "EMAIL", nargs: 1, about: "replace the account's API keys with a new one, remove its push tokens and end its web sessions", admin: userKey},
	{name: "user deactivate", args: "EMAIL", nargs: 1, about: "deactivate an account", admin: userDeactivate},
	{name: "user reactivate", args: "EMAIL", nargs: 1, about: "reactivate an account", admin: userReactivate},
	{name: "channel add", args: "NAME", nargs: 1, about: "create a channel and print its id", admin: channelAdd},
	{name: "channel list", about: "list channels: id, name, public/private, description", admin: channelList},
	{name: "push register", args: "EMAIL HOSTNAME", nargs: 2, about: "register the server with Zulip's mobile push notification service, for the official apps (EMAIL: the organisation's contact; HOSTNAME: the server's public name)", admin: pushRegister},
	{name: "backup", args: "FILE", nargs: 1, about: "write a consistent copy of the database to FILE, also while serving"},
	{name: "export", args: "DIR", nargs: 1, about: "write the organisation as a Zulip 11.x export (manage.py import reads it) into DIR, also while serving"},
	{name: "import", args: "DIR", nargs: 1, about: "read a Zulip export (manage.py export's directory or its .tar.gz, or zulite export's directory) into a new database"},
	{name: "version", about: "print the version"},
}

// flagSpec is one flag: everything about it is said once, in flagTable,
// and the flag set, the environment, the help and the command-line split
// all read it there.
type flagSpec struct {
	name    string
	command string // the command that takes it; "" for every command
	env     string // the environment variable that may set it instead; "" for none
	help    string
	// def is the default, of the field's type (string, bool or
	// time.Duration); nil is that type's zero. defaultNote says what an
	// empty default stands for, in the help.
	def         any
	defaultNote string
	field       func(o *options) any // where the value goes: &o.Something
}

var flagTable = []flagSpec{
	{name: "db", env: "ZULITE_DB", def: "zulite.db", help: "database file", field: func(o *options) any { return &o.DB }},

	{name: "addr", command: "serve", env: "ZULITE_ADDR", def: "127.0.0.1:9991", help: "address to listen on", field: func(o *options) any { return &o.Addr }},
	{name: "url", command: "serve", env: "ZULITE_URL", defaultNote: "http:// + the address", help: "public base URL reported to clients", field: func(o *options) any { return &o.URL }},
	{name: "realm-name", command: "serve", env: "ZULITE_REALM_NAME", def: "zulite", help: "organisation name shown to clients", field: func(o *options) any { return &o.RealmName }},
	{name: "owner-email", command: "serve", env: "ZULITE_OWNER_EMAIL", def: "owner@zulite.localhost", help: "e-mail of the owner account made on first start", field: func(o *options) any { return &o.OwnerEmail }},
	{name: "event-queue-timeout", command: "serve", env: "ZULITE_EVENT_QUEUE_TIMEOUT", def: queueIdleTimeout, help: "drop an event queue not polled for this long", field: func(o *options) any { return &o.QueueIdle }},
	{name: "rate-limit", command: "serve", env: "ZULITE_RATE_LIMIT", def: defaultRateRules, help: "per-account request limits as SECONDS:MAX,... or off; off also lifts the failed-authentication limits (60 per address per 10 minutes, 5 failed password logins per account per 30 minutes), not the channel-creation budget (200 an hour per account) nor the upload quotas", field: func(o *options) any { return &o.RateLimit }},
	{name: "read-header-timeout", command: "serve", env: "ZULITE_READ_HEADER_TIMEOUT", def: 10 * time.Second, help: "time allowed to send a request's headers", field: func(o *options) any { return &o.HeaderWait }},
	{name: "read-timeout", command: "serve", env: "ZULITE_READ_TIMEOUT", def: 60 * time.Second, help: "time allowed to send a whole request, body included; a request without valid credentials has 10s for its body, or this if shorter", field: func(o *options) any { return &o.BodyWait }},
	{name: "log-format", command: "serve", env: "ZULITE_LOG_FORMAT", def: "text", help: "log format, text or json", field: func(o *options) any { return &o.LogFormat }},
	{name: "max-connections", command: "serve", env: "ZULITE_MAX_CONNECTIONS", def: conns.DefaultMax, help: "open connections at most; one address may hold a quarter of them (at least 16; trusted proxies are not limited per address); past either, the oldest quiet connection is closed", field: func(o *options) any { return &o.MaxConns }},
	{name: "park-polls", command: "serve", env: "ZULITE_PARK_POLLS", def: true, help: "hold waiting long polls without a goroutine each (HTTP/1.1, Linux); false serves them with plain net/http", field: func(o *options) any { return &o.ParkPolls }},
	{name: "presence-events-limit", command: "serve", env: "ZULITE_PRESENCE_EVENTS_LIMIT", def: defaultPresenceEventsLimit, help: "above this many active users, a user coming online is not told to every client at once (clients still learn presence from their own presence requests each minute), as Zulip's USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS; 0 never tells", field: func(o *options) any { return &o.PresenceEventsLimit }},
	{name: "max-channels", command: "serve", env: "ZULITE_MAX_CHANNELS", def: defaultMaxChannels, help: "channels the server holds at most; creating more is refused", field: func(o *options) any { return &o.MaxChannels }},
	{name: "max-file-upload-size-mib", command: "serve", env: "ZULITE_MAX_FILE_UPLOAD_SIZE_MIB", def: defaultMaxUploadMiB, help: "largest file an upload may carry, in MiB; 0 turns uploads off", field: func(o *options) any { return &o.MaxUploadMiB }},
	{name: "upload-quota-mib", command: "serve", env: "ZULITE_UPLOAD_QUOTA_MIB", def: defaultUploadQuotaMiB, help: "most MiB of files each user may keep uploaded; 0 for no quota", field: func(o *options) any { return &o.UploadQuotaMiB }},
	{name: "upload-total-mib", command: "serve", env: "ZULITE_UPLOAD_TOTAL_MIB", def: defaultUploadTotalMiB, help: "most MiB of files all users together may keep uploaded (Zulip's organisation upload quota); 0 for none", field: func(o *options) any { return &o.UploadTotalMiB }},
	{name: "upload-disk-reserve-mib", command: "serve", env: "ZULITE_UPLOAD_DISK_RESERVE_MIB", def: defaultUploadDiskReserveMiB, help: "refuse uploads that would leave less than this many MiB free on the disk holding them, kept for the database; 0 for no reserve", field: func(o *options) any { return &o.UploadDiskReserveMiB }},
	{name: "upload-grace", command: "serve", env: "ZULITE_UPLOAD_GRACE", def: defaultUploadGrace, help: "delete an uploaded file that no message links after this long", field: func(o *options) any { return &o.UploadGrace }},
	{name: "trusted-proxies", command: "serve", env: "ZULITE_TRUSTED_PROXIES", help: "comma-separated addresses or CIDRs of reverse proxies whose X-Forwarded-For names the client (the rightmost address not among them), for the failed-authentication limit", field: func(o *options) any { return &o.TrustedProxies }},
	{name: "metrics-addr", command: "serve", env: "ZULITE_METRICS_ADDR", help: "serve GET /metrics without authentication on this address of its own; on the API address it is for administrators", field: func(o *options) any { return &o.MetricsAddr }},
	{name: "tls-cert", command: "serve", env: "ZULITE_TLS_CERT", help: "TLS certificate file, PEM", field: func(o *options) any { return &o.TLSCert }},
	{name: "tls-key", command: "serve", env: "ZULITE_TLS_KEY", help: "TLS private key file, PEM", field: func(o *options) any { return &o.TLSKey }},
	{name: "acme-domain", command: "serve", env: "ZULITE_ACME_DOMAIN", help: "obtain certificates automatically (ACME, TLS-ALPN-01 on --addr, usually :443) for these comma-separated domains", field: func(o *options) any { return &o.ACMEDomain }},
	{name: "acme-cache", command: "serve", env: "ZULITE_ACME_CACHE", defaultNote: "acme-cache beside the database", help: "directory keeping ACME certificates", field: func(o *options) any { return &o.ACMECache }},
	{name: "push-apns-key", command: "serve", env: "ZULITE_PUSH_APNS_KEY", help: "send iOS pushes directly to Apple with this token-based authentication key (.p8 file) of one's own app", field: func(o *options) any { return &o.PushAPNsKey }},
	{name: "push-apns-key-id", command: "serve", env: "ZULITE_PUSH_APNS_KEY_ID", help: "the .p8 key's id (10 characters, from Apple's developer site)", field: func(o *options) any { return &o.PushAPNsKeyID }},
	{name: "push-apns-team-id", command: "serve", env: "ZULITE_PUSH_APNS_TEAM_ID", help: "the Apple developer team id the key belongs to", field: func(o *options) any { return &o.PushAPNsTeamID }},
	{name: "push-apns-url", command: "serve", env: "ZULITE_PUSH_APNS_URL", def: defaultAPNsURL, help: "APNs endpoint (https://api.sandbox.push.apple.com for development builds)", field: func(o *options) any { return &o.PushAPNsURL }},
	{name: "push-fcm-credentials", command: "serve", env: "ZULITE_PUSH_FCM_CREDENTIALS", help: "send Android pushes directly through FCM with this service account key (JSON file) of one's own Firebase project", field: func(o *options) any { return &o.PushFCMCredentials }},
	{name: "push-fcm-url", command: "serve", env: "ZULITE_PUSH_FCM_URL", def: defaultFCMURL, help: "FCM HTTP v1 endpoint", field: func(o *options) any { return &o.PushFCMURL }},
	{name: "push-bouncer-url", command: "push register", env: "ZULITE_PUSH_BOUNCER_URL", def: defaultBouncerURL, help: "Zulip's mobile push notification service, used once 'zulite push register' has registered the server (for the official apps)", field: func(o *options) any { return &o.PushBouncerURL }},
	{name: "push-idle", command: "serve", env: "ZULITE_PUSH_IDLE", def: defaultPushIdle, help: "push only to users none of whose event queues was polled for this long (Zulip's offline threshold)", field: func(o *options) any { return &o.PushIdle }},
	{name: "smtp-host", command: "serve", env: "ZULITE_SMTP_HOST", help: "SMTP relay that invitation e-mails are sent through; without it, POST /invites is refused and invitation links are the way in", field: func(o *options) any { return &o.SMTPHost }},
	{name: "smtp-port", command: "serve", env: "ZULITE_SMTP_PORT", def: 587, help: "the relay's port: 465 speaks TLS at once, any other must offer STARTTLS (or be on loopback)", field: func(o *options) any { return &o.SMTPPort }},
	{name: "smtp-user", command: "serve", env: "ZULITE_SMTP_USER", help: "user name for the relay's AUTH PLAIN; the password is read from ZULITE_SMTP_PASSWORD or --smtp-password-file", field: func(o *options) any { return &o.SMTPUser }},
	{name: "smtp-password-file", command: "serve", env: "ZULITE_SMTP_PASSWORD_FILE", help: "file holding the relay's password (instead of ZULITE_SMTP_PASSWORD)", field: func(o *options) any { return &o.SMTPPasswordFile }},
	{name: "smtp-from", command: "serve", env: "ZULITE_SMTP_FROM", help: "address invitation e-mails come from (needed with --smtp-host)", field: func(o *options) any { return &o.SMTPFrom }},
	{name: "push-outbox-max", command: "serve", env: "ZULITE_PUSH_OUTBOX_MAX", def: defaultPushOutboxMax, help: "pushes waiting for delivery at most; messages past it are not pushed", field: func(o *options) any { return &o.PushOutboxMax }},

	{name: "name", command: "user add", defaultNote: "the e-mail's local part", help: "full name", field: func(o *options) any { return &o.Name }},
	{name: "admin", command: "user add", help: "make the account an administrator", field: func(o *options) any { return &o.Admin }},
	{name: "bot", command: "user add", help: "make the account a bot", field: func(o *options) any { return &o.Bot }},
	{name: "password-stdin", command: "user add", help: "read a password for the account from standard input", field: func(o *options) any { return &o.PasswordStdin }},

	{name: "private", command: "channel add", help: "make the channel private", field: func(o *options) any { return &o.Private }},
	{name: "description", command: "channel add", help: "channel description", field: func(o *options) any { return &o.Description }},
}

// flagNamed finds a flag of any command by its name.
func flagNamed(name string) (flagSpec, bool) {
	for _, f := range flagTable {
		if f.name == name {
			return f, true
		}
	}
	return flagSpec{}, false
}

// takesValue tells a flag that takes a value from a switch: needed to
// tell a flag's value from a command word before the command is known.
func (f flagSpec) takesValue() bool {
	_, isSwitch := f.field(&options{}).(*bool)
	return !isSwitch
}

// usage is the flag's help with its environment variable and what an
// empty default stands for.
func (f flagSpec) usage() string {
	var notes []string
	if f.env != "" {
		notes = append(notes, "env "+f.env)
	}
	if f.defaultNote != "" {
		notes = append(notes, "default "+f.defaultNote)
	}
	if len(notes) == 0 {
		return f.help
	}
	return f.help + " (" + strings.Join(notes, "; ") + ")"
}

// define declares the flag on fs, bound to its field of o.
func (f flagSpec) define(fs *flag.FlagSet, o *options) {
	switch p := f.field(o).(type) {
	case *string:
		fs.StringVar(p, f.name, defaultOf[string](f), f.usage())
	case *bool:
		fs.BoolVar(p, f.name, defaultOf[bool](f), f.usage())
	case *time.Duration:
		fs.DurationVar(p, f.name, defaultOf[time.Duration](f), f.usage())
	case *int:
		fs.IntVar(p, f.name, defaultOf[int](f), f.usage())
	default:
		panic(fmt.Sprintf("flag %s: a field of type %T", f.name, p))
	}
}

// defaultOf is f's default as its field's type T; a default of another
// type is a mistake in flagTable, which the first run of the command finds.
func defaultOf[T any](f flagSpec) T {
	var zero T
	if f.def == nil {
		return zero
	}
	def, ok := f.def.(T)
	if !ok {
		panic(fmt.Sprintf("flag %s: default %#v is not a %T", f.name, f.def, zero))
	}
	return def
}

// errUsage marks mistakes in the command line (exit status 2).
var errUsage = errors.New("usage")

// lockTimeout is how long a command waits for a database held by
// something that is not a zulite server answering on its socket.
const lockTimeout = time.Second

// run is the whole program: main only calls it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd, positional, o, err := parseCommandLine(args, getenv, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) { // the help was asked for, and given
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case cmd.name == "version":
		fmt.Fprintln(stdout, versionText())
		return nil
	case cmd.name == "serve":
		tuneGC(getenv)
		o.SMTPPassword = getenv("ZULITE_SMTP_PASSWORD")
		return serve(ctx, o, stdout, stderr)
	case o.PasswordStdin && o.Bot:
		return fmt.Errorf("%w: bots log in with API keys, not passwords: drop --password-stdin", errUsage)
	case cmd.name == "user password" || o.PasswordStdin:
		if o.Password, err = readPassword(stdin, stderr); err != nil {
			return err
		}
	}
	return runAdmin(cmd, positional, o, stdout, stderr)
}

// parseCommandLine finds the command and parses its flags, which may
// stand anywhere after "zulite".
func parseCommandLine(args []string, getenv func(string) string, stdout, stderr io.Writer) (command, []string, options, error) {
	var o options
	words := positionalArgs(args)
	if (len(words) == 1 && words[0] == "help") || (len(words) == 0 && slices.ContainsFunc(args, isHelpFlag)) {
		fmt.Fprint(stdout, usageText("")) // asked for: the commands are the answer
		return command{}, nil, o, flag.ErrHelp
	}
	cmd, ok := findCommand(words)
	if !ok && len(words) > 0 && usageText(words[0]) != "" { // "zulite user": the group's commands
		if len(words) == 1 && slices.ContainsFunc(args, isHelpFlag) {
			fmt.Fprint(stdout, usageText(words[0]))
			return command{}, nil, o, flag.ErrHelp
		}
		fmt.Fprint(stderr, usageText(words[0]))
		if len(words) == 1 {
			return command{}, nil, o, fmt.Errorf("%w: zulite %s needs one of the commands above", errUsage, words[0])
		}
		return command{}, nil, o, fmt.Errorf("%w: unknown command %q; zulite %s takes one of the commands above", errUsage, strings.Join(words, " "), words[0])
	}
	if !ok {
		fmt.Fprint(stderr, usageText(""))
		return command{}, nil, o, fmt.Errorf("%w: unknown command %q", errUsage, strings.Join(words, " "))
	}
	fs := flag.NewFlagSet("zulite "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, f := range flagTable {
		if f.command == "" || f.command == cmd.name {
			f.define(fs, &o)
		}
	}
	var err error
	fs.VisitAll(func(defined *flag.Flag) { // in the order of names, as the help lists them
		f, _ := flagNamed(defined.Name)
		if f.env == "" || err != nil {
			return
		}
		if v := getenv(f.env); v != "" {
			if setErr := fs.Set(f.name, v); setErr != nil {
				err = fmt.Errorf("%w: %s: %v", errUsage, f.env, setErr)
			}
		}
	})
	if err != nil {
		return command{}, nil, o, err
	}
	flags, positional := splitFlags(fs, args)
	if slices.ContainsFunc(flags, isHelpFlag) {
		fs.SetOutput(stdout) // asked for: the help is the answer, not a complaint
	}
	if err := fs.Parse(flags); errors.Is(err, flag.ErrHelp) {
		return command{}, nil, o, err
	} else if err != nil {
		return command{}, nil, o, fmt.Errorf("%w: %v", errUsage, err)
	}
	if len(words) > 0 { // bare "zulite" is "zulite serve"
		positional = positional[len(strings.Fields(cmd.name)):]
	}
	usage := strings.TrimSpace("zulite " + cmd.name + " " + cmd.args)
	switch {
	case len(positional) > cmd.nargs:
		return command{}, nil, o, fmt.Errorf("%w: %s [flags]: unexpected %q", errUsage, usage, strings.Join(positional[cmd.nargs:], " "))
	case len(positional) < cmd.nargs:
		return command{}, nil, o, fmt.Errorf("%w: %s [flags]: %s missing", errUsage, usage, strings.Join(strings.Fields(cmd.args)[len(positional):], " "))
	}
	return cmd, positional, o, nil
}

// isHelpFlag tells the flags that ask for help.
func isHelpFlag(arg string) bool {
	return slices.Contains([]string{"-h", "-help", "--help", "--h"}, arg)
}

// positionalArgs returns the arguments that are not flags or their values.
func positionalArgs(args []string) []string {
	var words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(words, args[i+1:]...)
		}
		if len(a) > 1 && a[0] == '-' {
			name := strings.TrimLeft(a, "-")
			if f, ok := flagNamed(name); ok && !strings.Contains(name, "=") && f.takesValue() {
				i++
			}
			continue
		}
		words = append(words, a)
	}
	return words
}

// splitFlags separates flags (with their values) from positional
// arguments, using fs to know which flags take a value.
func splitFlags(fs *flag.FlagSet, args []string) (flags, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(positional, args[i+1:]...)
		}
		if len(a) <= 1 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return flags, positional
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func findCommand(words []string) (command, bool) {
	if len(words) == 0 {
		return commands[0], true
	}
	for _, c := range commands {
		parts := strings.Fields(c.name)
		if len(words) >= len(parts) && strings.Join(words[:len(parts)], " ") == c.name {
			return c, true
		}
	}
	return command{}, false
}

// usageText lists the commands, or only those of one group ("user":
// "user add", "user list", ...); "" when the group has none.
func usageText(group string) string {
	var b strings.Builder
	shape := "[command]"
	if group != "" {
		shape = group + " COMMAND"
	}
	fmt.Fprintf(&b, "usage: zulite %s [flags]\n\ncommands:\n", shape)
	listed := 0
	for _, c := range commands {
		if group != "" && !strings.HasPrefix(c.name, group+" ") {
			continue
		}
		line := strings.TrimSpace(c.name + " " + c.args)
		fmt.Fprintf(&b, "  %-26s %s\n", line, c.about)
		listed++
	}
	if listed == 0 {
		return ""
	}
	b.WriteString("\nEvery command takes --db PATH (env ZULITE_DB, default zulite.db); zulite COMMAND --help lists a command's flags.\n")
	return b.String()
}

// versionText is the version and the build details the binary carries.
// buildCommit is the commit a binary was built from when Go's own VCS
// stamp is missing: set with -ldflags "-X main.buildCommit=...".
var buildCommit string

func versionText() string {
	version, details := "devel", []string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" && info.Main.Version != "(devel)" {
			version = info.Main.Version
		}
		details = append(details, info.GoVersion)
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		details = append(details, settings["GOOS"]+"/"+settings["GOARCH"])
		if arm := settings["GOARM"]; arm != "" {
			details[len(details)-1] += "/v" + arm
		}
		if settings["vcs.revision"] == "" && buildCommit != "" {
			settings["vcs.revision"] = buildCommit
		}
		if rev := settings["vcs.revision"]; rev == "" {
			details = append(details, "no commit recorded (built outside a git checkout or with -buildvcs=false; -ldflags \"-X main.buildCommit=$(git rev-parse HEAD)\" records one)")
		} else {
			rev = "commit " + rev
			if settings["vcs.modified"] == "true" {
				rev += " (modified)"
			}
			if when := settings["vcs.time"]; when != "" {
				rev += " of " + when
			}
			details = append(details, rev)
		}
		if settings["CGO_ENABLED"] == "0" {
			details = append(details, "static")
		}
	}
	return fmt.Sprintf("zulite %s (Zulip API %s, feature level %d)\n%s", version, zulipVersion, zulipFeatureLevel, strings.Join(details, ", "))
}
