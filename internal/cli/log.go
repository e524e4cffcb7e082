package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/tlog"
	"github.com/swarmscore/swarmscore/passport"
)

// logOriginEnv names the transparency log's origin when no --log-origin
// is given.
const logOriginEnv = "SWARMSCORE_LOG_ORIGIN"

// logOrigin is the log's origin: flag, else $SWARMSCORE_LOG_ORIGIN, else
// the host of baseURL (serve's --base-url) or of $SWARMSCORE_BASE_URL
// followed by /swarmscore, else "": the origin of the latest note signed,
// else service.DefaultLogOrigin (service.Log.Origin), so that a command
// run without any of them names the log as the server did. An origin
// tlog.CheckOrigin refuses is a usage error.
func logOrigin(cmd *cobra.Command, flag, baseURL string) (string, error) {
	o := flag
	if o == "" {
		o = getenv(cmd, logOriginEnv)
	}
	if o == "" {
		if baseURL == "" {
			baseURL = getenv(cmd, baseURLEnv)
		}
		if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
			o = strings.ToLower(u.Host) + "/swarmscore"
		}
	}
	if o == "" {
		return "", nil
	}
	if err := tlog.CheckOrigin(o); err != nil {
		return "", usageErrorf("--log-origin: %v", strings.TrimPrefix(err.Error(), errkind.ErrInvalid.Error()+": "))
	}
	return o, nil
}

func newLogCmd() *cobra.Command {
	var db string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Check the transparency log: consistency of two checkpoints, inclusion of an event",
		Long: `The ledger's transparency log (docs/FORMATS.md, "Log leaves" and "Checkpoint
notes"): every chain record is appended, when stored, as a leaf of one
RFC 6962 Merkle log, published as C2SP tlog-tiles under /swarmscore/log/ and
checkpointed as C2SP signed notes ('swarmscore ledger checkpoint').`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("missing subcommand (verify-consistency, inclusion)")
		},
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.AddCommand(newLogConsistencyCmd(&db, &asJSON), newLogInclusionCmd(&db, &asJSON), newLogWitnessCmd(&db, &asJSON))
	return cmd
}

const logConsistencyLong = `Check that the log of the NEW checkpoint note extends the log of the OLD
one (files; "-" is standard input): both are verified (signature by a key
of the log under its origin), then an RFC 9162 consistency proof between
their sizes is checked against their roots with transparency-dev/merkle.

With --server URL the proof is built from the server's public tiles
(GET /swarmscore/log/tile/...), after checking that they hash to NEW's
root, and the notes are verified with the server's key history (or
--keys FILE|URL): what any stranger can do. Without it, from the database
(--db) and its keyring.

Exit status 0: consistent; 1: not consistent or a signature does not
verify; 2: a file that is not a checkpoint note.`

type consistencyJSON struct {
	Origin     string   `json:"origin"`
	OldSize    uint64   `json:"old_size"`
	NewSize    uint64   `json:"new_size"`
	OldRoot    string   `json:"old_root"`
	NewRoot    string   `json:"new_root"`
	Consistent bool     `json:"consistent"`
	Proof      []string `json:"proof,omitempty"`
}

func newLogConsistencyCmd(db *string, asJSON *bool) *cobra.Command {
	var server, keys string
	c := &cobra.Command{
		Use:   "verify-consistency OLD NEW",
		Short: "Check that the log of one checkpoint note extends another's",
		Long:  logConsistencyLong,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			oldNote, err := readAuditFile(cmd.InOrStdin(), args[0], tlog.MaxNoteSize, "checkpoint note")
			if err != nil {
				return err
			}
			newNote, err := readAuditFile(cmd.InOrStdin(), args[1], tlog.MaxNoteSize, "checkpoint note")
			if err != nil {
				return err
			}
			if server != "" {
				return consistencyFromServer(cmd, server, keys, oldNote, newNote, *asJSON)
			}
			if keys != "" {
				return usageErrorf("--keys applies only with --server: without it the database's keyring checks the notes")
			}
			return withSigning(cmd, *db, readOnly, func(u *service.UseCases) error {
				ctx := cmd.Context()
				var cps [2]tlog.Checkpoint
				for i, b := range [][]byte{oldNote, newNote} {
					c, err := u.Log.VerifyNote(ctx, b)
					if errors.Is(err, tlog.ErrSignature) {
						return withStatus(ExitFailure, fmt.Errorf("%s: %w", args[i], err))
					}
					if errkind.Of(err) == errkind.Conflict {
						return withStatus(ExitFailure, fmt.Errorf("%s: %w", args[i], err))
					}
					if err != nil {
						return err
					}
					cps[i] = c
				}
				o, n := cps[0], cps[1]
				if o.Size > n.Size {
					o, n = n, o
				}
				p, err := u.Log.ConsistencyProof(ctx, int64(o.Size), int64(n.Size))
				if err != nil {
					return err
				}
				return reportConsistency(cmd, o, n, p, tlog.VerifyConsistency(o.Size, n.Size, p, o.Root, n.Root), *asJSON)
			})
		},
	}
	c.Flags().StringVar(&server, "server", "", "build the proof from the public tiles of the swarmscore server at this URL")
	c.Flags().StringVar(&keys, "keys", "", "with --server: a key history or JWK set (FILE or URL) to verify the notes with (default the server's key history)")
	return c
}

func consistencyFromServer(cmd *cobra.Command, server, keys string, oldNote, newNote []byte, asJSON bool) error {
	if keys == "" {
		keys = strings.TrimRight(server, "/") + client.KeyHistoryPath
	}
	ks, err := readKeySet(cmd, keys)
	if err != nil {
		return err
	}
	var cps [2]*client.LogCheckpoint
	for i, b := range [][]byte{oldNote, newNote} {
		if cps[i], err = client.VerifyCheckpoint(b, ks); err != nil {
			if _, perr := client.ParseCheckpoint(b); perr != nil {
				return invalidf("%v", err)
			}
			return withStatus(ExitFailure, err)
		}
	}
	c, err := client.New(server, client.WithHTTPClient(&http.Client{Timeout: keySetTimeout}))
	if err != nil {
		return usageErrorf("--server: %v", err)
	}
	o, n := cps[0], cps[1]
	if o.Size > n.Size {
		o, n = n, o
	}
	perr := c.ProveConsistency(cmd.Context(), o, n)
	var prob *client.Problem
	if perr != nil && !errors.Is(perr, passport.ErrInvalid) {
		if errors.As(perr, &prob) {
			return fmt.Errorf("%w: %v", errkind.ErrUnavailable, perr)
		}
		return &kindError{errkind.ErrUnavailable, perr}
	}
	return reportConsistency(cmd, tlog.Checkpoint{Origin: o.Origin, Size: o.Size, Root: o.Root},
		tlog.Checkpoint{Origin: n.Origin, Size: n.Size, Root: n.Root}, nil, perr, asJSON)
}

func reportConsistency(cmd *cobra.Command, o, n tlog.Checkpoint, proof [][]byte, verr error, asJSON bool) error {
	b64 := base64.StdEncoding.EncodeToString
	if asJSON {
		j := consistencyJSON{Origin: n.Origin, OldSize: o.Size, NewSize: n.Size, OldRoot: b64(o.Root), NewRoot: b64(n.Root), Consistent: verr == nil}
		for _, h := range proof {
			j.Proof = append(j.Proof, b64(h))
		}
		if err := printJSON(cmd, j); err != nil {
			return err
		}
	} else if verr == nil {
		fmt.Fprintf(cmd.OutOrStdout(), "%s: the log of %d leaves (root %s) extends the log of %d leaves (root %s): consistent\n",
			n.Origin, n.Size, b64(n.Root), o.Size, b64(o.Root))
	}
	if verr != nil {
		return withStatus(ExitFailure, fmt.Errorf("NOT CONSISTENT: %v", strings.TrimPrefix(strings.TrimPrefix(verr.Error(), passport.ErrInvalid.Error()+": "), errkind.ErrInvalid.Error()+": ")))
	}
	return nil
}

const logInclusionLong = `Prove that every chain record of an event (EVENT_TYPE conduit_session,
ap2_transaction or task_offer, and its id) is in the transparency log: for
each, its agent, seq, chain hash and log index, and an RFC 9162 inclusion
proof against the latest checkpoint note (one is signed now if the latest
does not cover it yet), checked here with transparency-dev/merkle. The
note is printed too, for archiving.`

type inclusionJSON struct {
	AgentID    string   `json:"agent_id"`
	Seq        int64    `json:"seq"`
	Hash       string   `json:"hash"`
	LeafIndex  int64    `json:"leaf_index"`
	TreeSize   uint64   `json:"tree_size"`
	Proof      []string `json:"inclusion_proof"`
	Checkpoint string   `json:"checkpoint"`
}

func newLogInclusionCmd(db *string, asJSON *bool) *cobra.Command {
	return &cobra.Command{
		Use:   "inclusion EVENT_TYPE EVENT_ID",
		Short: "Prove that an event's chain records are in the log",
		Long:  logInclusionLong,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			typ := ledger.Type(args[0])
			if !typ.Valid() {
				return usageErrorf("EVENT_TYPE %q is not conduit_session, ap2_transaction or task_offer", args[0])
			}
			return withSigning(cmd, *db, readOnly, func(u *service.UseCases) error {
				incs, err := u.Log.Inclusion(cmd.Context(), typ, args[1])
				if err != nil {
					return err
				}
				return reportInclusion(cmd, incs, *asJSON)
			})
		},
	}
}

func reportInclusion(cmd *cobra.Command, incs []service.RecordInclusion, asJSON bool) error {
	b64 := base64.StdEncoding.EncodeToString
	var out []inclusionJSON
	w := cmd.OutOrStdout()
	for _, in := range incs {
		r, cp := in.Record, in.Checkpoint
		if err := tlog.VerifyInclusion(uint64(r.Index), cp.Size, r.Leaf().Data(), in.Proof, cp.Root); err != nil {
			return withStatus(ExitFailure, err)
		}
		j := inclusionJSON{AgentID: r.AgentID, Seq: r.Seq, Hash: fmt.Sprintf("%x", r.Hash[:]), LeafIndex: r.Index, TreeSize: cp.Size, Checkpoint: string(cp.Note())}
		for _, h := range in.Proof {
			j.Proof = append(j.Proof, b64(h))
		}
		out = append(out, j)
		if !asJSON {
			fmt.Fprintf(w, "agent %s record %d (hash %x) is leaf %d of the log of %d leaves (root %s): included\n",
				r.AgentID, r.Seq, r.Hash[:], r.Index, cp.Size, b64(cp.Root))
			for _, h := range in.Proof {
				fmt.Fprintf(w, "  %s\n", b64(h))
			}
		}
	}
	if asJSON {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
		_, err := w.Write(buf.Bytes())
		return err
	}
	if len(incs) > 0 {
		fmt.Fprintf(w, "\n%s", incs[len(incs)-1].Checkpoint.Note())
	}
	return nil
}

// backfillBatch is how many records a backfill appends per transaction.
const backfillBatch = 5000

// backfillLog appends to the log the chain records of a ledger from before
// it (service.Log.Backfill), reporting progress; a no-op once done.
func backfillLog(ctx context.Context, st service.Backend, progress func(service.BackfillReport)) error {
	_, err := service.New(st, service.Config{}).Log.Backfill(ctx, backfillBatch, progress)
	return err
}
