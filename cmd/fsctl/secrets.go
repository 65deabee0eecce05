package main

import (
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// secretFlags hold a secret whole; urlFlags are addresses that may carry a password. Their defaults
// come from the environment, and --help would print them: hideSecrets keeps them out.
var (
	secretFlags = map[string]bool{"jwt-secret": true, "admin-token": true, "room-secret": true}
	urlFlags    = map[string]bool{"redis-url": true, "postgres-url": true, "room-redis-url": true, "payment-url": true}
)

// hideSecrets walks every command under root: a secret flag's default is never shown (--help says
// whether one is set), and an address shows without its password.
func hideSecrets(root *cobra.Command) {
	hide := func(f *pflag.Flag) {
		switch {
		case secretFlags[f.Name] && f.DefValue != "":
			f.DefValue = ""
			if !strings.Contains(f.Usage, "set from the environment") {
				f.Usage += "; a value is set from the environment or built in, never printed"
			}
		case urlFlags[f.Name]:
			f.DefValue = redactURL(f.DefValue)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(hide)
		c.PersistentFlags().VisitAll(hide)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// redactURL drops the password of every address in raw (comma separated for a cluster or brokers);
// what does not parse as a URL is shown as is only if it has no "@".
func redactURL(raw string) string {
	if !strings.Contains(raw, "@") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(an address with credentials, not shown)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
