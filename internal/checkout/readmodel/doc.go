// Package readmodel keeps the sale page's remaining-stock numbers in every API instance's memory,
// fed by stock snapshot events, so the stock Redis is read a number of times that does not grow
// with the number of API instances.
//
// Why: polling the live counters every ReadModelTTL from every instance costs the stock Redis
// N reads per TTL for N instances — with thousands of instances, thousands of reads a second on
// the very Redis the purchases need. Instead, the components that change stock say so: the order
// consumer after each recorded batch (a reservation changes Redis before it is recorded, so the
// snapshot after its batch includes it) and the lifecycle jobs after each release (expiry,
// cancel, decline, sweeper). They mark the items dirty in a Publisher, which reads the dirty
// items' counters at most every flush interval, in one pipelined round trip with Redis's TIME,
// and publishes one StockSnapshot per item to a compacted topic keyed by sale/item. The reads
// then scale with the rate of change and the number of consumer and worker processes, not with
// the readers. Some changes tell no publisher (the API's release after a failed hand-off, a
// preload, a rebuild), so a Publisher also publishes again, every DefaultRefresh, every item it
// saw change in the last RefreshFor: one more pipelined read per process per refresh.
//
// Every API instance runs a View: a reader of every partition of that topic, no consumer group,
// from the beginning of the compacted log (so a fresh instance learns the latest snapshot of
// every item at once), applying a snapshot only when it was read from Redis after the one it
// holds (ReadAt, Redis's clock: two publishers may publish in the other order than they read).
// The View is live while it has recently proved itself caught up with the topic's end; while it
// is not (Kafka unreachable, still catching up at start) the sale page falls back to reading
// Redis every ReadModelTTL, and says so. An item no snapshot names yet (a sale nobody has bought
// from) is read from Redis once per instance to seed the View.
package readmodel
