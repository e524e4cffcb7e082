package cli

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const auditKey = "0123456789abcdef0123456789abcdef-cli-audit"

func TestAuditCommands(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "audit.db")
	env := map[string]string{"SWARMSCORE_DB": db, "SWARMSCORE_SIGNING_KEY": auditKey}
	noKey := map[string]string{"SWARMSCORE_DB": db}
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	must := func(r result, code int, what string) result {
		t.Helper()
		if r.code != code {
			t.Fatalf("%s: exit %d, want %d\nstdout %s\nstderr %s", what, r.code, code, r.stdout, r.stderr)
		}
		checkStderr(t, r)
		return r
	}
	must(run(t, nil, env, "migrate"), ExitOK, "migrate")
	must(run(t, strings.NewReader(cliEvents()), env, "ingest", "--operator", "market-1", "-"), ExitFailure, "ingest (one bad line)")

	// The key is needed to sign the current certificate.
	must(run(t, nil, noKey, "audit", "export", "agent-1"), ExitUsage, "export without a key")
	bundle := must(run(t, nil, env, "audit", "export", "agent-1"), ExitOK, "export").stdout
	if !strings.HasPrefix(bundle, `{"type":"swarmscore-audit/v1",`) || !strings.Contains(bundle, `"market-1"`) {
		t.Fatalf("bundle %.200s", bundle)
	}
	path := file("agent-1.audit.json", bundle)
	out := must(run(t, nil, env, "audit", "verify", path), ExitOK, "verify").stdout
	for _, want := range []string{"agent-1", "every check passed", "no_checkpoint: the bundle has no checkpoint", " verified\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
	var rep struct {
		Valid  bool           `json:"valid"`
		Events map[string]int `json:"events"`
		Counts map[string]int `json:"counts"`
	}
	j := must(run(t, strings.NewReader(bundle), env, "audit", "verify", "--json", "-"), ExitOK, "verify --json -").stdout
	if err := json.Unmarshal([]byte(j), &rep); err != nil || !rep.Valid || rep.Events["counted"] != 3 || rep.Counts["conduit_total"] != 2 {
		t.Fatalf("report %s: %v", j, err)
	}

	// One altered record is named, with exit 1 and one line on stderr.
	chains := strings.Index(bundle, `"chains":[`)
	altered := file("altered.json", bundle[:chains]+strings.Replace(bundle[chains:], `"status":"FAILED"`, `"status":"VERIFIED"`, 1))
	r := must(run(t, nil, env, "audit", "verify", altered), ExitFailure, "altered")
	if !strings.Contains(r.stdout, "DISCREPANCY chain_link: agent agent-1 seq ") || !strings.Contains(r.stderr, "does not verify: chain_link") {
		t.Errorf("altered: %s %s", r.stdout, r.stderr)
	}
	r = must(run(t, nil, env, "audit", "verify", file("garbage.json", `{"type":`)), ExitFailure, "malformed")
	if !strings.Contains(r.stdout, "DISCREPANCY malformed_bundle") {
		t.Errorf("malformed: %s", r.stdout)
	}
	// Another key: the passport's signature fails.
	other := map[string]string{"SWARMSCORE_SIGNING_KEY": strings.Repeat("k", 32)}
	if r := must(run(t, nil, other, "audit", "verify", path), ExitFailure, "other key"); !strings.Contains(r.stdout, "passport_invalid") {
		t.Errorf("other key: %s", r.stdout)
	}

	// Withheld identifiers, and their openings.
	openings := filepath.Join(dir, "openings.json")
	w := must(run(t, nil, env, "audit", "export", "agent-1", "--withhold", "buyers,operators", "--openings", openings), ExitOK, "withhold").stdout
	if strings.Contains(w, "market-1") || strings.Contains(w, "b-1") {
		t.Fatal("identifiers not withheld")
	}
	if fi, err := os.Stat(openings); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("openings file: %v %v", fi, err)
	}
	wpath := file("withheld.json", w)
	if r := must(run(t, nil, env, "audit", "verify", wpath), ExitOK, "verify withheld"); !strings.Contains(r.stdout, "withheld: 3 of 3 records withhold members (buyers, operators)") {
		t.Errorf("withheld: %s", r.stdout)
	}
	if r := must(run(t, nil, env, "audit", "verify", "--openings", openings, "--json", wpath), ExitOK, "verify opened"); !strings.Contains(r.stdout, `"warnings":[{"code":"no_checkpoint"`) {
		t.Errorf("opened: %s", r.stdout)
	}

	// As of an instant: the window ends there.
	past := time.Now().UTC().Add(-48 * time.Hour).Format(time.RFC3339)
	if r := must(run(t, nil, noKey, "audit", "export", "agent-1", "--as-of", past), ExitOK, "as of"); !strings.Contains(r.stdout, `"as_of":"`+past+`"`) ||
		!strings.Contains(r.stdout, `"passport":null`) {
		t.Errorf("as of: %.400s", r.stdout)
	}

	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		code int
	}{
		{"unknown agent", env, []string{"audit", "export", "ghost"}, ExitNotFound},
		{"unknown category", env, []string{"audit", "export", "agent-1", "--withhold", "emails"}, ExitUsage},
		{"openings without withholding", env, []string{"audit", "export", "agent-1", "--openings", openings}, ExitUsage},
		{"future as of", env, []string{"audit", "export", "agent-1", "--as-of", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, ExitUsage},
		{"bad as of", env, []string{"audit", "export", "agent-1", "--as-of", "yesterday"}, ExitUsage},
		{"verify without a key", noKey, []string{"audit", "verify", path}, ExitUsage},
		{"verify a missing file", env, []string{"audit", "verify", filepath.Join(dir, "missing.json")}, ExitUsage},
		{"verify a short key", map[string]string{"SWARMSCORE_SIGNING_KEY": "short"}, []string{"audit", "verify", path}, ExitUsage},
		{"verify a bad key set", env, []string{"audit", "verify", "--keys", file("keys.json", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"AA"}]}`), path}, ExitUsage},
		{"audit alone", env, []string{"audit"}, ExitUsage},
	} {
		t.Run(c.name, func(t *testing.T) { must(run(t, nil, c.env, c.args...), c.code, c.name) })
	}

	// A key set alone (public keys) checks no HMAC passport.
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	set := file("set.json", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"ckpt-ed","x":"`+base64.RawURLEncoding.EncodeToString(pub)+`"}]}`)
	if r := must(run(t, nil, noKey, "audit", "verify", "--keys", set, path), ExitFailure, "key set only"); !strings.Contains(r.stdout, "passport_invalid") {
		t.Errorf("key set only: %s", r.stdout)
	}
}
