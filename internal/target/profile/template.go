package profile

import (
	"fmt"
	"slices"
	"strings"
)

// Placeholders each template may use. A template naming anything else is refused when the
// profile is read, not when the first buyer is built.
var (
	requestVars = []string{"sale", "item", "user", "key", "token", "buyer"}
	claimVars   = []string{"sale", "user"}
	tagVars     = []string{"sale", "item", "shard"}
	keyVars     = []string{"sale", "item", "shard", "tag"}
	pageVars    = []string{"sale"}
	itemVars    = []string{"sale", "item"}
	orderVars   = []string{"sale", "item", "order"}
)

// placeholders lists the ${name}s of a template, or says where one is not closed.
func placeholders(tmpl string) ([]string, error) {
	var names []string
	for rest := tmpl; ; {
		i := strings.Index(rest, "${")
		if i < 0 {
			return names, nil
		}
		end := strings.IndexByte(rest[i:], '}')
		if end < 0 {
			return nil, fmt.Errorf("%q: ${ without a closing }", tmpl)
		}
		names = append(names, rest[i+2:i+end])
		rest = rest[i+end+1:]
	}
}

// checkTemplate refuses a placeholder outside allowed.
func checkTemplate(tmpl string, allowed []string) error {
	names, err := placeholders(tmpl)
	if err != nil {
		return err
	}
	for _, n := range names {
		if !slices.Contains(allowed, n) {
			return fmt.Errorf("unknown placeholder ${%s}: this template may use %s", n, list(allowed))
		}
	}
	return nil
}

func list(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "${" + n + "}"
	}
	return strings.Join(out, ", ")
}

// Vars are the values a template's placeholders take.
type Vars map[string]string

// Render fills a template checked when the profile was read.
func Render(tmpl string, v Vars) string {
	if !strings.Contains(tmpl, "${") {
		return tmpl
	}
	var buf [256]byte
	return string(AppendRender(buf[:0], tmpl, v))
}

// AppendRender appends tmpl filled with v to dst: Render without a string of its own, for a
// caller that writes buyers by the hundred thousand into buffers it reuses.
func AppendRender(dst []byte, tmpl string, v Vars) []byte {
	for rest := tmpl; ; {
		i := strings.Index(rest, "${")
		if i < 0 {
			return append(dst, rest...)
		}
		end := strings.IndexByte(rest[i:], '}')
		if end < 0 {
			return append(dst, rest...)
		}
		dst = append(dst, rest[:i]...)
		dst = append(dst, v[rest[i+2:i+end]]...)
		rest = rest[i+end+1:]
	}
}
