package orders

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsRejected reports whether PostgreSQL refused a statement for what it carried (SQLSTATE class 22,
// data exception, or 23, integrity constraint violation), as opposed to failing to run it (an
// outage, a lost connection, a deadlock). Retrying a rejected batch unchanged fails the same way.
func IsRejected(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) < 2 {
		return false
	}
	class := pe.Code[:2]
	return class == "22" || class == "23"
}
