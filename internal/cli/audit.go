package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Export an agent's audit bundle and re-check one offline (L3)",
		Long: `An audit bundle (spec §7.1, L3) is everything needed to re-check an agent's
score with nothing but the bundle and a key: the passport, every event and
correction of the agent's hash chain (counted, or excluded and why), the chain
records with their hashes and head, the records of events moved in from other
agents' chains, and the latest signed checkpoint with an inclusion proof.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("missing subcommand (export, verify)")
		},
	}
	cmd.AddCommand(newAuditExportCmd(), newAuditVerifyCmd())
	return cmd
}

func newAuditExportCmd() *cobra.Command {
	var db, asOf, withhold, openings string
	cmd := &cobra.Command{
		Use:   "export AGENT",
		Short: "Print an agent's audit bundle on standard output",
		Long: `Print the audit bundle of AGENT as of --as-of (RFC 3339; default: the current
certificate's computed_at, signing a new certificate if none is current, which
needs the signing key as serve finds it) on standard output.

With --as-of T the window is [T - 90 days, T] and the passport is the last one
issued that was in force at T, if any. --withhold replaces other parties'
identifiers by salted commitments (comma-separated: buyers, operators, agents,
reasons); --openings FILE writes what opens them (keep it private: it reveals
them).

Exit status: 0 printed, 2 usage, 3 unknown agent, 4 database unavailable,
5 records that cannot be audited (run 'swarmscore ledger verify').`,
		Example: `  swarmscore audit export agent-7 > agent-7.audit.json
  swarmscore audit export agent-7 --as-of 2026-11-22T00:00:00Z --withhold buyers,operators`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var q service.AuditQuery
			if asOf != "" {
				t, err := ledger.ParseTime("--as-of", asOf)
				if err != nil {
					return &usageError{err}
				}
				q.AsOf = t
			}
			cats, err := audit.ParseCategories(withhold)
			if err != nil {
				return &usageError{err}
			}
			q.Withhold = cats
			if openings != "" && len(cats) == 0 {
				return usageErrorf("--openings needs --withhold: nothing is withheld")
			}
			setup := func(st service.Backend, cfg *service.Config) error {
				if err := exportKeys(cmd, db, st, cfg, q.AsOf.IsZero()); err != nil {
					return err
				}
				cfg.Platform = getenv(cmd, platformEnv)
				if cfg.Platform == "" {
					cfg.Platform = "swarmscore"
				}
				return nil
			}
			return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
				b, open, err := u.Audit.AuditBundle(cmd.Context(), args[0], q)
				if err != nil {
					return err
				}
				if openings != "" {
					if err := os.WriteFile(openings, open.AppendJSON(nil), 0o600); err != nil {
						return invalidf("writing the openings: %w", err)
					}
				}
				_, err = cmd.OutOrStdout().Write(b.AppendJSON(nil))
				return err
			}, setup)
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&asOf, "as-of", "", "audit the window ending at this RFC 3339 time (default: the current certificate's)")
	f.StringVar(&withhold, "withhold", "", "withhold these identifiers: buyers,operators,agents,reasons")
	f.StringVar(&openings, "openings", "", "write the openings of the withheld identifiers to this file (mode 0600)")
	return cmd
}

// exportKeys gives an export the keys it may sign the current certificate
// with: the keyring serve signs with (SWARMSCORE_SIGNING_KEY, else the
// database's). It never makes one: an export that may sign with an empty
// keyring is an error, and one with --as-of signs nothing.
func exportKeys(cmd *cobra.Command, db string, st service.KeyStore, cfg *service.Config, mustSign bool) error {
	if !mustSign && getenv(cmd, service.SigningKeyEnv) == "" {
		return nil
	}
	return openKeyring(cmd, db, st, cfg, slog.New(slog.DiscardHandler), false)
}

func newAuditVerifyCmd() *cobra.Command {
	var keysFile, openingsFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify BUNDLE",
		Short: "Re-check an audit bundle offline and name the first discrepancy",
		Long: `Re-check the audit bundle in BUNDLE ("-" for standard input) with nothing but
it and a key, in this order: the hash chains (every record at its seq, its
content as the ledger writes it, its link recomputed, the head), the
checkpoint's signature and inclusion proofs, the ledger's rules and the
corrections applied, the bundle's account of every event, the counts and score
recomputed (score.Compute), the passport (signature, agent, expiry, and its
counts as of its computed_at), and the agent's escrow holds as provider (each
hold's chain of steps, its money, the passport that priced it verified at the
hold's creation with the hold's score, tier and modifier, the hold rounded up,
and the chain's reports and corrections of its transaction).

Keys: SWARMSCORE_SIGNING_KEY (HMAC passports and HS256 checkpoints) and/or
--keys FILE|URL, a JWK set (RFC 7517) whose Ed25519 public keys check EdDSA
checkpoints and passports: the server's key set (a base URL means its
/.well-known/swarmscore-keys.json), or, for an archived bundle whose key has
been rotated out since, its key history
(/.well-known/swarmscore-key-history.json), whose keys check what they
signed while they were active, retired or not, and nothing a revoked key
signed. --openings FILE (from 'audit export --openings') discloses
withheld identifiers so that their records are checked in full.

Records with withheld members cannot be re-hashed: they are reported as a
warning, and what they disclose is not bound by the chain (see README).

Exit status: 0 every check passed, 1 a discrepancy (named), 2 usage, no key,
or unreadable input, 4 a key set URL that cannot be reached.`,
		Example: `  swarmscore audit verify agent-7.audit.json
  swarmscore audit export agent-7 | swarmscore audit verify --json -
  swarmscore audit verify --keys https://scores.example.com/.well-known/swarmscore-key-history.json agent-7.audit.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			secret := getenv(cmd, service.SigningKeyEnv)
			if secret == "" && keysFile == "" {
				return usageErrorf("no key: set %s or give --keys FILE", service.SigningKeyEnv)
			}
			var set []byte
			if keysFile != "" {
				b, err := readKeyDocument(cmd, keysFile)
				if err != nil {
					return err
				}
				set = b
			}
			var sec []byte
			if secret != "" {
				sec = []byte(secret)
			}
			keys, err := audit.NewKeys(sec, set)
			if err != nil {
				return err
			}
			doc, err := readAuditFile(cmd.InOrStdin(), args[0], audit.MaxBundleSize, "bundle")
			if err != nil {
				return err
			}
			var r *audit.Report
			b, err := audit.Parse(doc)
			switch {
			case err != nil:
				r = audit.VerifyDocument(doc, keys) // the malformed bundle, as a report
			case openingsFile != "":
				ob, err := readAuditFile(cmd.InOrStdin(), openingsFile, audit.MaxBundleSize, "openings")
				if err != nil {
					return err
				}
				o, err := audit.ParseOpenings(ob)
				if err != nil {
					return err
				}
				if _, err := b.Open(o); err != nil {
					return err
				}
				fallthrough
			default:
				r = audit.Verify(b, keys)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				j, err := json.Marshal(r)
				if err != nil {
					return err
				}
				if _, err := out.Write(append(j, '\n')); err != nil {
					return err
				}
			} else if err := printAuditReport(out, r); err != nil {
				return err
			}
			if !r.Valid {
				return withStatus(ExitFailure, fmt.Errorf("the bundle does not verify: %s", r.Discrepancy.Code))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&keysFile, "keys", "", "a JWK set or key history (FILE or URL) whose Ed25519 public keys check EdDSA checkpoints and passports")
	f.StringVar(&openingsFile, "openings", "", "openings of withheld identifiers (from audit export --openings)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// readAuditFile reads name ("-" for stdin) up to limit bytes; failing to
// read, or more, is status 2.
func readAuditFile(stdin io.Reader, name string, limit int64, what string) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, invalidf("reading the %s: %w", what, err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, invalidf("reading the %s from %s: %w", what, displayName(name), err)
	}
	if int64(len(b)) > limit {
		return nil, &kindError{errkind.ErrInvalid, fmt.Errorf("the %s in %s is larger than %d bytes", what, displayName(name), limit)}
	}
	return b, nil
}

func printAuditReport(out io.Writer, r *audit.Report) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if r.AgentID != "" {
		fmt.Fprintf(w, "agent\t%s\n", r.AgentID)
		fmt.Fprintf(w, "as of\t%s\n", ledger.FormatTime(r.AsOf))
	}
	if r.Chains > 0 {
		fmt.Fprintf(w, "chains\t%d, %d records, %d re-hashed\n", r.Chains, r.Records, r.Linked)
	}
	switch {
	case r.Checkpoint > 0 && r.Anchored > 0:
		fmt.Fprintf(w, "checkpoint\t%d, anchoring the agent's chain up to seq %d\n", r.Checkpoint, r.Anchored)
	case r.Checkpoint > 0:
		fmt.Fprintf(w, "checkpoint\t%d, which does not anchor the agent's chain\n", r.Checkpoint)
	}
	if r.LogSize > 0 {
		fmt.Fprintf(w, "log\tthe head record is leaf %d of the transparency log of %d leaves (signed note)\n", r.LogIndex, r.LogSize)
	}
	if len(r.Events) > 0 {
		outcomes := make([]string, 0, len(r.Events))
		total := 0
		for _, o := range audit.Outcomes {
			if n := r.Events[o]; n > 0 {
				outcomes = append(outcomes, fmt.Sprintf("%d %s", n, o))
				total += n
			}
		}
		fmt.Fprintf(w, "events\t%d: %s\n", total, strings.Join(outcomes, ", "))
	}
	if r.Discrepancy == nil || r.Discrepancy.Code == audit.CodePassport || r.Discrepancy.Code == audit.CodePassportCounts {
		c := r.Counts
		if r.AgentID != "" {
			fmt.Fprintf(w, "counts\tconduit %d/%d, ap2 %d/%d (success/total)\n", c.ConduitSuccess, c.ConduitTotal, c.AP2Success, c.AP2Total)
			fmt.Fprintf(w, "score\t%d\n", r.Score)
		}
	}
	if r.PassportID != "" {
		fmt.Fprintf(w, "passport\t%s verified\n", r.PassportID)
	}
	if r.Holds > 0 {
		fmt.Fprintf(w, "holds\t%d checked: chains, money, the passports that priced them, the chain's reports\n", r.Holds)
	}
	for _, f := range r.Warnings {
		fmt.Fprintf(w, "warning\t%s\n", f.Error())
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if r.Discrepancy != nil {
		_, err := fmt.Fprintf(out, "DISCREPANCY %s\n", r.Discrepancy.Error())
		return err
	}
	_, err := fmt.Fprintln(out, "every check passed")
	return err
}
