package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/profile"
	"github.com/fsctl/fsctl/profiles"
)

func newProfileCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Describe your own checkout to fsctl (target profiles), and check a profile against it",
		Long: `A target profile (YAML) tells every operator command how to buy from and read a checkout fsctl
did not write: the purchase request template and the buyer's token, how its answers map to
outcomes, its Redis key templates, and the SQL that returns each item's quantity, sold counter and
orders. blast, preflight, warroom and reconcile take it with --profile (env FSCTL_PROFILE); the
bundled server's profile (profiles/fsctl.yaml) is the default. docs/profiles.md has every field.`,
	}
	cmd.AddCommand(newProfileCheckCmd(), newProfileShowCmd())
	return cmd
}

type profileCheckOptions struct {
	endpoints endpointFlags
	file      string
	sale      string
	items     []string
	target    string
	secret    string
	output    string
	timeout   time.Duration
}

func newProfileCheckCmd() *cobra.Command {
	var o profileCheckOptions
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check a profile against a live target: every template renders, every query runs, every key exists",
		Long: `Read the profile, then try everything it declares against the live target, explaining each
failure: mint a buyer's token, render the purchase request (never sent: a check buys nothing),
GET each declared HTTP endpoint, run every query for every item of the sale (a failing query
shows the database's error and the query's name) and judge its values, read every key of every
shard, and find the order log's topic and consumer group. Nothing on the target is changed.

Exit status: 0 the profile fits, 1 a line failed, 2 the profile does not parse (the message
names the line and the field).`,
		Example: `  fsctl profile check -f profiles/spring-article.yaml --sale article --target http://127.0.0.1:8090
  fsctl profile check --sale black-friday --target http://127.0.0.1:8080     # the bundled server's profile
  fsctl profile check -f my-shop.yaml --sale bf --item 1001 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProfileCheck(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	f := cmd.Flags()
	o.endpoints.bind(f, true)
	f.StringVarP(&o.file, "file", "f", "", "profile to check (default: the bundled server's)")
	f.StringVar(&o.sale, "sale", "", "sale to check it against (the article-style profile ignores it: give any label)")
	f.StringArrayVar(&o.items, "item", nil, "check only this item (repeatable); default: every item sql.items returns")
	f.StringVar(&o.target, "target", "", "the checkout's base URL, to reach its HTTP endpoints (omit to skip them)")
	f.StringVar(&o.secret, "jwt-secret", "", "an hs256 profile's secret, replacing its secretEnv (env of the profile)")
	f.StringVarP(&o.output, "output", "o", "table", "table or json")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on the whole check")
	return cmd
}

func runProfileCheck(ctx context.Context, out io.Writer, o profileCheckOptions) error {
	if o.sale == "" {
		return usageError(fmt.Errorf("--sale is required (a label for a target without sales)"))
	}
	if o.output != "table" && o.output != "json" {
		return usageError(fmt.Errorf("--output %q: want table or json", o.output))
	}
	p, err := profileFlag{path: o.file}.load()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	t, err := profile.Connect(ctx, p, o.endpoints.redisURL, o.endpoints.postgresURL)
	if err != nil {
		return usageError(err)
	}
	defer t.Close()
	rep := t.Check(ctx, profile.CheckConfig{Sale: o.sale, Items: o.items, Base: strings.TrimRight(o.target, "/"),
		Secret: o.secret, Brokers: o.endpoints.brokers})
	if o.output == "json" {
		err = rep.WriteJSON(out)
	} else {
		err = rep.Render(out)
	}
	if err == nil && rep.Failed() {
		err = &exitError{code: 1, err: fmt.Errorf("profile %s does not fit the target: see the failed lines", p.Name)}
	}
	return err
}

func newProfileShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show [NAME]",
		Short: "Print a shipped profile (fsctl, spring-article), to start your own from",
		Example: `  fsctl profile show > my-shop.yaml          # the bundled server's profile
  fsctl profile show spring-article`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := profiles.Bundled
			if len(args) == 1 {
				name = strings.TrimSuffix(args[0], ".yaml") + ".yaml"
			}
			b, err := fs.ReadFile(profiles.Files, name)
			if err != nil {
				shipped, _ := fs.Glob(profiles.Files, "*.yaml")
				return usageError(fmt.Errorf("no shipped profile %q: there are %s", args[0], strings.Join(shipped, ", ")))
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
}
