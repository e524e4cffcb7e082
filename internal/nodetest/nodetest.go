// Package nodetest gives tests the Node.js peers the project checks itself
// against: the npm packages of tools/node (package.json and its lockfile),
// installed with `npm ci --ignore-scripts` on first use (no package's
// install script runs: one of Spectral's dependencies has one that reports
// usage over the network). Every Node tool of the tests is
// added there, so that one lockfile pins them all: `npm install --save-dev
// PACKAGE@VERSION` in tools/node, and commit both files.
//
// When Node.js or npm is missing, or the install fails, a test fails under
// CI=true (a CI run without Node must not pass by skipping) and is skipped
// with the reason otherwise.
package nodetest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Dir returns the tools/node folder of the module, with its packages
// installed: `npm ci` runs when node_modules is missing or older than the
// lockfile, once per process, and under a lock file so that test binaries
// running at once do not install over each other.
func Dir(tb testing.TB) string {
	tb.Helper()
	once.Do(func() { dir, installErr = install() })
	if installErr != nil {
		unavailable(tb, installErr)
	}
	return dir
}

// Bin returns the path of the executable name that an installed package
// provides (node_modules/.bin/name).
func Bin(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(Dir(tb), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s is not installed in tools/node: add it to tools/node/package.json (%v)", name, err)
	}
	return p
}

// Node returns the path of the node executable.
func Node(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		unavailable(tb, fmt.Errorf("node is not installed: %w", err))
	}
	return p
}

var (
	once       sync.Once
	dir        string
	installErr error
)

func unavailable(tb testing.TB, err error) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("the Node.js tools are required in CI: %v", err)
	}
	tb.Skipf("the Node.js tools are not available: %v (they are required when CI=true)", err)
}

// install finds tools/node and runs npm ci there when its packages are
// missing or stale.
func install() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	d := filepath.Join(root, "tools", "node")
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not installed: %w", err)
	}
	if fresh(d) {
		return d, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm is not installed: %w", err)
	}
	unlock, err := lock(filepath.Join(d, ".install.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if fresh(d) { // another process installed meanwhile
		return d, nil
	}
	cmd := exec.Command(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = d
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm ci in %s: %v\n%s", d, err, out.Bytes())
	}
	return d, nil
}

// fresh reports whether the packages of d are installed from its current
// lockfile: npm ci writes node_modules/.package-lock.json last.
func fresh(d string) bool {
	lockfile, err1 := os.Stat(filepath.Join(d, "package-lock.json"))
	installed, err2 := os.Stat(filepath.Join(d, "node_modules", ".package-lock.json"))
	return err1 == nil && err2 == nil && !installed.ModTime().Before(lockfile.ModTime())
}

// lock takes the lock file path, waiting up to 10 minutes for another
// process's install to finish; a lock older than that is taken over.
func lock(path string) (func(), error) {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > 10*time.Minute {
			os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("waited 10 minutes for %s", path)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// moduleRoot is the folder of go.mod, from the test's working directory
// (its package's folder) up.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("no go.mod above the working directory")
		}
		d = parent
	}
}
