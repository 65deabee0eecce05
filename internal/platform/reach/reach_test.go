package reach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestRedact: a password never shows, and none is invented where there is none (a PostgreSQL
// URL with a user and no password showed as fsctl:xxxxx@).
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://:pw@a:1/0":            "redis://:xxxxx@a:1/0",
		"redis+cluster://u:pw@a:1,b:2": "redis+cluster://u:xxxxx@a:1,b:2",
		"redis://a:1/0":                "redis://a:1/0",
		"postgres://fsctl@127.0.0.1:15432/fsctl?sslmode=disable": "postgres://fsctl@127.0.0.1:15432/fsctl?sslmode=disable",
		"postgres://fsctl:pg@db:5432/fsctl":                      "postgres://fsctl:xxxxx@db:5432/fsctl",
		"postgres://fsctl:p/w?x@db/fsctl":                        "postgres://fsctl:xxxxx@db/fsctl",
		"postgres://db/fsctl?user=a&password=pg&sslmode=x":       "postgres://db/fsctl?user=a&password=xxxxx&sslmode=x",
		"host=db user=fsctl password=pg dbname=fsctl":            "host=db user=fsctl password=xxxxx dbname=fsctl",
		"host=db password='p g' dbname=fsctl":                    "host=db password=xxxxx dbname=fsctl",
		"https://grafana:rw@prom.example/api/v1/write":           "https://grafana:xxxxx@prom.example/api/v1/write",
		"https://user@prom.example/":                             "https://user@prom.example/",
		"127.0.0.1:9092":                                         "127.0.0.1:9092",
		"":                                                       "",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// sqlErr stands for a PostgreSQL error: the server answered.
type sqlErr struct{}

func (sqlErr) Error() string {
	return `FATAL: password authentication failed for user "fsctl" (SQLSTATE 28P01)`
}
func (sqlErr) SQLState() string { return "28P01" }

// TestUnreachableIsOneLine: the address once, the cause without it, one line, and the client's
// error still there for errors.Is.
func TestUnreachableIsOneLine(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	// pgx's shape: every attempt (TLS, then plain) repeats the address on a line of its own.
	pgx := fmt.Errorf("failed to connect to `user=fsctl database=fsctl`:\n\t127.0.0.2:1 (127.0.0.2): dial error: %w\n\t%w",
		refused, errors.New("127.0.0.2:1 (127.0.0.2): dial error: dial tcp 127.0.0.2:1: connect: connection refused"))
	for _, tc := range []struct {
		err  error
		want string
	}{
		{pgx, "postgres 127.0.0.2:1/fsctl unreachable: connection refused"},
		{&net.DNSError{Err: "no such host", Name: "db.invalid", IsNotFound: true}, "postgres 127.0.0.2:1/fsctl unreachable: unknown host"},
		{fmt.Errorf("timeout: %w", context.DeadlineExceeded), "postgres 127.0.0.2:1/fsctl unreachable: no answer in time"},
		{fmt.Errorf("connect: %w", sqlErr{}), `postgres 127.0.0.2:1/fsctl: FATAL: password authentication failed for user "fsctl" (SQLSTATE 28P01)`},
		{errors.New("odd\n\tmany lines"), "postgres 127.0.0.2:1/fsctl unreachable: odd many lines"},
	} {
		err := Unreachable("postgres", "127.0.0.2:1/fsctl", tc.err)
		if err.Error() != tc.want {
			t.Errorf("%q, want %q", err.Error(), tc.want)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%v does not wrap the client's error", err)
		}
	}
}

// TestHintFits: `fsctl stack up` only for the local stack's own addresses; elsewhere, check the
// address; nothing for a server that answered or an error that is no Error.
func TestHintFits(t *testing.T) {
	stack := []string{"127.0.0.1:15432", "127.0.0.1:16379", "127.0.0.1:17000", "127.0.0.1:17001"}
	refused := os.NewSyscallError("connect", syscall.ECONNREFUSED)
	for _, tc := range []struct {
		addr string
		err  error
		want string
	}{
		{"127.0.0.1:15432/fsctl", refused, "fsctl stack up"},
		{"localhost:16379", refused, "fsctl stack up"},
		{"127.0.0.1:17000,127.0.0.1:17001", refused, "fsctl stack up"},
		{"127.0.0.1:17000,db:17001", refused, "check the address"},
		{"127.0.0.2:15432/fsctl", refused, "check the address"},
		{"127.0.0.1:5432/fsctl", refused, "check the address"},
		{"db.internal:15432/fsctl", refused, "check the address"},
		{"127.0.0.1:15432/fsctl", sqlErr{}, ""},
	} {
		err := fmt.Errorf("sale list: %w", Unreachable("postgres", tc.addr, tc.err))
		got := Hint(err, stack)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s (%v): hint %q, want %q", tc.addr, tc.err, got, tc.want)
		}
		if h := WithHint(err, stack); tc.want != "" && (h.Error() != err.Error()+"; "+got || !errors.Is(h, tc.err)) {
			t.Errorf("WithHint: %v", h)
		}
	}
	if plain := errors.New("x"); Hint(plain, stack) != "" || WithHint(plain, stack) != plain {
		t.Error("a hint for an error that names no address")
	}
}

// FuzzRedact: whatever the password holds (an @, a /, a ?), it never shows, and an address
// without one comes back unchanged.
func FuzzRedact(f *testing.F) {
	f.Add("fsctl", "pg-secret", "db.internal:5432", "/fsctl?sslmode=disable")
	f.Add("", "p/w?x@y", "a:1,b:2", "")
	f.Add("u", "p:w#z", "h", "/0")
	f.Fuzz(func(t *testing.T, user, pw, host, tail string) {
		if strings.ContainsAny(user, "@:/?#") || strings.ContainsAny(host, "@/?#") || strings.ContainsAny(tail, "@") ||
			(tail != "" && !strings.ContainsAny(tail[:1], "/?#")) || len(pw) < 4 || strings.Contains("postgres://"+user+":xxxxx@"+host+tail, pw) ||
			strings.Contains(strings.ToLower(tail), "password") {
			t.Skip()
		}
		raw := "postgres://" + user + ":" + pw + "@" + host + tail
		if got := Redact(raw); strings.Contains(got, pw) {
			t.Errorf("Redact(%q) = %q shows the password", raw, got)
		}
		if raw := "postgres://" + user + "@" + host + tail; user != "" && Redact(raw) != raw {
			t.Errorf("Redact(%q) = %q: changed an address without a password", raw, Redact(raw))
		}
	})
}
