package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/checkout/reservation"
	"github.com/fsctl/fsctl/server"
)

// envReservationAddr names the reservation service the api role reserves through; envGRPCToken
// the token both sides of it share.
const (
	envReservationAddr = "FSCTL_RESERVATION_ADDR"
	envGRPCToken       = "FSCTL_GRPC_TOKEN"
)

// serveReservation runs `fsctl serve --role reservation`: the gRPC reservation service, alone in
// its process, on Redis only.
func serveReservation(cmd *cobra.Command, o serveOptions, log *slog.Logger) error {
	if len(o.roles) != 1 || !slices.Contains(o.roles, "reservation") {
		return usageError(fmt.Errorf("--role reservation runs alone (got %v): run the api and consumer roles in their own processes, with --reservation-addr", o.roles))
	}
	if o.grpcSec.Token == "" && !server.Loopback(o.grpcAddr) {
		log.Warn("the reservation service has no token: anyone who reaches " + o.grpcAddr + " can reserve and release stock; " +
			"pass --grpc-token (and --grpc-tls-cert/--grpc-tls-key) or keep the port on a private network")
	}
	return reservation.Serve(cmd.Context(), reservation.Config{
		Addr: o.grpcAddr, RedisURL: o.endpoints.redisURL, RedisBatch: cmp.Or(o.redisBatch, -1), IdemTTL: o.idemTTL,
		Security: reservation.Security{CertFile: o.grpcSec.CertFile, KeyFile: o.grpcSec.KeyFile, Token: o.grpcSec.Token},
	}, log, nil)
}
