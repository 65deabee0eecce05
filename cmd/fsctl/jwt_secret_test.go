package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// TestJWTSecretFlag: the flag's default (the local stack's secret) signs fsctl serve's buyers but
// never replaces another target's secret; a given value replaces it.
func TestJWTSecretFlag(t *testing.T) {
	t.Setenv(envJWTSecret, "")
	foreign := &profile.Profile{Name: "shop"}
	for _, tc := range []struct {
		args         []string
		deep, orElse string
	}{
		{nil, devJWTSecret, ""},
		{[]string{"--jwt-secret", "given-secret-0123456789"}, "given-secret-0123456789", "given-secret-0123456789"},
	} {
		var s jwtSecretFlag
		f := pflag.NewFlagSet("blast", pflag.ContinueOnError)
		s.bind(f)
		if err := f.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := s.forProfile(profile.Default()); got != tc.deep {
			t.Errorf("%v, fsctl serve: %q, want %q", tc.args, got, tc.deep)
		}
		if got := s.forProfile(foreign); got != tc.orElse {
			t.Errorf("%v, another target: %q, want %q", tc.args, got, tc.orElse)
		}
		// --help shows it as a plain string flag, marked secret: its default is never printed.
		if d := f.Lookup("jwt-secret"); d.DefValue != "" || kind(d) != secretWhole || d.Value.Type() != "string" {
			t.Errorf("flag %+v", d)
		}
	}
}
