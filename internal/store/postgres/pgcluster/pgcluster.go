// Package pgcluster makes PostgreSQL clusters of this machine's Debian
// installation for tests that need a server of their own: a primary
// (pg_createcluster) and streaming replicas of it (pg_basebackup -R), each
// on its own port from FirstPort up, listening on 127.0.0.1 only, with
// trust authentication, and dropped (pg_dropcluster --stop) when the test
// ends. The shared cluster ("main", port 5432) is never touched.
//
// Clusters are named NamePrefix + the test process's pid + a counter;
// Start drops those of processes that are gone (a killed test run), so
// nothing accumulates. It needs root (or the postgres user) and Debian's
// postgresql-common and postgresql-15: without them the test fails under
// CI=true and is skipped otherwise.
package pgcluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Version is the PostgreSQL major version clusters are made with.
const Version = "15"

// FirstPort is the lowest port a cluster is given.
const FirstPort = 5480

// NamePrefix starts every cluster name this package makes.
const NamePrefix = "sstest_"

// Cluster is one running cluster made by Start or Replica.
type Cluster struct {
	Name string
	Port int
	// Dir holds the data directory (Dir/data).
	Dir string
}

var counter atomic.Int64

// DSN is the URL of database db on the cluster, as the postgres user.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// Start makes and starts a new primary cluster, dropped when tb ends.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	available(tb)
	unlock := lock(tb)
	defer unlock()
	sweep()
	c := newCluster(tb)
	create(tb, c)
	start(tb, c)
	return c
}

// Replica makes a streaming replica of c (pg_basebackup -R, a hot
// standby), starts it and waits until it streams; it is dropped when tb
// ends, before c.
func (c *Cluster) Replica(tb testing.TB) *Cluster {
	tb.Helper()
	unlock := lock(tb)
	defer unlock()
	r := newCluster(tb)
	create(tb, r)
	data := filepath.Join(r.Dir, "data")
	if err := os.RemoveAll(data); err != nil {
		tb.Fatal(err)
	}
	asPostgres(tb, "pg_basebackup", "-D", data, "-R", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "postgres",
		"-c", "fast", "--no-sync", "-X", "stream")
	start(tb, r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var n int
		err := query(ctx, c.DSN("postgres"), "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'", &n)
		if err == nil && n > 0 {
			return r
		}
		if ctx.Err() != nil {
			tb.Fatalf("pgcluster: replica %s does not stream from %s: %v", r.Name, c.Name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// available ends the test when clusters cannot be made here.
func available(tb testing.TB) {
	tb.Helper()
	var missing string
	for _, p := range []string{"pg_createcluster", "pg_ctlcluster", "pg_dropcluster", "pg_lsclusters", "pg_basebackup"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = p + " not found (apt-get install postgresql-" + Version + ")"
		}
	}
	if missing == "" && os.Geteuid() != 0 {
		missing = "making clusters needs root"
	}
	if missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("pgcluster: %s", missing)
	}
	tb.Skipf("pgcluster: %s", missing)
}

// lock serialises port choice and creation across test processes.
func lock(tb testing.TB) func() {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "swarmscore-pgcluster.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		tb.Fatal(err)
	}
	return func() { f.Close() }
}

// newCluster names a cluster, picks a free port and makes its directory,
// and registers its removal.
func newCluster(tb testing.TB) *Cluster {
	tb.Helper()
	name := fmt.Sprintf("%s%d_%d", NamePrefix, os.Getpid(), counter.Add(1))
	c := &Cluster{Name: name, Port: freePort(tb), Dir: filepath.Join(os.TempDir(), "swarmscore-pgcluster-"+name)}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := exec.Command("chown", "postgres:postgres", c.Dir).Run(); err != nil {
		tb.Fatalf("pgcluster: chown %s: %v", c.Dir, err)
	}
	tb.Cleanup(func() {
		if err := drop(name, c.Dir); err != nil {
			tb.Error(err)
		}
	})
	return c
}

func create(tb testing.TB, c *Cluster) {
	tb.Helper()
	run(tb, "pg_createcluster", Version, c.Name, "-p", strconv.Itoa(c.Port), "-d", filepath.Join(c.Dir, "data"),
		"--start-conf=manual",
		"-o", "listen_addresses=localhost",
		// A test's cluster: nothing it holds must survive the machine.
		"-o", "fsync=off", "-o", "full_page_writes=off",
		"-o", "max_connections=50", "-o", "shared_buffers=32MB",
		"--", "--auth=trust", "--no-sync")
}

func start(tb testing.TB, c *Cluster) {
	tb.Helper()
	run(tb, "pg_ctlcluster", "--skip-systemctl-redirect", Version, c.Name, "start")
}

// Stop stops the cluster (fast shutdown); Start again with Restart.
func (c *Cluster) Stop(tb testing.TB) {
	tb.Helper()
	run(tb, "pg_ctlcluster", "--skip-systemctl-redirect", Version, c.Name, "stop", "-m", "fast")
}

// Restart starts a stopped cluster.
func (c *Cluster) Restart(tb testing.TB) {
	tb.Helper()
	start(tb, c)
}

// drop stops and removes a cluster and its directory.
func drop(name, dir string) error {
	var errs []string
	if out, err := exec.Command("pg_dropcluster", "--stop", Version, name).CombinedOutput(); err != nil &&
		!bytes.Contains(out, []byte("does not exist")) {
		errs = append(errs, fmt.Sprintf("pg_dropcluster %s: %v: %s", name, err, out))
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err.Error())
	}
	if errs != nil {
		return fmt.Errorf("pgcluster: %s", strings.Join(errs, "; "))
	}
	return nil
}

// sweep drops the clusters of test processes that no longer run.
func sweep() {
	entries, _ := os.ReadDir(filepath.Join("/etc/postgresql", Version))
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), NamePrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(rest, "_", 2)[0])
		if err != nil || syscall.Kill(pid, 0) == nil || pid == os.Getpid() {
			continue
		}
		drop(e.Name(), filepath.Join(os.TempDir(), "swarmscore-pgcluster-"+e.Name()))
	}
}

// freePort returns a port from FirstPort up that no cluster is configured
// with and nothing listens on.
func freePort(tb testing.TB) int {
	tb.Helper()
	out, err := exec.Command("pg_lsclusters", "-h").Output()
	if err != nil {
		tb.Fatalf("pgcluster: pg_lsclusters: %v", err)
	}
	used := map[int]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 {
			if p, err := strconv.Atoi(f[2]); err == nil {
				used[p] = true
			}
		}
	}
	for p := FirstPort; p < FirstPort+500; p++ {
		if used[p] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		return p
	}
	tb.Fatal("pgcluster: no free port")
	return 0
}

func run(tb testing.TB, name string, args ...string) {
	tb.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		tb.Fatalf("pgcluster: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// asPostgres runs a command as the postgres user (pg_basebackup writes the
// data directory the server will own).
func asPostgres(tb testing.TB, name string, args ...string) {
	tb.Helper()
	run(tb, "setpriv", append([]string{"--reuid=postgres", "--regid=postgres", "--init-groups", name}, args...)...)
}

// query runs one query returning one value.
func query(ctx context.Context, dsn, sql string, dst any) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql).Scan(dst)
}

// Exec runs statements on database db of the cluster.
func (c *Cluster) Exec(tb testing.TB, db, sql string, args ...any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN(db))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		tb.Fatalf("pgcluster: %s on %s: %v", sql, c.Name, err)
	}
}
