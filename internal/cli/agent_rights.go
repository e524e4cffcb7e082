package cli

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/signal"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// Agents' rights and gaming signals on the command line. The CLI holds the
// database, so it acts as an operator (--operator, default "cli"): buyer
// ids are shown as reported.

// agentRightsCmds are the agent subcommands of this file.
func agentRightsCmds() []*cobra.Command {
	return []*cobra.Command{newAgentVisibilityCmd(), newAgentConsentCmd(), newAgentRecordsCmd(), newAgentSignalsCmd(), newAgentDisclosureCmd(),
		newAgentEraseCmd(), newAgentErasuresCmd()}
}

// printConsent prints an agent's consent and visibility.
func printConsent(cmd *cobra.Command, st *service.ConsentStatus, asJSON bool) error {
	if asJSON {
		return printJSON(cmd, wire.ConsentOf(st))
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "agent\t%s\n", st.AgentID)
	vis := string(st.Visibility)
	if st.Visibility == ledger.VisibilityUnlisted {
		vis += " (score, certificate, pages and badge hidden from the public; escrow still uses the score)"
	}
	fmt.Fprintf(w, "visibility\t%s\n", vis)
	if st.Consented() {
		fmt.Fprintf(w, "consent\tdisclosure version %s, %s, by %s\n", st.DisclosureVersion, ledger.FormatTime(st.GivenAt), st.By)
	} else {
		fmt.Fprintf(w, "consent\tnone recorded (a server with --require-consent publishes nothing of it)\n")
	}
	return w.Flush()
}

func newAgentVisibilityCmd() *cobra.Command {
	var db, operator string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "visibility ID public|unlisted",
		Short: "Make an agent's score public or unlisted",
		Long: `Record an agent's choice of public or unlisted display (spec §8.4).

An unlisted agent is a 404 on every public route (its score, certificate, the
ranking, its web page and badge), exactly as an unknown agent is; its passport
is still issued to the agent itself (its own token) and operators, and its score
still sets escrow holds. A running server sees the change at once (SQLite) or
within a second (PostgreSQL).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := ledger.Visibility(args[1])
			if v != ledger.VisibilityPublic && v != ledger.VisibilityUnlisted {
				return usageErrorf("visibility %q is neither public nor unlisted", args[1])
			}
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				st, err := u.Rights.SetVisibility(cmd.Context(), service.OperatorCaller(operator), args[0], v)
				if err != nil {
					return err
				}
				return printConsent(cmd, &st, asJSON)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&operator, "operator", cliOperator, "the operator making the change")
	f.BoolVar(&asJSON, "json", false, `print {"agent_id","visibility","consented","disclosure_version","consented_at","consented_by"}`)
	return cmd
}

func newAgentConsentCmd() *cobra.Command {
	var db, operator, version string
	var record, asJSON bool
	cmd := &cobra.Command{
		Use:   "consent ID [--record [--version V]]",
		Short: "Show an agent's consent, or record it",
		Long: `Show what an agent consented to (spec §11.1): the disclosure version, when,
and who recorded it, and its visibility.

With --record, record that the agent consented to disclosure --version (default
the current one; 'swarmscore agent disclosure' prints it), as --operator on
its behalf: "operator:NAME" is kept as the consent's author. An agent records
its own with its token: PUT /swarmscore/{agent_id}/consent.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version != "" && !record {
				return usageErrorf("--version needs --record")
			}
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				c := service.OperatorCaller(operator)
				var st service.ConsentStatus
				var err error
				if record {
					st, err = u.Rights.RecordConsent(cmd.Context(), c, args[0], version)
				} else {
					st, err = u.Rights.Consent(cmd.Context(), c, args[0])
				}
				if err != nil {
					return err
				}
				return printConsent(cmd, &st, asJSON)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&operator, "operator", cliOperator, "the operator recording the consent")
	f.BoolVar(&record, "record", false, "record the agent's consent")
	f.StringVar(&version, "version", "", "the disclosure version consented to (default: the current one)")
	f.BoolVar(&asJSON, "json", false, `print {"agent_id","visibility","consented","disclosure_version","consented_at","consented_by"}`)
	return cmd
}

func newAgentDisclosureCmd() *cobra.Command {
	var version string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "disclosure",
		Short: "Print the disclosure agents consent to and the liability disclaimer",
		Long: `Print the disclosure agents consent to (spec §11.1) and the liability
disclaimer (§11.2), as GET /swarmscore/disclosure serves them: the current
version, or --version.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := service.FindDisclosure(version)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd, map[string]string{"version": d.Version, "disclosure": d.Disclosure, "disclaimer": d.Disclaimer})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Disclosure, version %s\n\n%s\n\nDisclaimer\n\n%s\n", d.Version, d.Disclosure, d.Disclaimer)
			return err
		},
	}
	cmd.Flags().StringVar(&version, "version", "", "a published version (default: the current one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"version","disclosure","disclaimer"}`)
	return cmd
}

// parseAsOf reads an --as-of flag; zero when empty.
func parseAsOf(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := ledger.ParseTime("--as-of", s)
	if err != nil {
		return time.Time{}, &usageError{err}
	}
	return t, nil
}

func newAgentRecordsCmd() *cobra.Command {
	var db, asOf string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "records ID",
		Short: "List the events behind an agent's score and the passports it was issued",
		Long: `List every event counting in the agent's score as of --as-of (default now),
in its current state after corrections and in the order they ended, and the
passports issued to the agent up to then (spec §11.1: the agent's access to
its data). Buyer ids are shown as reported; the agent's own token sees them
as pseudonyms (GET /swarmscore/{agent_id}/records).

With --json: the route's shape, {"agent_id","as_of","buyer_ids_masked","events":[…],"passports":[…]}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			at, err := parseAsOf(asOf)
			if err != nil {
				return err
			}
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				rec, err := u.Rights.Records(cmd.Context(), service.OperatorCaller(cliOperator), args[0], at)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, wire.RecordsOf(&rec))
				}
				return printRecords(cmd, &rec)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&asOf, "as-of", "", "as of this RFC 3339 time instead of now")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printRecords(cmd *cobra.Command, rec *service.AgentRecords) error {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "%s as of %s: %s counting, %s issued\n", rec.AgentID, wire.Micros(rec.AsOf),
		countOf(len(rec.Events), "event"), countOf(len(rec.Passports), "passport"))
	if len(rec.Events) > 0 {
		fmt.Fprintln(w, "\nTYPE\tID\tSTATUS\tBUYER\tENDED\tCENTS\tOPERATOR\tSEQ")
		for _, e := range rec.Events {
			status := string(e.Status)
			if e.Corrected {
				status += " (corrected from " + string(e.ReportedStatus)
				if e.ReportedAgentID != "" {
					status += ", reported for " + e.ReportedAgentID
				}
				status += ")"
			}
			cents := "-"
			if e.Type == ledger.AP2Transaction {
				cents = strconv.FormatInt(e.EscrowAmountCents, 10)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", e.Type, e.ID, status, orDash(e.BuyerID), wire.Micros(e.EndedAt), cents, e.Operator, e.Seq)
		}
	}
	if len(rec.Passports) > 0 {
		fmt.Fprintln(w, "\nPASSPORT\tCOMPUTED\tEXPIRES\tKEY")
		for _, p := range rec.Passports {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.ID, ledger.FormatTime(p.ComputedAt), ledger.FormatTime(p.ExpiresAt), orDash(p.KeyID))
		}
	}
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func newAgentSignalsCmd() *cobra.Command {
	var db, asOf string
	var flagged, asJSON bool
	th := signal.Defaults
	cmd := &cobra.Command{
		Use:   "signals ID | --flagged",
		Short: "Show an agent's gaming signals, or list the flagged agents",
		Long: `Show an agent's gaming signals (spec §8.3, §15.2) over the 90-day window
ending at --as-of (default now), each figure beside its threshold, as GET
/swarmscore/{agent_id}/signals does; with --flagged instead of an id, every
agent with a signal flagged (one set-based query), as GET
/swarmscore/signals?flagged=true does. Signals never change a score.

conduit_top_buyer_share (flagged above its threshold), ap2_top5_buyer_share
(above), ap2_buyer_diversity (below), self_dealing (events bought from itself
or from an agent each is the other's largest buyer of; above), acceptance_rate
(of task offers, below; only when offers were reported), report_lag (hours
between an event's end and its report's arrival; above), chain_break (the last
walk of the chains, 'swarmscore ledger verify', found this agent's broken),
conduit_burst (the most Conduit sessions of one buyer ending within
--signal-burst-interval, default 1h; above).
The shares and the diversity are judged from --signal-min-events events.
Thresholds are the --signal-* flags, as on 'swarmscore serve'.

A signal that was not judged says why in NOTE ("no task offers reported":
acceptance_rate is then 0 for want of a rate, never flagged).

With --json: {"agent_id","as_of","signals":[{"name","value","threshold","flagged","note"}]},
or with --flagged {"as_of","agents":[{"agent_id","signals":[…]}]}.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if flagged == (len(args) == 1) {
				return usageErrorf("give an agent id or --flagged, not both")
			}
			if err := th.Validate(); err != nil {
				return &usageError{err}
			}
			at, err := parseAsOf(asOf)
			if err != nil {
				return err
			}
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				if flagged {
					list, err := u.Signals.FlaggedAgents(cmd.Context(), at)
					if err != nil {
						return err
					}
					return printFlagged(cmd, &list, asJSON)
				}
				a, err := u.Signals.Signals(cmd.Context(), service.OperatorCaller(cliOperator), args[0], at)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, wire.SignalsOf(&a))
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintf(w, "%s as of %s\n\nSIGNAL\tVALUE\tTHRESHOLD\tFLAGGED\tNOTE\n", a.AgentID, wire.Micros(a.AsOf))
				printSignals(w, a.Signals, "")
				return w.Flush()
			}, func(_ service.Backend, cfg *service.Config) error {
				cfg.SignalThresholds = th
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&asOf, "as-of", "", "over the window ending at this RFC 3339 time instead of now")
	f.BoolVar(&flagged, "flagged", false, "list every agent with a flagged signal")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	signalFlags(f, &th)
	return cmd
}

func printSignals(w *tabwriter.Writer, sigs []signal.Signal, prefix string) {
	for _, s := range sigs {
		mark := "no"
		if s.Flagged {
			mark = "YES"
		}
		fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%s\n", prefix, s.Name, strconv.FormatFloat(s.Value, 'g', 4, 64), strconv.FormatFloat(s.Threshold, 'g', 4, 64), mark, s.Note)
	}
}

func printFlagged(cmd *cobra.Command, list *service.Flagged, asJSON bool) error {
	if asJSON {
		return printJSON(cmd, wire.FlaggedOf(list))
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "%s flagged as of %s\n", countOf(len(list.Agents), "agent"), wire.Micros(list.AsOf))
	for _, a := range list.Agents {
		var names []string
		for _, s := range a.Signals {
			if s.Flagged {
				names = append(names, s.Name)
			}
		}
		fmt.Fprintf(w, "\n%s: %s\n", a.AgentID, strings.Join(names, ", "))
		printSignals(w, a.Signals, "  ")
	}
	return w.Flush()
}

// signalFlags registers the gaming-signal thresholds as flags over t,
// whose values are their defaults.
func signalFlags(f *pflag.FlagSet, t *signal.Thresholds) {
	f.Float64Var(&t.ConduitTopBuyerShare, "signal-conduit-top-buyer-share", t.ConduitTopBuyerShare, "flag an agent whose largest buyer's share of its Conduit sessions is above this (0..1)")
	f.Float64Var(&t.AP2Top5BuyerShare, "signal-ap2-top5-buyer-share", t.AP2Top5BuyerShare, "flag an agent whose five largest buyers' share of its AP2 transactions is above this (0..1)")
	f.Float64Var(&t.AP2BuyerDiversity, "signal-ap2-buyer-diversity", t.AP2BuyerDiversity, "flag an agent whose unique AP2 buyers per transaction are below this (0..1)")
	f.Float64Var(&t.SelfDealing, "signal-self-dealing", t.SelfDealing, "flag an agent with more self-dealt or reciprocal events than this")
	f.Float64Var(&t.AcceptanceRate, "signal-acceptance-rate", t.AcceptanceRate, "flag an agent accepting fewer of its reported task offers than this (0..1)")
	f.DurationVar(&t.ReportLag, "signal-report-lag", t.ReportLag, "flag an agent with an event reported longer than this after it ended")
	f.Int64Var(&t.MinEvents, "signal-min-events", t.MinEvents, "judge the share and diversity signals only from this many events")
	f.Int64Var(&t.ConduitBurst, "signal-conduit-burst", t.ConduitBurst, "flag an agent with more Conduit sessions than this from one buyer within --signal-burst-interval")
	f.DurationVar(&t.BurstInterval, "signal-burst-interval", t.BurstInterval, "the sliding interval of the conduit_burst signal (1s..2160h)")
	f.Float64Var(&t.UnprovenVerifiedShare, "signal-unproven-verified-share", t.UnprovenVerifiedShare, "flag an agent whose share of VERIFIED sessions without a matching proof is above this (0..1; judged once it reports a proof_hash)")
}
