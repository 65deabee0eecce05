package blast_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/blast"
)

func TestAfterPurchaseChoiceIsSeededAndProportional(t *testing.T) {
	a := blast.AfterPurchase{Pay: 0.6, Cancel: 0.1, Seed: 42}
	n := map[blast.Action]int{}
	const buyers = 20000
	for k := range buyers {
		n[a.Choose(k)]++
		if a.Choose(k) != a.Choose(k) {
			t.Fatalf("buyer %d decides differently twice", k)
		}
	}
	for act, want := range map[blast.Action]float64{blast.Pay: 0.6, blast.Cancel: 0.1, blast.Abandon: 0.3} {
		if got := float64(n[act]) / buyers; math.Abs(got-want) > 0.02 {
			t.Errorf("%s: %.3f of buyers, want about %.2f", act, got, want)
		}
	}
	other := blast.AfterPurchase{Pay: 0.6, Cancel: 0.1, Seed: 43}
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
	for _, a := range []blast.AfterPurchase{{Pay: -0.1}, {Cancel: 1.1}, {Pay: 0.6, Cancel: 0.5}} {
		if a.Validate() == nil {
			t.Errorf("%+v accepted", a)
		}
	}
	if err := (blast.AfterPurchase{Pay: 0.5, Cancel: 0.5}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestRenderFollowUps(t *testing.T) {
	var out bytes.Buffer
	fs := []blast.FollowUp{{Action: blast.Pay, Answer: "PAID"}, {Action: blast.Pay, Answer: "PAYMENT_DECLINED"},
		{Action: blast.Pay, Answer: "PAID"}, {Action: blast.Abandon, Answer: blast.Abandoned}}
	if err := blast.RenderFollowUps(&out, fs); err != nil {
		t.Fatal(err)
	}
	want := "after the purchase (4 reservations): abandon→ABANDONED 1, pay→PAID 2, pay→PAYMENT_DECLINED 1\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	_ = blast.RenderFollowUps(&out, nil)
	if !strings.Contains(out.String(), "no reservation") {
		t.Errorf("empty: %q", out.String())
	}
}
