package cli

import (
	"encoding/json"
	"fmt"
	"github.com/swarmscore/swarmscore/api"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/score"
)

func newEscrowCmd() *cobra.Command {
	var (
		scoreValue  int
		amountCents int64
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "escrow",
		Short: "Split a payment into escrow hold and released amount; place and settle holds",
		Long: `Compute the escrow hold for a payment to an agent with the given score (§5):
hold = amount × escrow modifier, rounded up to the cent (the buyer's side);
released = amount − hold. The modifier is max(0.25, min(1, 1 − score/1250)).
Amounts are integer cents.

With --json, print {"score","escrow_modifier","hold_cents","released_cents"}.

` + escrowHoldsLong,
		Example: `  swarmscore escrow --score 760 --amount-cents 100000 --json`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if scoreValue < 0 || scoreValue > score.MaxScore {
				return usageErrorf("--score %d is outside 0..%d", scoreValue, score.MaxScore)
			}
			if amountCents < 0 {
				return usageErrorf("--amount-cents %d is negative", amountCents)
			}
			hold, released, err := score.HoldCents(amountCents, scoreValue)
			if err != nil {
				return err
			}
			out := api.Escrow{Score: scoreValue, EscrowModifier: score.EscrowModifier(scoreValue), HoldCents: hold, ReleasedCents: released}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "Score\t%d\n", out.Score)
			fmt.Fprintf(tw, "Escrow modifier\t%s\n", out.EscrowModifier)
			fmt.Fprintf(tw, "Amount\t%d cents\n", amountCents)
			fmt.Fprintf(tw, "Hold\t%d cents\n", out.HoldCents)
			fmt.Fprintf(tw, "Released\t%d cents\n", out.ReleasedCents)
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&scoreValue, "score", 0, "the agent's SwarmScore, 0..1000")
	cmd.Flags().Int64Var(&amountCents, "amount-cents", 0, "the payment in integer cents")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	_ = cmd.MarkFlagRequired("score")
	_ = cmd.MarkFlagRequired("amount-cents")
	addHoldCommands(cmd)
	return cmd
}
