package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/service"
)

func newTokenCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage operator and agent API tokens",
		Long: `Manage the bearer tokens of the HTTP API and the console. An operator's
token has a role, which the API and the console enforce alike (403
forbidden_role):

  viewer    reads the console and the operator reads of the API
  operator  also ingests events, corrects them and decides appeals
  admin     also manages signing keys, erasures, webhooks, tokens and
            console sessions, and reads the action log

An agent's token (create --agent) reads that agent's own data and acts on its
consent and visibility, and nothing else. Only a token's SHA-256 is stored: a
token is printed once, when it is created. Creating and revoking tokens is
recorded in the action log ('swarmscore actions').

The database must exist already (the one 'swarmscore serve' uses): a mistyped
--db is an error, never a new database no server reads.

The token bootstrapped from SWARMSCORE_ADMIN_TOKEN is listed with an id
starting "env-". Unsetting the variable does not revoke it: revoke it here
('swarmscore token revoke env-…'), or set the variable to a new value, which
revokes the old one when the server starts.`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.AddCommand(newTokenCreateCmd(&db), newTokenRevokeCmd(&db), newTokenListCmd(&db))
	return cmd
}

func newTokenCreateCmd(db *string) *cobra.Command {
	var operator, agent, role string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create --operator NAME [--role viewer|operator|admin] | --agent AGENT_ID",
		Short: "Create a token for an operator or an agent and print it (once)",
		Long: `Create a token and print it alone on standard output (once).

With --operator NAME it is that operator's token, with --role (default
operator; see 'swarmscore token --help'). With --agent AGENT_ID it is
the agent's own token, granted by --operator (default "cli"): it may read the
agent's score, certificate (even unlisted), consent, records and signals, and
set its consent and visibility; every operator route and every other agent's
data refuse it (403). The agent must be known to the ledger.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if operator == "" && agent == "" {
				return usageErrorf("--operator NAME or --agent AGENT_ID is required")
			}
			if agent != "" && cmd.Flags().Changed("role") {
				return usageErrorf("--role is for an operator's token; an agent's token acts only for its agent")
			}
			if _, err := auth.ParseRole(role); err != nil {
				return usageErrorf("--role %q is not one of viewer, operator, admin", role)
			}
			return withUseCases(cmd, *db, existing, func(u *service.UseCases) error {
				var nt service.NewToken
				var err error
				if agent != "" {
					if operator == "" {
						operator = cliOperator
					}
					nt, err = u.Tokens.CreateAgentToken(cmd.Context(), operator, agent)
				} else {
					nt, err = u.Tokens.CreateToken(cmd.Context(), operator, auth.Role(role))
				}
				if err != nil {
					return err
				}
				if asJSON {
					out := map[string]string{"id": nt.ID, "operator": nt.Operator, "token": nt.Secret}
					if nt.AgentID != "" {
						out["agent_id"] = nt.AgentID
					} else {
						out["role"] = string(nt.Role)
					}
					if err := printJSON(cmd, out); err != nil {
						return err
					}
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), nt.Secret)
				}
				who := "operator " + nt.Operator + " (role " + string(nt.Role) + ")"
				if nt.AgentID != "" {
					who = "agent " + nt.AgentID + " (granted by " + nt.Operator + ")"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "created token %s for %s; it is shown only this once (revoke with 'swarmscore token revoke %s')\n", nt.ID, who, nt.ID)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&operator, "operator", "", "operator name ([A-Za-z0-9._:-], 1-128 characters); with --agent, the operator granting it")
	cmd.Flags().StringVar(&agent, "agent", "", "make the token of this agent: it acts only for the agent")
	cmd.Flags().StringVar(&role, "role", string(auth.DefaultRole), "the operator token's role: viewer, operator or admin")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"id","operator","role","token"} ("agent_id" instead of "role" with --agent)`)
	return cmd
}

// cliOperator is the operator the CLI acts as when none is named: someone
// holding the database itself.
const cliOperator = "cli"

func newTokenRevokeCmd(db *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token by its id (see 'token list')",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUseCases(cmd, *db, existing, func(u *service.UseCases) error {
				if err := u.Tokens.RevokeToken(cmd.Context(), args[0]); err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, map[string]any{"id": args[0], "revoked": true})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"id","revoked":true}`)
	return cmd
}

// tokenJSON is one token in `token list --json`; never its hash.
type tokenJSON struct {
	ID        string  `json:"id"`
	Operator  string  `json:"operator"`
	Role      *string `json:"role"`
	AgentID   *string `json:"agent_id"`
	CreatedAt string  `json:"created_at"`
	RevokedAt *string `json:"revoked_at"`
}

func newTokenListCmd(db *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tokens (ids and operators; never the tokens)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withUseCases(cmd, *db, existing, func(u *service.UseCases) error {
				toks, err := u.Tokens.ListTokens(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					list := make([]tokenJSON, len(toks))
					for i, tok := range toks {
						list[i] = tokenJSON{ID: tok.ID, Operator: tok.Operator, CreatedAt: tok.CreatedAt.UTC().Format(time.RFC3339)}
						if tok.AgentID != "" {
							list[i].AgentID = &toks[i].AgentID
						} else {
							r := string(tok.Role)
							list[i].Role = &r
						}
						if tok.Revoked() {
							at := tok.RevokedAt.UTC().Format(time.RFC3339)
							list[i].RevokedAt = &at
						}
					}
					return printJSON(cmd, list)
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tOPERATOR\tROLE\tAGENT\tCREATED\tREVOKED")
				for _, tok := range toks {
					revoked, agent, role := "-", "-", string(tok.Role)
					if tok.Revoked() {
						revoked = tok.RevokedAt.UTC().Format(time.RFC3339)
					}
					if tok.AgentID != "" {
						agent, role = tok.AgentID, "-"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", tok.ID, tok.Operator, role, agent, tok.CreatedAt.UTC().Format(time.RFC3339), revoked)
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print [{"id","operator","role","agent_id","created_at","revoked_at"}]`)
	return cmd
}

// printJSON writes v as one line of JSON.
func printJSON(cmd *cobra.Command, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(append(b, '\n'))
	return err
}
