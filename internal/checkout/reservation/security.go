package reservation

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Security protects the reservation service's port: TLS, and a shared token every call carries.
// The zero value is plaintext without a token, for a private network only.
//
// The token is checked on every call but the health service's, which load balancers and
// Kubernetes probes call without one (it says only whether the service serves). The API's
// readiness check makes one call that needs the token as well, so a wrong token shows on /readyz
// rather than as failed purchases.
type Security struct {
	// CertFile and KeyFile are the service's TLS certificate (PEM, the chain) and key; with them
	// the service speaks TLS only.
	CertFile, KeyFile string
	// CAFile is the PEM certificate the client verifies the service's certificate against; with
	// it the client speaks TLS. TLS says whether it speaks TLS against the system's roots instead.
	CAFile string
	TLS    bool
	// Token, when set, is the shared secret: the service refuses calls without it, the client
	// sends it (as "authorization: Bearer TOKEN") on every call.
	Token string
}

// ServerOptions are the grpc.Server options that apply s.
func (s Security) ServerOptions() ([]grpc.ServerOption, error) {
	var opts []grpc.ServerOption
	switch {
	case s.CertFile != "" && s.KeyFile != "":
		creds, err := credentials.NewServerTLSFromFile(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("reservation service TLS: %w", err)
		}
		opts = append(opts, grpc.Creds(creds))
	case s.CertFile != "" || s.KeyFile != "":
		return nil, errors.New("reservation service TLS needs both a certificate and its key")
	}
	if s.Token != "" {
		want := "Bearer " + s.Token
		opts = append(opts,
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
				if err := checkToken(ctx, info.FullMethod, want); err != nil {
					return nil, err
				}
				return next(ctx, req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
				if err := checkToken(ss.Context(), info.FullMethod, want); err != nil {
					return err
				}
				return next(srv, ss)
			}))
	}
	return opts, nil
}

// healthPrefix is the health service's method prefix: the calls that need no token.
var healthPrefix = "/" + healthpb.Health_ServiceDesc.ServiceName + "/"

// errBadToken is what a call without the service's token gets.
var errBadToken = status.Error(codes.Unauthenticated,
	"missing or wrong token: give the API the service's token (--grpc-token / FSCTL_GRPC_TOKEN)")

func checkToken(ctx context.Context, method, want string) error {
	if strings.HasPrefix(method, healthPrefix) {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, got := range md.Get("authorization") {
		if subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 {
			return nil
		}
	}
	return errBadToken
}

// dialOptions are the grpc.NewClient options that apply s.
func (s Security) dialOptions() ([]grpc.DialOption, error) {
	creds := insecure.NewCredentials()
	switch {
	case s.CAFile != "":
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reservation service CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("reservation service CA %s: no PEM certificate in it", s.CAFile)
		}
		creds = credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	case s.TLS:
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if s.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: s.Token, secure: s.CAFile != "" || s.TLS}))
	}
	return opts, nil
}

// bearer sends the token with every call.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity lets a token travel in plaintext only when the client was not given
// TLS at all (a private network, said so by the operator's flags); with TLS it never does.
func (b bearer) RequireTransportSecurity() bool { return b.secure }
