package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// testSecret is a fixed 64-character key for the tests; otherSecret a second
// one. Both have the entropy of a generated key: a repeated block would be
// refused.
const (
	testSecret  = "4d9c0e7a12f86b35c07e9a41d2b5f68e3a1c7d0b9e4f2a6c8d5b1e0f3a7c9d24"
	otherSecret = "b7e21f09c4a85d36e0f1a2b9c3d47e58a6f0b1c2d9e8a7f3b4c5d6e0f1a29b38"
)

var (
	keyEnv      = map[string]string{"SWARMSCORE_SIGNING_KEY": testSecret}
	issueArgs   = append([]string{"passport", "issue", "--agent-id", "agent-42", "--at", "2026-03-17T14:30:00Z"}, countArgs("80", "76", "40", "38")...)
	randomParts = regexp.MustCompile(`("agent_passport_id":")[0-9a-f-]{36}(")|("signature":")[0-9a-f]{64}(")`)
)

// normalizePassport blanks the random agent_passport_id and the signature
// that depends on it, leaving everything else for the golden file.
func normalizePassport(s string) string {
	return randomParts.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, `"agent_passport_id"`) {
			return `"agent_passport_id":"<uuid>"`
		}
		return `"signature":"<hmac-sha256>"`
	})
}

// issue runs `passport issue` and returns the signed document.
func issue(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	r := run(t, nil, env, args...)
	if r.code != ExitOK {
		t.Fatalf("issue: exit %d: %s", r.code, r.stderr)
	}
	return r.stdout
}

func TestPassportIssue(t *testing.T) {
	runCases(t, []cliCase{
		{name: "passport-issue", args: issueArgs, env: keyEnv, code: ExitOK, normalize: normalizePassport},
		{name: "passport-issue-platform-flag", args: append(issueArgs, "--platform", "market.example"), env: keyEnv, code: ExitOK, normalize: normalizePassport},
		{name: "passport-issue-missing-key", args: issueArgs, code: ExitUsage},
		{name: "passport-issue-short-key", args: issueArgs, env: map[string]string{"SWARMSCORE_SIGNING_KEY": "too-short-secret"}, code: ExitUsage},
		{name: "passport-issue-missing-agent", args: append([]string{"passport", "issue"}, countArgs("80", "76", "40", "38")...), env: keyEnv, code: ExitUsage},
		{name: "passport-issue-bad-agent", args: append([]string{"passport", "issue", "--agent-id", "agent 42"}, countArgs("80", "76", "40", "38")...), env: keyEnv, code: ExitUsage},
		{name: "passport-issue-bad-at", args: append(issueArgs[:len(issueArgs):len(issueArgs)], "--at", "yesterday"), env: keyEnv, code: ExitUsage},
		{name: "passport-issue-impossible-counts", args: append([]string{"passport", "issue", "--agent-id", "a"}, countArgs("80", "81", "40", "38")...), env: keyEnv, code: ExitUsage},
		{name: "passport-issue-count-above-max", args: append([]string{"passport", "issue", "--agent-id", "a"}, countArgs("9007199254740992", "1", "40", "38")...), env: keyEnv, code: ExitUsage},
	})

	// Semantics, independently of the golden files: the document verifies
	// with the key, which it names by the algorithm and the first 8 bytes of
	// the key's SHA-256, says what was asked, and has a fresh passport ID
	// each time.
	doc := issue(t, keyEnv, issueArgs...)
	sum := sha256.Sum256([]byte(testSecret))
	key, _ := passport.NewKey([]byte(testSecret))
	key, _ = key.WithID("hs256-" + hex.EncodeToString(sum[:8]))
	v := passport.Verify([]byte(strings.TrimSuffix(doc, "\n")), []passport.Key{key}, time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC))
	if !v.Valid || len(v.Warnings) != 0 {
		t.Fatalf("issued passport does not verify: %+v", v)
	}
	p := v.Passport
	want, _ := score.Compute(score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38})
	if p.AgentID != "agent-42" || p.Issuer.Platform != "swarmscore" || p.Score.Value != want.Score || p.Counts() != want.Counts ||
		!p.Issuer.ComputedAt.Equal(time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)) || !p.ExpiresAt.Equal(time.Date(2026, 3, 24, 14, 30, 0, 0, time.UTC)) {
		t.Fatalf("unexpected passport %+v", p)
	}
	if again := issue(t, keyEnv, issueArgs...); again == doc {
		t.Fatal("two issues produced the same document: agent_passport_id is not fresh")
	}
	// SWARMSCORE_PLATFORM is the default platform, as for `serve`; the flag wins.
	env := map[string]string{"SWARMSCORE_SIGNING_KEY": testSecret, "SWARMSCORE_PLATFORM": "from-env"}
	if doc := issue(t, env, issueArgs...); !strings.Contains(doc, `"platform":"from-env"`) {
		t.Fatalf("SWARMSCORE_PLATFORM ignored: %s", doc)
	}
	if doc := issue(t, env, append(issueArgs, "--platform", "from-flag")...); !strings.Contains(doc, `"platform":"from-flag"`) {
		t.Fatalf("--platform ignored: %s", doc)
	}
	// Without --at, computed_at is the current second.
	before := time.Now().UTC().Truncate(time.Second)
	now := issue(t, keyEnv, append([]string{"passport", "issue", "--agent-id", "a"}, countArgs("1", "1", "1", "1")...)...)
	v = passport.Verify([]byte(now), []passport.Key{key}, time.Now())
	if !v.Valid || v.Passport.Issuer.ComputedAt.Before(before) || v.Passport.Issuer.ComputedAt.After(time.Now()) {
		t.Fatalf("default --at: %+v", v)
	}
}

func TestPassportVerify(t *testing.T) {
	doc := issue(t, keyEnv, issueArgs...)
	const label = "<the passport from 'swarmscore " // + args of the issue
	issued := label + strings.Join(issueArgs, " ") + "'>"
	at := []string{"--at", "2026-03-20T00:00:00Z"}
	verify := func(extra ...string) []string { return append([]string{"passport", "verify"}, extra...) }
	tampered := strings.Replace(doc, `"value":760`, `"value":761`, 1)
	runCases(t, []cliCase{
		{name: "passport-verify-valid", args: verify(at...), stdin: doc, stdinLabel: issued, env: keyEnv, code: ExitOK},
		{name: "passport-verify-valid-dash", args: verify(append(at, "-")...), stdin: doc, stdinLabel: issued, env: keyEnv, code: ExitOK},
		{name: "passport-verify-expired", args: verify("--at", "2026-03-24T14:30:00Z"), stdin: doc, stdinLabel: issued, env: keyEnv, code: ExitFailure},
		{name: "passport-verify-tampered", args: verify(at...), stdin: tampered, stdinLabel: issued + ` with "value":760 changed to 761`, env: keyEnv, code: ExitFailure},
		{name: "passport-verify-other-key", args: verify(at...), stdin: doc, stdinLabel: issued, env: map[string]string{"SWARMSCORE_SIGNING_KEY": otherSecret}, code: ExitFailure},
		{name: "passport-verify-agent-mismatch", args: verify(append(at, "--agent-id", "agent-7")...), stdin: doc, stdinLabel: issued, env: keyEnv, code: ExitFailure},
		{name: "passport-verify-agent-match", args: verify(append(at, "--agent-id", "agent-42")...), stdin: doc, stdinLabel: issued, env: keyEnv, code: ExitOK},
		{name: "passport-verify-not-json", args: verify(at...), stdin: "not a passport\n", env: keyEnv, code: ExitFailure},
		{name: "passport-verify-empty", args: verify(at...), env: keyEnv, code: ExitFailure},
		{name: "passport-verify-too-large", args: verify(at...), stdin: strings.Repeat(" ", passport.MaxDocumentSize) + doc, stdinLabel: "<64 KiB of spaces, then " + issued[1:], env: keyEnv, code: ExitFailure},
		{name: "passport-verify-missing-file", args: verify(append(at, filepath.Join("no", "such", "passport.json"))...), env: keyEnv, code: ExitUsage},
		{name: "passport-verify-missing-key", args: verify(at...), stdin: doc, stdinLabel: issued, code: ExitUsage},
		{name: "passport-verify-two-files", args: verify("a.json", "b.json"), env: keyEnv, code: ExitUsage},
		{name: "passport-verify-bad-at", args: verify("--at", "2026-03-20"), stdin: doc, stdinLabel: issued, env: keyEnv, code: ExitUsage},
	})

	// A file argument reads the file.
	path := filepath.Join(t.TempDir(), "passport.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, keyEnv, append(verify(at...), path)...)
	var got struct {
		Valid             bool `json:"valid"`
		DetectedTampering bool `json:"detected_tampering"`
	}
	if r.code != ExitOK || json.Unmarshal([]byte(r.stdout), &got) != nil || !got.Valid {
		t.Fatalf("verify %s: %+v", path, r)
	}
	// The tampered document is reported as tampering, not just invalid.
	r = run(t, strings.NewReader(tampered), keyEnv, verify(at...)...)
	if r.code != ExitFailure || json.Unmarshal([]byte(r.stdout), &got) != nil || got.Valid || !got.DetectedTampering {
		t.Fatalf("tampered: %+v", r)
	}
}

// TestPassportNeverEchoesKey runs every passport failure path with
// recognisable keys and checks that no output contains them.
func TestPassportNeverEchoesKey(t *testing.T) {
	for _, secret := range []string{"short-secret-XYZZY", testSecret + "-PLUGH", otherSecret} {
		env := map[string]string{"SWARMSCORE_SIGNING_KEY": secret}
		for _, args := range [][]string{
			issueArgs,
			append([]string{"passport", "issue", "--agent-id", "bad id"}, countArgs("1", "1", "1", "1")...),
			{"passport", "verify"},
			{"passport", "verify", "missing.json"},
		} {
			r := run(t, strings.NewReader(`{"issuer":{"signature":"00"}}`), env, args...)
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Fatalf("%v printed the key: %+v", args, r)
			}
		}
	}
}
