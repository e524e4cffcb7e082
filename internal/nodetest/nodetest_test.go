package nodetest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fresh tells an install from the current lockfile from a missing or
// older one.
func TestFresh(t *testing.T) {
	d := t.TempDir()
	if fresh(d) {
		t.Fatal("fresh without a lockfile")
	}
	lockfile := filepath.Join(d, "package-lock.json")
	os.WriteFile(lockfile, []byte("{}"), 0o600)
	if fresh(d) {
		t.Fatal("fresh without node_modules")
	}
	os.MkdirAll(filepath.Join(d, "node_modules"), 0o700)
	installed := filepath.Join(d, "node_modules", ".package-lock.json")
	os.WriteFile(installed, []byte("{}"), 0o600)
	if !fresh(d) {
		t.Fatal("not fresh after an install")
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(lockfile, later, later)
	if fresh(d) {
		t.Fatal("fresh with a lockfile changed since the install")
	}
}

// One process at a time holds the install lock; the next one gets it once
// it is released.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".install.lock")
	unlock, err := lock(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		u, err := lock(path)
		if err != nil {
			t.Error(err)
		} else {
			u()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a second holder while the lock is held")
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the lock was not passed on")
	}
}

// The module's tools are installed and runnable.
func TestDir(t *testing.T) {
	d := Dir(t)
	if _, err := os.Stat(filepath.Join(d, "package.json")); err != nil {
		t.Fatal(err)
	}
	if p := Bin(t, "spectral"); p == "" {
		t.Fatal("no spectral")
	}
}
