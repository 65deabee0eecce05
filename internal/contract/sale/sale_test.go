package sale

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, yaml, err string
	}{
		{"minimal with defaults", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nitems: [{id: a, quantity: 5}]\n", ""},
		{"bad sale id", "id: 's 1'\nopensAt: 2026-12-01T12:00:00Z\nitems: [{id: a, quantity: 5}]\n", "sale id"},
		{"no items", "id: s1\nopensAt: 2026-12-01T12:00:00Z\n", "at least one item"},
		{"duplicate item", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nitems: [{id: a, quantity: 1}, {id: a, quantity: 2}]\n", "twice"},
		{"negative quantity", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nitems: [{id: a, quantity: -1}]\n", "negative"},
		{"limit too high", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nperUserLimit: 17\nitems: [{id: a, quantity: 1}]\n", "perUserLimit"},
		{"hold too short", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nholdTTL: 10ms\nitems: [{id: a, quantity: 1}]\n", "holdTTL"},
		{"missing opensAt", "id: s1\nitems: [{id: a, quantity: 1}]\n", "opensAt"},
		{"unknown field", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nstock: 5\nitems: [{id: a, quantity: 1}]\n", "stock"},
		{"not yaml", "{{{", "line 1: did not find expected node content"},
		{"empty", "# nothing yet\n", "the file is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(strings.NewReader(tc.yaml))
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s.PerUserLimit != DefaultPerUserLimit || s.HoldTTL != DefaultHoldTTL || s.Items[0].Name != "a" {
					t.Fatalf("defaults not applied: %+v", s)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want error containing %q", err, tc.err)
			}
		})
	}
}

// TestRoomRateTakesUnits: a sale file's admission rate reads like a game day's, 250/s or 3000/m.
func TestRoomRateTakesUnits(t *testing.T) {
	for in, want := range map[string]float64{"50": 50, "50/s": 50, "3000/m": 50} {
		s, err := Parse(strings.NewReader("id: s1\nopensAt: 2026-12-01T12:00:00Z\nroom: {enabled: true, admissionRate: " + in + "}\nitems: [{id: a, quantity: 1}]\n"))
		if err != nil || s.Room.AdmissionRate != want {
			t.Errorf("%s: %v, %g", in, err, s.Room.AdmissionRate)
		}
	}
}

func TestExampleSaleIsValid(t *testing.T) {
	s, err := LoadFile("../../../examples/sale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Item("console"); !ok || s.HoldTTL != 10*time.Minute {
		t.Fatalf("example sale changed shape: %+v", s)
	}
}

func TestValidUserID(t *testing.T) {
	for _, ok := range []string{"1", "user@example.com", "0190c0de-7b1a-7000-8000-000000000000", strings.Repeat("x", 128), "a:b{c}"} {
		if !ValidUserID(ok) {
			t.Errorf("%q rejected", ok)
		}
	}
	for _, bad := range []string{"", "a b", "tab\there", strings.Repeat("x", 129), "nl\n", "\x7f"} {
		if ValidUserID(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParse checks the sale parser never panics and only accepts sales that validate.
func FuzzParse(f *testing.F) {
	f.Add("id: s1\nopensAt: 2026-12-01T12:00:00Z\nitems: [{id: a, quantity: 5}]\n")
	f.Add("id: s1\nopensAt: 2026-12-01T12:00:00Z\nholdTTL: 1h\nperUserLimit: 3\nitems: [{id: a, quantity: 5, priceCents: 100}]\n")
	f.Add("{}")
	f.Add("items: !!binary AAAA")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		if verr := s.Validate(); verr != nil {
			t.Fatalf("Parse accepted an invalid sale: %v", verr)
		}
	})
}

func TestParseNamesLineAndField(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"item quantity", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nitems:\n  - id: a\n    quantity: 1\n  - id: b\n    quantity: -3\n", "line 7: items[1].quantity"},
		{"room rate", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nroom:\n  enabled: true\n  admissionRate: 0\nitems: [{id: a, quantity: 1}]\n", "line 5: room.admissionRate"},
		{"limit", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nperUserLimit: 99\nitems: [{id: a, quantity: 1}]\n", "line 3: perUserLimit"},
		{"missing field points at its parent", "id: s1\nitems: [{id: a, quantity: 1}]\n", "line 1: opensAt"},
		{"unknown field", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nitems:\n  - id: a\n    quantty: 1\n", "line 5: items[0].quantty: unknown key (did you mean quantity? known: id, name, quantity, priceCents, shards)"},
		{"near miss", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nperUserLimt: 2\n", "line 3: perUserLimt: unknown key (did you mean perUserLimit? known: id, name, opensAt, perUserLimit,"},
		{"duration in words", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nholdTTL: 10 minutes\n", `line 3: holdTTL: "10 minutes" is not a duration: write it like 90s, 10m or 1h30m`},
		{"time in words", "id: s1\nopensAt: next friday\n", `line 2: opensAt: "next friday" is not a time`},
		{"rate in words", "id: s1\nopensAt: 2026-12-01T12:00:00Z\nroom: {enabled: true, admissionRate: fast}\n", `line 3: room.admissionRate: "fast" is not a rate`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "sale.Sale") || strings.Contains(err.Error(), "time.") || strings.Contains(err.Error(), "!!") {
				t.Fatalf("names a Go type: %v", err)
			}
		})
	}
}

// TestValidSlugMatchesItsPattern: the hand-written check accepts exactly [A-Za-z0-9_-]{1,64}.
func TestValidSlugMatchesItsPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	cases := []string{"", "a", "Sale_2026-12", strings.Repeat("x", 64), strings.Repeat("x", 65), "a b", "a/b", "é", "a\n", "-_-"}
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "ok"+string([]byte{byte(c)}))
	}
	for _, s := range cases {
		if got, want := ValidSlug(s), re.MatchString(s); got != want {
			t.Errorf("ValidSlug(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}
