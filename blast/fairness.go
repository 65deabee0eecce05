package blast

import (
	"math"
	"slices"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// FairnessRow is how well the order in which one item's clicks were released predicts which of
// them won. A click is one Idempotency-Key (its retries and replays are the same click).
//
// With one release instant every click is intended at the same time, so the order is the order
// requests reached the wire (Written); with an open model (intended times spread out) it is
// the intended time, ties broken by Written.
type FairnessRow struct {
	Target string `json:"target"`
	// OrderBy is "written" or "intended", the order clicks were ranked by.
	OrderBy string `json:"orderBy"`
	// Clicks ranked: those with a request on the wire; Won of them got RESERVED (K).
	Clicks int `json:"clicks"`
	Won    int `json:"won"`
	// FirstKWon is how many of the first K clicks won, FirstKShare that over K: 1 is strict
	// first come first served, Won/Clicks is what a lottery would give.
	FirstKWon   int     `json:"firstKWon"`
	FirstKShare float64 `json:"firstKShare"`
	// Spearman is the rank correlation between earliness and winning, positive when earlier
	// clicks won; nil when everyone or no one won. Winning is yes/no, so even strict first come
	// first served stays below 1: SpearmanMax is what it would give with these K and clicks
	// (about sqrt(3p(1-p)) for a share p of winners, 0.52 when one click in ten won).
	Spearman    *float64 `json:"spearman,omitempty"`
	SpearmanMax *float64 `json:"spearmanMax,omitempty"`
}

// FairnessNote is the one line that tells a reader what the fairness figures mean.
const FairnessNote = "fairness: of the first K clicks released (K = clicks that won) the share that won, 1 = first come first served; " +
	"rho = Spearman correlation of earliness with winning, + = earlier won, 0 = order did not matter (at most the max shown)"

type fairClick struct {
	intended, written time.Time
	won               bool
}

// Fairness ranks each item's clicks by release order and measures how well that order
// predicts the winners, one row per item in the order items first appear.
func Fairness(recs []loadgen.Record) []FairnessRow {
	type keyID struct {
		t         loadgen.Target
		user, key string
	}
	// Sized for a click per record and its clicks in one slab: a burst of 500,000 buyers spent
	// more on growing this map and allocating its clicks than on anything else of its report.
	clicks := make(map[keyID]*fairClick, len(recs))
	slab := make([]fairClick, 0, len(recs))
	var order []loadgen.Target
	perTarget := map[loadgen.Target][]*fairClick{}
	for _, r := range recs {
		k := keyID{r.Target, r.User, r.Key}
		c := clicks[k]
		if c == nil {
			slab = append(slab, fairClick{intended: r.Intended})
			c = &slab[len(slab)-1]
			clicks[k] = c
			if perTarget[r.Target] == nil {
				order = append(order, r.Target)
			}
			perTarget[r.Target] = append(perTarget[r.Target], c)
		}
		if !r.Written.IsZero() && (c.written.IsZero() || r.Written.Before(c.written)) {
			c.written = r.Written
		}
		c.won = c.won || r.Outcome == outcome.Reserved
	}
	rows := make([]FairnessRow, 0, len(order))
	for _, t := range order {
		rows = append(rows, fairness(t, perTarget[t]))
	}
	return rows
}

func fairness(t loadgen.Target, all []*fairClick) FairnessRow {
	row := FairnessRow{Target: t.String(), OrderBy: "written"}
	// A click never written did not take part in the race (it failed before the wire).
	cs := slices.DeleteFunc(slices.Clone(all), func(c *fairClick) bool { return c.written.IsZero() })
	if len(cs) == 0 {
		return row
	}
	byIntended := slices.ContainsFunc(cs, func(c *fairClick) bool { return !c.intended.Equal(cs[0].intended) })
	if byIntended {
		row.OrderBy = "intended"
	}
	compare := func(a, b *fairClick) int {
		if byIntended {
			if c := a.intended.Compare(b.intended); c != 0 {
				return c
			}
		}
		return a.written.Compare(b.written)
	}
	slices.SortStableFunc(cs, compare)
	row.Clicks = len(cs)
	for _, c := range cs {
		if c.won {
			row.Won++
		}
	}
	for _, c := range cs[:row.Won] {
		if c.won {
			row.FirstKWon++
		}
	}
	if row.Won > 0 {
		row.FirstKShare = float64(row.FirstKWon) / float64(row.Won)
	}
	// Ranks with ties averaged (Spearman); winning is 0/1, and Pearson's r does not care
	// about a linear rescaling of it into ranks.
	ranks := make([]float64, len(cs))
	for i := 0; i < len(cs); {
		j := i
		for j+1 < len(cs) && compare(cs[i], cs[j+1]) == 0 {
			j++
		}
		for k := i; k <= j; k++ {
			ranks[k] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	won, ideal := make([]float64, len(cs)), make([]float64, len(cs))
	for i, c := range cs {
		if c.won {
			won[i] = 1
		}
		if i < row.Won {
			ideal[i] = 1
		}
	}
	// rank 1 is the earliest: earlier winning must read positive
	if r, ok := pearson(ranks, won); ok {
		r = -r
		row.Spearman = &r
	}
	if r, ok := pearson(ranks, ideal); ok {
		r = -r
		row.SpearmanMax = &r
	}
	return row
}

// pearson is the correlation of x and y; false when either does not vary.
func pearson(x, y []float64) (float64, bool) {
	mean := func(v []float64) float64 {
		var s float64
		for _, f := range v {
			s += f
		}
		return s / float64(len(v))
	}
	mx, my := mean(x), mean(y)
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy, sxx, syy = sxy+dx*dy, sxx+dx*dx, syy+dy*dy
	}
	if sxx == 0 || syy == 0 {
		return 0, false
	}
	return sxy / math.Sqrt(sxx*syy), true
}
