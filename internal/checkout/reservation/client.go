package reservation

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/fsctl/fsctl/internal/checkout/reservation/reservationpb"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// Client calls a reservation service; it has the methods of the in-process *stock.Store the API
// uses (server.Reserver) and gives the same answers and errors. Every call passes its context on,
// so the caller's deadline is the service's.
type Client struct {
	conn   *grpc.ClientConn
	rpc    reservationpb.ReservationServiceClient
	health healthpb.HealthClient
}

// Dial returns a client of the service at addr (host:port), with sec's TLS and token. It connects
// lazily, on the first call, and reconnects on its own.
func Dial(addr string, sec Security, opts ...grpc.DialOption) (*Client, error) {
	base, err := sec.dialOptions()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(addr, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("reservation service %s: %w", addr, err)
	}
	return &Client{conn: conn, rpc: reservationpb.NewReservationServiceClient(conn), health: healthpb.NewHealthClient(conn)}, nil
}

// Target is the address the client calls.
func (c *Client) Target() string { return c.conn.Target() }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Check asks the service's health service whether it serves (its Redis reachable, its scripts
// loaded), for the API's /readyz, and then makes one call that needs the service's token (a read
// of no items), so a wrong token fails readiness too.
func (c *Client) Check(ctx context.Context) error {
	res, err := c.health.Check(ctx, &healthpb.HealthCheckRequest{Service: ServiceName})
	if err != nil {
		return fromStatus(err)
	}
	if res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("reservation service: %s", res.GetStatus())
	}
	if _, err := c.rpc.GetRemainingStock(ctx, &reservationpb.GetRemainingStockRequest{}); err != nil {
		return fromStatus(err)
	}
	return nil
}

// Reserve runs one purchase attempt on the service.
func (c *Client) Reserve(ctx context.Context, r stock.Request) (stock.Reservation, error) {
	res, err := c.rpc.Reserve(ctx, &reservationpb.ReserveRequest{
		SaleId: r.SaleID, ItemId: r.ItemID, UserId: r.UserID, IdempotencyKey: r.IdemKey, OrderId: r.OrderID.String(),
		Shards: int32(r.Shards), WaitReplicas: int32(r.WaitReplicas), WaitTimeout: durationToPB(r.WaitTimeout), NoBorrow: r.NoBorrow,
		SaleLimit: int32(r.SaleLimit),
	})
	if err != nil {
		return stock.Reservation{}, fmt.Errorf("reserve %s/%s: %w", r.SaleID, r.ItemID, fromStatus(err))
	}
	return reservationFromPB(res)
}

// Release returns one hold's unit to stock.
func (c *Client) Release(ctx context.Context, r stock.Release) (bool, error) {
	res, err := c.rpc.Release(ctx, &reservationpb.ReleaseRequest{
		SaleId: r.SaleID, ItemId: r.ItemID, Shard: int32(r.Shard), Shards: int32(r.Shards), OrderId: r.OrderID.String(),
		Status: r.Status, ForgetUser: r.ForgetUser, ForgetKey: r.ForgetKey, UnlessHanded: r.UnlessHanded,
	})
	if err != nil {
		return false, fmt.Errorf("release order %s: %w", r.OrderID, fromStatus(err))
	}
	return res.GetReleased(), nil
}

// LookupOrder finds an order in the service's Redis.
func (c *Client) LookupOrder(ctx context.Context, orderID uuid.UUID) (stock.OrderState, bool, error) {
	res, err := c.rpc.LookupOrder(ctx, &reservationpb.LookupOrderRequest{OrderId: orderID.String()})
	if err != nil {
		return stock.OrderState{}, false, fmt.Errorf("look up order %s: %w", orderID, fromStatus(err))
	}
	if !res.GetFound() {
		return stock.OrderState{}, false, nil
	}
	return stock.OrderState{SaleID: res.GetSaleId(), ItemID: res.GetItemId(), UserID: res.GetUserId(),
		Shard: int(res.GetShard()), Shards: int(res.GetShards()), Status: res.GetStatus()}, true, nil
}

// Snapshot reads a sale's item counters.
func (c *Client) Snapshot(ctx context.Context, saleID string, items []sale.Item) ([]stock.ItemState, error) {
	res, err := c.rpc.Snapshot(ctx, &reservationpb.SnapshotRequest{SaleId: saleID, Items: itemsToPB(items)})
	if err != nil {
		return nil, fmt.Errorf("snapshot sale %s: %w", saleID, fromStatus(err))
	}
	out := make([]stock.ItemState, len(res.GetItems()))
	for i, it := range res.GetItems() {
		st := stock.ItemState{ItemID: it.GetItemId(), Stock: it.GetStock(), Holds: it.GetHolds(), Buyers: it.GetBuyers(),
			Shards: make([]stock.ShardState, len(it.GetShards()))}
		for k, sh := range it.GetShards() {
			st.Shards[k] = stock.ShardState{Shard: int(sh.GetShard()), Stock: sh.GetStock(), Holds: sh.GetHolds(),
				Buyers: sh.GetBuyers(), InTransit: sh.GetInTransit()}
		}
		out[i] = st
	}
	return out, nil
}

// Remaining reads the stock counters of items (the service's GetRemainingStock).
func (c *Client) Remaining(ctx context.Context, refs []stock.ItemRef) ([]int64, error) {
	in := &reservationpb.GetRemainingStockRequest{Items: make([]*reservationpb.ItemRef, len(refs))}
	for i, r := range refs {
		in.Items[i] = &reservationpb.ItemRef{SaleId: r.SaleID, ItemId: r.ItemID, Shards: int32(r.Shards)}
	}
	res, err := c.rpc.GetRemainingStock(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("read remaining stock: %w", fromStatus(err))
	}
	if len(res.GetRemainingStock()) != len(refs) {
		return nil, fmt.Errorf("read remaining stock: %d answers for %d items", len(res.GetRemainingStock()), len(refs))
	}
	return res.GetRemainingStock(), nil
}

// SetPaused pauses or resumes a sale's items.
func (c *Client) SetPaused(ctx context.Context, sl sale.Sale, paused bool) error {
	_, err := c.rpc.SetPaused(ctx, &reservationpb.SetPausedRequest{SaleId: sl.ID, Items: itemsToPB(sl.Items), Paused: paused})
	if err != nil {
		return fmt.Errorf("set paused=%v on sale %s: %w", paused, sl.ID, fromStatus(err))
	}
	return nil
}

// Confirm is the last step of a hand-off.
func (c *Client) Confirm(ctx context.Context, saleID, itemID string, shard, shards int, orderID uuid.UUID, epoch int64) (bool, error) {
	res, err := c.rpc.Confirm(ctx, &reservationpb.ConfirmRequest{SaleId: saleID, ItemId: itemID, Shard: int32(shard),
		Shards: int32(shards), OrderId: orderID.String(), Epoch: epoch})
	if err != nil {
		return false, fmt.Errorf("confirm order %s: %w", orderID, fromStatus(err))
	}
	return res.GetConfirmed(), nil
}

func reservationFromPB(res *reservationpb.ReserveResponse) (stock.Reservation, error) {
	rv := stock.Reservation{
		Outcome: outcome.Code(res.GetOutcome()), Slot: int(res.GetSlot()), Replay: res.GetReplay(),
		Shard: int(res.GetShard()), Shards: int(res.GetShards()), Borrowed: int(res.GetBorrowed()),
		Replicas: int(res.GetReplicas()), Epoch: res.GetEpoch(),
		SaleLimited: res.GetSaleLimited(), Claimed: res.GetClaimed(), SaleSlot: int(res.GetSaleSlot()),
	}
	if res.GetOrderId() != "" {
		id, err := uuid.Parse(res.GetOrderId())
		if err != nil {
			return stock.Reservation{}, fmt.Errorf("reservation service answered order id %q: %w", res.GetOrderId(), err)
		}
		rv.OrderID = id
	}
	if res.GetExpiresAt() != nil {
		rv.ExpiresAt = res.GetExpiresAt().AsTime()
	}
	if res.GetRefError() != "" {
		rv.RefErr = errors.New(res.GetRefError())
	}
	return rv, nil
}
