package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/client"
)

// uploadProof posts a proof bundle with the admin token.
func uploadProof(t *testing.T, s *server, id, bundle string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", s.url+"/swarmscore/events/conduit_session/"+id+"/proof", strings.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestConduitProofs: through the real binary on both back ends, serve
// --require-proof refuses a VERIFIED session without a proof_hash
// (proof_required) and records the others; uploaded bundles are checked
// against the recorded hash (proof_matched, proof_mismatch), as is a file
// by 'swarmscore proof check'; the agent's unproven_verified_share counts
// the sessions without a matching check; ingest --require-proof refuses
// as serve does.
func TestConduitProofs(t *testing.T) {
	backEnds(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
		s := startArgs(t, dsn, []string{"--require-proof"}, env...)
		op := s.client(adminToken)
		end := time.Now().UTC().Add(-time.Minute)
		bundles := map[string]string{"pr-1": "proof bundle one", "pr-2": "proof bundle two", "pr-3": "proof bundle three"}
		var evs []client.Event
		for _, id := range []string{"pr-1", "pr-2", "pr-3"} {
			e := client.ConduitSession(id, "agent-p", "VERIFIED", end.Add(-time.Hour), end)
			sum := sha256.Sum256([]byte(bundles[id]))
			e.ProofHash = hex.EncodeToString(sum[:])
			evs = append(evs, e)
		}
		evs = append(evs, client.ConduitSession("pr-bare", "agent-p", "VERIFIED", end.Add(-time.Hour), end))
		res, err := op.IngestEvents(ctx, evs)
		if err != nil || res.Accepted != 3 || len(res.Rejected) != 1 || res.Rejected[0].ID != "pr-bare" || res.Rejected[0].Code != "proof_required" {
			t.Fatalf("ingest: %+v %v", res, err)
		}
		code, b := uploadProof(t, s, "pr-1", bundles["pr-1"])
		var c api.ProofCheck
		if code != 201 || json.Unmarshal(b, &c) != nil || c.Outcome != "proof_matched" || c.Seq != 1 || c.Size != int64(len(bundles["pr-1"])) {
			t.Fatalf("upload pr-1: %d %s", code, b)
		}
		if pc, err := op.CheckProof(ctx, "pr-2", []byte("a forged bundle")); err != nil || pc.Outcome != "proof_mismatch" || pc.Seq != 1 {
			t.Fatalf("CheckProof pr-2: %+v %v", pc, err)
		}
		if code, b := uploadProof(t, s, "no-such-session", "x"); code != 404 {
			t.Fatalf("unknown session: %d %s", code, b)
		}
		// The CLI checks a file against the same database.
		file := filepath.Join(t.TempDir(), "bundle")
		if err := os.WriteFile(file, []byte(bundles["pr-3"]), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := run(t, env, "", "proof", "check", "pr-3", file, "--db", dsn); code != 0 || !strings.Contains(out, "proof_matched") {
			t.Fatalf("proof check pr-3: %d %s %s", code, out, errOut)
		}
		if code, out, errOut := run(t, env, "", "proof", "check", "pr-2", file, "--json", "--db", dsn); code != 1 || !strings.Contains(out, `"outcome":"proof_mismatch"`) || !strings.Contains(out, `"seq":2`) {
			t.Fatalf("proof check pr-2: %d %s %s", code, out, errOut)
		}
		// Of three VERIFIED sessions, pr-2 has no matching check: 1/3.
		code, out, errOut := run(t, env, "", "agent", "signals", "agent-p", "--json", "--db", dsn)
		if code != 0 || !strings.Contains(out, `"name":"unproven_verified_share","value":0.3333333333333333`) {
			t.Fatalf("signals: %d %s %s", code, out, errOut)
		}
		nd := filepath.Join(t.TempDir(), "events.ndjson")
		line := `{"type":"conduit_session","id":"pr-cli","agent_id":"agent-p","status":"VERIFIED","started_at":"` + end.Add(-time.Hour).Format(time.RFC3339) + `","completed_at":"` + end.Format(time.RFC3339) + `"}` + "\n"
		if err := os.WriteFile(nd, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := run(t, env, "", "ingest", "--require-proof", nd, "--db", dsn); code != 1 || !strings.Contains(errOut+out, "proof_hash") {
			t.Fatalf("ingest --require-proof: %d %s %s", code, out, errOut)
		}
	})
}
