package kafkaconn_test

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// TestRefusedCertificatesAreLasting: a broker's certificate that has expired, or that another CA
// signed, fails the dial on one line naming the broker, what is wrong and the fix, and is a
// refusal that waiting will not change (Lasting), so a start stops on it at once; a broker that
// closes the connection may be starting, and is waited for.
func TestRefusedCertificatesAreLasting(t *testing.T) {
	ca := testenv.NewCA(t, "brokers")
	tlsOn := func(cert, key string) string {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return listen(t, func(c net.Conn) { _ = tls.Server(c, &tls.Config{Certificates: []tls.Certificate{pair}}).Handshake() })
	}
	expired, valid := tlsOn(ca.Expired(t, "expired", "127.0.0.1")), tlsOn(ca.Server(t, "valid", "127.0.0.1"))
	closing := listen(t, func(net.Conn) {})
	other := testenv.NewCA(t, "someone else's")
	for _, tc := range []struct {
		name, broker, ca string
		says             []string
		lasting          bool
	}{
		{"expired", expired, ca.File, []string{"kafka " + expired + ": TLS: the broker's certificate has expired", "--renew"}, true},
		{"another CA", valid, other.File, []string{"does not trust", "--kafka-ca"}, true},
		{"closed", closing, ca.File, []string{"the broker closed the connection"}, false},
	} {
		c := kafkaconn.Conn{Brokers: []string{tc.broker}, TLS: kafkaconn.TLS{CA: tc.ca}}
		d, err := c.Dialer(3 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := d.DialContext(ctx, "tcp", tc.broker)
		cancel()
		if err == nil {
			_ = conn.Close()
			t.Fatalf("%s: the dial succeeded", tc.name)
		}
		err = c.Explain(err)
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: %q, want one line saying %q", tc.name, err, s)
			}
		}
		if c.Lasting(err) != tc.lasting {
			t.Errorf("%s: Lasting %v, want %v (%v)", tc.name, !tc.lasting, tc.lasting, err)
		}
	}
}

// listen serves each connection to a loopback port with serve, then closes it; it returns the
// port's host:port.
func listen(t *testing.T, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}
