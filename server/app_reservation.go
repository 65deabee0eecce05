package server

import (
	"github.com/fsctl/fsctl/internal/checkout/reservation"
)

// openReservations returns what the API reserves through: the in-process store, or with
// ReservationAddr the client of a remote reservation service (which runs the same store, scripts
// and idempotency on its Redis, and answers the same outcome codes).
func (a *App) openReservations(cfg AppConfig) (Reserver, error) {
	if cfg.ReservationAddr == "" {
		return a.Stock, nil
	}
	c, err := reservation.Dial(cfg.ReservationAddr, cfg.ReservationSecurity)
	if err != nil {
		return nil, err
	}
	a.reservations = c
	a.log.Info("reserving through the reservation service over gRPC", "addr", cfg.ReservationAddr)
	return c, nil
}
