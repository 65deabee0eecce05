// Package articleshop is a small, faithful stand-in for a foreign flash-sale checkout service, built
// the way the widely published "Spring Boot + Redis Lua + Kafka + PostgreSQL flash sale" articles
// build it: a Redis Lua script reserves stock and records the buyer, the order is published to
// Kafka, and a consumer writes it to PostgreSQL, where CHECK and UNIQUE constraints are the last
// safety net.
//
// It exists so fsctl can be pointed at a system it did not write. For that reason non-test code
// here must never import any github.com/fsctl/fsctl package.
package articleshop
