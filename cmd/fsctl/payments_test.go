package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/checkout/payment/fake"
)

func TestPaymentsServeRejectsBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // the error must say this
	}{
		{[]string{"--outage", "30s"}, "FROM+FOR"},
		{[]string{"--outage", "soon+10s"}, `start "soon"`},
		{[]string{"--outage", "30s+0s"}, `length "0s"`},
		{[]string{"--outage", "30s+-5s"}, `length "-5s"`},
		{[]string{"--outage", "-1s+5s"}, `start "-1s"`},
		{[]string{"--decline-rate", "1.5"}, "--decline-rate 1.5"},
		{[]string{"--error-rate", "-0.1"}, "--error-rate -0.1"},
		{[]string{"--error-rate", "NaN"}, "error rate"},
		{[]string{"--latency", "-1s"}, "--latency"},
		{[]string{"extra"}, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := newPaymentsCmd()
			cmd.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...))
			cmd.SetOut(new(bytes.Buffer))
			cmd.SetErr(new(bytes.Buffer))
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestPaymentsServeFlagsBecomeTheConfig(t *testing.T) {
	var o paymentsServeOptions
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	o.bind(fs)
	if err := fs.Parse([]string{"--latency", "200ms", "--jitter", "50ms", "--decline-rate", "0.1",
		"--error-rate", "0.2", "--outage", "30s+10s", "--outage", "2m+1m", "--seed", "9"}); err != nil {
		t.Fatal(err)
	}
	got, err := o.config()
	if err != nil {
		t.Fatal(err)
	}
	want := fake.Config{Latency: 200 * time.Millisecond, Jitter: 50 * time.Millisecond, DeclineRate: 0.1, ErrorRate: 0.2,
		Outages: []fake.Window{{From: 30 * time.Second, To: 40 * time.Second}, {From: 2 * time.Minute, To: 3 * time.Minute}}, Seed: 9}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("config %+v, want %+v", got, want)
	}
}
