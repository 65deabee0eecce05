package plainjson

import "testing"

// TestString: a plain string is read with the index after it; an escape, a control or non-ASCII
// byte, a missing quote or no string at all is not.
func TestString(t *testing.T) {
	for _, c := range []struct {
		in   string
		at   int
		want string
		next int
		ok   bool
	}{
		{`"abc",`, 0, "abc", 5, true},
		{`x:""}`, 2, "", 4, true},
		{`"a<b>&c"`, 0, "a<b>&c", 8, true},
		{`"a\"b"`, 0, "", 0, false},
		{"\"a\tb\"", 0, "", 0, false},
		{"\"caf\xc3\xa9\"", 0, "", 0, false},
		{`"abc`, 0, "", 0, false},
		{`abc`, 0, "", 0, false},
		{`"a"`, 3, "", 0, false},
	} {
		got, next, ok := String([]byte(c.in), c.at)
		if string(got) != c.want || next != c.next || ok != c.ok {
			t.Errorf("String(%q, %d) = %q, %d, %v; want %q, %d, %v", c.in, c.at, got, next, ok, c.want, c.next, c.ok)
		}
	}
}

// TestSkipSpace: JSON's four white-space bytes are skipped, nothing else.
func TestSkipSpace(t *testing.T) {
	for _, c := range []struct {
		in       string
		at, want int
	}{
		{" \t\r\n{", 0, 4}, {"{ }", 1, 2}, {"  ", 0, 2}, {"\v{", 0, 0}, {"\u00a0{", 0, 0}, {"", 0, 0},
	} {
		if got := SkipSpace([]byte(c.in), c.at); got != c.want {
			t.Errorf("SkipSpace(%q, %d) = %d, want %d", c.in, c.at, got, c.want)
		}
	}
}
