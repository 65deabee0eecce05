package main

import (
	"errors"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/platform/yamlfield"
)

// The exit status of every command, one scheme (README, "Conventions"), so a CI job can branch on it:
const (
	// exitFailed: the command could not do its job (a service unreachable, a file that cannot be
	// read, an error on the way). Also any error that chose no status.
	exitFailed = 1
	// exitUsage: the command line is wrong (an unknown flag or command, a bad value, a missing
	// flag or argument), or a file it names is read but wrong (a *yamlfield.Error); nothing was done.
	exitUsage = 2
	// exitCheck: the command ran and a check it makes failed: not ready, a threshold or budget
	// missed, an alert firing, a service down, a migration pending.
	exitCheck = 3
	// exitInvariant: the command ran and found an invariant broken: data at risk (an oversell, an
	// acknowledged order lost, stores that disagree).
	exitInvariant = 4
)

// exitError carries a process exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a wrong command line (exitUsage). A file that could not be read (a *fs.PathError:
// missing, a folder, no permission) stays a run that could not start (exitFailed) whichever
// command wraps it, so that rule holds for every file, YAML or not, in this one place.
func usageError(err error) error {
	if _, ok := errors.AsType[*fs.PathError](err); ok {
		return err
	}
	return &exitError{code: exitUsage, err: err}
}

// checkFailed is a check the command made that did not pass (exitCheck).
func checkFailed(err error) error { return &exitError{code: exitCheck, err: err} }

// invariantBroken is data at risk (exitInvariant).
func invariantBroken(err error) error { return &exitError{code: exitInvariant, err: err} }

// exitCode is the status err ends the process with. An input file that was read but is wrong
// (every YAML file fsctl reads says so with a *yamlfield.Error) is exitUsage, decided here once
// for every command; one that cannot be read stays exitFailed. An error without a status is
// exitFailed once the command ran, and exitUsage before (cobra's own checks: arguments, required
// flags, an unknown command), which ran reports.
func exitCode(err error, ran bool) int {
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	if _, ok := errors.AsType[*yamlfield.Error](err); ok {
		return exitUsage
	}
	if !ran {
		return exitUsage
	}
	return exitFailed
}

// trackRuns wraps the Run of every command under root so that ran says whether one started:
// an error before that is the command line's.
func trackRuns(root *cobra.Command, ran *bool) {
	for _, c := range root.Commands() {
		trackRuns(c, ran)
	}
	switch {
	case root.RunE != nil:
		run := root.RunE
		root.RunE = func(cmd *cobra.Command, args []string) error {
			*ran = true
			return run(cmd, args)
		}
	case root.Run != nil:
		run := root.Run
		root.Run = func(cmd *cobra.Command, args []string) {
			*ran = true
			run(cmd, args)
		}
	}
}
