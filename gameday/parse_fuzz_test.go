package gameday

import (
	"errors"
	"testing"

	"github.com/fsctl/fsctl/internal/platform/yamlfield"
)

// FuzzParse: any input either parses to a scenario or fails with a *yamlfield.Error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add(DefaultYAML())
	f.Add([]byte("name: x\nsale:\n  items:\n    - {id: a, quantity: 10}\nbuyers: 10\nrate: 5/s\n"))
	f.Add([]byte("steps:\n  - {at: 1s, fault: payment, outage: true}\n"))
	f.Add([]byte("sale: {room: {admissionRate: 1/s}, items: [{id: a, quantity: 1}]}\nbuyers: 1\nrate: 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := Parse(b)
		if err != nil {
			var le *yamlfield.Error
			if !errors.As(err, &le) {
				t.Fatalf("error %v (%T) is not a *yamlfield.Error", err, err)
			}
			return
		}
		if sc.Buyers < 1 || sc.Rate <= 0 || len(sc.Sale.Items) == 0 || sc.Pay+sc.Cancel > 1 {
			t.Fatalf("accepted an unusable scenario: %+v", sc)
		}
		for _, st := range sc.Steps {
			if st.Fault == nil {
				t.Fatal("a step without a fault")
			}
		}
	})
}
