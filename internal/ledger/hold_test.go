package ledger

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/score"
)

var holdAt = time.Date(2026, 11, 1, 12, 0, 0, 123456789, time.UTC)

func createReq(amount int64, sc int) HoldRequest {
	return HoldRequest{Action: HoldCreate, TransactionID: "tx", Operator: "op", At: holdAt, ProviderID: "prov", BuyerID: "buyer",
		AmountCents: amount, Currency: "USD", Price: HoldPrice{Score: sc, Tier: score.TierStandard, PassportID: "pp", KID: "k"}}
}

func TestPlatformFee(t *testing.T) {
	for _, c := range []struct {
		amount, hold int64
		bps          int
		want         int64
	}{
		{100000, 39200, 250, 2500},
		{12345, 12345, 250, 308},   // 308.625 rounds down
		{100000, 2500, 5000, 2500}, // never more than the hold
		{MaxEscrowCents, MaxEscrowCents, MaxFeeBPS, MaxEscrowCents},
		{MaxEscrowCents, MaxEscrowCents, 1, MaxEscrowCents / 10000},
		{1, 1, 9999, 0},
	} {
		if got := PlatformFee(c.amount, c.hold, c.bps); got != c.want {
			t.Errorf("PlatformFee(%d, %d, %d) = %d, want %d", c.amount, c.hold, c.bps, got, c.want)
		}
	}
	if CheckFeeBPS(-1) == nil || CheckFeeBPS(10001) == nil || CheckFeeBPS(10000) != nil {
		t.Error("CheckFeeBPS bounds")
	}
}

func TestDecideHoldCreate(t *testing.T) {
	req := createReq(100000, 760)
	ch, err := DecideHold(nil, &req)
	if err != nil {
		t.Fatal(err)
	}
	h := ch.Hold
	if !ch.Created || h.HoldCents != 39200 || h.ReleasedCents != 60800 || h.Modifier != 3920 || h.State != HoldHeld || h.Seq != 1 ||
		!h.CreatedAt.Equal(holdAt.Truncate(time.Microsecond)) {
		t.Fatalf("created %+v", h)
	}
	if ch.Event == nil || ch.Event.Status != Held || ch.Event.EscrowAmountCents != 100000 || ch.Event.AgentID != "prov" {
		t.Fatalf("event %+v", ch.Event)
	}
	// Rounded up: a third of a cent held is a cent.
	odd := createReq(1, 0)
	if ch, _ := DecideHold(nil, &odd); ch.Hold.HoldCents != 1 {
		t.Errorf("hold of 1 cent at score 0: %d", ch.Hold.HoldCents)
	}
	if again, err := DecideHold(&h, &req); err != nil || !again.Unchanged || again.Hold != h {
		t.Errorf("repeat: %+v, %v", again, err)
	}
	for name, mod := range map[string]func(r *HoldRequest){
		"amount": func(r *HoldRequest) { r.AmountCents++ },
		"buyer":  func(r *HoldRequest) { r.BuyerID = "other" },
	} {
		r := createReq(100000, 760)
		mod(&r)
		if _, err := DecideHold(&h, &r); errkind.Code(err) != HoldConflictCode || errkind.Of(err) != errkind.Conflict {
			t.Errorf("%s differs: %v", name, err)
		}
	}
	for name, mod := range map[string]func(r *HoldRequest){
		"currency":  func(r *HoldRequest) { r.Currency = "EUR" },
		"zero":      func(r *HoldRequest) { r.AmountCents = 0 },
		"too large": func(r *HoldRequest) { r.AmountCents = MaxEscrowCents + 1 },
		"self":      func(r *HoldRequest) { r.BuyerID = "prov" },
		"id":        func(r *HoldRequest) { r.TransactionID = "a b" },
	} {
		r := createReq(100000, 760)
		mod(&r)
		_, err := DecideHold(nil, &r)
		if errkind.Of(err) != errkind.Invalid {
			t.Errorf("%s: %v", name, err)
		}
		if name == "currency" && errkind.Code(err) != UnsupportedCurrencyCode {
			t.Errorf("currency: code %q", errkind.Code(err))
		}
	}
}

// TestDecideHoldTransitions walks every action from every state: the
// allowed ones move the hold and report what ERRATA E56 says, the others
// are invalid_transition, and every resulting chain verifies.
func TestDecideHoldTransitions(t *testing.T) {
	type want struct {
		state  HoldState
		status Status // "" for no event
	}
	allowed := map[HoldState]map[HoldAction]want{
		HoldHeld:     {HoldRelease: {HoldReleased, Settled}, HoldDispute: {HoldDisputed, ""}, HoldCancel: {HoldCancelled, Cancelled}},
		HoldDisputed: {HoldResolve: {HoldSettled, Settled}},
	}
	reach := func(t *testing.T, s HoldState) (Hold, []HoldStep) {
		req := createReq(100000, 760)
		ch, err := DecideHold(nil, &req)
		if err != nil {
			t.Fatal(err)
		}
		steps := []HoldStep{ch.Step}
		path := map[HoldState][]HoldRequest{
			HoldReleased:  {{Action: HoldRelease}},
			HoldDisputed:  {{Action: HoldDispute, Reason: "late"}},
			HoldSettled:   {{Action: HoldDispute}, {Action: HoldResolve, Outcome: HoldSettled, HasFee: true, FeeCents: 100}},
			HoldRefunded:  {{Action: HoldDispute}, {Action: HoldResolve, Outcome: HoldRefunded}},
			HoldCancelled: {{Action: HoldCancel}},
		}[s]
		h := ch.Hold
		for _, r := range path {
			r.TransactionID, r.Operator, r.At = "tx", "op", holdAt.Add(time.Hour)
			c, err := DecideHold(&h, &r)
			if err != nil {
				t.Fatal(err)
			}
			h, steps = c.Hold, append(steps, c.Step)
		}
		return h, steps
	}
	for _, s := range HoldStates {
		for _, a := range []HoldAction{HoldRelease, HoldDispute, HoldResolve, HoldCancel} {
			h, steps := reach(t, s)
			if err := VerifyHold(&h, steps); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			req := HoldRequest{Action: a, TransactionID: "tx", Operator: "op", At: holdAt.Add(2 * time.Hour), Outcome: HoldSettled, FeeBPS: 100}
			ch, err := DecideHold(&h, &req)
			w, ok := allowed[s][a]
			if !ok {
				if errkind.Code(err) != InvalidTransitionCode {
					t.Errorf("%s from %s: %v, want invalid_transition", a, s, err)
				}
				continue
			}
			if err != nil || ch.Hold.State != w.state {
				t.Errorf("%s from %s: %+v, %v", a, s, ch.Hold, err)
				continue
			}
			if (ch.Event == nil) != (w.status == "") || ch.Event != nil && ch.Event.Status != w.status {
				t.Errorf("%s from %s: event %+v, want %q", a, s, ch.Event, w.status)
			}
			if ch.Event != nil {
				if err := ch.Event.Validate(); err != nil {
					t.Errorf("%s from %s: event invalid: %v", a, s, err)
				}
			}
			if err := VerifyHold(&ch.Hold, append(steps, ch.Step)); err != nil {
				t.Errorf("%s from %s: %v", a, s, err)
			}
		}
	}
}

func TestVerifyHoldCatches(t *testing.T) {
	req := createReq(100000, 760)
	ch, _ := DecideHold(nil, &req)
	rel := HoldRequest{Action: HoldRelease, TransactionID: "tx", Operator: "op", At: holdAt.Add(time.Hour), FeeBPS: 250}
	ch2, err := DecideHold(&ch.Hold, &rel)
	if err != nil {
		t.Fatal(err)
	}
	steps := []HoldStep{ch.Step, ch2.Step}
	for name, mod := range map[string]func(h *Hold, s []HoldStep){
		"score":        func(h *Hold, s []HoldStep) { h.Score = 999 },
		"passport":     func(h *Hold, s []HoldStep) { h.PassportID = "other" },
		"payout":       func(h *Hold, s []HoldStep) { h.PayoutCents++; s[1].PayoutCents++ },
		"state":        func(h *Hold, s []HoldStep) { h.State = HoldHeld },
		"step removed": func(h *Hold, s []HoldStep) { s[1] = s[0] },
		"money":        func(h *Hold, s []HoldStep) { h.ReleasedCents-- },
	} {
		h := ch2.Hold
		s := append([]HoldStep(nil), steps...)
		mod(&h, s)
		if VerifyHold(&h, s) == nil {
			t.Errorf("%s: an altered hold verifies", name)
		}
	}
	h := ch2.Hold
	if err := VerifyHold(&h, steps); err != nil {
		t.Error(err)
	}
}

// TestHoldContentIsJCS: the contents the hold and proof chains hash are
// RFC 8785 canonical JSON, as an independent implementation writes them,
// for reasons with any text.
func TestHoldContentIsJCS(t *testing.T) {
	req := createReq(100000, 760)
	ch, err := DecideHold(nil, &req)
	if err != nil {
		t.Fatal(err)
	}
	for _, reason := range []string{"", "plain", "quote \" backslash \\ <tag> & é ☃ 😀 \u2028", "tab\tand newline\n"} {
		h := ch.Hold
		h.Reason = reason
		st := ch.Step
		st.Reason = reason
		got := HoldContent(&h, &st)
		want, err := jcs.Transform(got)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("reason %q: %s\nJCS: %s (%v)", reason, got, want, err)
		}
	}
	c, err := DecideProof("s-1", strings.Repeat("a", 64), strings.Repeat("b", 64), 10, "op <x>", holdAt, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Content()
	if want, err := jcs.Transform(got); err != nil || !bytes.Equal(got, want) {
		t.Errorf("proof check: %s\nJCS: %s (%v)", got, want, err)
	}
}
