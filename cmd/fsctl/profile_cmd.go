package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/target/profile"
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
	cmd.AddCommand(newProfileCheckCmd(), newProfileShowCmd(), newProfileTokensCmd())
	return cmd
}

type profileCheckOptions struct {
	endpoints endpointFlags
	file      string
	sale      string
	items     []string
	target    string
	secret    string
	output    outputFlag
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

Exit status: 0 the profile fits, 3 a line failed, 2 the profile does not parse (the message
names the line and the field), 1 the check could not run.`,
		Example: `  fsctl profile check --profile profiles/spring-article.yaml --sale article --target http://127.0.0.1:8090
  fsctl profile check --sale black-friday --target http://127.0.0.1:8080     # the bundled server's profile
  fsctl profile check --profile my-shop.yaml --sale bf --item 1001 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProfileCheck(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	o.endpoints.bind(f, true)
	f.StringVar(&o.file, "profile", os.Getenv(envProfile), "profile to check (default: the bundled server's; env "+envProfile+")")
	deprecatedAliasP(f, "file", "f", "profile")
	bindSale(f, &o.sale, "sale to check it against (the article-style profile ignores it: give any label)")
	bindItems(f, &o.items, "check only this item; default: every item sql.items returns")
	bindTarget(f, &o.target, "", "the checkout's base URL, to reach its HTTP endpoints (omit to skip them)")
	secretString(f, &o.secret, "jwt-secret", "", "an hs256 profile's secret, replacing its secretEnv (env of the profile)")
	bindOutput(f, &o.output, "the report")
	f.DurationVar(&o.timeout, "deadline", 30*time.Second, "bound on the whole check")
	deprecatedAlias(f, "timeout", "deadline")
	return cmd
}

func runProfileCheck(ctx context.Context, out io.Writer, o profileCheckOptions) error {
	if o.sale == "" {
		return usageError(fmt.Errorf("--sale is required (a label for a target without sales)"))
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
	kc, err := o.endpoints.kafkaConn(os.Stderr, p)
	if err != nil {
		return err
	}
	rep := t.Check(ctx, profile.CheckConfig{Sale: o.sale, Items: o.items, Base: strings.TrimRight(o.target, "/"),
		Secret: o.secret, Kafka: kc})
	err = writeReport(out, o.output, rep)
	if err == nil && rep.Failed() {
		err = checkFailed(fmt.Errorf("profile %s does not fit the target: see the failed lines", p.Name))
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

type profileTokensOptions struct {
	file, sale, prefix, out, secret string
	buyers                          int
	ttl                             time.Duration
}

func newProfileTokensCmd() *cobra.Command {
	var o profileTokensOptions
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: "Mint the buyers' tokens ahead of the sale into a token file (RS256 costs ~1 ms a token)",
		Long: `Mint the tokens of buyers <prefix>0 … <prefix>N-1 as the profile says (hs256 or rs256 claims) and
write them as a token file: one "user token" line per buyer. A copy of the profile with
token: {type: file, file: tokens.txt} then prepares each buyer in microseconds instead of signing
at prepare time, which for RS256 is about a millisecond per buyer on 2 cores.`,
		Example: `  fsctl profile tokens --profile profiles/spring-article.yaml --sale article --buyers 50000 --ttl 3h --out tokens.txt`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProfileTokens(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.file, "profile", os.Getenv(envProfile), "profile whose token section mints (default: the bundled server's; env "+envProfile+")")
	deprecatedAliasP(f, "file", "f", "profile")
	bindSale(f, &o.sale, "sale, for a ${sale} claim")
	f.IntVar(&o.buyers, "buyers", 1000, "how many buyers")
	f.StringVar(&o.prefix, "user-prefix", "blast-", "buyer k is the user <prefix><k> (as fsctl blast names them)")
	f.DurationVar(&o.ttl, "ttl", 3*time.Hour, "how long the tokens stay valid: past the end of the burst")
	f.StringVar(&o.out, "out", "", "write the tokens to this file (default stdout)")
	deprecatedAlias(f, "output", "out") // its -o alias is gone: -o is the report's format everywhere
	secretString(f, &o.secret, "jwt-secret", "", "an hs256 profile's secret, replacing its secretEnv")
	return cmd
}

func runProfileTokens(ctx context.Context, stdout, progress io.Writer, o profileTokensOptions) error {
	if o.buyers < 1 || o.ttl <= 0 {
		return usageError(fmt.Errorf("--buyers must be at least 1 and --ttl positive"))
	}
	p, err := profileFlag{path: o.file}.load()
	if err != nil {
		return err
	}
	if p.Token.Type != profile.TokenHS256 && p.Token.Type != profile.TokenRS256 {
		return usageError(fmt.Errorf("profile %s: token.type %s mints nothing: tokens are minted from hs256 or rs256 claims", p.Name, p.Token.Type))
	}
	m, err := p.Minter(o.secret)
	if err != nil {
		return usageError(err)
	}
	w := stdout
	if o.out != "" {
		f, err := os.OpenFile(o.out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600) // bearer tokens: owner only
		if err != nil {
			return err
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		defer bw.Flush()
		w = bw
	}
	return m.WriteTokens(ctx, w, o.sale, o.prefix, o.buyers, time.Now(), o.ttl, func(done, total int) {
		fmt.Fprintf(progress, "minted %d/%d tokens\n", done, total)
	})
}
