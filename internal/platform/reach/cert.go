package reach

import (
	"crypto/x509"
	"errors"
)

// CertKind is why a client refused a server's certificate.
type CertKind int

// The certificate refusals an operator can act on.
const (
	// Untrusted: signed by an authority the client was not given.
	Untrusted CertKind = iota + 1
	// Expired: past its NotAfter (or before its NotBefore: the clock).
	Expired
	// WrongName: not issued for the name the client dialled.
	WrongName
	// Invalid: any other reason x509 gives (not a server certificate, a broken chain).
	Invalid
)

// Cert is why the TLS handshake of err failed on the server's certificate: its kind and, in
// words, what is wrong ("the certificate has expired or is not valid yet (current time ...)").
// ok is false when err is not a certificate refusal.
func Cert(err error) (kind CertKind, what string, ok bool) {
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
	)
	switch {
	case errors.As(err, &unknownCA):
		return Untrusted, "the certificate is signed by an authority this client does not trust", true
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return Expired, "the certificate has expired or is not valid yet (" + invalid.Detail + ")", true
	case errors.As(err, &invalid):
		return Invalid, "the certificate is not valid: " + invalid.Error(), true
	case errors.As(err, &hostname):
		return WrongName, "the certificate is not for " + hostname.Host, true
	}
	return 0, "", false
}

// caFix says where each service's client takes the CA and the name to check.
var caFix = map[string][2]string{
	"redis":    {"give the CA file that signed it (?ca=FILE in the URL, or FSCTL_REDIS_CA)", "give a name the certificate holds (?server_name=NAME, or FSCTL_REDIS_SERVER_NAME)"},
	"postgres": {"give the CA file that signed it (sslrootcert=FILE in the URL, with sslmode=verify-full)", "connect by a name the certificate holds"},
	"kafka":    {"give --kafka-ca (FSCTL_KAFKA_CA) the CA file that signed it", "give --kafka-server-name (FSCTL_KAFKA_SERVER_NAME) a name the certificate holds"},
}

// CertFix is what to do about a certificate refusal met while reaching service (redis, postgres,
// kafka): renew an expired one, else where that service's client takes the CA or the name.
func CertFix(service string, kind CertKind) string {
	fix, known := caFix[service]
	switch {
	case kind == Expired:
		return "renew it (the local stack: fsctl stack up --secure --renew), and check this machine's clock"
	case kind == Untrusted && known:
		return fix[0]
	case kind == WrongName && known:
		return fix[1]
	case kind == Invalid:
		return "have it reissued as a server certificate its CA signed"
	}
	return "give the client the CA that signed it and a name the certificate holds"
}
