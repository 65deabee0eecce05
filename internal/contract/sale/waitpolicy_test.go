package sale

import (
	"strings"
	"testing"
)

// TestWaitPolicy: the policy defaults to count once the sale waits for replicas, and is refused,
// naming the field and its line, without waitReplicas or when it is not a known policy.
func TestWaitPolicy(t *testing.T) {
	const head = "id: s1\nopensAt: 2026-12-01T12:00:00Z\nitems: [{id: a, quantity: 1}]\n"
	tests := []struct {
		name, yaml, want, err string
	}{
		{"no wait, no policy", head, "", ""},
		{"wait defaults to count", head + "waitReplicas: 1\n", WaitPolicyCount, ""},
		{"count", head + "waitReplicas: 1\nwaitPolicy: count\n", WaitPolicyCount, ""},
		{"release", head + "waitReplicas: 2\nwaitPolicy: release\n", WaitPolicyRelease, ""},
		{"release without waitReplicas", head + "waitPolicy: release\n", "", "line 4: waitPolicy: sale s1: waitPolicy release needs waitReplicas"},
		{"unknown policy", head + "waitReplicas: 1\nwaitPolicy: retry\n", "", `line 5: waitPolicy: sale s1: waitPolicy "retry": must be count or release`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := parseCase(t, tc.yaml, tc.err)
			if !ok {
				return
			}
			if s.WaitPolicy != tc.want {
				t.Fatalf("waitPolicy %q, want %q", s.WaitPolicy, tc.want)
			}
			if got := s.ReleasesShortWaits(); got != (tc.want == WaitPolicyRelease) {
				t.Fatalf("ReleasesShortWaits() = %v for policy %q", got, tc.want)
			}
		})
	}
}

// parseCase parses a sale file of a table test: with wantErr set it fails unless Parse refuses the
// file with an error containing it, and reports false (nothing more to check); otherwise it fails
// on any error and returns the sale.
func parseCase(t *testing.T, yaml, wantErr string) (Sale, bool) {
	t.Helper()
	s, err := Parse(strings.NewReader(yaml))
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("got %v, want an error containing %q", err, wantErr)
		}
		return Sale{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return s, true
}
