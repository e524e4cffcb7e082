package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

func newLedgerCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Verify the ledger's hash chains and recompute scores",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("missing subcommand (verify, recompute, checkpoint)")
		},
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)
	var asJSON bool
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	var checkpointFile string
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Walk every agent's hash chain and report the first broken link",
		Long: `Recompute every agent's SHA-256 hash chain from its first record and check
that every Conduit session and AP2 transaction row holds exactly the content
of its latest chain record (spec §8.2, §15.2). A row edited, back-dated or
deleted outside SwarmScore, or a chain record altered or removed, is reported
as the first broken link of that agent's chain.

With --json: {"agents","records","events","broken":[{"agent_id","seq","event_id","reason"}]}.

With --checkpoint FILE (an archived checkpoint; '-' reads standard input) it
first checks the checkpoint's signature, then that the ledger extends it:
every agent it named is still there, with the same chain hash at its
checkpointed seq (so no record up to there was rewritten, removed or
inserted, even with every hash after it recomputed). It names each agent whose
chain was rewritten, truncated or dropped, then walks every chain as above.
--json adds "checkpoint": {"number","time","agents","root","kid","extends",
"changes":[{"agent_id","kind","archived_seq","archived_hash","current_seq",
"current_hash"}],"problems"}.

Exit status: 0 when every chain is intact (and extends the checkpoint), 1 when
any is broken, the checkpoint's signature does not verify or the ledger does
not extend it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if checkpointFile != "" {
				return verifyCheckpoint(cmd, db, checkpointFile, asJSON)
			}
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				r, err := u.Signals.VerifyLedger(cmd.Context())
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					if err := printJSON(cmd, verifyJSON(r)); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(out, "%d agents, %d chain records, %d events checked\n", r.Agents, r.Records, r.Events)
					if len(r.Broken) == 0 {
						fmt.Fprintln(out, "every chain is intact")
					}
					for _, b := range r.Broken {
						fmt.Fprintf(out, "BROKEN %s\n", b)
					}
				}
				if len(r.Broken) == 0 {
					return nil
				}
				return withStatus(ExitFailure, fmt.Errorf("%d of %d chains broken", len(r.Broken), r.Agents))
			})
		},
	}
	verify.Flags().StringVar(&checkpointFile, "checkpoint", "", "an archived checkpoint the ledger must extend")
	cmd.AddCommand(verify, newLedgerCheckpointCmd(&db, &asJSON))
	var stale bool
	recompute := &cobra.Command{
		Use:   "recompute",
		Short: "Recompute every agent's cached score as of now",
		Long: `Recompute every agent's cached score as of now in one set-based statement
(with --stale, only agents whose cached entry no longer holds). Passports of
replaced entries are dropped and re-issued on their next request.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				n, err := u.Certificates.RecomputeAll(cmd.Context(), stale)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, map[string]int64{"recomputed": n})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d agents recomputed\n", n)
				return nil
			})
		},
	}
	recompute.Flags().BoolVar(&stale, "stale", false, "only agents without a valid cached score")
	cmd.AddCommand(recompute, newLedgerPruneCmd(&db, &asJSON))
	return cmd
}

// ledgerVerifyJSON is `ledger verify --json`.
type ledgerVerifyJSON struct {
	Agents  int64        `json:"agents"`
	Records int64        `json:"records"`
	Events  int64        `json:"events"`
	Broken  []brokenJSON `json:"broken"`
}

type brokenJSON struct {
	AgentID string `json:"agent_id"`
	Seq     int64  `json:"seq"`
	EventID string `json:"event_id,omitempty"`
	Reason  string `json:"reason"`
}

func verifyJSON(r ledger.VerifyReport) ledgerVerifyJSON {
	out := ledgerVerifyJSON{Agents: r.Agents, Records: r.Records, Events: r.Events, Broken: make([]brokenJSON, len(r.Broken))}
	for i, b := range r.Broken {
		out.Broken[i] = brokenJSON{AgentID: b.AgentID, Seq: b.Seq, EventID: b.EventID, Reason: b.Reason}
	}
	return out
}
