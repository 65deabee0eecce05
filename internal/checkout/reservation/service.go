// Package reservation serves fsctl's reservation core (package stock: the atomic reserve script,
// releases, confirmations and the stock reads) over gRPC, and is the client the API role uses
// instead of the in-process store when the two are deployed apart (`fsctl serve --role
// reservation`, `fsctl serve --role api --reservation-addr`).
package reservation

import (
	"context"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fsctl/fsctl/internal/checkout/reservation/reservationpb"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// Store is the reservation core: what the service runs, and what the checkout reserves through
// (server.Reserver is this type). *stock.Store implements it in-process, *Client over gRPC.
type Store interface {
	Reserve(ctx context.Context, r stock.Request) (stock.Reservation, error)
	Release(ctx context.Context, r stock.Release) (bool, error)
	LookupOrder(ctx context.Context, orderID uuid.UUID) (stock.OrderState, bool, error)
	Snapshot(ctx context.Context, saleID string, items []sale.Item) ([]stock.ItemState, error)
	Remaining(ctx context.Context, refs []stock.ItemRef) ([]int64, error)
	SetPaused(ctx context.Context, sl sale.Sale, paused bool) error
	Confirm(ctx context.Context, saleID, itemID string, shard, shards int, orderID uuid.UUID, epoch int64) (bool, error)
}

// Service answers the ReservationService calls from a Store. Every call runs on the request's
// context, so a caller's deadline bounds the Redis work it asked for.
type Service struct {
	reservationpb.UnimplementedReservationServiceServer
	store Store
}

// NewService returns the service over store.
func NewService(store Store) *Service { return &Service{store: store} }

// Reserve runs one purchase attempt.
func (s *Service) Reserve(ctx context.Context, in *reservationpb.ReserveRequest) (*reservationpb.ReserveResponse, error) {
	id, err := parseOrderID(in.GetOrderId())
	if err != nil {
		return nil, toStatus(err)
	}
	rv, err := s.store.Reserve(ctx, stock.Request{
		SaleID: in.GetSaleId(), ItemID: in.GetItemId(), UserID: in.GetUserId(), IdemKey: in.GetIdempotencyKey(),
		OrderID: id, Shards: int(in.GetShards()), WaitReplicas: int(in.GetWaitReplicas()),
		WaitTimeout: in.GetWaitTimeout().AsDuration(), NoBorrow: in.GetNoBorrow(),
		SaleLimit: int(in.GetSaleLimit()),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return reservationToPB(rv), nil
}

// Release returns one hold's unit to stock.
func (s *Service) Release(ctx context.Context, in *reservationpb.ReleaseRequest) (*reservationpb.ReleaseResponse, error) {
	id, err := parseOrderID(in.GetOrderId())
	if err != nil {
		return nil, toStatus(err)
	}
	ok, err := s.store.Release(ctx, stock.Release{
		SaleID: in.GetSaleId(), ItemID: in.GetItemId(), Shard: int(in.GetShard()), Shards: int(in.GetShards()),
		OrderID: id, Status: in.GetStatus(), ForgetUser: in.GetForgetUser(), ForgetKey: in.GetForgetKey(),
		UnlessHanded: in.GetUnlessHanded(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &reservationpb.ReleaseResponse{Released: ok}, nil
}

// GetRemainingStock reads the stock counters of items.
func (s *Service) GetRemainingStock(ctx context.Context, in *reservationpb.GetRemainingStockRequest) (*reservationpb.GetRemainingStockResponse, error) {
	refs := make([]stock.ItemRef, len(in.GetItems()))
	for i, r := range in.GetItems() {
		refs[i] = stock.ItemRef{SaleID: r.GetSaleId(), ItemID: r.GetItemId(), Shards: int(r.GetShards())}
	}
	n, err := s.store.Remaining(ctx, refs)
	if err != nil {
		return nil, toStatus(err)
	}
	return &reservationpb.GetRemainingStockResponse{RemainingStock: n}, nil
}

// Confirm marks a hand-off done.
func (s *Service) Confirm(ctx context.Context, in *reservationpb.ConfirmRequest) (*reservationpb.ConfirmResponse, error) {
	id, err := parseOrderID(in.GetOrderId())
	if err != nil {
		return nil, toStatus(err)
	}
	ok, err := s.store.Confirm(ctx, in.GetSaleId(), in.GetItemId(), int(in.GetShard()), int(in.GetShards()), id, in.GetEpoch())
	if err != nil {
		return nil, toStatus(err)
	}
	return &reservationpb.ConfirmResponse{Confirmed: ok}, nil
}

// LookupOrder finds an order in Redis.
func (s *Service) LookupOrder(ctx context.Context, in *reservationpb.LookupOrderRequest) (*reservationpb.LookupOrderResponse, error) {
	id, err := parseOrderID(in.GetOrderId())
	if err != nil {
		return nil, toStatus(err)
	}
	st, ok, err := s.store.LookupOrder(ctx, id)
	if err != nil {
		return nil, toStatus(err)
	}
	return &reservationpb.LookupOrderResponse{Found: ok, SaleId: st.SaleID, ItemId: st.ItemID, UserId: st.UserID,
		Shard: int32(st.Shard), Shards: int32(st.Shards), Status: st.Status}, nil
}

// Snapshot reads a sale's item counters.
func (s *Service) Snapshot(ctx context.Context, in *reservationpb.SnapshotRequest) (*reservationpb.SnapshotResponse, error) {
	states, err := s.store.Snapshot(ctx, in.GetSaleId(), itemsFromPB(in.GetItems()))
	if err != nil {
		return nil, toStatus(err)
	}
	out := &reservationpb.SnapshotResponse{Items: make([]*reservationpb.ItemState, len(states))}
	for i, st := range states {
		it := &reservationpb.ItemState{ItemId: st.ItemID, Stock: st.Stock, Holds: st.Holds, Buyers: st.Buyers,
			Shards: make([]*reservationpb.ShardState, len(st.Shards))}
		for k, sh := range st.Shards {
			it.Shards[k] = &reservationpb.ShardState{Shard: int32(sh.Shard), Stock: sh.Stock, Holds: sh.Holds,
				Buyers: sh.Buyers, InTransit: sh.InTransit}
		}
		out.Items[i] = it
	}
	return out, nil
}

// SetPaused pauses or resumes a sale's items.
func (s *Service) SetPaused(ctx context.Context, in *reservationpb.SetPausedRequest) (*reservationpb.SetPausedResponse, error) {
	sl := sale.Sale{ID: in.GetSaleId(), Items: itemsFromPB(in.GetItems())}
	if err := s.store.SetPaused(ctx, sl, in.GetPaused()); err != nil {
		return nil, toStatus(err)
	}
	return &reservationpb.SetPausedResponse{}, nil
}

func parseOrderID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, outcome.Errorf(outcome.InvalidRequest, "order id %q is not a UUID", s)
	}
	return id, nil
}

func itemsFromPB(in []*reservationpb.SaleItem) []sale.Item {
	out := make([]sale.Item, len(in))
	for i, it := range in {
		out[i] = sale.Item{ID: it.GetItemId(), Shards: int(it.GetShards())}
	}
	return out
}

func itemsToPB(in []sale.Item) []*reservationpb.SaleItem {
	out := make([]*reservationpb.SaleItem, len(in))
	for i, it := range in {
		out[i] = &reservationpb.SaleItem{ItemId: it.ID, Shards: int32(it.ShardCount())}
	}
	return out
}

func reservationToPB(rv stock.Reservation) *reservationpb.ReserveResponse {
	out := &reservationpb.ReserveResponse{
		Reserved: rv.Outcome == outcome.Reserved, Outcome: string(rv.Outcome), Slot: int32(rv.Slot), Replay: rv.Replay,
		Shard: int32(rv.Shard), Shards: int32(rv.Shards), Borrowed: int32(rv.Borrowed), Replicas: int32(rv.Replicas),
		Epoch: rv.Epoch, SaleLimited: rv.SaleLimited, Claimed: rv.Claimed, SaleSlot: int32(rv.SaleSlot),
	}
	if rv.OrderID != uuid.Nil {
		out.OrderId = rv.OrderID.String()
	}
	if !rv.ExpiresAt.IsZero() {
		out.ExpiresAt = timestamppb.New(rv.ExpiresAt)
	}
	if rv.RefErr != nil {
		out.RefError = rv.RefErr.Error()
	}
	return out
}

func durationToPB(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}
