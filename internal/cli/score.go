package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/cli/batchline"
	"github.com/swarmscore/swarmscore/score"
)

// countFlags are the four counts of §3.1 as flags, shared by `score` and
// `passport issue`.
type countFlags struct {
	counts score.Counts
}

var countFlagNames = [4]string{"conduit-total", "conduit-success", "ap2-total", "ap2-success"}

func (f *countFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.Int64Var(&f.counts.ConduitTotal, countFlagNames[0], 0, "Conduit sessions in the 90-day window (VERIFIED + FAILED)")
	fs.Int64Var(&f.counts.ConduitSuccess, countFlagNames[1], 0, "VERIFIED Conduit sessions in the window")
	fs.Int64Var(&f.counts.AP2Total, countFlagNames[2], 0, "AP2 transactions in the window (SETTLED + DISPUTED + REFUNDED)")
	fs.Int64Var(&f.counts.AP2Success, countFlagNames[3], 0, "SETTLED AP2 transactions in the window")
}

// compute requires all four flags (a forgotten flag silently meaning 0 would
// score the wrong agent) and applies the formula. Impossible counts are
// usage errors.
func (f *countFlags) compute(cmd *cobra.Command) (score.Result, error) {
	var missing []string
	for _, name := range countFlagNames {
		if !cmd.Flags().Changed(name) {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		return score.Result{}, usageErrorf("missing %s", strings.Join(missing, ", "))
	}
	r, err := score.Compute(f.counts)
	if err != nil {
		return score.Result{}, fmt.Errorf("impossible counts: %w", err)
	}
	return r, nil
}

func newScoreCmd() *cobra.Command {
	var (
		counts countFlags
		asJSON bool
		batch  bool
	)
	cmd := &cobra.Command{
		Use:   "score",
		Short: "Compute a SwarmScore from 90-day counts",
		Long: `Compute the SwarmScore V1 score, tier, escrow modifier and next-tier gaps
from an agent's 90-day counts, exactly (integer arithmetic).

With --json, print one JSON object:
  {"formula_version","score","tier","escrow_modifier",
   "conduit":{"total","success","rate","volume_factor","contribution","max_contribution"},
   "ap2":{...same...},"qualification_gaps":[{"tier","requirement","required","actual"}]}

With --batch, read NDJSON from standard input, one object per line:
  {"conduit_total":80,"conduit_success":76,"ap2_total":40,"ap2_success":38}
and write one --json object per input line, in order, streaming. Blank lines
are skipped (but counted in line numbers). Input is strict: unknown or
duplicate fields, missing fields, non-integers, negative counts and
success > total stop the run with "line N: <reason>" and exit status 1;
output for earlier lines has already been written. Lines longer than 64 KiB
are rejected.`,
		Example: `  swarmscore score --conduit-total 80 --conduit-success 76 --ap2-total 40 --ap2-success 38
  swarmscore score --json --conduit-total 80 --conduit-success 76 --ap2-total 40 --ap2-success 38
  printf '{"conduit_total":80,"conduit_success":76,"ap2_total":40,"ap2_success":38}\n' | swarmscore score --batch`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if batch {
				for _, name := range countFlagNames {
					if cmd.Flags().Changed(name) {
						return usageErrorf("--batch reads counts from standard input; --%s cannot be combined with it", name)
					}
				}
				return runBatch(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
			}
			r, err := counts.compute(cmd)
			if err != nil {
				return err
			}
			if asJSON {
				_, err := cmd.OutOrStdout().Write(append(r.AppendJSON(make([]byte, 0, 1024)), '\n'))
				return err
			}
			return writeScoreText(cmd.OutOrStdout(), &r)
		},
	}
	counts.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of the readable breakdown")
	cmd.Flags().BoolVar(&batch, "batch", false, "score NDJSON lines from standard input (implies --json)")
	return cmd
}

// writeScoreText prints the breakdown for people. Percentages and factors are
// rounded for display only; every decision was made in integers.
func writeScoreText(w io.Writer, r *score.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Score\t%d / %d\n", r.Score, score.MaxScore)
	fmt.Fprintf(tw, "Tier\t%s\n", r.Tier)
	fmt.Fprintf(tw, "Escrow modifier\t%s (hold %s of each payment)\n", r.Escrow, percentBasisPoints(r.Escrow.BasisPoints()))
	fmt.Fprintf(tw, "Formula version\t%s\n", score.FormulaVersion)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "Dimension\tSuccess / Total\tRate\tVolume factor\tContribution")
	for _, d := range []struct {
		name string
		dim  score.Dimension
	}{{"Conduit", r.Conduit()}, {"AP2", r.AP2()}} {
		fmt.Fprintf(tw, "%s\t%d / %d\t%s\t%s\t%d / %d\n", d.name, d.dim.Success, d.dim.Total,
			percent(d.dim), string(score.AppendJSONFloat(nil, d.dim.VolumeFactor())), d.dim.Contribution, d.dim.MaxContribution)
	}
	fmt.Fprintln(tw)
	if gaps := r.Gaps(); len(gaps) == 0 {
		if r.Tier == score.TierElite {
			fmt.Fprintln(tw, "Highest tier reached: no qualification gaps.")
		}
	} else {
		fmt.Fprintf(tw, "To reach %s:\n", gaps[0].Tier)
		for _, g := range gaps {
			fmt.Fprintf(tw, "  %s\tneeds %d\thas %d\n", g.Requirement, g.Required, g.Actual)
		}
	}
	return tw.Flush()
}

// percentBasisPoints renders basis points as an exact percentage: 3920 → 39.2%.
func percentBasisPoints(bp int32) string {
	s := strconv.Itoa(int(bp / 100))
	if frac := bp % 100; frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%02d", frac), "0")
	}
	return s + "%"
}

// percent renders success/total as a percentage truncated to two decimals
// (66.67%, 99.99% for 9999/10000... never a rounded-up 100%), in integers.
func percent(d score.Dimension) string {
	if d.Total == 0 {
		return "0%"
	}
	hi, lo := bits.Mul64(uint64(d.Success), 10000)
	bp, _ := bits.Div64(hi, lo, uint64(d.Total)) // hi < total since success <= total
	return percentBasisPoints(int32(bp))
}

// Batch scoring.

const (
	maxBatchLine = 64 << 10 // longest accepted input line, newline excluded
	batchOutBuf  = 64 << 10
)

// runBatch scores NDJSON lines from in to out. Memory is constant: one input
// buffer of maxBatchLine, one output buffer. Output is flushed whenever the
// input has nothing buffered (so an interactive producer sees its answers
// without waiting for a full buffer), before an error is returned, and at the
// end.
func runBatch(ctx context.Context, in io.Reader, out io.Writer) (err error) {
	br := bufio.NewReaderSize(in, maxBatchLine+1)
	bw := bufio.NewWriterSize(out, batchOutBuf)
	defer func() {
		if ferr := bw.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("writing output: %w", ferr)
		}
	}()
	for n := 1; ; n++ {
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
		}
		if n&1023 == 0 && ctx.Err() != nil {
			return withStatus(ExitFailure, fmt.Errorf("line %d: stopped: %w", n, context.Cause(ctx)))
		}
		line, rerr := br.ReadSlice('\n')
		switch {
		case rerr == bufio.ErrBufferFull:
			return withStatus(ExitFailure, invalidf("line %d: longer than %d bytes", n, maxBatchLine))
		case rerr != nil && rerr != io.EOF:
			return withStatus(ExitFailure, fmt.Errorf("reading line %d: %w", n, rerr))
		}
		if len(line) > 0 {
			c, blank, perr := batchline.Parse(line)
			if perr == nil && !blank {
				var r score.Result
				if r, perr = score.Compute(c); perr == nil {
					if bw.Available() < 1024 {
						if err := bw.Flush(); err != nil {
							return fmt.Errorf("writing output: %w", err)
						}
					}
					buf := r.AppendJSON(bw.AvailableBuffer())
					if _, err := bw.Write(append(buf, '\n')); err != nil {
						return fmt.Errorf("writing output: %w", err)
					}
				}
			}
			if perr != nil {
				return withStatus(ExitFailure, fmt.Errorf("line %d: %w", n, perr))
			}
		}
		if rerr == io.EOF {
			return nil
		}
	}
}
