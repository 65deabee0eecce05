package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/reservation"
)

// envReservationAddr names the reservation service the api role reserves through.
const envReservationAddr = "FSCTL_RESERVATION_ADDR"

// serveReservation runs `fsctl serve --role reservation`: the gRPC reservation service, alone in
// its process, on Redis only.
func serveReservation(cmd *cobra.Command, o serveOptions, log *slog.Logger) error {
	if len(o.roles) != 1 || !slices.Contains(o.roles, "reservation") {
		return usageError(fmt.Errorf("--role reservation runs alone (got %v): run the api and consumer roles in their own processes, with --reservation-addr", o.roles))
	}
	return reservation.Serve(cmd.Context(), reservation.Config{
		Addr: o.grpcAddr, RedisURL: o.endpoints.redisURL, RedisBatch: cmp.Or(o.redisBatch, -1), IdemTTL: o.idemTTL,
	}, log, nil)
}
