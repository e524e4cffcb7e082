package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/webhook"
	"github.com/swarmscore/swarmscore/internal/wire"
)

func newWebhookCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Manage webhook endpoints and read their deliveries",
		Long: `Manage the endpoints 'swarmscore serve' delivers events to, and read what it
delivered. The event types are:

  score.changed    an agent's computed score differs from the last announced
  tier.changed     an agent's computed tier differs from the last announced
  passport.issued  a passport was signed
  appeal.updated   an appeal was filed or changed state
  hold.updated     an escrow hold was created or changed state

Each event is written to an outbox in the transaction of the change, and
delivered at least once, signed per Standard Webhooks (headers webhook-id,
webhook-timestamp, webhook-signature: v1,<base64 HMAC-SHA256>), with the
same webhook-id on every attempt; failures are retried with exponential
backoff and jitter for 24 h, then the message is failed.

A URL must be https and resolve to public addresses only; http and
loopback addresses are allowed with --webhook-allow-http-loopback (and
delivered to only by 'serve --webhook-allow-http-loopback'). Adding and
removing endpoints is recorded in the action log.`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.AddCommand(newWebhookAddCmd(&db), newWebhookListCmd(&db), newWebhookRemoveCmd(&db), newWebhookDeliveriesCmd(&db))
	return cmd
}

func newWebhookAddCmd(db *string) *cobra.Command {
	var events []string
	var operator string
	var loopback, asJSON bool
	cmd := &cobra.Command{
		Use:   "add URL --event TYPE [--event TYPE…]",
		Short: "Register an endpoint and print its signing secret (once)",
		Long: `Register an endpoint for the given event types and print its signing secret
alone on standard output: whsec_ and the base64 of the key, as Standard
Webhooks libraries take it. It is shown only this once.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(events) == 0 {
				return usageErrorf("--event is required (one of %s)", eventNames())
			}
			return withUseCases(cmd, *db, existing, func(u *service.UseCases) error {
				u.Webhooks.Policy = webhook.URLPolicy{AllowHTTPLoopback: loopback}
				by := operator
				if by == "" {
					by = cliOperator
				}
				e, err := u.Webhooks.AddWebhook(cmd.Context(), by, args[0], splitEvents(events))
				if err != nil {
					return err
				}
				if asJSON {
					out := wire.WebhookOf(e)
					out.Secret = e.Secret.Reveal()
					if err := printJSON(cmd, out); err != nil {
						return err
					}
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), e.Secret.Reveal())
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "registered webhook %s for %s; its secret is shown only this once (remove with 'swarmscore webhook remove %s')\n",
					e.ID, e.URL, e.ID)
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&events, "event", nil, "an event type to deliver (repeat, or separate with commas): "+eventNames())
	cmd.Flags().StringVar(&operator, "operator", "", `the operator registering it, as the action log records it (default "cli")`)
	cmd.Flags().BoolVar(&loopback, "webhook-allow-http-loopback", false, "allow http:// and loopback addresses (local receivers and tests)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"id","url","events","created_at","created_by","secret"}`)
	return cmd
}

func eventNames() string {
	s := make([]string, len(webhook.EventTypes))
	for i, t := range webhook.EventTypes {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

func splitEvents(in []string) []string {
	var out []string
	for _, e := range in {
		for _, f := range strings.Split(e, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

func newWebhookListCmd(db *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the endpoints (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withUseCases(cmd, *db, existing, func(u *service.UseCases) error {
				list, err := u.Webhooks.Webhooks(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					out := api.Webhooks{Webhooks: make([]api.Webhook, 0, len(list))}
					for _, e := range list {
						out.Webhooks = append(out.Webhooks, wire.WebhookOf(e))
					}
					return printJSON(cmd, out)
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tURL\tEVENTS\tCREATED\tBY")
				for _, e := range list {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", e.ID, e.URL, strings.Join(strings.Fields(webhook.JoinEvents(e.Events)), ","),
						e.CreatedAt.UTC().Format(time.RFC3339), e.CreatedBy)
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"webhooks":[{"id","url","events","created_at","created_by"}]}`)
	return cmd
}

func newWebhookRemoveCmd(db *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "remove ID",
		Short: "Delete an endpoint; its pending messages are cancelled",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUseCases(cmd, *db, existing, func(u *service.UseCases) error {
				if err := u.Webhooks.RemoveWebhook(cmd.Context(), args[0]); err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, map[string]any{"id": args[0], "removed": true})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"id","removed":true}`)
	return cmd
}

func newWebhookDeliveriesCmd(db *string) *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "deliveries ID",
		Short: "Show an endpoint's messages, newest first, with their attempts",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > service.MaxDeliveriesPage {
				return usageErrorf("--limit must be from 1 to %d", service.MaxDeliveriesPage)
			}
			return withUseCases(cmd, *db, existing, func(u *service.UseCases) error {
				ms, err := u.Webhooks.Deliveries(cmd.Context(), args[0], limit)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, wire.WebhookDeliveriesOf(ms))
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tTYPE\tAGENT\tCREATED\tSTATE\tATTEMPTS\tLAST")
				for _, m := range ms {
					last := "-"
					if m.Attempts > 0 {
						last = fmt.Sprint(m.LastStatus)
						if m.LastError != "" {
							last += " " + m.LastError
						}
					}
					agent := m.AgentID
					if agent == "" {
						agent = "-"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", m.ID, m.Type, agent, m.CreatedAt.UTC().Format(time.RFC3339), m.State, m.Attempts, last)
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, fmt.Sprintf("how many messages, 1 to %d", service.MaxDeliveriesPage))
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"deliveries":[…]} as GET /swarmscore/webhooks/{id}/deliveries does`)
	return cmd
}
