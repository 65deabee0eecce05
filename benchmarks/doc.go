// Package benchmarks compares ways of reserving one unit of a hot flash-sale item under contention:
// the PostgreSQL row-lock approaches the design warns against, beside the Redis Lua reserve it uses.
// It holds only benchmarks; run them with `go test -run '^$' -bench . ./benchmarks/` against the stack.
package benchmarks
