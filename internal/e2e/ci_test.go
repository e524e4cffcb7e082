package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCIFuzzStep runs CI's fuzz step (.ci/fuzz) on a target whose setup
// never returns: the run is killed at its -fuzztime plus the margin and
// fails, naming the target. The same target without the hang passes.
func TestCIFuzzStep(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	run := func(hang bool) (string, error) {
		cmd := exec.Command("bash", ".ci/fuzz", "./internal/e2e/testdata/fuzzoverrun", "FuzzOverrun", "1s")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "FUZZ_MARGIN=3", "SWARMSCORE_FUZZ_HANG=")
		if hang {
			cmd.Env = append(cmd.Env, "SWARMSCORE_FUZZ_HANG=1")
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := run(false); err != nil {
		t.Fatalf("a target that ends in time failed: %v\n%s", err, out)
	}
	out, err := run(true)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("an overrunning target: %v, want exit status 1\n%s", err, out)
	}
	if want := "fuzz ./internal/e2e/testdata/fuzzoverrun FuzzOverrun: overran: still running 4s after it started (-fuzztime 1s plus 3s); killed"; !strings.Contains(out, want) {
		t.Fatalf("output does not say %q:\n%s", want, out)
	}
}
