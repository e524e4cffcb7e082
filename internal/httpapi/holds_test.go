package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// The fake has no holds: every route answers as for an unknown hold, and
// the gauges read zero.
func (f *fake) CreateHold(ctx context.Context, c service.Caller, in service.HoldInput) (ledger.Hold, bool, error) {
	return ledger.Hold{}, false, fmt.Errorf("%w: no holds in this fake", errkind.ErrUnavailable)
}
func (f *fake) ChangeHold(ctx context.Context, c service.Caller, id string, a service.HoldAction) (ledger.Hold, error) {
	return ledger.Hold{}, fmt.Errorf("%w: no holds in this fake", errkind.ErrNotFound)
}
func (f *fake) Hold(ctx context.Context, id string) (ledger.Hold, error) {
	return ledger.Hold{}, fmt.Errorf("%w: no holds in this fake", errkind.ErrNotFound)
}
func (f *fake) Holds(ctx context.Context, q service.HoldQuery) ([]ledger.Hold, error) {
	return nil, nil
}
func (f *fake) HoldStats(ctx context.Context) (service.HoldStats, error) {
	return service.HoldStats{ByState: map[ledger.HoldState]int64{}}, nil
}

func (f *fake) CheckProof(ctx context.Context, c service.Caller, eventID string, bundle io.Reader) (ledger.ProofCheck, error) {
	return ledger.ProofCheck{}, fmt.Errorf("%w: no sessions in this fake", errkind.ErrNotFound)
}

func decodeHold(t *testing.T, r response) api.Hold {
	t.Helper()
	var h api.Hold
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return h
}

func problemCode(t *testing.T, r response) string {
	t.Helper()
	var p Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return p.Code
}

// TestHolds: a hold is placed at the provider's current score (201, then
// 200 for the same request, 409 hold_conflict for other terms, 400
// unsupported_currency), released less the deployment's fee, refused a
// second move (409 invalid_transition), listed and counted by the gauges;
// a viewer reads but may not hold.
func TestHolds(t *testing.T) {
	h := newRightsHarness(t, func(c *service.Config) { c.PlatformFeeBPS = 250 })
	auth := []string{"Authorization", "Bearer " + h.opTok, "Content-Type", "application/json"}
	body := `{"transaction_id":"tx-1","provider_id":"agent-1","buyer_id":"buyer-9","amount_cents":100000,"currency":"USD"}`
	r := h.do("POST", "/swarmscore/escrow/holds", strings.NewReader(body), auth...)
	if r.code != http.StatusCreated || r.header.Get("Location") != "/swarmscore/escrow/holds/tx-1" {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	created := decodeHold(t, r)
	quote := h.do("POST", "/swarmscore/agent-1/escrow", strings.NewReader(`{"amount_cents":100000}`), auth...)
	var q api.Escrow
	json.Unmarshal(quote.body, &q)
	if created.State != "held" || created.HoldCents != q.HoldCents || created.Score != q.Score || created.PassportID == nil || created.KID != nil && *created.KID == "" {
		t.Fatalf("created %+v, quote %+v", created, q)
	}
	if r := h.do("POST", "/swarmscore/escrow/holds", strings.NewReader(body), auth...); r.code != http.StatusOK || !reflect.DeepEqual(decodeHold(t, r), created) {
		t.Fatalf("repeat: %d %s", r.code, r.body)
	}
	other := strings.Replace(body, "100000", "100001", 1)
	if r := h.do("POST", "/swarmscore/escrow/holds", strings.NewReader(other), auth...); r.code != http.StatusConflict || problemCode(t, r) != "hold_conflict" {
		t.Fatalf("other terms: %d %s", r.code, r.body)
	}
	eur := strings.Replace(strings.Replace(body, "USD", "EUR", 1), "tx-1", "tx-2", 1)
	if r := h.do("POST", "/swarmscore/escrow/holds", strings.NewReader(eur), auth...); r.code != http.StatusBadRequest || problemCode(t, r) != "unsupported_currency" {
		t.Fatalf("EUR: %d %s", r.code, r.body)
	}
	r = h.do("POST", "/swarmscore/escrow/holds/tx-1/release", nil, auth...)
	rel := decodeHold(t, r)
	if r.code != http.StatusOK || rel.State != "released" || rel.FeeCents != 2500 || rel.PayoutCents != created.HoldCents-2500 {
		t.Fatalf("release: %d %s", r.code, r.body)
	}
	for _, a := range []string{"release", "dispute", "cancel"} {
		if r := h.do("POST", "/swarmscore/escrow/holds/tx-1/"+a, strings.NewReader(`{}`), auth...); r.code != http.StatusConflict || problemCode(t, r) != "invalid_transition" {
			t.Errorf("%s after release: %d %s", a, r.code, r.body)
		}
	}
	if r := h.do("POST", "/swarmscore/escrow/holds/tx-1/resolve", strings.NewReader(`{"outcome":"won"}`), auth...); r.code != http.StatusBadRequest {
		t.Errorf("resolve to won: %d %s", r.code, r.body)
	}
	if r := h.do("POST", "/swarmscore/escrow/holds/nope/release", nil, auth...); r.code != http.StatusNotFound {
		t.Errorf("unknown hold: %d %s", r.code, r.body)
	}
	// A second hold, disputed and refunded, and a third held.
	for _, id := range []string{"tx-3", "tx-4"} {
		b := strings.Replace(body, "tx-1", id, 1)
		if r := h.do("POST", "/swarmscore/escrow/holds", strings.NewReader(b), auth...); r.code != http.StatusCreated {
			t.Fatalf("%s: %d %s", id, r.code, r.body)
		}
	}
	h.do("POST", "/swarmscore/escrow/holds/tx-3/dispute", strings.NewReader(`{"reason":"not delivered"}`), auth...)
	r = h.do("POST", "/swarmscore/escrow/holds/tx-3/resolve", strings.NewReader(`{"outcome":"refunded","reason":"the buyer wins"}`), auth...)
	if res := decodeHold(t, r); r.code != http.StatusOK || res.State != "refunded" || res.RefundCents != res.HoldCents || res.Score <= created.Score || res.Reason != "the buyer wins" {
		t.Fatalf("resolve: %d %s", r.code, r.body)
	}
	r = h.do("GET", "/swarmscore/escrow/holds?state=held", nil, auth...)
	var list api.HoldList
	if json.Unmarshal(r.body, &list); r.code != http.StatusOK || len(list.Holds) != 1 || list.Holds[0].TransactionID != "tx-4" {
		t.Fatalf("list held: %d %s", r.code, r.body)
	}
	if r := h.do("GET", "/swarmscore/escrow/holds?state=lost", nil, auth...); r.code != http.StatusBadRequest {
		t.Errorf("list lost: %d", r.code)
	}
	if r := h.do("GET", "/swarmscore/escrow/holds/tx-3", nil, auth...); r.code != http.StatusOK || decodeHold(t, r).State != "refunded" {
		t.Errorf("show: %d %s", r.code, r.body)
	}
	held := list.Holds[0]
	m := string(h.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		fmt.Sprintf("swarmscore_escrow_held_cents %d", held.HoldCents),
		`swarmscore_escrow_holds{state="held"} 1`, `swarmscore_escrow_holds{state="released"} 1`,
		`swarmscore_escrow_holds{state="refunded"} 1`, `swarmscore_escrow_holds{state="settled"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	viewer, err := h.u.Tokens.CreateToken(context.Background(), "acme", "viewer")
	if err != nil {
		t.Fatal(err)
	}
	vh := []string{"Authorization", "Bearer " + viewer.Secret, "Content-Type", "application/json"}
	if r := h.do("GET", "/swarmscore/escrow/holds/tx-1", nil, vh...); r.code != http.StatusOK {
		t.Errorf("viewer reads: %d", r.code)
	}
	if r := h.do("POST", "/swarmscore/escrow/holds/tx-4/cancel", nil, vh...); r.code != http.StatusForbidden {
		t.Errorf("viewer cancels: %d", r.code)
	}
}

// TestHoldsRace: concurrent changes of one hold through the API, exactly
// one 200, the others 409 invalid_transition.
func TestHoldsRace(t *testing.T) {
	h := newRightsHarness(t)
	auth := []string{"Authorization", "Bearer " + h.opTok, "Content-Type", "application/json"}
	body := `{"transaction_id":"tx-r","provider_id":"agent-2","buyer_id":"buyer-9","amount_cents":5000,"currency":"USD"}`
	if r := h.do("POST", "/swarmscore/escrow/holds", strings.NewReader(body), auth...); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := []string{"release", "cancel", "dispute"}[i%3]
			codes <- h.do("POST", "/swarmscore/escrow/holds/tx-r/"+a, nil, auth...).code
		}()
	}
	wg.Wait()
	close(codes)
	won := 0
	for c := range codes {
		switch c {
		case http.StatusOK:
			won++
		case http.StatusConflict:
		default:
			t.Errorf("a concurrent change answered %d", c)
		}
	}
	if won != 1 {
		t.Errorf("%d concurrent changes won, want 1", won)
	}
}
