package server

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/control"
	"github.com/fsctl/fsctl/internal/checkout/saleops"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// adminRoutes registers the operator API: sale pause/resume, the live state of a sale and the
// kill switches. Every route needs the operator token.
func (s *Server) adminRoutes(route func(string, http.HandlerFunc)) {
	route("GET /admin/v1/sales/{sale}", s.admin(s.handleAdminSale))
	route("POST /admin/v1/sales/{sale}/pause", s.admin(s.handlePause(true)))
	route("POST /admin/v1/sales/{sale}/resume", s.admin(s.handlePause(false)))
	route("GET /admin/v1/sales/{sale}/room", s.admin(s.handleRoomStats))
	route("PUT /admin/v1/sales/{sale}/room", s.admin(s.handleSetRoom))
	route("GET /admin/v1/switches", s.admin(s.handleSwitches))
	route("PUT /admin/v1/switches/{name}", s.admin(s.handleSetSwitch))
}

// admin checks the operator token before h runs.
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.AdminToken == "" {
			s.writeCode(w, outcome.Forbidden, "the admin API is off; start the server with --admin-token (or FSCTL_ADMIN_TOKEN)")
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AdminToken)) != 1 {
			s.writeCode(w, outcome.Unauthorized, "admin calls need Authorization: Bearer <operator token>")
			return
		}
		h(w, r)
	}
}

// adminSaleBody is GET /admin/v1/sales/{sale}: the operator's view (saleops.View) in the admin
// API's words, which its clients read.
type adminSaleBody struct {
	ID           string          `json:"id"`
	OpensAt      time.Time       `json:"opensAt"`
	ClosesAt     *time.Time      `json:"closesAt,omitempty"`
	Paused       bool            `json:"paused"`
	PerUserLimit int             `json:"perUserLimit"`
	HoldTTL      string          `json:"holdTTL"`
	WaitReplicas int             `json:"waitReplicas,omitempty"`
	Switches     map[string]bool `json:"switches,omitempty"`
	Items        []adminItemBody `json:"items"`
}

type adminItemBody struct {
	ID        string           `json:"id"`
	Quantity  int64            `json:"quantity"`
	Remaining int64            `json:"remaining"`
	Holds     int64            `json:"holds"`
	Buyers    int64            `json:"buyers"`
	Shards    []adminShardBody `json:"shards"`
}

type adminShardBody struct {
	Shard     int   `json:"shard"`
	Stock     int64 `json:"stock"`
	Holds     int64 `json:"holds"`
	Buyers    int64 `json:"buyers"`
	InTransit int64 `json:"inTransit"`
}

// adminSaleBodyOf words v as the admin API does: its live counters per item and shard.
func adminSaleBodyOf(v saleops.View) adminSaleBody {
	b := adminSaleBody{ID: v.Sale.ID, OpensAt: v.Sale.OpensAt, ClosesAt: v.Sale.ClosesAt, Paused: v.Sale.Paused,
		PerUserLimit: v.Sale.PerUserLimit, HoldTTL: v.Sale.HoldTTL, WaitReplicas: v.Sale.WaitReplicas}
	for _, it := range v.Items {
		r := it.Redis
		ib := adminItemBody{ID: it.Item, Quantity: it.Postgres.Quantity, Remaining: r.Stock, Holds: r.Holds, Buyers: r.Buyers}
		for _, sh := range r.Shards {
			ib.Shards = append(ib.Shards, adminShardBody{Shard: sh.Shard, Stock: sh.Stock, Holds: sh.Holds, Buyers: sh.Buyers, InTransit: sh.InTransit})
		}
		b.Items = append(b.Items, ib)
	}
	return b
}

// handleAdminSale shows a sale with its live counters per shard: the operator's view, which reads
// the live keys (the public sale page never does).
func (s *Server) handleAdminSale(w http.ResponseWriter, r *http.Request) {
	sl, ok := s.adminLoadSale(w, r)
	if !ok {
		return
	}
	v, err := saleops.LiveView(r.Context(), s.stock, sl)
	if err != nil {
		s.log.Error("admin snapshot", "sale", sl.ID, "err", err)
		s.writeCode(w, outcome.Unavailable, "stock store unavailable")
		return
	}
	b := adminSaleBodyOf(v)
	if s.swStore != nil {
		b.Switches, _ = s.swStore.Get(r.Context())
	}
	writeJSON(w, http.StatusOK, b)
}

// handlePause pauses or resumes a sale through saleops.SetPaused: the flag goes to PostgreSQL (so a
// later preload keeps it), then to every shard's meta in Redis, which the reserve script reads on
// every call — so every instance honours it at once.
func (s *Server) handlePause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sl, ok := s.adminLoadSale(w, r)
		if !ok {
			return
		}
		if err := saleops.SetPaused(r.Context(), s.store, s.stock, sl, paused); err != nil {
			pe, ok := errors.AsType[*saleops.PauseError](err)
			if !ok {
				pe = &saleops.PauseError{Err: err} // SetPaused fails with nothing else
			}
			if pe.Saved {
				s.log.Error("set paused in redis", "sale", sl.ID, "err", pe.Err)
				s.writeCode(w, outcome.Unavailable, "stock store unavailable; the flag is saved in PostgreSQL but not live yet — retry")
			} else {
				s.log.Error("set paused in postgres", "sale", sl.ID, "err", pe.Err)
				s.writeCode(w, outcome.Unavailable, "order store unavailable; nothing changed")
			}
			return
		}
		s.catalog.forget(sl.ID)
		s.log.Warn("operator changed a sale", "sale", sl.ID, "paused", paused)
		writeJSON(w, http.StatusOK, map[string]any{"sale": sl.ID, "paused": paused})
	}
}

func (s *Server) adminLoadSale(w http.ResponseWriter, r *http.Request) (sale.Sale, bool) {
	id := r.PathValue("sale")
	if !sale.ValidSlug(id) {
		s.writeCode(w, outcome.InvalidRequest, "sale id must match [A-Za-z0-9_-]{1,64}")
		return sale.Sale{}, false
	}
	sl, err := s.store.LoadSale(r.Context(), id)
	if err != nil {
		if outcome.CodeOf(err) == outcome.NotFound {
			s.writeCode(w, outcome.NotFound, "no sale "+id)
		} else {
			s.log.Error("admin load sale", "sale", id, "err", err)
			s.writeCode(w, outcome.Unavailable, "order store unavailable")
		}
		return sale.Sale{}, false
	}
	return sl, true
}

func (s *Server) handleSwitches(w http.ResponseWriter, r *http.Request) {
	if s.swStore == nil {
		s.writeCode(w, outcome.NotFound, "this server has no kill switches")
		return
	}
	st, err := s.swStore.Get(r.Context())
	if err != nil {
		s.log.Error("read switches", "err", err)
		s.writeCode(w, outcome.Unavailable, "switch store unavailable")
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// switchBody is the request of PUT /admin/v1/switches/{name}: off=true throws the switch.
type switchBody struct {
	Off *bool `json:"off"`
}

func (s *Server) handleSetSwitch(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if s.swStore == nil || !control.Valid(name) {
		s.writeCode(w, outcome.NotFound, "no kill switch "+name+"; known: "+strings.Join(control.Names, ", "))
		return
	}
	var b switchBody
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 256))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || b.Off == nil {
		s.writeCode(w, outcome.InvalidRequest, `body must be {"off": true} to throw the switch or {"off": false} to reset it`)
		return
	}
	if err := s.swStore.Set(r.Context(), name, *b.Off); err != nil {
		s.log.Error("set switch", "name", name, "err", err)
		s.writeCode(w, outcome.Unavailable, "switch store unavailable; nothing changed")
		return
	}
	s.log.Warn("operator set a kill switch", "switch", name, "off", *b.Off)
	writeJSON(w, http.StatusOK, map[string]any{"switch": name, "off": *b.Off})
}

// roomBody is the operator's view of a waiting room.
type roomBody struct {
	Sale                 string  `json:"sale"`
	Enabled              bool    `json:"enabled"`
	Up                   bool    `json:"up"`
	Paused               bool    `json:"paused"`
	AdmissionRate        float64 `json:"admissionRate"`
	MaxActive            int     `json:"maxActive"`
	QueueDepth           int64   `json:"queueDepth"`
	Active               int64   `json:"active"`
	AdmittedTotal        int64   `json:"admittedTotal"`
	ExpiredTotal         int64   `json:"expiredTotal"`
	EstimatedWaitSeconds float64 `json:"estimatedWaitSeconds"`
	FailMode             string  `json:"failMode"`
}

func (s *Server) handleRoomStats(w http.ResponseWriter, r *http.Request) {
	sl, ok := s.adminLoadSale(w, r)
	if !ok {
		return
	}
	s.writeRoom(w, r, sl)
}

func (s *Server) writeRoom(w http.ResponseWriter, r *http.Request, sl sale.Sale) {
	b := roomBody{Sale: sl.ID, Enabled: sl.Room.Enabled, Up: s.roomUp.Load(), Paused: sl.Room.Paused,
		AdmissionRate: sl.Room.AdmissionRate, MaxActive: sl.Room.MaxActive, FailMode: sl.Room.FailMode}
	if sl.Room.Enabled && s.room != nil {
		st, err := s.room.Stats(r.Context(), sl.ID)
		if err != nil {
			s.log.Error("room stats", "sale", sl.ID, "err", err)
			s.writeCode(w, outcome.Unavailable, "waiting room unreachable")
			return
		}
		b.Paused, b.AdmissionRate, b.MaxActive = st.Paused, st.Rate, st.MaxActive
		b.QueueDepth, b.Active, b.AdmittedTotal, b.ExpiredTotal = st.Depth, st.Active, st.AdmittedTotal, st.ExpiredTotal
		b.EstimatedWaitSeconds = st.EstimatedWait.Seconds()
	}
	writeJSON(w, http.StatusOK, b)
}

// roomChange is the body of PUT /admin/v1/sales/{sale}/room; absent fields stay as they are.
type roomChange struct {
	Paused        *bool    `json:"paused"`
	AdmissionRate *float64 `json:"admissionRate"`
	MaxActive     *int     `json:"maxActive"`
}

// handleSetRoom pauses or resumes admission and changes the admission rate and the cap of active
// buyers: live in Redis for every instance at once, and in PostgreSQL so it outlives a restart.
func (s *Server) handleSetRoom(w http.ResponseWriter, r *http.Request) {
	sl, ok := s.adminLoadSale(w, r)
	if !ok {
		return
	}
	if !sl.Room.Enabled || s.room == nil {
		s.writeCode(w, outcome.NotFound, "sale "+sl.ID+" has no waiting room")
		return
	}
	var c roomChange
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || (c.Paused == nil && c.AdmissionRate == nil && c.MaxActive == nil) {
		s.writeCode(w, outcome.InvalidRequest, `body must be JSON with any of {"paused":bool,"admissionRate":number,"maxActive":int}`)
		return
	}
	next := sl
	if c.Paused != nil {
		next.Room.Paused = *c.Paused
	}
	if c.AdmissionRate != nil {
		next.Room.AdmissionRate = *c.AdmissionRate
	}
	if c.MaxActive != nil {
		next.Room.MaxActive = *c.MaxActive
	}
	if err := next.Validate(); err != nil {
		s.writeCode(w, outcome.InvalidRequest, err.Error())
		return
	}
	rev, err := s.store.SetRoom(r.Context(), sl.ID, next.Room)
	if err != nil {
		s.log.Error("save room", "sale", sl.ID, "err", err)
		s.writeCode(w, outcome.Unavailable, "order store unavailable; nothing changed")
		return
	}
	next.Revision = rev // an instance's round holding the sale as it was before cannot undo this
	// Configure keeps the queue, the admitted buyers and the counters; only the settings change.
	if err := s.room.Configure(r.Context(), sl.ID, next.Room, sl.OpensAt, next.Revision); err != nil {
		s.log.Error("set room live", "sale", sl.ID, "err", err)
		s.writeCode(w, outcome.Unavailable, "waiting room unreachable; the change is saved and applies when it is back")
		return
	}
	s.catalog.forget(sl.ID)
	s.metrics.roomRate.WithLabelValues(sl.ID).Set(next.Room.AdmissionRate)
	s.log.Warn("operator changed a waiting room", "sale", sl.ID, "paused", next.Room.Paused, "rate", next.Room.AdmissionRate, "max_active", next.Room.MaxActive)
	s.writeRoom(w, r, next)
}
