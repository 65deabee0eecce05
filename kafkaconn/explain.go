package kafkaconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/reach"
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

func (c Conn) diagnose(err error) (what, fix string) {
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		record    tls.RecordHeaderError
	)
	login := fmt.Sprintf("%s as %q", c.SASL.Mechanism, c.SASL.User)
	switch {
	case errors.As(err, &unknownCA):
		return "TLS: the broker's certificate is signed by an authority this client does not trust",
			"give --kafka-ca (" + EnvCA + ") the CA file that signed it"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "TLS: the broker's certificate has expired or is not valid yet (" + invalid.Detail + ")",
			"renew it (the local stack: fsctl stack up --secure --renew), and check this machine's clock"
	case errors.As(err, &invalid):
		return "TLS: the broker's certificate is not valid: " + invalid.Error(), "renew it with a server certificate its CA signed"
	case errors.As(err, &hostname):
		return "TLS: the broker's certificate is not for " + hostname.Host,
			"give --kafka-server-name (" + EnvServerName + ") a name the certificate holds"
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
			return "the broker closed the connection", "it may expect TLS (--kafka-tls) or a SASL login (--kafka-sasl): match the listener's security protocol"
		}
		return "the broker closed the connection", "check that this is its SASL_SSL listener"
	}
	return "", ""
}
