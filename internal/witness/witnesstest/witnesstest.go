// Package witnesstest holds what the tests of witnessing share: a small
// in-memory transparency log (RFC 6962 hashing with
// github.com/transparency-dev/merkle, checkpoints signed with
// golang.org/x/mod/sumdb/note), an in-memory cosignature store, and a real
// witness, github.com/transparency-dev/witness's, served in-process over
// HTTP. It depends on nothing of the log the service keeps, so the
// witnessing client is tested against an independent log and witness.
package witnesstest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/witness/persistence/inmemory"
	tdwitness "github.com/transparency-dev/witness/witness"
	"golang.org/x/mod/sumdb/note"
)

// Log is an append-only Merkle log in memory whose checkpoints are C2SP
// tlog-checkpoint notes. It implements witness.Source. Safe for concurrent
// use.
type Log struct {
	origin string
	skey   string
	signer note.Signer
	// VKey is the log's verifier key, for a witness's configuration.
	VKey string

	mu     sync.Mutex
	leaves [][]byte
}

// NewLog returns an empty log of origin, signing with a new Ed25519 key
// named origin.
func NewLog(t testing.TB, origin string) *Log {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	return NewLogWithKey(t, origin, skey, vkey)
}

// NewLogWithKey returns an empty log of origin signing with skey, whose
// verifier key is vkey: two logs with one key make a fork.
func NewLogWithKey(t testing.TB, origin, skey, vkey string) *Log {
	t.Helper()
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return &Log{origin: origin, skey: skey, signer: s, VKey: vkey}
}

// Fork returns an empty log with l's origin and key: filled with other
// leaves, it is a fork of l that l's witnesses must refuse.
func (l *Log) Fork(t testing.TB) *Log {
	return NewLogWithKey(t, l.origin, l.skey, l.VKey)
}

// Verifier returns the log's note verifier.
func (l *Log) Verifier(t testing.TB) note.Verifier {
	t.Helper()
	v, err := note.NewVerifier(l.VKey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Append adds one leaf per datum.
func (l *Log) Append(data ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range data {
		l.leaves = append(l.leaves, rfc6962.DefaultHasher.HashLeaf([]byte(d)))
	}
}

// Size is the number of leaves.
func (l *Log) Size() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(len(l.leaves))
}

// Root returns the root hash of the tree of the first size leaves.
func (l *Log) Root(size uint64) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rangeHash(0, size)
}

// rangeHash is the root hash of leaves [begin, end): the root of a
// compact range from 0, or the single node of the compact range of a
// perfect subtree (a proof node).
func (l *Log) rangeHash(begin, end uint64) []byte {
	if begin == end {
		return rfc6962.DefaultHasher.EmptyRoot()
	}
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	r := rf.NewEmptyRange(begin)
	for _, h := range l.leaves[begin:end] {
		if err := r.Append(h, nil); err != nil {
			panic(err)
		}
	}
	if begin != 0 {
		if hs := r.Hashes(); len(hs) == 1 {
			return hs[0]
		}
		panic(fmt.Sprintf("[%d, %d) is not a perfect subtree", begin, end))
	}
	root, err := r.GetRootHash(nil)
	if err != nil {
		panic(err)
	}
	return root
}

// LatestNote signs a checkpoint of the whole log.
func (l *Log) LatestNote(context.Context) ([]byte, uint64, error) {
	size := l.Size()
	n, err := l.Note(size)
	return n, size, err
}

// Note signs a checkpoint of the tree of the first size leaves.
func (l *Log) Note(size uint64) ([]byte, error) {
	text := l.origin + "\n" + strconv.FormatUint(size, 10) + "\n" + base64.StdEncoding.EncodeToString(l.Root(size)) + "\n"
	return note.Sign(&note.Note{Text: text}, l.signer)
}

// ConsistencyProof returns the RFC 6962 proof from old to new, its nodes
// chosen by merkle/proof and each hashed from the leaves it covers.
func (l *Log) ConsistencyProof(_ context.Context, old, new uint64) ([][]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if new > uint64(len(l.leaves)) {
		return nil, fmt.Errorf("tree size %d > %d", new, len(l.leaves))
	}
	nodes, err := proof.Consistency(old, new)
	if err != nil {
		return nil, err
	}
	hashes := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		b, e := id.Coverage()
		hashes[i] = l.rangeHash(b, e)
	}
	return nodes.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
}

// Cosignature is one stored cosignature.
type Cosignature struct {
	Size uint64
	Line string
}

// Sink is an in-memory cosignature store; it implements witness.Sink. Safe
// for concurrent use.
type Sink struct {
	mu   sync.Mutex
	sigs map[string][]Cosignature
	// Err, when set, is returned by StoreCosignature.
	Err error
}

// StoreCosignature keeps line once.
func (s *Sink) StoreCosignature(_ context.Context, size uint64, name, line string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return s.Err
	}
	if s.sigs == nil {
		s.sigs = map[string][]Cosignature{}
	}
	for _, c := range s.sigs[name] {
		if c.Line == line {
			return nil
		}
	}
	s.sigs[name] = append(s.sigs[name], Cosignature{size, line})
	return nil
}

// LastWitnessed is the largest size stored for name.
func (s *Sink) LastWitnessed(_ context.Context, name string) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for _, c := range s.sigs[name] {
		n = max(n, c.Size)
	}
	return n, nil
}

// Cosignatures returns what is stored for name, in the order stored.
func (s *Sink) Cosignatures(name string) []Cosignature {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Cosignature(nil), s.sigs[name]...)
}

// Witness is transparency-dev/witness's witness with in-memory state,
// served by its own tlog-witness HTTP handler.
type Witness struct {
	// URL is the submission prefix.
	URL string
	// Name is the witness's key name.
	Name string
	// VKey is its cosignature/v1 verifier key (type 0x04).
	VKey string
}

// StartWitness starts a witness named name that knows the logs given, by
// origin, and stops it when the test ends.
func StartWitness(t testing.TB, name string, logs map[string]note.Verifier) *Witness {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	cvkey, err := fnote.VKeyToCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	w, err := tdwitness.New(context.Background(), tdwitness.Opts{
		Persistence: inmemory.New(),
		Signers:     []note.Signer{signer},
		VerifierForLog: func(_ context.Context, origin string) (note.Verifier, bool, error) {
			v, ok := logs[origin]
			return v, ok, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := tdwitness.NewHTTPHandler(w)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add-checkpoint", h.AddCheckpoint)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &Witness{URL: srv.URL, Name: name, VKey: cvkey}
}
