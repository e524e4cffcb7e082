package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

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

// batchFields are the input fields, in the order of score.Counts.
var batchFields = [4]string{"conduit_total", "conduit_success", "ap2_total", "ap2_success"}

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
			c, blank, perr := parseCountsLine(line)
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

// parseCountsLine parses one batch line into counts. It checks syntax and
// types only (score.Compute checks the values). blank reports a line of
// JSON whitespace only. The common case goes through scanCounts, a
// hand-written scanner for exactly this flat object; anything it does not
// accept, valid or not, is decided by parseCountsJSON, which uses
// encoding/json and produces the specific error.
func parseCountsLine(line []byte) (c score.Counts, blank bool, err error) {
	switch c, st := scanCounts(line); st {
	case scanOK:
		return c, false, nil
	case scanBlank:
		return c, true, nil
	}
	return parseCountsJSON(line)
}

var (
	quotedConduitTotal   = []byte(`"conduit_total"`)
	quotedConduitSuccess = []byte(`"conduit_success"`)
	quotedAP2Total       = []byte(`"ap2_total"`)
	quotedAP2Success     = []byte(`"ap2_success"`)
)

type scanStatus uint8

const (
	scanOK scanStatus = iota
	scanBlank
	scanFallback // not decided: let parseCountsJSON decide and explain
)

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanCounts accepts the canonical shape: an object with each of the four
// fields exactly once, in any order, unescaped keys, and non-negative integers
// of at most 18 digits (so no overflow check is needed), with JSON whitespace
// anywhere JSON allows it. It never accepts anything encoding/json rejects
// (FuzzBatchLine checks this).
func scanCounts(b []byte) (c score.Counts, st scanStatus) {
	i := skipSpace(b, 0)
	if i == len(b) {
		return c, scanBlank
	}
	if b[i] != '{' {
		return c, scanFallback
	}
	i++
	var vals [4]int64
	var seen uint8
	for {
		i = skipSpace(b, i)
		if i == len(b) || b[i] != '"' {
			return c, scanFallback
		}
		// Match the quoted key as a whole literal, closing quote included,
		// so a longer key or an escaped one falls through to the strict
		// parser.
		rest := b[i:]
		var f int
		switch {
		case bytes.HasPrefix(rest, quotedConduitTotal):
			f, i = 0, i+len(quotedConduitTotal)
		case bytes.HasPrefix(rest, quotedConduitSuccess):
			f, i = 1, i+len(quotedConduitSuccess)
		case bytes.HasPrefix(rest, quotedAP2Total):
			f, i = 2, i+len(quotedAP2Total)
		case bytes.HasPrefix(rest, quotedAP2Success):
			f, i = 3, i+len(quotedAP2Success)
		default:
			return c, scanFallback
		}
		if seen&(1<<f) != 0 {
			return c, scanFallback
		}
		seen |= 1 << f
		i = skipSpace(b, i)
		if i == len(b) || b[i] != ':' {
			return c, scanFallback
		}
		i++
		i = skipSpace(b, i)
		digits := i
		var v int64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			v = v*10 + int64(b[i]-'0')
			i++
		}
		if n := i - digits; n == 0 || n > 18 || (n > 1 && b[digits] == '0') {
			return c, scanFallback
		}
		vals[f] = v
		i = skipSpace(b, i)
		if i == len(b) {
			return c, scanFallback
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '}' {
			return c, scanFallback
		}
		i++
		break
	}
	i = skipSpace(b, i)
	if i != len(b) || seen != 0xF {
		return c, scanFallback
	}
	return score.Counts{ConduitTotal: vals[0], ConduitSuccess: vals[1], AP2Total: vals[2], AP2Success: vals[3]}, scanOK
}

// parseCountsJSON is the strict, general parser: valid JSON (RFC 8259), one
// object, the four fields exactly once each (keys compared after unescaping,
// case-sensitively, unlike encoding/json's struct decoding), each an integer
// in int64 range written without fraction or exponent. Errors match
// errkind.ErrInvalid and name the field.
func parseCountsJSON(line []byte) (c score.Counts, blank bool, err error) {
	if len(bytes.TrimLeft(line, " \t\r\n")) == 0 {
		return c, true, nil
	}
	if !json.Valid(line) {
		var raw json.RawMessage
		err := json.Unmarshal(line, &raw)
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return c, false, invalidf("invalid JSON at byte %d: %s", syn.Offset, syn.Error())
		}
		return c, false, invalidf("invalid JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return c, false, invalidf("invalid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return c, false, invalidf("want a JSON object with %s, got %s", strings.Join(batchFields[:], ", "), jsonKind(tok))
	}
	var vals [4]int64
	var seen uint8
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return c, false, invalidf("invalid JSON: %v", err)
		}
		key, _ := tok.(string) // json.Valid guarantees object keys are strings
		f := -1
		for i, name := range batchFields {
			if key == name {
				f = i
			}
		}
		if f < 0 {
			return c, false, invalidf("unknown field %q (want %s)", key, strings.Join(batchFields[:], ", "))
		}
		if seen&(1<<f) != 0 {
			return c, false, invalidf("duplicate field %q", key)
		}
		seen |= 1 << f
		tok, err = dec.Token()
		if err != nil {
			return c, false, invalidf("invalid JSON: %v", err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return c, false, invalidf("%s: want an integer, got %s", key, jsonKind(tok))
		}
		v, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
				return c, false, invalidf("%s: %s is out of range", key, num)
			}
			return c, false, invalidf("%s: want an integer, got %s", key, num)
		}
		vals[f] = v
	}
	for i, name := range batchFields {
		if seen&(1<<i) == 0 {
			return c, false, invalidf("missing field %q", name)
		}
	}
	return score.Counts{ConduitTotal: vals[0], ConduitSuccess: vals[1], AP2Total: vals[2], AP2Success: vals[3]}, false, nil
}

// jsonKind names the type of a JSON token for error messages.
func jsonKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case json.Number:
		return "the number " + v.String()
	}
	return fmt.Sprintf("%T", tok)
}
