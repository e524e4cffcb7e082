package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// withSigning is withUseCases for commands that sign: the passports a
// correction re-issues, checkpoints. It gives the use cases the keyring as
// serve opens it (openKeyring: SWARMSCORE_SIGNING_KEY, else the database's,
// given its first key if it has none, as serve would), the issuer platform
// ($SWARMSCORE_PLATFORM, else serve's default), the environment and the
// process's clock. The database is checked first, so nothing is created for
// a database that does not exist.
func withSigning(cmd *cobra.Command, db string, mode dbMode, f func(*service.UseCases) error) error {
	return withUseCases(cmd, db, mode, f, func(st service.Backend, cfg *service.Config) error {
		// Only a generated key would be logged at Info; the CLI says
		// nothing on success.
		quiet := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
		if err := openKeyring(cmd, db, st, cfg, quiet, true); err != nil {
			return err
		}
		return configure(cmd)(st, cfg)
	})
}

// configure gives the use cases what serve gives them besides keys.
func configure(cmd *cobra.Command) setupFunc {
	return func(_ service.Backend, cfg *service.Config) error {
		var kf keyFlags
		cfg.Platform = kf.platformOf(cmd, "")
		cfg.Environment = kf.env(cmd)
		cfg.Now = process(cmd).Now
		return nil
	}
}

const correctLong = `Correct a recorded event (spec §11.3). A correction never edits history: it
is appended to the hash chains of the agents it affects, and says what
changes, who made it and why. Exactly one of:

  --status S   a new final status, e.g. a chargeback after settlement
               (ap2_transaction SETTLED -> DISPUTED or REFUNDED) or a session
               wrongly marked VERIFIED (conduit_session -> FAILED)
  --agent ID   re-attribution: the event was filed under the wrong agent
  --void       the event stops counting altogether

--reason is required; --appeal names the appeal the correction answers (it
must exist). The affected agents' scores are recomputed and their passports
re-issued in the correction's transaction, signed with the key serve uses
(the keyring's active key, or SWARMSCORE_SIGNING_KEY when it is set; see
'swarmscore key --help'), with issuer.platform from SWARMSCORE_PLATFORM
(default swarmscore). Running the
same correction again changes nothing and prints the first one.

With --json: the correction as POST /swarmscore/corrections returns it.

Exit status: 0 when recorded or already recorded, 2 for a correction that is
invalid or changes nothing, 3 for an unknown event or appeal, 5 for an event
that is not final yet or was voided.`

func newCorrectCmd() *cobra.Command {
	var db, operator, status, agent, reason, appealID string
	var void, asJSON bool
	cmd := &cobra.Command{
		Use:   "correct EVENT_TYPE EVENT_ID (--status S | --agent ID | --void) --reason TEXT",
		Short: "Correct an event's final status or agent, or void it (chargebacks too)",
		Long:  correctLong,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := correctionFlags(status, agent, void)
			if err != nil {
				return err
			}
			req.EventType, req.EventID, req.Reason, req.AppealID, req.By = ledger.Type(args[0]), args[1], reason, appealID, operator
			return withSigning(cmd, db, readOnly, func(u *service.UseCases) error {
				c, created, err := u.Corrections.Correct(cmd.Context(), req)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, wire.CorrectionOf(&c))
				}
				printCorrection(cmd.OutOrStdout(), &c, created)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&operator, "operator", "local", "the operator making the correction (recorded as its author)")
	f.StringVar(&status, "status", "", "the event's new final status")
	f.StringVar(&agent, "agent", "", "the agent the event moves to")
	f.BoolVar(&void, "void", false, "void the event: it no longer counts")
	f.StringVar(&reason, "reason", "", "why (required; recorded in the chain)")
	f.StringVar(&appealID, "appeal", "", "the appeal the correction answers")
	f.BoolVar(&asJSON, "json", false, "print the correction as JSON")
	return cmd
}

// correctionFlags turns --status, --agent and --void, exactly one of
// which is given, into the request's action and target.
func correctionFlags(status, agent string, void bool) (ledger.CorrectionRequest, error) {
	var req ledger.CorrectionRequest
	n := 0
	if status != "" {
		n++
		req.Action, req.Status = ledger.ActionStatus, ledger.Status(strings.ToUpper(status))
	}
	if agent != "" {
		n++
		req.Action, req.AgentID = ledger.ActionReattribute, agent
	}
	if void {
		n++
		req.Action = ledger.ActionVoid
	}
	if n != 1 {
		return req, usageErrorf("give exactly one of --status, --agent and --void")
	}
	return req, nil
}

func printCorrection(w io.Writer, c *ledger.Correction, created bool) {
	what := fmt.Sprintf("%s %s %s", c.EventType, c.EventID, c.Action)
	switch c.Action {
	case ledger.ActionStatus:
		what = fmt.Sprintf("%s %s: %s -> %s (agent %s)", c.EventType, c.EventID, c.FromStatus, c.ToStatus, c.FromAgent)
	case ledger.ActionReattribute:
		what = fmt.Sprintf("%s %s: agent %s -> %s", c.EventType, c.EventID, c.FromAgent, c.ToAgent)
	case ledger.ActionVoid:
		what = fmt.Sprintf("%s %s (agent %s, %s): voided", c.EventType, c.EventID, c.FromAgent, c.FromStatus)
	}
	if created {
		fmt.Fprintf(w, "correction %s recorded: %s\n", c.ID, what)
	} else {
		fmt.Fprintf(w, "correction %s was already recorded at %s: %s; nothing changed\n", c.ID, ledger.FormatTime(c.At), what)
	}
	if !c.ReissuedAt.IsZero() {
		agents := c.FromAgent
		if c.ToAgent != c.FromAgent {
			agents += " and " + c.ToAgent
		}
		fmt.Fprintf(w, "passports of %s re-issued at %s\n", agents, ledger.FormatTime(c.ReissuedAt))
	}
}
