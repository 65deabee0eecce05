package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"

	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// openRoom connects the waiting room's Redis (the stock Redis unless RoomRedisURL says otherwise)
// and builds the admission token signer and the proof-of-work issuer. An unreachable room Redis
// does not stop the start: the sale's fail mode decides what buyers get while it is away.
func (a *App) openRoom(ctx context.Context, cfg AppConfig) (*room.Store, *room.Tokens, *room.Challenges, error) {
	a.roomRdb = a.rdb
	if cfg.RoomRedisURL != "" && cfg.RoomRedisURL != cfg.RedisURL {
		addr, err := redisconn.Parse(cfg.RoomRedisURL)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("room redis: %w", err)
		}
		a.roomRdb = addr.Open(redisconn.Tune{PoolSize: 128})
	}
	rm := room.New(a.roomRdb)
	if err := rm.LoadScripts(ctx); err != nil {
		a.log.Warn("waiting room Redis unreachable at start; sales with a room follow their fail mode until it is back", "err", err)
	}
	secret := cfg.RoomSecret
	if len(secret) == 0 {
		secret = derive(cfg.JWTSecret, "fsctl waiting room")
	}
	tokens, err := room.NewTokens(derive(secret, "admission tokens"), nil)
	if err != nil {
		return nil, nil, nil, err
	}
	challenges, err := room.NewChallenges(derive(secret, "proof of work"), nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return rm, tokens, challenges, nil
}

// derive makes an independent key for one purpose from a secret (HMAC-SHA256 as a KDF), so one
// configured secret never signs two kinds of thing.
func derive(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
