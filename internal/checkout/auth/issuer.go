package auth

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// The paths of IssuerHandler's documents.
const (
	JWKSPath      = "/.well-known/jwks.json"
	DiscoveryPath = "/.well-known/openid-configuration"
)

// IssuerHandler serves the public half of a minimal OpenID Connect issuer at issuer (its base
// URL): the key set at JWKSPath and the discovery document at DiscoveryPath, which names the
// issuer, its jwks_uri and the algorithms of its keys. It issues no tokens: whoever holds a key
// file signs them (SigningKey.Mint). keys is called on every request, so a rotated key is
// published at once.
func IssuerHandler(issuer string, keys func() ([]*SigningKey, error)) http.Handler {
	issuer = strings.TrimRight(issuer, "/")
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+JWKSPath, func(w http.ResponseWriter, _ *http.Request) {
		ks, err := keys()
		if err != nil {
			http.Error(w, "signing keys unavailable", http.StatusInternalServerError)
			return
		}
		b, err := JWKS(ks...)
		if err != nil {
			http.Error(w, "signing keys unavailable", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		// Verifiers cache the set themselves and refetch on an unknown kid; a proxy must not
		// hide a rotation from them.
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET "+DiscoveryPath, func(w http.ResponseWriter, _ *http.Request) {
		ks, err := keys()
		if err != nil {
			http.Error(w, "signing keys unavailable", http.StatusInternalServerError)
			return
		}
		algs := []string{}
		for _, k := range ks {
			if a := k.Method.Alg(); !slices.Contains(algs, a) {
				algs = append(algs, a)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                issuer,
			"jwks_uri":                              issuer + JWKSPath,
			"id_token_signing_alg_values_supported": algs,
			"subject_types_supported":               []string{"public"},
			"response_types_supported":              []string{"id_token"},
		})
	})
	return mux
}
