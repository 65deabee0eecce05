package warroom

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// RecordVersion is the version of the record format; a reader refuses lines of a newer one.
const RecordVersion = 1

// Record is one line of a --records file: a snapshot as the dashboard showed it, with derived rates
// and firing alerts. A game-day report reads the timeline back with ReadRecords.
type Record struct {
	Version int `json:"v"`
	Snapshot
}

// Recorder writes snapshots as JSON lines.
type Recorder struct {
	w   io.Writer
	enc *json.Encoder
}

// NewRecorder returns a Recorder writing to w.
func NewRecorder(w io.Writer) *Recorder { return &Recorder{w: w, enc: json.NewEncoder(w)} }

// Write appends one snapshot.
func (r *Recorder) Write(s Snapshot) error {
	if err := r.enc.Encode(Record{Version: RecordVersion, Snapshot: s}); err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	return nil
}

// ReadRecords reads a record file back in time order; an error names the line at fault.
func ReadRecords(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []Record
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return out, fmt.Errorf("record line %d: %w", line, err)
		}
		if rec.Version > RecordVersion {
			return out, fmt.Errorf("record line %d: version %d is newer than this fsctl reads (%d)", line, rec.Version, RecordVersion)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read record: %w", err)
	}
	// The dashboard writes each snapshot from its own command; order them by time in case two
	// writes ever crossed.
	slices.SortStableFunc(out, func(a, b Record) int { return a.At.Compare(b.At) })
	return out, nil
}
