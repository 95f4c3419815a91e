package main

// The admin socket: a Unix socket beside the database (PATH.sock, mode
// 0600) through which admin commands reach the server that holds the
// file. A request is one JSON line, adminRequest; the answer is one JSON
// line, adminResponse, except for a backup, which is answered with a
// backupHeader line and the copy's bytes.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// socketPath is where the server holding db listens for admin requests.
func socketPath(db string) string { return db + ".sock" }

// adminRequest is one admin command sent over the socket.
type adminRequest struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Options options  `json:"options"`
}

// adminResponse is a command's output, or why it failed.
type adminResponse struct {
	Output string `json:"output"`
	Error  string `json:"error,omitempty"`
}

// backupHeader precedes a streamed copy: its size, or why there is none.
type backupHeader struct {
	Size  int64  `json:"size"`
	Error string `json:"error,omitempty"`
}

// listenAdmin listens on the admin socket beside the database, usable by
// the file's owner only. The socket is bound inside a new directory only
// the owner may enter, made private there, and then renamed into place,
// so that it is never reachable with a looser mode, whatever the umask
// (binding then chmod-ing left a window another local user could win).
// Holding the database lock means no other server uses the socket, so a
// leftover one is removed.
func listenAdmin(path string) (net.Listener, error) {
	os.Remove(path)
	dir, err := os.MkdirTemp(filepath.Dir(path), ".z") // mode 0700; short, as a socket's path is at most 107 bytes
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	defer os.RemoveAll(dir)
	bound := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", bound)
	if err == nil {
		ln.(*net.UnixListener).SetUnlinkOnClose(false) // it is unlinked by name below, once renamed
		if err = os.Chmod(bound, 0o600); err == nil {
			err = os.Rename(bound, path)
		}
		if err != nil {
			ln.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	return &adminListener{ln, path}, nil
}

// adminListener removes the socket by its final name when closed.
type adminListener struct {
	net.Listener
	path string
}

func (l *adminListener) Close() error {
	err := l.Listener.Close()
	os.Remove(l.path)
	return err
}

// serveAdmin answers admin requests on ln until it is closed.
func serveAdmin(ln net.Listener, env adminEnv) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go serveAdminConn(env, conn)
	}
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
	// Only the socket's owner (or root) is served: a socket made reachable
	// by a careless chmod still answers nobody else.
	if uid, err := peerUID(conn); err != nil || (uid != uint32(os.Geteuid()) && uid != 0) {
		json.NewEncoder(conn).Encode(adminResponse{Error: "refused: the admin socket answers only its owner"})
		return
	}
	if req.Command == "backup" { // the copy goes to the client, which writes it with its own rights
		serveBackup(env.store, conn)
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

// backupStallTimeout is how long the server waits for a backup client
// to take the next part of the copy before it gives up on the client.
const backupStallTimeout = 5 * time.Second

// serveBackup sends the client on conn a header and a copy of the
// database. The copy is made beside the database first (snapshotFile),
// not streamed from the read transaction: bbolt cannot grow its mapping
// while a read transaction is open, so a client that stopped reading
// used to stop every write, for as long as it was allowed (issue 20).
// A client that takes nothing for backupStallTimeout is given up on, so
// that it holds neither the copy's space nor a goroutine for long.
func serveBackup(st *store, conn net.Conn) {
	out := stallGuard{conn, backupStallTimeout}
	sendHeader := func(h backupHeader) error {
		line, _ := json.Marshal(h)
		_, err := out.Write(append(line, '\n'))
		return err
	}
	conn.SetDeadline(time.Time{}) // from here on, out sets one for each write
	copied, size, err := st.snapshotFile()
	if err != nil {
		sendHeader(backupHeader{Error: err.Error()})
		return
	}
	defer copied.Close()
	if sendHeader(backupHeader{Size: size}) == nil {
		io.Copy(out, io.LimitReader(copied, size)) // written a buffer at a time
	}
}

// stallGuard writes to conn, giving each write at most wait to go
// through: a reader that stops taking what is sent makes a write fail
// after wait, however long the whole transfer takes.
type stallGuard struct {
	conn net.Conn
	wait time.Duration
}

func (g stallGuard) Write(p []byte) (int, error) {
	g.conn.SetWriteDeadline(time.Now().Add(g.wait))
	return g.conn.Write(p)
}

// adminOverSocket runs an admin command in the server on conn and
// copies its output to stdout.
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

// backupOverSocket asks the server on conn for a copy of the database
// and writes it to path.
func backupOverSocket(conn net.Conn, path string, o options) error {
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
	return nil
}
