package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/client"
)

// holdCall sends one request to a hold route with the admin token and
// returns the status and body.
func holdCall(t *testing.T, s *server, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func asHold(t *testing.T, b []byte) api.Hold {
	t.Helper()
	var h api.Hold
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return h
}

// TestEscrowHolds: through the real binary on both back ends, a
// marketplace places a hold at the provider's current score and releases
// it less the deployment's fee; the provider's chain records HELD then
// SETTLED under the transaction's id, so the marketplace's own export of
// it is a no-op and the score moves; of concurrent changes exactly one
// wins; the CLI lists and reconciles the holds, and names a hold edited
// behind the server's back; the gauges count them.
func TestEscrowHolds(t *testing.T) {
	backEnds(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
		s := startArgs(t, dsn, []string{"--platform-fee-bps", "250"}, env...)
		op, pub := s.client(adminToken), s.client("")
		if _, err := op.IngestEvents(ctx, history("agent-h")); err != nil {
			t.Fatal(err)
		}
		cert, err := pub.Certificate(ctx, "agent-h")
		if err != nil {
			t.Fatal(err)
		}
		body := `{"transaction_id":"tx-h1","provider_id":"agent-h","buyer_id":"buyer-1","amount_cents":100000,"currency":"USD"}`
		code, b := holdCall(t, s, "POST", "/swarmscore/escrow/holds", body)
		h := asHold(t, b)
		if code != 201 || h.Score != 760 || h.HoldCents != 39200 || h.ReleasedCents != 60800 || h.State != "held" ||
			h.PassportID == nil || *h.PassportID != passportID(t, cert.Raw) {
			t.Fatalf("hold: %d %s", code, b)
		}
		if code, b := holdCall(t, s, "POST", "/swarmscore/escrow/holds", body); code != 200 || asHold(t, b).Hash != h.Hash {
			t.Fatalf("repeat: %d %s", code, b)
		}
		if code, b := holdCall(t, s, "POST", "/swarmscore/escrow/holds", strings.Replace(body, "100000", "90000", 1)); code != 409 || !strings.Contains(string(b), `"code":"hold_conflict"`) {
			t.Fatalf("other amount: %d %s", code, b)
		}
		code, b = holdCall(t, s, "POST", "/swarmscore/escrow/holds/tx-h1/release", "")
		rel := asHold(t, b)
		if code != 200 || rel.State != "released" || rel.FeeCents != 2500 || rel.PayoutCents != 36700 {
			t.Fatalf("release: %d %s", code, b)
		}
		if code, b := holdCall(t, s, "POST", "/swarmscore/escrow/holds/tx-h1/cancel", ""); code != 409 || !strings.Contains(string(b), `"code":"invalid_transition"`) {
			t.Fatalf("cancel after release: %d %s", code, b)
		}
		// The marketplace's own export of the transaction: SETTLED is
		// what the ledger holds (a no-op), HELD an earlier status.
		settled := client.AP2Transaction("tx-h1", "agent-h", "buyer-1", "SETTLED", 100000, rel.CreatedAt, rel.UpdatedAt)
		held := client.AP2Transaction("tx-h1", "agent-h", "buyer-1", "HELD", 100000, rel.CreatedAt, rel.CreatedAt)
		held.SettledAt = nil
		if res, err := op.IngestEvents(ctx, []client.Event{settled, held}); err != nil || res.Duplicates != 1 || res.Superseded != 1 {
			t.Fatalf("the marketplace's export: %+v %v", res, err)
		}
		// 39 of 41 settled: floor(600 · 39/41 · 0.82) = 468, plus 304,
		// once the second of the release is past (a score counts the
		// events ended by its computed_at, a whole second).
		time.Sleep(time.Until(rel.UpdatedAt.Truncate(time.Second).Add(time.Second)))
		if sc, err := pub.Score(ctx, "agent-h"); err != nil || sc.Score != 772 {
			t.Fatalf("score after the release: %+v %v", sc, err)
		}

		// Concurrent changes of one hold: exactly one wins.
		if code, b := holdCall(t, s, "POST", "/swarmscore/escrow/holds", strings.Replace(body, "tx-h1", "tx-h2", 1)); code != 201 {
			t.Fatalf("hold 2: %d %s", code, b)
		}
		var wg sync.WaitGroup
		codes := make(chan int, 9)
		for i := range 9 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, _ := holdCall(t, s, "POST", "/swarmscore/escrow/holds/tx-h2/"+[]string{"release", "cancel", "dispute"}[i%3], "")
				codes <- c
			}()
		}
		wg.Wait()
		close(codes)
		won := 0
		for c := range codes {
			switch c {
			case 200:
				won++
			case 409:
			default:
				t.Errorf("a concurrent change answered %d", c)
			}
		}
		if won != 1 {
			t.Fatalf("%d concurrent changes won, want 1", won)
		}
		if code, b := holdCall(t, s, "POST", "/swarmscore/escrow/holds", strings.Replace(body, "tx-h1", "tx-h3", 1)); code != 201 {
			t.Fatalf("hold 3: %d %s", code, b)
		}
		m, err := pub.Metrics(ctx)
		if err != nil || !strings.Contains(m, `swarmscore_escrow_holds{state="released"}`) || !strings.Contains(m, "swarmscore_escrow_held_cents ") {
			t.Fatalf("metrics: %v\n%s", err, m)
		}

		// The CLI on the same database.
		code, out, errOut := run(t, env, "", "escrow", "list", "--json", "--db", dsn)
		var list api.HoldList
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Holds) != 3 || list.Holds[0].TransactionID != "tx-h1" {
			t.Fatalf("escrow list: %d %s %s", code, out, errOut)
		}
		if code, out, errOut := run(t, env, "", "escrow", "dispute", "tx-h3", "--reason", "not delivered", "--db", dsn); code != 0 || !strings.Contains(out, "disputed") {
			t.Fatalf("escrow dispute: %d %s %s", code, out, errOut)
		}
		if code, out, errOut := run(t, env, "", "escrow", "resolve", "tx-h3", "--outcome", "refunded", "--json", "--db", dsn); code != 0 || asHold(t, []byte(out)).RefundCents != asHold(t, []byte(out)).HoldCents || asHold(t, []byte(out)).Score != 772 {
			t.Fatalf("escrow resolve: %d %s %s", code, out, errOut)
		}
		if code, out, errOut := run(t, env, "", "escrow", "release", "tx-h3", "--db", dsn); code != 5 || !strings.Contains(errOut, "cannot be released") {
			t.Fatalf("escrow release of a refunded hold: %d %s %s", code, out, errOut)
		}
		code, out, errOut = run(t, env, "", "escrow", "reconcile", "--json", "--db", dsn)
		var rec api.Reconciliation
		if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || !rec.Balanced || rec.Holds != 3 || rec.HeldCents != 39200+2*38240 ||
			rec.PayoutCents+rec.FeeCents+rec.RefundCents+rec.OpenCents != rec.HeldCents {
			t.Fatalf("escrow reconcile: %d %s %s", code, out, errOut)
		}
		if code, out, errOut := run(t, env, "", "ledger", "verify", "--db", dsn); code != 0 || !strings.Contains(out, "every chain is intact") {
			t.Fatalf("ledger verify: %d %s %s", code, out, errOut)
		}
		// A chargeback of the released tx-h1 reaches its hold (ERRATA E65):
		// refunded whole, by a step naming the correction; the books still
		// balance.
		cb, err := op.Correct(ctx, client.CorrectionRequest{EventType: "ap2_transaction", EventID: "tx-h1", Action: "status", Status: "REFUNDED", Reason: "chargeback"})
		if err != nil {
			t.Fatal(err)
		}
		if g, err := op.GetHold(ctx, "tx-h1"); err != nil || g.State != "refunded" || g.RefundCents != g.HoldCents || g.PayoutCents != 0 || g.FeeCents != 0 || g.Seq != 3 || g.CorrectionID != cb.ID {
			t.Fatalf("the charged-back hold: %+v %v", g, err)
		}
		if code, out, errOut := run(t, env, "", "escrow", "reconcile", "--db", dsn); code != 0 {
			t.Fatalf("reconcile after the chargeback: %d %s %s", code, out, errOut)
		}
		// The provider's audit bundle holds the transaction's HELD and
		// SETTLED records and its holds with the passport that priced them
		// (the certificate fetched above), and verifies offline; a hold
		// whose score is raised in the bundle fails, named.
		code, bundle, errOut := run(t, env, "", "audit", "export", "agent-h", "--db", dsn)
		if code != 0 || strings.Count(bundle, `"tx-h1"`) < 3 || !strings.Contains(bundle, `"correction":"`+cb.ID+`"`) || !strings.Contains(bundle, `"hold_passports":[`) || !strings.Contains(bundle, passportID(t, cert.Raw)) {
			t.Fatalf("audit export: %d %s", code, errOut)
		}
		bundleFile := filepath.Join(t.TempDir(), "agent-h.audit.json")
		if err := os.WriteFile(bundleFile, []byte(bundle), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := run(t, env, "", "audit", "verify", bundleFile); code != 0 || !strings.Contains(out, "every check passed") ||
			!strings.Contains(out, "holds     3 checked:") {
			t.Fatalf("audit verify: %d %s %s", code, out, errOut)
		}
		tampered := strings.Replace(bundle, `"score":772,"seq":1`, `"score":900,"seq":1`, 1)
		if tampered == bundle {
			t.Fatal("the bundle has no hold step at score 772")
		}
		if err := os.WriteFile(bundleFile, []byte(tampered), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := run(t, env, "", "audit", "verify", bundleFile); code != 1 || !strings.Contains(out, "DISCREPANCY hold_") {
			t.Fatalf("audit verify of a tampered hold: %d %s %s", code, out, errOut)
		}
		// The public client does the same.
		ph, err := op.PlaceHold(ctx, client.HoldRequest{TransactionID: "tx-h4", ProviderID: "agent-h", BuyerID: "buyer-2", AmountCents: 5000, Currency: "USD"})
		if err != nil || !ph.Created || ph.State != "held" {
			t.Fatalf("PlaceHold: %+v %v", ph, err)
		}
		if again, err := op.PlaceHold(ctx, client.HoldRequest{TransactionID: "tx-h4", ProviderID: "agent-h", BuyerID: "buyer-2", AmountCents: 5000, Currency: "USD"}); err != nil || again.Created {
			t.Fatalf("PlaceHold again: %+v %v", again, err)
		}
		if c, err := op.ChangeHold(ctx, "tx-h4", "cancel", client.HoldChange{Reason: "the buyer withdrew"}); err != nil || c.State != "cancelled" || c.RefundCents != c.HoldCents {
			t.Fatalf("ChangeHold: %+v %v", c, err)
		}
		if _, err := op.ChangeHold(ctx, "tx-h4", "release", client.HoldChange{}); !client.IsProblem(err, client.ProblemConflict) {
			t.Fatalf("release of a cancelled hold: %v", err)
		}
		if g, err := op.GetHold(ctx, "tx-h4"); err != nil || g.State != "cancelled" || g.Seq != 2 {
			t.Fatalf("GetHold: %+v %v", g, err)
		}
		// Someone with database access lowers a payout.
		tp := newTamperer(t, dsn)
		tp.exec(`UPDATE escrow_holds SET payout_cents = payout_cents - 100, fee_cents = fee_cents + 100 WHERE transaction_id = 'tx-h1'`)
		if code, out, errOut := run(t, env, "", "escrow", "reconcile", "--db", dsn); code != 1 || !strings.Contains(out, "BROKEN tx-h1") {
			t.Fatalf("reconcile after tampering: %d %s %s", code, out, errOut)
		}
	})
}
