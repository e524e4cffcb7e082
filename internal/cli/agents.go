package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/a2a"
	"github.com/swarmscore/swarmscore/internal/erc8004"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/mcp"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/site"
	"github.com/swarmscore/swarmscore/internal/vc"
	"github.com/swarmscore/swarmscore/passport"
)

// The commands that meet agents where they are (issue 26): the MCP server
// over stdio, a passport as a W3C credential, the ERC-8004 feedback
// record, and A2A agent cards.

// baseURLEnv names the deployment's public origin, as serve's --base-url.
const baseURLEnv = "SWARMSCORE_BASE_URL"

// defaultBaseURL is serve's default address as a URL.
const defaultBaseURL = "http://127.0.0.1:8080"

const baseURLUsage = "the deployment's public origin, e.g. https://scores.example.com (default $" + baseURLEnv + ", else " + defaultBaseURL + ")"

// siteOf reads --base-url, else SWARMSCORE_BASE_URL, else the default.
func siteOf(cmd *cobra.Command, flag string) (site.Site, error) {
	v := flag
	if v == "" {
		v = getenv(cmd, baseURLEnv)
	}
	if v == "" {
		v = defaultBaseURL
	}
	s, err := site.New(v)
	if err != nil {
		return site.Site{}, &usageError{err}
	}
	return s, nil
}

const mcpLong = `Serve SwarmScore's Model Context Protocol server over standard input and
output, for an MCP client that starts it (Claude Desktop, an agent framework):
the tools get_score, get_certificate, verify_passport, quote_escrow and
explain_score over the database (--db, as other commands), and the resource
swarmscore://formula. 'swarmscore serve' serves the same at /mcp over HTTP.

The tools answer as the public API does (an unlisted agent is unknown), unless
--operator NAME says they act for that operator: then quote_escrow (an
operator's tool) works and unlisted agents are seen. Passports are signed with
the key serve uses (see 'swarmscore key --help'). Logs go to standard error;
standard output carries only the protocol.`

func newMCPCmd() *cobra.Command {
	var db, operator string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the MCP server (tools and the formula) over stdio",
		Long:  mcpLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			caller := service.Caller{}
			if operator != "" {
				caller = service.OperatorCaller(operator)
			}
			return withSigning(cmd, db, readOnly, func(u *service.UseCases) error {
				u.Certificates.StartCacheWatch()
				log := newLogger(cmd.ErrOrStderr(), 0)
				in, out := cmd.InOrStdin(), cmd.OutOrStdout()
				return mcp.ServeIO(cmd.Context(), mcp.ServicesOf(u), caller, mcp.Options{Version: version(), Logger: log}, in, out)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&operator, "operator", "", "act for this operator (quote_escrow, unlisted agents); default: as the public API")
	return cmd
}

const credentialLong = `Print an agent's current passport as a W3C Verifiable Credential (VC Data
Model 2.0), exactly as GET /swarmscore/{agent_id}/credential serves it: the
passport as credentialSubject, issued by the deployment's did:web (from
--base-url), with a Data Integrity proof of the eddsa-jcs-2022 cryptosuite
made by the Ed25519 key that signed the passport, and its Bitstring Status
List entry. The same passport gives the same bytes here and from the server.
A deployment that signs with an HMAC key has no credentials (exit 5).`

func newPassportCredentialCmd() *cobra.Command {
	var db, base string
	cmd := &cobra.Command{
		Use:   "credential AGENT_ID",
		Short: "Print an agent's passport as a W3C Verifiable Credential",
		Long:  credentialLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := siteOf(cmd, base)
			if err != nil {
				return err
			}
			return withSigning(cmd, db, readOnly, func(u *service.UseCases) error {
				src, err := u.Credentials.Credential(cmd.Context(), service.OperatorCaller("cli"), args[0])
				if err != nil {
					return err
				}
				doc, err := vc.Credential(src.Certificate.Passport, src.Key, s, src.StatusList, src.StatusIndex)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(append(doc, '\n'))
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&base, "base-url", "", baseURLUsage)
	return cmd
}

const exportLong = `Export an agent's current passport in another system's format. One format:

  erc8004   an ERC-8004 ("Trustless Agents") Reputation Registry feedback
            record: the arguments of giveFeedback (value = the score with
            valueDecimals 0, tag1 "swarmscore", tag2 the tier, feedbackURI
            the certificate URL on --base-url, feedbackHash the Keccak-256 of
            the passport's bytes as that URL serves them), and with
            --erc8004-agent-id (the agent's token id in the Identity
            Registry) the ABI-encoded call for a wallet to submit. No chain
            is contacted. GET /swarmscore/{agent_id}/erc8004 serves the same.`

func newExportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export an agent's passport in another system's format (erc8004)",
		Long:  exportLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("missing format (erc8004)")
		},
	}
	var db, base, onchain string
	erc := &cobra.Command{
		Use:   "erc8004 AGENT_ID",
		Short: "Print the agent's passport as an ERC-8004 feedback record",
		Long:  exportLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := siteOf(cmd, base)
			if err != nil {
				return err
			}
			id, err := erc8004OnchainID(onchain)
			if err != nil {
				return err
			}
			return withSigning(cmd, db, readOnly, func(u *service.UseCases) error {
				c, err := u.Certificates.CertificateFor(cmd.Context(), service.OperatorCaller("cli"), args[0])
				if err != nil {
					return err
				}
				f, err := erc8004.Feedback(c.Passport, s.CertificateURL(args[0]), id)
				if err != nil {
					return err
				}
				return printJSON(cmd, f)
			})
		},
	}
	f := erc.Flags()
	f.StringVar(&db, "db", "", dbFlagUsage)
	f.StringVar(&base, "base-url", "", baseURLUsage)
	f.StringVar(&onchain, "erc8004-agent-id", "", "the agent's ERC-8004 agentId (decimal), to encode the call")
	cmd.AddCommand(erc)
	return cmd
}

// erc8004OnchainID reads --erc8004-agent-id (nil when unset).
func erc8004OnchainID(v string) (*big.Int, error) {
	if v == "" {
		return nil, nil
	}
	n, err := erc8004.ParseAgentID("--erc8004-agent-id", v)
	if err != nil {
		return nil, &usageError{err}
	}
	return n, nil
}

const agentCardLong = `Work with A2A agent cards and the SwarmScore passport extension
(` + a2a.ExtensionURI + `,
docs/A2A-EXTENSION.md), whose params name an agent's certificate URL, its
current tier and the key set that verifies it.

  annotate CARD.json --agent-id ID --base-url URL
      print the card with the extension added (or replaced), for the agent ID
      of the SwarmScore server at URL, whose current tier it reads from there
  verify CARD.json
      fetch the certificate the card's extension names and the key set, verify
      the passport (signature, consistency, expiry) and check that it is the
      card's agent's; prints the result as JSON, exits 1 when it fails

CARD.json may be - for standard input.`

func newAgentCardCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent-card",
		Short: "Add the SwarmScore extension to an A2A agent card, or verify one",
		Long:  agentCardLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("missing subcommand (annotate, verify)")
		},
	}
	var agentID, base string
	annotate := &cobra.Command{
		Use:   "annotate CARD.json --agent-id ID --base-url URL",
		Short: "Print the card with the SwarmScore passport extension",
		Long:  agentCardLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if agentID == "" || base == "" {
				return usageErrorf("--agent-id and --base-url are required")
			}
			s, err := siteOf(cmd, base)
			if err != nil {
				return err
			}
			card, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			c, err := client.New(s.URL())
			if err != nil {
				return &usageError{err}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), fetchTimeout)
			defer cancel()
			sc, err := c.Score(ctx, agentID)
			if err != nil {
				return fetchError(s.CertificateURL(agentID), err)
			}
			out, err := a2a.Annotate(card, agentID, s, sc.Tier.String())
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	annotate.Flags().StringVar(&agentID, "agent-id", "", "the agent's SwarmScore id")
	annotate.Flags().StringVar(&base, "base-url", "", "the SwarmScore server's public origin")
	verify := &cobra.Command{
		Use:   "verify CARD.json",
		Short: "Verify the passport a card's SwarmScore extension names",
		Long:  agentCardLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			card, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			res, err := verifyCard(cmd, card)
			if err != nil {
				return err
			}
			if err := printJSON(cmd, res); err != nil {
				return err
			}
			if !res.Valid {
				return withStatus(ExitFailure, fmt.Errorf("the card's passport does not verify: %s", res.reason()))
			}
			return nil
		},
	}
	cmd.AddCommand(annotate, verify)
	return cmd
}

// fetchTimeout bounds each fetch of agent-card.
const fetchTimeout = 30 * time.Second

// cardVerification is what agent-card verify prints.
type cardVerification struct {
	Valid          bool   `json:"valid"`
	AgentID        string `json:"agent_id"`
	CertificateURL string `json:"certificate_url"`
	KeysURL        string `json:"keys_url"`
	// AgentMatches: the passport names the card's agent.
	AgentMatches bool `json:"agent_matches"`
	// Tier is the passport's; CardTier the card's, which may be older.
	Tier     string             `json:"tier,omitempty"`
	CardTier string             `json:"card_tier"`
	Score    *int               `json:"score,omitempty"`
	Errors   []passport.Problem `json:"errors"`
	Warnings []passport.Problem `json:"warnings"`
}

func (v *cardVerification) reason() string {
	var codes []byte
	for i, e := range v.Errors {
		if i > 0 {
			codes = append(codes, ", "...)
		}
		codes = append(codes, e.Code...)
	}
	return string(codes)
}

// verifyCard fetches and verifies the passport the card's extension names.
func verifyCard(cmd *cobra.Command, card []byte) (*cardVerification, error) {
	p, err := a2a.FindExtension(card)
	if err != nil {
		return nil, err
	}
	res := &cardVerification{AgentID: p.AgentID, CertificateURL: p.CertificateURL, KeysURL: p.KeysURL, CardTier: p.Tier,
		Errors: []passport.Problem{}, Warnings: []passport.Problem{}}
	keys, err := readKeySet(cmd, p.KeysURL)
	if err != nil {
		return nil, err
	}
	doc, err := fetchDocument(cmd.Context(), p.CertificateURL, passport.MaxDocumentSize)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if clock := process(cmd).Now; clock != nil {
		now = clock()
	}
	v := passport.Verify(doc, keys, now)
	res.Errors = append(res.Errors, v.Errors...)
	res.Warnings = append(res.Warnings, v.Warnings...)
	if v.Passport != nil {
		res.Tier = v.Passport.Score.Tier.String()
		res.Score = &v.Passport.Score.Value
		res.AgentMatches = v.Passport.AgentID == p.AgentID
		if !res.AgentMatches {
			res.Errors = append(res.Errors, passport.Problem{Code: service.CodeAgentMismatch,
				Message: fmt.Sprintf("the certificate is agent %q's, not the card's agent %q", v.Passport.AgentID, p.AgentID)})
		}
		if res.AgentMatches && res.Tier != p.Tier {
			res.Warnings = append(res.Warnings, passport.Problem{Code: "tier_changed",
				Message: fmt.Sprintf("the card says %s; the agent is %s now (annotate the card again)", p.Tier, res.Tier)})
		}
	}
	res.Valid = v.Valid && res.AgentMatches
	return res, nil
}

// fetchDocument GETs url, at most limit bytes of it. A server that cannot
// be reached is unavailable; an answer other than 200 is invalid input.
func fetchDocument(ctx context.Context, url string, limit int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, invalidf("%s is not a URL: %v", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, &kindError{errkind.ErrUnavailable, fmt.Errorf("fetching %s: %v", url, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, &kindError{errkind.ErrUnavailable, fmt.Errorf("reading %s: %v", url, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, invalidf("%s answered %s", url, resp.Status)
	}
	if len(b) > limit {
		return nil, invalidf("%s is larger than %d bytes", url, limit)
	}
	return b, nil
}

// fetchError classifies a client error of agent-card annotate.
func fetchError(url string, err error) error {
	var p *client.Problem
	if errors.As(err, &p) {
		return err
	}
	return &kindError{errkind.ErrUnavailable, fmt.Errorf("reaching %s: %v", url, err)}
}

// readInput reads a file, or standard input for "-".
func readInput(cmd *cobra.Command, path string) ([]byte, error) {
	if path == "-" {
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxCardSize+1))
		if err != nil {
			return nil, invalidf("reading standard input: %v", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, invalidf("reading %s: %v", path, err)
	}
	if len(b) > maxCardSize {
		return nil, invalidf("%s is larger than %d bytes", path, maxCardSize)
	}
	return b, nil
}

// maxCardSize bounds an agent card read.
const maxCardSize = 1 << 20
