// Package witness is the log's side of C2SP tlog-witness: it submits each
// new checkpoint of the ledger's transparency log to a witness's
// add-checkpoint endpoint with a consistency proof from the last
// checkpoint the witness cosigned, checks the cosignature it returns (C2SP
// tlog-cosignature, Ed25519 cosignature/v1) and keeps it.
//
// It reads the log through Source and keeps cosignatures through Sink, so it
// depends on neither the log's storage nor the database: the service wires
// both (see Source and Sink for what each must guarantee).
package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Source is the transparency log whose checkpoints are witnessed.
type Source interface {
	// LatestNote returns the log's latest checkpoint: a C2SP
	// tlog-checkpoint signed note (origin, tree size, root hash, optional
	// extension lines, a blank line, the log's signature lines), and its
	// tree size, which must be the note's.
	LatestNote(ctx context.Context) (note []byte, size uint64, err error)
	// ConsistencyProof returns the RFC 6962 §2.1.2 consistency proof, each
	// hash 32 bytes, from the log's tree of size old to its tree of size
	// new, for 0 < old < new <= the latest size.
	ConsistencyProof(ctx context.Context, old, new uint64) ([][]byte, error)
}

// Sink keeps the cosignatures witnesses return.
type Sink interface {
	// StoreCosignature keeps sigLine, a cosignature already verified
	// against the key of the witness named witnessName, on the checkpoint of
	// tree size size: a whole note signature line, "— <name> <base64>",
	// without its final newline. Storing a line already stored must
	// succeed and change nothing.
	StoreCosignature(ctx context.Context, size uint64, witnessName string, sigLine string) error
	// LastWitnessed returns the largest tree size among the stored
	// cosignatures of the witness named witness, 0 when there is none.
	LastWitnessed(ctx context.Context, witness string) (uint64, error)
}

// The codes (errkind.Code) of Submit's errors that come from the witness's
// answer, each with the kind it wraps.
const (
	// CodeUnknownLog: the witness does not know the log's origin (404;
	// errkind.ErrNotFound).
	CodeUnknownLog = "witness_unknown_log"
	// CodeForbidden: the witness trusts none of the checkpoint's
	// signatures (403; errkind.ErrForbidden).
	CodeForbidden = "witness_forbidden"
	// CodeInconsistent: the witness refused the checkpoint as
	// inconsistent with one it cosigned before: the consistency proof does
	// not verify (422), it holds another root for the same size, or a larger
	// tree than the log's latest (409). The log forked or was rewritten, or
	// the witness is wrong; either way someone must look
	// (errkind.ErrConflict).
	CodeInconsistent = "witness_inconsistent"
	// CodeBadRequest: the witness found the request malformed (400;
	// errkind.ErrInvalid).
	CodeBadRequest = "witness_bad_request"
	// CodeUnavailable: the witness could not be reached, timed out,
	// answered 429 or 5xx, or kept moving its size under the client's
	// retries (errkind.ErrUnavailable; trying again later may succeed).
	CodeUnavailable = "witness_unavailable"
	// CodeBadCosignature: the witness answered 200 without a valid
	// cosignature by its configured key (none, an invalid one, one dated
	// more than MaxFuture ahead) or with a body that is not signature
	// lines; nothing is stored (no kind: a negative answer).
	CodeBadCosignature = "witness_bad_cosignature"
)

// MaxFuture is how far past the client's clock a cosignature's timestamp
// may be. tlog-cosignature lets verifiers refuse future timestamps; a
// cosignature from a witness whose clock runs far ahead would later read as
// the witness having seen the checkpoint before it existed.
const MaxFuture = 10 * time.Minute

// maxProofLines is tlog-witness's limit on consistency proof lines.
const maxProofLines = 63

// maxResponse bounds what is read of a witness's answer: a few signature
// lines, even post-quantum ones, are far below it.
const maxResponse = 64 << 10

// maxAttempts bounds the requests of one Submit: the first, and one after
// each 409 that reports a size to continue from. More than two only happen
// when the witness's size keeps moving (another submitter racing us).
const maxAttempts = 3

// Client submits checkpoints to one witness. It is safe for concurrent use
// if its Source and Sink are, but the witness serialises a log's
// submissions anyway; run one per witness.
type Client struct {
	// URL is the witness's submission prefix; requests go to
	// URL + "/add-checkpoint". Required.
	URL string
	// Key is the witness's cosignature key: its name is the witness's name
	// for Sink, and signature lines from any other key are ignored, as
	// tlog-witness requires. Required.
	Key *CosignatureVerifier
	// HTTP sends the requests; nil means a client with a 30-second
	// timeout.
	HTTP *http.Client
	// Now is the clock cosignature times are checked against (MaxFuture);
	// nil means time.Now.
	Now func() time.Time
}

// Result is what one Submit did.
type Result struct {
	// Witness is the witness's key name.
	Witness string `json:"witness"`
	// Size is the tree size of the log's latest checkpoint.
	Size uint64 `json:"size"`
	// Old is the old size of the request the witness accepted: the size
	// of the last checkpoint it had cosigned.
	Old uint64 `json:"old"`
	// Cosignatures are the verified signature lines stored, without
	// newlines; empty when Unchanged.
	Cosignatures []string `json:"cosignatures"`
	// Unchanged is true when the witness had already cosigned this size
	// (as the Sink says) and no request was made.
	Unchanged bool `json:"unchanged"`
	// Attempts counts the requests made: more than one when a 409 named
	// the size the witness holds.
	Attempts int `json:"attempts"`
}

var defaultHTTP = &http.Client{Timeout: 30 * time.Second}

// Submit sends the log's latest checkpoint to the witness unless the Sink
// says the witness already cosigned its size, with old = the last size the
// witness cosigned as the Sink knows it and the consistency proof from
// there. When the witness answers 409 with the size it actually holds (the
// Sink lost or never had its cosignature, or another submitter moved it)
// Submit retries once from that size; a held size larger than the
// checkpoint's, or equal to the old size sent, means the witness has seen
// a tree this one does not extend. On 200 it verifies every returned
// signature line by c.Key over the checkpoint, ignoring other keys', and
// stores the valid ones; it stores nothing otherwise.
//
// Errors: the Source's and the Sink's, unchanged; the witness's answers as
// errkind kinds with the codes above; a Source whose note is not a
// checkpoint of the size it reports, or whose proof is too long or not of
// 32-byte hashes, is an internal error.
func (c *Client) Submit(ctx context.Context, src Source, sink Sink) (Result, error) {
	res := Result{Witness: c.Key.Name(), Cosignatures: []string{}}
	signed, size, err := src.LatestNote(ctx)
	if err != nil {
		return res, err
	}
	text, err := checkpointText(signed, size)
	if err != nil {
		return res, err
	}
	res.Size = size
	old, err := sink.LastWitnessed(ctx, res.Witness)
	if err != nil {
		return res, err
	}
	if old == size {
		res.Unchanged = true
		return res, nil
	}
	if old > size {
		return res, errkind.WithCode(fmt.Errorf("%w: %s has cosigned tree size %d, larger than the log's latest checkpoint (%d): the log lost entries", errkind.ErrConflict, res.Witness, old, size), CodeInconsistent)
	}
	for res.Attempts < maxAttempts {
		res.Attempts++
		var proof [][]byte
		if old != 0 && old != size {
			if proof, err = src.ConsistencyProof(ctx, old, size); err != nil {
				return res, err
			}
		}
		status, body, err := c.addCheckpoint(ctx, old, proof, signed)
		if err != nil {
			return res, err
		}
		if status == http.StatusConflict {
			held, err := heldSize(body)
			if err != nil {
				return res, fmt.Errorf("witness %s: 409 answer: %w", res.Witness, err)
			}
			switch {
			case held > size:
				return res, errkind.WithCode(fmt.Errorf("%w: %s holds a checkpoint of tree size %d, larger than the log's latest (%d): it has seen a tree this log does not extend", errkind.ErrConflict, res.Witness, held, size), CodeInconsistent)
			case held == old:
				// Not a stale old size: a checkpoint of the same size
				// with another root (tlog-witness's second 409).
				return res, errkind.WithCode(fmt.Errorf("%w: %s holds another root for tree size %d: the log forked or was rewritten", errkind.ErrConflict, res.Witness, held), CodeInconsistent)
			}
			old = held
			continue
		}
		if err := answerError(res.Witness, old, size, status); err != nil {
			return res, err
		}
		lines, err := c.verify(text, body)
		if err != nil {
			return res, errkind.WithCode(fmt.Errorf("witness %s: %w", res.Witness, err), CodeBadCosignature)
		}
		res.Old = old
		for _, l := range lines {
			if err := sink.StoreCosignature(ctx, size, res.Witness, l); err != nil {
				return res, err
			}
			res.Cosignatures = append(res.Cosignatures, l)
		}
		return res, nil
	}
	return res, errkind.WithCode(fmt.Errorf("%w: %s: its size changed under %d attempts (another submitter?); try again", errkind.ErrUnavailable, res.Witness, maxAttempts), CodeUnavailable)
}

// Run calls Submit now and then every interval until ctx ends, passing each
// outcome to report. A round that fails with errkind.ErrUnavailable (the
// witness or the database unreachable for a while) is reported and the
// next round tries again; any other error is reported and ends Run with
// it, since a witness that refuses the log's checkpoints (an inconsistency,
// an unknown log, a key it does not trust) needs an operator, not retries.
// The end of ctx ends Run with nil. interval must be positive.
func (c *Client) Run(ctx context.Context, src Source, sink Sink, interval time.Duration, report func(Result, error)) error {
	if interval <= 0 {
		return fmt.Errorf("%w: the interval must be positive", errkind.ErrInvalid)
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		r, err := c.Submit(ctx, src, sink)
		if ctx.Err() != nil {
			return nil
		}
		report(r, err)
		if err != nil && errkind.Of(err) != errkind.Unavailable {
			return err
		}
		t.Reset(interval)
	}
}

// addCheckpoint makes one add-checkpoint request and returns the status and
// the body (at most maxResponse bytes) of the answer.
func (c *Client) addCheckpoint(ctx context.Context, old uint64, proof [][]byte, signed []byte) (int, []byte, error) {
	if len(proof) > maxProofLines {
		return 0, nil, fmt.Errorf("consistency proof of %d hashes: tlog-witness allows %d", len(proof), maxProofLines)
	}
	var b bytes.Buffer
	b.WriteString("old ")
	b.WriteString(strconv.FormatUint(old, 10))
	b.WriteByte('\n')
	for _, h := range proof {
		if len(h) != 32 {
			return 0, nil, fmt.Errorf("consistency proof hash of %d bytes, want 32", len(h))
		}
		b.WriteString(base64.StdEncoding.EncodeToString(h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.Write(signed)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.URL, "/")+"/add-checkpoint", &b)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: witness URL: %v", errkind.ErrInvalid, err)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		return 0, nil, errkind.WithCode(fmt.Errorf("%w: witness %s: %v", errkind.ErrUnavailable, c.Key.Name(), err), CodeUnavailable)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return 0, nil, errkind.WithCode(fmt.Errorf("%w: witness %s: reading its answer: %v", errkind.ErrUnavailable, c.Key.Name(), err), CodeUnavailable)
	}
	if len(body) > maxResponse {
		return 0, nil, fmt.Errorf("witness %s: an answer over %d bytes", c.Key.Name(), maxResponse)
	}
	if resp.StatusCode == http.StatusConflict {
		mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if err != nil || mt != "text/x.tlog.size" {
			return 0, nil, fmt.Errorf("witness %s: a 409 answer of type %q, want text/x.tlog.size", c.Key.Name(), resp.Header.Get("Content-Type"))
		}
	}
	return resp.StatusCode, body, nil
}

// heldSize parses a 409 answer's body: the witness's size in decimal, no
// leading zeroes, then a newline.
func heldSize(body []byte) (uint64, error) {
	s, ok := strings.CutSuffix(string(body), "\n")
	n, err := strconv.ParseUint(s, 10, 64)
	if !ok || err != nil || s != strconv.FormatUint(n, 10) {
		return 0, fmt.Errorf("the body %q is not a tree size and a newline", body)
	}
	return n, nil
}

// answerError is the error of a status other than 200 and 409, nil for 200.
func answerError(name string, old, size uint64, status int) error {
	switch {
	case status == http.StatusOK:
		return nil
	case status == http.StatusNotFound:
		return errkind.WithCode(fmt.Errorf("%w: witness %s does not know this log's origin (404)", errkind.ErrNotFound, name), CodeUnknownLog)
	case status == http.StatusForbidden:
		return errkind.WithCode(fmt.Errorf("%w: witness %s trusts none of the checkpoint's signatures (403): it is configured with another key for this origin", errkind.ErrForbidden, name), CodeForbidden)
	case status == http.StatusUnprocessableEntity:
		return errkind.WithCode(fmt.Errorf("%w: witness %s refused the consistency proof from tree size %d to %d (422): the log is not an extension of what it cosigned", errkind.ErrConflict, name, old, size), CodeInconsistent)
	case status == http.StatusBadRequest:
		return errkind.WithCode(fmt.Errorf("%w: witness %s found the request malformed (400)", errkind.ErrInvalid, name), CodeBadRequest)
	case status == http.StatusTooManyRequests || status >= 500:
		return errkind.WithCode(fmt.Errorf("%w: witness %s answered %d", errkind.ErrUnavailable, name, status), CodeUnavailable)
	}
	return fmt.Errorf("witness %s: unexpected answer %d", name, status)
}

// verify checks a 200 answer: one or more note signature lines, each
// ending in a newline. It appends them to the checkpoint's text and opens
// the note with the witness's key alone (tlog-witness's suggested parse):
// lines of other keys are ignored, a line of this key that does not verify
// fails, and at least one must verify. It returns the verified lines
// without newlines.
func (c *Client) verify(text, body []byte) ([]string, error) {
	if len(body) == 0 || body[len(body)-1] != '\n' {
		return nil, errors.New("the answer is not signature lines ending in a newline")
	}
	msg := make([]byte, 0, len(text)+1+len(body))
	msg = append(append(append(msg, text...), '\n'), body...)
	n, err := note.Open(msg, note.VerifierList(c.Key))
	var unverified *note.UnverifiedNoteError
	switch {
	case errors.As(err, &unverified):
		return nil, fmt.Errorf("no cosignature by key %s+%08x in the answer", c.Key.Name(), c.Key.KeyHash())
	case err != nil:
		return nil, fmt.Errorf("the answer's cosignature does not verify: %v", err)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	lines := make([]string, 0, len(n.Sigs))
	for _, s := range n.Sigs {
		l := "— " + s.Name + " " + s.Base64
		t, err := CosignatureTime(l)
		if err != nil {
			return nil, err
		}
		if ahead := t.Sub(now()); ahead > MaxFuture {
			return nil, fmt.Errorf("cosignature dated %s, %s ahead of this clock", t.Format(time.RFC3339), ahead.Round(time.Second))
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// checkpointText returns the text of the signed checkpoint note (its lines
// up to the blank line that precedes the signatures, with the final
// newline): what cosignatures sign. It checks that the text is a
// tlog-checkpoint body (origin, decimal size, base64 root hash) of size
// size.
func checkpointText(signed []byte, size uint64) ([]byte, error) {
	i := bytes.LastIndex(signed, []byte("\n\n"))
	if i < 0 {
		return nil, errors.New("the log's checkpoint is not a signed note")
	}
	text := signed[:i+1]
	lines := strings.SplitN(string(text), "\n", 4)
	if len(lines) < 4 || lines[0] == "" {
		return nil, errors.New("the log's checkpoint has no origin, size and root hash lines")
	}
	n, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || lines[1] != strconv.FormatUint(n, 10) {
		return nil, fmt.Errorf("the log's checkpoint size line %q is not a decimal size", lines[1])
	}
	if n != size {
		return nil, fmt.Errorf("the log's checkpoint is of tree size %d, not %d as reported", n, size)
	}
	if root, err := base64.StdEncoding.Strict().DecodeString(lines[2]); err != nil || len(root) != 32 {
		return nil, fmt.Errorf("the log's checkpoint root hash line %q is not base64 of 32 bytes", lines[2])
	}
	return text, nil
}
