package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

const dbFlagUsage = "database DSN: sqlite:PATH or postgres://… (default $SWARMSCORE_DB, else " + DefaultDSN + ")"

func newMigrateCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the database schema",
		Long: `Apply every pending schema migration to the database (--db, else
SWARMSCORE_DB, else the SQLite file swarmscore.db in the working directory,
created if missing). Running it again is a no-op; several processes may run
it at once. 'swarmscore serve' and 'swarmscore ingest' migrate by themselves.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dsn := dbDSN(cmd, db)
			return withLedger(cmd, db, true, func(*service.Ledger) error {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: schema up to date\n", postgres.Redact(dsn))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&db, "db", "", dbFlagUsage)
	return cmd
}

// withLedger opens the store named by the --db flag value (or its
// defaults), migrates it when migrate is set or otherwise requires it to be
// migrated already, runs f and closes the store. A read-only command never
// creates an SQLite file: a missing file is a not-found error.
func withLedger(cmd *cobra.Command, db string, migrate bool, f func(*service.Ledger) error) error {
	ctx := cmd.Context()
	dsn := dbDSN(cmd, db)
	if !migrate && scheme(dsn) == "sqlite" {
		path, err := sqlite.Path(dsn)
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: database file %s does not exist (run 'swarmscore migrate' or 'swarmscore ingest' first)", errkind.ErrNotFound, path)
		}
	}
	st, err := backends.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	if migrate {
		err = st.Migrate(ctx)
	} else {
		err = st.Ready(ctx)
	}
	if err != nil {
		return err
	}
	return f(&service.Ledger{Store: st})
}
