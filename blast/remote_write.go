package blast

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/snappy"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
)

// A remote-write v1 push is a snappy block of a protobuf WriteRequest (Prometheus's
// prompb/remote.proto and types.proto). It is encoded here with protowire rather than with
// prompb, whose gogo/protobuf runtime (archived) and label packages this module would otherwise
// take on for four small messages. The field numbers are the spec's:
//
//	WriteRequest { repeated TimeSeries timeseries = 1; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; } // milliseconds
const (
	fieldTimeseries  protowire.Number = 1
	fieldLabels      protowire.Number = 1
	fieldSamples     protowire.Number = 2
	fieldLabelName   protowire.Number = 1
	fieldLabelValue  protowire.Number = 2
	fieldSampleValue protowire.Number = 1
	fieldSampleTime  protowire.Number = 2
)

// label is one label pair of a series.
type label struct{ name, value string }

// timeSeries is one time series with its one sample, labels sorted by name as the spec requires.
type timeSeries struct {
	labels []label
	value  float64
	ms     int64
}

// name is the series' metric name, its __name__ label.
func (s timeSeries) name() string {
	for _, l := range s.labels {
		if l.name == "__name__" {
			return l.value
		}
	}
	return ""
}

// toSeries turns gathered families into the series a receiver stores, each carrying the
// external labels (job, burst, shard) and the sample time ms: a counter or gauge as itself, a
// classic histogram as its cumulative _bucket{le} series (+Inf included), _sum and _count.
func toSeries(families []*dto.MetricFamily, external []label, ms int64) []timeSeries {
	var out []timeSeries
	add := func(name string, m *dto.Metric, v float64, extra ...label) {
		ls := append(slices.Clone(external), label{"__name__", name})
		for _, lp := range m.GetLabel() {
			ls = append(ls, label{lp.GetName(), lp.GetValue()})
		}
		ls = append(ls, extra...)
		slices.SortFunc(ls, func(a, b label) int { return strings.Compare(a.name, b.name) })
		out = append(out, timeSeries{labels: ls, value: v, ms: ms})
	}
	for _, f := range families {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, m, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					if !math.IsInf(b.GetUpperBound(), +1) {
						add(name+"_bucket", m, float64(b.GetCumulativeCount()), label{"le", formatLe(b.GetUpperBound())})
					}
				}
				add(name+"_bucket", m, float64(h.GetSampleCount()), label{"le", "+Inf"})
				add(name+"_sum", m, h.GetSampleSum())
				add(name+"_count", m, float64(h.GetSampleCount()))
			}
		}
	}
	return out
}

// formatLe spells a bucket bound as the text exposition format does (0.0005, 1, 2.5).
func formatLe(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// encodeWriteRequest is the snappy-compressed WriteRequest of ss, the body of one push.
func encodeWriteRequest(ss []timeSeries) []byte {
	var req, ts, msg []byte
	for _, s := range ss {
		ts = ts[:0]
		for _, l := range s.labels {
			msg = protowire.AppendTag(msg[:0], fieldLabelName, protowire.BytesType)
			msg = protowire.AppendString(msg, l.name)
			msg = protowire.AppendTag(msg, fieldLabelValue, protowire.BytesType)
			msg = protowire.AppendString(msg, l.value)
			ts = protowire.AppendTag(ts, fieldLabels, protowire.BytesType)
			ts = protowire.AppendBytes(ts, msg)
		}
		msg = protowire.AppendTag(msg[:0], fieldSampleValue, protowire.Fixed64Type)
		msg = protowire.AppendFixed64(msg, math.Float64bits(s.value))
		msg = protowire.AppendTag(msg, fieldSampleTime, protowire.VarintType)
		msg = protowire.AppendVarint(msg, uint64(s.ms))
		ts = protowire.AppendTag(ts, fieldSamples, protowire.BytesType)
		ts = protowire.AppendBytes(ts, msg)
		req = protowire.AppendTag(req, fieldTimeseries, protowire.BytesType)
		req = protowire.AppendBytes(req, ts)
	}
	return snappy.Encode(nil, req)
}
