package loadgen_test

import (
	"math"
	"testing"

	"github.com/fsctl/fsctl/loadgen"
)

func TestAfterPurchaseChoiceIsSeededAndProportional(t *testing.T) {
	a := loadgen.AfterPurchase{Pay: 0.6, Cancel: 0.1, Seed: 42}
	n := map[loadgen.Action]int{}
	const buyers = 20000
	for k := range buyers {
		n[a.Choose(k)]++
		if first := a.Choose(k); a.Choose(k) != first {
			t.Fatalf("buyer %d decides differently twice", k)
		}
	}
	for act, want := range map[loadgen.Action]float64{loadgen.Pay: 0.6, loadgen.Cancel: 0.1, loadgen.Abandon: 0.3} {
		if got := float64(n[act]) / buyers; math.Abs(got-want) > 0.02 {
			t.Errorf("%s: %.3f of buyers, want about %.2f", act, got, want)
		}
	}
	other := loadgen.AfterPurchase{Pay: 0.6, Cancel: 0.1, Seed: 43}
	same := 0
	for k := range 1000 {
		if other.Choose(k) == a.Choose(k) {
			same++
		}
	}
	if same == 1000 {
		t.Error("another seed picks exactly the same buyers")
	}
}

func TestAfterPurchaseValidate(t *testing.T) {
	for _, a := range []loadgen.AfterPurchase{{Pay: -0.1}, {Cancel: 1.1}, {Pay: 0.6, Cancel: 0.5}} {
		if a.Validate() == nil {
			t.Errorf("%+v accepted", a)
		}
	}
	if err := (loadgen.AfterPurchase{Pay: 0.5, Cancel: 0.5}).Validate(); err != nil {
		t.Error(err)
	}
}
