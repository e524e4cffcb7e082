package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/witness"
)

// WitnessPorts gives `log witness` the transparency log whose checkpoints
// it submits and the store the cosignatures go to, over the database the
// command opened (st) and its use cases (u, configured as `ledger
// checkpoint`'s but without signing keys: the checkpoints witnessed are
// those the log already published). Errors are returned as they are.
type WitnessPorts func(ctx context.Context, st service.Backend, u *service.UseCases) (witness.Source, witness.Sink, error)

const logWitnessLong = `Submit the transparency log's checkpoints to a witness, per C2SP
tlog-witness: POST <URL>/add-checkpoint with "old <size>", the consistency
proof from the last checkpoint the witness cosigned, a blank line and the
checkpoint note. The witness checks that the log only grew since and
returns its cosignature (C2SP tlog-cosignature, Ed25519 cosignature/v1),
which is verified against --key and stored: GET
/swarmscore/checkpoints/latest then carries it.

--url is the witness's submission prefix. --key is its verifier key,
name+hash+base64 with key type 0x04; signature lines of other keys are
ignored. When the witness holds another size than the one stored here (409),
the submission is retried once from the witness's size.

Without --every, one submission, then exit; a checkpoint the witness has
already cosigned is not sent again. With --every DURATION (e.g. 1m), a
submission every DURATION until interrupted; a round the witness or the
database cannot answer is reported on standard error and retried next
round, any other failure stops the command.

Prints one line per submission, with --every one per checkpoint cosigned
({"witness","size","old","cosignatures","unchanged","attempts"} with
--json).

Exit status: 3 the witness does not know the log's origin (404); 4 the
witness or database is unreachable (429, 5xx); 5 the witness refused the
checkpoint as inconsistent with one it cosigned (422, or a 409 naming a
larger tree or another root: the log forked or was rewritten); 6 it trusts
none of the checkpoint's signatures (403); 1 it answered without a valid
cosignature by --key.`

// newLogWitnessCmd is `log witness`; db and asJSON are the log command's
// --db and --json.
func newLogWitnessCmd(db *string, asJSON *bool) *cobra.Command {
	var (
		witnessURL, vkey string
		every            time.Duration
	)
	cmd := &cobra.Command{
		Use:   "witness --url URL --key VKEY [--every DURATION]",
		Short: "Submit each new checkpoint to a tlog-witness and store its cosignature",
		Long:  logWitnessLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkWitnessURL(witnessURL); err != nil {
				return err
			}
			if vkey == "" {
				return usageErrorf("--key is required: the witness's verifier key")
			}
			key, err := witness.NewCosignatureVerifier(vkey)
			if err != nil {
				return err
			}
			if every < 0 {
				return usageErrorf("--every must not be negative")
			}
			ports := process(cmd).Witness
			if ports == nil {
				ports = logPorts
			}
			var st service.Backend
			capture := func(b service.Backend, _ *service.Config) error { st = b; return nil }
			// No keys: the checkpoints witnessed are the ones the log
			// published (serve, 'ledger checkpoint'); this command signs
			// nothing of its own.
			return withUseCases(cmd, *db, readOnly, func(u *service.UseCases) error {
				ctx := cmd.Context()
				src, sink, err := ports(ctx, st, u)
				if err != nil {
					return err
				}
				c := &witness.Client{URL: witnessURL, Key: key, Now: process(cmd).Now}
				show := func(r witness.Result) error {
					if *asJSON {
						return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
					}
					_, err := fmt.Fprintln(cmd.OutOrStdout(), witnessLine(r))
					return err
				}
				if every == 0 {
					r, err := c.Submit(ctx, src, sink)
					if err != nil {
						return err
					}
					return show(r)
				}
				ctx, stop := interruptible(ctx)
				defer stop()
				var printErr error
				err = c.Run(ctx, src, sink, every, func(r witness.Result, err error) {
					if err == nil {
						if r.Unchanged {
							return // a line a round would bury the cosigned ones
						}
						if perr := show(r); perr != nil && printErr == nil {
							printErr = perr
						}
						return
					}
					if errkind.Of(err) == errkind.Unavailable {
						fmt.Fprintf(cmd.ErrOrStderr(), "swarmscore: %s (next try in %s)\n", oneLine(err.Error()), every)
					}
				})
				if err != nil {
					return err
				}
				return printErr
			}, capture, configure(cmd))
		},
	}
	cmd.Flags().StringVar(&witnessURL, "url", "", "the witness's submission prefix (http or https); requests go to URL/add-checkpoint")
	cmd.Flags().StringVar(&vkey, "key", "", "the witness's cosignature verifier key: name+hash+base64, key type 0x04 (C2SP tlog-cosignature)")
	cmd.Flags().DurationVar(&every, "every", 0, "submit every DURATION (e.g. 1m) until interrupted; 0 submits once")
	return cmd
}

// witnessLine is a submission's line of text output.
func witnessLine(r witness.Result) string {
	if r.Unchanged {
		return fmt.Sprintf("%s: tree size %d already cosigned", r.Witness, r.Size)
	}
	return fmt.Sprintf("%s: cosigned tree size %d (after %d), %d cosignature(s) stored", r.Witness, r.Size, r.Old, len(r.Cosignatures))
}

// checkWitnessURL requires an absolute http(s) URL with a host and
// neither query nor fragment: add-checkpoint is appended to its path.
func checkWitnessURL(s string) error {
	if s == "" {
		return usageErrorf("--url is required: the witness's submission prefix")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return usageErrorf("--url must be an http or https URL without query or fragment")
	}
	return nil
}
