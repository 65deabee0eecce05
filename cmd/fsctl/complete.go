package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/checkout/saleops"
	"github.com/fsctl/fsctl/internal/harness/stack"
)

// completeTimeout bounds how long a shell completion waits for PostgreSQL: a Tab must not hang
// on a stack that is down, so it offers nothing instead.
const completeTimeout = 500 * time.Millisecond

// attachCompleters walks the command tree and gives every flag the shell can complete its values,
// by name, so a new command that binds the shared flags gets them without a line of its own:
// -o/--output the formats, --profile YAML files, --sale the sales in PostgreSQL, --item the
// items of the --sale given.
func attachCompleters(c *cobra.Command) {
	for _, sub := range c.Commands() {
		attachCompleters(sub)
	}
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		var fn cobra.CompletionFunc
		switch _, isOutput := f.Value.(*outputFlag); {
		case isOutput:
			fn = cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp)
		case f.Name == "profile":
			fn = completeProfile
		case f.Name == "sale":
			fn = completeSale
		case f.Name == "item":
			fn = completeItem
		default:
			return
		}
		// A flag another command shares (a persistent one) is registered once.
		_ = c.RegisterFlagCompletionFunc(f.Name, fn)
	})
}

// completeProfile offers the YAML files a target profile is read from (profiles/ ships fsctl.yaml
// and spring-article.yaml; `fsctl profile show NAME` prints them).
func completeProfile(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// completeSale offers the sales in the PostgreSQL the command would use, with their names.
func completeSale(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return completeNames(cmd, prefix, saleops.SaleNames)
}

// completeItem offers the items of the --sale already on the command line.
func completeItem(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	saleID := flagValue(cmd, "sale", "")
	if saleID == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeNames(cmd, prefix, func(ctx context.Context, pg string) ([]saleops.Name, error) {
		return saleops.ItemNames(ctx, pg, saleID)
	})
}

// completeNames offers the names read finds, with their descriptions, that start with prefix.
// read looks in the command's PostgreSQL (its --postgres-url, else the environment's or the local
// stack's) within completeTimeout; when it is unreachable the completion offers nothing.
func completeNames(cmd *cobra.Command, prefix string, read func(context.Context, string) ([]saleops.Name, error)) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	names, err := read(ctx, flagValue(cmd, "postgres-url", stack.EndpointsFromEnv().PostgresURL))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n.ID, prefix) {
			out = append(out, cobra.CompletionWithDesc(n.ID, n.Name))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// flagValue is the value of the command's flag name as parsed so far, or def when it has none.
func flagValue(cmd *cobra.Command, name, def string) string {
	if f := cmd.Flag(name); f != nil {
		return f.Value.String()
	}
	return def
}
