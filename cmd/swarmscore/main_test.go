package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for the real one: re-executed with
// SWARMSCORE_TEST_MAIN=1 it runs main with the given arguments, so the tests
// below exercise main's wiring (arguments, streams, exit status) itself.
func TestMain(m *testing.M) {
	if os.Getenv("SWARMSCORE_TEST_MAIN") == "1" {
		os.Args = append([]string{"swarmscore"}, strings.Fields(os.Getenv("SWARMSCORE_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SWARMSCORE_TEST_MAIN=1", "SWARMSCORE_TEST_ARGS="+strings.Join(args, " "))
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestMainWiring(t *testing.T) {
	code, out, errOut := run(t, "", "score", "--conduit-total", "80", "--conduit-success", "76", "--ap2-total", "40", "--ap2-success", "38", "--json")
	if code != 0 || !strings.Contains(out, `"score":760`) || errOut != "" {
		t.Errorf("score: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = run(t, `{"conduit_total":1,"conduit_success":2,"ap2_total":0,"ap2_success":0}`+"\n", "score", "--batch")
	if code != 1 || out != "" || errOut != "swarmscore: line 1: conduit_success = 2: exceeds conduit_total (1)\n" {
		t.Errorf("batch: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, "", "no-such-command")
	if code != 2 || strings.Count(errOut, "\n") != 1 || strings.Contains(errOut, "goroutine") {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	for _, flag := range []string{"--version", "-v"} {
		code, out, errOut := run(t, "", flag)
		if code != 0 || !strings.HasPrefix(out, "swarmscore ") || !strings.Contains(out, "go1.") || strings.Count(out, "\n") != 1 || errOut != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", flag, code, out, errOut)
		}
	}
}
