package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/client"
)

// TestVerifyChecks: the verify route says what it checked. A passport the
// ledger confirms and one for an agent this server has never seen are
// both valid, and told apart by the ledger check; the bare passport may be
// posted, and the agent may be left out.
func TestVerifyChecks(t *testing.T) {
	ctx := context.Background()
	s := start(t, "sqlite:"+filepath.Join(t.TempDir(), "swarmscore.db"),
		"SWARMSCORE_ADMIN_TOKEN="+adminToken, "SWARMSCORE_SIGNING_KEY="+signingKey)
	if _, err := s.client(adminToken).IngestEvents(ctx, history("agent-v")); err != nil {
		t.Fatal(err)
	}
	anon := s.client("")
	own, err := anon.Certificate(ctx, "agent-v")
	if err != nil {
		t.Fatal(err)
	}
	// Signed with the server's key by the CLI, for an agent the server has
	// never seen.
	code, stranger, errs := run(t, []string{"SWARMSCORE_SIGNING_KEY=" + signingKey}, "", "passport", "issue", "--agent-id", "agent-elsewhere",
		"--conduit-total", "10", "--conduit-success", "9", "--ap2-total", "0", "--ap2-success", "0")
	if code != 0 {
		t.Fatalf("passport issue: %d %s", code, errs)
	}

	checks := func(v *client.Verification) string {
		var b strings.Builder
		for _, c := range []string{client.CheckSignature, client.CheckConsistency, client.CheckExpiry, client.CheckLedger, client.CheckAgent} {
			b.WriteString(string(v.Checks.Result(c)) + " ")
		}
		return strings.TrimSpace(b.String())
	}
	for _, c := range []struct {
		doc   string
		agent string
		valid bool
		want  string
	}{
		{string(own.Raw), "agent-v", true, "ok ok ok confirmed ok"},
		{string(own.Raw), "", true, "ok ok ok confirmed not_applicable"},
		{strings.TrimSpace(stranger), "agent-elsewhere", true, "ok ok ok not_applicable ok"},
		{strings.TrimSpace(stranger), "agent-v", false, "ok ok ok not_applicable mismatch"},
		{strings.Replace(string(own.Raw), `"value":760`, `"value":761`, 1), "agent-v", false, "failed failed ok confirmed ok"},
	} {
		v, err := anon.Verify(ctx, []byte(c.doc), c.agent)
		if err != nil || v.Valid != c.valid || checks(v) != c.want || v.Warnings == nil {
			t.Errorf("%.40s… for %q: %+v %v, checks %q, want %q", c.doc, c.agent, v, err, checks(v), c.want)
		}
	}

	// The bare passport, exactly as the certificate route served it.
	resp, err := http.Post(s.url+"/swarmscore/verify", "application/json", strings.NewReader(string(own.Raw)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v client.Verification
	if err := json.Unmarshal(b, &v); err != nil || resp.StatusCode != 200 || !v.Valid || checks(&v) != "ok ok ok confirmed not_applicable" ||
		!strings.Contains(string(b), `"warnings":[]`) {
		t.Fatalf("bare passport: %d %s", resp.StatusCode, b)
	}
	// A body that is neither says what was expected.
	resp, err = http.Post(s.url+"/swarmscore/verify", "application/json", strings.NewReader(`{"agent_id":"agent-v"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `expected a passport, or {\"certificate\": <passport>, \"agent_id\": \"<optional agent id>\"}`) {
		t.Fatalf("neither form: %d %s", resp.StatusCode, b)
	}
	s.stop()
}
