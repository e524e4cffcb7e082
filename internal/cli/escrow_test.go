package cli

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/swarmscore/swarmscore/score"
)

func TestEscrow(t *testing.T) {
	runCases(t, []cliCase{
		{name: "escrow-text", args: []string{"escrow", "--score", "760", "--amount-cents", "100000"}, code: ExitOK},
		{name: "escrow-json", args: []string{"escrow", "--score", "760", "--amount-cents", "100000", "--json"}, code: ExitOK},
		{name: "escrow-json-rounds-up", args: []string{"escrow", "--score", "701", "--amount-cents", "333", "--json"}, code: ExitOK},
		{name: "escrow-json-floor", args: []string{"escrow", "--score", "1000", "--amount-cents", "1", "--json"}, code: ExitOK},
		{name: "escrow-missing-amount", args: []string{"escrow", "--score", "760"}, code: ExitUsage},
		{name: "escrow-score-above-1000", args: []string{"escrow", "--score", "1001", "--amount-cents", "100"}, code: ExitUsage},
		{name: "escrow-negative-amount", args: []string{"escrow", "--score", "760", "--amount-cents", "-1"}, code: ExitUsage},
	})
}

// TestEscrowJSONMatchesLibrary checks --json against score.HoldCents over
// every score and a few amounts, including int64's largest.
func TestEscrowJSONMatchesLibrary(t *testing.T) {
	for s := 0; s <= score.MaxScore; s += 7 {
		for _, amount := range []int64{0, 1, 99, 100000, 1<<63 - 1} {
			r := run(t, nil, nil, "escrow", "--score", fmt.Sprint(s), "--amount-cents", fmt.Sprint(amount), "--json")
			if r.code != ExitOK {
				t.Fatalf("score %d amount %d: %+v", s, amount, r)
			}
			var got struct {
				Score          int             `json:"score"`
				EscrowModifier json.RawMessage `json:"escrow_modifier"`
				HoldCents      int64           `json:"hold_cents"`
				ReleasedCents  int64           `json:"released_cents"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatal(err)
			}
			hold, released, _ := score.HoldCents(amount, s)
			m, err := score.ParseModifier(string(got.EscrowModifier))
			if err != nil || m != score.EscrowModifier(s) || got.Score != s || got.HoldCents != hold || got.ReleasedCents != released {
				t.Fatalf("score %d amount %d: %s", s, amount, r.stdout)
			}
		}
	}
}
