package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/net/http/httpguts"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/platform/reach"
)

// Variables of blast's metrics export. The receiver's address may carry a password and a header
// a token: --help shows the address without its password and a header without its value.
const (
	envMetricsRemoteWrite = "FSCTL_METRICS_REMOTE_WRITE"
	envMetricsHeader      = "FSCTL_METRICS_HEADER" // one header a line
)

// metricsFlags are blast's --metrics-* flags: where and how often the burst pushes its metrics.
type metricsFlags struct {
	url      string
	interval time.Duration
	header   headerFlag
}

func (m *metricsFlags) bind(f *pflag.FlagSet) {
	addressString(f, &m.url, "metrics-remote-write", os.Getenv(envMetricsRemoteWrite), "push the burst's metrics while it runs to this Prometheus "+
		"remote-write `URL` (e.g. http://prometheus:9090/api/v1/write; Mimir, Grafana Cloud and VictoriaMetrics too; env "+envMetricsRemoteWrite+")")
	f.DurationVar(&m.interval, "metrics-interval", blast.DefaultMetricsInterval, "with --metrics-remote-write, the time between pushes")
	m.header.fromEnv(os.Getenv(envMetricsHeader))
	f.Var(&m.header, "metrics-header", "with --metrics-remote-write, send this `header` (\"Name: value\") with every push, e.g. the "+
		"Authorization of a hosted receiver; repeatable (env "+envMetricsHeader+", one a line); a value is never printed")
	markSecret(f, "metrics-header")
}

// remoteWrite is the export the flags ask for, or a usage error naming the flag; none without
// --metrics-remote-write.
func (m metricsFlags) remoteWrite() (blast.RemoteWrite, error) {
	if m.url == "" {
		return blast.RemoteWrite{}, nil
	}
	if u, err := url.Parse(m.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return blast.RemoteWrite{}, fmt.Errorf("--metrics-remote-write %q: want an http:// or https:// URL", reach.Redact(m.url))
	}
	if m.interval <= 0 {
		return blast.RemoteWrite{}, fmt.Errorf("--metrics-interval %s: must be positive", m.interval)
	}
	if err := m.header.err; err != nil {
		return blast.RemoteWrite{}, fmt.Errorf("%s: %w", m.header.from, err)
	}
	return blast.RemoteWrite{URL: m.url, Interval: m.interval, Header: m.header.h}, nil
}

// headerFlag is --metrics-header: repeatable "Name: value" pairs whose values, tokens as a rule,
// never show: String (and so the default --help prints) names the headers only, and a bad
// header is reported by remoteWrite without it, since pflag would quote what Set refused.
type headerFlag struct {
	h http.Header
	// given says a flag replaced the headers from the environment; err is the first bad header
	// and from where it came.
	given bool
	err   error
	from  string
}

// fromEnv takes the headers of the environment variable, one a line.
func (f *headerFlag) fromEnv(v string) {
	for line := range strings.Lines(v) {
		if line = strings.TrimSpace(line); line != "" {
			f.add(line, envMetricsHeader)
		}
	}
}

func (f *headerFlag) add(v, from string) {
	name, value, ok := strings.Cut(v, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || !httpguts.ValidHeaderFieldName(name) || value == "" || !httpguts.ValidHeaderFieldValue(value) {
		if f.err == nil {
			f.err, f.from = errors.New(`want "Name: value", e.g. "Authorization: Bearer TOKEN" (what was given is not repeated: it may hold a secret)`), from
		}
		return
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(name, value)
}

// Set adds one header; the first flag replaces those of the environment.
func (f *headerFlag) Set(v string) error {
	if !f.given {
		f.h, f.err, f.given = nil, nil, true
	}
	f.add(v, "--metrics-header")
	return nil
}

// Redacted is String, which already hides the values: markSecret shows it in --help.
func (f *headerFlag) Redacted() string { return f.String() }

// String names the headers set, with their values hidden.
func (f *headerFlag) String() string {
	var names []string
	for name := range f.h {
		names = append(names, name+": xxxxx")
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Type is what --help calls the value when the usage names none.
func (f *headerFlag) Type() string { return "header" }
