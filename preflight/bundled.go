package preflight

import (
	"context"
	"errors"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// bundled is the capability only fsctl serve offers beyond what its profile declares: its sale
// definition in PostgreSQL, and through it its schema, scripts, controls, waiting room and
// repairs. The checks that use it ask for it where they run; every other check reads the target
// through its profile alone, the bundled server's included.
type bundled struct {
	// sale is the stored sale (nil when it is missing or PostgreSQL is down); saleErr says why.
	sale    *sale.Sale
	saleErr error
}

// offersBundled reports whether the target p describes offers the capability (fsctl serve): the
// one place preflight asks.
func offersBundled(p *profile.Profile) bool { return p.Bundled() }

// openBundled reads the sale definition from fsctl serve's own tables.
func openBundled(ctx context.Context, db *orders.Store, saleID string) *bundled {
	if db == nil {
		return &bundled{saleErr: errors.New("PostgreSQL unreachable")}
	}
	sl, err := db.LoadSale(ctx, saleID)
	if err != nil {
		return &bundled{saleErr: err}
	}
	return &bundled{sale: &sl}
}

// waitReplicas is how many replicas the sale's writes wait for (0 without a sale).
func (b *bundled) waitReplicas() int {
	if b.sale == nil {
		return 0
	}
	return b.sale.WaitReplicas
}

// stock is fsctl serve's own store on the target's Redis: its scripts and preload.
func (e *env) stock() *stock.Store { return stock.New(e.rdb) }

// bundledGroups are the groups that read nothing but what fsctl serve offers; any other target
// gets each one's skip line, saying why.
var bundledGroups = []struct {
	run  func(context.Context, *env) []finding.Finding
	skip finding.Finding
}{
	{checkSchema, finding.Finding{Group: "schema", Check: "migrations", Status: finding.Skip, Detail: "the bundled migrations and " +
		"constraints apply to fsctl serve only; the profile group checks this target's queries"}},
	{checkSale, finding.Finding{Group: "sale", Check: "sale", Status: finding.Skip, Detail: "not available: the profile has no sale definition"}},
	{checkCapacity, finding.Finding{Group: "capacity", Check: "admission rate", Status: finding.Skip,
		Detail: "not available for this target: it reads fsctl serve's waiting room"}},
	{checkControls, finding.Finding{Group: "controls", Check: "kill switches", Status: finding.Skip,
		Detail: "not available for this target: they read fsctl serve's kill switches and pause flags"}},
}

// noFix is the fix text of a problem preflight will not repair on a target other than fsctl serve.
const noFix = "the profile declares no fix for this"

// fixes are the fixes whose words depend on who repairs the target: fsctl serve is repaired with
// fsctl's own commands, any other target the way its operators do.
type fixes struct {
	// topic is the fix of a missing topic; createTopic is whether --fix creates it.
	topic       string
	createTopic bool
	// consumer is the fix of an order log nobody consumes.
	consumer string
	// replica is the fix of a Redis without a replica.
	replica string
}

var (
	profileFixes = fixes{
		topic:    "create it as the target expects, or correct kafka.topic / kafka.deadLetter in the profile (" + noFix + ")",
		consumer: "start the target's order consumer, or set kafka.group in the profile to the group it uses",
		replica:  "add a replica, or rehearse rebuilding the stock keys from the database",
	}
	serveFixes = fixes{
		topic: "fsctl preflight --fix creates it (the servers create it at start)", createTopic: true,
		consumer: "start fsctl serve (the consumer role), or set --consumer-group to the group it uses",
		replica:  "add a replica (and waitReplicas: 1), or rehearse fsctl reconcile --rebuild-redis",
	}
)
