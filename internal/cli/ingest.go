package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/wire"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
)

// tokenEnv names the variable holding the operator token of `ingest
// --server`.
const tokenEnv = "SWARMSCORE_TOKEN"

const ingestLong = `Record Conduit sessions and AP2 transactions from an NDJSON file (one
event object per line; '-' or no FILE reads standard input):

  {"type":"conduit_session","id":"s-1","agent_id":"agent-1","buyer_id":"b-1","status":"VERIFIED","started_at":"2026-03-17T14:00:00Z","completed_at":"2026-03-17T14:05:00Z"}
  {"type":"ap2_transaction","id":"t-1","provider_id":"agent-1","buyer_id":"b-1","status":"SETTLED","escrow_amount_cents":100000,"started_at":"2026-03-17T14:00:00Z","settled_at":"2026-03-18T09:00:00Z"}

Times are RFC 3339 with any offset (stored in UTC, at most microsecond
precision), and no later than the clock plus --max-clock-skew. buyer_id is
optional for Conduit sessions. completed_at/settled_at are required exactly
when the status is terminal. Reporting a later status of an event is sending
the same id again with the new status; re-sending the same event is a no-op
(a duplicate).

Events are written in batches of --batch-size, each all or nothing. A
malformed line, or an event that contradicts the ledger (a changed agent,
buyer, amount or start, a final status changed to another), is rejected on
its own: the other lines are still recorded. A report of an earlier status
than the one recorded (a re-sent export, or a final status that arrived
first) is "superseded": a no-op, like a duplicate. The summary lists rejected
lines by number; --json prints it as one JSON object. A conduit_session may
carry proof_hash, the SHA-256 of its proof bundle (see 'swarmscore proof');
--require-proof rejects a VERIFIED session without one (proof_required).

With --server URL the file is sent to a running 'swarmscore serve' instead of
a database: in requests of --batch-size events (and at most 8 MiB), with the
operator token from --token-file or SWARMSCORE_TOKEN (the operator is the
token's). Requests that fail on the way (connection errors, 429, 502, 503,
504) are sent again, up to --attempts times in all with backoff (honouring
Retry-After); this is safe because ingest is idempotent (a batch recorded whose answer was lost counts as duplicates
the second time). The summary is the same, numbered by the file's lines.

Exit status: 0 when every line was accepted, a duplicate or superseded, 1
when any line was rejected (the others are recorded), 2 for usage errors or
an unreadable file, 4 when the database or server is unavailable (batches
already reported as committed stay committed), 6 when the server refuses
the token.`

type ingestConfig struct {
	db, operator, server, tokenFile string
	batch, attempts                 int
	asJSON                          bool
}

func newIngestCmd() *cobra.Command {
	var cfg ingestConfig
	var skew = service.DefaultMaxClockSkew
	var requireProof bool
	cmd := &cobra.Command{
		Use:   "ingest [FILE|-]",
		Short: "Record events from an NDJSON file or standard input",
		Long:  ingestLong,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.batch < 1 || cfg.batch > api.MaxEvents {
				return usageErrorf("--batch-size %d is outside 1..%d", cfg.batch, api.MaxEvents)
			}
			if skew <= 0 {
				return usageErrorf("--max-clock-skew %s must be positive", skew)
			}
			remote := cfg.server != ""
			for _, name := range []string{"db", "operator", "max-clock-skew", "require-proof"} {
				if remote && cmd.Flags().Changed(name) {
					return usageErrorf("--%s does not apply with --server: the server decides it", name)
				}
			}
			for _, name := range []string{"token-file", "attempts"} {
				if !remote && cmd.Flags().Changed(name) {
					return usageErrorf("--%s applies only with --server", name)
				}
			}
			if cfg.attempts < 1 || cfg.attempts > maxAttempts {
				return usageErrorf("--attempts %d is outside 1..%d", cfg.attempts, maxAttempts)
			}
			var c *client.Client
			if remote {
				var err error
				if c, err = ingestClient(cmd, cfg); err != nil {
					return err
				}
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
			if remote {
				return ingestRemote(cmd, c, in, name, cfg)
			}
			return withUseCases(cmd, cfg.db, create, func(u *service.UseCases) error {
				return ingest(cmd, u, in, name, cfg)
			}, func(_ service.Backend, c *service.Config) error {
				c.MaxClockSkew, c.RequireProof = skew, requireProof
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&requireProof, "require-proof", false, "reject a VERIFIED Conduit session without a proof_hash (code proof_required), as serve --require-proof does")
	f.StringVar(&cfg.db, "db", "", dbFlagUsage)
	f.StringVar(&cfg.operator, "operator", "local", "the operator (platform) reporting the events")
	f.IntVar(&cfg.batch, "batch-size", service.DefaultBatchSize, fmt.Sprintf("events per transaction, or per request with --server (1..%d)", api.MaxEvents))
	f.DurationVar(&skew, "max-clock-skew", service.DefaultMaxClockSkew, "how far past this machine's clock an event may be dated")
	f.BoolVar(&cfg.asJSON, "json", false, `print the summary as {"accepted","duplicates","superseded","rejected":[{"index","line","id","reason"}]}`)
	f.StringVar(&cfg.server, "server", "", "send the events to the swarmscore server at this URL (http://host:port) instead of a database")
	f.StringVar(&cfg.tokenFile, "token-file", "", "with --server: a file holding the operator token (default $"+tokenEnv+")")
	f.IntVar(&cfg.attempts, "attempts", 5, fmt.Sprintf("with --server: how many times a batch is sent before giving up (1..%d)", maxAttempts))
	return cmd
}

// maxAttempts bounds --attempts: with backoff doubling to 30 s, 20 attempts
// already wait about eight minutes.
const maxAttempts = 20

// ingestClient is the client of `ingest --server`, with the token from
// --token-file or SWARMSCORE_TOKEN. Errors never contain the token.
func ingestClient(cmd *cobra.Command, cfg ingestConfig) (*client.Client, error) {
	token := getenv(cmd, tokenEnv)
	if cfg.tokenFile != "" {
		b, err := os.ReadFile(cfg.tokenFile)
		if err != nil {
			return nil, invalidf("reading --token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return nil, usageErrorf("--token-file %s is empty", cfg.tokenFile)
		}
	}
	if token == "" {
		return nil, usageErrorf("--server needs an operator token: set %s or pass --token-file", tokenEnv)
	}
	c, err := client.New(cfg.server, client.WithToken(token))
	if err != nil {
		return nil, usageErrorf("--server %q is not an http:// or https:// URL", redactURL(cfg.server))
	}
	return c, nil
}

// summary is what an ingest reports, local or remote alike: the API's
// answer, whose rejections always carry a line here (the input is NDJSON).
type summary = api.IngestResult

func localSummary(r service.IngestReport) summary { return wire.IngestResultOf(&r) }

func remoteSummary(r *client.IngestResult) summary {
	s := *r
	s.Rejected = append(make([]api.Rejection, 0, len(r.Rejected)), r.Rejected...)
	return s
}

// progressLine rewrites one line on a terminal after each batch.
func progressLine(w io.Writer, lines int, s summary) {
	fmt.Fprintf(w, "\r%d lines: %d accepted, %d duplicates, %d superseded, %d rejected",
		lines, s.Accepted, s.Duplicates, s.Superseded, len(s.Rejected))
}

func ingest(cmd *cobra.Command, u *service.UseCases, in io.Reader, name string, cfg ingestConfig) error {
	stderr := cmd.ErrOrStderr()
	var progress func(service.Progress)
	tty := isTerminal(stderr)
	if tty {
		progress = func(p service.Progress) { progressLine(stderr, p.Lines, localSummary(p.IngestReport)) }
	}
	rep, err := u.Ingest.IngestStream(cmd.Context(), cfg.operator, in, cfg.batch, progress)
	if tty {
		fmt.Fprintln(stderr)
	}
	return report(cmd, name, localSummary(rep), cfg.asJSON, err)
}

func ingestRemote(cmd *cobra.Command, c *client.Client, in io.Reader, name string, cfg ingestConfig) error {
	stderr := cmd.ErrOrStderr()
	opt := client.StreamOptions{MaxEvents: cfg.batch, Attempts: cfg.attempts}
	tty := isTerminal(stderr)
	if tty {
		opt.Progress = func(p client.StreamProgress) { progressLine(stderr, p.Lines, remoteSummary(&p.IngestResult)) }
	}
	res, err := c.IngestStream(cmd.Context(), in, opt)
	if tty {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		err = remoteError(err, cfg.server)
	}
	return report(cmd, name, remoteSummary(res), cfg.asJSON, err)
}

// report prints the summary of an ingest (what was recorded before err, if
// any) and returns the command's error: err, else one for rejected lines.
func report(cmd *cobra.Command, name string, s summary, asJSON bool, err error) error {
	out := cmd.OutOrStdout()
	if asJSON {
		b, merr := json.Marshal(s)
		if merr != nil {
			return merr
		}
		fmt.Fprintln(out, string(b))
	} else {
		fmt.Fprintf(out, "%s: %d accepted, %d duplicates, %d superseded, %d rejected\n",
			name, s.Accepted, s.Duplicates, s.Superseded, len(s.Rejected))
		for _, r := range s.Rejected {
			fmt.Fprintf(out, "line %d: %s\n", r.Line, r.Reason)
		}
	}
	if err != nil {
		return err
	}
	n := len(s.Rejected)
	if n == 0 {
		return nil
	}
	others := s.Accepted + s.Duplicates + s.Superseded
	switch {
	case others == 0:
		err = fmt.Errorf("%d line(s) rejected; nothing was recorded", n)
	case s.Accepted == 0:
		err = fmt.Errorf("%d line(s) rejected; nothing new was recorded (the other %d were already in the ledger)", n, others)
	default:
		err = fmt.Errorf("%d line(s) rejected; the other %d are recorded", n, others)
	}
	return withStatus(ExitFailure, err)
}

// remoteError gives a failure of `ingest --server` the error kind of what
// happened, so that it exits as a local ingest would: the server's problem
// by its status, or unavailable when the server could not be reached. The
// message names the lines not recorded and never the token.
func remoteError(err error, server string) error {
	prefix := ""
	var be *client.BatchError
	if errors.As(err, &be) {
		prefix = fmt.Sprintf("lines %d-%d not recorded after %d attempt(s): ", be.FirstLine, be.LastLine, be.Attempts)
		err = be.Err
	}
	server = redactURL(server)
	var p *client.Problem
	switch {
	case errors.As(err, &p):
		msg := fmt.Sprintf("%s%s answered %d %s", prefix, server, p.Status, p.Title)
		if p.Detail != "" {
			msg += ": " + p.Detail
		}
		if p.RequestID != "" {
			msg += " (request id " + p.RequestID + ")"
		}
		if kind := problemKind(p.Status); kind != nil {
			return &kindError{kind, errors.New(msg)}
		}
		return errors.New(msg)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s%w", prefix, err)
	case be == nil:
		return err // reading the input failed, or the options
	}
	return &kindError{errkind.ErrUnavailable, fmt.Errorf("%scannot reach %s: %w", prefix, server, err)}
}

// problemKind is the error kind of an HTTP status the server answers with
// (internal/httpapi maps kinds to statuses; this is the way back). nil for
// a status of no kind: an internal error.
func problemKind(status int) error {
	switch status {
	case 400, 413, 422:
		return errkind.ErrInvalid
	case 401:
		return errkind.ErrUnauthorized
	case 403:
		return errkind.ErrForbidden
	case 404:
		return errkind.ErrNotFound
	case 409:
		return errkind.ErrConflict
	case 429, 502, 503, 504:
		return errkind.ErrUnavailable
	}
	return nil
}

// redactURL hides a password in a URL's user information.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the --server URL"
	}
	return u.Redacted()
}

// isTerminal reports whether w is a terminal, where a person reads: a
// progress line that rewrites itself is welcome, and logs are text.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
