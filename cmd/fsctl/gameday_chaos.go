package main

import (
	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/gameday"
)

// runChaosSeeds plays --seeds chaos runs, from --seed on, on one stack (gameday.RunSeeds), prints
// their summing up and gives the worst failing seed's exit status.
func runChaosSeeds(cmd *cobra.Command, o *gamedayOptions, td gameday.Teardown, dir string, budget gameday.Budget) error {
	out := cmd.OutOrStdout()
	progress := o.output.beside(out, cmd.ErrOrStderr())
	scfg, err := o.stack.config(cmd, progress)
	if err != nil {
		return err
	}
	runs, err := gameday.RunSeeds(cmd.Context(), gameday.SeedsConfig{
		Chaos: o.chaosCfg, Seeds: o.seeds, Budget: budget, WarRoom: !o.noWarroom,
		Run:     gameday.Config{Stack: scfg, Teardown: td, WorkDir: dir, Out: progress, SoakEvery: o.soakEvery},
		Summary: func(runs gameday.SeedsReport) error { return writeReport(out, o.output, runs) },
	})
	if err != nil {
		return err
	}
	return verdictError(runs.Verdict(), runs.Err())
}
