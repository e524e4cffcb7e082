// Package nodetest runs the project's Node tooling (tools/node: the
// independent implementations of MCP, A2A and W3C Verifiable Credentials
// that the tests check SwarmScore against) from Go tests.
//
// Without Node or without tools/node/node_modules (`npm ci` there installs
// it from the lockfile) a test is skipped, except under CI=true, where it
// fails: CI must prove interoperability, never skip it.
package nodetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Dir is tools/node of this module.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "tools", "node")
}

// Require returns the path of node, skipping (or failing under CI=true)
// when Node or the installed packages are missing.
func Require(t testing.TB) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format+" (required when CI=true)", args...)
		}
		t.Skipf(format+"; skipping (required when CI=true)", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(Dir(), "node_modules")); err != nil {
		missing("the Node packages are not installed (cd tools/node && npm ci)")
	}
	return node
}

// Run runs node on script (a file of tools/node) with args, feeding it
// stdin, within a minute, and returns its standard output; a non-zero
// exit fails the test with its standard error.
func Run(t testing.TB, script string, stdin []byte, args ...string) []byte {
	t.Helper()
	node := Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(Dir(), script)}, args...)...)
	cmd.Dir = Dir()
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, errb.String())
	}
	return out.Bytes()
}

// Bin returns the path of the executable name that an installed package
// of tools/node provides (node_modules/.bin/name), skipping (or failing
// under CI=true) as Require does; a package the lockfile lacks fails.
func Bin(t testing.TB, name string) string {
	t.Helper()
	Require(t)
	p := filepath.Join(Dir(), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed in tools/node: add its package to tools/node/package.json (%v)", name, err)
	}
	return p
}
