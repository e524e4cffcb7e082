package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

func newAgentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Inspect agents, their consent, visibility, records and gaming signals; erase them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("missing subcommand (show, visibility, consent, records, signals, disclosure, erase, erasures)")
		},
	}
	cmd.AddCommand(newAgentShowCmd())
	cmd.AddCommand(agentRightsCmds()...)
	return cmd
}

func newAgentShowCmd() *cobra.Command {
	var db, asOf string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show an agent's 90-day counts, score and cache state",
		Long: `Show an agent's counts over the 90-day window, its score, tier, escrow
modifier and qualification gaps, computed from the ledger.

Without --as-of this is the current score: served from the score cache while
the cached entry is valid, else computed and cached ("refreshed"). With
--as-of T (RFC 3339) it is the score as of T: a cached entry valid at T is
used, otherwise it is computed from the ledger without caching ("bypassed").`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var at time.Time
			if asOf != "" {
				t, err := ledger.ParseTime("--as-of", asOf)
				if err != nil {
					return &usageError{err}
				}
				at = t
			}
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				info, err := u.Certificates.Agent(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				s, err := u.Certificates.AgentScore(cmd.Context(), args[0], at)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					var b bytes.Buffer
					if err := json.Indent(&b, appendAgentScoreJSON(nil, &s), "", "  "); err != nil {
						return err
					}
					b.WriteByte('\n')
					_, err := out.Write(b.Bytes())
					return err
				}
				r := &s.Entry.Result
				w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintf(w, "agent\t%s\n", info.ID)
				fmt.Fprintf(w, "registered\t%s\n", ledger.FormatTime(info.RegisteredAt))
				if info.PrunedThrough > 0 {
					fmt.Fprintf(w, "ledger\t%d records (1 to %d pruned and summarised), chain head %x\n", info.ChainLength, info.PrunedThrough, info.ChainHead[:8])
				} else {
					fmt.Fprintf(w, "ledger\t%d records, chain head %x\n", info.ChainLength, info.ChainHead[:8])
				}
				fmt.Fprintf(w, "as of\t%s\n", ledger.FormatTime(s.AsOf))
				fmt.Fprintf(w, "score\t%d\n", r.Score)
				fmt.Fprintf(w, "tier\t%s\n", r.Tier)
				fmt.Fprintf(w, "escrow modifier\t%s\n", r.Escrow)
				dim := func(name, verb string, d score.Dimension) {
					fmt.Fprintf(w, "%s\t%d/%d %s, rate %.4g, volume factor %.4g, contribution %d/%d\n",
						name, d.Success, d.Total, verb, d.Rate(), d.VolumeFactor(), d.Contribution, d.MaxContribution)
				}
				dim("conduit (90d)", "verified", r.Conduit())
				dim("ap2 (90d)", "settled", r.AP2())
				if gaps := r.Gaps(); len(gaps) > 0 {
					parts := make([]string, len(gaps))
					for i, g := range gaps {
						parts[i] = fmt.Sprintf("%s %d < %d", g.Requirement, g.Actual, g.Required)
					}
					fmt.Fprintf(w, "next tier\t%s needs %s\n", gaps[0].Tier, strings.Join(parts, ", "))
				}
				cache := fmt.Sprintf("%s (computed as of %s", s.Cache, ledger.FormatTime(s.Entry.ComputedAt))
				if !s.Entry.ValidUntil.IsZero() {
					cache += ", valid until " + ledger.FormatTime(s.Entry.ValidUntil)
				}
				fmt.Fprintf(w, "cache\t%s, expires %s)\n", cache, ledger.FormatTime(s.Entry.ExpiresAt))
				return w.Flush()
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&asOf, "as-of", "", "compute as of this RFC 3339 time instead of now")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// appendAgentScoreJSON appends `agent show --json`'s object: the agent and
// the entry's times, the `score --json` members
// (score.Result.AppendJSONFields), then the lookup's as_of, the entry's
// valid_until when it has one, the cache state and whether a passport is
// stored. Times keep their sub-second digits (RFC 3339 with nanoseconds,
// trailing zeros dropped).
func appendAgentScoreJSON(b []byte, s *service.AgentScore) []byte {
	appendTime := func(b []byte, name string, t time.Time) []byte {
		b = append(b, `,"`+name+`":"`...)
		return append(t.UTC().AppendFormat(b, time.RFC3339Nano), '"')
	}
	e := &s.Entry
	b = append(b, `{"agent_id":`...)
	b = strconv.AppendQuote(b, e.AgentID) // ids are [A-Za-z0-9._:-]: Go quoting is JSON-exact
	b = appendTime(b, "computed_at", e.ComputedAt)
	b = appendTime(b, "expires_at", e.ExpiresAt)
	b = append(b, ',')
	b = e.Result.AppendJSONFields(b)
	b = appendTime(b, "as_of", s.AsOf)
	if !e.ValidUntil.IsZero() {
		b = appendTime(b, "valid_until", e.ValidUntil)
	}
	if s.Cache != "" {
		b = append(b, `,"cache":`...)
		b = strconv.AppendQuote(b, string(s.Cache))
	}
	b = append(b, `,"passport_issued":`...)
	b = strconv.AppendBool(b, e.Passport != nil)
	return append(b, '}')
}
