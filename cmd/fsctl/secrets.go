package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/redisconn"
)

// secretFlags hold a secret whole; urlFlags are addresses that may carry a password. Their defaults
// come from the environment, and --help would print them: hideSecrets keeps them out.
var (
	secretFlags = map[string]bool{"jwt-secret": true, "admin-token": true, "room-secret": true}
	urlFlags    = map[string]bool{"redis-url": true, "postgres-url": true, "room-redis-url": true, "payment-url": true, "metrics-remote-write": true}
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
			f.DefValue = redisconn.Redact(f.DefValue)
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
