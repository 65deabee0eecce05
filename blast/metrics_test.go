package blast_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// writeRequest is remote-write v1's WriteRequest, declared from Prometheus's prompb/remote.proto
// and types.proto (the fields blast sends), so the test decodes with the protobuf runtime and
// not with blast's own encoder.
var writeRequest = func() protoreflect.MessageDescriptor {
	field := func(name string, n int32, typ descriptorpb.FieldDescriptorProto_Type, msg string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: typ.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}
		if msg != "" {
			f.TypeName, f.Label = proto.String(".prometheus."+msg), descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
		}
		return f
	}
	msg := func(name string, fs ...*descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: fs}
	}
	const str, dbl, i64, sub = descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE,
		descriptorpb.FieldDescriptorProto_TYPE_INT64, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("remote_write_test.proto"), Package: proto.String("prometheus"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			msg("WriteRequest", field("timeseries", 1, sub, "TimeSeries")),
			msg("TimeSeries", field("labels", 1, sub, "Label"), field("samples", 2, sub, "Sample")),
			msg("Label", field("name", 1, str, ""), field("value", 2, str, "")),
			msg("Sample", field("value", 1, dbl, ""), field("timestamp", 2, i64, "")),
		},
	}, nil)
	if err != nil {
		panic(err)
	}
	return fd.Messages().ByName("WriteRequest")
}()

// sample is one decoded series: its labels and its one sample.
type sample struct {
	labels map[string]string
	value  float64
	ms     int64
}

// push is one request the receiver decoded.
type push []sample

// time is the push's sample time (every series of a push carries the same), in ms.
func (p push) time() int64 {
	if len(p) == 0 {
		return 0
	}
	return p[0].ms
}

// get is the value of the series named name whose labels include match ("k=v" each); -1 when
// none is.
func (p push) get(name string, match ...string) float64 {
	for _, s := range p {
		if s.labels["__name__"] != name {
			continue
		}
		ok := true
		for _, m := range match {
			k, v, _ := strings.Cut(m, "=")
			ok = ok && s.labels[k] == v
		}
		if ok {
			return s.value
		}
	}
	return -1
}

// receiver plays a remote-write receiver: it checks each push's headers, decodes it and keeps it.
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	pushes []push
	header http.Header
}

func startReceiver(t *testing.T) (*receiver, string) {
	t.Helper()
	rc := &receiver{t: t}
	hs := httptest.NewServer(rc)
	t.Cleanup(hs.Close)
	return rc, hs.URL + "/api/v1/write"
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p, err := decode(body)
	if err != nil {
		rc.t.Errorf("push: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.pushes = append(rc.pushes, p)
	rc.header = r.Header.Clone()
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) got() ([]push, http.Header) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.pushes), rc.header
}

// decode reads a snappy-compressed WriteRequest, refusing fields the schema does not have (a
// wrong field number or wire type shows there) and labels out of order.
func decode(body []byte) (push, error) {
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	req := dynamicpb.NewMessage(writeRequest)
	if err := proto.Unmarshal(raw, req); err != nil {
		return nil, fmt.Errorf("protobuf: %w", err)
	}
	fields := writeRequest.Fields()
	tsFields := fields.ByName("timeseries").Message().Fields()
	var out push
	list := req.Get(fields.ByName("timeseries")).List()
	for i := range list.Len() {
		ts := list.Get(i).Message()
		if len(ts.GetUnknown()) > 0 || len(req.GetUnknown()) > 0 {
			return nil, fmt.Errorf("fields outside the schema: %x", ts.GetUnknown())
		}
		s := sample{labels: map[string]string{}}
		var names []string
		ls := ts.Get(tsFields.ByName("labels")).List()
		for j := range ls.Len() {
			l := ls.Get(j).Message()
			name, value := l.Get(l.Descriptor().Fields().ByName("name")).String(), l.Get(l.Descriptor().Fields().ByName("value")).String()
			if _, dup := s.labels[name]; dup || value == "" {
				return nil, fmt.Errorf("label %q repeated or empty", name)
			}
			s.labels[name] = value
			names = append(names, name)
		}
		if !slices.IsSorted(names) {
			return nil, fmt.Errorf("labels not sorted: %v", names)
		}
		ss := ts.Get(tsFields.ByName("samples")).List()
		if ss.Len() != 1 {
			return nil, fmt.Errorf("%d samples in a series, want 1", ss.Len())
		}
		sm := ss.Get(0).Message()
		if len(sm.GetUnknown()) > 0 {
			return nil, fmt.Errorf("sample fields outside the schema: %x", sm.GetUnknown())
		}
		s.value = sm.Get(sm.Descriptor().Fields().ByName("value")).Float()
		s.ms = sm.Get(sm.Descriptor().Fields().ByName("timestamp")).Int()
		out = append(out, s)
	}
	return out, nil
}

// metricsBurst is a burst of buyers at an echoSeller with 30 units that answers 500 to every
// 13th purchase and takes a few milliseconds over each, so the burst lasts several intervals.
func metricsBurst(t *testing.T, engine string, buyers int, rw blast.RemoteWrite) (blast.Burst, *bytes.Buffer) {
	t.Helper()
	base := echoSeller(t, 30, func(w http.ResponseWriter, n int64) bool {
		time.Sleep(3 * time.Millisecond)
		if n%13 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return true
		}
		return false
	})
	p := plan(base, []loadgen.Target{hot}, buyers)
	p.Profile, p.Engine, p.Conns, p.Timeout, p.At = profile.Default(), engine, 4, 10*time.Second, time.Now().Add(300*time.Millisecond)
	limits := map[loadgen.Target]loadgen.ItemLimit{hot: {Stock: 30, PerUser: 1}}
	return blast.Burst{Plan: p, Limits: limits, Thresholds: blast.Thresholds{ExpectSold: -1}, Metrics: rw}, &bytes.Buffer{}
}

// TestMetricsRemoteWriteMatchesTheReport fires small bursts at a fake checkout while a receiver
// decodes every push: the first push is all zeros before the release; the final one has the
// report's count for every outcome, a histogram that counts every request and in_flight 0;
// every series carries job, burst and shard; on both engines the counts move during the burst.
func TestMetricsRemoteWriteMatchesTheReport(t *testing.T) {
	for _, tc := range []struct {
		engine string
		shard  loadgen.Shard
		live   bool
	}{
		{loadgen.EngineHTTP, loadgen.Shard{Index: 1, Count: 2}, true},
		{loadgen.EngineRaw, loadgen.Shard{}, true},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			rc, url := startReceiver(t)
			b, progress := metricsBurst(t, tc.engine, 200, blast.RemoteWrite{URL: url, Interval: 20 * time.Millisecond,
				Header: http.Header{"Authorization": {"Bearer t0ken"}}})
			b.Plan.Shard = tc.shard
			if tc.engine == loadgen.EngineHTTP {
				b.Plan.Retries = 1 // every try is a request of the report, and counted
			}
			rep, err := blast.Fire(context.Background(), b, progress)
			if err != nil {
				t.Fatal(err)
			}
			sum := rep.Summary
			pushes, header := rc.got()
			// A push the loop abandoned when the burst ended can reach the receiver after the final
			// one; a time series database orders them by their sample time, and so does this.
			slices.SortStableFunc(pushes, func(a, b push) int { return cmp.Compare(a.time(), b.time()) })
			for i := 1; i < len(pushes); i++ {
				if pushes[i].time() == pushes[i-1].time() {
					t.Errorf("two pushes at %d ms: a receiver keeps only one of them", pushes[i].time())
				}
			}
			// A push still on its way when the burst ended is abandoned for the final one, and not
			// counted, though the receiver may have got it.
			if m := sum.Metrics; m == nil || m.Pushes < 3 || m.Pushes > len(pushes) || m.Failed != 0 || m.Live != tc.live {
				t.Fatalf("report says %+v; the receiver got %d pushes", m, len(pushes))
			}
			for k, v := range map[string]string{"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
				"X-Prometheus-Remote-Write-Version": "0.1.0", "Authorization": "Bearer t0ken"} {
				if header.Get(k) != v {
					t.Errorf("header %s: %q, want %q", k, header.Get(k), v)
				}
			}
			shard := "0/1"
			if tc.shard.Count > 0 {
				shard = fmt.Sprintf("%d/%d", tc.shard.Index, tc.shard.Count)
			}
			burst := b.Plan.At.UTC().Format(time.RFC3339Nano)
			for _, p := range pushes {
				for _, s := range p {
					if s.labels["job"] != blast.MetricsJob || s.labels["burst"] != burst || s.labels["shard"] != shard ||
						!slices.Contains(blast.MetricNames(), s.labels["__name__"]) {
						t.Fatalf("series %v, want job %s, burst %s, shard %s and a name of MetricNames", s.labels, blast.MetricsJob, burst, shard)
					}
				}
			}

			first, last := pushes[0], pushes[len(pushes)-1]
			if n := first.get(blast.MetricDuration + "_count"); n != 0 {
				t.Errorf("the first push counts %v requests, want 0 before the release", n)
			}
			if first.get(blast.MetricRequests, "outcome=RESERVED") != 0 || first.get(blast.MetricRequests, "outcome=TIMEOUT") != 0 {
				t.Errorf("the first push lacks the outcomes at 0: %v", first)
			}
			counts := map[outcome.Code]int{}
			for _, o := range sum.Outcomes {
				counts[o.Outcome] = o.Count
			}
			if counts[outcome.Reserved] != 30 || counts[loadgen.ServerError] == 0 {
				t.Fatalf("outcomes %v, want 30 RESERVED and some SERVER_ERROR", counts)
			}
			for _, c := range loadgen.Outcomes() {
				if got := last.get(blast.MetricRequests, "outcome="+string(c)); got != float64(counts[c]) {
					t.Errorf("%s{outcome=%q} = %v, the report counts %d", blast.MetricRequests, c, got, counts[c])
				}
			}
			requests := float64(sum.Requests)
			if last.get(blast.MetricDuration+"_count") != requests || last.get(blast.MetricDuration+"_bucket", "le=+Inf") != requests {
				t.Errorf("histogram counts %v (+Inf %v), the report %d requests", last.get(blast.MetricDuration+"_count"),
					last.get(blast.MetricDuration+"_bucket", "le=+Inf"), sum.Requests)
			}
			prev := 0.0
			for _, le := range blast.DurationBuckets {
				n := last.get(blast.MetricDuration+"_bucket", fmt.Sprintf("le=%g", le))
				if n < prev {
					t.Errorf("bucket le=%g counts %v, below the one before (%v)", le, n, prev)
				}
				prev = n
			}
			if want := sum.Latency.Mean * requests / 1000; math.Abs(last.get(blast.MetricDuration+"_sum")-want) > 0.01*want {
				t.Errorf("histogram sum %vs, the report's mean latency makes it %vs", last.get(blast.MetricDuration+"_sum"), want)
			}
			if last.get(blast.MetricInFlight) != 0 || last.get(blast.MetricBuyers) != float64(sum.Buyers) {
				t.Errorf("final push: in flight %v, buyers %v; want 0 and %d", last.get(blast.MetricInFlight), last.get(blast.MetricBuyers), sum.Buyers)
			}
			// Live: some push during the burst saw answers counted and others still in flight.
			midway := slices.ContainsFunc(pushes[:len(pushes)-1], func(p push) bool {
				n := p.get(blast.MetricDuration + "_count")
				return n > 0 && n < requests && p.get(blast.MetricInFlight) > 0
			})
			if midway != tc.live {
				t.Errorf("a push counted answers during the burst: %v, want %v", midway, tc.live)
			}
			var out bytes.Buffer
			if err := sum.Render(&out); err != nil || !strings.Contains(out.String(), fmt.Sprintf("metrics: %d pushes to %s, none failed", sum.Metrics.Pushes, url)) {
				t.Errorf("the report does not say how the pushes went (%v):\n%s", err, out.String())
			}
		})
	}
}

// TestMetricsReceiverFailureDoesNotFailTheBurst: a receiver that answers 500 or never answers
// costs the burst nothing: every buyer is answered and checked, every push counts as failed
// in the report, one warning says so, and no password of the URL shows anywhere.
func TestMetricsReceiverFailureDoesNotFailTheBurst(t *testing.T) {
	for name, handler := range map[string]http.HandlerFunc{
		"500": func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "out of order", http.StatusInternalServerError)
		},
		"hangs": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client giving up
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			var hits atomic.Int64
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				handler(w, r)
			}))
			t.Cleanup(hs.Close)
			url := strings.Replace(hs.URL, "http://", "http://tenant:pa55word@", 1) + "/api/v1/push"
			b, progress := metricsBurst(t, loadgen.EngineHTTP, 100, blast.RemoteWrite{URL: url, Interval: 20 * time.Millisecond,
				Timeout: 100 * time.Millisecond})
			rep, err := blast.Fire(context.Background(), b, progress)
			if err != nil {
				t.Fatalf("a failing receiver failed the burst: %v", err)
			}
			sum := rep.Summary
			if sum.Requests != 100 || rep.Broken() {
				t.Errorf("%d requests, invariants broken: %v; want all 100 answered and checked", sum.Requests, rep.Broken())
			}
			m := sum.Metrics
			if m == nil || m.Pushes == 0 || m.Failed != m.Pushes || m.LastError == "" || int64(m.Pushes) > hits.Load() {
				t.Fatalf("report %+v after %d requests to the receiver, want every push failed", m, hits.Load())
			}
			if n := strings.Count(progress.String(), "warning: metrics push"); n != 1 {
				t.Errorf("%d warnings, want 1:\n%s", n, progress.String())
			}
			var out bytes.Buffer
			_ = sum.Render(&out)
			_ = sum.WriteJSON(&out)
			all := progress.String() + out.String()
			if strings.Contains(all, "pa55word") || !strings.Contains(out.String(), fmt.Sprintf("%d of %d pushes", m.Failed, m.Pushes)) {
				t.Errorf("the report hides the failures or shows the password:\n%s", all)
			}
		})
	}
}

// TestMetricNames is the contract the dashboard is written against.
func TestMetricNames(t *testing.T) {
	want := []string{"fsctl_blast_buyers", "fsctl_blast_in_flight", "fsctl_blast_request_duration_seconds_bucket",
		"fsctl_blast_request_duration_seconds_count", "fsctl_blast_request_duration_seconds_sum", "fsctl_blast_requests_total"}
	if got := blast.MetricNames(); !slices.Equal(got, want) {
		t.Errorf("MetricNames() = %v, want %v", got, want)
	}
}

func TestRemoteWriteValidate(t *testing.T) {
	for _, tc := range []struct {
		rw blast.RemoteWrite
		ok bool
	}{
		{blast.RemoteWrite{URL: "http://prometheus:9090/api/v1/write"}, true},
		{blast.RemoteWrite{URL: "https://u:p@mimir.example/api/v1/push", Interval: time.Second}, true},
		{blast.RemoteWrite{URL: "prometheus:9090/api/v1/write"}, false},
		{blast.RemoteWrite{URL: "ftp://prometheus/api/v1/write"}, false},
		{blast.RemoteWrite{URL: "http://"}, false},
		{blast.RemoteWrite{URL: "http://prometheus:9090", Interval: -time.Second}, false},
	} {
		if err := tc.rw.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.rw, err)
		}
	}
}
