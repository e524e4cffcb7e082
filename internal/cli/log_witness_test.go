package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/tlog"
	"github.com/swarmscore/swarmscore/internal/witness"
	"github.com/swarmscore/swarmscore/internal/witness/witnesstest"
)

// growingLog appends a leaf before each of its first grow checkpoints, then
// calls done: a log that keeps getting new checkpoints while `log witness
// --every` runs.
type growingLog struct {
	*witnesstest.Log
	mu   sync.Mutex
	grow int
	done func()
	// down fails that many first calls as a database that cannot be
	// reached.
	down int
}

func (g *growingLog) LatestNote(ctx context.Context) ([]byte, uint64, error) {
	g.mu.Lock()
	if g.down > 0 {
		g.down--
		g.mu.Unlock()
		return nil, 0, fmt.Errorf("%w: the database is restarting", errkind.ErrUnavailable)
	}
	if g.grow > 0 {
		g.grow--
		g.Append("leaf")
	} else if g.done != nil {
		g.done()
	}
	g.mu.Unlock()
	return g.Log.LatestNote(ctx)
}

func TestLogWitness(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "w.db")
	if code, _, stderr := runLedgerCLI(t, db, "", "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, stderr)
	}
	const origin = "example.test/swarmscore"
	log := witnesstest.NewLog(t, origin)
	log.Append("a", "b", "c")
	w := witnesstest.StartWitness(t, "witness.test/w1", map[string]note.Verifier{origin: log.Verifier(t)})
	sink := &witnesstest.Sink{}
	var src witness.Source = log
	ports := func(_ context.Context, st service.Backend, u *service.UseCases) (witness.Source, witness.Sink, error) {
		if st == nil || u == nil {
			t.Error("log witness gave the adapter no store or use cases")
		}
		return src, sink, nil
	}
	runW := func(ctx context.Context, ports WitnessPorts, args ...string) result {
		var out, errb bytes.Buffer
		args = append([]string{"log", "witness", "--db", db}, args...)
		code := Run(ctx, args, Process{Stdout: &out, Stderr: &errb, Drivers: testDrivers, Witness: ports})
		return result{out.String(), errb.String(), code}
	}
	flags := []string{"--url", w.URL, "--key", w.VKey}

	r := runW(context.Background(), ports, flags...)
	if r.code != 0 || r.stdout != "witness.test/w1: cosigned tree size 3 (after 0), 1 cosignature(s) stored\n" {
		t.Fatalf("first: %+v", r)
	}
	checkStderr(t, r)
	r = runW(context.Background(), ports, flags...)
	if r.code != 0 || r.stdout != "witness.test/w1: tree size 3 already cosigned\n" {
		t.Fatalf("again: %+v", r)
	}
	log.Append("d")
	r = runW(context.Background(), ports, append(flags, "--json")...)
	var got witness.Result
	if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil || got.Old != 3 || got.Size != 4 || len(got.Cosignatures) != 1 {
		t.Fatalf("--json: %+v %v", r, err)
	}
	v, err := fnote.NewVerifierForCosignatureV1(w.VKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sink.Cosignatures(w.Name) {
		signed, _ := log.Note(c.Size)
		if _, err := note.Open(append(signed, c.Line+"\n"...), note.VerifierList(v)); err != nil {
			t.Errorf("stored cosignature of size %d: %v", c.Size, err)
		}
	}

	// --every: three new checkpoints, then the test interrupts it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A first round that cannot reach the database is reported on stderr
	// and retried.
	src = &growingLog{Log: log, grow: 3, done: cancel, down: 1}
	r = runW(ctx, ports, append(flags, "--every", "5ms")...)
	if r.code != 0 || r.stdout != "witness.test/w1: cosigned tree size 5 (after 4), 1 cosignature(s) stored\n"+
		"witness.test/w1: cosigned tree size 6 (after 5), 1 cosignature(s) stored\n"+
		"witness.test/w1: cosigned tree size 7 (after 6), 1 cosignature(s) stored\n" ||
		r.stderr != "swarmscore: unavailable: the database is restarting (next try in 5ms)\n" {
		t.Fatalf("--every: %+v", r)
	}
	src = log

	fork := log.Fork(t)
	fork.Append("x", "y", "z", "w", "v", "u", "t", "s")
	other := witnesstest.NewLog(t, "other.test/log")
	other.Append("x", "y", "z", "w", "v", "u", "t", "s") // past what the sink holds
	_, plainKey, _ := note.GenerateKey(rand.Reader, "witness.test/w1")
	for _, tc := range []struct {
		name  string
		src   witness.Source
		ports bool
		args  []string
		code  int
		msg   string
	}{
		{"no --url", log, true, []string{"--key", w.VKey}, ExitUsage, "--url is required"},
		{"a --url with a query", log, true, []string{"--url", w.URL + "?x=1", "--key", w.VKey}, ExitUsage, "--url must be"},
		{"no --key", log, true, []string{"--url", w.URL}, ExitUsage, "--key is required"},
		{"an ordinary note key", log, true, []string{"--url", w.URL, "--key", plainKey}, ExitUsage, "type 0x01"},
		{"a negative --every", log, true, append(flags, "--every", "-1s"), ExitUsage, "--every"},
		{"a fork", fork, true, flags, ExitConflict, "not an extension of what it cosigned"},
		{"an unknown origin", other, true, flags, ExitNotFound, "does not know this log's origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src = tc.src
			p := WitnessPorts(ports)
			if !tc.ports {
				p = nil
			}
			r := runW(context.Background(), p, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Fatalf("%+v; want exit %d and %q", r, tc.code, tc.msg)
			}
			checkStderr(t, r)
		})
	}
}

// TestLogWitnessOwnLog runs `log witness` on the database's own
// transparency log (no Process.Witness): before any note it says so;
// then the witness cosigns the note 'ledger checkpoint' signed, the
// cosignature is stored and printed with the note, and the next round
// proves consistency from the size that witness last cosigned.
func TestLogWitnessOwnLog(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "own.db")
	for _, args := range [][]string{{"migrate"}, {"key", "rotate", "--signing-alg", "Ed25519"}} {
		if code, _, stderr := runLedgerCLI(t, db, "", args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, stderr)
		}
	}
	events := strings.Split(strings.TrimSpace(cliEvents()), "\n")
	ingest := func(lines []string) {
		t.Helper()
		if code, _, stderr := runLedgerCLI(t, db, strings.Join(lines, "\n")+"\n", "ingest", "-"); code != 0 {
			t.Fatalf("ingest: %d %s", code, stderr)
		}
	}
	checkpoint := func() string {
		t.Helper()
		code, out, stderr := runLedgerCLI(t, db, "", "ledger", "checkpoint")
		if code != 0 {
			t.Fatalf("ledger checkpoint: %d %s", code, stderr)
		}
		return out
	}
	witnessRun := func(ports WitnessPorts, args ...string) result {
		var out, errb bytes.Buffer
		args = append([]string{"log", "witness", "--db", db}, args...)
		code := Run(context.Background(), args, Process{Stdout: &out, Stderr: &errb, Drivers: testDrivers, Witness: ports})
		return result{out.String(), errb.String(), code}
	}
	ingest(events[:1])
	w0 := witnesstest.StartWitness(t, "witness.test/w0", map[string]note.Verifier{})
	if r := witnessRun(nil, "--url", w0.URL, "--key", w0.VKey); r.code != ExitNotFound || !strings.Contains(r.stderr, "no signed checkpoint yet") {
		t.Fatalf("before any note: %+v", r)
	}
	first := checkpoint()
	// The log's note key: the active key's public half, under the note's
	// origin (its first line).
	sqldb, err := sql.Open("sqlite", strings.TrimPrefix(db, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	var pub []byte
	if err := sqldb.QueryRow(`SELECT public_key FROM signing_keys WHERE state = 'active'`).Scan(&pub); err != nil {
		t.Fatal(err)
	}
	origin, _, _ := strings.Cut(first, "\n")
	v, err := tlog.Ed25519Verifier(origin, ed25519.PublicKey(pub))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open([]byte(first), note.VerifierList(v)); err != nil {
		t.Fatalf("the note does not open with the log's key: %v\n%s", err, first)
	}
	w := witnesstest.StartWitness(t, "witness.test/w1", map[string]note.Verifier{origin: v})
	flags := []string{"--url", w.URL, "--key", w.VKey}
	r := witnessRun(nil, flags...)
	if r.code != 0 || r.stdout != "witness.test/w1: cosigned tree size 1 (after 0), 1 cosignature(s) stored\n" {
		t.Fatalf("first: %+v", r)
	}
	cosigned := checkpoint()
	cv, err := fnote.NewVerifierForCosignatureV1(w.VKey)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := note.Open([]byte(cosigned), note.VerifierList(cv)); err != nil || len(n.Sigs) != 1 {
		t.Fatalf("the published note carries no valid cosignature: %v\n%s", err, cosigned)
	}
	ingest([]string{events[1], events[3]})
	checkpoint()
	if r := witnessRun(nil, flags...); r.code != 0 || !strings.Contains(r.stdout, "(after 1)") {
		t.Fatalf("second: %+v", r)
	}
}
