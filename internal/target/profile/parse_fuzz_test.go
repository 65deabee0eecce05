package profile

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/profiles"
)

// FuzzParse: any bytes either parse into a profile whose templates render and whose keys can
// be named, or fail with a *FieldError that names no Go type; never a panic.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"fsctl.yaml", "spring-article.yaml"} {
		b, err := profiles.Files.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(base))
	f.Add([]byte("name: x\npurchase: {url: '/${'}\n"))
	f.Add([]byte("redis: {shardTag: '{${shard}'}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b, "fuzz", "")
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a FieldError", err, err)
			}
			if strings.Contains(err.Error(), "type profile.") || strings.Contains(err.Error(), "into profile.") {
				t.Fatalf("error names a Go type: %v", err)
			}
			return
		}
		if !slices.Contains(methods, p.Purchase.Method) || p.Name == "" || p.Redis.Stock == "" {
			t.Fatalf("parsed an invalid profile: %+v", p)
		}
		// A URL template may render into a URL net/http refuses: an error, never a panic.
		_, _ = p.PurchaseRequest("http://h", Buy{Sale: "s", Item: "i", User: "u", Key: "k", Token: "t"})
		for _, k := range p.Keys("s", "i", 3) {
			if k.Stock == "" && p.Redis.Stock != "" && p.Redis.Tag != "" {
				t.Fatalf("stock key rendered empty from %q", p.Redis.Stock)
			}
		}
	})
}
