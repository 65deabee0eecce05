package drill

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/olekukonko/tablewriter"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/finding"
	"github.com/fsctl/fsctl/reconcile"
	"github.com/fsctl/fsctl/steps"
)

// Report is what one drill did and whether the checkout held.
type Report struct {
	// Profile names the target profile the drill went through.
	Profile string `json:"profile"`
	Target  string `json:"target"`
	Sale    string `json:"sale"`
	// Items are the items buyers went for, read before the burst and after the settle.
	Items []ItemResult `json:"items"`
	// Phases are target, burst, settle, reconcile and invariants, in order.
	Phases []steps.Step `json:"phases"`
	// Blast is the burst's summary.
	Blast blast.Summary `json:"blast"`
	// Verdicts are the burst's response checks, then the state checks after the settle.
	Verdicts []finding.Finding `json:"verdicts"`
	// Settled says the sale settled within the bound; SettleWait is what it still waited for.
	Settled    bool   `json:"settled"`
	SettleWait string `json:"settleWait,omitempty"`
	// Reconcile is the reconcile of the settled sale.
	Reconcile *reconcile.Report `json:"reconcile,omitempty"`
	// Passed is the drill's verdict; Failures say why it did not pass.
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures,omitempty"`
}

// ItemResult is one item of the drill.
type ItemResult struct {
	Item string `json:"item"`
	// Stock is the item's quantity (sql.item); RedisBefore its Redis stock before the burst.
	Stock       int64 `json:"stock"`
	RedisBefore int64 `json:"redisBefore"`
	// LiveBefore is the live orders the item already had: a drill may run on a sale under way.
	LiveBefore int64 `json:"liveBefore"`
	// Reserved counts the distinct RESERVED answers; Live the live orders after the settle.
	Reserved int64 `json:"reserved"`
	Live     int64 `json:"live"`
	// RedisLeft is the Redis stock after the settle.
	RedisLeft int64 `json:"redisLeft"`
}

// Render writes the report as text: the phases, the items, the verdicts and the outcome.
func (r *Report) Render(w io.Writer) error {
	fmt.Fprintf(w, "drill of sale %s at %s through profile %s\n", r.Sale, r.Target, r.Profile)
	t := tablewriter.NewWriter(w)
	t.Header("phase", "result", "took", "detail")
	for _, p := range r.Phases {
		if err := t.Append(p.Name, p.Word(), p.Took.Round(time.Millisecond).String(), p.Detail); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	t = tablewriter.NewWriter(w)
	t.Header("item", "stock", "redis before", "live before", "reserved", "live orders", "redis left")
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
	if r.Passed {
		_, err := fmt.Fprintln(w, "DRILL PASSED")
		return err
	}
	fmt.Fprintf(w, "DRILL FAILED: %d broken\n", len(r.Failures))
	for _, f := range r.Failures {
		if _, err := fmt.Fprintf(w, "  - %s\n", f); err != nil {
			return err
		}
	}
	return nil
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
