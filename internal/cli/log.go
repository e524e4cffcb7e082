package cli

import (
	"github.com/spf13/cobra"
)

// newLogCmd is `log`: the ledger's transparency log (issue 23). Its
// subcommands share --db.
func newLogCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "log",
		Short: "The ledger's transparency log: witnessing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("missing subcommand (witness)")
		},
	}
	var asJSON bool
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.AddCommand(newLogWitnessCmd(&db, &asJSON))
	return cmd
}
