package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current output")

// result is one in-process run of the CLI.
type result struct {
	stdout, stderr string
	code           int
}

// run executes the CLI in-process with the given stdin and environment.
func run(t testing.TB, stdin io.Reader, env map[string]string, args ...string) result {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, Process{Stdin: stdin, Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }, Drivers: testDrivers})
	return result{stdout.String(), stderr.String(), code}
}

// checkStderr enforces the error contract: nothing on stderr on success,
// exactly one "swarmscore: " line on failure, and never a stack trace.
func checkStderr(t *testing.T, r result) {
	t.Helper()
	if r.code == ExitOK {
		if r.stderr != "" {
			t.Errorf("exit 0 with stderr %q", r.stderr)
		}
		return
	}
	if !strings.HasPrefix(r.stderr, "swarmscore: ") || !strings.HasSuffix(r.stderr, "\n") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr is not one 'swarmscore: ' line: %q", r.stderr)
	}
	if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, ".go:") {
		t.Errorf("stderr looks like a stack trace: %q", r.stderr)
	}
}

// goldenUsed records the golden files this run compared, so TestMain can
// report files no case produces any more.
var goldenUsed = map[string]bool{}

// TestMain fails a full run (no -run filter) when testdata holds a golden
// file that no test case reads: a stale file would document behaviour that
// is no longer tested.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !*update {
		files, _ := filepath.Glob(filepath.Join("testdata", "*.golden"))
		for _, f := range files {
			if !goldenUsed[filepath.Base(f)] {
				fmt.Fprintf(os.Stderr, "stale golden file %s: no test case uses it (delete it)\n", f)
				code = 1
			}
		}
	}
	os.Exit(code)
}

// golden compares got with testdata/name.golden, or rewrites the file
// under -update. The file records the command, its stdout, stderr and exit
// status, so a reviewer reads each case in one place.
// A stdin that varies between runs (a freshly signed passport) is recorded
// as stdinLabel instead.
func golden(t *testing.T, name string, args []string, stdin, stdinLabel string, r result) {
	t.Helper()
	var b strings.Builder
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \t\"'$\\") {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	b.WriteString("$ swarmscore " + strings.Join(quoted, " ") + "\n")
	if stdinLabel != "" {
		b.WriteString("--- stdin\n" + stdinLabel + "\n")
	} else if stdin != "" {
		b.WriteString("--- stdin\n" + stdin)
		if !strings.HasSuffix(stdin, "\n") {
			b.WriteString("\n")
		}
	}
	b.WriteString("--- stdout\n" + r.stdout)
	b.WriteString("--- stderr\n" + r.stderr)
	b.WriteString("--- exit " + strconv.Itoa(r.code) + "\n")
	goldenUsed[name+".golden"] = true
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test ./internal/cli -run %s -update' to create it)", err, t.Name())
	}
	if got := b.String(); got != string(want) {
		t.Errorf("output differs from %s (rerun with -update after checking the change):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// cliCase is one command line with its expected exit status; the expected
// output lives in the golden file named after the case.
type cliCase struct {
	name       string
	args       []string
	stdin      string
	stdinLabel string // recorded in the golden file instead of stdin
	env        map[string]string
	code       int
	// normalize, if set, rewrites stdout before the golden comparison
	// (to blank out random identifiers).
	normalize func(string) string
}

func runCases(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, strings.NewReader(c.stdin), c.env, c.args...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, c.code, r.stderr)
			}
			checkStderr(t, r)
			if c.normalize != nil {
				r.stdout = c.normalize(r.stdout)
			}
			golden(t, c.name, c.args, c.stdin, c.stdinLabel, r)
		})
	}
}

func TestRoot(t *testing.T) {
	runCases(t, []cliCase{
		{name: "root-unknown-command", args: []string{"scor"}, code: ExitUsage},
		{name: "root-unknown-flag", args: []string{"--frobnicate"}, code: ExitUsage},
	})
	// Help goes to stdout with status 0; its text is cobra's, so only the
	// parts this package promises are checked.
	for _, args := range [][]string{nil, {"--help"}, {"help"}} {
		r := run(t, nil, nil, args...)
		if r.code != ExitOK || r.stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
		for _, want := range []string{"Exit status:", "score", "escrow", "keygen", "passport"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%v: help lacks %q", args, want)
			}
		}
	}
}

// TestRunIsolation shows that flag values do not leak between runs: Run
// builds a fresh command tree each time.
func TestRunIsolation(t *testing.T) {
	first := run(t, nil, nil, "score", "--json", "--conduit-total", "5", "--conduit-success", "5", "--ap2-total", "5", "--ap2-success", "5")
	if first.code != ExitOK {
		t.Fatal(first.stderr)
	}
	second := run(t, nil, nil, "score", "--conduit-total", "5")
	if second.code != ExitUsage || !strings.Contains(second.stderr, "missing --conduit-success, --ap2-total, --ap2-success") {
		t.Fatalf("second run saw the first run's flags: %+v", second)
	}
}

type panicReader struct{}

func (panicReader) Read([]byte) (int, error) { panic("reader exploded") }

func TestPanicBecomesInternalError(t *testing.T) {
	r := run(t, panicReader{}, nil, "score", "--batch")
	if r.code != ExitFailure {
		t.Fatalf("exit %d, want %d", r.code, ExitFailure)
	}
	checkStderr(t, r)
	if r.stderr != "swarmscore: internal error: reader exploded\n" {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestExitStatus(t *testing.T) {
	wrapRun := func(err error) error { return &runError{err} }
	for _, c := range []struct {
		err  error
		code int
	}{
		{errors.New("cobra: unknown flag"), ExitUsage}, // not from RunE: usage
		{wrapRun(errors.New("disk on fire")), ExitFailure},
		{wrapRun(invalidf("bad value")), ExitUsage},
		{wrapRun(usageErrorf("bad combination")), ExitUsage},
		{wrapRun(withStatus(ExitFailure, invalidf("line 3: bad"))), ExitFailure},
		{wrapRun(&kindError{errkind.ErrNotFound, errors.New("agent x")}), ExitNotFound},
		{wrapRun(&kindError{errkind.ErrUnavailable, errors.New("db down")}), ExitUnavailable},
		{wrapRun(&kindError{errkind.ErrConflict, errors.New("dup")}), ExitConflict},
		{wrapRun(&kindError{errkind.ErrUnauthorized, errors.New("token")}), ExitDenied},
		{wrapRun(&kindError{errkind.ErrForbidden, errors.New("token")}), ExitDenied},
	} {
		if got := exitStatus(c.err); got != c.code {
			t.Errorf("%v: status %d, want %d", c.err, got, c.code)
		}
	}
	if invalidf("x %d", 1).Error() != "x 1" {
		t.Error("invalidf must not prefix the sentinel's name")
	}
	if len(kindExit) != len(errkind.Kinds()) {
		t.Errorf("kindExit has %d rows for %d kinds", len(kindExit), len(errkind.Kinds()))
	}
	for _, k := range errkind.Kinds() {
		if kindExit[k] == ExitOK {
			t.Errorf("kind %v exits 0", k)
		}
	}
}

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain message": "plain message",
		"unknown command \"x\"\n\nDid you mean this?\n\ty\n": "unknown command \"x\" Did you mean this? y",
		"a\r\nb\tc": "a b c",
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBinary builds the real binary and runs it as a user would, to prove
// main's wiring: exit statuses reach the shell and errors carry no trace.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "swarmscore")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, "github.com/swarmscore/swarmscore/cmd/swarmscore")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	exe := func(stdin string, args ...string) result {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{stdout.String(), stderr.String(), code}
	}
	counts := []string{"--conduit-total", "80", "--conduit-success", "76", "--ap2-total", "40", "--ap2-success", "38"}
	r := exe("", append([]string{"score", "--json"}, counts...)...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, `{"formula_version":"1.0","score":760,"tier":"STANDARD","escrow_modifier":0.392,`) {
		t.Fatalf("score --json: %+v", r)
	}
	checkStderr(t, r)
	for _, c := range []struct {
		stdin string
		args  []string
		code  int
	}{
		{"", []string{"scor"}, ExitUsage},
		{"", []string{"score", "--conduit-total", "-1", "--conduit-success", "0", "--ap2-total", "0", "--ap2-success", "0"}, ExitUsage},
		{"{\"conduit_total\":1,\"conduit_success\":1,\"ap2_total\":1,\"ap2_success\":1}\n{]\n", []string{"score", "--batch"}, ExitFailure},
	} {
		r := exe(c.stdin, c.args...)
		if r.code != c.code {
			t.Errorf("%v: exit %d, want %d (%q)", c.args, r.code, c.code, r.stderr)
		}
		checkStderr(t, r)
	}
	if r := exe("", "keygen"); r.code != 0 || !regexp.MustCompile(`^[0-9a-f]{64}\n$`).MatchString(r.stdout) {
		t.Fatalf("keygen: %+v", r)
	}
}

// TestHelpTellsTheTruth pins help texts issue 28 found untrue: escrow holds
// are computed, not held, and checkpoints (and corrections' passports) are
// signed by the keyring's active key, which the checkpoint names.
func TestHelpTellsTheTruth(t *testing.T) {
	help := func(args ...string) string {
		t.Helper()
		r := run(t, nil, nil, append(args, "--help")...)
		if r.code != ExitOK {
			t.Fatalf("%v --help: exit %d %q", args, r.code, r.stderr)
		}
		return strings.Join(strings.Fields(r.stdout), " ")
	}
	if root := help(); strings.Contains(root, "holds escrow") || !strings.Contains(root, "computes the escrow hold of a payment from a score") {
		t.Errorf("root help: %q", root)
	}
	for _, args := range [][]string{{"ledger", "checkpoint"}, {"correct"}} {
		if h := help(args...); strings.Contains(h, "key file beside") || !strings.Contains(h, "the keyring's active key") && !strings.Contains(h, "the active key of the keyring") {
			t.Errorf("%v help: %q", args, h)
		}
	}

	db := "sqlite:" + filepath.Join(t.TempDir(), "k.db")
	if code, _, errs := runCLI(t, nil, "migrate", "--db", db); code != ExitOK {
		t.Fatalf("migrate: %q", errs)
	}
	for _, alg := range []string{"HS256", "EdDSA"} {
		if alg == "EdDSA" {
			if code, _, errs := runCLI(t, nil, "key", "rotate", "--signing-alg", "Ed25519", "--db", db); code != ExitOK {
				t.Fatalf("key rotate: %q", errs)
			}
		}
		code, out, errs := runCLI(t, nil, "ledger", "checkpoint", "--json", "--db", db)
		var cp struct{ Issuer struct{ KID, Alg string } }
		if code != ExitOK || json.Unmarshal([]byte(out), &cp) != nil {
			t.Fatalf("checkpoint: %d %q %q", code, out, errs)
		}
		_, out, _ = runCLI(t, nil, "key", "list", "--json", "--db", db)
		var keys []struct{ KID, Alg, State string }
		if err := json.Unmarshal([]byte(out), &keys); err != nil {
			t.Fatal(err)
		}
		var active string
		for _, k := range keys {
			if k.State == "active" {
				active = k.KID
			}
		}
		if cp.Issuer.KID != active || cp.Issuer.Alg != alg {
			t.Errorf("checkpoint signed by %s (%s); the keyring's active key is %s, want %s", cp.Issuer.KID, cp.Issuer.Alg, active, alg)
		}
	}
}
