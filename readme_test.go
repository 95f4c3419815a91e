package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The README's examples are run here as a newcomer pastes them, so that a
// wrong example fails the suite. The commands run as written, with what
// First steps tells a newcomer to set up beforehand:
//
//   - `zulite` is on PATH: the binary built once from this tree, as `go
//     install .` would put it there;
//   - 127.0.0.1:9991 is the loopback address the test's server got from
//     the kernel, so that the test never collides with a zulite already
//     serving there (the shell blocks read it from zuliprc, which holds
//     that address).
//
// A command holding a placeholder (`<the key>`) or `go run .` fails the
// test: a newcomer cannot paste the one, and the README calls the binary
// one way, `zulite`. The server and the shell blocks run in the
// directory that holds the database (as `go run .` in a checkout does),
// the shell blocks in one bash, command after command, and the JavaScript
// block with node, as the file the README names. An answer shown in a comment right after a command
// (`# {...}` in shell, `// {...}` in JavaScript) must be JSON-equal to
// what the command printed; where the comment elides fields of an object
// with `...`, the answer must hold every field shown, and only that object
// may have more.

// TestREADME_OpensWithTheTwoCommands checks that the README's first block,
// before any section, gives exactly the two commands a newcomer needs.
func TestREADME_OpensWithTheTwoCommands(t *testing.T) {
	readme := readmeParse(t)
	intro := readme.section(t, "")
	if len(intro.blocks) == 0 {
		t.Fatalf("README before its first section: got no code block, want the set-up commands")
	}
	var got []string
	for _, step := range readmeSteps(intro.blocks[0]) {
		command, _, _ := strings.Cut(step.command, "#") // less the comment for the reader
		got = append(got, strings.TrimSpace(command))
	}
	want := []string{"go run .", "go test -race -timeout 30m ./..."}
	if b := intro.blocks[0]; b.lang != "sh" || !slices.Equal(got, want) {
		t.Errorf("README's first block (line %d): got ```%s with %q, want ```sh with %q", b.line, b.lang, got, want)
	}
}

// TestREADME_ExamplesRunAsPasted runs the shell blocks of "First steps" and
// "Logging in from an app" against the real binary, then the zulip-js
// block against the same server, and checks every exit status and every
// answer the README shows.
func TestREADME_ExamplesRunAsPasted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	needTools(t, "bash and curl run the README's shell blocks", "bash", "curl")
	readme := readmeParse(t)
	firstSteps := readme.section(t, "First steps")
	loggingIn := readme.section(t, "Logging in from an app")

	bin := e2eBuildBinary(t)
	compat, err := filepath.Abs("compat")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir) // the server's working directory, as a checkout's is to `go run .`
	srv := e2eStartServer(t, bin, "zulite.db")
	addr := strings.TrimPrefix(srv.baseURL, "http://")
	// keys are the API keys the output may hold: the owner's, and those
	// `user add` printed; they never reach the test's output.
	keys := map[string]string{srv.ownerKey: "<the owner's key>"}
	hide := func(s string) string {
		for key, name := range keys {
			s = strings.ReplaceAll(s, key, name)
		}
		return s
	}

	goRun := regexp.MustCompile(`\bgo run \.( |$)`)
	userAdd := regexp.MustCompile(`\buser add ([^@\s]+)@`)
	placeholder := regexp.MustCompile(`<[A-Za-z][^<>\n]* [^<>\n]*>`)
	shell := readmeStartShell(t, dir, filepath.Dir(bin))
	for _, sec := range []*readmeSection{firstSteps, loggingIn} {
		shellBlocks := 0
		for _, block := range sec.blocks {
			switch block.lang {
			case "sh":
				shellBlocks++
			case "js", "": // the zulip-js example and the first start's lines, checked below
				continue
			default:
				t.Errorf("README.md:%d: got a ```%s block, want sh, js or none: this test runs only those", block.line-1, block.lang)
				continue
			}
			for _, step := range readmeSteps(block) {
				if p := placeholder.FindString(step.command); p != "" {
					t.Fatalf("README.md:%d: %s\ngot the placeholder %s, want a command that runs as pasted", step.line, step.command, p)
				}
				if goRun.MatchString(step.command) {
					t.Fatalf("README.md:%d: %s\ngot `go run .`, want `zulite`, the one name First steps gives the binary", step.line, step.command)
				}
				command := strings.ReplaceAll(step.command, "127.0.0.1:9991", addr)
				out, status := shell.run(t, command)
				if status != 0 {
					t.Fatalf("README.md:%d: %s\ngot exit status %d, want 0; output:\n%s\nserver log:\n%s", step.line, step.command, status, hide(out), srv.logs())
				}
				if m := userAdd.FindStringSubmatch(command); m != nil && isAPIKey(out) {
					keys[out] = "<" + m[1] + "'s key>"
				}
				if step.answer != "" {
					if err := readmeCheckAnswer(out, step.answer); err != nil {
						t.Errorf("README.md:%d: %s\n%v", step.answerLine, step.command, err)
					}
				}
			}
		}
		if shellBlocks == 0 {
			t.Errorf("README.md, %s: got no ```sh block, want the commands to run", sec.title)
		}
	}

	t.Run("bootstrap lines", func(t *testing.T) {
		readmeCheckBootstrap(t, firstSteps, srv)
	})

	t.Run("zulip-js", func(t *testing.T) {
		readmeRunJS(t, loggingIn, compat, addr, hide)
	})
}

// readmeCheckBootstrap compares what the server printed at its first start
// with the lines "First steps" shows, whose key is an example.
func readmeCheckBootstrap(t *testing.T, sec *readmeSection, srv *e2eServer) {
	i := slices.IndexFunc(sec.blocks, func(b readmeBlock) bool { return b.lang == "" })
	if i < 0 {
		t.Fatalf("First steps: got no plain block, want the lines printed at the first start")
	}
	want := sec.blocks[i].lines
	var got []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = strings.Split(strings.TrimSuffix(srv.output(), "\n"), "\n")
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("first start: got %d lines on stdout, want the %d of README.md:%d", len(got), len(want), sec.blocks[i].line)
	}
	for j, w := range want {
		if key, ok := strings.CutPrefix(w, "key: "); ok && isAPIKey(key) {
			if g, ok := strings.CutPrefix(got[j], "key: "); !ok || !isAPIKey(g) {
				t.Errorf("README.md:%d: got a line that is not \"key: \" and 32 alphanumerics, want one", sec.blocks[i].line+j)
			}
			continue
		}
		if got[j] != w {
			t.Errorf("README.md:%d: got %q, want %q", sec.blocks[i].line+j, got[j], w)
		}
	}
}

// readmeRunJS saves the section's JavaScript block under the file name the
// section tells the reader to run, beside the zulip-js that compat/ pins
// (what `npm install zulip-js` installs today), and runs it with node.
// Without node and npm it skips, as TestCompat_ZulipJS does; under
// CI=true it fails instead.
func readmeRunJS(t *testing.T, sec *readmeSection, compat, addr string, hide func(string) string) {
	i := slices.IndexFunc(sec.blocks, func(b readmeBlock) bool { return b.lang == "js" })
	if i < 0 {
		t.Fatalf("Logging in from an app: got no ```js block, want the zulip-js example")
	}
	block := sec.blocks[i]
	file := "app.js"
	howToRun := regexp.MustCompile("`node ([A-Za-z0-9_.-]+\\.[cm]?js)`").FindStringSubmatch(sec.prose)
	if howToRun == nil || !strings.Contains(sec.prose, "`npm install zulip-js`") {
		t.Errorf("Logging in from an app: got no `npm install zulip-js` and `node FILE` in the text, want both, so the reader knows how to run the block (running it as %s)", file)
	} else {
		file = howToRun[1]
	}

	needTools(t, "Node.js and npm run the README's zulip-js block (Debian: apt-get install -y nodejs npm)", "node", "npm")
	if out, err := exec.Command("node", "-e", "process.exit(parseInt(process.versions.node) >= 16 ? 0 : 1)").CombinedOutput(); err != nil {
		t.Fatalf("Node.js 16 or newer is needed (node --version: %s)", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	npm.Dir = compat
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in compat/: %v\n%s", err, out)
	}

	app := t.TempDir()
	if err := os.Symlink(filepath.Join(compat, "node_modules"), filepath.Join(app, "node_modules")); err != nil {
		t.Fatal(err)
	}
	code := strings.ReplaceAll(strings.Join(block.lines, "\n")+"\n", "127.0.0.1:9991", addr)
	if err := os.WriteFile(filepath.Join(app, file), []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", file)
	node.Dir = app
	node.Env = e2eChildEnv()
	var stdout, stderr bytes.Buffer
	node.Stdout, node.Stderr = &stdout, &stderr
	if err := node.Run(); err != nil {
		t.Fatalf("README.md:%d: node %s: got %v, want exit status 0; stderr:\n%s", block.line, file, err, hide(stderr.String()))
	}

	var answers []readmeStep
	for j, line := range block.lines {
		if want, ok := strings.CutPrefix(strings.TrimSpace(line), "// "); ok && readmeIsAnswer(want) {
			answers = append(answers, readmeStep{answer: want, answerLine: block.line + j})
		}
	}
	var got []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.TrimSpace(line) != "" {
			got = append(got, line)
		}
	}
	if len(got) != len(answers) {
		t.Fatalf("README.md:%d: node %s printed %d lines, want the %d answers the block shows:\n%s", block.line, file, len(got), len(answers), hide(stdout.String()))
	}
	for j, a := range answers {
		if err := readmeCheckAnswer(got[j], a.answer); err != nil {
			t.Errorf("README.md:%d: answer %d of node %s\n%v", a.answerLine, j+1, file, err)
		}
	}
}

// ---- the README ----

type readmeSection struct {
	title  string
	prose  string // the text outside code blocks
	blocks []readmeBlock
}

// readmeBlock is one fenced code block.
type readmeBlock struct {
	lang  string // what follows the opening ```: "sh", "js" or ""
	line  int    // README.md line of the first line inside the fences
	lines []string
}

type readme map[string]*readmeSection

// readmeParse splits README.md into its "## " sections; the text before
// the first one is the section "".
func readmeParse(t *testing.T) readme {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	r := readme{"": {}}
	sec := r[""]
	var block *readmeBlock
	var prose strings.Builder
	for i, line := range strings.Split(string(raw), "\n") {
		switch {
		case block != nil && strings.HasPrefix(line, "```"):
			sec.blocks = append(sec.blocks, *block)
			block = nil
		case block != nil:
			block.lines = append(block.lines, line)
		case strings.HasPrefix(line, "```"):
			block = &readmeBlock{lang: strings.TrimPrefix(line, "```"), line: i + 2}
		case strings.HasPrefix(line, "## "):
			sec.prose = prose.String()
			prose.Reset()
			sec = &readmeSection{title: strings.TrimPrefix(line, "## ")}
			r[sec.title] = sec
		default:
			prose.WriteString(line + "\n")
		}
	}
	sec.prose = prose.String()
	if block != nil {
		t.Fatalf("README.md:%d: got a code block never closed, want ``` at its end", block.line-1)
	}
	return r
}

func (r readme) section(t *testing.T, title string) *readmeSection {
	t.Helper()
	sec, ok := r[title]
	if !ok {
		t.Fatalf("README.md: got no section %q, want one", title)
	}
	return sec
}

// readmeStep is one command of a shell block and the answer the README
// shows for it.
type readmeStep struct {
	line       int    // README.md line the command starts on
	command    string // as written, continuation lines included
	answer     string // the JSON of the `# {...}` line right after it, or ""
	answerLine int
}

// readmeSteps splits a shell block into commands: a line ending in a
// backslash goes on on the next one, and a comment line holding a JSON
// object right after a command is its answer. Other comments are for the
// reader; a command keeps the one at its end, which bash ignores.
func readmeSteps(b readmeBlock) []readmeStep {
	var steps []readmeStep
	answerable := false // the previous line ended a command
	for i := 0; i < len(b.lines); i++ {
		line := strings.TrimSpace(b.lines[i])
		switch {
		case line == "":
			answerable = false
		case strings.HasPrefix(line, "#"):
			want := strings.TrimSpace(strings.TrimPrefix(line, "#"))
			if answerable && readmeIsAnswer(want) {
				steps[len(steps)-1].answer, steps[len(steps)-1].answerLine = want, b.line+i
			}
			answerable = false
		default:
			step := readmeStep{line: b.line + i, command: b.lines[i]}
			for strings.HasSuffix(step.command, "\\") && i+1 < len(b.lines) {
				i++
				step.command += "\n" + b.lines[i]
			}
			step.command = strings.TrimSpace(step.command)
			steps = append(steps, step)
			answerable = true
		}
	}
	return steps
}

func readmeIsAnswer(comment string) bool {
	return strings.HasPrefix(comment, "{")
}

// readmeElided is `...` standing for an object's other fields.
var readmeElided = regexp.MustCompile(`([{,]\s*)\.\.\.(\s*})`)

// readmeCheckAnswer says how got, what a command printed, differs from
// want, the answer the README shows.
func readmeCheckAnswer(got, want string) error {
	var g, w any
	if err := readmeDecode(got, &g); err != nil {
		return fmt.Errorf("got %q, not JSON (%v); want %s", got, err, want)
	}
	if err := readmeDecode(readmeElided.ReplaceAllString(want, `$1"...":true$2`), &w); err != nil {
		return fmt.Errorf("the README's answer %s is not JSON, even with ... for an object's other fields: %v", want, err)
	}
	if !readmeHolds(g, w) {
		return fmt.Errorf("got  %s\nwant %s", strings.TrimSpace(got), want)
	}
	return nil
}

func readmeDecode(s string, v *any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("more after the JSON value")
	}
	return nil
}

// readmeHolds reports whether got is want, where an object of want with
// the key "..." may have fewer fields than got's.
func readmeHolds(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		_, elided := w["..."]
		shown := 0
		for k, wv := range w {
			if k == "..." {
				continue
			}
			shown++
			if gv, ok := g[k]; !ok || !readmeHolds(gv, wv) {
				return false
			}
		}
		return elided || len(g) == shown
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !readmeHolds(g[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(got, want)
	}
}

// ---- the shell ----

// readmeShell is one bash fed commands one at a time, as a terminal is:
// what a command sets stays set for the next. Each command's stdin is
// /dev/null, so none can read the commands after it.
type readmeShell struct {
	stdin  io.WriteCloser
	output chan string // stdout and stderr, a line at a time; closed when bash exits
}

// readmeStatus starts the line bash prints after each command, with its
// exit status.
const readmeStatus = "readme-test-exit-status"

// readmeStartShell starts bash in dir, with binDir first on its PATH.
func readmeStartShell(t *testing.T, dir, binDir string) *readmeShell {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-s")
	cmd.Dir = dir
	cmd.Env = append(e2eChildEnv(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start bash: %v", err)
	}
	sh := &readmeShell{stdin: stdin, output: make(chan string, 64)}
	go func() {
		defer close(sh.output)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			sh.output <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		stdin.Close() // bash exits at the end of its input
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return sh
}

// run pastes command and answers what it printed, trimmed, and its exit
// status.
func (sh *readmeShell) run(t *testing.T, command string) (string, int) {
	t.Helper()
	fmt.Fprintf(sh.stdin, "{\n%s\n} </dev/null 2>&1\nprintf '\\n%s %%d\\n' $?\n", command, readmeStatus)
	var out strings.Builder
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-sh.output:
			if !ok {
				t.Fatalf("bash exited while running a README command; output:\n%s", out.String())
			}
			if s, ok := strings.CutPrefix(line, readmeStatus+" "); ok {
				var status int
				fmt.Sscan(s, &status)
				return strings.TrimSpace(out.String()), status
			}
			out.WriteString(line + "\n")
		case <-timeout:
			t.Fatalf("a README command ran for 30 s, want it done; output so far:\n%s", out.String())
		}
	}
}
