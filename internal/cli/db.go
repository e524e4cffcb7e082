package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/store"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

// backends are the stores the binary can open.
var backends = store.Backends{
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
	return store.DefaultDSN
}

func openSQLite(ctx context.Context, dsn string) (store.Store, error) {
	s, err := sqlite.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func openPostgres(ctx context.Context, dsn string) (store.Store, error) {
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return s, nil
}
