package web

import (
	"context"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// TestConsoleEscrow: the escrow page shows what open holds hold, the holds
// by state, and the open holds with the disputes first.
func TestConsoleEscrow(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	c := signIn(t, s, "192.0.2.1:1000")
	mustContain(t, s.get("/operator/escrow", "Cookie", c.String()).page(t, 200), "No hold is open.", "<dt>Held in escrow</dt><dd>$0</dd>")
	ctx := context.Background()
	op := service.OperatorCaller("acme")
	for _, id := range []string{"tx-a", "tx-b", "tx-c"} {
		if _, _, err := s.u.Holds.CreateHold(ctx, op, service.HoldInput{TransactionID: id, ProviderID: "agent-7", BuyerID: "buyer-9", AmountCents: 10000, Currency: "USD"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.u.Holds.ChangeHold(ctx, op, "tx-b", service.HoldAction{Action: ledger.HoldDispute, Reason: "never delivered"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.u.Holds.ChangeHold(ctx, op, "tx-c", service.HoldAction{Action: ledger.HoldRelease}); err != nil {
		t.Fatal(err)
	}
	h, err := s.u.Holds.Hold(ctx, "tx-a")
	if err != nil {
		t.Fatal(err)
	}
	body := s.get("/operator/escrow", "Cookie", c.String()).page(t, 200)
	mustContain(t, body, "<dt>Held in escrow</dt><dd>"+dollars(2*h.HoldCents)+"</dd>", "<dt>Open holds</dt><dd>2</dd>", "<dt>Disputes waiting</dt><dd>1</dd>",
		`<td class="num" data-label="released">1</td>`, "never delivered", `href="/operator/escrow" aria-current="page"`)
	if b, a := strings.Index(body, "tx-b"), strings.Index(body, "tx-a"); b < 0 || a < 0 || b > a {
		t.Error("the dispute is not listed first")
	}
	mustNotContain(t, body, "<code title=\"tx-c\">")
}
