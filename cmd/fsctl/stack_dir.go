package main

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

// showStackDir makes --help show --dir's default as the user would give it — ./.stack, or
// $FSCTL_STACK_DIR as set — not the absolute path of the folder fsctl happened to run in. The
// value stays absolute: the services run in folders of their own.
func showStackDir(f *pflag.FlagSet) {
	def := os.Getenv(stack.EnvStackDir)
	if def == "" {
		def = "./.stack"
	}
	f.Lookup("dir").DefValue = def
}
