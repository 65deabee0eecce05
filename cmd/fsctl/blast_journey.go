package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/fsctl/fsctl/blast"
)

// openModel reads --rate, --ramp and --duration into the plan's schedule.
func (o blastOptions) openModel(p *blast.Plan) error {
	if o.rate == "" {
		if o.ramp != 0 || o.duration != 0 {
			return errors.New("--ramp and --duration need --rate")
		}
		return nil
	}
	rate, err := blast.ParseRate(o.rate)
	if err != nil {
		return fmt.Errorf("--rate: %w", err)
	}
	if o.ramp < 0 || o.duration < 0 {
		return errors.New("--ramp and --duration cannot be negative")
	}
	p.Schedule = &blast.Schedule{Rate: rate, Ramp: o.ramp}
	if o.duration > 0 {
		p.Buyers = p.Schedule.Count(o.duration)
	}
	return nil
}

// renderJourney prints what the main report has no place for: the waiting room's admissions and
// what buyers did after the purchase. Under --output json it goes to stderr, so stdout stays JSON.
func renderJourney(out, progress io.Writer, o blastOptions, p blast.Plan, res *blast.Result) error {
	out = o.output.beside(out, progress)
	if r, ok := p.Journey.(*blast.Room); ok {
		if err := blast.RenderRoom(out, r.Admissions()); err != nil {
			return err
		}
	}
	if p.After != nil {
		return blast.RenderFollowUps(out, res.FollowUps)
	}
	return nil
}
