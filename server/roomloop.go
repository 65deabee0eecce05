package server

import (
	"context"
	"time"

	"github.com/fsctl/fsctl/internal/contract/sale"
)

// RunRoom keeps the waiting rooms of every sale moving: it (re)writes a room's settings to Redis
// when the sale's definition changes (or Redis lost them) and runs one admission round per room
// every interval. Every instance runs it; the admission script keeps the rate whatever the number
// of callers. A round that cannot reach the room's state marks the room down, which is what a
// fail-open sale's purchase path watches.
func (s *Server) RunRoom(ctx context.Context, every time.Duration) {
	if s.room == nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	configured := map[string]sale.Room{}
	var sales []sale.Sale
	var listed time.Time
	for {
		if time.Since(listed) > 2*time.Second {
			if ss, err := s.roomSales(ctx); err == nil {
				sales, listed = ss, time.Now()
			} else if ctx.Err() == nil {
				s.log.Warn("list sales for the waiting rooms", "err", err)
			}
		}
		for _, sl := range sales {
			s.roomRound(ctx, sl, configured)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// roomSales lists the sales whose room is on.
func (s *Server) roomSales(ctx context.Context) ([]sale.Sale, error) {
	ids, err := s.store.RoomSaleIDs(ctx)
	if err != nil {
		return nil, err
	}
	var out []sale.Sale
	for _, id := range ids {
		sl, err := s.store.LoadSale(ctx, id)
		if err != nil {
			return nil, err
		}
		if sl.Room.Enabled {
			out = append(out, sl)
		}
	}
	return out, nil
}

func (s *Server) roomRound(ctx context.Context, sl sale.Sale, configured map[string]sale.Room) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if last, ok := configured[sl.ID]; !ok || last != sl.Room {
		if err := s.room.Configure(ctx, sl.ID, sl.Room, sl.OpensAt, sl.Revision); err != nil {
			s.roomDown(sl, err)
			return
		}
		configured[sl.ID] = sl.Room
		s.metrics.roomRate.WithLabelValues(sl.ID).Set(sl.Room.AdmissionRate)
	}
	res, err := s.room.Tick(ctx, sl.ID)
	if err != nil {
		s.roomDown(sl, err)
		delete(configured, sl.ID) // write the settings again once it is back
		return
	}
	s.roomUp.Store(true)
	m := s.metrics
	m.roomDepth.WithLabelValues(sl.ID).Set(float64(res.Depth))
	m.roomActive.WithLabelValues(sl.ID).Set(float64(res.Active))
	m.roomWait.WithLabelValues(sl.ID).Set(float64(res.Depth) / max(sl.Room.AdmissionRate, 1e-9))
	m.roomAdmitted.WithLabelValues(sl.ID).Add(float64(res.Admitted))
	m.roomExpired.WithLabelValues(sl.ID, "waiter").Add(float64(res.ExpiredWaiters))
	m.roomExpired.WithLabelValues(sl.ID, "admitted").Add(float64(res.ExpiredActive))
}

func (s *Server) roomDown(sl sale.Sale, err error) {
	if s.roomUp.Swap(false) {
		s.log.Error("waiting room unreachable", "sale", sl.ID, "fail_mode", sl.Room.FailMode, "err", err)
	}
}
