package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

const escrowHoldsLong = `Escrow holds as records (spec §5): the hold on a buyer's payment to a
provider, priced by the provider's current passport, and what became of it.

  hold TRANSACTION_ID --provider ID --buyer ID --amount-cents N [--currency USD]
  release TRANSACTION_ID [--fee-cents N | --platform-fee-bps N]
  dispute TRANSACTION_ID [--reason TEXT]
  resolve TRANSACTION_ID --outcome settled|refunded [--reason TEXT] [--fee-cents N | --platform-fee-bps N]
  cancel TRANSACTION_ID [--reason TEXT]
  show TRANSACTION_ID
  list [--state S] [--provider ID]
  reconcile

States: held -> released | disputed | cancelled; disputed -> settled |
refunded. A release (or a settled resolution) pays the hold less the fee
to the provider and records the transaction SETTLED in the provider's chain;
a refund or a cancellation returns the hold to the buyer and records REFUNDED
or CANCELLED; a hold records HELD; a dispute records nothing (docs/ERRATA.md
E56). The fee is --fee-cents, else floor(amount × --platform-fee-bps /
10,000), never more than the hold (E55). Placing the same hold again prints
the stored one; other terms are a conflict (hold_conflict), and a move the
state does not allow too (invalid_transition).

With --json each prints the hold(s) as the HTTP API answers them.

Exit status: 0 done, 2 invalid input, 3 no such hold, 5 conflict; reconcile
exits 1 naming the first transaction whose chain or money does not add up.`

// holdFlags are the hold subcommands' persistent flags.
type holdFlags struct {
	db, operator string
	asJSON       bool
}

// addHoldCommands adds the hold subcommands to the escrow command.
func addHoldCommands(cmd *cobra.Command) {
	hf := &holdFlags{}
	pf := cmd.PersistentFlags()
	pf.StringVar(&hf.db, "db", "", dbFlagUsage)
	pf.StringVar(&hf.operator, "operator", "", "the operator acting, recorded with the hold (default cli)")
	cmd.AddCommand(newHoldCreateCmd(hf), newHoldChangeCmd(hf, ledger.HoldRelease), newHoldChangeCmd(hf, ledger.HoldDispute),
		newHoldChangeCmd(hf, ledger.HoldResolve), newHoldChangeCmd(hf, ledger.HoldCancel), newHoldShowCmd(hf), newHoldListCmd(hf),
		newHoldReconcileCmd(hf))
	for _, c := range cmd.Commands() {
		c.Flags().BoolVar(&hf.asJSON, "json", false, "print JSON, as the HTTP API does")
	}
}

func (hf *holdFlags) caller() service.Caller {
	if hf.operator == "" {
		return service.OperatorCaller(cliOperator)
	}
	return service.OperatorCaller(hf.operator)
}

func (hf *holdFlags) show(cmd *cobra.Command, h *ledger.Hold) error {
	if hf.asJSON {
		return printJSON(cmd, wire.HoldOf(h))
	}
	printHold(cmd.OutOrStdout(), h)
	return nil
}

func printHold(w io.Writer, h *ledger.Hold) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Transaction\t%s\n", h.TransactionID)
	fmt.Fprintf(tw, "State\t%s\n", h.State)
	fmt.Fprintf(tw, "Provider\t%s (score %d, %s, modifier %s)\n", h.ProviderID, h.Score, h.Tier, h.Modifier)
	fmt.Fprintf(tw, "Buyer\t%s\n", h.BuyerID)
	fmt.Fprintf(tw, "Amount\t%d cents %s\n", h.AmountCents, h.Currency)
	fmt.Fprintf(tw, "Hold\t%d cents (released at once: %d)\n", h.HoldCents, h.ReleasedCents)
	passport := h.PassportID
	if passport == "" {
		passport = "none (a provider the ledger did not know)"
	} else if h.KID != "" {
		passport += " (key " + h.KID + ")"
	}
	fmt.Fprintf(tw, "Priced by\t%s\n", passport)
	if !h.State.Open() {
		fmt.Fprintf(tw, "Payout\t%d cents\n", h.PayoutCents)
		fmt.Fprintf(tw, "Fee\t%d cents\n", h.FeeCents)
		fmt.Fprintf(tw, "Refund\t%d cents\n", h.RefundCents)
	}
	if h.Reason != "" {
		fmt.Fprintf(tw, "Reason\t%s\n", h.Reason)
	}
	if h.CorrectionID != "" {
		fmt.Fprintf(tw, "Corrected by\t%s\n", h.CorrectionID)
	}
	fmt.Fprintf(tw, "Created\t%s\n", ledger.FormatTime(h.CreatedAt))
	fmt.Fprintf(tw, "Updated\t%s (step %d)\n", ledger.FormatTime(h.UpdatedAt), h.Seq)
	tw.Flush()
}

func newHoldCreateCmd(hf *holdFlags) *cobra.Command {
	var in service.HoldInput
	c := &cobra.Command{
		Use:   "hold TRANSACTION_ID --provider ID --buyer ID --amount-cents N",
		Short: "Place a hold on a payment, priced by the provider's current passport",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in.TransactionID = args[0]
			return withSigning(cmd, hf.db, readOnly, func(u *service.UseCases) error {
				h, _, err := u.Holds.CreateHold(cmd.Context(), hf.caller(), in)
				if err != nil {
					return err
				}
				return hf.show(cmd, &h)
			})
		},
	}
	c.Flags().StringVar(&in.ProviderID, "provider", "", "the provider agent paid")
	c.Flags().StringVar(&in.BuyerID, "buyer", "", "the buyer paying")
	c.Flags().Int64Var(&in.AmountCents, "amount-cents", 0, "the payment in integer cents")
	c.Flags().StringVar(&in.Currency, "currency", ledger.HoldCurrency, "the payment's currency (only USD)")
	for _, f := range []string{"provider", "buyer", "amount-cents"} {
		_ = c.MarkFlagRequired(f)
	}
	return c
}

func newHoldChangeCmd(hf *holdFlags, a ledger.HoldAction) *cobra.Command {
	var (
		reason, outcome string
		fee             int64
		feeBPS          int
	)
	short := map[ledger.HoldAction]string{
		ledger.HoldRelease: "Release a held hold on delivery: the hold less the fee to the provider",
		ledger.HoldDispute: "Dispute a held hold",
		ledger.HoldResolve: "Resolve a disputed hold: settled (to the provider) or refunded (to the buyer)",
		ledger.HoldCancel:  "Cancel a held hold before release: the hold back to the buyer",
	}[a]
	c := &cobra.Command{
		Use:   string(a) + " TRANSACTION_ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := service.HoldAction{Action: a, Reason: reason, Outcome: ledger.HoldState(outcome)}
			feeSet, bpsSet := cmd.Flags().Changed("fee-cents"), cmd.Flags().Changed("platform-fee-bps")
			if feeSet && bpsSet {
				return usageErrorf("give --fee-cents or --platform-fee-bps, not both")
			}
			if err := ledger.CheckFeeBPS(feeBPS); err != nil {
				return usageErrorf("--platform-fee-bps %d is not between 0 and %d", feeBPS, ledger.MaxFeeBPS)
			}
			if a == ledger.HoldResolve && req.Outcome != ledger.HoldSettled && req.Outcome != ledger.HoldRefunded {
				return usageErrorf("--outcome must be settled or refunded")
			}
			req.HasFee, req.FeeCents = feeSet, fee
			return withUseCases(cmd, hf.db, readOnly, func(u *service.UseCases) error {
				h, err := u.Holds.ChangeHold(cmd.Context(), hf.caller(), args[0], req)
				if err != nil {
					return err
				}
				return hf.show(cmd, &h)
			}, configure(cmd), func(_ service.Backend, cfg *service.Config) error {
				cfg.PlatformFeeBPS = feeBPS
				return nil
			})
		},
	}
	if a == ledger.HoldRelease || a == ledger.HoldResolve {
		c.Flags().Int64Var(&fee, "fee-cents", 0, "the platform's fee in cents (0 up to the hold)")
		c.Flags().IntVar(&feeBPS, "platform-fee-bps", 0, "the fee as basis points of the amount, rounded down (as serve --platform-fee-bps)")
	}
	if a != ledger.HoldRelease {
		c.Flags().StringVar(&reason, "reason", "", "why (kept with the hold)")
	}
	if a == ledger.HoldResolve {
		c.Flags().StringVar(&outcome, "outcome", "", "settled or refunded")
		_ = c.MarkFlagRequired("outcome")
	}
	return c
}

func newHoldShowCmd(hf *holdFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show TRANSACTION_ID",
		Short: "Show a hold",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUseCases(cmd, hf.db, readOnly, func(u *service.UseCases) error {
				h, err := u.Holds.Hold(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return hf.show(cmd, &h)
			})
		},
	}
}

func newHoldListCmd(hf *holdFlags) *cobra.Command {
	var q service.HoldQuery
	var state string
	c := &cobra.Command{
		Use:   "list [--state S] [--provider ID]",
		Short: "List holds, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q.State = ledger.HoldState(state)
			return withUseCases(cmd, hf.db, readOnly, func(u *service.UseCases) error {
				list, err := u.Holds.Holds(cmd.Context(), q)
				if err != nil {
					return err
				}
				if hf.asJSON {
					return printJSON(cmd, wire.HoldsOf(list))
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "TRANSACTION\tSTATE\tPROVIDER\tBUYER\tAMOUNT\tSCORE\tHOLD\tPAYOUT\tFEE\tREFUND")
				for _, h := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", h.TransactionID, h.State, h.ProviderID, h.BuyerID,
						h.AmountCents, h.Score, h.HoldCents, h.PayoutCents, h.FeeCents, h.RefundCents)
				}
				return tw.Flush()
			})
		},
	}
	c.Flags().StringVar(&state, "state", "", "only holds in this state (held, disputed, released, settled, refunded, cancelled)")
	c.Flags().StringVar(&q.ProviderID, "provider", "", "only this provider's holds")
	return c
}

func newHoldReconcileCmd(hf *holdFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "reconcile",
		Short: "Check that every hold's chain and money add up: held = open + payouts + fees + refunds",
		Long: `Walk every hold, oldest first: recompute its chain (each change hashed over
the one before and the hold as the change left it), check its money, and add
up the totals. Prints the totals; exits 1 naming the first transaction whose
chain or money breaks (or the totals when only they do not balance). A hold
that names an erased agent's pseudonym cannot have its links recomputed (the
erasure renamed the party they hash): its money is still checked, and it is
counted as sealed (docs/ERRATA.md E58).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withUseCases(cmd, hf.db, readOnly, func(u *service.UseCases) error {
				r, err := u.Holds.Reconcile(cmd.Context())
				if err != nil {
					return err
				}
				if hf.asJSON {
					if err := printJSON(cmd, wire.ReconciliationOf(&r)); err != nil {
						return err
					}
				} else {
					t := &r.Totals
					out := cmd.OutOrStdout()
					fmt.Fprintf(out, "%d holds: held %d = open %d + payouts %d + fees %d + refunds %d cents\n",
						t.Holds, t.Held, t.Open, t.Payouts, t.Fees, t.Refunds)
					if r.Sealed > 0 {
						fmt.Fprintf(out, "%d holds sealed by an erasure (money checked, links not recomputed)\n", r.Sealed)
					}
					if r.Broken == "" {
						fmt.Fprintln(out, "every hold adds up")
					} else {
						fmt.Fprintf(out, "BROKEN %s: %s\n", r.Broken, r.Reason)
					}
				}
				if r.Broken == "" {
					return nil
				}
				return withStatus(ExitFailure, fmt.Errorf("escrow does not reconcile: %s: %s", r.Broken, r.Reason))
			})
		},
	}
}
