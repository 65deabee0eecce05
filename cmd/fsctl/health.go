package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/loadgen"
)

type healthOptions struct {
	target  string
	timeout time.Duration
	tls     loadgen.TLSFiles
}

func newHealthCmd() *cobra.Command {
	var o healthOptions
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check a checkout server is alive (GET /healthz): exit 0 when it answers 200, else 1",
		Long: `GET --target's /healthz once and exit 0 when it answers 200 within --timeout, 1 otherwise
(unreachable, timed out, any other status). The container image runs it as its health check:
distroless has no shell or curl, so the check is the binary itself. A server at its connection
limit still answers /healthz 200 (a busy instance is alive).

An https:// target is checked with the TLS flags fsctl blast takes: --cacert, --server-name, or
--insecure for the server's own certificate on 127.0.0.1.`,
		Example: `  fsctl health                                  # the local server, http://127.0.0.1:8080
  fsctl health --target https://127.0.0.1:8443 --insecure
  # docker-compose.yml: healthcheck: {test: ["CMD", "/usr/local/bin/fsctl", "health"]}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return checkHealth(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	bindTarget(f, &o.target, "http://127.0.0.1:8080", "base URL of the server")
	f.DurationVar(&o.timeout, "timeout", 3*time.Second, "bound on the whole check: connect, TLS and the answer")
	f.StringVar(&o.tls.CACert, "cacert", "", "PEM file of the authorities an https:// target's certificate must chain to, instead of the system's")
	f.StringVar(&o.tls.ServerName, "server-name", "", "name to check the target's certificate against, instead of the --target host")
	f.BoolVar(&o.tls.Insecure, "insecure", false, "do not verify the target's certificate (the server's own, reached on 127.0.0.1)")
	return cmd
}

// checkHealth is one GET of the target's /healthz: nil for a 200, an error saying what came
// back otherwise.
func checkHealth(ctx context.Context, out io.Writer, o healthOptions) error {
	if !strings.HasPrefix(o.target, "http://") && !strings.HasPrefix(o.target, "https://") {
		return usageError(fmt.Errorf("--target %q: want an http:// or https:// URL", o.target))
	}
	if o.timeout <= 0 {
		return usageError(fmt.Errorf("--timeout %s: must be positive", o.timeout))
	}
	tlsCfg, err := o.tls.Config()
	if err != nil {
		return usageError(err)
	}
	client := loadgen.NewClient(tlsCfg, loadgen.HTTPAuto, 1, o.timeout)
	defer client.CloseIdleConnections()
	url := strings.TrimRight(o.target, "/") + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usageError(fmt.Errorf("--target: %w", err))
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if hint := loadgen.TLSHint(err); hint != "" {
			return fmt.Errorf("unhealthy: %w: %s", err, hint)
		}
		return fmt.Errorf("unhealthy: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unhealthy: GET %s answered %s", url, resp.Status)
	}
	fmt.Fprintf(out, "healthy: GET %s answered %s in %s\n", url, resp.Status, time.Since(start).Round(time.Millisecond))
	return nil
}
