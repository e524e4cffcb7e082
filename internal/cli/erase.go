package cli

import (
	"encoding/hex"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// Erasure (GDPR Art. 17, spec §11.4) on the command line: the CLI holds
// the database, so it erases as an operator (--operator, default "cli").

// openingWarning is printed on stderr with every erasure: the opening is
// nowhere else.
const openingWarning = "swarmscore: the opening is shown this once and not stored: give it to the agent (it proves the erasure was of its id), and do not keep it beside the erased id\n"

func newAgentEraseCmd() *cobra.Command {
	var db, operator, reason string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "erase ID [--reason TEXT]",
		Short: "Erase an agent at its request (GDPR Art. 17)",
		Long: `Erase an agent (GDPR Art. 17, spec §11.4), in one transaction: its id is
replaced by a random pseudonym (erased- and 16 hex digits) in every table; the
records that named it are sealed, so that every chain still verifies ('ledger
verify') and every other agent's counts and score are unchanged; its tokens and
passports are revoked (a presented passport then verifies as passport_revoked);
the pseudonym is unlisted. The id then serves 404 on every route, at once on
SQLite and within a second on PostgreSQL for running servers.

The erasure keeps a commitment to the erased id (identity): SHA-256 of the id
under a random salt, the opening. The opening is printed this once and stored
nowhere: give it to the agent, who can later prove that the erasure was of its
id. The output never names the erased id. --reason is printed back (the id in
it replaced by the pseudonym) for your records; it is not stored.

An erasure cannot be undone. Exit status 3 for an unknown agent, 5 when the
id is itself a pseudonym or a record to seal is broken (run 'ledger verify').`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				r, err := u.Rights.EraseAgent(cmd.Context(), service.OperatorCaller(operator), args[0], reason)
				if err != nil {
					return err
				}
				fmt.Fprint(cmd.ErrOrStderr(), openingWarning)
				if asJSON {
					return printJSON(cmd, wire.ErasureResultOf(&r))
				}
				salt := hex.EncodeToString(r.Opening[:])
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintf(w, "pseudonym\t%s\n", r.Pseudonym)
				fmt.Fprintf(w, "erasure\t%s, %s, by %s\n", r.ID, ledger.FormatTime(r.At), r.By)
				fmt.Fprintf(w, "sealed\t%d records\n", len(r.Digests))
				fmt.Fprintf(w, "identity\t%s\n", r.Identity)
				fmt.Fprintf(w, "opening\t%s (category %s)\n", salt, audit.Agents)
				if r.Reason != "" {
					fmt.Fprintf(w, "reason\t%s\n", r.Reason)
				}
				return w.Flush()
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&operator, "operator", cliOperator, "the operator making the erasure")
	f.StringVar(&reason, "reason", "", "why (at most 1000 bytes; printed back, not stored)")
	f.BoolVar(&asJSON, "json", false, `print {"erasure_id","pseudonym","erased_at","erased_by","identity","sealed_records","opening":{"category","salt"},"reason"}`)
	return cmd
}

func newAgentErasuresCmd() *cobra.Command {
	var db string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "erasures",
		Short: "List every erasure, oldest first",
		Long: `List every erasure, oldest first: the pseudonym, when and by whom, and the
commitment to the erased id. Neither the erased ids nor the openings are
stored, so neither is shown.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				es, err := u.Rights.Erasures(cmd.Context(), service.OperatorCaller(cliOperator))
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, wire.ErasuresOf(es))
				}
				if len(es) == 0 {
					_, err := fmt.Fprintln(cmd.OutOrStdout(), "no erasures")
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "PSEUDONYM\tERASED AT\tBY\tSEALED\tERASURE\tIDENTITY")
				for _, e := range es {
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", e.Pseudonym, ledger.FormatTime(e.At), e.By, len(e.Digests), e.ID, e.Identity)
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"erasures":[{"erasure_id","pseudonym","erased_at","erased_by","identity","sealed_records"}]}`)
	return cmd
}
