// Command ingestbench measures `swarmscore ingest` the way an operator runs
// it: one process loading one NDJSON file into a fresh, just-migrated
// database at the default batch size, against the back end's raw bulk path
// for the same rows (PostgreSQL COPY; SQLite one transaction of prepared
// INSERTs, same driver, same schema and indexes). Rounds alternate the
// candidates and their baselines, so the machine's load hits both alike;
// ratio = the command's rate / the baseline's rate of the same round.
//
//	go build -o /tmp/swarmscore ./cmd/swarmscore
//	go run ./scripts/ingestbench -bin /tmp/swarmscore -rounds 3 -modes cli,http,sqlite
//
// Every database it makes is named ingestbench_* and dropped afterwards.
// It prints one line per measurement and the ratios; docs/BENCHMARKS.md has
// the figures.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"
)

// event is one generated event: a new, final Conduit session or AP2
// transaction (2 of 3 are sessions), as in the store benchmarks.
type event struct {
	ap2              bool
	id, agent, buyer string
	status           string
	amount           int64
	started, ended   time.Time
}

func generate(n, agents int, asOf time.Time) []event {
	r := mrand.New(mrand.NewPCG(25, 7))
	evs := make([]event, n)
	for i := range evs {
		end := asOf.Add(-time.Duration(r.Int64N(int64(89 * 24 * time.Hour)))).Truncate(time.Second)
		e := event{
			id: "ev-" + strconv.Itoa(i), agent: fmt.Sprintf("agent-%05d", r.IntN(agents)), buyer: "buyer-" + strconv.Itoa(r.IntN(500)),
			started: end.Add(-time.Duration(r.Int64N(int64(time.Hour)))).Truncate(time.Second), ended: end,
		}
		if i%3 == 2 {
			e.ap2, e.amount = true, 100+r.Int64N(10_000_000)
			e.status = []string{"SETTLED", "SETTLED", "SETTLED", "DISPUTED", "REFUNDED"}[r.IntN(5)]
		} else {
			e.status = []string{"VERIFIED", "VERIFIED", "VERIFIED", "FAILED"}[r.IntN(4)]
		}
		evs[i] = e
	}
	return evs
}

func writeNDJSON(path string, evs []event) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, e := range evs {
		m := map[string]any{"id": e.id, "buyer_id": e.buyer, "status": e.status, "started_at": e.started.Format(time.RFC3339)}
		if e.ap2 {
			m["type"], m["provider_id"], m["escrow_amount_cents"], m["settled_at"] = "ap2_transaction", e.agent, e.amount, e.ended.Format(time.RFC3339)
		} else {
			m["type"], m["agent_id"], m["completed_at"] = "conduit_session", e.agent, e.ended.Format(time.RFC3339)
		}
		b, _ := json.Marshal(m)
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

type bench struct {
	bin, admin, file, tmp string
	evs                   []event
	agents                int
}

func main() {
	var (
		b      bench
		n      = flag.Int("events", 200_000, "events in the file")
		rounds = flag.Int("rounds", 3, "rounds; each runs every mode and its baseline once")
		modes  = flag.String("modes", "cli,http,sqlite", "what to measure: cli (PostgreSQL), http (ingest --server, PostgreSQL), sqlite; cli and http share each round's COPY")
		batch  = flag.Int("batch-size", 0, "pass --batch-size (0: the command's default)")
		write  = flag.String("write", "", "only write the events to this NDJSON file")
	)
	flag.StringVar(&b.bin, "bin", "swarmscore", "the swarmscore binary")
	flag.StringVar(&b.admin, "pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "a DSN that may CREATE DATABASE")
	flag.IntVar(&b.agents, "agents", 2_000, "agents the events are spread over")
	flag.Parse()
	var err error
	if b.tmp, err = os.MkdirTemp("", "ingestbench"); err != nil {
		fail(err)
	}
	defer os.RemoveAll(b.tmp)
	b.evs = generate(*n, b.agents, time.Now().UTC().Add(-time.Hour))
	if *write != "" {
		if err := writeNDJSON(*write, b.evs); err != nil {
			fail(err)
		}
		return
	}
	b.file = filepath.Join(b.tmp, "events.ndjson")
	if err := writeNDJSON(b.file, b.evs); err != nil {
		fail(err)
	}
	var extra []string
	if *batch > 0 {
		extra = []string{"--batch-size", strconv.Itoa(*batch)}
	}
	want := map[string]bool{}
	for _, m := range strings.Split(*modes, ",") {
		want[m] = true
	}
	rate := func(d time.Duration) float64 { return float64(len(b.evs)) / d.Seconds() }
	for r := 1; r <= *rounds; r++ {
		if want["cli"] || want["http"] {
			if want["cli"] {
				d := b.pgCLI(extra)
				fmt.Printf("round %d: pg cli   %6.1f s  %7.0f events/s\n", r, d.Seconds(), rate(d))
				results = append(results, result{r, "pg-cli", d})
			}
			c := b.pgCopy()
			fmt.Printf("round %d: pg COPY  %6.1f s  %7.0f events/s\n", r, c.Seconds(), rate(c))
			results = append(results, result{r, "pg-copy", c})
			if want["http"] {
				d := b.pgHTTP(extra)
				fmt.Printf("round %d: pg http  %6.1f s  %7.0f events/s\n", r, d.Seconds(), rate(d))
				results = append(results, result{r, "pg-http", d})
			}
		}
		if want["sqlite"] {
			d := b.sqliteCLI(extra)
			fmt.Printf("round %d: sqlite cli  %6.1f s  %7.0f events/s\n", r, d.Seconds(), rate(d))
			results = append(results, result{r, "sqlite-cli", d})
			raw := b.sqliteRaw()
			fmt.Printf("round %d: sqlite raw  %6.1f s  %7.0f events/s\n", r, raw.Seconds(), rate(raw))
			results = append(results, result{r, "sqlite-raw", raw})
		}
	}
	for r := 1; r <= *rounds; r++ {
		by := map[string]time.Duration{}
		for _, x := range results {
			if x.round == r {
				by[x.what] = x.d
			}
		}
		line := fmt.Sprintf("round %d ratios:", r)
		for _, p := range [][2]string{{"pg-cli", "pg-copy"}, {"pg-http", "pg-copy"}, {"sqlite-cli", "sqlite-raw"}} {
			if by[p[0]] > 0 && by[p[1]] > 0 {
				line += fmt.Sprintf("  %s/%s %.2f", p[0], p[1], by[p[1]].Seconds()/by[p[0]].Seconds())
			}
		}
		fmt.Println(line)
	}
}

type result struct {
	round int
	what  string
	d     time.Duration
}

var results []result

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ingestbench:", err)
	os.Exit(1)
}

func (b *bench) run(env []string, args ...string) {
	cmd := exec.Command(b.bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		fail(fmt.Errorf("%s %s: %w\n%s", b.bin, strings.Join(args, " "), err, out))
	}
}

// freshPG creates an empty database, migrated by `swarmscore migrate`, and
// returns its DSN and a function dropping it.
func (b *bench) freshPG() (string, func()) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.admin)
	if err != nil {
		fail(err)
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	name := "ingestbench_" + hex.EncodeToString(rnd[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		fail(err)
	}
	u, err := url.Parse(b.admin)
	if err != nil {
		fail(err)
	}
	u.Path = "/" + name
	dsn := u.String()
	b.run(nil, "migrate", "--db", dsn)
	return dsn, func() {
		if _, err := conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			fail(err)
		}
		conn.Close(ctx)
	}
}

func (b *bench) timed(env []string, args ...string) time.Duration {
	t0 := time.Now()
	b.run(env, args...)
	return time.Since(t0)
}

func (b *bench) pgCLI(extra []string) time.Duration {
	dsn, drop := b.freshPG()
	defer drop()
	return b.timed(nil, append([]string{"ingest", "--db", dsn, "--operator", "op-bench", b.file}, extra...)...)
}

// pgCopy loads the same event rows by COPY (with the operator and agents
// rows their foreign keys need) in one transaction: no chain, no checks.
func (b *bench) pgCopy() time.Duration {
	dsn, drop := b.freshPG()
	defer drop()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		fail(err)
	}
	defer conn.Close(ctx)
	seen := map[string]bool{}
	var agents, c, a [][]any
	for _, e := range b.evs {
		if !seen[e.agent] {
			seen[e.agent] = true
			agents = append(agents, []any{e.agent})
		}
		if e.ap2 {
			a = append(a, []any{e.id, e.agent, e.buyer, "op-bench", e.status, e.amount, e.started, e.ended, int64(1)})
		} else {
			c = append(c, []any{e.id, e.agent, e.buyer, "op-bench", e.status, e.started, e.ended, int64(1)})
		}
	}
	t0 := time.Now()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO operators (id) VALUES ('op-bench')`); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"agents"}, []string{"id"}, pgx.CopyFromRows(agents)); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"conduit_sessions"},
			[]string{"id", "agent_id", "buyer_id", "operator_id", "status", "started_at", "completed_at", "seq"}, pgx.CopyFromRows(c)); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"ap2_transactions"},
			[]string{"id", "provider_id", "buyer_id", "operator_id", "status", "escrow_amount_cents", "started_at", "settled_at", "seq"}, pgx.CopyFromRows(a))
		return err
	})
	if err != nil {
		fail(err)
	}
	return time.Since(t0)
}

// pgHTTP starts `swarmscore serve` on a fresh database and sends the file
// with `ingest --server`; the server's start is not timed.
func (b *bench) pgHTTP(extra []string) time.Duration {
	dsn, drop := b.freshPG()
	defer drop()
	out, err := exec.Command(b.bin, "token", "create", "--db", dsn, "--operator", "op-bench", "--json").Output()
	if err != nil {
		fail(fmt.Errorf("token create: %w", err))
	}
	var tok struct{ Token string }
	if err := json.Unmarshal(out, &tok); err != nil {
		fail(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	addr := l.Addr().String()
	l.Close()
	var key [32]byte
	rand.Read(key[:])
	srv := exec.Command(b.bin, "serve", "--db", dsn, "--addr", addr, "--log-level", "error", "--rate-burst", "1000000")
	srv.Env = append(os.Environ(), "SWARMSCORE_SIGNING_KEY="+hex.EncodeToString(key[:]))
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		fail(err)
	}
	defer func() {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
	}()
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			fail(fmt.Errorf("serve did not get ready at %s", base))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return b.timed([]string{"SWARMSCORE_TOKEN=" + tok.Token}, append([]string{"ingest", "--server", base, b.file}, extra...)...)
}

func (b *bench) sqliteCLI(extra []string) time.Duration {
	path := filepath.Join(b.tmp, "cli.db")
	defer removeDB(path)
	b.run(nil, "migrate", "--db", "sqlite:"+path)
	return b.timed(nil, append([]string{"ingest", "--db", "sqlite:" + path, "--operator", "op-bench", b.file}, extra...)...)
}

func removeDB(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// sqliteRaw loads the same event rows with one transaction of prepared
// INSERTs through the store's driver and pragmas: no chain, no checks.
func (b *bench) sqliteRaw() time.Duration {
	path := filepath.Join(b.tmp, "raw.db")
	defer removeDB(path)
	b.run(nil, "migrate", "--db", "sqlite:"+path)
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_pragma=journal_mode(WAL)&_pragma=cache_size(-65536)")
	if err != nil {
		fail(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	t0 := time.Now()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		fail(err)
	}
	must := func(_ sql.Result, err error) {
		if err != nil {
			fail(err)
		}
	}
	prep := func(q string) *sql.Stmt {
		st, err := tx.PrepareContext(ctx, q)
		if err != nil {
			fail(err)
		}
		return st
	}
	now := time.Now().UnixMicro()
	must(tx.ExecContext(ctx, "INSERT INTO operators (id, created_at) VALUES ('op-bench', ?)", now))
	agent := prep("INSERT INTO agents (id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING")
	conduit := prep(`INSERT INTO conduit_sessions (id, agent_id, buyer_id, operator_id, started_at, completed_at, status, seq, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	ap2 := prep(`INSERT INTO ap2_transactions (id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at, seq, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	seen := map[string]bool{}
	for _, e := range b.evs {
		if !seen[e.agent] {
			seen[e.agent] = true
			must(agent.ExecContext(ctx, e.agent, now))
		}
		if e.ap2 {
			must(ap2.ExecContext(ctx, e.id, e.agent, e.buyer, "op-bench", e.status, e.amount, e.started.UnixMicro(), e.ended.UnixMicro(), int64(1), now, now))
		} else {
			must(conduit.ExecContext(ctx, e.id, e.agent, e.buyer, "op-bench", e.started.UnixMicro(), e.ended.UnixMicro(), e.status, int64(1), now, now))
		}
	}
	if err := tx.Commit(); err != nil {
		fail(err)
	}
	return time.Since(t0)
}
