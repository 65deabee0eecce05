package profile

import (
	"bufio"
	"crypto/rsa"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/checkout/auth"
)

// minSecretLen is the shortest HS256 secret a buyer's token is signed with.
const minSecretLen = 16

// Minter makes buyers' tokens as the profile says: signs HS256 or RS256 claims, or an identity
// provider's with the key token.keyEnv names, or hands out the ready-made tokens of a file.
type Minter struct {
	kind   string
	claims map[string]any
	hmac   []byte
	hs     *hs256 // mints the hmac tokens
	rsa    *rsa.PrivateKey
	// key, when set, signs instead of hmac or rsa (token.keyEnv); iss and aud are its claims.
	key      *auth.SigningKey
	iss, aud string
	file     map[string]string
	users    []string
}

// Minter prepares the profile's token maker. secret, when not empty, replaces an HS256 profile's
// secret (a --jwt-secret flag) and wins over token.keyEnv; without it, a key that token.keyEnv
// names signs the tokens.
func (p *Profile) Minter(secret string) (*Minter, error) {
	m := &Minter{kind: p.Token.Type, claims: p.Token.Claims}
	if path := p.KeyFromEnv(); path != "" && (secret == "" || p.Token.Type != TokenHS256) {
		k, err := auth.LoadSigningKey(path)
		if err != nil {
			return nil, fmt.Errorf("token: $%s: %w", p.Token.KeyEnv, err)
		}
		m.key = k
		if p.Token.IssuerEnv != "" {
			m.iss = os.Getenv(p.Token.IssuerEnv)
		}
		if p.Token.AudienceEnv != "" {
			m.aud = os.Getenv(p.Token.AudienceEnv)
		}
		return m, nil
	}
	switch p.Token.Type {
	case TokenHS256:
		from := "token.secret"
		if secret != "" {
			from = "--jwt-secret"
		} else if secret = p.Token.Secret; secret == "" {
			secret, from = os.Getenv(p.Token.SecretEnv), "$"+p.Token.SecretEnv
		}
		if len(secret) < minSecretLen {
			return nil, fmt.Errorf("token: the hs256 secret from %s is %d bytes: set it to the target's secret (at least %d)", from, len(secret), minSecretLen)
		}
		m.hmac = []byte(secret)
		var err error
		if m.hs, err = newHS256(m.claims, m.hmac); err != nil {
			return nil, fmt.Errorf("token.claims: %w", err)
		}
	case TokenRS256:
		pem, err := os.ReadFile(p.Path(p.Token.KeyFile))
		if err != nil {
			return nil, fmt.Errorf("token.keyFile: %w", err)
		}
		if m.rsa, err = jwt.ParseRSAPrivateKeyFromPEM(pem); err != nil {
			return nil, fmt.Errorf("token.keyFile %s: %w", p.Path(p.Token.KeyFile), err)
		}
	case TokenFile:
		var err error
		if m.file, m.users, err = readTokens(p.Path(p.Token.File)); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// readTokens reads "user token" lines; blank lines and # comments are skipped.
func readTokens(path string) (map[string]string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("token.file: %w", err)
	}
	defer f.Close()
	tokens := map[string]string{}
	var users []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, tok, ok := strings.Cut(line, " ")
		tok = strings.TrimSpace(tok)
		if !ok || tok == "" {
			return nil, nil, fmt.Errorf("token.file %s: line %d: want \"user token\"", path, n)
		}
		if _, dup := tokens[user]; dup {
			return nil, nil, fmt.Errorf("token.file %s: line %d: user %q listed twice", path, n, user)
		}
		tokens[user] = tok
		users = append(users, user)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("token.file %s: %w", path, err)
	}
	if len(users) == 0 {
		return nil, nil, fmt.Errorf("token.file %s: no tokens", path)
	}
	return tokens, users, nil
}

// Users are the only buyers a token file can serve, in its order; nil when any user can be minted.
func (m *Minter) Users() []string { return m.users }

// Mint makes the token of user for sale, valid from now for ttl.
func (m *Minter) Mint(user, sale string, now time.Time, ttl time.Duration) (string, error) {
	switch m.kind {
	case TokenNone:
		return "", nil
	case TokenFile:
		tok, ok := m.file[user]
		if !ok {
			return "", fmt.Errorf("token.file has no token for user %q", user)
		}
		return tok, nil
	}
	if m.hs != nil {
		return m.hs.mint(user, sale, now, ttl)
	}
	claims := jwt.MapClaims{"iat": now.Unix(), "exp": now.Add(ttl).Unix()}
	vars := Vars{"user": user, "sale": sale}
	for k, v := range m.claims {
		if s, ok := v.(string); ok {
			v = Render(s, vars)
		}
		claims[k] = v
	}
	if m.key != nil {
		if m.iss != "" {
			claims["iss"] = m.iss
		}
		if m.aud != "" {
			claims["aud"] = m.aud
		}
		return m.key.Sign(claims)
	}
	if m.rsa != nil {
		return jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(m.rsa)
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(m.hmac)
}
