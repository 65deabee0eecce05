package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
)

// The development secrets: docker-compose.yml's and the local stack's when FSCTL_JWT_SECRET and
// FSCTL_ADMIN_TOKEN are unset. Both are public (this repository), so Validate refuses them on an
// address other machines reach.
const (
	DevJWTSecret  = "fsctl-local-dev-secret-do-not-use-in-production"
	DevAdminToken = "local-operator-token-change-me"
)

// The roles an instance runs (`fsctl serve --role`).
const (
	RoleAPI         = "api"
	RoleConsumer    = "consumer"
	RoleReservation = "reservation"
)

// Settings are what an operator gives one instance (`fsctl serve`'s flags), as the rules of
// Validate see them before anything is opened.
type Settings struct {
	// Roles are RoleAPI, RoleConsumer or RoleReservation.
	Roles []string
	// Addr is the API's listen address.
	Addr string
	// ReadModel is ReadModelEvents or ReadModelPoll.
	ReadModel string
	// SoldOut is a SoldOutMode as written (ParseSoldOutMode).
	SoldOut string
	// Lifecycle holds the payment timeout, the jobs' intervals and the ages the operator set;
	// LifecycleConfig lays them over lifecycle.DefaultConfig.
	Lifecycle lifecycle.Config
	// IdemTTL is how long a purchase's answer is kept under its Idempotency-Key.
	IdemTTL time.Duration
	// TLSCertFile and TLSKeyFile go together.
	TLSCertFile, TLSKeyFile string
	// JWTSecret and AdminToken are checked against the development ones (DevJWTSecret,
	// DevAdminToken); AdminToken, when set, for its length too.
	JWTSecret, AdminToken string
	// InsecureDevSecrets allows the development secrets beyond loopback (a test).
	InsecureDevSecrets bool
}

// SettingError is a setting Validate refuses, its message naming the flag. Usage marks one the
// command line got wrong on its face (fsctl exits 2); the others end the start as a failure
// (exit 1), as fsctl serve has always answered them.
type SettingError struct {
	Err   error
	Usage bool
}

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

func refused(err error) error { return &SettingError{Err: err} }
func misused(err error) error { return &SettingError{Err: err, Usage: true} }

// CheckRoles refuses a role that is none of RoleAPI, RoleConsumer and RoleReservation.
func CheckRoles(roles []string) error {
	for _, r := range roles {
		if r != RoleAPI && r != RoleConsumer && r != RoleReservation {
			return refused(fmt.Errorf("--role %q: must be api, consumer or reservation", r))
		}
	}
	return nil
}

// minClaimAge is the shortest --sale-claim-age: a purchase may take that long between its claim
// and its reserve.
const minClaimAge = 5 * time.Second

// Validate checks the settings of an instance of the api and consumer roles, in the order fsctl
// serve always has: the first refusal is a *SettingError.
func (s Settings) Validate() error {
	if err := CheckRoles(s.Roles); err != nil {
		return err
	}
	if s.ReadModel != ReadModelEvents && s.ReadModel != ReadModelPoll {
		return misused(fmt.Errorf("--read-model %q: must be events or poll", s.ReadModel))
	}
	if _, err := ParseSoldOutMode(s.SoldOut); err != nil {
		return refused(fmt.Errorf("--sold-out-flag: %w", err))
	}
	if lc := s.Lifecycle; lc.PaymentTimeout <= 0 || lc.ExpiryInterval <= 0 || lc.SweepInterval <= 0 {
		return refused(errors.New("--payment-timeout, --expiry-interval and --sweep-interval must be positive"))
	}
	if s.IdemTTL < time.Minute {
		return refused(fmt.Errorf("--idempotency-ttl %s: use at least 1m, and longer than a buyer keeps retrying (a retry after it is a fresh attempt)", s.IdemTTL))
	}
	if (s.TLSCertFile == "") != (s.TLSKeyFile == "") {
		return misused(errors.New("--tls-cert and --tls-key go together: the certificate and its private key"))
	}
	if err := s.checkDevSecrets(); err != nil {
		return misused(err)
	}
	if s.AdminToken != "" && len(s.AdminToken) < 16 {
		return refused(fmt.Errorf("--admin-token is %d characters; use at least 16 (e.g. openssl rand -hex 16)", len(s.AdminToken)))
	}
	if age := s.Lifecycle.ClaimAge; age < minClaimAge {
		return refused(fmt.Errorf("--sale-claim-age %s is shorter than a purchase may take between its claim and its reserve; use 5s or more (default %s)", age, lifecycle.DefaultConfig().ClaimAge))
	}
	return nil
}

// LifecycleConfig is lifecycle.DefaultConfig with the payment timeout, the intervals and the ages
// of the settings.
func (s Settings) LifecycleConfig() lifecycle.Config {
	lc := lifecycle.DefaultConfig()
	lc.PaymentTimeout, lc.ExpiryInterval, lc.SweepInterval = s.Lifecycle.PaymentTimeout, s.Lifecycle.ExpiryInterval, s.Lifecycle.SweepInterval
	lc.OrphanAge, lc.ClaimTimeout, lc.ClaimAge = s.Lifecycle.OrphanAge, s.Lifecycle.ClaimTimeout, s.Lifecycle.ClaimAge
	return lc
}

// checkDevSecrets refuses the development JWT secret or admin token on an address other machines
// reach, unless InsecureDevSecrets says the instance is a test: both are public, so with them
// anyone who reaches the port mints buyers or pauses the sale. A consumer-only instance listens
// on nothing.
func (s Settings) checkDevSecrets() error {
	var dev []string
	if s.JWTSecret == DevJWTSecret {
		dev = append(dev, "the development JWT secret (set FSCTL_JWT_SECRET or --jwt-secret)")
	}
	if s.AdminToken == DevAdminToken {
		dev = append(dev, "the development admin token (set FSCTL_ADMIN_TOKEN or --admin-token)")
	}
	if len(dev) == 0 || s.InsecureDevSecrets || Loopback(s.Addr) || !slices.Contains(s.Roles, RoleAPI) {
		return nil
	}
	return fmt.Errorf("refusing to serve on %s, beyond this machine, with %s; "+
		"or listen on loopback (--addr 127.0.0.1:8080), or pass --insecure-dev-secrets for a test", s.Addr, strings.Join(dev, " and "))
}

// Validate checks the connection caps and the purchase deadline: the first refusal is a
// *SettingError naming the flag.
func (c Config) Validate() error {
	if c.MaxConns < 0 || c.ShedConns < 0 {
		return refused(errors.New("--max-conns and --shed-conns must not be negative"))
	}
	if d := c.PurchaseDeadline; d < 0 || d > 0 && d < time.Second {
		return misused(fmt.Errorf("--purchase-deadline %s: give at least 1s (a purchase's Redis and Kafka round trips need that much under load), or 0 for none", d))
	}
	return nil
}

// CrashAfterReserveFromEnv reads Config.CrashAfterReserve from EnvCrashAfterReserve; set says the
// variable is (a game day armed the fault). A value that is not a count is refused.
func CrashAfterReserveFromEnv() (n int, set bool, err error) {
	v := os.Getenv(EnvCrashAfterReserve)
	if v == "" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, true, fmt.Errorf("%s=%q: want a count of reservations", EnvCrashAfterReserve, v)
	}
	return n, true, nil
}

// Loopback reports whether a listen address only this machine reaches: a loopback IP or
// localhost. An empty host (":8080") listens on every interface.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
