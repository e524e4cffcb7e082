package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/service"
)

const pruneLong = `Apply retention (spec §11.4): events that ended before now − KEEP − the
30-day appeal window are aggregated and anonymised. For each agent, the
longest prefix of its hash chain made of such events (final, and never moved
to another agent by a correction) is deleted with their rows, buyers and
corrections, and replaced by an anchor (the hash the chain continues from)
and a summary record appended to the chain: their counts by type, final
status and month, with no event or buyer id. A checkpoint is then signed
over the new heads, so the summary is notarised. 'ledger verify' still
passes; no score whose window is in use changes (KEEP is at least 90d).

KEEP is a number of days (90d) or a Go duration (2160h). An event stops a
chain's prefix while it is not final: report its final status (an abandoned
session as TIMEOUT or ERROR) and it goes with the next prune.
'serve --prune-keep' runs this on a schedule.`

// parseRetention reads a retention period: N days ("90d") or a Go
// duration.
func parseRetention(flag, s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 100000 {
			return 0, usageErrorf("%s %q is not a number of days like 90d", flag, s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, usageErrorf("%s %q is not a number of days like 90d or a duration like 2160h", flag, s)
	}
	return d, nil
}

// newLedgerPruneCmd is `ledger prune`; db and asJSON are the ledger
// command's flags.
func newLedgerPruneCmd(db *string, asJSON *bool) *cobra.Command {
	var keep string
	cmd := &cobra.Command{
		Use:   "prune --keep 90d",
		Short: "Aggregate and anonymise events past the retention period",
		Long:  pruneLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keep == "" {
				return usageErrorf("--keep is required (e.g. --keep 90d)")
			}
			d, err := parseRetention("--keep", keep)
			if err != nil {
				return err
			}
			return withSigning(cmd, *db, readOnly, func(u *service.UseCases) error {
				r, err := u.Audit.Prune(cmd.Context(), d)
				if err != nil {
					return err
				}
				if *asJSON {
					return printJSON(cmd, map[string]any{"cutoff": r.Cutoff.UTC().Format(time.RFC3339), "agents": r.Agents,
						"records": r.Records, "events": r.Events, "checkpoint": r.Checkpoint})
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "events that ended before %s: %d pruned from %d %s (%d chain records), summarised\n",
					r.Cutoff.UTC().Format(time.RFC3339), r.Events, r.Agents, plural(int(r.Agents), "chain", "chains"), r.Records)
				if r.Checkpoint > 0 {
					fmt.Fprintf(out, "checkpoint %d signs the new heads\n", r.Checkpoint)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&keep, "keep", "", "retention period: days (90d) or a duration; at least 90 days")
	return cmd
}

// startPrunes runs retention every `every` until ctx ends or stop is
// called; stop waits for a prune under way.
func startPrunes(ctx context.Context, a *service.Audit, keep, every time.Duration, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			r, err := a.Prune(ctx, keep)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				log.Warn("retention prune failed; retrying at the next tick", "err", err, "every", every.String())
			case r.Agents > 0:
				log.Info("retention prune", "cutoff", r.Cutoff, "chains", r.Agents, "events", r.Events, "records", r.Records, "checkpoint", r.Checkpoint)
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
