package main

import (
	"fmt"
	"io"

	"github.com/fsctl/fsctl/internal/platform/reach"
)

// announceChange is the first line of every command that deletes or rewrites a sale's data: the
// Redis and PostgreSQL it is about to change, passwords hidden. A shell pointed at the wrong stack
// (a stale `eval "$(fsctl stack env)"`, a default port another stack owns) shows before the damage.
func announceChange(w io.Writer, what, redisURL, postgresURL string) {
	fmt.Fprintf(w, "%s on Redis %s and PostgreSQL %s\n", what, reach.Redact(redisURL), reach.Redact(postgresURL))
}
