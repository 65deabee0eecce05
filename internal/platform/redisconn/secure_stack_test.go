package redisconn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// TestSecuredRedis reaches the secure stack's TLS-only Redis as its ACL user, once with the CA,
// user and password from FSCTL_REDIS_* and once from the address itself; without the CA the
// handshake fails.
func TestSecuredRedis(t *testing.T) {
	cfg, e := testenv.SecureStack(t)
	pw, err := stack.Secrets{Dir: cfg.Dir}.Password("redis")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ping := func(raw string) error {
		c, err := redisconn.Open(raw, redisconn.Tune{DialTimeout: 2 * time.Second, MaxRetries: -1})
		if err != nil {
			return err
		}
		defer c.Close()
		return redisconn.Check(ctx, c)
	}
	t.Setenv(redisconn.EnvCA, e.Credentials.CA)
	t.Setenv(redisconn.EnvUser, stack.SecureUser)
	t.Setenv(redisconn.EnvPassword, pw)
	if err := ping(e.RedisURL); err != nil {
		t.Errorf("from FSCTL_REDIS_*: %v", err)
	}
	for _, k := range []string{redisconn.EnvCA, redisconn.EnvUser, redisconn.EnvPassword} {
		t.Setenv(k, "")
	}
	own := strings.Replace(e.RedisURL, "rediss://", "rediss://"+stack.SecureUser+":"+pw+"@", 1) + "?ca=" + e.Credentials.CA
	if err := ping(own); err != nil {
		t.Errorf("from the address: %v", err)
	}
	if err := ping(strings.Replace(own, "?ca="+e.Credentials.CA, "", 1)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
}
