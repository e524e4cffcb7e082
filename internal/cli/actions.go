package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

func newActionsCmd() *cobra.Command {
	var db, operator, action, agent string
	var limit int
	var before int64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "actions",
		Short: "Print the operator action log, newest first",
		Long: `Print the action log: every operator action (sign-ins, refused ones too,
ingests, corrections, appeal decisions, key changes, erasures, token and
session changes, and requests refused for a token's role), with who, when,
through which edge (api, console, cli) and how it ended (ok, denied, failed
with its code). Newest first; --before SEQ continues after a page. The log
is append-only: the database refuses to change or delete an entry, except
that an erasure renames the agent an entry names.

The same log is GET /swarmscore/actions (an admin token) and the console's
Action log page.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > service.MaxActionsPage {
				return usageErrorf("--limit must be from 1 to %d", service.MaxActionsPage)
			}
			if before < 0 {
				return usageErrorf("--before must be a seq (a positive number)")
			}
			for name, v := range map[string]string{"operator": operator, "agent": agent} {
				if v != "" && !ledger.ValidID(v) {
					return usageErrorf("--%s %q is not a valid id", name, v)
				}
			}
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				list, err := u.Console.Actions(cmd.Context(), auth.ActionQuery{Before: before, Limit: limit, Operator: operator,
					Kind: auth.ActionKind(action), AgentID: agent})
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, wire.ActionsOf(list, limit))
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "SEQ\tAT\tOPERATOR\tROLE\tVIA\tCLIENT\tACTION\tAGENT\tTARGET\tOUTCOME\tDETAIL")
				for _, a := range list {
					outcome := string(a.Outcome)
					if a.Code != "" {
						outcome += " (" + a.Code + ")"
					}
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Seq, a.At.UTC().Format(time.RFC3339),
						dash(a.Operator), dash(string(a.Role)), a.Via, dash(a.Client), a.Kind, dash(a.AgentID), dash(a.Target), outcome,
						dash(strings.ReplaceAll(a.Detail, "\n", " ")))
				}
				return w.Flush()
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.IntVar(&limit, "limit", 100, "entries to print (1-500)")
	f.Int64Var(&before, "before", 0, "print entries older than this seq (the last one printed)")
	f.StringVar(&action, "action", "", "only this kind of action (sign_in, ingest, correction, appeal_uphold, erasure, denied, ...)")
	f.StringVar(&agent, "agent", "", "only entries about this agent")
	f.StringVar(&operator, "operator", "", "only entries by this operator")
	f.BoolVar(&asJSON, "json", false, `print {"actions":[{"seq","at","operator","token_id","role","via","client","action","agent_id","target","detail","outcome","code"}],"next_before"}`)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
