package redisconn

import (
	"strings"
	"testing"
)

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestSecurityParts: the address's own parameters win, FSCTL_REDIS_* complete what it leaves out,
// and TLS files on a plaintext address are refused.
func TestSecurityParts(t *testing.T) {
	defer func(old func(string) (string, bool)) { lookupEnv = old }(lookupEnv)
	lookupEnv = envMap(map[string]string{EnvUser: "envuser", EnvPassword: "env-pw", EnvServerName: "env.name"})

	a, err := Parse("rediss://127.0.0.1:16380/0?server_name=redis.internal&dial_timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	if o := a.single; o.TLSConfig == nil || o.TLSConfig.ServerName != "redis.internal" || o.Username != "envuser" || o.Password != "env-pw" || o.DialTimeout.String() != "2s" {
		t.Errorf("options %+v", o)
	}
	a, err = Parse("rediss+cluster://own:own-pw@a:7000,b:7000")
	if err != nil {
		t.Fatal(err)
	}
	if o := a.cluster; o.Username != "own" || o.Password != "own-pw" || o.TLSConfig.ServerName != "env.name" {
		t.Errorf("the URL's login must win over the environment's: %+v", o)
	}
	if !a.TLS() || !a.Authenticated() {
		t.Error("TLS and login not reported")
	}

	lookupEnv = envMap(nil)
	for raw, want := range map[string]string{
		"redis://127.0.0.1:6379/0?ca=/etc/ca.pem":              "need TLS",
		"rediss://127.0.0.1:6379/0?ca=/no/such/ca.pem":         "no such file",
		"rediss://127.0.0.1:6379/0?cert=/c.pem":                "cert and key go together",
		"rediss://:pw-s3cr3t@127.0.0.1:6379/0?ca=/no/such.pem": "xxxxx",
	} {
		_, err := Parse(raw)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pw-s3cr3t") {
			t.Errorf("Parse(%q) = %v, want an error saying %q without the password", raw, err, want)
		}
	}
	if a, _ := Parse("redis://127.0.0.1:6379/0"); a.TLS() || a.Authenticated() {
		t.Error("a plain address reported as secured")
	}
}
