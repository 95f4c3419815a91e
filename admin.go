package main

// The admin commands of SPEC §2 (user and channel administration, backup)
// and how they run: on the database file directly, or through the socket
// of the server that holds it (adminsock.go).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/term"
)

// adminEnv is what an admin command works with: the store, and the
// password hasher (the server's own when it runs the command, so that its
// cap on concurrent hashes holds).
type adminEnv struct {
	store     *store
	passwords *passwordHasher
}

// runAdmin runs an admin command through a running server's socket, or
// on the database file directly when no server holds it.
func runAdmin(cmd command, args []string, o options, stdout, stderr io.Writer) error {
	switch cmd.name {
	case "backup":
		return runBackup(args[0], o, stdout)
	case "export":
		return runExport(args[0], o, stdout)
	case "import":
		return runImport(args[0], o, stdout)
	}
	if conn, err := net.DialTimeout("unix", socketPath(o.DB), lockTimeout); err == nil {
		defer conn.Close()
		return adminOverSocket(conn, cmd, args, o, stdout)
	}
	st, err := openNewOrExisting(o.DB, stderr)
	if err != nil {
		return err
	}
	defer st.close()
	return cmd.admin(adminEnv{st, newPasswordHasher()}, args, o, stdout)
}

// openNewOrExisting opens the database at path and, when no file was
// there, says on out that it made a new one, and where: a mistyped --db
// must not pass for an organisation that lost everything.
func openNewOrExisting(path string, out io.Writer) (*store, error) {
	fi, err := os.Stat(path)
	fresh := errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0)
	st, err := openStore(path, lockTimeout)
	if err == nil && fresh {
		fmt.Fprintf(out, "Created a new database: %s (no file was there; to use an existing one, give its path with --db PATH or ZULITE_DB=PATH).\n", path)
	}
	return st, err
}

func userAdd(env adminEnv, args []string, o options, out io.Writer) error {
	email := args[0]
	if err := checkEmail(email); err != nil {
		return err
	}
	name := o.Name
	if name == "" {
		name, _, _ = strings.Cut(email, "@")
	}
	name, err := checkFullName(name)
	if err != nil {
		return fmt.Errorf("--name: %s", asAPIError(err).msg)
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

func userPassword(env adminEnv, args []string, o options, out io.Writer) error {
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
	fmt.Fprintf(out, "%s has the new password; its web sessions are ended (its API keys still work).\n", args[0])
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

func userDeactivate(env adminEnv, args []string, _ options, out io.Writer) error {
	if err := env.store.setActive(args[0], false); err != nil {
		return fmt.Errorf("user deactivate %s: %w", args[0], err)
	}
	fmt.Fprintf(out, "%s is deactivated: its API keys and password no longer work, and its web sessions and event queues are ended.\n", args[0])
	return nil
}

func userReactivate(env adminEnv, args []string, _ options, out io.Writer) error {
	if err := env.store.setActive(args[0], true); err != nil {
		return fmt.Errorf("user reactivate %s: %w", args[0], err)
	}
	fmt.Fprintf(out, "%s is active: its API keys and password work again.\n", args[0])
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

// runBackup writes a consistent copy of the database to path. With a
// server holding the file, the server streams the copy over its socket
// and this process writes it, with its own rights (so a sandboxed service
// can still be backed up anywhere its administrator may write); with none,
// it copies the file directly. The uploaded files follow, from the
// directory beside the database to the same beside the copy
// (path.uploads/), after the database: every file the copy links is in
// it. Restoring, while no server runs, is one command:
//
//	cp -a BACKUP.uploads/. DB.uploads/ && cp -a BACKUP DB
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
		if err := writeFileAtomically(path, func(w io.Writer) error { _, err := st.snapshot(w); return err }); err != nil {
			return fmt.Errorf("backup %s: %w", path, err)
		}
		return backupUploads(path, o, stdout)
	}
	defer conn.Close()
	if err := backupOverSocket(conn, path, o); err != nil {
		return err
	}
	return backupUploads(path, o, stdout)
}

// backupUploads copies the uploaded files beside the database's copy.
func backupUploads(path string, o options, stdout io.Writer) error {
	if _, err := copyBlobs(uploadsDir(o.DB), uploadsDir(path)); err != nil {
		return fmt.Errorf("backup %s: uploaded files: %w", uploadsDir(path), err)
	}
	fmt.Fprintln(stdout, path)
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
