package main

import (
	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// jwtSecretFlag is --jwt-secret of the commands that sign buyers' tokens through a --profile. It
// remembers whether the operator gave it: its default, the local stack's secret, must not replace
// another target's own (profile.SecretOverride).
type jwtSecretFlag struct {
	value string
	given bool
}

func (s *jwtSecretFlag) bind(f *pflag.FlagSet) {
	s.value = defaultJWTSecret()
	f.Var(s, "jwt-secret", "HS256 secret of the buyers' tokens (env "+envJWTSecret+"); with a --profile, replaces its token secret only when given")
	markSecret(f, "jwt-secret")
}

func (s *jwtSecretFlag) String() string { return s.value }

// Type is "string" so --help shows the flag and its default as it shows a plain string flag.
func (s *jwtSecretFlag) Type() string { return "string" }

func (s *jwtSecretFlag) Set(v string) error {
	s.value, s.given = v, true
	return nil
}

// forProfile is the secret p's buyers' tokens are signed with; "" keeps p's own.
func (s jwtSecretFlag) forProfile(p *profile.Profile) string {
	return p.SecretOverride(s.value, s.given)
}
