package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/tlog"
)

const checkpointLong = `Sign a checkpoint (spec §8.3, external notarisation) of the transparency
log: a C2SP tlog-checkpoint signed note (docs/FORMATS.md) of the log's
origin, size and RFC 6962 root, signed with the active Ed25519 key under the
origin's name. It is stored, published at GET /swarmscore/checkpoints/latest
and /swarmscore/log/checkpoint with the witnesses' cosignatures, and
printed on standard output. 'swarmscore log verify-consistency OLD NEW'
proves that a later log extends it.

The JSON checkpoint of every agent's chain head is signed too (an RFC 6962
Merkle root over the heads, with their count and the time, numbered after
the latest), published at GET /swarmscore/checkpoints/latest with Accept:
application/json and /swarmscore/checkpoints/{number}, and printed with
--json. Archive it elsewhere: 'swarmscore ledger verify --checkpoint FILE'
later proves that the ledger still extends it, and names any agent whose
chain was rewritten, truncated or dropped. With an HMAC active key no note
can be signed: the JSON checkpoint is printed and standard error says why.

It is signed with the key passports are signed with, named in issuer.kid
and issuer.alg: the active key of the keyring kept in the database (HS256 or
EdDSA, as that key is; see 'swarmscore key --help'), or SWARMSCORE_SIGNING_KEY
(HS256) when it is set. External notarisation wants an Ed25519 key: anyone
holding an HMAC secret can sign with it too. The environment is
SWARMSCORE_ENVIRONMENT (default production) and the platform
SWARMSCORE_PLATFORM (default swarmscore).
'serve --checkpoint-every' makes them on a schedule.`

// newLedgerCheckpointCmd is `ledger checkpoint`; db is the ledger
// command's --db, asJSON its --json.
func newLedgerCheckpointCmd(db *string, asJSON *bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Sign and publish a checkpoint of the log and of every chain head; print the note",
		Long:  checkpointLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withSigning(cmd, *db, readOnly, func(u *service.UseCases) error {
				nc, err := u.Audit.MakeCheckpoint(cmd.Context(), false)
				if err != nil {
					return err
				}
				lc, _, lerr := u.Log.Checkpoint(cmd.Context())
				if lerr != nil && errkind.Of(lerr) != errkind.Invalid {
					return lerr
				}
				if *asJSON {
					_, err = cmd.OutOrStdout().Write(append(nc.Document, '\n'))
					return err
				}
				if lerr != nil {
					// An HMAC key signs no note: say so, and print what
					// was signed.
					fmt.Fprintf(cmd.ErrOrStderr(), "no log checkpoint note: %v\n", strings.TrimPrefix(lerr.Error(), errkind.ErrInvalid.Error()+": "))
					_, err = cmd.OutOrStdout().Write(append(nc.Document, '\n'))
					return err
				}
				_, err = cmd.OutOrStdout().Write(lc.Note())
				return err
			})
		},
	}
	cmd.Flags().String("log-origin", "", "the log's origin line (default $"+logOriginEnv+", else the host of $"+baseURLEnv+" and /swarmscore, else the latest note's, else "+service.DefaultLogOrigin+")")
	return cmd
}

// checkpointVerifyJSON is `ledger verify --checkpoint FILE --json`: the
// walk's report and what the checkpoint check found.
type checkpointVerifyJSON struct {
	ledgerVerifyJSON
	Checkpoint checkpointCheckJSON `json:"checkpoint"`
}

type checkpointCheckJSON struct {
	Number   int64        `json:"number"`
	Time     string       `json:"time"`
	Agents   int64        `json:"agents"`
	Root     string       `json:"root"`
	KeyID    string       `json:"kid"`
	Extends  bool         `json:"extends"`
	Changes  []changeJSON `json:"changes"`
	Problems []string     `json:"problems"`
	// Pruned counts the agents whose checkpointed records retention
	// removed.
	Pruned int `json:"pruned"`
}

type changeJSON struct {
	AgentID      string `json:"agent_id"`
	Kind         string `json:"kind"`
	ArchivedSeq  int64  `json:"archived_seq"`
	ArchivedHash string `json:"archived_hash"`
	CurrentSeq   int64  `json:"current_seq"`
	CurrentHash  string `json:"current_hash"`
}

// verifyCheckpoint is `ledger verify --checkpoint FILE`. A checkpoint whose
// signature does not verify, or that the ledger no longer extends, is a
// negative answer (exit 1), as a broken chain is; a file that is not a
// checkpoint is unreadable input (exit 2).
func verifyCheckpoint(cmd *cobra.Command, db, file string, asJSON bool) error {
	doc, err := readCheckpointFile(cmd, file)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(doc); len(t) > 0 && t[0] != '{' {
		return verifyNoteFile(cmd, db, file, doc, asJSON)
	}
	// Only read: checking needs the keys that exist, and never makes one.
	keys := func(st service.Backend, cfg *service.Config) error {
		return openKeyring(cmd, db, st, cfg, slog.New(slog.DiscardHandler), false)
	}
	return withUseCases(cmd, db, readOnly, func(u *service.UseCases) error {
		r, err := u.Audit.VerifyCheckpoint(cmd.Context(), doc)
		if errors.Is(err, checkpoint.ErrSignature) {
			return withStatus(ExitFailure, fmt.Errorf("%s: %w", file, err))
		}
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if asJSON {
			if err := printJSON(cmd, checkpointJSON(&r)); err != nil {
				return err
			}
		} else {
			printCheckpointCheck(out, &r)
		}
		c := r.Checkpoint
		switch {
		case !r.Extends():
			n := len(r.Changes)
			what := fmt.Sprintf("%d %s changed", n, plural(n, "agent", "agents"))
			if n == 0 {
				what = r.Problems[0]
			}
			return withStatus(ExitFailure, fmt.Errorf("the ledger does not extend checkpoint %d: %s", c.Number, what))
		case len(r.Ledger.Broken) > 0:
			return withStatus(ExitFailure, fmt.Errorf("%d of %d chains broken", len(r.Ledger.Broken), r.Ledger.Agents))
		}
		return nil
	}, keys, configure(cmd))
}

// verifyNoteFile is `ledger verify --checkpoint FILE` for a log checkpoint
// note: its signature by a key of the keyring, and the log's first size
// leaves still hashing to its root (service.Log.VerifyNote); then the walk
// of every chain.
func verifyNoteFile(cmd *cobra.Command, db, file string, note []byte, asJSON bool) error {
	return withSigning(cmd, db, readOnly, func(u *service.UseCases) error {
		c, err := u.Log.VerifyNote(cmd.Context(), note)
		switch {
		case errors.Is(err, tlog.ErrSignature), errkind.Of(err) == errkind.Conflict:
			return withStatus(ExitFailure, fmt.Errorf("%s: %w", file, err))
		case err != nil:
			return err
		}
		r, err := u.Signals.VerifyLedger(cmd.Context())
		if err != nil {
			return err
		}
		root := base64.StdEncoding.EncodeToString(c.Root)
		if asJSON {
			if err := printJSON(cmd, map[string]any{"ledger": verifyJSON(r), "checkpoint": map[string]any{
				"origin": c.Origin, "size": c.Size, "root": root, "extends": true}}); err != nil {
				return err
			}
		} else {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "log checkpoint %s of %d leaves, root %s: signature valid, the log extends it\n", c.Origin, c.Size, root)
			fmt.Fprintf(out, "%d agents, %d chain records, %d events checked\n", r.Agents, r.Records, r.Events)
			for _, b := range r.Broken {
				fmt.Fprintf(out, "BROKEN %s\n", b)
			}
		}
		if len(r.Broken) > 0 {
			return withStatus(ExitFailure, fmt.Errorf("%d of %d chains broken", len(r.Broken), r.Agents))
		}
		return nil
	})
}

func readCheckpointFile(cmd *cobra.Command, file string) ([]byte, error) {
	var r io.Reader = cmd.InOrStdin()
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
		}
		defer f.Close()
		r = f
	}
	// One byte past the limit tells an oversized file from one at it;
	// checkpoint.Parse refuses it with the reason.
	doc, err := io.ReadAll(io.LimitReader(r, checkpoint.MaxDocumentSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v", errkind.ErrInvalid, file, err)
	}
	return doc, nil
}

func printCheckpointCheck(w io.Writer, r *service.CheckpointCheck) {
	c := r.Checkpoint
	fmt.Fprintf(w, "checkpoint %d of %s: %d %s, root %s, signed by %s key %s: signature valid\n",
		c.Number, c.Time.UTC().Format(checkpoint.TimeLayout), c.Agents, plural(int(c.Agents), "agent", "agents"), c.Root, c.Issuer.Alg, c.Issuer.KeyID)
	for _, p := range r.Problems {
		fmt.Fprintf(w, "NOT SHOWN %s\n", p)
	}
	for _, ch := range r.Changes {
		fmt.Fprintf(w, "DIVERGED %s\n", ch)
	}
	if r.Extends() {
		fmt.Fprintf(w, "the ledger extends checkpoint %d: every agent it named is there, unchanged up to its checkpointed seq\n", c.Number)
	}
	if r.Pruned > 0 {
		fmt.Fprintf(w, "PRUNED %d %s: records up to the checkpointed seq were removed by retention (only the anchor vouches for them)\n",
			r.Pruned, plural(r.Pruned, "agent", "agents"))
	}
	l := r.Ledger
	fmt.Fprintf(w, "%d agents, %d chain records, %d events checked\n", l.Agents, l.Records, l.Events)
	if len(l.Broken) == 0 {
		fmt.Fprintln(w, "every chain is intact")
	}
	for _, b := range l.Broken {
		fmt.Fprintf(w, "BROKEN %s\n", b)
	}
}

func checkpointJSON(r *service.CheckpointCheck) checkpointVerifyJSON {
	c := r.Checkpoint
	out := checkpointVerifyJSON{ledgerVerifyJSON: verifyJSON(r.Ledger), Checkpoint: checkpointCheckJSON{
		Number: c.Number, Time: c.Time.UTC().Format(checkpoint.TimeLayout), Agents: c.Agents, Root: c.Root.String(),
		KeyID: c.Issuer.KeyID, Extends: r.Extends(), Changes: make([]changeJSON, len(r.Changes)), Problems: append([]string{}, r.Problems...),
		Pruned: r.Pruned}}
	for i, ch := range r.Changes {
		out.Checkpoint.Changes[i] = changeJSON{AgentID: ch.AgentID, Kind: string(ch.Kind), ArchivedSeq: ch.ArchivedSeq,
			ArchivedHash: hex.EncodeToString(ch.ArchivedHash[:]), CurrentSeq: ch.CurrentSeq, CurrentHash: hex.EncodeToString(ch.CurrentHash[:])}
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// defaultCheckpointEvery is serve's --checkpoint-every: daily, so that the
// §8.3 notarisation exists without a flag; a checkpoint of an unchanged
// ledger is not re-signed, so a quiet deployment publishes few.
const defaultCheckpointEvery = 24 * time.Hour

// minCheckpointEvery bounds serve --checkpoint-every from below: a
// checkpoint reads every head, and one a second is already more than
// anyone archives.
const minCheckpointEvery = time.Second

// startCheckpoints makes a checkpoint at once and then every every, each
// only when the heads changed since the latest (MakeCheckpoint with
// onlyIfChanged): archivers then see one checkpoint per change of the
// ledger, and a quiet ledger's latest checkpoint stays current rather than
// being re-signed on every tick. Failures are logged and retried at the
// next tick. stop ends the schedule and waits for a checkpoint under way,
// so that the store can be closed after it.
func startCheckpoints(ctx context.Context, a *service.Audit, lg *service.Log, every time.Duration, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		warned := false
		for {
			nc, err := a.MakeCheckpoint(ctx, true)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				log.Warn("making a checkpoint failed; retrying at the next tick", "err", err, "every", every.String())
			case nc.Created:
				log.Info("checkpoint made", "checkpoint", nc.Checkpoint.Number, "agents", nc.Checkpoint.Agents, "root", nc.Checkpoint.Root.String())
			default:
				log.Debug("no chain head moved since the latest checkpoint", "checkpoint", nc.Checkpoint.Number)
			}
			// The log's note, when the log grew; an HMAC key signs none,
			// which is said once.
			lc, created, err := lg.Checkpoint(ctx)
			switch {
			case ctx.Err() != nil:
				return
			case errkind.Of(err) == errkind.Invalid:
				if !warned {
					log.Warn("no log checkpoint notes are signed", "err", err)
					warned = true
				}
			case err != nil:
				log.Warn("signing a log checkpoint failed; retrying at the next tick", "err", err)
			case created:
				log.Info("log checkpoint signed", "origin", lc.Origin, "size", lc.Size)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
