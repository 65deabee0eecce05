package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/fsctl/fsctl/benchmarks/internal/benchrun"
)

// The targets a burst can be released against.
const (
	targetTrivial = "trivial" // the 204 endpoint of this process
	targetServe   = "serve"   // fsctl serve on the local stack
)

// trivialStock is the stock blast is told the trivial endpoint has (it has no sale page).
const trivialStock = 100

// bench is one run of the benchmark: its options, scratch folder and the targets' URLs.
type bench struct {
	o                    options
	dir                  string
	trivialURL, serveURL string
}

// blastReport is the part of `fsctl blast -o json` (and `fsctl blast merge -o json`) read here.
type blastReport struct {
	Buyers        int     `json:"buyers"`
	Requests      int     `json:"requests"`
	Sold          int     `json:"sold"`
	PreparedMs    float64 `json:"preparedMs"`
	DurationMs    float64 `json:"durationMs"`
	Throughput    float64 `json:"throughputRps"`
	ReleaseLateMs float64 `json:"releaseLateMs"`
	CPU           struct {
		BurstUsPerReq float64 `json:"burstUsPerRequest"`
	} `json:"cpu"`
	// Wake is when each buyer's goroutine ran after the barrier opened: the release spread.
	Wake struct {
		P99 float64 `json:"p99Ms"`
	} `json:"wakeSkew"`
	Outcomes []struct {
		Outcome string `json:"outcome"`
		Count   int    `json:"count"`
	} `json:"outcomes"`
	Verdicts []struct {
		Group  string `json:"group"`
		Check  string `json:"check"`
		Status string `json:"status"`
	} `json:"verdicts"`
	Failures []string `json:"thresholdFailures"`
}

// blastRun is what one blast (or merge) process reported and cost.
type blastRun struct {
	rep  blastReport
	exit int
	rss  int64 // peak RSS, KiB
	cpu  time.Duration
}

// runFsctl runs fsctl with args and reads its JSON report from stdout. Exit 0, 3 (a threshold
// missed) and 4 (an invariant broken) come with a report and are returned for the caller to
// judge; any other status, or no report, is an error.
func runFsctl(ctx context.Context, o options, args ...string) (blastRun, error) {
	cmd := benchrun.Command(ctx, o.generatorCores, o.fsctl, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var r blastRun
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.exit = exit.ExitCode()
	case err != nil:
		return r, fmt.Errorf("fsctl %s: %w", args[0], err)
	}
	if r.exit != 0 && r.exit != 3 && r.exit != 4 {
		return r, fmt.Errorf("fsctl %s exited %d:\n%s", strings.Join(args[:min(len(args), 2)], " "), r.exit, stderr.String())
	}
	if err := json.Unmarshal(out, &r.rep); err != nil {
		return r, fmt.Errorf("read the JSON report of fsctl %s (exit %d): %w\n%s", args[0], r.exit, err, stderr.String())
	}
	r.rss = benchrun.MaxRSS(cmd.ProcessState)
	r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return r, nil
}

// measurement is one row of the table: a burst of buyers against one target.
type measurement struct {
	target string
	buyers int
	stock  int
	blastRun
}

// accepted says whether the burst ended as its target allows: 0 against serve; 0 or 3 against
// the trivial endpoint, whose 204 answers blast counts as SERVER_ERROR.
func (m measurement) accepted() bool {
	return m.exit == 0 || (m.target == targetTrivial && m.exit == 3)
}

// measure releases n buyers from one blast process against target; against serve on a fresh
// sale, checked by reconcile afterwards.
func (b *bench) measure(ctx context.Context, target string, n int) (measurement, error) {
	m := measurement{target: target, buyers: n}
	lead := b.o.leadFor(n)
	args := []string{"blast", "--sale", "", "--item", "drop", "--buyers", strconv.Itoa(n),
		"--conns", strconv.Itoa(b.o.conns), "--engine", "raw", "--in", lead.String(), "-o", "json"}
	sale := fmt.Sprintf("scale-%d-%d", n, time.Now().Unix())
	if target == targetTrivial {
		sale = "scale-trivial"
		m.stock = trivialStock
		args = append(args, "--target", b.trivialURL, "--stock", strconv.Itoa(trivialStock), "--limit", "1")
	} else {
		m.stock = min(10000, n/5)
		if err := createSale(ctx, b.o, b.dir, sale, m.stock); err != nil {
			return m, err
		}
		args = append(args, "--target", b.serveURL, "--expect-sold", strconv.Itoa(m.stock))
	}
	args[2] = sale
	fmt.Printf("blast: %d buyers -> %s (sale %s, %d units, release in %s) ...\n", n, target, sale, m.stock, lead)
	var err error
	if m.blastRun, err = runFsctl(ctx, b.o, args...); err != nil {
		return m, err
	}
	m.progress(m.verdict())
	if target == targetServe {
		if err := checkSale(ctx, b.o, sale, m.rep.Sold); err != nil {
			return m, err
		}
	}
	return m, nil
}

// progress prints how a finished burst went, ending with verdict.
func (r blastRun) progress(verdict string) {
	fmt.Printf("  exit %d, prepared in %.0f ms, barrier %.1f ms late, buyers woke p99 %.2f ms after it, %.0f req/s, %s\n",
		r.exit, r.rep.PreparedMs, r.rep.ReleaseLateMs, r.rep.Wake.P99, r.rep.Throughput, verdict)
}

// verdict is the row's last column: units sold, the invariants, any answer that is neither
// RESERVED nor SOLD_OUT, and a non-zero exit status with the thresholds missed.
func (m measurement) verdict() string {
	parts := []string{fmt.Sprintf("sold %d", m.rep.Sold), invariants(m.rep)}
	for _, oc := range m.rep.Outcomes {
		if oc.Outcome != "RESERVED" && oc.Outcome != "SOLD_OUT" {
			parts = append(parts, fmt.Sprintf("%d %s", oc.Count, oc.Outcome))
		}
	}
	if m.exit != 0 {
		s := fmt.Sprintf("exit %d", m.exit)
		if len(m.rep.Failures) > 0 {
			s += " (" + strings.Join(m.rep.Failures, "; ") + ")"
		}
		if m.accepted() {
			s += ", accepted for the trivial endpoint"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// invariants is "invariants OK" when every verdict passed, else the checks that did not.
func invariants(r blastReport) string {
	var bad []string
	for _, v := range r.Verdicts {
		if v.Status != "pass" {
			bad = append(bad, v.Check+": "+v.Status)
		}
	}
	if len(bad) == 0 {
		return "invariants OK"
	}
	return "invariants NOT OK (" + strings.Join(bad, "; ") + ")"
}
