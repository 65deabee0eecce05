package drill

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/table"
	"github.com/fsctl/fsctl/pipeline"
	"github.com/fsctl/fsctl/pipeline/steps"
	"github.com/fsctl/fsctl/reconcile"
)

// Report is what one drill did and whether the checkout held.
type Report struct {
	// Profile names the target profile the drill went through.
	Profile string `json:"profile"`
	Target  string `json:"target"`
	Sale    string `json:"sale"`
	// Phases are target, burst, settle, reconcile and invariants, in order.
	Phases []steps.Step `json:"phases"`
	// Blast is the burst's summary.
	Blast blast.Summary `json:"blast"`
	// Result is the pipeline's: the items, the verdicts, the settle, the reconcile and the
	// verdict.
	pipeline.Result
}

// Render writes the report as text: the phases, the items, the verdicts and the outcome.
func (r *Report) Render(w io.Writer) error {
	fmt.Fprintf(w, "drill of sale %s at %s through profile %s\n", r.Sale, r.Target, r.Profile)
	// The details wrap on a narrow terminal; the items' before-the-burst columns go (package table).
	t := table.New(w, "phase", "result", "took", "detail").Wrap("detail", 0)
	for _, p := range r.Phases {
		if err := t.Append(p.Name, p.Word(), p.Took.Round(time.Millisecond).String(), p.Detail); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	t = table.New(w, "item", "stock", "redis before", "live before", "reserved", "live orders", "redis left").
		Drop("live before", "redis before")
	for _, it := range r.Items {
		if err := t.Append(it.Item, i64(it.Stock), i64(it.RedisBefore), i64(it.LiveBefore), i64(it.Reserved), i64(it.Live), i64(it.RedisLeft)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if err := finding.Invariants(w, r.Verdicts); err != nil {
		return err
	}
	if r.Reconcile != nil {
		fmt.Fprintf(w, "reconcile %-4s %d items%s\n", okWord(r.Reconcile.OK()), len(r.Reconcile.Items), kafkaLine(r.Reconcile))
	}
	return r.Result.Render(w, "DRILL", "")
}

// kafkaLine is the order log as reconcile saw it, when it read it.
func kafkaLine(rep *reconcile.Report) string {
	if rep.Kafka == nil {
		return ""
	}
	return fmt.Sprintf(", consumer group %s lag %d", rep.Kafka.Group.Group, rep.Kafka.Group.Lag)
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }
