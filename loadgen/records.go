package loadgen

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// RecordsFormat names a records file in its header line, so merge refuses any other JSON lines.
const RecordsFormat = "fsctl-blast-records"

// RecordsVersion is the records file format this build writes and the only one it reads; it
// changes whenever a field changes meaning, so an old file is refused rather than misread.
const RecordsVersion = 1

// ItemLimit is what one item may give out: its stock and the per-user limit.
type ItemLimit struct {
	Stock   int64 `json:"stock"`
	PerUser int   `json:"perUser"`
	// PerSale is the item's sale's per-sale limit: what one buyer may hold across all the sale's
	// items (0: none).
	PerSale int `json:"perSale,omitempty"`
}

// TargetLimit is one item's limits as a records file carries them (a map keyed by Target does
// not encode as JSON).
type TargetLimit struct {
	SaleID string `json:"sale"`
	ItemID string `json:"item"`
	ItemLimit
}

// Header is the first line of a records file: what merge needs to know about the shard's burst
// besides its records, so that n shard files can be checked as one burst.
type Header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// At is the plan's release instant, the same in every shard of one burst.
	At       time.Time `json:"at"`
	Released time.Time `json:"released"`
	// PreparedNs is how long this shard prepared its buyers and warmed its pool.
	PreparedNs int64 `json:"preparedNs"`
	// Buyers is the size of the whole burst over all shards (the plan's), ShardBuyers this
	// shard's part of it.
	Buyers      int   `json:"buyers"`
	ShardBuyers int   `json:"shardBuyers"`
	Shard       Shard `json:"shard"`
	// Conns is this shard's connection pool.
	Conns  int           `json:"conns"`
	Limits []TargetLimit `json:"limits"`
	// Engine, EngineAuto, EngineFallback, TimeoutNs, TimeoutAuto and HTTP are the shard's Resolution,
	// so a merged report still says what produced its numbers; a file without them reads as
	// an unknown engine.
	Engine         string `json:"engine,omitempty"`
	EngineAuto     bool   `json:"engineAuto,omitempty"`
	EngineFallback string `json:"engineFallback,omitempty"`
	TimeoutNs      int64  `json:"timeoutNs,omitempty"`
	TimeoutAuto    bool   `json:"timeoutAuto,omitempty"`
	HTTP           string `json:"http,omitempty"`
}

// HeaderOf describes the burst of plan p that produced res, with the item limits the response
// invariants are checked against.
func HeaderOf(p Plan, res *Result, limits map[Target]ItemLimit) Header {
	h := Header{Format: RecordsFormat, Version: RecordsVersion, At: res.At, Released: res.Released,
		PreparedNs: int64(res.Prepared), Buyers: p.Buyers, ShardBuyers: res.Buyers, Shard: p.Shard, Conns: res.Conns,
		Engine: res.Resolved.Engine, EngineAuto: res.Resolved.EngineAuto, EngineFallback: res.Resolved.Fallback,
		TimeoutNs: int64(res.Resolved.Timeout), TimeoutAuto: res.Resolved.TimeoutAuto, HTTP: res.Resolved.HTTP}
	if h.Shard.Count == 0 {
		h.Shard = Shard{Index: 0, Count: 1}
	}
	for t, l := range limits {
		h.Limits = append(h.Limits, TargetLimit{SaleID: t.SaleID, ItemID: t.ItemID, ItemLimit: l})
	}
	slices.SortFunc(h.Limits, func(a, b TargetLimit) int {
		return strings.Compare(a.SaleID+":"+a.ItemID, b.SaleID+":"+b.ItemID)
	})
	return h
}

// Resolution is the shard's Resolution as the header carries it.
func (h Header) Resolution() Resolution {
	return Resolution{Engine: h.Engine, EngineAuto: h.EngineAuto, Fallback: h.EngineFallback,
		Timeout: time.Duration(h.TimeoutNs), TimeoutAuto: h.TimeoutAuto, HTTP: h.HTTP}
}

// LimitMap is the header's limits keyed by target, as CheckResponses takes them.
func (h Header) LimitMap() map[Target]ItemLimit {
	m := make(map[Target]ItemLimit, len(h.Limits))
	for _, l := range h.Limits {
		m[Target{SaleID: l.SaleID, ItemID: l.ItemID}] = l.ItemLimit
	}
	return m
}

// recordLine is a Record on the wire: explicit names, so renaming a Go field never silently
// changes the file format; zero times are left out.
type recordLine struct {
	Buyer     int          `json:"buyer"`
	User      string       `json:"user"`
	SaleID    string       `json:"sale"`
	ItemID    string       `json:"item"`
	Key       string       `json:"key"`
	Click     int          `json:"click"`
	Attempt   int          `json:"attempt"`
	Intended  time.Time    `json:"intended,omitzero"`
	Started   time.Time    `json:"started,omitzero"`
	Written   time.Time    `json:"written,omitzero"`
	FirstByte time.Time    `json:"firstByte,omitzero"`
	Done      time.Time    `json:"done,omitzero"`
	Method    string       `json:"method,omitempty"`
	URL       string       `json:"url,omitempty"`
	Status    int          `json:"status,omitempty"`
	Proto     string       `json:"proto,omitempty"`
	BytesIn   int          `json:"bytesIn,omitempty"`
	Outcome   outcome.Code `json:"outcome"`
	OrderID   string       `json:"orderId,omitempty"`
	Error     string       `json:"error,omitempty"`
	Conn      string       `json:"conn,omitempty"`
}

func lineOf(r Record) recordLine {
	return recordLine{Buyer: r.Buyer, User: r.User, SaleID: r.Target.SaleID, ItemID: r.Target.ItemID, Key: r.Key,
		Click: r.Click, Attempt: r.Attempt, Intended: r.Intended, Started: r.Started, Written: r.Written,
		FirstByte: r.FirstByte, Done: r.Done, Method: r.Method, URL: r.URL, Status: r.Status, Proto: r.Proto,
		BytesIn: r.BytesIn, Outcome: r.Outcome, OrderID: r.OrderID, Error: r.Error, Conn: r.Conn}
}

func (l recordLine) record() Record {
	return Record{Buyer: l.Buyer, User: l.User, Target: Target{SaleID: l.SaleID, ItemID: l.ItemID}, Key: l.Key,
		Click: l.Click, Attempt: l.Attempt, Intended: l.Intended, Started: l.Started, Written: l.Written,
		FirstByte: l.FirstByte, Done: l.Done, Method: l.Method, URL: l.URL, Status: l.Status, Proto: l.Proto,
		BytesIn: l.BytesIn, Outcome: l.Outcome, OrderID: l.OrderID, Error: l.Error, Conn: l.Conn}
}

// WriteRecords writes the header line and then every record as one JSON line; unlike the vegeta
// results it keeps who bought what with which key, which merge and the HTML report need.
func WriteRecords(w io.Writer, h Header, recs []Record) error {
	h.Format, h.Version = RecordsFormat, RecordsVersion
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(h); err != nil {
		return fmt.Errorf("write records header: %w", err)
	}
	for i, r := range recs {
		if err := enc.Encode(lineOf(r)); err != nil {
			return fmt.Errorf("write record %d: %w", i, err)
		}
	}
	return bw.Flush()
}

// RecordFile is one shard's records file as read back.
type RecordFile struct {
	Header  Header
	Records []Record
}

// maxLine bounds one JSON line: a record is a few hundred bytes, an error message a few more.
const maxLine = 1 << 20

// ReadRecords reads a file WriteRecords wrote, refusing another format or version.
func ReadRecords(r io.Reader) (RecordFile, error) {
	var f RecordFile
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return f, fmt.Errorf("read records header: %w", err)
		}
		return f, errors.New("empty records file")
	}
	if err := json.Unmarshal(sc.Bytes(), &f.Header); err != nil || f.Header.Format != RecordsFormat {
		return f, fmt.Errorf("not a blast records file (want a first line with format %q)", RecordsFormat)
	}
	if f.Header.Version != RecordsVersion {
		return f, fmt.Errorf("records format version %d, this fsctl reads version %d", f.Header.Version, RecordsVersion)
	}
	for n := 2; sc.Scan(); n++ {
		var l recordLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return f, fmt.Errorf("records line %d: %w", n, err)
		}
		f.Records = append(f.Records, l.record())
	}
	if err := sc.Err(); err != nil {
		return f, fmt.Errorf("read records: %w", err)
	}
	return f, nil
}
