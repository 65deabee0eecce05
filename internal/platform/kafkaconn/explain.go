package kafkaconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/platform/reach"
)

// Error is a Kafka failure said the way an operator can act on: which brokers, what failed, what
// to fix, on one line. It wraps the cause, so errors.Is and errors.As still see it.
type Error struct {
	Brokers string
	What    string
	Fix     string
	Err     error
}

func (e *Error) Error() string {
	msg := "kafka " + e.Brokers + ": " + e.What
	if e.Fix != "" {
		msg += ": " + e.Fix
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Unreachable is err, met while reaching the brokers, said on one line: where TLS or SASL failed,
// as Explain says it; else as package reach says any service that did not answer (the address
// once, the cause, and the hint that fits where the command ends).
func (c Conn) Unreachable(err error) error {
	if e := c.Explain(err); e != err {
		return e
	}
	return reach.Unreachable("kafka", strings.Join(c.Brokers, ","), err)
}

// Explain turns an error met while talking to the brokers into an *Error that says what failed
// (a refused login, an unknown CA, an expired or misnamed certificate, a plaintext/TLS mismatch,
// nothing listening) and what to fix. Errors it does not recognise are returned as they are; nil
// stays nil, and an *Error is not explained twice.
func (c Conn) Explain(err error) error {
	if err == nil {
		return nil
	}
	if _, done := errors.AsType[*Error](err); done {
		return err
	}
	what, fix := c.diagnose(err)
	if what == "" {
		return err
	}
	return &Error{Brokers: strings.Join(c.Brokers, ","), What: what, Fix: fix, Err: err}
}

// Lasting reports whether err is a refusal that waiting will not change: a certificate this
// client does not accept, a refused login, a mechanism or a protocol the listener does not speak.
// A start that waits for Kafka to come up stops on one within seconds; a broker that closed the
// connection or did not answer may be starting, and is waited for.
func (c Conn) Lasting(err error) bool {
	if err == nil {
		return false
	}
	if e, ok := errors.AsType[*Error](err); ok {
		err = e.Err
	}
	what, _ := c.diagnose(err)
	return what != "" && what != closed
}

// closed is what diagnose says of a connection the broker dropped, the one refusal that a
// broker still starting also gives.
const closed = "the broker closed the connection"

func (c Conn) diagnose(err error) (what, fix string) {
	var record tls.RecordHeaderError
	login := fmt.Sprintf("%s as %q", c.SASL.Mechanism, c.SASL.User)
	if kind, what, ok := reach.Cert(err); ok {
		return "TLS: the broker's " + strings.TrimPrefix(what, "the "), reach.CertFix("kafka", kind)
	}
	switch {
	case errors.As(err, &record):
		return "TLS: the broker answered in plaintext", "this is not a TLS listener: use the broker's SSL/SASL_SSL port, or drop --kafka-tls"
	case errors.Is(err, kafka.SASLAuthenticationFailed):
		return "SASL login refused (" + login + ")", "check the user (" + EnvUser + "), the password (" + EnvPassword + ") and the mechanism (--kafka-sasl)"
	case errors.Is(err, kafka.UnsupportedSASLMechanism):
		return "the broker does not offer SASL " + c.SASL.Mechanism, "ask its operator which mechanism the listener enables (--kafka-sasl " + mechanismSet + ")"
	case errors.Is(err, kafka.IllegalSASLState):
		return "the broker expects no SASL login on this listener", "drop --kafka-sasl, or use its SASL_SSL port"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		if !c.TLS.On() || c.SASL.Mechanism == "" {
			return closed, "it may expect TLS (--kafka-tls) or a SASL login (--kafka-sasl): match the listener's security protocol"
		}
		return closed, "check that this is its SASL_SSL listener"
	}
	return "", ""
}
