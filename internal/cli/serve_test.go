package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeInProcess starts serve through Run, checks it answers, and stops
// it by cancelling the context (what SIGTERM does in the binary).
func TestServeInProcess(t *testing.T) {
	dir := t.TempDir()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := map[string]string{}
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", "sqlite:" + filepath.Join(dir, "s.db")},
			Process{Stderr: pw, Getenv: func(k string) string { return env[k] }, Drivers: testDrivers})
		pw.Close()
	}()
	addr := make(chan string, 1)
	var logs strings.Builder
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" {
				addr <- l.Addr
			}
		}
	}()
	var a string
	select {
	case a = <-addr:
	case code := <-done:
		t.Fatalf("serve exited with %d", code)
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not start")
	}
	resp, err := http.Get("http://" + a + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestServeBadFlags(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	for _, args := range [][]string{
		{"serve", "--db", db, "--rate-limit", "-1"},
		{"serve", "--db", db, "--rate-limit", "5", "--rate-burst", "0"},
		{"serve", "--db", db, "--addr", "not-an-address"},
		{"serve", "--db", db, "--trusted-proxy", "10.0.0.0/33"},
		{"serve", "--db", db, "--trusted-proxy", "proxy.internal"},
		{"serve", "--db", db, "--metrics-allow", "prometheus.internal"},
		{"serve", "--db", db, "--max-clock-skew", "0s"},
		{"serve", "--db", db, "--max-clock-skew", "-1m"},
		{"serve", "--db", db, "--max-clock-skew", "5"},
		{"serve", "--db", db, "--log-level", "verbose"},
		{"serve", "--db", "mysql://x"},
		{"serve", "extra-arg"},
	} {
		if code, _, errs := runCLI(t, nil, args...); code != ExitUsage || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}

func TestParseProxies(t *testing.T) {
	got, err := parseNetworks("--trusted-proxy", []string{"10.1.2.3/8", "192.0.2.1", "::ffff:198.51.100.1", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.1/32", "198.51.100.1/32", "2001:db8::/32"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
