package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// platformEnv names the default issuer.platform, shared with `serve`.
const platformEnv = "SWARMSCORE_PLATFORM"

func newPassportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "passport",
		Short: "Issue and verify signed Execution Passports",
		Long: `Issue and verify Execution Passports (§6): JSON documents carrying an agent's
score, signed with HMAC-SHA256 over their RFC 8785 canonical form with the key
in SWARMSCORE_SIGNING_KEY (its literal bytes, at least 32; see 'swarmscore keygen'),
named in issuer.kid. 'passport verify' also accepts the verify-only keys of
SWARMSCORE_VERIFY_KEYS, or verifies Ed25519 passports with a server's public
keys (--keys) and no secret.`,
		Args: noArgs,
	}
	cmd.AddCommand(newPassportIssueCmd(), newPassportVerifyCmd(), newPassportCredentialCmd())
	return cmd
}

// signingKeys reads the static keys from the environment: the active one
// (SWARMSCORE_SIGNING_KEY, with its key id) and every key, the
// verify-only ones of SWARMSCORE_VERIFY_KEYS included, as a server started
// with the same variables has them. Its errors say what is wrong with a key
// (absent, too short, almost no entropy) and never contain it.
func signingKeys(cmd *cobra.Command) (active passport.Key, all []passport.Key, err error) {
	secret := getenv(cmd, service.SigningKeyEnv)
	if secret == "" {
		return passport.Key{}, nil, invalidf("%s is not set; generate a key with 'swarmscore keygen'", service.SigningKeyEnv)
	}
	if len(secret) < passport.MinKeySize {
		return passport.Key{}, nil, invalidf("%s is %d bytes; at least %d are required (generate one with 'swarmscore keygen')",
			service.SigningKeyEnv, len(secret), passport.MinKeySize)
	}
	keys, err := service.OpenKeyring(cmd.Context(), nil, service.KeyConfig{SigningKey: secret, VerifyKeys: getenv(cmd, service.VerifyKeysEnv)})
	if err != nil {
		return passport.Key{}, nil, err
	}
	return keys.SigningKey(), keys.VerifyKeys(), nil
}

// atFlag is an optional RFC 3339 instant; the zero value means now.
type atFlag struct{ t time.Time }

func (f *atFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *atFlag) Set(s string) error {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time such as 2026-03-17T14:30:00Z")
	}
	f.t = t
	return nil
}

func (f *atFlag) Type() string { return "RFC3339" }

func (f *atFlag) time() time.Time {
	if f.t.IsZero() {
		return time.Now()
	}
	return f.t
}

func newPassportIssueCmd() *cobra.Command {
	var (
		counts   countFlags
		agentID  string
		platform string
		at       atFlag
		formula  string
	)
	cmd := &cobra.Command{
		Use:   "issue",
		Short: "Compute a score and print it as a signed passport",
		Long: `Compute the score from the four 90-day counts and print a signed Execution
Passport for the agent: computed_at is --at (default now, truncated to the
second), expires_at seven days later, agent_passport_id a fresh UUIDv4. The
score is formula --formula's (default 1.0, the only one this build implements;
an unknown version exits with status 2).

The key is SWARMSCORE_SIGNING_KEY, named in issuer.kid (hs256- and its
fingerprint, as a server with that key names it); a missing or short key, or
one with almost no entropy, exits with status 2.`,
		Example: `  export SWARMSCORE_SIGNING_KEY=$(swarmscore keygen)
  swarmscore passport issue --agent-id agent-42 --conduit-total 80 --conduit-success 76 --ap2-total 40 --ap2-success 38`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if agentID == "" {
				return usageErrorf("missing --agent-id")
			}
			r, err := counts.compute(cmd)
			if err != nil {
				return err
			}
			issueWith := score.V1
			if formula != score.FormulaVersion {
				known := process(cmd).Formulas
				if known == nil {
					known = score.Builtin()
				}
				f, ok := known.Lookup(formula)
				if !ok {
					return usageErrorf("--formula: unknown formula version %q (this build implements %s)", formula, strings.Join(known.Versions(), ", "))
				}
				if r, err = f.Compute(r.Counts); err != nil {
					return err
				}
				issueWith = f
			}
			key, _, err := signingKeys(cmd)
			if err != nil {
				return err
			}
			if platform == "" {
				platform = getenv(cmd, platformEnv)
			}
			if platform == "" {
				platform = "swarmscore"
			}
			p, err := passport.NewWith(issueWith, agentID, platform, r, at.time())
			if err != nil {
				return passportError(err)
			}
			doc, err := p.Sign(key)
			if err != nil {
				return passportError(err)
			}
			_, err = cmd.OutOrStdout().Write(append(doc, '\n'))
			return err
		},
	}
	counts.register(cmd)
	cmd.Flags().StringVar(&agentID, "agent-id", "", "the agent the passport is for (1-128 of A-Z a-z 0-9 . _ : -)")
	cmd.Flags().StringVar(&platform, "platform", "", "issuer.platform (default $"+platformEnv+", else swarmscore)")
	cmd.Flags().Var(&at, "at", "computed_at as RFC 3339 (default now)")
	cmd.Flags().StringVar(&formula, "formula", score.FormulaVersion, "the formula version to compute the score with")
	return cmd
}

// passportError gives passport's input errors the Invalid kind (status 2).
func passportError(err error) error {
	if errors.Is(err, passport.ErrInvalid) {
		return &kindError{errkind.ErrInvalid, err}
	}
	return err
}

func newPassportVerifyCmd() *cobra.Command {
	var (
		at      atFlag
		agentID string
		keySet  string
		formula formulaFlags
	)
	cmd := &cobra.Command{
		Use:   "verify [FILE|-]",
		Short: "Verify a passport's signature, consistency and expiry",
		Long: `Verify an Execution Passport read from FILE, or standard input when FILE is
"-" or absent, with the keys in SWARMSCORE_SIGNING_KEY and
SWARMSCORE_VERIFY_KEYS, or with --keys the public keys of a JWK set (a file,
or an http(s) URL: a server's base URL means its
/.well-known/swarmscore-keys.json), which verify Ed25519 passports with no
shared secret, at the instant --at (default now). An archived passport whose
key has been rotated out since verifies with the server's key history
(/.well-known/swarmscore-key-history.json): a key's signature is accepted on
a passport computed while it was active (give or take 5 minutes), retired or
not (key_inactive otherwise), and never a revoked key's (key_revoked). Print
the verification as JSON:
  {"valid","signature_valid","score_valid","expires_at","detected_tampering",
   "errors":[{"code","message"}],"warnings":[{"code","message"}],
   "checks":{"signature","consistency","expiry","ledger","agent"}}

valid = signature valid AND score internally consistent AND not expired (AND,
with --agent-id, issued for that agent). Error codes are stable (see the
passport package). checks says what each level found: signature and
consistency "ok" or "failed", expiry "ok", "expired" or "failed" (no readable
expires_at), agent "ok", "mismatch" or "not_applicable" (no --agent-id), and
ledger always "not_applicable" here: only a server holding the agent's ledger
(POST /swarmscore/verify) can confirm the counts.

` + formulaHelp + `

Exit status: 0 valid, 1 not valid, 2 usage error, missing or short key,
unreadable input or key set, unknown formula version, 4 a key set URL that
cannot be reached.`,
		Example: `  swarmscore passport verify passport.json
  swarmscore passport issue ... | swarmscore passport verify --at 2026-03-20T00:00:00Z -
  swarmscore passport verify cert.json --keys https://scores.example.com
  swarmscore passport verify old.json --at 2026-03-18T00:00:00Z --keys https://scores.example.com/.well-known/swarmscore-key-history.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("unexpected argument %q: verify reads one document", args[1])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			_, acc, err := formula.acceptance(process(cmd).Formulas)
			if err != nil {
				return err
			}
			var keys []passport.Key
			if keySet != "" {
				keys, err = readKeySet(cmd, keySet)
			} else {
				_, keys, err = signingKeys(cmd)
			}
			if err != nil {
				return err
			}
			name := "-"
			if len(args) == 1 {
				name = args[0]
			}
			doc, err := readDocument(cmd.InOrStdin(), name)
			if err != nil {
				return err
			}
			v := acc.Verify(doc, keys, at.time())
			checks := service.L1Checks(v)
			if agentID != "" && v.Passport != nil {
				switch v.Passport.AgentID {
				case agentID:
					checks.Set(service.CheckAgent, service.CheckOK)
				case "":
					v.Warn(service.CodeAgentUnbound, fmt.Sprintf("the passport names no agent, so nothing binds it to agent %q", agentID))
				default:
					checks.Set(service.CheckAgent, service.CheckMismatch)
					v.Fail(service.CodeAgentMismatch, fmt.Sprintf("the passport is for agent %q, not %q", v.Passport.AgentID, agentID), true)
				}
			}
			out, err := json.Marshal(verifyOutput{v, checks})
			if err != nil {
				return err
			}
			if _, err := cmd.OutOrStdout().Write(append(out, '\n')); err != nil {
				return err
			}
			if !v.Valid {
				codes := make([]string, len(v.Errors))
				for i, p := range v.Errors {
					codes[i] = p.Code
				}
				return withStatus(ExitFailure, fmt.Errorf("passport is not valid: %s", strings.Join(codes, ", ")))
			}
			return nil
		},
	}
	cmd.Flags().Var(&at, "at", "verify as of this RFC 3339 instant (default now)")
	cmd.Flags().StringVar(&agentID, "agent-id", "", "also require the passport to be for this agent")
	cmd.Flags().StringVar(&keySet, "keys", "", "verify with the public keys of this JWK set or key history (FILE or URL) instead of SWARMSCORE_SIGNING_KEY")
	formula.register(cmd.Flags())
	return cmd
}

// verifyOutput is what `passport verify` prints: the verification and its
// checks.
type verifyOutput struct {
	*passport.Verification
	Checks service.Checks `json:"checks"`
}

// readDocument reads at most one byte more than a passport may have, so that
// an oversized document is reported by Verify (document_too_large, status 1)
// without reading an unbounded input. Failing to read is status 2.
func readDocument(stdin io.Reader, name string) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, invalidf("reading passport: %w", err)
		}
		defer f.Close()
		r = f
	}
	doc, err := io.ReadAll(io.LimitReader(r, passport.MaxDocumentSize+1))
	if err != nil {
		return nil, invalidf("reading passport from %s: %w", displayName(name), err)
	}
	return doc, nil
}

func displayName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}
