package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/server"
)

// TestBuildInfo: the build's version is in /readyz and, with its commit, in fsctl_build_info.
func TestBuildInfo(t *testing.T) {
	e := newEnvWith(t, envOptions{Quantity: 1, Limit: 1, Tune: func(c *server.Config) {
		c.Version, c.Commit = "v9.9.9-test", "0123abcd"
	}})
	if _, body := e.do(http.MethodGet, "/metrics", "", nil, nil); !strings.Contains(body, `fsctl_build_info{commit="0123abcd",version="v9.9.9-test"} 1`) {
		t.Errorf("/metrics has no build info:\n%s", grepLines(body, "build_info"))
	}
	if _, body := e.do(http.MethodGet, "/readyz", "", nil, nil); !strings.Contains(body, `"version":"v9.9.9-test"`) {
		t.Errorf("/readyz: %s", body)
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
