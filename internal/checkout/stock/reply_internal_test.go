package stock

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// TestParseReservationReadsTheScriptsAnswer: the reserve script answers one string of six fields;
// each answer reads as the six-element reply it replaced did, and an answer of another shape is an
// error, never a reservation.
func TestParseReservationReadsTheScriptsAnswer(t *testing.T) {
	const id = "0192f0c4-7b2a-7c3e-9f00-0123456789ab"
	rv, err := parseReservation("RESERVED|" + id + "|1796471571000|2|0|7")
	if err != nil || rv.Outcome != outcome.Reserved || rv.OrderID.String() != id || rv.Slot != 2 || rv.Replay ||
		rv.Epoch != 7 || !rv.ExpiresAt.Equal(time.UnixMilli(1796471571000)) || rv.Replicas != -1 {
		t.Fatalf("fresh reservation: %+v %v", rv, err)
	}
	if !freshReserved("RESERVED|"+id+"|1796471571000|2|0|7") || freshReserved("RESERVED|"+id+"|1796471571000|2|1|7") {
		t.Fatal("freshReserved: a fresh reservation is fresh, a replay is not")
	}
	if rv, err := parseReservation("RESERVED|" + id + "|1796471571000|0|1|0"); err != nil || !rv.Replay {
		t.Fatalf("replayed reservation: %+v %v", rv, err)
	}
	for _, code := range []outcome.Code{outcome.SoldOut, outcome.AlreadyPurchased, outcome.NotStarted, outcome.Paused, empty} {
		if rv, err := parseReservation(string(code) + "||||0|"); err != nil || rv.Outcome != code || rv.Replay {
			t.Fatalf("%s: %+v %v", code, rv, err)
		}
	}
	if rv, err := parseReservation("SOLD_OUT||||1|3"); err != nil || rv.Outcome != outcome.SoldOut || !rv.Replay {
		t.Fatalf("a remembered SOLD_OUT: %+v %v", rv, err)
	}
	if _, err := parseReservation("NOT_FOUND||||0|"); outcome.CodeOf(err) != outcome.NotFound {
		t.Fatalf("NOT_FOUND: %v", err)
	}
	for _, bad := range []string{"", "SOLD_OUT", "SOLD_OUT|||0|", "SOLD_OUT||||0||", "WHAT||||0|", "RESERVED|not-an-id|1|0|0|0",
		"RESERVED|" + id + "|soon|0|0|0", "RESERVED|" + id + "|1|x|0|0", "RESERVED|" + id + "|1|0|0|"} {
		if rv, err := parseReservation(bad); err == nil {
			t.Errorf("%q: read as %+v, want an error", bad, rv)
		} else if strings.Contains(err.Error(), "%!") {
			t.Errorf("%q: malformed error %v", bad, err)
		}
	}
}

// FuzzParseReservation: any answer is read or refused, never a panic, and one that reads as a
// reservation says again what it read when written back in the script's form.
func FuzzParseReservation(f *testing.F) {
	for _, seed := range []string{"RESERVED|0192f0c4-7b2a-7c3e-9f00-0123456789ab|1796471571000|2|0|7", "SOLD_OUT||||0|",
		"SOLD_OUT||||1|3", "NOT_FOUND||||0|", "EMPTY||||0|", "", "|||||", "RESERVED|||||", "a|b|c|d|e|f|g"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		rv, err := parseReservation(answer)
		if err != nil || rv.Outcome != outcome.Reserved {
			return
		}
		replay := "0"
		if rv.Replay {
			replay = "1"
		}
		again := strings.Join([]string{string(rv.Outcome), rv.OrderID.String(), strconv.FormatInt(rv.ExpiresAt.UnixMilli(), 10),
			strconv.Itoa(rv.Slot), replay, strconv.FormatInt(rv.Epoch, 10)}, "|")
		if back, err := parseReservation(again); err != nil || back != rv {
			t.Fatalf("%q read as %+v, written back as %q, read again as %+v %v", answer, rv, again, back, err)
		}
	})
}
