// Command fsctl is the flash-sale operator CLI and load-test harness: it runs the reference checkout
// server, the local service stack, sale set-up and the burst tools. This package only wires flags to
// the packages that do the work; exit codes are decided here, once.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/reach"
)

// quietRedis drops go-redis's own log lines ("connection pool: failed to dial ..."): every failure
// they describe also comes back as an error to the caller, which reports it with its context.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quietRedis{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startCPUProfile(os.Getenv(envCPUProfile))
	code, err := execute(ctx, newRootCmd())
	stopProfile()
	stop()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "fsctl:", err)
	os.Exit(code)
}

// execute runs root's command line and returns its exit status (exit.go) with its error.
func execute(ctx context.Context, root *cobra.Command) (int, error) {
	var ran bool
	trackRuns(root, &ran)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0, nil
	}
	// A service that did not answer gets the advice that fits where it is: `fsctl stack up` for
	// the local stack's own addresses only.
	return exitCode(err, ran), reach.WithHint(err, stack.DefaultAddrs())
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "fsctl",
		Short:         "Operate, load-test and verify flash sales",
		Long:          "fsctl runs the reference flash-sale checkout server and the local Redis/PostgreSQL/Kafka stack,\nsets up sales, and fires synchronized bursts of buyers at a checkout to prove it never oversells.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       currentBuild().String(),
	}
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newServeCmd(),
		newHealthCmd(),
		newStackCmd(),
		newMigrateCmd(),
		newSaleCmd(),
		newTokenCmd(),
		newDemoCmd(),
		newPaymentsCmd(),
		newBlastCmd(newBlastMergeCmd()),
		newPreflightCmd(),
		newReconcileCmd(),
		newWarroomCmd(),
		newGamedayCmd(),
		newProfileCmd(),
		newVersionCmd(),
		newDocsGenCmd(),
	)
	attachCompleters(root)
	return root
}

// envCPUProfile names a file that receives a CPU profile of the whole command (any command; for
// the server's own listener see serve --debug-addr): FSCTL_CPUPROFILE=blast.pprof fsctl blast ...
const envCPUProfile = "FSCTL_CPUPROFILE"

func startCPUProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fsctl: %s=%s: %v (no profile written)\n", envCPUProfile, path, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}
