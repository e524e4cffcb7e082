package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

func newProofCmd() *cobra.Command {
	var db, operator string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "proof",
		Short: "Check Conduit proof bundles against their sessions' proof_hash (spec §8.2)",
		Long: `A conduit_session may be reported with proof_hash, the SHA-256 of its proof
bundle (64 lowercase hex; §12.1). 'proof check EVENT_ID FILE' computes the
SHA-256 of FILE ('-' reads standard input), compares it with the session's
recorded proof_hash in the database and records the outcome, proof_matched
or proof_mismatch, in the session's proof chain: the same check as POST
/swarmscore/events/conduit_session/{id}/proof, without a server. The gaming
signal unproven_verified_share counts the VERIFIED sessions without a
matching check.

Exit status: 0 proof_matched, 1 proof_mismatch, 2 unreadable file, 3 no such
session, 5 the session has no proof_hash (no_proof_hash).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("missing subcommand (check)")
		},
	}
	check := &cobra.Command{
		Use:   "check EVENT_ID FILE",
		Short: "Check a proof bundle against a session's proof_hash and record the outcome",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := cmd.InOrStdin()
			if args[1] != "-" {
				f, err := os.Open(args[1])
				if err != nil {
					return fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
				}
				defer f.Close()
				in = f
			}
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				op := operator
				if op == "" {
					op = cliOperator
				}
				c, err := u.Proofs.CheckProof(cmd.Context(), service.OperatorCaller(op), args[0], in)
				if err != nil {
					return err
				}
				if asJSON {
					if err := printJSON(cmd, wire.ProofCheckOf(&c)); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (bundle %s, %d bytes; recorded %s; check %d)\n",
						c.EventID, c.Outcome, c.SHA256, c.Size, c.Expected, c.Seq)
				}
				if c.Outcome != ledger.ProofMatched {
					return withStatus(ExitFailure, fmt.Errorf("%s: the bundle's SHA-256 is not the session's proof_hash", c.EventID))
				}
				return nil
			}, configure(cmd))
		},
	}
	check.Flags().BoolVar(&asJSON, "json", false, "print the check as JSON, as the HTTP API does")
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.PersistentFlags().StringVar(&operator, "operator", "", "the operator checking (default cli)")
	cmd.AddCommand(check)
	return cmd
}
