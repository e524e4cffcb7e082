// Package cli is the `swarmscore` command line: one cobra command tree whose
// commands are thin adapters over the score and passport packages and the
// use cases of internal/service. cmd/swarmscore wires the database back ends
// (Drivers), calls Run and exits with its code.
//
// Every command reads and writes through the streams, environment and
// drivers given to Run (Process), never os.Stdin/os.Stdout/os.Getenv or a
// back end directly, so tests run the whole CLI in-process.
package cli

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

// commands lists the top-level subcommands. Adding a command is one line
// here and a constructor in its own file. Constructors must build a fresh
// command on every call (Run builds a new tree each time, so flag values never
// leak between runs), return errors from RunE instead of printing them, and
// use cmd.InOrStdin/OutOrStdout, getenv(cmd, …) and process(cmd).Drivers for
// I/O, configuration and databases.
func commands() []*cobra.Command {
	return []*cobra.Command{
		newScoreCmd(),
		newEscrowCmd(),
		newKeygenCmd(), newKeyCmd(),
		newPassportCmd(),
		newServeCmd(), newTokenCmd(),
		newMigrateCmd(), newIngestCmd(), newAgentCmd(), newLedgerCmd(),
		newCorrectCmd(), newAppealCmd(), newProofCmd(),
		newAuditCmd(), newActionsCmd(), newLogCmd(), newWebhookCmd(),
		newMCPCmd(), newExportCmd(), newAgentCardCmd(),
	}
}

const rootLong = `swarmscore computes SwarmScore V1 reputation scores for AI agents
(draft-stone-swarmscore-v1), computes the escrow hold of a payment from a
score, records holds on payments and what became of them (escrow hold,
release, dispute, resolve, cancel), and issues and verifies signed Execution
Passports.

Exit status:
  0  success
  1  the command ran and the answer is negative or it failed: an invalid
     passport (passport verify), a rejected input line (score --batch), a
     broken chain or a checkpoint the ledger does not extend (ledger verify),
     or an internal error
  2  usage: unknown command or flag, missing or malformed value, impossible
     counts, missing or short SWARMSCORE_SIGNING_KEY, unreadable input file
  3  not found (e.g. an unknown agent)
  4  unavailable: a database or server could not be reached, or serve's port
     is in use; retrying may help
  5  conflict with stored state
  6  unauthorized or forbidden

Errors are reported as one line on standard error: "swarmscore: <message>".
Commands that report something print JSON with --json.`

// newRoot builds the command tree.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "swarmscore",
		Short:         "SwarmScore V1: agent reputation scores, escrow and Execution Passports",
		Long:          rootLong,
		SilenceUsage:  true, // a usage error is one line, not the whole help text
		SilenceErrors: true, // exit.go prints errors, once
		// Without RunE the root prints its help when run with no arguments.
		PersistentPreRunE: actAsCLI,
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.Version = version()
	root.SetVersionTemplate("swarmscore {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	for _, c := range commands() {
		root.AddCommand(c)
	}
	tagRunErrors(root)
	return root
}

// actAsCLI makes every command but serve act, in the action log, as the
// operator its --operator flag names ("cli" without one): whoever runs
// the CLI holds the database, and so may do anything (auth.Admin).
// serve's requests act as their tokens' operators instead.
func actAsCLI(cmd *cobra.Command, _ []string) error {
	if cmd.Name() == "serve" {
		return nil
	}
	op := cliOperator
	// token create's --operator is the token's owner, not who acts.
	if f := cmd.Flags().Lookup("operator"); f != nil && f.Value.String() != "" && !(cmd.HasParent() && cmd.Parent().Name() == "token") {
		op = f.Value.String()
	}
	cmd.SetContext(service.WithActor(cmd.Context(), service.Actor{Operator: op, Role: auth.Admin, Via: auth.ViaCLI}))
	return nil
}

// Process is what Run takes from the process it runs in.
type Process struct {
	// Stdin, Stdout and Stderr are the standard streams; nil reads nothing
	// and discards output.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv looks up configuration such as SWARMSCORE_SIGNING_KEY
	// (os.Getenv in production); nil sees no variables.
	Getenv func(string) string
	// Drivers are the database back ends by DSN scheme; a command given a
	// DSN of another scheme fails with a usage error.
	Drivers Drivers
	// Formulas are the formula versions this binary implements, which
	// --formula and --accept-formula may name; nil means score.Builtin()
	// (V1 only). Tests add formulas of their own here.
	Formulas score.Formulas
	// Witness gives `log witness` the transparency log and the
	// cosignature store of the database it opened; nil means the
	// database's own (tests give a log of their own).
	Witness WitnessPorts
	// Now is the clock of the use cases (service.Config.Now: deadlines,
	// corrections, checkpoints, passports); nil means time.Now.
	Now func() time.Time
}

// Run executes the command line args (without the program name) and returns
// the process exit status. It never panics and never calls os.Exit: a panic
// inside a command is reported as an internal error with status 1.
func Run(ctx context.Context, args []string, p Process) (code int) {
	if p.Stdin == nil {
		p.Stdin = strings.NewReader("")
	}
	if p.Stdout == nil {
		p.Stdout = io.Discard
	}
	if p.Stderr == nil {
		p.Stderr = io.Discard
	}
	if p.Getenv == nil {
		p.Getenv = func(string) string { return "" }
	}
	defer func() {
		if r := recover(); r != nil {
			code = reportFrom(p.Stderr, nil, withStatus(ExitFailure, fmt.Errorf("internal error: %v", r)))
		}
	}()
	if args == nil {
		args = []string{} // cobra reads os.Args for a nil slice
	}
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(p.Stdin)
	root.SetOut(p.Stdout)
	root.SetErr(p.Stderr)
	cmd, err := root.ExecuteContextC(context.WithValue(ctx, processKey{}, &p))
	if err != nil {
		return reportFrom(p.Stderr, cmd, err)
	}
	return ExitOK
}

type processKey struct{}

// process returns what Run was given (an empty Process outside Run).
func process(cmd *cobra.Command) *Process {
	if p, ok := cmd.Context().Value(processKey{}).(*Process); ok {
		return p
	}
	return &Process{Getenv: func(string) string { return "" }}
}

// getenv returns the value of the environment variable name as given to Run.
func getenv(cmd *cobra.Command, name string) string { return process(cmd).Getenv(name) }

// version describes the binary for --version: the module version (a
// release tag, or "(devel)" when built from a checkout), the commit and
// whether the tree had uncommitted changes, and the Go release, all from
// the build information the Go toolchain embeds.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown build)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " commit " + rev
		if modified == "true" {
			v += " (modified)"
		}
	}
	return v + " " + bi.GoVersion
}
