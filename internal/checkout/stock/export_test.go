package stock

import "context"

// ClaimOnly takes the per-sale claim of r without reserving: what a process that died between
// the claim and the reserve leaves behind.
func ClaimOnly(ctx context.Context, s *Store, r Request) error {
	_, err := s.claim(ctx, r)
	return err
}
