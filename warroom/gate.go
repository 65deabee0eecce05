package warroom

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// FailNever is the --fail-on level that never fails: a gate that only prints the snapshot.
const FailNever = "none"

// CheckSettings refuses a --fail-on level other than FailNever, Warn and Crit, and an interval,
// probe timeout or slow-source period that is not positive.
func CheckSettings(failOn string, interval, timeout time.Duration, slowEvery int) error {
	if failOn != FailNever && failOn != Warn && failOn != Crit {
		return fmt.Errorf("--fail-on %q: want none, warn or crit", failOn)
	}
	if interval <= 0 || timeout <= 0 || slowEvery <= 0 {
		return errors.New("--interval, --timeout and --slow-every must be positive")
	}
	return nil
}

// Firing is what a gate at level fails on: each alert of that level or worse, as its String
// says it; none under FailNever.
func Firing(alerts []Alert, level string) []string {
	var firing []string
	for _, a := range alerts {
		if a.Level == Crit || (level == Warn && a.Level == Warn) {
			firing = append(firing, a.String())
		}
	}
	if level == FailNever {
		return nil
	}
	return firing
}

// OpenRecords opens path to append every snapshot to as a JSON line (the timeline of a game day);
// close closes the file.
func OpenRecords(path string) (record func(Snapshot) error, close func() error, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("--records: %w", err)
	}
	return NewRecorder(f).Write, f.Close, nil
}

// WriteJSON writes one snapshot as indented JSON (--once --output json).
func WriteJSON(w io.Writer, s *Snapshot) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}
