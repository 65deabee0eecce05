package gameday

import (
	"context"
	"path/filepath"
)

// Play runs cfg as Run does and writes its report into cfg.WorkDir, which it needs
// (Report.WriteFiles), with the war room recording the sale's timeline there (warroom.jsonl) when
// warRoom is true: what fsctl gameday does with one scenario, and with each seed of several. The
// report is nil only when the run could not start; an error writing it is returned in place of
// the run's.
func Play(ctx context.Context, cfg Config, warRoom bool) (*Report, error) {
	if warRoom {
		cfg.Timeline = NewWarRoom(Endpoints(cfg.Stack), cfg.Scenario.Sale.ID, filepath.Join(cfg.WorkDir, "warroom.jsonl"))
	}
	rep, runErr := Run(ctx, cfg)
	if rep == nil {
		return nil, runErr
	}
	if err := rep.WriteFiles(cfg.WorkDir); err != nil {
		return rep, err
	}
	return rep, runErr
}
