package server

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// A sale with reveal on hides where to buy until it opens: GET .../purchase-path hands each
// signed-in buyer, from the opening on, a purchase path that carries a signed, short-lived token
// (POST /api/v1/sales/{sale}/items/{item}/purchase/{token}), and the plain purchase route refuses
// that sale. A script that fires its purchases ahead of the opening has nowhere to fire them.
//
// The token is stateless: base64url (no padding) of the expiry in Unix milliseconds (8 bytes,
// big-endian) and the first 16 bytes of HMAC-SHA256(key, sale \x00 item \x00 user \x00 expiry).
// The key is derived from the JWT secret (auth.Verifier.DeriveKey), so every instance sharing
// that secret accepts the paths any of them handed out, and nothing is stored per buyer.

// pathKeyLabel names the derived key; a new token format takes a new label, so old paths fail.
const pathKeyLabel = "fsctl purchase path v1"

const (
	pathMACLen   = 16
	pathTokenLen = 8 + pathMACLen
	// pathTokenChars is the token's only valid length as text: 24 bytes are 32 base64 characters
	// with no spare bits, so one token has exactly one spelling.
	pathTokenChars = pathTokenLen / 3 * 4
)

// Reasons a purchase path is refused, as fsctl_purchase_paths_refused_total labels them.
const (
	refusedNotStarted = "not_started" // asked for before the opening
	refusedMissing    = "missing"     // the plain route of a reveal sale: no token at all
	refusedMalformed  = "malformed"   // not a token: wrong length or not canonical base64url
	refusedInvalid    = "invalid"     // forged, or signed for another buyer, sale or item
	refusedExpired    = "expired"     // signed but past its expiry
)

// revealer signs and checks purchase paths and counts what it did.
type revealer struct {
	key     []byte
	issued  prometheus.Counter
	refused *prometheus.CounterVec
}

func newRevealer(v *auth.Verifier, reg *prometheus.Registry) *revealer {
	rv := &revealer{
		issued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fsctl_purchase_paths_issued_total", Help: "Signed purchase paths handed out by GET .../purchase-path for sales with reveal on.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fsctl_purchase_paths_refused_total",
			Help: "Purchase paths refused, by reason: not_started (asked before the opening), missing (the plain route of a reveal sale), " +
				"malformed, invalid (forged or someone else's) or expired.",
		}, []string{"reason"}),
	}
	for _, r := range []string{refusedNotStarted, refusedMissing, refusedMalformed, refusedInvalid, refusedExpired} {
		rv.refused.WithLabelValues(r)
	}
	reg.MustRegister(rv.issued, rv.refused)
	if v != nil {
		rv.key = v.DeriveKey(pathKeyLabel)
	}
	return rv
}

// mac is the token's signature over what it is bound to.
func (rv *revealer) mac(saleID, itemID, user string, exp []byte) []byte {
	m := hmac.New(sha256.New, rv.key)
	m.Write([]byte(saleID))
	m.Write([]byte{0})
	m.Write([]byte(itemID))
	m.Write([]byte{0})
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write(exp)
	return m.Sum(nil)[:pathMACLen]
}

// sign returns the token for one buyer's purchase of one item, valid until exp (to the millisecond).
func (rv *revealer) sign(saleID, itemID, user string, exp time.Time) string {
	var b [pathTokenLen]byte
	binary.BigEndian.PutUint64(b[:8], uint64(exp.UnixMilli()))
	copy(b[8:], rv.mac(saleID, itemID, user, b[:8]))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// verify checks a token against the purchase it comes with; it returns "" when the token is good
// at now, else the reason it is refused.
func (rv *revealer) verify(token, saleID, itemID, user string, now time.Time) string {
	// The length first: a huge path costs nothing, and with it the decoder sees 32 characters only.
	if len(token) != pathTokenChars || len(rv.key) == 0 {
		return refusedMalformed
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(b) != pathTokenLen {
		return refusedMalformed
	}
	// Canonical spelling only (Strict already refuses spare bits; 24 bytes have none): one token,
	// one string, whatever keys on it.
	if base64.RawURLEncoding.EncodeToString(b) != token {
		return refusedMalformed
	}
	if !hmac.Equal(b[8:], rv.mac(saleID, itemID, user, b[:8])) {
		return refusedInvalid
	}
	exp := int64(binary.BigEndian.Uint64(b[:8]))
	if exp < 0 || now.UnixMilli() >= exp {
		return refusedExpired
	}
	return ""
}

// purchasePathBody is the answer of GET .../purchase-path.
type purchasePathBody struct {
	PurchasePath string `json:"purchasePath"`
	// ExpiresAt is when a revealed path stops working; absent for a sale without reveal, whose
	// path is the plain purchase route.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// plainPurchasePath is the purchase route without a token.
func plainPurchasePath(saleID, itemID string) string {
	return "/api/v1/sales/" + saleID + "/items/" + itemID + "/purchase"
}

// handlePurchasePath answers where the buyer may buy the item: for a sale with reveal on, from the
// opening on, a signed path of the buyer's own that works for the sale's reveal TTL; for any other
// sale the plain purchase route, so a client can always ask here first. It is not under the
// sale's rate limits: it reads the cached catalog and signs in memory, never touching Redis, and a
// buyer's purchase budget should not pay for the extra step.
func (s *Server) handlePurchasePath(w http.ResponseWriter, r *http.Request) {
	// A path is per buyer and short-lived: no cache on the way may keep or share it.
	w.Header().Set("Cache-Control", "no-store")
	user, err := s.auth.UserFromHeader(r.Header.Get("Authorization"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	saleID, itemID := r.PathValue("sale"), r.PathValue("item")
	if !sale.ValidSlug(saleID) || !sale.ValidSlug(itemID) {
		s.writeCode(w, outcome.InvalidRequest, "sale and item ids must match [A-Za-z0-9_-]{1,64}")
		return
	}
	sl, it, err := s.saleItem(r.Context(), saleID, itemID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !sl.Reveal.Enabled {
		writeJSON(w, http.StatusOK, purchasePathBody{PurchasePath: plainPurchasePath(sl.ID, it.ID)})
		return
	}
	now := s.now()
	if sl.Ended(now) {
		s.writeCode(w, outcome.SaleEnded, "sale "+sl.ID+" has ended")
		return
	}
	if !sl.OpenAt(now) {
		// NOT_STARTED is 425 Too Early here as for a purchase (outcome.HTTPStatus): one code, one status.
		s.reveal.refused.WithLabelValues(refusedNotStarted).Inc()
		s.writeCode(w, outcome.NotStarted, "sale "+sl.ID+" has not opened yet; its purchase path is revealed at the opening, "+
			sl.OpensAt.UTC().Format(time.RFC3339Nano)+": ask again then")
		return
	}
	exp := now.Add(cmp.Or(sl.Reveal.TTL, sale.DefaultRevealTTL)).Truncate(time.Millisecond)
	path := plainPurchasePath(sl.ID, it.ID) + "/" + s.reveal.sign(sl.ID, it.ID, user, exp)
	s.reveal.issued.Inc()
	exp = exp.UTC()
	writeJSON(w, http.StatusOK, purchasePathBody{PurchasePath: path, ExpiresAt: &exp})
}

// handleRevealedPurchase is a purchase through a path handed out by GET .../purchase-path: the
// same purchase as the plain route once its token is checked (checkPurchasePath).
func (s *Server) handleRevealedPurchase(w http.ResponseWriter, r *http.Request) {
	s.purchase(w, r, true)
}

// checkPurchasePath is the purchase's gate for sales with reveal on, run right after the sale
// lookup and before anything touches Redis. Through the token route (viaPath) the token must be
// this buyer's, for this sale and item, and not expired, whatever the sale says now: a sale whose
// reveal was turned off still refuses a bad token rather than ignore it. Through the plain route a
// reveal sale is refused.
//
// The plain route answers 403 FORBIDDEN, not 404: the route exists (other sales use it) and the
// purchase-path endpoint is public anyway, so pretending otherwise hides nothing, while the 403's
// message tells an honest client exactly what to do instead.
func (s *Server) checkPurchasePath(r *http.Request, sl sale.Sale, itemID, user string, viaPath bool) error {
	if !viaPath {
		if !sl.Reveal.Enabled {
			return nil
		}
		s.reveal.refused.WithLabelValues(refusedMissing).Inc()
		return outcome.Errorf(outcome.Forbidden, "sale %s reveals its purchase path at the opening: nothing was reserved; get your path from GET %s-path and POST to it",
			sl.ID, plainPurchasePath(sl.ID, itemID))
	}
	if why := s.reveal.verify(r.PathValue("token"), sl.ID, itemID, user, s.now()); why != "" {
		s.reveal.refused.WithLabelValues(why).Inc()
		fix := "get a new one from GET " + plainPurchasePath(sl.ID, itemID) + "-path"
		if why == refusedExpired {
			return outcome.Errorf(outcome.Forbidden, "purchase path expired: nothing was reserved; %s", fix)
		}
		return outcome.Errorf(outcome.Forbidden, "purchase path is invalid or expired (it is signed for one buyer and one item): nothing was reserved; %s", fix)
	}
	return nil
}
