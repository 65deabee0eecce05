package main

import (
	"errors"
	"fmt"

	"github.com/fsctl/fsctl/loadgen"
)

// openModel reads --rate, --ramp and --duration into the plan's schedule.
func (o blastOptions) openModel(p *loadgen.Plan) error {
	if o.rate == "" {
		if o.ramp != 0 || o.duration != 0 {
			return errors.New("--ramp and --duration need --rate")
		}
		return nil
	}
	rate, err := loadgen.ParseRate(o.rate)
	if err != nil {
		return fmt.Errorf("--rate: %w", err)
	}
	if o.ramp < 0 || o.duration < 0 {
		return errors.New("--ramp and --duration cannot be negative")
	}
	p.Schedule = &loadgen.Schedule{Rate: rate, Ramp: o.ramp}
	if o.duration > 0 {
		p.Buyers = p.Schedule.Count(o.duration)
	}
	return nil
}
