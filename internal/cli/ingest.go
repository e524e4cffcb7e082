package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
)

const ingestLong = `Record Conduit sessions and AP2 transactions from an NDJSON file (one
event object per line; '-' or no FILE reads standard input):

  {"type":"conduit_session","id":"s-1","agent_id":"agent-1","buyer_id":"b-1","status":"VERIFIED","started_at":"2026-03-17T14:00:00Z","completed_at":"2026-03-17T14:05:00Z"}
  {"type":"ap2_transaction","id":"t-1","provider_id":"agent-1","buyer_id":"b-1","status":"SETTLED","escrow_amount_cents":100000,"started_at":"2026-03-17T14:00:00Z","settled_at":"2026-03-18T09:00:00Z"}

Times are RFC 3339 with any offset (stored in UTC, at most microsecond
precision). buyer_id is optional for Conduit sessions. completed_at/settled_at
are required exactly when the status is terminal. Reporting a later status of
an event is sending the same id again with the new status; re-sending the same
event is a no-op (a duplicate).

Events are written in batches of --batch-size, each all or nothing. A
malformed line, or an event that contradicts the ledger (a changed agent,
buyer, amount or start, a backward status), is rejected on its own: the other
lines are still recorded. A report of an earlier status than the one recorded
(a re-sent export, or a final status that arrived first) is "superseded": a
no-op, like a duplicate. The summary lists rejected lines by number.

Exit status: 0 when every line was accepted, a duplicate or superseded, 1
when any line was rejected (the others are recorded), 4 when the database
failed (batches already reported as committed stay committed).`

func newIngestCmd() *cobra.Command {
	var db, operator string
	var batch int
	cmd := &cobra.Command{
		Use:   "ingest [FILE|-]",
		Short: "Record events from an NDJSON file or standard input",
		Long:  ingestLong,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if batch < 1 || batch > service.MaxBatchSize {
				return usageErrorf("--batch-size %d is outside 1..%d", batch, service.MaxBatchSize)
			}
			in := cmd.InOrStdin()
			name := "standard input"
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
				}
				defer f.Close()
				in, name = f, args[0]
			}
			return withUseCases(cmd, db, true, func(u *service.UseCases) error {
				return ingest(cmd, u, in, name, operator, batch)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&operator, "operator", "local", "the operator (platform) reporting the events")
	f.IntVar(&batch, "batch-size", service.DefaultBatchSize, fmt.Sprintf("events per transaction (1..%d)", service.MaxBatchSize))
	return cmd
}

func ingest(cmd *cobra.Command, u *service.UseCases, in io.Reader, name, operator string, batch int) error {
	stderr := cmd.ErrOrStderr()
	var progress func(service.Progress)
	tty := isTerminal(stderr)
	if tty {
		progress = func(p service.Progress) {
			fmt.Fprintf(stderr, "\r%d lines: %d accepted, %d duplicates, %d superseded, %d rejected",
				p.Lines, p.Accepted, p.Duplicates, p.Superseded, len(p.Rejected))
		}
	}
	rep, err := u.IngestStream(cmd.Context(), operator, in, batch, progress)
	if tty {
		fmt.Fprintln(stderr)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%s: %d accepted, %d duplicates, %d superseded, %d rejected\n",
		name, rep.Accepted, rep.Duplicates, rep.Superseded, len(rep.Rejected))
	for _, r := range rep.Rejected {
		fmt.Fprintf(out, "line %d: %v\n", r.Line, r.Err)
	}
	if err != nil {
		return err
	}
	if n := len(rep.Rejected); n > 0 {
		return withStatus(ExitFailure, fmt.Errorf("%d line(s) rejected; the other events were recorded", n))
	}
	return nil
}

// isTerminal reports whether w is a terminal, where a person reads: a
// progress line that rewrites itself is welcome, and logs are text.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
