// Command swarmscore is the SwarmScore V1 CLI and server. All behaviour lives
// in internal/cli; this file only connects it to the process.
package main

import (
	"context"
	"os"

	"github.com/swarmscore/swarmscore/internal/cli"
)

func main() {
	// Signals keep their default effect (Ctrl-C ends a CLI command at once);
	// `serve` installs its own handler for a graceful shutdown.
	os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
