package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
)

// options are every flag of every command; each command accepts its own
// subset (command.flags).
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
	Name        string        `json:"name,omitempty"`
	Description string        `json:"description,omitempty"`
	Admin       bool          `json:"admin,omitempty"`
	Bot         bool          `json:"bot,omitempty"`
	Private     bool          `json:"private,omitempty"`
	// PasswordStdin asks for the password on standard input; Password
	// carries it to the command (through the 0600 socket when a server
	// holds the database). It is never printed or logged.
	PasswordStdin bool   `json:"-"`
	Password      string `json:"password,omitempty"`
}

// command is one line of SPEC §2's table.
type command struct {
	name  string   // "serve", "user add", ...
	args  string   // positional arguments, for usage
	nargs int      // how many positional arguments it takes
	flags []string // flags it accepts besides --db
	about string
	// admin commands run against the store: directly, or through the
	// socket of a server that holds the database.
	admin func(env adminEnv, args []string, o options, out io.Writer) error
}

var commands = []command{
	{name: "serve", flags: []string{"addr", "url", "realm-name", "owner-email", "event-queue-timeout", "rate-limit", "read-header-timeout", "read-timeout", "log-format", "metrics-addr", "tls-cert", "tls-key", "acme-domain", "acme-cache"}, about: "serve the API (the default command)"},
	{name: "user add", args: "EMAIL", nargs: 1, flags: []string{"name", "admin", "bot", "password-stdin"}, about: "create an account and print its API key", admin: userAdd},
	{name: "user password", args: "EMAIL", nargs: 1, about: "set the account's password, read from standard input", admin: userPassword},
	{name: "user list", about: "list accounts: id, e-mail, role, active", admin: userList},
	{name: "user key", args: "EMAIL", nargs: 1, about: "replace the account's API keys with a new one and remove its push tokens", admin: userKey},
	{name: "user deactivate", args: "EMAIL", nargs: 1, about: "deactivate an account", admin: userDeactivate},
	{name: "user reactivate", args: "EMAIL", nargs: 1, about: "reactivate an account", admin: userReactivate},
	{name: "channel add", args: "NAME", nargs: 1, flags: []string{"private", "description"}, about: "create a channel and print its id", admin: channelAdd},
	{name: "channel list", about: "list channels: id, name, public/private, description", admin: channelList},
	{name: "backup", args: "FILE", nargs: 1, about: "write a consistent copy of the database to FILE, also while serving"},
	{name: "version", about: "print the version"},
}

// configFlags may also come from ZULITE_* environment variables.
var configFlags = map[string]bool{"db": true, "addr": true, "url": true, "realm-name": true, "owner-email": true, "event-queue-timeout": true, "rate-limit": true, "read-header-timeout": true, "read-timeout": true,
	"log-format": true, "metrics-addr": true, "tls-cert": true, "tls-key": true, "acme-domain": true, "acme-cache": true}

// errUsage marks mistakes in the command line (exit status 2).
var errUsage = errors.New("usage")

// lockTimeout is how long a command waits for a database held by
// something that is not a zulite server answering on its socket.
const lockTimeout = time.Second

// run is the whole program: main only calls it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd, positional, o, err := parseCommandLine(args, getenv, stderr)
	if err != nil {
		return err
	}
	switch {
	case cmd.name == "version":
		fmt.Fprintln(stdout, versionText())
		return nil
	case cmd.name == "serve":
		tuneGC(getenv)
		return serve(ctx, o, stdout, stderr)
	case o.PasswordStdin && o.Bot:
		return fmt.Errorf("%w: bots log in with API keys, not passwords: drop --password-stdin", errUsage)
	case cmd.name == "user password" || o.PasswordStdin:
		if o.Password, err = readPassword(stdin, stderr); err != nil {
			return err
		}
	}
	return runAdmin(cmd, positional, o, stdout)
}

// parseCommandLine finds the command and parses its flags, which may
// stand anywhere after "zulite".
func parseCommandLine(args []string, getenv func(string) string, stderr io.Writer) (command, []string, options, error) {
	var o options
	words := positionalArgs(args)
	cmd, ok := findCommand(words)
	if !ok {
		fmt.Fprint(stderr, usageText())
		return command{}, nil, o, fmt.Errorf("%w: unknown command %q", errUsage, strings.Join(words, " "))
	}
	fs := flag.NewFlagSet("zulite "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	defineFlags(fs, &o, append([]string{"db"}, cmd.flags...))
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		env := "ZULITE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(env); v != "" && configFlags[f.Name] && err == nil {
			if setErr := fs.Set(f.Name, v); setErr != nil {
				err = fmt.Errorf("%w: %s: %v", errUsage, env, setErr)
			}
		}
	})
	if err != nil {
		return command{}, nil, o, err
	}
	flags, positional := splitFlags(fs, args)
	if err := fs.Parse(flags); err != nil {
		return command{}, nil, o, fmt.Errorf("%w: %v", errUsage, err)
	}
	if len(words) > 0 { // bare "zulite" is "zulite serve"
		positional = positional[len(strings.Fields(cmd.name)):]
	}
	if len(positional) != cmd.nargs {
		return command{}, nil, o, fmt.Errorf("%w: zulite %s %s", errUsage, cmd.name, cmd.args)
	}
	return cmd, positional, o, nil
}

// defineFlags declares the named flags on fs, bound to o.
func defineFlags(fs *flag.FlagSet, o *options, names []string) {
	for _, name := range names {
		switch name {
		case "db":
			fs.StringVar(&o.DB, name, "zulite.db", "database file (env ZULITE_DB)")
		case "addr":
			fs.StringVar(&o.Addr, name, "127.0.0.1:9991", "address to listen on (env ZULITE_ADDR)")
		case "url":
			fs.StringVar(&o.URL, name, "", "public base URL reported to clients (env ZULITE_URL; default http:// + the address)")
		case "realm-name":
			fs.StringVar(&o.RealmName, name, "zulite", "organisation name shown to clients (env ZULITE_REALM_NAME)")
		case "owner-email":
			fs.StringVar(&o.OwnerEmail, name, "owner@zulite.localhost", "e-mail of the owner account made on first start (env ZULITE_OWNER_EMAIL)")
		case "log-format":
			fs.StringVar(&o.LogFormat, name, "text", "log format, text or json (env ZULITE_LOG_FORMAT)")
		case "metrics-addr":
			fs.StringVar(&o.MetricsAddr, name, "", "serve GET /metrics without authentication on this address of its own (env ZULITE_METRICS_ADDR); on the API address it is for administrators")
		case "tls-cert":
			fs.StringVar(&o.TLSCert, name, "", "TLS certificate file, PEM (env ZULITE_TLS_CERT)")
		case "tls-key":
			fs.StringVar(&o.TLSKey, name, "", "TLS private key file, PEM (env ZULITE_TLS_KEY)")
		case "acme-domain":
			fs.StringVar(&o.ACMEDomain, name, "", "obtain certificates automatically (ACME, TLS-ALPN-01 on --addr, usually :443) for these comma-separated domains (env ZULITE_ACME_DOMAIN)")
		case "acme-cache":
			fs.StringVar(&o.ACMECache, name, "", "directory keeping ACME certificates (env ZULITE_ACME_CACHE; default acme-cache beside the database)")
		case "read-header-timeout":
			fs.DurationVar(&o.HeaderWait, name, 10*time.Second, "time allowed to send a request's headers (env ZULITE_READ_HEADER_TIMEOUT)")
		case "read-timeout":
			fs.DurationVar(&o.BodyWait, name, 60*time.Second, "time allowed to send a whole request, body included (env ZULITE_READ_TIMEOUT)")
		case "rate-limit":
			fs.StringVar(&o.RateLimit, name, defaultRateRules, "per-account limits as SECONDS:MAX,... or off (also switches off the failed-authentication limit) (env ZULITE_RATE_LIMIT)")
		case "event-queue-timeout":
			fs.DurationVar(&o.QueueIdle, name, queueIdleTimeout, "drop an event queue not polled for this long (env ZULITE_EVENT_QUEUE_TIMEOUT)")
		case "name":
			fs.StringVar(&o.Name, name, "", "full name (default: the e-mail's local part)")
		case "description":
			fs.StringVar(&o.Description, name, "", "channel description")
		case "admin":
			fs.BoolVar(&o.Admin, name, false, "make the account an administrator")
		case "bot":
			fs.BoolVar(&o.Bot, name, false, "make the account a bot")
		case "private":
			fs.BoolVar(&o.Private, name, false, "make the channel private")
		case "password-stdin":
			fs.BoolVar(&o.PasswordStdin, name, false, "read a password for the account from standard input")
		}
	}
}

// valueFlags are the flags, of any command, that take a value: needed to
// tell a flag's value from a command word before the command is known.
var valueFlags = map[string]bool{"db": true, "addr": true, "url": true, "realm-name": true, "owner-email": true, "event-queue-timeout": true, "rate-limit": true, "read-header-timeout": true, "read-timeout": true,
	"log-format": true, "metrics-addr": true, "tls-cert": true, "tls-key": true, "acme-domain": true, "acme-cache": true, "name": true, "description": true}

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
			if !strings.Contains(name, "=") && valueFlags[name] {
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

func usageText() string {
	var b strings.Builder
	b.WriteString("usage: zulite [command] [flags]\n\ncommands:\n")
	for _, c := range commands {
		line := strings.TrimSpace(c.name + " " + c.args)
		fmt.Fprintf(&b, "  %-26s %s\n", line, c.about)
	}
	b.WriteString("\nEvery command takes --db PATH (env ZULITE_DB, default zulite.db).\n")
	return b.String()
}

// versionText is the version and the build details the binary carries.
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
		if rev := settings["vcs.revision"]; rev != "" {
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

// runAdmin runs an admin command through a running server's socket, or
// on the database file directly when no server holds it.
func runAdmin(cmd command, args []string, o options, stdout io.Writer) error {
	if cmd.name == "backup" {
		return runBackup(args[0], o, stdout)
	}
	if conn, err := net.DialTimeout("unix", socketPath(o.DB), lockTimeout); err == nil {
		defer conn.Close()
		return adminOverSocket(conn, cmd, args, o, stdout)
	}
	st, err := openStore(o.DB, lockTimeout)
	if err != nil {
		return err
	}
	defer st.close()
	return cmd.admin(adminEnv{st, newPasswordHasher()}, args, o, stdout)
}

func socketPath(db string) string { return db + ".sock" }

// adminRequest is one admin command sent over the socket.
type adminRequest struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Options options  `json:"options"`
}

type adminResponse struct {
	Output string `json:"output"`
	Error  string `json:"error,omitempty"`
}

func adminOverSocket(conn net.Conn, cmd command, args []string, o options, stdout io.Writer) error {
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := json.NewEncoder(conn).Encode(adminRequest{cmd.name, args, o}); err != nil {
		return fmt.Errorf("talk to the server on %s: %w", socketPath(o.DB), err)
	}
	var resp adminResponse
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&resp); err != nil {
		return fmt.Errorf("talk to the server on %s: %w", socketPath(o.DB), err)
	}
	io.WriteString(stdout, resp.Output)
	if resp.Error != "" {
		return errors.New(resp.Error)
	}
	return nil
}

// adminEnv is what an admin command works with: the store, and the
// password hasher (the server's own when it runs the command, so that its
// cap on concurrent hashes holds).
type adminEnv struct {
	store     *store
	passwords *passwordHasher
}

// serveAdminConn answers one admin request on the server's socket.
func serveAdminConn(env adminEnv, conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var req adminRequest
	var resp adminResponse
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&req); err != nil {
		return
	}
	if req.Command == "backup" { // the copy goes to the client, which writes it with its own rights
		conn.SetDeadline(time.Now().Add(time.Hour))
		sendHeader := func(h backupHeader) error {
			line, _ := json.Marshal(h)
			_, err := conn.Write(append(line, '\n'))
			return err
		}
		headerSent := false
		err := env.store.snapshot(conn, func(size int64) error {
			headerSent = true
			return sendHeader(backupHeader{Size: size})
		})
		if err != nil && !headerSent {
			sendHeader(backupHeader{Error: err.Error()})
		}
		return
	}
	cmd, ok := findCommand(strings.Fields(req.Command))
	if !ok || cmd.admin == nil || cmd.name != req.Command || len(req.Args) != cmd.nargs {
		resp.Error = "unknown admin command " + strconv.Quote(req.Command)
	} else {
		var out strings.Builder
		if err := cmd.admin(env, req.Args, req.Options, &out); err != nil {
			resp.Error = err.Error()
		}
		resp.Output = out.String()
	}
	json.NewEncoder(conn).Encode(resp)
}

// ---- admin commands ----

func userAdd(env adminEnv, args []string, o options, out io.Writer) error {
	email := args[0]
	if err := checkEmail(email); err != nil {
		return err
	}
	name := o.Name
	if name == "" {
		name, _, _ = strings.Cut(email, "@")
	}
	role := roleMember
	if o.Admin {
		role = roleAdmin
	}
	hash := ""
	if o.Password != "" {
		var err error
		if hash, err = env.passwords.hash(context.Background(), o.Password); err != nil {
			return err
		}
	}
	_, key, err := env.store.createAccount(email, name, role, o.Bot, hash)
	if err != nil {
		return fmt.Errorf("user add %s: %w", email, err)
	}
	fmt.Fprintln(out, key)
	return nil
}

// readPassword reads one line from stdin, without its line ending; on a
// terminal it asks, and does not echo what is typed.
func readPassword(stdin io.Reader, stderr io.Writer) (string, error) {
	var line string
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(stderr, "Password: ")
		typed, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		line = string(typed)
	} else {
		var err error
		line, err = bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
		if err != nil && err != io.EOF {
			return "", fmt.Errorf("read password: %w", err)
		}
	}
	password := strings.TrimRight(line, "\r\n")
	if len([]rune(password)) < minPasswordLength {
		return "", fmt.Errorf("the password on standard input is too weak: at least %d characters", minPasswordLength)
	}
	return password, nil
}

func checkEmail(email string) error {
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email {
		return fmt.Errorf("%q is not a valid e-mail address", email)
	}
	return nil
}

func userList(env adminEnv, _ []string, _ options, out io.Writer) error {
	users, err := env.store.users()
	if err != nil {
		return err
	}
	for _, u := range users {
		state := "active"
		if !u.Active {
			state = "deactivated"
		}
		fmt.Fprintf(out, "%d\t%s\t%s\t%s\n", u.ID, u.Email, roleName(u), state)
	}
	return nil
}

func roleName(u user) string {
	switch {
	case u.Bot:
		return "bot"
	case u.Role == roleOwner:
		return "owner"
	case u.Role == roleAdmin:
		return "admin"
	case u.Role == roleGuest:
		return "guest"
	}
	return "member"
}

func userPassword(env adminEnv, args []string, o options, _ io.Writer) error {
	if o.Password == "" {
		return fmt.Errorf("user password %s: no password given", args[0])
	}
	hash, err := env.passwords.hash(context.Background(), o.Password)
	if err != nil {
		return err
	}
	if err := env.store.setPassword(args[0], hash); err != nil {
		return fmt.Errorf("user password %s: %w", args[0], err)
	}
	return nil
}

func userKey(env adminEnv, args []string, _ options, out io.Writer) error {
	key, err := env.store.regenerateKey(args[0])
	if err != nil {
		return fmt.Errorf("user key %s: %w", args[0], err)
	}
	fmt.Fprintln(out, key)
	return nil
}

func userDeactivate(env adminEnv, args []string, _ options, _ io.Writer) error {
	if err := env.store.setActive(args[0], false); err != nil {
		return fmt.Errorf("user deactivate %s: %w", args[0], err)
	}
	return nil
}

func userReactivate(env adminEnv, args []string, _ options, _ io.Writer) error {
	if err := env.store.setActive(args[0], true); err != nil {
		return fmt.Errorf("user reactivate %s: %w", args[0], err)
	}
	return nil
}

func channelAdd(env adminEnv, args []string, o options, out io.Writer) error {
	spec := channelSpec{Name: strings.TrimSpace(args[0]), Description: o.Description}
	if err := validateChannel(spec); err != nil {
		return fmt.Errorf("channel add: %s", asAPIError(err).msg)
	}
	ch, err := env.store.createChannel(spec.Name, spec.Description, o.Private, 0)
	if err != nil {
		return fmt.Errorf("channel add %s: %w", spec.Name, err)
	}
	fmt.Fprintln(out, ch.ID)
	return nil
}

// runBackup writes a consistent copy of the database to path. With a
// server holding the file, the server streams the copy over its socket
// and this process writes it, with its own rights (so a sandboxed service
// can still be backed up anywhere its administrator may write); with none,
// it copies the file directly. Restoring is copying it back while no
// server runs.
func runBackup(path string, o options, stdout io.Writer) error {
	if dst, err := os.Stat(path); err == nil {
		if src, err := os.Stat(o.DB); err == nil && os.SameFile(src, dst) {
			return errors.New("backup: that is the database itself: a backup over it would lose every later write")
		}
	}
	conn, err := net.DialTimeout("unix", socketPath(o.DB), lockTimeout)
	if err != nil {
		st, err := openStore(o.DB, lockTimeout)
		if err != nil {
			return err
		}
		defer st.close()
		if err := writeFileAtomically(path, func(w io.Writer) error { return st.snapshot(w, nil) }); err != nil {
			return fmt.Errorf("backup %s: %w", path, err)
		}
		fmt.Fprintln(stdout, path)
		return nil
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Hour))
	if err := json.NewEncoder(conn).Encode(adminRequest{Command: "backup"}); err != nil {
		return fmt.Errorf("backup through %s: %w", socketPath(o.DB), err)
	}
	in := bufio.NewReader(conn)
	line, err := in.ReadBytes('\n') // the header line; the copy follows it
	var header backupHeader
	if err == nil {
		err = json.Unmarshal(line, &header)
	}
	if err != nil {
		return fmt.Errorf("backup through %s: %w", socketPath(o.DB), err)
	}
	if header.Error != "" {
		return fmt.Errorf("backup: %s", header.Error)
	}
	err = writeFileAtomically(path, func(w io.Writer) error {
		n, err := io.Copy(w, io.LimitReader(in, header.Size))
		if err == nil && n != header.Size {
			err = fmt.Errorf("the copy ended after %d of %d bytes", n, header.Size)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("backup %s: %w", path, err)
	}
	fmt.Fprintln(stdout, path)
	return nil
}

// backupHeader precedes a streamed copy: its size, or why there is none.
type backupHeader struct {
	Size  int64  `json:"size"`
	Error string `json:"error,omitempty"`
}

func channelList(env adminEnv, _ []string, _ options, out io.Writer) error {
	channels, err := env.store.channels()
	if err != nil {
		return err
	}
	for _, ch := range channels {
		access := "public"
		if ch.Private {
			access = "private"
		}
		fmt.Fprintf(out, "%d\t%s\t%s\t%s\n", ch.ID, ch.Name, access, ch.Description)
	}
	return nil
}

// writeZuliprc writes the bootstrap credentials as Zulip's clients read
// them, readable by the owner only.
func writeZuliprc(path, email, key, site string) error {
	return writeFileAtomically(path, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "[api]\nemail=%s\nkey=%s\nsite=%s\n", email, key, site)
		return err
	})
}

// writeFileAtomically writes a file with mode 0600 so that it is either
// whole or absent: a new file beside path, written, synced, then renamed
// into place.
func writeFileAtomically(path string, write func(w io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
