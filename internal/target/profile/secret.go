package profile

// SecretOverride is the secret an operator's --jwt-secret flag puts in place of the profile's
// own, as Minter takes it: the flag's value for fsctl serve, whose secret the flag's default is;
// for any other target only a value the operator gave, since that default would sign every buyer's
// token with a secret the target does not know. "" keeps the profile's secret. While token.keyEnv
// names a key (FSCTL_JWT_KEY: fsctl serve verifies an identity provider's tokens) only a given
// value replaces it: the default would sign HS256 tokens that server refuses.
func (p *Profile) SecretOverride(flag string, given bool) string {
	if given || p.Bundled() && p.KeyFromEnv() == "" {
		return flag
	}
	return ""
}
