package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// TestHealth: 0 for a 200 on /healthz, 1 for any other status, an unreachable target or one too
// slow, 2 for a bad command line; an https target with its own CA needs --cacert or --insecure.
func TestHealth(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	}))
	defer ok.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(time.Second) }))
	defer slow.Close()
	// Nothing listens on port 1: a closed test server's port may be taken by another test's
	// server meanwhile (it once answered 400 here).
	const gone = "http://127.0.0.1:1"

	ca := testenv.NewCA(t, "health CA")
	secure := tlsSeller(t, ca, nil)

	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"healthy":              {[]string{"--target", ok.URL}, 0, "healthy: GET " + ok.URL + "/healthz answered 200 OK"},
		"503":                  {[]string{"--target", down.URL}, 1, "answered 503"},
		"unreachable":          {[]string{"--target", gone}, 1, "connection refused"},
		"too slow":             {[]string{"--target", slow.URL, "--timeout", "100ms"}, 1, "Timeout"},
		"not a URL":            {[]string{"--target", "127.0.0.1:8080"}, 2, "want an http:// or https:// URL"},
		"private CA":           {[]string{"--target", secure.URL}, 1, "--cacert"},
		"private CA, cacert":   {[]string{"--target", secure.URL, "--cacert", ca.File}, 0, "healthy"},
		"private CA, insecure": {[]string{"--target", secure.URL, "--insecure"}, 0, "healthy"},
	} {
		t.Run(name, func(t *testing.T) {
			out, code, err := runCLI(t, append([]string{"health"}, tc.args...)...)
			got := out
			if err != nil {
				got += err.Error()
			}
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Fatalf("exit %d, %q; want %d and %q", code, got, tc.code, tc.want)
			}
		})
	}
}
