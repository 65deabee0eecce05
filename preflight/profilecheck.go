package preflight

import (
	"context"
	"slices"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// checkProfile: the target profile fits the live target, asked as `fsctl profile check` asks it
// (profile.Fit): a token can be minted, the purchase template renders, sql.items lists the sale
// and every query runs and returns sane values. It runs for every profile, the bundled one
// included, so the profile every other command reads the target through is verified before the
// sale. The keys, servers and order log are this checklist's own groups.
func checkProfile(ctx context.Context, e *env) []finding.Finding {
	f := profile.Fit{P: e.prof, Sale: e.cfg.SaleID, Secret: e.cfg.TokenSecret, Now: e.cfg.Now}
	base := ""
	if len(e.cfg.Servers) > 0 {
		base = e.cfg.Servers[0]
	}
	if e.pdb == nil {
		return append(inGroup(f.Templates(base, e.cfg.Items)), needs("profile", "PostgreSQL")...)
	}
	items, listed := f.Items(e.listed, e.itemsErr, e.cfg.Items)
	queries, _ := f.Queries(ctx, e.pdb, items)
	return inGroup(slices.Concat(f.Templates(base, items), []finding.Finding{listed}, queries))
}

// inGroup files the pieces' lines under this checklist's profile group.
func inGroup(fs []finding.Finding) []finding.Finding {
	for i := range fs {
		fs[i].Group = "profile"
	}
	return fs
}
