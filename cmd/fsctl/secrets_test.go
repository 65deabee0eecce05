package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

// fsctlVariables are the FSCTL_* environment variables the module's code reads: every string
// constant of a non-test .go file that starts with one, found by parsing the tree, so a variable
// added tomorrow is in the list without anyone adding it.
func fsctlVariables(t *testing.T) []string {
	t.Helper()
	name := regexp.MustCompile(`^FSCTL_[A-Z0-9_]*[A-Z0-9]`)
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && name.MatchString(s) {
					seen[name.FindString(s)] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// Variables are told apart by name alone, so a secret is recognised without its flag's mark
// (which is what is under test): a secret's whole value must never show, an address's password
// must never show, and anything else must show where a flag takes it as its default.
var (
	secretVariable  = regexp.MustCompile(`_(SECRET|TOKEN|PASSWORD|KEY|HEADER)$`)
	addressVariable = regexp.MustCompile(`_(URL|WRITE|ENDPOINT)$`)
)

// canary is variable v's value for the test, and the part of it that must show (for a secret,
// nothing must). Every secret part holds "s3cr3t".
func canary(v string) (value, shows string) {
	slug := strings.ToLower(strings.ReplaceAll(v, "_", "-"))
	switch {
	case strings.HasSuffix(v, "_HEADER"):
		return "X-Canary: " + slug + "-s3cr3t", ""
	case secretVariable.MatchString(v):
		return slug + "-s3cr3t", ""
	case addressVariable.MatchString(v):
		return "https://canary:" + slug + "-s3cr3t@" + slug + ".invalid/x", "https://canary:xxxxx@" + slug + ".invalid/x"
	}
	return slug + "-canary", slug + "-canary"
}

// TestHelpNeverPrintsASecret sets every FSCTL_* variable of the tree to a canary and reads every
// command's --help: no secret and no password may show, and the value of a variable that is not a
// secret shows where a flag takes it (redacted, for an address), so the test reads the right output.
func TestHelpNeverPrintsASecret(t *testing.T) {
	vars := fsctlVariables(t)
	for _, want := range []string{stack.EnvRedisURL, envGRPCToken, envJWTSecret, envSale} {
		if !slices.Contains(vars, want) {
			t.Fatalf("the scan of the tree missed %s: %v", want, vars)
		}
	}
	for _, v := range vars {
		value, _ := canary(v)
		t.Setenv(v, value)
	}
	var helps, usages, boolUsages strings.Builder
	for _, c := range commands(newRootCmd()) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			usages.WriteString(f.Usage + "\n")
			if f.Value.Type() == "bool" { // a canary is no bool: such a flag keeps false
				boolUsages.WriteString(f.Usage + "\n")
			}
		})
		out, _, err := runCLI(t, append(strings.Fields(c.CommandPath())[1:], "--help")...)
		if err != nil {
			t.Fatalf("%s --help: %v", c.CommandPath(), err)
		}
		if i := strings.Index(out, "s3cr3t"); i >= 0 {
			t.Errorf("%s --help prints a secret: %q", c.CommandPath(), out[max(0, i-80):min(len(out), i+40)])
		}
		helps.WriteString(out)
	}
	for _, v := range vars {
		_, shows := canary(v)
		if shows != "" && strings.Contains(usages.String(), "env "+v) && !strings.Contains(boolUsages.String(), "env "+v) && !strings.Contains(helps.String(), shows) {
			t.Errorf("a flag takes %s, yet no --help shows its value %q: a value that is no secret is hidden, or the test reads the wrong output", v, shows)
		}
	}
}

// TestSecretFlagsAreMarked: a flag whose name, or whose variable's name, says it holds a secret or
// an address is marked so where it is defined — the rule a new flag meets without any list.
func TestSecretFlagsAreMarked(t *testing.T) {
	secretName := regexp.MustCompile(`(^|-)(secret|token|password)$`)
	addressName := regexp.MustCompile(`(-url|remote-write|-endpoint)$`)
	envOf := regexp.MustCompile(`env (FSCTL_[A-Z0-9_]+)`)
	for _, c := range commands(newRootCmd()) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			env := envOf.FindStringSubmatch(f.Usage)
			secret := secretName.MatchString(f.Name) || env != nil && secretVariable.MatchString(env[1])
			address := addressName.MatchString(f.Name) || env != nil && addressVariable.MatchString(env[1])
			switch k := kind(f); {
			case f.Deprecated != "":
			case secret && k != secretWhole:
				t.Errorf("%s --%s holds a secret but is not defined with secretString or markSecret", c.CommandPath(), f.Name)
			case address && k == "":
				t.Errorf("%s --%s is an address but is not defined with addressString or markAddress", c.CommandPath(), f.Name)
			}
		})
	}
}

// TestANewSecretFlagIsHidden: a flag defined with the marked constructors is hidden in --help and
// in the start-up log with nothing else to change.
func TestANewSecretFlagIsHidden(t *testing.T) {
	t.Setenv("FSCTL_BRAND_NEW_TOKEN", "env-s3cr3t")
	root := newRootCmd()
	var tok, addr string
	c := &cobra.Command{Use: "brand-new", RunE: func(*cobra.Command, []string) error { return nil }}
	secretString(c.Flags(), &tok, "brand-new-token", "FSCTL_BRAND_NEW_TOKEN", "a token no list names")
	addressString(c.Flags(), &addr, "brand-new-url", "postgres://fsctl:url-s3cr3t@db.example/fsctl", "an address no list names")
	root.AddCommand(c)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"brand-new", "--help"})
	if _, err := execute(t.Context(), root); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	if strings.Contains(help, "s3cr3t") || !strings.Contains(help, "--brand-new-token") || !strings.Contains(help, `"postgres://fsctl:xxxxx@db.example/fsctl"`) {
		t.Errorf("--help of a new marked flag:\n%s", help)
	}
	_ = c.Flags().Set("brand-new-token", "given-s3cr3t")
	if got := logged(c.Flags()); strings.Contains(got, "s3cr3t") || !strings.Contains(got, "brand-new-token=(set)") ||
		!strings.Contains(got, "brand-new-url=postgres://fsctl:xxxxx@db.example/fsctl") {
		t.Errorf("the log of a new marked flag: %s", got)
	}
}

// logged is the line slog writes of fs's marked flags.
func logged(fs *pflag.FlagSet) string {
	var b bytes.Buffer
	slog.New(slog.NewTextHandler(&b, nil)).Info("starting", loggedFlags(fs)...)
	return b.String()
}

// TestServeLogsItsServicesWithoutSecrets: serve's start-up line names the services it was given,
// passwords dropped, and of each secret only that it is set.
func TestServeLogsItsServicesWithoutSecrets(t *testing.T) {
	fs := newServeCmd().Flags()
	for name, v := range map[string]string{
		"grpc-token":     "grpc-s3cr3t",
		"admin-token":    "admin-s3cr3t-0123456789",
		"jwt-secret":     "jwt-s3cr3t",
		"postgres-url":   "postgres://fsctl:pg-s3cr3t@db.internal:5432/fsctl",
		"payment-url":    "https://shop:pay-s3cr3t@pay.internal",
		"room-redis-url": "redis://default:room-s3cr3t@room.internal:6379/0",
	} {
		if err := fs.Set(name, v); err != nil {
			t.Fatal(err)
		}
	}
	got := logged(fs)
	for _, want := range []string{"grpc-token=(set)", "admin-token=(set)", "postgres-url=postgres://fsctl:xxxxx@db.internal:5432/fsctl",
		"payment-url=https://shop:xxxxx@pay.internal", "room-redis-url=redis://default:xxxxx@room.internal:6379/0"} {
		if !strings.Contains(got, want) {
			t.Errorf("the start-up line lacks %s: %s", want, got)
		}
	}
	if strings.Contains(got, "s3cr3t") {
		t.Errorf("the start-up line prints a secret: %s", got)
	}
}

// TestHelpShowsAddressesAsGiven: a PostgreSQL URL without a password shows without one (an
// invented fsctl:xxxxx@ read as if a password were set), and --dir's default is ./.stack or the
// variable as given, not this machine's absolute path.
func TestHelpShowsAddressesAsGiven(t *testing.T) {
	t.Setenv(stack.EnvPostgresURL, "")
	t.Setenv(stack.EnvStackDir, "")
	wd, _ := os.Getwd()
	for _, tc := range []struct {
		args       []string
		env        string
		want, flag string
	}{
		{[]string{"migrate", "--help"}, "", `"postgres://fsctl@127.0.0.1:15432/fsctl?sslmode=disable"`, "--postgres-url"},
		{[]string{"stack", "status", "--help"}, "", `(default "./.stack")`, "--dir"},
		{[]string{"gameday", "--help"}, "", `(default "./.stack")`, "--dir"},
		{[]string{"stack", "env", "--help"}, "mine/stack", `(default "mine/stack")`, "--dir"},
	} {
		t.Setenv(stack.EnvStackDir, tc.env)
		out, _, err := runCLI(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		line := ""
		for l := range strings.Lines(out) {
			if strings.Contains(l, tc.flag+" ") {
				line = l
			}
		}
		if !strings.Contains(line, tc.want) || strings.Contains(line, wd) || strings.Contains(line, "xxxxx") {
			t.Errorf("%v: %s is %q, want %s", tc.args, tc.flag, line, tc.want)
		}
	}
}
