package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
)

// DefaultDSN is the store used when none is configured: an SQLite file in
// the working directory, so a fresh clone runs with nothing installed.
const DefaultDSN = "sqlite:swarmscore.db"

const dbFlagUsage = "database DSN: sqlite:PATH, postgres://… or 'host=… dbname=…' (default $SWARMSCORE_DB, else " + DefaultDSN + ")"

// Driver is one kind of database as the CLI uses it. cmd/swarmscore wires
// one per DSN scheme from the back ends it is built with; the CLI imports
// none of them.
type Driver struct {
	// Open opens the database dsn names, without migrating it (Opener
	// adapts a back end's Open). Required.
	Open func(ctx context.Context, dsn string) (service.Backend, error)
	// File returns the path of the file holding the database dsn names,
	// for a back end that keeps its database in a local file: the signing
	// key is kept beside it, and commands that only read refuse a missing
	// file rather than create an empty database. Nil for a database
	// server.
	File func(dsn string) (string, error)
	// Redact returns dsn with its secrets hidden, for logs and messages;
	// nil when the back end's DSNs hold none.
	Redact func(dsn string) string
	// KeywordValue is set for the back end that also takes connection
	// strings of libpq's keyword/value form ("host=db user=app
	// password=… dbname=ledger"), which have no scheme.
	KeywordValue bool
}

// Opener adapts a back end's Open, which returns its own store type, to
// Driver.Open.
func Opener[S service.Backend](open func(context.Context, string) (S, error)) func(context.Context, string) (service.Backend, error) {
	return func(ctx context.Context, dsn string) (service.Backend, error) {
		s, err := open(ctx, dsn)
		if err != nil {
			return nil, err // not s: a nil store in an interface is not nil
		}
		return s, nil
	}
}

// Drivers maps a DSN scheme ("sqlite", "postgres", …: the part before the
// first ':', in any case) to its Driver.
type Drivers map[string]Driver

// lookup returns the driver for dsn's scheme (DefaultDSN's for an empty
// dsn), or the KeywordValue driver for a keyword/value string. An unknown
// or missing scheme is errkind.ErrInvalid naming the known ones; the
// message never repeats the DSN, which may hold a password, and names the
// scheme only when it is one (letters, digits, + - .) and is not followed
// by user information (user:password@host).
func (d Drivers) lookup(dsn string) (Driver, error) {
	if dsn == "" {
		dsn = DefaultDSN
	}
	names := make([]string, 0, len(d))
	for k := range d {
		names = append(names, k)
	}
	slices.Sort(names)
	if isKeywordValue(dsn) {
		for _, k := range names {
			if drv := d[k]; drv.KeywordValue && drv.Open != nil {
				return drv, nil
			}
		}
	}
	scheme, rest, ok := strings.Cut(dsn, ":")
	drv, known := d[strings.ToLower(scheme)]
	if ok && known && drv.Open != nil {
		return drv, nil
	}
	want := make([]string, len(names))
	for i, k := range names {
		want[i] = k + ":"
	}
	switch {
	case !ok:
		return Driver{}, invalidf("the database DSN has no scheme (want one of %s)", strings.Join(want, ", "))
	case !isScheme(scheme) || strings.Contains(rest, "@"):
		// user:password@host without a scheme: the "scheme" is a user
		// name, and what follows it a password.
		return Driver{}, invalidf("the database DSN does not start with a scheme (want one of %s)", strings.Join(want, ", "))
	}
	return Driver{}, invalidf("unknown database scheme %q (want one of %s)", scheme+":", strings.Join(want, ", "))
}

// isKeywordValue reports whether dsn starts like a keyword/value
// connection string: a keyword, optional blanks, '='. No URL or path does.
func isKeywordValue(dsn string) bool {
	s := strings.TrimLeft(dsn, " \t\n\r")
	i := 0
	for i < len(s) && (s[i] == '_' || 'a' <= s[i] && s[i] <= 'z' || 'A' <= s[i] && s[i] <= 'Z' || i > 0 && '0' <= s[i] && s[i] <= '9') {
		i++
	}
	if i == 0 {
		return false
	}
	s = strings.TrimLeft(s[i:], " \t\n\r")
	return strings.HasPrefix(s, "=")
}

// isScheme reports whether s is a URI scheme (RFC 3986: a letter, then
// letters, digits, '+', '-', '.').
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// Open opens dsn (DefaultDSN when empty) with the driver of its scheme.
// Errors: ErrInvalid for an unknown scheme, and the driver's.
func (d Drivers) Open(ctx context.Context, dsn string) (service.Backend, error) {
	if dsn == "" {
		dsn = DefaultDSN
	}
	drv, err := d.lookup(dsn)
	if err != nil {
		return nil, err
	}
	return drv.Open(ctx, dsn)
}

// redact returns dsn fit for a log line or a message.
func (d Drivers) redact(dsn string) string {
	if drv, err := d.lookup(dsn); err == nil && drv.Redact != nil {
		return drv.Redact(dsn)
	}
	return dsn
}

// dbDSN is the DSN a command uses: the flag, else SWARMSCORE_DB, else the
// default SQLite file.
func dbDSN(cmd *cobra.Command, flag string) string {
	if flag != "" {
		return flag
	}
	if env := getenv(cmd, "SWARMSCORE_DB"); env != "" {
		return env
	}
	return DefaultDSN
}

// dbMode says what a command may do to its database.
type dbMode int

const (
	// readOnly: the database must exist and be fully migrated.
	readOnly dbMode = iota
	// existing: the database must exist; pending migrations are applied.
	// For commands whose writes only a server reading the same database
	// makes use of (tokens): a mistyped path must not create a new file
	// that no server reads.
	existing
	// create: the database is created if missing, and migrated.
	create
)

// withUseCases opens the database named by the --db flag value (or its
// defaults) as mode allows, makes its use cases and runs f over them, and
// closes it. The use cases read the process clock (Process.Now); each
// setup, in order, may change the rest of their configuration first, with
// the store at hand (a keyring is kept in it). A database kept in a file
// that must exist and does not is ErrNotFound, and no file is created.
func withUseCases(cmd *cobra.Command, db string, mode dbMode, f func(*service.UseCases) error, setup ...setupFunc) error {
	return withStore(cmd, db, mode, func(st service.Backend, _ []string) error {
		cfg := service.Config{Now: process(cmd).Now}
		for _, s := range setup {
			if err := s(st, &cfg); err != nil {
				return err
			}
		}
		return f(service.New(st, cfg))
	})
}

// setupFunc changes the use cases' configuration before withUseCases makes
// them.
type setupFunc func(st service.Backend, cfg *service.Config) error

// withStore opens the database as withUseCases does, checks that it is
// migrated (readOnly) or migrates it, and runs f over it with the names of
// the migrations it applied.
func withStore(cmd *cobra.Command, db string, mode dbMode, f func(st service.Backend, applied []string) error) error {
	ctx := cmd.Context()
	dsn := dbDSN(cmd, db)
	drv, err := process(cmd).Drivers.lookup(dsn)
	if err != nil {
		return err
	}
	if mode != create && drv.File != nil {
		path, err := drv.File(dsn)
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: database file %s does not exist (check --db or SWARMSCORE_DB; 'swarmscore migrate' creates it)", errkind.ErrNotFound, path)
		}
	}
	st, err := drv.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	var applied []string
	if mode == readOnly {
		err = st.Ready(ctx)
	} else {
		applied, err = st.Migrate(ctx)
	}
	if err != nil {
		return err
	}
	if mode != readOnly {
		err = backfillLog(ctx, st, func(r service.BackfillReport) {
			fmt.Fprintf(cmd.ErrOrStderr(), "transparency log: %d records appended, %d left\n", r.Appended, r.Left)
		})
		if err != nil {
			return err
		}
	}
	return f(st, applied)
}
