package articleshop

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
)

// Order statuses, as stored in flash_sale_order.status.
const (
	StatusPending   = "PENDING"
	StatusPaid      = "PAID"
	StatusCancelled = "CANCELLED"
)

// OrderMessage is the Kafka message published for every successful reservation.
type OrderMessage struct {
	OrderID   string    `json:"orderId"`
	ItemID    int64     `json:"itemId"`
	UserID    string    `json:"userId"`
	CreatedAt time.Time `json:"createdAt"`
}

// maxBody bounds request bodies; the only body is {"quantity":1}.
const maxBody = 4 << 10

// Handler returns the HTTP API: purchase, item view, pay and health.
func (s *Shop) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/flash-sales/items/{itemId}/purchase", s.purchase)
	mux.HandleFunc("GET /api/flash-sales/items/{itemId}", s.item)
	mux.HandleFunc("POST /api/flash-sales/orders/{orderId}/pay", s.pay)
	mux.HandleFunc("GET /actuator/health", s.health)
	return mux
}

// purchase reserves one unit in Redis, publishes the order and answers 202 before the order is
// in PostgreSQL: the consumer writes it later, which is the article's whole design.
func (s *Shop) purchase(w http.ResponseWriter, r *http.Request) {
	itemID, ok := pathItemID(w, r)
	if !ok {
		return
	}
	user, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	var body struct {
		Quantity *int `json:"quantity"`
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "BAD_REQUEST", "request body too large or unreadable")
		return
	}
	if len(strings.TrimSpace(string(raw))) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			writeError(w, http.StatusBadRequest, "BAD_REQUEST", "malformed JSON body")
			return
		}
	}
	if body.Quantity != nil && *body.Quantity != 1 {
		writeError(w, http.StatusBadRequest, "INVALID_QUANTITY", "quantity must be 1: one unit per user")
		return
	}

	stockKey, buyersKey := itemKeys(itemID)
	res, err := reserveScript.Run(r.Context(), s.rdb, []string{stockKey, buyersKey}, user).Int64()
	if err != nil {
		s.log.Error("reserve failed", "item", itemID, "err", err)
		writeError(w, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "stock service unavailable")
		return
	}
	switch res {
	case -1:
		writeError(w, http.StatusConflict, "ALREADY_PURCHASED", "this user already bought this item")
		return
	case -2:
		writeError(w, http.StatusGone, "SOLD_OUT", "the item is sold out")
		return
	case -3:
		writeError(w, http.StatusNotFound, "ITEM_NOT_FOUND", "no flash sale for this item")
		return
	}

	id, err := uuid.NewV7()
	if err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.PublishTimeout)
		err = s.publish(ctx, OrderMessage{OrderID: id.String(), ItemID: itemID, UserID: user, CreatedAt: time.Now().UTC()})
		cancel()
	}
	if err != nil && s.cfg.LoseOrders {
		// The planted lie (Config.LoseOrders): the buyer is told it worked, the order is gone.
		s.log.Error("publish failed; LYING: answering 202 and losing the order", "item", itemID, "user", user, "err", err)
		writeJSON(w, http.StatusAccepted, map[string]string{"orderId": id.String(), "status": StatusPending})
		return
	}
	if err != nil {
		s.log.Error("publish failed; releasing reservation", "item", itemID, "user", user, "err", err)
		// The request context may already be cancelled; the release must still happen.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer cancel()
		if rerr := releaseScript.Run(ctx, s.rdb, []string{stockKey, buyersKey}, user).Err(); rerr != nil {
			s.log.Error("COMPENSATION FAILED: stock leaked", "item", itemID, "user", user, "err", rerr)
		}
		writeError(w, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "order could not be queued; try again")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"orderId": id.String(), "status": StatusPending})
}

// publish writes one order synchronously, so the 202 is only sent once Kafka has it.
func (s *Shop) publish(ctx context.Context, m OrderMessage) error {
	value, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return s.writer.WriteMessages(ctx, kafka.Message{Key: []byte(strconv.FormatInt(m.ItemID, 10)), Value: value})
}

// item shows the item as PostgreSQL knows it plus the live Redis stock (null when not preheated).
func (s *Shop) item(w http.ResponseWriter, r *http.Request) {
	itemID, ok := pathItemID(w, r)
	if !ok {
		return
	}
	var name string
	var quantity, sold int64
	err := s.pool.QueryRow(r.Context(), `SELECT name, quantity, sold FROM flash_sale_item WHERE id = $1`, itemID).
		Scan(&name, &quantity, &sold)
	if errors.Is(err, pgx.ErrNoRows) {
		writeError(w, http.StatusNotFound, "ITEM_NOT_FOUND", "no such item")
		return
	}
	if err != nil {
		s.log.Error("item lookup failed", "item", itemID, "err", err)
		writeError(w, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "database unavailable")
		return
	}
	stockKey, _ := itemKeys(itemID)
	var stock *int64
	n, err := s.rdb.Get(r.Context(), stockKey).Int64()
	switch {
	case err == nil:
		stock = &n
	case !errors.Is(err, redis.Nil):
		s.log.Error("stock lookup failed", "item", itemID, "err", err)
		writeError(w, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "stock service unavailable")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"itemId": itemID, "name": name, "quantity": quantity, "sold": sold, "stock": stock})
}

// pay moves the caller's own PENDING order to PAID. Someone else's order answers 404, not 403,
// so order ids cannot be probed.
func (s *Shop) pay(w http.ResponseWriter, r *http.Request) {
	orderID, err := uuid.Parse(r.PathValue("orderId"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "BAD_REQUEST", "orderId must be a UUID")
		return
	}
	user, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	tag, err := s.pool.Exec(r.Context(),
		`UPDATE flash_sale_order SET status = 'PAID' WHERE id = $1 AND user_id = $2 AND status = 'PENDING'`, orderID, user)
	if err == nil && tag.RowsAffected() == 1 {
		writeJSON(w, http.StatusOK, map[string]string{"orderId": orderID.String(), "status": StatusPaid})
		return
	}
	var status string
	if err == nil {
		err = s.pool.QueryRow(r.Context(), `SELECT status FROM flash_sale_order WHERE id = $1 AND user_id = $2`, orderID, user).Scan(&status)
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		writeError(w, http.StatusNotFound, "ORDER_NOT_FOUND", "no such order for this user")
	case err != nil:
		s.log.Error("pay failed", "order", orderID, "err", err)
		writeError(w, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "database unavailable")
	default:
		writeError(w, http.StatusConflict, "INVALID_ORDER_STATUS", "order is "+status+", not PENDING")
	}
}

// health is the Spring actuator's shape: UP only when both Redis and PostgreSQL answer.
func (s *Shop) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if s.rdb.Ping(ctx).Err() != nil || s.pool.Ping(ctx) != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "DOWN"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "UP"})
}

// authenticate returns the userId claim of a valid RS256 bearer token, or answers 401.
func (s *Shop) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	raw, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || raw == "" {
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "missing bearer token")
		return "", false
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return s.cfg.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithExpirationRequired())
	if err != nil {
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "invalid token")
		return "", false
	}
	user, _ := claims["userId"].(string)
	if user == "" {
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "token has no userId")
		return "", false
	}
	return user, true
}

// pathItemID parses {itemId} as a positive integer, answering 400 otherwise.
func pathItemID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("itemId"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "BAD_REQUEST", "itemId must be a positive integer")
		return 0, false
	}
	return id, true
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]string{"code": code, "message": message})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
