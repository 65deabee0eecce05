package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// The build's identity, set at build time by the Makefile and the Dockerfile:
//
//	-ldflags "-X main.version=$(git describe --tags --always --dirty) -X main.commit=$(git rev-parse HEAD) -X main.date=..."
//
// A plain `go build` leaves them empty but for version; buildInfo then falls back to what the Go
// toolchain stamped into the binary from git (vcs.revision, vcs.time), when it had a .git to read.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// buildInfo is the build's identity, as `fsctl version`, --version, /readyz and the server's
// fsctl_build_info metric report it.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Go      string `json:"go"`
}

// currentBuild is the build's identity: the -ldflags values, else the toolchain's vcs stamps,
// else "unknown" (a build without .git, such as a Docker build given no build args).
func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Date: date, Go: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.time" && b.Date == "":
				b.Date = s.Value
			}
		}
	}
	for _, f := range []*string{&b.Version, &b.Commit, &b.Date} {
		if *f == "" {
			*f = "unknown"
		}
	}
	return b
}

// String is the one line --version and `fsctl version` print.
func (b buildInfo) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s)", b.Version, b.Commit, b.Date, b.Go)
}

func newVersionCmd() *cobra.Command {
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print fsctl's version, git commit and build date",
		Example: `  fsctl version
  fsctl version -o json | jq -r .commit
  fsctl --version`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := currentBuild()
			return writeReport(cmd.OutOrStdout(), output, reportOf{v: b, render: func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "fsctl version %s\n", b)
				return err
			}})
		},
	}
	bindOutput(cmd.Flags(), &output, "the version")
	return cmd
}
