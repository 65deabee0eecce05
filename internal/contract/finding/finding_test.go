package finding

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fsctl/fsctl/internal/platform/table"
)

func TestOKIsTheExitRule(t *testing.T) {
	fs := []Finding{{Check: "a", Status: Pass}, {Check: "b", Status: Warn}, {Check: "c", Status: Skip}}
	if !OK(fs, false) || OK(fs, true) || Count(fs, Warn) != 1 {
		t.Fatalf("a warning passes, unless strict: %v %v", OK(fs, false), OK(fs, true))
	}
	if OK(append(fs, Finding{Check: "d", Status: Fail}), false) {
		t.Fatal("a failure passes")
	}
}

// TestApplyAllRepairsWhatDidNotPass: a passing or skipped finding is never repaired, a failed
// repair says why, and each repair runs under the timeout.
func TestApplyAllRepairsWhatDidNotPass(t *testing.T) {
	var ran []string
	repair := func(name string, err error) func(context.Context) error {
		return func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("%s: no deadline", name)
			}
			ran = append(ran, name)
			return err
		}
	}
	fs := []Finding{
		{Check: "pass", Status: Pass, Apply: repair("pass", nil)},
		{Check: "skip", Status: Skip, Apply: repair("skip", nil)},
		{Check: "warn", Status: Warn, Repair: "preload", Apply: repair("warn", nil)},
		{Check: "fail", Status: Fail, Repair: "create", Apply: repair("fail", errors.New("denied"))},
		{Check: "hand", Status: Fail},
	}
	got := ApplyAll(context.Background(), fs, time.Second)
	if strings.Join(ran, ",") != "warn,fail" || len(got) != 2 || got[0] != (Applied{Check: "warn", Action: "preload"}) ||
		got[1] != (Applied{Check: "fail", Action: "create", Error: "denied"}) {
		t.Fatalf("ran %v, applied %+v", ran, got)
	}
}

func TestTable(t *testing.T) {
	fs := []Finding{{Check: "sql.items", Status: Pass, Detail: "2 items"},
		{Check: "redis.stock", Status: Fail, Detail: "missing", Fix: "preload it", Repair: "preload", Apply: func(context.Context) error { return nil }}}
	var b bytes.Buffer
	if err := Table(&b, fs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "GROUP") || !strings.Contains(out, "FAIL") || !strings.Contains(out, "preload it [--fix: preload]") {
		t.Fatalf("ungrouped table:\n%s", out)
	}
	fs[0].Group = "profile"
	b.Reset()
	if err := Table(&b, fs); err != nil || !strings.Contains(b.String(), "GROUP") || !strings.Contains(b.String(), "profile") {
		t.Fatalf("grouped table (%v):\n%s", err, b.String())
	}
}

func TestVerdictAndInvariants(t *testing.T) {
	var many []string
	for i := range 12 {
		many = append(many, "p"+string(rune('a'+i)))
	}
	ok, broken := Verdict("no oversell", nil), Verdict("same key, same answer", many)
	if !ok.Passed() || ok.Problems != nil || broken.Passed() || len(broken.Problems) != 11 || broken.Problems[10] != "... and 2 more" {
		t.Fatalf("verdicts %+v %+v", ok, broken)
	}
	var b bytes.Buffer
	if err := Invariants(&b, []Finding{ok, {Check: "nothing lost", Status: Pass, Detail: "stock 0 + holds 0 = 10 - paid 10"}, broken}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if lines[0] != "invariant OK      no oversell" || lines[1] != "invariant OK      nothing lost: stock 0 + holds 0 = 10 - paid 10" ||
		lines[2] != "invariant BROKEN  same key, same answer" || lines[3] != "    pa" || len(lines) != 3+11+1 {
		t.Fatalf("rendered:\n%s", b.String())
	}
}

// TestTableKeepsLongWords: a path longer than its column wraps, whole, instead of losing its end.
func TestTableKeepsLongWords(t *testing.T) {
	path := "(/tmp/TestProfileCheckCommand1234567890/very/long/path/bad.yaml)"
	var b bytes.Buffer
	if err := Table(&b, []Finding{{Check: "sql.live", Status: Fail, Detail: "query failed", Fix: "correct sql.live in the profile " + path + " for this target"}}); err != nil {
		t.Fatal(err)
	}
	var fix strings.Builder
	for _, line := range strings.Split(b.String(), "\n")[3:] {
		if cells := strings.Split(line, "│"); len(cells) > 4 {
			fix.WriteString(strings.TrimSpace(cells[4]))
		}
	}
	if !strings.Contains(fix.String(), path) {
		t.Fatalf("the path lost letters:\n%s", b.String())
	}
}

// TestTableFitsTheTerminal: preflight's table with a group column and long details was 165
// columns wide whatever the terminal; at 80 it wraps its detail and fix to 80.
func TestTableFitsTheTerminal(t *testing.T) {
	fs := []Finding{
		{Group: "redis", Check: "maxmemory-policy", Status: Warn, Detail: "allkeys-lru: under memory pressure Redis may evict a sale's stock, holds or idempotency keys, and the sale would sell them again",
			Fix: "CONFIG SET maxmemory-policy noeviction, and the same in redis.conf so that a restart keeps it", Repair: "CONFIG SET maxmemory-policy noeviction", Apply: func(context.Context) error { return nil }},
		{Group: "kafka", Check: "orders topic", Status: Pass, Detail: "fsctl.orders: 6 partition(s), replication factor 3"},
	}
	widest := func(columns int) (int, string) {
		var b bytes.Buffer
		var w io.Writer = &b
		if columns > 0 {
			w = table.Sized{Writer: &b, Columns: columns}
		}
		if err := Table(w, fs); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range strings.Split(b.String(), "\n") {
			n = max(n, utf8.RuneCountInString(l))
		}
		return n, b.String()
	}
	if n, out := widest(0); n <= 120 {
		t.Fatalf("%d columns without a terminal: the test's table is not wide enough to prove anything\n%s", n, out)
	}
	if n, out := widest(80); n > 80 || !strings.Contains(out, "GROUP") || !strings.Contains(out, "HOW TO FIX") {
		t.Errorf("%d columns at 80, or a column lost:\n%s", n, out)
	}
}

func TestRank(t *testing.T) {
	order := []Status{Pass, Skip, Warn, Fail}
	for i := 1; i < len(order); i++ {
		if order[i-1].Rank() >= order[i].Rank() {
			t.Errorf("%s ranks %d, not below %s's %d", order[i-1], order[i-1].Rank(), order[i], order[i].Rank())
		}
	}
}
