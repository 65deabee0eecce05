package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/gameday"
)

// scenarioOf is the scenario the flags ask for: drawn from --seed with --chaos, read from
// --file, or the built-in one. A flag of --chaos without it, or a scenario that cannot be drawn,
// is a usage error.
func (o *gamedayOptions) scenarioOf(flags *pflag.FlagSet) (gameday.Scenario, error) {
	switch {
	case o.chaos && o.scenario != "":
		return gameday.Scenario{}, usageError(fmt.Errorf("--chaos draws its own scenario: give --chaos or --file, not both"))
	case o.chaos && (o.seeds < 1 || o.seeds > 100_000):
		return gameday.Scenario{}, usageError(fmt.Errorf("--seeds %d: want 1 to 100000", o.seeds))
	case o.chaos:
		o.chaosCfg.RedisCluster, o.chaosCfg.KafkaCluster = o.stack.cfg.RedisCluster.Masters > 0, o.stack.cfg.KafkaCluster.Brokers > 0
		sc, err := gameday.Chaos(o.chaosCfg)
		if err != nil {
			return sc, usageError(err)
		}
		return sc, nil
	}
	for _, name := range []string{"duration", "rate", "faults", "chaos-steps", "seeds", "retry-after"} {
		if flags.Changed(name) {
			return gameday.Scenario{}, usageError(fmt.Errorf("--%s is a setting of --chaos", name))
		}
	}
	sc := gameday.Default()
	if o.scenario != "" {
		var err error
		if sc, err = gameday.LoadFile(o.scenario); err != nil {
			return sc, err // exitCode tells a file that cannot be read from one that is wrong
		}
	}
	if flags.Changed("seed") {
		sc.Seed = o.chaosCfg.Seed
	}
	return sc, nil
}

// budget is what --budget-undecided and --budget-outage put in place of the scenario's budget
// (gameday.Scenario.WithBudget): a part whose flag is not given is negative.
func (o *gamedayOptions) budget(flags *pflag.FlagSet) (gameday.Budget, error) {
	b := gameday.Budget{Undecided: -1, Outage: -1}
	if flags.Changed("budget-undecided") {
		if o.budgetUndecided < 0 || o.budgetUndecided > 1 {
			return b, fmt.Errorf("--budget-undecided %g: want a share of buyers between 0 and 1, like 0.15", o.budgetUndecided)
		}
		b.Undecided = o.budgetUndecided
	}
	if flags.Changed("budget-outage") {
		if o.budgetOutage <= 0 {
			return b, fmt.Errorf("--budget-outage %s: want the longest outage allowed, like 5s", o.budgetOutage)
		}
		b.Outage = o.budgetOutage
	}
	return b, nil
}
