package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

// DefaultDSN is the store used when none is configured: an SQLite file in
// the working directory, so a fresh clone runs with nothing installed.
const DefaultDSN = "sqlite:swarmscore.db"

// Opener opens a back end for a DSN of its scheme. It does not migrate.
type Opener func(ctx context.Context, dsn string) (service.Backend, error)

// Backends maps a DSN scheme ("sqlite", "postgres", "postgresql") to its
// Opener.
type Backends map[string]Opener

// scheme returns the part of dsn before the first ':'.
func scheme(dsn string) string {
	s, _, _ := strings.Cut(dsn, ":")
	return strings.ToLower(s)
}

// Open opens dsn with the back end registered for its scheme. An empty dsn
// is DefaultDSN; an unknown scheme is errkind.ErrInvalid naming the known
// ones.
func (b Backends) Open(ctx context.Context, dsn string) (service.Backend, error) {
	if dsn == "" {
		dsn = DefaultDSN
	}
	open, ok := b[scheme(dsn)]
	if !ok || !strings.Contains(dsn, ":") {
		known := make([]string, 0, len(b))
		for k := range b {
			known = append(known, k+":")
		}
		sort.Strings(known)
		return nil, fmt.Errorf("%w: database %q: unknown scheme (want one of %s)", errkind.ErrInvalid, postgres.Redact(dsn), strings.Join(known, ", "))
	}
	return open(ctx, dsn)
}

// backends are the stores the binary can open.
var backends = Backends{
	"sqlite":     openSQLite,
	"postgres":   openPostgres,
	"postgresql": openPostgres,
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

func openSQLite(ctx context.Context, dsn string) (service.Backend, error) {
	s, err := sqlite.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func openPostgres(ctx context.Context, dsn string) (service.Backend, error) {
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return s, nil
}
