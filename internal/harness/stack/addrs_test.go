package stack

import (
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/fsctl/fsctl/internal/platform/reach"
)

// TestDefaultAddrsAreTheEndpoints: every address of the default endpoints is one of DefaultAddrs,
// so a message about it suggests `fsctl stack up`; a port beside them does not.
func TestDefaultAddrsAreTheEndpoints(t *testing.T) {
	e := DefaultEndpoints()
	var addrs []string
	for _, raw := range []string{e.RedisURL, e.PostgresURL, e.RedisClusterURL} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, u.Host)
	}
	addrs = append(append(addrs, e.KafkaBrokers...), e.KafkaClusterBrokers...)
	refused := os.NewSyscallError("connect", syscall.ECONNREFUSED)
	for _, a := range addrs {
		if h := reach.Hint(reach.Unreachable("x", a, refused), DefaultAddrs()); !strings.Contains(h, "fsctl stack up") {
			t.Errorf("%s: hint %q", a, h)
		}
	}
	if h := reach.Hint(reach.Unreachable("x", "127.0.0.1:5432", refused), DefaultAddrs()); strings.Contains(h, "stack up") {
		t.Errorf("127.0.0.1:5432: hint %q", h)
	}
}
