package benchmarks

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fsctl/fsctl/loadgen"
)

// noContent answers 204 to every request, over whatever protocol it came.
var noContent = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

// BenchmarkBlastHTTPVersions releases the same burst through each engine and HTTP version fsctl
// blast has, one after the other in one run, against trivial in-process endpoints (204): plain
// text speaking HTTP/1.1 and h2c (as fsctl serve does), and TLS offering h2 and HTTP/1.1. It
// reports each one's requests per second from the release to the last answer, and h2's over
// HTTP/1.1's on the same transport, the ratio to read: server and generator share the CPUs.
func BenchmarkBlastHTTPVersions(b *testing.B) {
	plain := httptest.NewUnstartedServer(noContent)
	plain.Config.Protocols = new(http.Protocols)
	plain.Config.Protocols.SetHTTP1(true)
	plain.Config.Protocols.SetUnencryptedHTTP2(true)
	plain.Start()
	defer plain.Close()
	secure := httptest.NewUnstartedServer(noContent)
	secure.EnableHTTP2 = true
	secure.StartTLS()
	defer secure.Close()
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	tlsCfg := &tls.Config{RootCAs: roots}

	n := envInt(b, "BLAST_BENCH_REQUESTS", defaultRequests)
	conns := envInt(b, "BLAST_BENCH_CONNS", defaultConns)
	runs := []struct {
		metric, base, engine, version, proto string
	}{
		{"raw-req/s", plain.URL, loadgen.EngineRaw, loadgen.HTTP1, "HTTP/1.1"},
		{"http1-req/s", plain.URL, loadgen.EngineHTTP, loadgen.HTTP1, "HTTP/1.1"},
		{"h2c-req/s", plain.URL, loadgen.EngineHTTP, loadgen.HTTP2, "h2c"},
		{"tls-http1-req/s", secure.URL, loadgen.EngineHTTP, loadgen.HTTP1, "HTTP/1.1 over TLS"},
		{"h2-req/s", secure.URL, loadgen.EngineHTTP, loadgen.HTTPAuto, "h2"},
	}
	rates := make([]float64, len(runs))
	for b.Loop() {
		for i, r := range runs {
			p := benchPlan(r.base, n, conns)
			p.Engine, p.HTTP, p.TLS = r.engine, r.version, tlsCfg
			p.At = time.Now().Add(time.Second + time.Duration(n)*40*time.Microsecond)
			res := runBlast(b, p)
			if got := res.Records[0].Protocol(); got != r.proto {
				b.Fatalf("%s: answered over %s, want %s", r.metric, got, r.proto)
			}
			done := make([]time.Time, 0, n+1)
			for _, rec := range res.Records {
				done = append(done, rec.Done)
			}
			rates[i] += float64(n) / span(append(done, res.Released)).Seconds()
		}
	}
	for i, r := range runs {
		rates[i] /= float64(b.N)
		b.ReportMetric(rates[i], r.metric)
	}
	b.ReportMetric(rates[2]/rates[1], "h2c/http1")
	b.ReportMetric(rates[4]/rates[3], "h2/tls-http1")
	b.ReportMetric(rates[2]/rates[0], "h2c/raw")
}
