package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/service"
)

func newMigrateCmd() *cobra.Command {
	var db string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the database schema",
		Long: `Apply every pending schema migration to the database (--db, else
SWARMSCORE_DB, else the SQLite file swarmscore.db in the working directory,
created if missing). Running it again is a no-op; several processes may run
it at once. 'swarmscore serve' and 'swarmscore ingest' migrate by themselves.
It prints the name of every migration it applied.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, db, create, func(_ service.Backend, applied []string) error {
				if asJSON {
					if applied == nil {
						applied = []string{}
					}
					return printJSON(cmd, map[string]any{"database": process(cmd).Drivers.redact(dbDSN(cmd, db)), "applied": applied})
				}
				out := cmd.OutOrStdout()
				for _, name := range applied {
					fmt.Fprintf(out, "applied %s\n", name)
				}
				fmt.Fprintf(out, "%s: schema up to date (%d migration(s) applied)\n", process(cmd).Drivers.redact(dbDSN(cmd, db)), len(applied))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"database","applied":[names of the migrations applied]}`)
	return cmd
}
