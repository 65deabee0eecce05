package main

import (
	"errors"

	"github.com/fsctl/fsctl/loadgen"
)

// openModel reads --rate, --ramp and --duration into the plan's schedule.
func (o blastOptions) openModel(p *loadgen.Plan) error {
	if o.rate == 0 {
		if o.ramp != 0 || o.duration != 0 {
			return errors.New("--ramp and --duration need --rate")
		}
		return nil
	}
	if o.ramp < 0 || o.duration < 0 {
		return errors.New("--ramp and --duration cannot be negative")
	}
	p.Schedule = &loadgen.Schedule{Rate: o.rate, Ramp: o.ramp}
	if o.duration > 0 {
		p.Buyers = p.Schedule.Count(o.duration)
	}
	return nil
}
