package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/service"
)

func newTokenCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage operator API tokens",
		Long: `Manage the bearer tokens operators use for the HTTP API's operator routes
(POST /swarmscore/events, POST /swarmscore/{agent_id}/escrow, GET
/swarmscore/agents). Only a token's SHA-256 is stored: a token is printed once,
when it is created.`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.AddCommand(newTokenCreateCmd(&db), newTokenRevokeCmd(&db), newTokenListCmd(&db))
	return cmd
}

func newTokenCreateCmd(db *string) *cobra.Command {
	var operator string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create --operator NAME",
		Short: "Create a token for an operator and print it (once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withUseCases(cmd, *db, true, func(u *service.UseCases) error {
				nt, err := u.CreateToken(cmd.Context(), operator)
				if err != nil {
					return err
				}
				if asJSON {
					b, _ := json.Marshal(map[string]string{"id": nt.ID, "operator": nt.Operator, "token": nt.Secret})
					fmt.Fprintln(cmd.OutOrStdout(), string(b))
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), nt.Secret)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "created token %s for operator %s; it is shown only this once (revoke with 'swarmscore token revoke %s')\n", nt.ID, nt.Operator, nt.ID)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&operator, "operator", "", "operator name ([A-Za-z0-9._:-], 1-128 characters)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"id","operator","token"}`)
	cmd.MarkFlagRequired("operator")
	return cmd
}

func newTokenRevokeCmd(db *string) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token by its id (see 'token list')",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUseCases(cmd, *db, true, func(u *service.UseCases) error {
				if err := u.RevokeToken(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
				return nil
			})
		},
	}
}

func newTokenListCmd(db *string) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List tokens (ids and operators; never the tokens)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withUseCases(cmd, *db, true, func(u *service.UseCases) error {
				toks, err := u.ListTokens(cmd.Context())
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tOPERATOR\tCREATED\tREVOKED")
				for _, tok := range toks {
					revoked := "-"
					if tok.Revoked() {
						revoked = tok.RevokedAt.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", tok.ID, tok.Operator, tok.CreatedAt.UTC().Format(time.RFC3339), revoked)
				}
				return w.Flush()
			})
		},
	}
}
