// Command swarmscore is the SwarmScore V1 CLI and server. All behaviour lives
// in internal/cli; this file only wires it: the database back ends the binary
// is built with, and the process's streams, environment and exit status.
package main

import (
	"context"
	"os"

	"github.com/swarmscore/swarmscore/internal/cli"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

func main() {
	pg := cli.Driver{Open: cli.Opener(postgres.Open), Redact: postgres.Redact, KeywordValue: true}
	drivers := cli.Drivers{
		"sqlite":     {Open: cli.Opener(sqlite.Open), File: sqlite.Path},
		"postgres":   pg,
		"postgresql": pg,
	}
	// Signals keep their default effect (Ctrl-C ends a CLI command at once);
	// `serve` installs its own handler for a graceful shutdown.
	os.Exit(cli.Run(context.Background(), os.Args[1:], cli.Process{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Drivers: drivers, Now: clock(),
	}))
}
