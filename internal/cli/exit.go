package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Exit statuses. This file is the one place errors become statuses and
// messages; rootLong documents the same table for users.
const (
	ExitOK          = 0
	ExitFailure     = 1 // negative answer (invalid passport, rejected batch line) or internal error
	ExitUsage       = 2 // bad command line, impossible value, unusable configuration
	ExitNotFound    = 3
	ExitUnavailable = 4
	ExitConflict    = 5
	ExitDenied      = 6 // unauthorized or forbidden
)

// exitError forces an exit status regardless of the error's kind. It is for
// the few cases where the status is part of a command's contract, e.g.
// `score --batch` exits 1 on a bad line although the line is invalid input.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withStatus makes err exit with code.
func withStatus(code int, err error) error { return &exitError{code, err} }

// kindError gives err the error kind of the sentinel kind (an errkind
// sentinel) without putting the sentinel's name into the message.
type kindError struct{ kind, err error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// invalidf is an error of kind errkind.Invalid with the formatted message;
// %w in format wraps as usual.
func invalidf(format string, args ...any) error {
	return &kindError{errkind.ErrInvalid, fmt.Errorf(format, args...)}
}

// usageError is a command line that does not make sense (status 2). Its
// message is followed by a pointer to the command's help.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf reports a bad command line detected by a command's own code.
// It matches errkind.ErrInvalid.
func usageErrorf(format string, args ...any) error {
	return &usageError{invalidf(format, args...)}
}

// noArgs is cobra.NoArgs with a message that does not call a stray argument
// an unknown command.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q", args[0])
	}
	return nil
}

// flagError rewrites pflag's report of a malformed flag value, which quotes
// Go's strconv internals, into a message for people.
func flagError(_ *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	var num *strconv.NumError
	if errors.As(err, &bad) && errors.As(err, &num) {
		what := "an integer"
		if bad.GetFlag().Value.Type() == "bool" {
			what = "true or false"
		}
		if errors.Is(num.Err, strconv.ErrRange) {
			return usageErrorf("--%s %s is out of range", bad.GetFlag().Name, bad.GetValue())
		}
		return usageErrorf("--%s wants %s, got %q", bad.GetFlag().Name, what, bad.GetValue())
	}
	return err
}

// runError marks an error returned by a command's own code (RunE and its
// hooks). Errors cobra returns without one (unknown commands and flags,
// malformed flag values, missing required flags, wrong argument counts) are
// usage errors.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// tagRunErrors wraps the run hooks of c and its subcommands so that their
// errors carry runError.
func tagRunErrors(c *cobra.Command) {
	tag := func(f func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
		if f == nil {
			return nil
		}
		return func(cmd *cobra.Command, args []string) error {
			if err := f(cmd, args); err != nil {
				return &runError{err}
			}
			return nil
		}
	}
	c.PersistentPreRunE = tag(c.PersistentPreRunE)
	c.PreRunE = tag(c.PreRunE)
	c.RunE = tag(c.RunE)
	c.PostRunE = tag(c.PostRunE)
	c.PersistentPostRunE = tag(c.PersistentPostRunE)
	for _, sub := range c.Commands() {
		tagRunErrors(sub)
	}
}

// exitStatus maps an error to the process exit status.
func exitStatus(err error) int {
	var forced *exitError
	if errors.As(err, &forced) {
		return forced.code
	}
	var run *runError
	var usage *usageError
	if !errors.As(err, &run) || errors.As(err, &usage) {
		return ExitUsage
	}
	return kindExit[errkind.Of(err)]
}

// kindExit is the exit status of a command's own error of each kind.
var kindExit = [...]int{
	errkind.Unknown:      ExitFailure,
	errkind.Invalid:      ExitUsage,
	errkind.NotFound:     ExitNotFound,
	errkind.Unavailable:  ExitUnavailable,
	errkind.Conflict:     ExitConflict,
	errkind.Unauthorized: ExitDenied,
	errkind.Forbidden:    ExitDenied,
}

// reportFrom prints err for the command cmd that failed and returns the exit
// status. Usage errors point at the command's help.
func reportFrom(stderr io.Writer, cmd *cobra.Command, err error) int {
	code := exitStatus(err)
	var run *runError
	var usage *usageError
	if cmd != nil && (errors.As(err, &usage) || !errors.As(err, &run)) {
		err = fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())
	}
	fmt.Fprintf(stderr, "swarmscore: %s\n", oneLine(err.Error()))
	return code
}

// oneLine folds a possibly multi-line message (cobra's "Did you mean this?"
// suggestions, wrapped errors from libraries) into a single line, so that
// stderr carries exactly one line per failure.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
