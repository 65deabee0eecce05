package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/loadgen"
)

// The flags many commands share have one name, one meaning and one environment variable
// everywhere (README, "Conventions"). The blast Job in deploy/ sets these variables.
const (
	envTarget = "FSCTL_TARGET" // --target: the checkout's base URL (comma separated where it repeats)
	envSale   = "FSCTL_SALE"   // --sale
	envItem   = "FSCTL_ITEM"   // --item, comma separated
)

// bindTarget adds --target, one checkout's base URL (env FSCTL_TARGET, else def).
func bindTarget(f *pflag.FlagSet, p *string, def, usage string) {
	if v := os.Getenv(envTarget); v != "" {
		def = v
	}
	addressString(f, p, "target", def, usage+" (env "+envTarget+")")
}

// bindTargets adds --target for commands that read every instance of a checkout: repeatable
// (env FSCTL_TARGET, comma separated; FSCTL_SERVERS and --server are the old names).
func bindTargets(f *pflag.FlagSet, p *[]string, def []string, usage string) {
	for _, env := range []string{envServers, envTarget} {
		if v := os.Getenv(env); v != "" {
			def = strings.Split(v, ",")
		}
	}
	f.StringSliceVar(p, "target", def, usage+"; repeat for each (env "+envTarget+", comma separated)")
	markAddress(f, "target")
	deprecatedAlias(f, "server", "target")
}

// bindSale adds --sale (env FSCTL_SALE).
func bindSale(f *pflag.FlagSet, p *string, usage string) {
	f.StringVar(p, "sale", os.Getenv(envSale), usage+" (env "+envSale+")")
}

// bindItems adds --item: repeatable and comma separated alike (item ids are slugs, so a comma is
// never part of one; env FSCTL_ITEM).
func bindItems(f *pflag.FlagSet, p *[]string, usage string) {
	var def []string
	if v := os.Getenv(envItem); v != "" {
		def = strings.Split(v, ",")
	}
	f.StringSliceVar(p, "item", def, usage+" (repeatable or comma separated; env "+envItem+")")
}

// rateFlag is --rate, buyers released per second, one form on every command: "500/s", "30000/m"
// or a bare number per second (loadgen.ParseRate, as a scenario's rate: reads), checked as the
// flag is parsed so a bad rate is a usage error before anything runs. Zero is "not given".
type rateFlag struct{ perSecond *float64 }

// bindRate adds --rate into p (buyers per second), defaulting to *p; 0 shows no default.
func bindRate(f *pflag.FlagSet, p *float64, usage string) {
	f.Var(rateFlag{p}, "rate", usage+" (N/s, N/m, or N per second)")
}

func (r rateFlag) String() string {
	if r.perSecond == nil || *r.perSecond == 0 {
		return ""
	}
	return strconv.FormatFloat(*r.perSecond, 'g', -1, 64) + "/s"
}

func (r rateFlag) Set(s string) error {
	v, err := loadgen.ParseRate(s)
	if err != nil {
		return usageError(fmt.Errorf("--%w", err)) // `--rate "fast": want ...`
	}
	*r.perSecond = v
	return nil
}

// Type names the value in --help: "--rate rate".
func (r rateFlag) Type() string { return "rate" }
