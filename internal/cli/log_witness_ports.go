package cli

import (
	"context"
	"fmt"
	"math"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/witness"
)

// logPorts gives `log witness` the database's own transparency log: its
// latest signed note and proofs, and its cosignature store.
func logPorts(_ context.Context, _ service.Backend, u *service.UseCases) (witness.Source, witness.Sink, error) {
	p := serviceLog{u.Log}
	return p, p, nil
}

// serviceLog adapts service.Log to the witness client's ports.
type serviceLog struct{ log *service.Log }

// LatestNote is the note as the log signed it, without cosignatures: the
// checkpoint a witness is asked to cosign.
func (l serviceLog) LatestNote(ctx context.Context) ([]byte, uint64, error) {
	c, err := l.log.LatestCheckpoint(ctx)
	if errkind.Of(err) == errkind.NotFound {
		return nil, 0, fmt.Errorf("%w: the log has no signed checkpoint yet ('swarmscore ledger checkpoint' signs one with an Ed25519 key)", errkind.ErrNotFound)
	}
	if err != nil {
		return nil, 0, err
	}
	return c.Signed, c.Size, nil
}

func (l serviceLog) ConsistencyProof(ctx context.Context, old, new uint64) ([][]byte, error) {
	if old > math.MaxInt64 || new > math.MaxInt64 {
		return nil, fmt.Errorf("%w: tree size out of range", errkind.ErrInvalid)
	}
	return l.log.ConsistencyProof(ctx, int64(old), int64(new))
}

func (l serviceLog) StoreCosignature(ctx context.Context, size uint64, _ string, line string) error {
	if size > math.MaxInt64 {
		return fmt.Errorf("%w: tree size out of range", errkind.ErrInvalid)
	}
	return l.log.AddCosignature(ctx, int64(size), line)
}

func (l serviceLog) LastWitnessed(ctx context.Context, name string) (uint64, error) {
	n, err := l.log.LastCosigned(ctx, name)
	return uint64(n), err
}
