// Package reach says how fsctl words a service's address for a person: without its password
// (Redact), and, when nothing answers there, in one line that names the address once, gives the
// cause and a hint that fits where the address points (Unreachable, Hint).
package reach

import (
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Redact is the one way an address is shown: a password it carries (in the userinfo, in a
// password query parameter, or in a key=value DSN) becomes xxxxx; a user is shown as it is, and an
// address without a password is shown unchanged (nothing is invented).
func Redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return dsnPassword.ReplaceAllString(raw, "${1}xxxxx")
	}
	// The userinfo ends at an @; a user never holds / ? or #, so an @ after one of them is in the
	// path or the query. A password may hold any of them, and an @, when a person types it
	// unescaped: it is taken to run to the last @, so that it is hidden whole even then (at worst
	// an @ in the query hides the host too).
	if first := strings.Index(rest, "@"); first >= 0 {
		user, _, hasPW := strings.Cut(rest[:first], ":")
		if hasPW && !strings.ContainsAny(user, "/?#") {
			rest = user + ":xxxxx" + rest[strings.LastIndex(rest, "@"):]
		}
	}
	return scheme + "://" + queryPassword.ReplaceAllString(rest, "${1}xxxxx")
}

var (
	// queryPassword is a URL query parameter holding a password (libpq's password, sslpassword).
	queryPassword = regexp.MustCompile(`(?i)([?&][a-z_]*password=)[^&#]*`)
	// dsnPassword is the password of a key=value DSN (host=... password=...), quoted or not.
	dsnPassword = regexp.MustCompile(`(?i)(\b[a-z_]*password\s*=\s*)('(?:\\.|[^'])*'|\S+)`)
)

// Error is a service that could not be reached, or that answered a connection with a refusal
// (a wrong password, a missing database). It wraps the client's error, so errors.Is and errors.As
// still see it, and it says the address once: the client's own text repeats it for every attempt.
type Error struct {
	Service string // what was being reached: "postgres", "redis", "kafka"
	Addr    string // where, as shown to a person: host:port, several comma separated, with a /database
	Err     error
}

// Unreachable is the error of a failed connection to service at addr.
func Unreachable(service, addr string, err error) *Error {
	return &Error{Service: service, Addr: addr, Err: err}
}

func (e *Error) Error() string {
	if _, what, ok := Cert(e.Err); ok {
		return e.Service + " " + e.Addr + ": TLS: " + what
	}
	if e.answered() {
		return e.Service + " " + e.Addr + ": " + cause(e.Err)
	}
	return e.Service + " " + e.Addr + " unreachable: " + cause(e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// answered: the server answered the connection (a PostgreSQL error has an SQLSTATE, a Redis
// error is the server's reply: WRONGPASS, NOAUTH, NOPERM), so starting it or checking the network
// is not what to do.
func (e *Error) answered() bool {
	var pg interface{ SQLState() string }
	var rd interface{ RedisError() }
	return errors.As(e.Err, &pg) || errors.As(e.Err, &rd)
}

// cause is what went wrong, in one line and without the address (the Error says it).
func cause(err error) string {
	var pg interface {
		error
		SQLState() string
	}
	var dns *net.DNSError
	var op *net.OpError
	var sys *os.SyscallError
	switch {
	case err == nil:
		return "no address to try"
	case errors.As(err, &pg):
		return pg.Error()
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "unknown host"
		}
		return "host name lookup failed: " + dns.Err
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "no answer in time"
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.As(err, &sys):
		return sys.Err.Error()
	case errors.As(err, &op):
		return op.Err.Error()
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

// Hint is what to do about err when it is (or wraps) an Error for an address that did not answer:
// start the local stack when every address is one of stack (its services' host:port), else check
// the address; for a server certificate the client refused, where to give the CA or that it must
// be renewed. It is "" for an address that answered and for any other error.
func Hint(err error, stack []string) string {
	var e *Error
	if !errors.As(err, &e) {
		return ""
	}
	if kind, _, ok := Cert(e.Err); ok {
		return CertFix(e.Service, kind)
	}
	if e.answered() {
		return ""
	}
	if Local(e.Addr, stack) {
		return "start the local stack: fsctl stack up"
	}
	return "check the address and that " + e.Service + " there accepts connections from this machine"
}

// Local reports whether every host:port of addr ("a:1,b:2/db") is one of stack's, localhost and
// 127.0.0.1 being one host.
func Local(addr string, stack []string) bool {
	addr, _, _ = strings.Cut(addr, "/")
	for _, hp := range strings.Split(addr, ",") {
		host, port, err := net.SplitHostPort(strings.TrimSpace(hp))
		if err != nil {
			return false
		}
		if host == "localhost" {
			host = "127.0.0.1"
		}
		if !slices.Contains(stack, net.JoinHostPort(host, port)) {
			return false
		}
	}
	return addr != ""
}

// WithHint is err with Hint's advice after it, for the last line a command prints; err itself
// when there is none.
func WithHint(err error, stack []string) error {
	h := Hint(err, stack)
	if h == "" {
		return err
	}
	return &hinted{err: err, hint: h}
}

type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() + "; " + h.hint }
func (h *hinted) Unwrap() error { return h.err }
