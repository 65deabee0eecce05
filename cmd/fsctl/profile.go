package main

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// envProfile names the variable holding the default target profile's file.
const envProfile = "FSCTL_PROFILE"

// profileFlag is the --profile flag every operator command shares.
type profileFlag struct{ path string }

func (p *profileFlag) bind(fs *pflag.FlagSet) {
	fs.StringVar(&p.path, "profile", os.Getenv(envProfile),
		"target profile (YAML: how to buy from and read your checkout; see profiles/ and docs/profiles.md); default: the bundled server's (env "+envProfile+")")
}

// load reads the profile and compiles its classification, so a bad rule is reported before
// anything runs. A profile that cannot be read exits 1, one that is wrong (a *yamlfield.Error
// naming the file, field and line) exits 2: exitCode decides.
func (p profileFlag) load() (*profile.Profile, error) {
	prof, err := profile.Load(p.path)
	if err != nil {
		return nil, err
	}
	if _, err := loadgen.ClassifierFor(prof); err != nil {
		return nil, err
	}
	return prof, nil
}
