package reservation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/fsctl/fsctl/internal/checkout/reservation/reservationpb"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// ServiceName is the service's full name, as health checks and reflection know it.
var ServiceName = reservationpb.ReservationService_ServiceDesc.ServiceName

// Scripts is what the health check asks of the store; *stock.Store implements it.
type Scripts interface {
	ScriptsLoaded(ctx context.Context) (bool, error)
	LoadScripts(ctx context.Context) error
}

// Register puts the reservation service over store on gs, with gRPC's health checking service
// (hs; NOT_SERVING until WatchHealth says otherwise) and server reflection (for grpcurl).
func Register(gs *grpc.Server, store Store, hs *health.Server) {
	reservationpb.RegisterReservationServiceServer(gs, NewService(store))
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus(ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
}

// WatchHealth sets hs SERVING while the store's scripts are loaded in Redis (loading them when a
// restarted Redis lost them) and NOT_SERVING while Redis cannot be reached, checking every
// interval until ctx ends.
func WatchHealth(ctx context.Context, hs *health.Server, sc Scripts, every time.Duration, log *slog.Logger) {
	last := healthpb.HealthCheckResponse_UNKNOWN
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, max(every, time.Second))
		err := scriptsReady(cctx, sc)
		cancel()
		now := healthpb.HealthCheckResponse_SERVING
		if err != nil {
			now = healthpb.HealthCheckResponse_NOT_SERVING
		}
		if ctx.Err() != nil {
			return
		}
		if now != last {
			hs.SetServingStatus("", now)
			hs.SetServingStatus(ServiceName, now)
			log.Info("reservation service health", "status", now.String(), "err", err)
			last = now
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func scriptsReady(ctx context.Context, sc Scripts) error {
	loaded, err := sc.ScriptsLoaded(ctx)
	if err != nil {
		return err
	}
	if !loaded {
		return sc.LoadScripts(ctx)
	}
	return nil
}

// Config is what `fsctl serve --role reservation` needs: a listen address and Redis.
type Config struct {
	// Addr is the gRPC listen address, e.g. ":9091".
	Addr     string
	RedisURL string
	// RedisBatch is the most hot-path commands one Redis pipeline carries (0: stock.DefaultBatchMax,
	// negative: every command alone), as for the API role.
	RedisBatch int
	// IdemTTL is how long a purchase's answer is kept under its key (stock.DefaultIdemTTL when zero).
	IdemTTL time.Duration
	// HealthEvery is how often the health status is re-checked (1 s when zero).
	HealthEvery time.Duration
	// Security is the port's TLS and token (none when zero).
	Security Security
}

// Serve runs the reservation service on the store it opens from cfg until ctx ends; ready, when
// not nil, gets the address once it listens.
func Serve(ctx context.Context, cfg Config, log *slog.Logger, ready func(net.Addr)) error {
	addr, err := redisconn.Parse(cfg.RedisURL)
	if err != nil {
		return err
	}
	rdb := addr.Open(redisconn.Tune{PoolSize: 256, DialerRetries: 1, DialTimeout: 2 * time.Second})
	defer rdb.Close()
	batch := cfg.RedisBatch
	switch {
	case batch == 0:
		batch = stock.DefaultBatchMax
	case batch < 0:
		batch = 0
	}
	opts := []stock.Option{stock.Batch(batch, stock.DefaultBatchLanes)}
	if cfg.IdemTTL > 0 {
		opts = append(opts, stock.IdemTTL(cfg.IdemTTL))
	}
	st := stock.New(rdb, opts...)
	sopts, err := cfg.Security.ServerOptions()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("reservation service: listen on %s: %w", cfg.Addr, err)
	}
	gs := grpc.NewServer(sopts...)
	hs := health.NewServer()
	Register(gs, st, hs)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go WatchHealth(ctx, hs, st, cmp.Or(cfg.HealthEvery, time.Second), log)
	go func() {
		<-ctx.Done()
		hs.Shutdown() // NOT_SERVING first, so balancers stop sending before the listener goes
		stopped := make(chan struct{})
		go func() { gs.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			gs.Stop()
		}
	}()
	log.Info("reservation service listening", "addr", ln.Addr().String(), "redis", addr.String(),
		"tls", cfg.Security.CertFile != "", "token", cfg.Security.Token != "")
	if ready != nil {
		ready(ln.Addr())
	}
	if err := gs.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("reservation service: %w", err)
	}
	return nil
}
