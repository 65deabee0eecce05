package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAdminTokenCheck: /admin/v1 answers 401 to a request without the operator token, with a
// wrong one, a prefix of it, a longer one or another scheme, and lets the right one through
// (here to a server without kill switches, which answers 404 behind the check).
func TestAdminTokenCheck(t *testing.T) {
	const token = "operator-token-0123456789"
	cfg := DefaultConfig()
	cfg.AdminToken, cfg.SoldOut = token, SoldOutOff
	h := New(cfg, Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler()
	for name, tc := range map[string]struct {
		auth string
		want int
	}{
		"missing":        {"", http.StatusUnauthorized},
		"wrong":          {"Bearer operator-token-9876543210", http.StatusUnauthorized},
		"prefix":         {"Bearer " + token[:len(token)-1], http.StatusUnauthorized},
		"longer":         {"Bearer " + token + "0", http.StatusUnauthorized},
		"empty bearer":   {"Bearer ", http.StatusUnauthorized},
		"no scheme":      {token, http.StatusUnauthorized},
		"another scheme": {"Basic " + token, http.StatusUnauthorized},
		"right":          {"Bearer " + token, http.StatusNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/admin/v1/switches", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Fatalf("Authorization %q: %d %s, want %d", tc.auth, w.Code, w.Body, tc.want)
			}
		})
	}
}

// TestAdminTokenComparedInConstantTime reads admin.go: the operator token may be compared only
// through crypto/subtle.ConstantTimeCompare, never with == or != (whose time leaks how much of a
// guess matched) or strings/bytes comparisons.
func TestAdminTokenComparedInConstantTime(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "admin.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	mentionsToken := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "AdminToken" {
				found = true
			}
			return !found
		})
		return found
	}
	constantTime := 0
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			operands := (mentionsToken(n.X) && !isSubtle(n.X)) || (mentionsToken(n.Y) && !isSubtle(n.Y))
			if (n.Op == token.EQL || n.Op == token.NEQ) && operands && !isEmptyString(n.X) && !isEmptyString(n.Y) {
				t.Errorf("%s: the operator token compared with %s", fset.Position(n.Pos()), n.Op)
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || !mentionsToken(n) {
				return true
			}
			pkg, _ := sel.X.(*ast.Ident)
			switch {
			case pkg != nil && pkg.Name == "subtle" && sel.Sel.Name == "ConstantTimeCompare":
				constantTime++
			case pkg != nil && (pkg.Name == "strings" || pkg.Name == "bytes"):
				t.Errorf("%s: the operator token compared with %s.%s", fset.Position(n.Pos()), pkg.Name, sel.Sel.Name)
			}
		}
		return true
	})
	if constantTime == 0 {
		t.Error("admin.go never compares the operator token with subtle.ConstantTimeCompare")
	}
}

// isEmptyString is the literal "": checking whether a token is configured at all leaks nothing.
func isEmptyString(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	return ok && lit.Kind == token.STRING && lit.Value == `""`
}

// isSubtle is a call of crypto/subtle, whose result may be compared with ==.
func isSubtle(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "subtle"
}
