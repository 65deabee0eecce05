package main

import (
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/platform/reach"
)

// A flag that holds a secret, or an address that may carry a password, is marked where it is
// defined — secretString and addressString, or markSecret and markAddress for a flag of another
// type — and never in a list kept elsewhere, which a new flag would not join (--grpc-token did
// not). The mark hides the value there and then: --help shows no secret's default and an address
// without its password (reach.Redact), and loggedFlags shows a marked flag the same way.
const secretAnnotation = "fsctl-secret"

// The kinds of mark.
const (
	secretWhole   = "secret"  // the value is a secret: never printed, only whether one is set
	secretAddress = "address" // an address: printed without its password
)

// secretString adds a string flag holding a secret, its default from env ("" for none).
func secretString(f *pflag.FlagSet, p *string, name, env, usage string) {
	def := ""
	if env != "" {
		def, usage = os.Getenv(env), usage+" (env "+env+")"
	}
	f.StringVar(p, name, def, usage)
	markSecret(f, name)
}

// addressString adds a string flag holding an address that may carry a password.
func addressString(f *pflag.FlagSet, p *string, name, def, usage string) {
	f.StringVar(p, name, def, usage)
	markAddress(f, name)
}

// redacter is a flag value that shows itself without its secret, e.g. --metrics-header: the
// headers' names, never their values.
type redacter interface{ Redacted() string }

// markSecret marks f's flag name as a secret: its default leaves --help (or shows redacted, for a
// redacter), and the usage says one is set without saying what.
func markSecret(f *pflag.FlagSet, name string) {
	fl := mark(f, name, secretWhole)
	if r, ok := fl.Value.(redacter); ok {
		fl.DefValue = r.Redacted()
		return
	}
	if fl.DefValue == "" {
		return
	}
	fl.DefValue = ""
	if !strings.Contains(fl.Usage, "never printed") {
		fl.Usage += "; a value is set from the environment or built in, never printed"
	}
}

// markAddress marks f's flag name as an address (or a list of them) that may carry a password:
// --help shows its default without the password.
func markAddress(f *pflag.FlagSet, name string) {
	fl := mark(f, name, secretAddress)
	fl.DefValue = redactAddresses(fl.Value, fl.DefValue)
}

func mark(f *pflag.FlagSet, name, kind string) *pflag.Flag {
	fl := f.Lookup(name)
	if fl == nil {
		panic("marking --" + name + ", which is not defined") // a programming error, caught by any test of the command
	}
	_ = f.SetAnnotation(name, secretAnnotation, []string{kind})
	return fl
}

// redactAddresses is s, a flag value's text, without passwords: each element of a list flag alone.
func redactAddresses(v pflag.Value, s string) string {
	sv, ok := v.(pflag.SliceValue)
	if !ok || !strings.HasPrefix(s, "[") {
		return reach.Redact(s)
	}
	var out []string
	for _, e := range sv.GetSlice() {
		out = append(out, reach.Redact(e))
	}
	return "[" + strings.Join(out, ",") + "]"
}

// shown is a flag's value as a log line or a report may print it: a secret as whether it is set,
// an address without its password, any other flag as it is.
func shown(fl *pflag.Flag) string {
	v := fl.Value.String()
	switch kind(fl) {
	case secretWhole:
		if r, ok := fl.Value.(redacter); ok {
			return r.Redacted()
		}
		if v != "" {
			return "(set)"
		}
	case secretAddress:
		return redactAddresses(fl.Value, v)
	}
	return v
}

func kind(fl *pflag.Flag) string {
	if k := fl.Annotations[secretAnnotation]; len(k) == 1 {
		return k[0]
	}
	return ""
}

// loggedFlags are slog attributes of every marked flag that has a value (the services an instance
// uses and which secrets it was given), each as shown: what a start-up log line may say of them.
func loggedFlags(fs *pflag.FlagSet) []any {
	var out []any
	fs.VisitAll(func(fl *pflag.Flag) {
		if kind(fl) != "" && fl.Deprecated == "" && fl.Value.String() != "" && fl.Value.String() != "[]" {
			out = append(out, fl.Name, shown(fl))
		}
	})
	return out
}
