// Package migrations embeds the versioned PostgreSQL schema of fsctl's order store (sales, items,
// orders and the functions that place orders) as goose SQL files, so the binary migrates without a checkout.
package migrations

import "embed"

// FS holds the goose migrations, named NNNNN_description.sql; goose applies them in version order.
//
//go:embed *.sql
var FS embed.FS
