package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/swarmscore/swarmscore/api"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

const appealLong = `Appeals (spec §11.3): an agent disputes the data behind an issued passport,
within 30 days of its computed_at, on data grounds only (incorrect_count,
incorrect_status, identity_error; a disagreement with the formula is not a
ground). The operator files it on the agent's behalf, acknowledges it within
7 days and decides within 21; upholding applies corrections of the disputed
events (see 'swarmscore correct') and re-issues the affected passports in the
same transaction. Every action is recorded with who and when.

States: submitted -> acknowledged -> upheld | rejected, and escalated from
either decision. Deadlines run on the server's clock.`

func newAppealCmd() *cobra.Command {
	af := &appealFlags{}
	cmd := &cobra.Command{
		Use:   "appeal",
		Short: "File, list and decide appeals against issued passports",
		Long:  appealLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("missing subcommand (file, list, show, ack, uphold, reject, escalate)")
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&af.db, "db", "", dbFlagUsage)
	pf.StringVar(&af.operator, "operator", "local", "the operator acting (recorded in the appeal's history)")
	pf.BoolVar(&af.asJSON, "json", false, "print the appeal(s) as JSON, as the HTTP API does")
	cmd.AddCommand(newAppealFileCmd(af), newAppealListCmd(af), newAppealShowCmd(af),
		newAppealActCmd(af, appeal.Ack, "Acknowledge a submitted appeal", false), newAppealUpholdCmd(af),
		newAppealActCmd(af, appeal.Reject, "Reject an appeal (with --reason)", true),
		newAppealActCmd(af, appeal.Escalate, "Escalate a decided appeal to the Advisory Board", false))
	return cmd
}

// appealFlags are the appeal command's persistent flags.
type appealFlags struct {
	db, operator string
	asJSON       bool
}

// run runs f over the use cases as serve configures them (issuer,
// environment, clock).
func (af *appealFlags) run(cmd *cobra.Command, f func(u *service.UseCases) error) error {
	return withUseCases(cmd, af.db, readOnly, f, configure(cmd))
}

// caller is the operator acting.
func (af *appealFlags) caller() service.Caller { return service.OperatorCaller(af.operator) }

// show prints an appeal, as JSON with --json.
func (af *appealFlags) show(cmd *cobra.Command, a *service.AppealStatus) error {
	if af.asJSON {
		return printJSON(cmd, wire.AppealOf(a))
	}
	printAppeal(cmd.OutOrStdout(), a)
	return nil
}

func newAppealFileCmd(af *appealFlags) *cobra.Command {
	var passportID, grounds, statement string
	var events []string
	file := &cobra.Command{
		Use:   "file --passport ID --grounds G --event TYPE:ID [--event …] --statement TEXT",
		Short: "File an appeal on an agent's behalf",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, err := eventKeys(events)
			if err != nil {
				return err
			}
			return af.run(cmd, func(u *service.UseCases) error {
				a, err := u.Corrections.FileAppeal(cmd.Context(), af.caller(), service.AppealFiling{PassportID: passportID,
					Grounds: appeal.Grounds(grounds), Statement: statement, Events: keys})
				if err != nil {
					return err
				}
				return af.show(cmd, &a)
			})
		},
	}
	file.Flags().StringVar(&passportID, "passport", "", "agent_passport_id of the disputed passport")
	file.Flags().StringVar(&grounds, "grounds", "", "incorrect_count, incorrect_status or identity_error")
	file.Flags().StringVar(&statement, "statement", "", "the agent's account of the error")
	file.Flags().StringArrayVar(&events, "event", nil, "a disputed event as TYPE:ID, e.g. conduit_session:s-1 (repeatable)")
	return file
}

func newAppealListCmd(af *appealFlags) *cobra.Command {
	var state string
	var overdue bool
	list := &cobra.Command{
		Use:   "list [--state S] [--overdue]",
		Short: "List appeals, overdue first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return af.run(cmd, func(u *service.UseCases) error {
				list, err := u.Corrections.Appeals(cmd.Context(), af.caller(), service.AppealQuery{State: appeal.State(state), Overdue: overdue})
				if err != nil {
					return err
				}
				if af.asJSON {
					return printJSON(cmd, wire.AppealsOf(list))
				}
				printAppeals(cmd.OutOrStdout(), list)
				return nil
			})
		},
	}
	list.Flags().StringVar(&state, "state", "", "only appeals in this state (submitted, acknowledged, upheld, rejected, escalated)")
	list.Flags().BoolVar(&overdue, "overdue", false, "only appeals past a deadline")
	return list
}

func newAppealShowCmd(af *appealFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show an appeal with its deadline and history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return af.run(cmd, func(u *service.UseCases) error {
				a, err := u.Corrections.Appeal(cmd.Context(), af.caller(), args[0])
				if err != nil {
					return err
				}
				return af.show(cmd, &a)
			})
		},
	}
}

// newAppealActCmd is ack, reject or escalate: action with a --reason,
// required when needReason.
func newAppealActCmd(af *appealFlags, action appeal.Action, short string, needReason bool) *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   string(action) + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return af.run(cmd, func(u *service.UseCases) error {
				a, _, err := u.Corrections.ActOnAppeal(cmd.Context(), args[0], af.caller(), service.AppealDecision{Action: action, Reason: reason})
				if err != nil {
					return err
				}
				return af.show(cmd, &a)
			})
		},
	}
	usage := "a note kept in the appeal's history"
	if needReason {
		usage = "why (required)"
	}
	c.Flags().StringVar(&reason, "reason", "", usage)
	return c
}

func newAppealUpholdCmd(af *appealFlags) *cobra.Command {
	var reason, event, status, agent, correctionsFile string
	var void bool
	uphold := &cobra.Command{
		Use:   "uphold ID --reason TEXT (--event TYPE:ID (--status S | --agent ID | --void) | --corrections FILE)",
		Short: "Uphold an appeal, applying its corrections (with --reason)",
		Long: `Uphold an appeal: record the corrections of the events it disputes, re-issue
the affected passports and store the decision, in one transaction. Give one
correction with --event and exactly one of --status, --agent and --void, or
several with --corrections FILE ('-' reads standard input): a JSON array of
objects in the shape of POST /swarmscore/corrections, e.g.

  [{"event_type":"conduit_session","event_id":"s-9","action":"status","status":"VERIFIED"}]

A correction's reason defaults to the decision's. Needs the signing key, as
'swarmscore correct' does.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reqs, err := upholdCorrections(cmd, event, status, agent, void, correctionsFile)
			if err != nil {
				return err
			}
			return withSigning(cmd, af.db, readOnly, func(u *service.UseCases) error {
				a, done, err := u.Corrections.ActOnAppeal(cmd.Context(), args[0], af.caller(), service.AppealDecision{Action: appeal.Uphold,
					Reason: reason, Corrections: reqs})
				if err != nil {
					return err
				}
				if af.asJSON {
					return printJSON(cmd, wire.AppealOf(&a))
				}
				for i := range done {
					printCorrection(cmd.OutOrStdout(), &done[i], true)
				}
				printAppeal(cmd.OutOrStdout(), &a)
				return nil
			})
		},
	}
	uf := uphold.Flags()
	uf.StringVar(&reason, "reason", "", "why (required)")
	uf.StringVar(&event, "event", "", "the disputed event to correct, as TYPE:ID")
	uf.StringVar(&status, "status", "", "its new final status")
	uf.StringVar(&agent, "agent", "", "the agent it moves to")
	uf.BoolVar(&void, "void", false, "void it")
	uf.StringVar(&correctionsFile, "corrections", "", "a JSON array of corrections ('-' for standard input)")
	return uphold
}

// eventKeys reads TYPE:ID values. The type never holds a colon, so an id
// may.
func eventKeys(vals []string) ([]ledger.EventKey, error) {
	out := make([]ledger.EventKey, len(vals))
	for i, v := range vals {
		typ, id, ok := strings.Cut(v, ":")
		if !ok || id == "" {
			return nil, usageErrorf("--event %q is not TYPE:ID (e.g. conduit_session:s-1)", v)
		}
		out[i] = ledger.EventKey{Type: ledger.Type(typ), ID: id}
	}
	return out, nil
}

// upholdCorrections reads an uphold's corrections from its flags or file.
func upholdCorrections(cmd *cobra.Command, event, status, agent string, void bool, file string) ([]ledger.CorrectionRequest, error) {
	single := event != "" || status != "" || agent != "" || void
	switch {
	case single && file != "":
		return nil, usageErrorf("give either --event with its correction or --corrections, not both")
	case file != "":
		return readCorrections(cmd, file)
	case event == "":
		return nil, usageErrorf("an uphold applies corrections: give --event TYPE:ID with --status, --agent or --void, or --corrections FILE")
	}
	keys, err := eventKeys([]string{event})
	if err != nil {
		return nil, err
	}
	req, err := correctionFlags(status, agent, void)
	if err != nil {
		return nil, err
	}
	req.EventType, req.EventID = keys[0].Type, keys[0].ID
	return []ledger.CorrectionRequest{req}, nil
}

func readCorrections(cmd *cobra.Command, file string) ([]ledger.CorrectionRequest, error) {
	var r io.Reader = cmd.InOrStdin()
	name := "standard input"
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
		}
		defer f.Close()
		r, name = f, file
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v", errkind.ErrInvalid, name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var in []api.CorrectionRequest // the members of POST /swarmscore/corrections
	if err := dec.Decode(&in); err != nil {
		return nil, invalidf("%s: not a JSON array of corrections: %v", name, err)
	}
	out := make([]ledger.CorrectionRequest, len(in))
	for i := range in {
		out[i] = wire.CorrectionRequest(&in[i])
	}
	return out, nil
}

func printAppeal(w io.Writer, s *service.AppealStatus) {
	a := &s.Appeal
	row := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-11s  %s\n", label, fmt.Sprintf(format, args...))
	}
	row("appeal", "%s", a.ID)
	row("agent", "%s", a.AgentID)
	row("passport", "%s (computed %s)", a.PassportID, ledger.FormatTime(a.PassportComputedAt))
	row("grounds", "%s", a.Grounds)
	row("state", "%s", a.State)
	row("filed", "%s by %s", ledger.FormatTime(a.FiledAt), a.FiledBy)
	var evs []string
	for _, e := range a.Events {
		evs = append(evs, string(e.Type)+":"+e.ID)
	}
	row("events", "%s", strings.Join(evs, ", "))
	row("statement", "%s", oneLine(a.Statement))
	if a.Decision != "" {
		row("decision", "%s", oneLine(a.Decision))
	}
	if len(a.Corrections) > 0 {
		row("corrections", "%s", strings.Join(a.Corrections, ", "))
	}
	if !a.ReissuedAt.IsZero() {
		row("re-issued", "%s", ledger.FormatTime(a.ReissuedAt))
	}
	if s.Next.Duty != "" {
		late := ""
		if s.Overdue {
			late = " (OVERDUE)"
		}
		row("next duty", "%s by %s%s", s.Next.Duty, ledger.FormatTime(s.Next.Due), late)
	}
	fmt.Fprintln(w, "history")
	for _, h := range a.History {
		fmt.Fprintf(w, "  %s  %s by %s", ledger.FormatTime(h.At), h.Action, h.By)
		if h.Note != "" {
			fmt.Fprintf(w, ": %s", oneLine(h.Note))
		}
		fmt.Fprintln(w)
	}
}

func printAppeals(w io.Writer, list []service.AppealStatus) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no appeals")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tAGENT\tFILED\tNEXT DUTY\tDUE")
	for i := range list {
		s := &list[i]
		duty, due := "-", "-"
		if s.Next.Duty != "" {
			duty, due = s.Next.Duty, ledger.FormatTime(s.Next.Due)
			if s.Overdue {
				due += " OVERDUE"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.State, s.AgentID, ledger.FormatTime(s.FiledAt), duty, due)
	}
	tw.Flush()
}
