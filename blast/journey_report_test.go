package blast_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/loadgen"
)

func TestRenderFollowUps(t *testing.T) {
	var out bytes.Buffer
	fs := []loadgen.FollowUp{{Action: loadgen.Pay, Answer: "PAID"}, {Action: loadgen.Pay, Answer: "PAYMENT_DECLINED"},
		{Action: loadgen.Pay, Answer: "PAID"}, {Action: loadgen.Abandon, Answer: loadgen.Abandoned}}
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
