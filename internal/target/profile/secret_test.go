package profile

import "testing"

func TestSecretOverride(t *testing.T) {
	foreign := &Profile{Name: "shop", Token: Token{Type: TokenHS256, Secret: "the-shops-own-secret-0123"}}
	for _, tc := range []struct {
		p     *Profile
		given bool
		want  string
	}{
		{Default(), false, "flag-secret-0123456789"}, // the flag's default is fsctl serve's own secret
		{Default(), true, "flag-secret-0123456789"},
		{foreign, false, ""}, // the default never replaces another target's secret
		{foreign, true, "flag-secret-0123456789"},
	} {
		if got := tc.p.SecretOverride("flag-secret-0123456789", tc.given); got != tc.want {
			t.Errorf("%s, given %v: %q, want %q", tc.p.Name, tc.given, got, tc.want)
		}
	}
	// What the foreign profile then signs with: its own secret, unless one was given.
	m, err := foreign.Minter(foreign.SecretOverride("flag-secret-0123456789", false))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.hmac) != foreign.Token.Secret {
		t.Fatalf("signs with %q, want the profile's own secret", m.hmac)
	}
}
