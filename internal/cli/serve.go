package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/mcp"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/site"
	"github.com/swarmscore/swarmscore/internal/web"
	"github.com/swarmscore/swarmscore/internal/webhook"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// Server timeouts. ReadTimeout covers the largest request (8 MiB of events)
// on a slow link; WriteTimeout the largest response.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 60 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
)

const serveLong = `Run the SwarmScore HTTP service (see /openapi.json for the API) and its web
pages: the leaderboard at /, agent pages, /verify, badges and the operator
console at /operator.

The database is --db, else SWARMSCORE_DB, else the SQLite file swarmscore.db in
the working directory; migrations are applied at start. With PostgreSQL,
--db may list several hosts with target_session_attrs=read-write (a
failover formation: writes follow the primary), and --db-read DSN sends the
public reads (certificates, scores, pages, verify's recount) to a streaming
replica of it. A read goes to the replica only once the replica has
replayed every invalidation this process has seen (its own writes, the
primary's notifications), else to the primary: a certificate is never older
than the last change the server knows of. See docs/SCALING.md.

Passports are signed with the active key of the keyring kept in the database,
sealed under SWARMSCORE_MASTER_KEY (64 hex characters; for SQLite, a file
beside the database, swarmscore.master-key, when unset). The first start
generates a key (--signing-alg, default HMAC-SHA256; Ed25519 keys are
published at /.well-known/swarmscore-keys.json), or imports the SQLite key
file of earlier versions (swarmscore.key). A rotation ('swarmscore key
rotate') is used within a second, without a restart; SIGHUP reloads at once.
Keys of another --environment are refused. With SWARMSCORE_SIGNING_KEY (at
least 32 bytes) the keys are static instead: it signs, and
SWARMSCORE_VERIFY_KEYS (comma-separated) verify. See 'swarmscore key --help'.

SWARMSCORE_ADMIN_TOKEN (at least 32 characters) is accepted as the bearer
token of the operator "admin"; mint more with 'swarmscore token create'.

--checkpoint-every DURATION (default 24h; 0 turns it off) signs a checkpoint
of the ledger (spec §8.3; see 'swarmscore ledger checkpoint') at start and
then at that interval, but only when a chain head moved since the latest one,
so that each published checkpoint commits to a new state of the ledger.
Archive them elsewhere: that is the external notarisation.

Escrow holds (POST /swarmscore/escrow/holds; 'swarmscore escrow --help'):
--platform-fee-bps N is the fee a release keeps when the request names none,
floor(amount × N / 10,000) and never more than the hold. --require-proof
refuses a VERIFIED Conduit session without a proof_hash (proof_required).

SIGTERM or SIGINT stops accepting connections, lets in-flight requests finish
(up to --shutdown-timeout) and closes the database.

Agents' rights: --require-consent publishes an agent's score and passport only
once it has consented to the disclosure (GET /swarmscore/disclosure); unlisted
agents are never public. Gaming signals use the --signal-* thresholds; their
counts for /metrics are computed every --signals-every, and every
--verify-every the hash chains are walked for the chain_break signal.

An event dated later than the server's clock by more than --max-clock-skew is
rejected (once stored, it could never be corrected). /metrics answers only to
the networks given with --metrics-allow (default loopback). A port already in
use exits with status 4 (unavailable).

A request waits for the database at most --db-timeout (connection and
statements), and at most --db-max-requests requests use or wait on it at
once; past either, the answer is 503 with Retry-After, and the service
recovers by itself when the database does. /readyz answers within 2 s. The
rate limit counts IPv6 clients per network of --rate-ipv6-prefix bits (a /64);
failed operator authentications are throttled per client (10, then one per
6 s).

` + formulaHelp + ` The server issues
formula 1.0, the version its store computes; --formula names another only to
date 1.0 with @EFFECTIVE.`

func newServeCmd() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP service",
		Long:  serveLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "listen address (host:port; port 0 picks a free one)")
	f.StringVar(&cfg.baseURL, "base-url", "", "the public origin clients reach this server at, e.g. https://scores.example.com: the credentials' did:web issuer and the URLs in credentials, agent cards and ERC-8004 records (default $"+baseURLEnv+", else http:// and the listening address)")
	f.StringVar(&cfg.logOrigin, "log-origin", "", "the transparency log's origin, the first line of its checkpoint notes (default $"+logOriginEnv+", else the host of --base-url and /swarmscore, else the latest note's, else "+service.DefaultLogOrigin+")")
	f.StringVar(&cfg.db, "db", "", dbFlagUsage)
	f.StringVar(&cfg.dbRead, "db-read", "", "DSN of a streaming replica of --db (PostgreSQL) for the public reads")
	f.StringVar(&cfg.platform, "platform", "", "issuer.platform of passports (default $SWARMSCORE_PLATFORM, else swarmscore, or swarmscore-ENVIRONMENT outside production)")
	f.Float64Var(&cfg.rate, "rate-limit", 50, "requests per second per client IP on public routes (0 disables)")
	f.IntVar(&cfg.burst, "rate-burst", 100, "burst size of the per-client rate limit")
	f.StringSliceVar(&cfg.proxies, "trusted-proxy", nil, "CIDR or address of a reverse proxy whose X-Forwarded-For names the client (repeatable)")
	f.DurationVar(&cfg.shutdown, "shutdown-timeout", 20*time.Second, "how long in-flight requests may run after SIGTERM")
	f.DurationVar(&cfg.skew, "max-clock-skew", service.DefaultMaxClockSkew, "how far past the server's clock a reported event may be dated")
	f.StringSliceVar(&cfg.metricsAllow, "metrics-allow", nil, "CIDR or address of a network /metrics answers to (repeatable; default loopback)")
	f.StringVar(&cfg.logLevel, "log-level", "info", "least severe log level written: debug, info, warn or error")
	f.StringVar(&cfg.pruneKeep, "prune-keep", "", "apply retention on a schedule, keeping this long (90d or more; as 'ledger prune --keep'; empty: never)")
	f.DurationVar(&cfg.pruneEvery, "prune-every", 24*time.Hour, "how often --prune-keep prunes")
	f.DurationVar(&cfg.checkpointEvery, "checkpoint-every", defaultCheckpointEvery, "sign a checkpoint of the ledger at start and at this interval, when a chain head moved since the latest (0: never)")
	cfg.keys.register(f)
	f.DurationVar(&cfg.dbTimeout, "db-timeout", httpapi.DefaultDBTimeout, "longest a request waits for the database (connection, statements) before it is answered 503")
	f.IntVar(&cfg.dbMax, "db-max-requests", httpapi.DefaultDBMaxRequests, "most requests using or waiting on the database at once; more are answered 503 at once")
	f.IntVar(&cfg.v6Prefix, "rate-ipv6-prefix", 64, "IPv6 clients in one network of this prefix length share a rate-limit bucket (1-128)")
	cfg.rights.flags(f)
	cfg.formula.register(f)
	f.BoolVar(&cfg.webhookLoopback, "webhook-allow-http-loopback", false, "allow webhook URLs with http:// and deliveries to loopback addresses (local receivers and tests; never in production)")
	f.IntVar(&cfg.webhookWorkers, "webhook-workers", 8, "webhook deliveries attempted at once by this process")
	f.DurationVar(&cfg.webhookTimeout, "webhook-timeout", 10*time.Second, "longest a webhook attempt waits for its answer")
	f.DurationVar(&cfg.webhookRetryBase, "webhook-retry-base", webhook.DefaultRetry.Base, "wait after a webhook's first failed attempt; each later wait doubles (up to 2h), for 24h")
	f.IntVar(&cfg.feeBPS, "platform-fee-bps", 0, "the platform's fee on an escrow hold's release when the request names none: basis points of the payment, rounded down, never more than the hold (0..10000)")
	f.BoolVar(&cfg.requireProof, "require-proof", false, "refuse a VERIFIED Conduit session reported without a proof_hash (code proof_required)")
	return cmd
}

type serveConfig struct {
	feeBPS             int  // --platform-fee-bps
	requireProof       bool // --require-proof
	addr, db, platform string
	baseURL            string
	logOrigin          string
	dbRead             string
	rate               float64
	burst              int
	proxies            []string
	shutdown           time.Duration
	skew               time.Duration
	metricsAllow       []string
	logLevel           string
	checkpointEvery    time.Duration
	pruneKeep          string
	pruneEvery         time.Duration
	keys               keyFlags
	dbTimeout          time.Duration
	dbMax              int
	v6Prefix           int
	rights             rightsConfig
	formula            formulaFlags
	webhookLoopback    bool
	webhookWorkers     int
	webhookTimeout     time.Duration
	webhookRetryBase   time.Duration
}

// newLogger logs JSON when w is not a terminal (a service manager, a file, a
// pipe) and text for a person at a terminal, from level up.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if isTerminal(w) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// parseLogLevel reads --log-level.
func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		if err := l.UnmarshalText([]byte(s)); err == nil {
			return l, nil
		}
	}
	return 0, usageErrorf("--log-level %q is not one of debug, info, warn, error", s)
}

// serve runs the server: settings checked, the address bound and the keys
// configured before the database is opened, the use cases made and their
// schedules started, then the HTTP server until a signal.
func serve(cmd *cobra.Command, cfg serveConfig) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	set, err := cfg.settings(cmd)
	if set.logs != nil {
		defer set.logs.Close() // last: every other deferred call may log
	}
	if err != nil {
		return err
	}
	log := set.log
	// The address and the key come before the database: a second server
	// started by mistake or a misconfigured one fails at once and leaves
	// nothing behind (not even a generated key).
	ln, err := listen(cfg.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	keys, err := cfg.keys.config(cmd, set.dbFile, log)
	if err != nil {
		return err
	}
	st, err := openServeStore(ctx, set, log)
	if err != nil {
		return err
	}
	defer closeStore(st, log)
	u, err := cfg.useCases(ctx, cmd, st, keys, set.formulas, log)
	if err != nil {
		return err
	}
	// Deferred after the store's Close, so it runs first: a checkpoint, a
	// prune, a walk or a computation under way finishes before the
	// database goes.
	defer cfg.startSchedules(ctx, u, set.keep, log)()
	u.Certificates.StartCacheWatch()
	// Deferred after the store's Close, so it runs first: the attempts
	// under way are recorded before the database goes.
	defer cfg.startDispatcher(ctx, u, st, log)()
	if err := bootstrapAdmin(ctx, cmd, u.Tokens, log); err != nil {
		return err
	}
	pub, err := serveSite(cmd, cfg.baseURL, ln.Addr())
	if err != nil {
		return err
	}
	mcpHandler := mcp.Handler(mcp.ServicesOf(u), mcp.Options{Version: version(), Logger: log})
	var accessLog io.Writer
	if set.logs != nil {
		// log is then a JSON handler on set.logs (newLogger): the access
		// log writes the same lines there by hand.
		accessLog = set.logs
	}
	handler := httpapi.New(httpapi.ServicesOf(u), httpapi.Options{Logger: log, AccessLog: accessLog, RateLimit: cfg.rate, RateBurst: cfg.burst,
		TrustedProxies: set.proxies, MetricsAllow: set.scrapers, RateIPv6Prefix: cfg.v6Prefix, DBTimeout: cfg.dbTimeout, DBMaxRequests: cfg.dbMax,
		Site: pub, Version: version(), MCP: mcpHandler})
	defer handler.Close()
	srv := newHTTPServer(ctx, mountPages(handler, web.ServicesOf(u), log), log)
	log.Info("listening", "addr", ln.Addr().String(), "db", set.drivers.redact(set.dsn), "db_read", set.drivers.redact(set.readDSN), "platform", cfg.platform,
		"max_clock_skew", cfg.skew.String(), "metrics_allow", networks(set.scrapers), "db_timeout", cfg.dbTimeout.String(),
		"formulas", set.formulas.String(), "base_url", pub.URL())
	return runServer(ctx, stop, srv, ln, cfg.shutdown, log)
}

// serveSite is the server's public origin: --base-url, else
// SWARMSCORE_BASE_URL, else http:// and the address it listens on (a
// wildcard address as the loopback one, the only one it surely answers).
func serveSite(cmd *cobra.Command, flag string, addr net.Addr) (site.Site, error) {
	if flag != "" || getenv(cmd, baseURLEnv) != "" {
		return siteOf(cmd, flag)
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return site.Site{}, err
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return siteOf(cmd, "http://"+net.JoinHostPort(host, port))
}

// serveSettings are serve's flags read and checked, and what they name.
type serveSettings struct {
	log               *slog.Logger
	logs              *logBuffer    // what log writes to, when not a terminal; nil otherwise
	keep              time.Duration // --prune-keep, 0 for never
	formulas          passport.Acceptance
	proxies, scrapers []netip.Prefix
	drivers           Drivers
	drv               Driver
	dsn, dbFile       string
	readDSN           string // --db-read, "" for none
}

// settings checks serve's flags before anything is opened, and resolves
// the platform, the formulas, the networks and the database's driver.
func (cfg *serveConfig) settings(cmd *cobra.Command) (serveSettings, error) {
	var set serveSettings
	level, err := parseLogLevel(cfg.logLevel)
	if err != nil {
		return set, err
	}
	out := cmd.ErrOrStderr()
	if !isTerminal(out) {
		// A person at a terminal sees each line at once; a file, a pipe
		// or a service manager gets them in batches (logBuffer).
		set.logs = newLogBuffer(out)
		out = set.logs
	}
	set.log = newLogger(out, level)
	cfg.platform = cfg.keys.platformOf(cmd, cfg.platform)
	if set.keep, err = cfg.checkLimits(); err != nil {
		return set, err
	}
	if err := cfg.rights.validate(); err != nil {
		return set, err
	}
	if set.formulas, err = cfg.acceptance(cmd); err != nil {
		return set, err
	}
	if set.proxies, err = parseNetworks("--trusted-proxy", cfg.proxies); err != nil {
		return set, err
	}
	if set.scrapers, err = parseNetworks("--metrics-allow", cfg.metricsAllow); err != nil {
		return set, err
	}
	if _, _, err := net.SplitHostPort(cfg.addr); err != nil {
		return set, usageErrorf("--addr %q is not host:port", cfg.addr)
	}
	set.drivers = process(cmd).Drivers
	set.dsn = dbDSN(cmd, cfg.db)
	if set.drv, err = set.drivers.lookup(set.dsn); err != nil {
		return set, err
	}
	if set.drv.File != nil {
		if set.dbFile, err = set.drv.File(set.dsn); err != nil {
			return set, err
		}
	}
	if set.readDSN = cfg.dbRead; set.readDSN != "" {
		if _, err := set.drivers.lookup(set.readDSN); err != nil {
			return set, fmt.Errorf("--db-read: %w", err)
		}
		if set.drv.File != nil {
			return set, usageErrorf("--db-read: the database of --db is a file, which has no replicas; read replicas need PostgreSQL")
		}
	}
	return set, nil
}

// checkLimits checks the numeric flags and returns --prune-keep (0 when
// unset).
func (cfg *serveConfig) checkLimits() (keep time.Duration, err error) {
	if cfg.rate < 0 || (cfg.rate > 0 && cfg.burst < 1) {
		return 0, usageErrorf("--rate-limit must be >= 0 and --rate-burst >= 1")
	}
	if cfg.skew <= 0 {
		return 0, usageErrorf("--max-clock-skew %s must be positive", cfg.skew)
	}
	if cfg.pruneKeep != "" {
		if keep, err = parseRetention("--prune-keep", cfg.pruneKeep); err != nil {
			return 0, err
		}
		if keep < ledger.Window {
			return 0, usageErrorf("--prune-keep %s is shorter than the 90-day scoring window: pruning would change current scores", cfg.pruneKeep)
		}
		if cfg.pruneEvery < time.Minute {
			return 0, usageErrorf("--prune-every %s is below 1m", cfg.pruneEvery)
		}
	}
	if cfg.checkpointEvery != 0 && cfg.checkpointEvery < minCheckpointEvery {
		return 0, usageErrorf("--checkpoint-every %s is below %s (0 disables it)", cfg.checkpointEvery, minCheckpointEvery)
	}
	if cfg.dbTimeout <= 0 || cfg.dbMax < 1 {
		return 0, usageErrorf("--db-timeout must be positive and --db-max-requests at least 1")
	}
	if cfg.webhookWorkers < 1 || cfg.webhookWorkers > 256 {
		return 0, usageErrorf("--webhook-workers %d is not in 1..256", cfg.webhookWorkers)
	}
	if cfg.webhookTimeout < 100*time.Millisecond || cfg.webhookTimeout > 5*time.Minute {
		return 0, usageErrorf("--webhook-timeout %s is not between 100ms and 5m", cfg.webhookTimeout)
	}
	if cfg.webhookRetryBase < 10*time.Millisecond || cfg.webhookRetryBase > time.Hour {
		return 0, usageErrorf("--webhook-retry-base %s is not between 10ms and 1h", cfg.webhookRetryBase)
	}
	if ledger.CheckFeeBPS(cfg.feeBPS) != nil {
		return 0, usageErrorf("--platform-fee-bps %d is not between 0 and %d", cfg.feeBPS, ledger.MaxFeeBPS)
	}
	if cfg.v6Prefix < 1 || cfg.v6Prefix > 128 {
		return 0, usageErrorf("--rate-ipv6-prefix %d is not a prefix length in 1..128", cfg.v6Prefix)
	}
	return keep, nil
}

// acceptance reads --formula and --accept-formula: the server issues V1,
// the version its store computes, dated no later than now.
func (cfg *serveConfig) acceptance(cmd *cobra.Command) (passport.Acceptance, error) {
	current, formulas, err := cfg.formula.acceptance(process(cmd).Formulas)
	if err != nil {
		return formulas, err
	}
	if current != score.V1 {
		// The store computes and caches V1 scores (its columns, the
		// ranking's SQL); issuing another version needs it to compute that.
		return formulas, usageErrorf("--formula %s: this server issues formula %s only, the version its store computes; other versions can be accepted with --accept-formula", cfg.formula.current, score.FormulaVersion)
	}
	now := time.Now()
	if clock := process(cmd).Now; clock != nil {
		now = clock()
	}
	if from := formulas.Windows()[0].From; from.After(now) {
		// Its own passports, computed now, would be out of the window.
		return formulas, usageErrorf("--formula %s: the server issues %s passports now, so the version's effective date cannot be later than now", cfg.formula.current, score.FormulaVersion)
	}
	return formulas, nil
}

// openServeStore opens the database; a back end with something to say
// about its connections (the PostgreSQL cache listener) says it in the
// server's log.
func openServeStore(ctx context.Context, set serveSettings, log *slog.Logger) (service.Backend, error) {
	st, err := set.drv.Open(ctx, set.dsn)
	if err != nil {
		return nil, err
	}
	if l, ok := st.(interface{ SetLogger(*slog.Logger) }); ok {
		l.SetLogger(log)
	}
	if set.readDSN != "" {
		r, ok := st.(interface {
			AttachReplica(context.Context, string) error
		})
		if !ok {
			st.Close()
			return nil, usageErrorf("--db-read: the database of --db has no read replicas; read replicas need PostgreSQL")
		}
		if err := r.AttachReplica(ctx, set.readDSN); err != nil {
			st.Close()
			return nil, fmt.Errorf("--db-read: %w", err)
		}
	}
	return st, nil
}

func closeStore(st service.Backend, log *slog.Logger) {
	if err := st.Close(); err != nil {
		log.Error("closing the database", "err", err)
	}
}

// useCases migrates the database, opens its keyring (reloaded on SIGHUP)
// and makes the use cases as the flags configure them.
func (cfg *serveConfig) useCases(ctx context.Context, cmd *cobra.Command, st service.Backend, keys service.KeyConfig,
	formulas passport.Acceptance, log *slog.Logger) (*service.UseCases, error) {
	if _, err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	if err := backfillLog(ctx, st, func(r service.BackfillReport) {
		log.Info("appending the ledger's records to the transparency log", "appended", r.Appended, "left", r.Left)
	}); err != nil {
		return nil, err
	}
	origin, err := logOrigin(cmd, cfg.logOrigin, cfg.baseURL)
	if err != nil {
		return nil, err
	}
	c := service.Config{Platform: cfg.platform, MaxClockSkew: cfg.skew, Environment: cfg.keys.env(cmd),
		Now: process(cmd).Now, Formulas: formulas, Logger: log, PlatformFeeBPS: cfg.feeBPS, RequireProof: cfg.requireProof, LogOrigin: origin}
	if c.Keys, err = openServeKeys(ctx, st, keys, log); err != nil {
		return nil, err
	}
	cfg.rights.apply(&c)
	return service.New(st, c), nil
}

// startSchedules starts what runs on a schedule (checkpoints, retention,
// the signals' counts and the chain walk) and returns stop, which ends
// them in the reverse order and waits for runs under way.
func (cfg *serveConfig) startSchedules(ctx context.Context, u *service.UseCases, keep time.Duration, log *slog.Logger) (stop func()) {
	var stops []func()
	if cfg.checkpointEvery > 0 {
		stops = append(stops, startCheckpoints(ctx, u.Audit, u.Log, cfg.checkpointEvery, log))
	}
	if keep > 0 {
		stops = append(stops, startPrunes(ctx, u.Audit, keep, cfg.pruneEvery, log))
	}
	stops = append(stops, startRightsSchedules(ctx, u.Signals, cfg.rights, log))
	return func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
}

// bootstrapAdmin makes SWARMSCORE_ADMIN_TOKEN, when set, the token of the
// operator "admin".
func bootstrapAdmin(ctx context.Context, cmd *cobra.Command, tokens *service.Tokens, log *slog.Logger) error {
	admin := getenv(cmd, "SWARMSCORE_ADMIN_TOKEN")
	if admin == "" {
		return nil
	}
	id, err := tokens.BootstrapAdminToken(ctx, admin)
	if err != nil {
		return err
	}
	log.Info("operator token from SWARMSCORE_ADMIN_TOKEN is active", "operator", service.AdminOperator, "token_id", id)
	return nil
}

// newHTTPServer is the server of h, with serve's timeouts; requests'
// contexts outlive the signal, so in-flight requests finish.
func newHTTPServer(ctx context.Context, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}

// runServer serves ln until ctx ends, then stops accepting connections
// (stop: a second signal kills the process the default way) and lets
// in-flight requests finish for up to shutdown.
func runServer(ctx context.Context, stop func(), srv *http.Server, ln net.Listener, shutdown time.Duration, log *slog.Logger) error {
	errc := make(chan error, 1)
	// net/http's own answers (a malformed request, headers too large) are
	// problems too.
	go func() { errc <- srv.Serve(httpapi.Listener(ln)) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	stop()
	log.Info("shutting down: finishing in-flight requests", "timeout", shutdown.String())
	sctx, cancel := context.WithTimeout(context.Background(), shutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("in-flight requests did not finish in time; closing their connections", "err", err)
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	log.Info("stopped")
	return nil
}

// listen binds the server's address. An address in use is unavailable
// (exit 4: another process holds it, and may let go); anything else is the
// address's fault.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%w: listen on %s: the address is already in use (is another server running?)", errkind.ErrUnavailable, addr)
	case err != nil:
		return nil, fmt.Errorf("%w: listen on %s: %v", errkind.ErrInvalid, addr, err)
	}
	return ln, nil
}

// networks renders prefixes for the log; nil (the default) is loopback.
func networks(ps []netip.Prefix) string {
	if len(ps) == 0 {
		return "loopback"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// parseNetworks reads the values of a network flag (--trusted-proxy,
// --metrics-allow): CIDR prefixes, or single addresses meaning a prefix of
// one address.
func parseNetworks(flag string, vals []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range vals {
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, usageErrorf("%s %q is neither a CIDR prefix nor an IP address", flag, v)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// startDispatcher sets the webhook URL policy and starts delivering the
// outbox until ctx ends; the function it returns stops it (serve may
// return on an error before ctx ends) and waits for the attempts under
// way to be recorded.
func (cfg *serveConfig) startDispatcher(ctx context.Context, u *service.UseCases, out service.WebhookOutbox, log *slog.Logger) func() {
	policy := webhook.URLPolicy{AllowHTTPLoopback: cfg.webhookLoopback}
	u.Webhooks.Policy = policy
	retry := webhook.DefaultRetry
	retry.Base = cfg.webhookRetryBase
	d := service.NewDispatcher(out, service.DispatchConfig{Policy: policy, Retry: retry, Timeout: cfg.webhookTimeout,
		Workers: cfg.webhookWorkers, Logger: log})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
