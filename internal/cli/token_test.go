package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, Process{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }, Drivers: testDrivers})
	return code, out.String(), errb.String()
}

func TestTokenCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	db := "sqlite:" + path
	// A database that does not exist (a mistyped --db) is refused, and
	// not created: the server would never read a token minted into it.
	for _, args := range [][]string{{"token", "create", "--operator", "acme"}, {"token", "list"}, {"token", "revoke", "x"}} {
		code, _, errs := runCLI(t, nil, append(args, "--db", db)...)
		if code != ExitNotFound || !strings.Contains(errs, "does not exist") {
			t.Fatalf("%v on a missing database: %d %q", args, code, errs)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("%v created the database", args)
		}
	}
	if code, _, errs := runCLI(t, nil, "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: %d %q", code, errs)
	}
	code, out, errs := runCLI(t, nil, "token", "create", "--operator", "acme", "--db", db)
	secret := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(secret, "sst_") || strings.Count(out, "\n") != 1 || !strings.Contains(errs, "shown only this once") {
		t.Fatalf("create: %d %q %q", code, out, errs)
	}
	code, out, _ = runCLI(t, map[string]string{"SWARMSCORE_DB": db}, "token", "create", "--operator", "beta", "--json")
	var tok struct{ ID, Operator, Token string }
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.Operator != "beta" || tok.Token == secret {
		t.Fatalf("create --json via SWARMSCORE_DB: %d %q", code, out)
	}
	code, out, _ = runCLI(t, nil, "token", "list", "--db", db)
	if code != 0 || !strings.Contains(out, "acme") || !strings.Contains(out, tok.ID) || strings.Contains(out, secret) || strings.Contains(out, tok.Token) {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, out, _ = runCLI(t, nil, "token", "revoke", tok.ID, "--db", db); code != 0 || !strings.Contains(out, tok.ID) {
		t.Fatalf("revoke: %d %q", code, out)
	}
	code, out, _ = runCLI(t, nil, "token", "list", "--db", db, "--json")
	var list []struct {
		ID, Operator, CreatedAt string
		RevokedAt               *string `json:"revoked_at"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 2 || strings.Contains(out, secret) || strings.Contains(out, "sha") {
		t.Fatalf("list --json: %d %v %q", code, err, out)
	}
	for _, tk := range list {
		if (tk.ID == tok.ID) != (tk.RevokedAt != nil) {
			t.Fatalf("list --json: %q revoked at %v", tk.ID, tk.RevokedAt)
		}
	}
	if code, out, _ := runCLI(t, nil, "token", "revoke", tok.ID, "--db", db, "--json"); code != 0 || out != `{"id":"`+tok.ID+`","revoked":true}`+"\n" {
		t.Fatalf("revoke --json: %d %q", code, out)
	}
	_, out, _ = runCLI(t, nil, "token", "list", "--db", db)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == tok.ID && f[3] == "-":
			t.Fatalf("revoked token listed as active: %q", line)
		case len(f) == 4 && f[1] == "acme" && f[3] != "-":
			t.Fatalf("active token listed as revoked: %q", line)
		}
	}
	if code, _, errs = runCLI(t, nil, "token", "revoke", "tok-nope", "--db", db); code != ExitNotFound || !strings.Contains(errs, "tok-nope") {
		t.Fatalf("revoke unknown: %d %q", code, errs)
	}
	if code, _, errs = runCLI(t, nil, "token", "create", "--operator", "bad name", "--db", db); code != ExitUsage || !strings.Contains(errs, "operator") {
		t.Fatalf("bad operator: %d %q", code, errs)
	}
	if code, _, _ = runCLI(t, nil, "token", "create", "--db", db); code != ExitUsage {
		t.Fatalf("missing --operator: %d", code)
	}
	// Issue 28: "." and ".." are not ids, for operators and agents alike.
	for _, args := range [][]string{{"--operator", ".."}, {"--operator", "acme", "--agent", "."}, {"--operator", "acme", "--agent", ".."}} {
		code, _, errs := runCLI(t, nil, append([]string{"token", "create", "--db", db}, args...)...)
		if code != ExitUsage || !strings.Contains(errs, "path segments with a special meaning") {
			t.Errorf("token create %v: %d %q", args, code, errs)
		}
	}
}
