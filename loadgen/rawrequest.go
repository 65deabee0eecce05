package loadgen

import (
	"bytes"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// rawRequest writes a purchase's HTTP/1.1 bytes straight from the profile's template: the bytes
// net/http's Request.Write writes for the request PurchaseRequest builds, without building that
// request (its URL parsed again, its header map, its body reader), which was most of what
// preparing a buyer cost the raw engine. TestRawRequestWritesWhatNetHTTPWrites holds the two to
// the same bytes. A template it does not write the same way (a header net/http writes in its
// own place, an unusual host, a value with a line break) is left to net/http: ok is false.
type rawRequest struct {
	method, url, body string
	headers           []rawHeader // by canonical name, as net/http sorts them
	ok                bool
}

// rawHeader is one header of the purchase template.
type rawHeader struct{ name, tmpl string }

// rawOwnHeaders are the headers Request.Write writes in places of its own.
var rawOwnHeaders = []string{"Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer"}

// newRawRequest compiles the profile's purchase template.
func newRawRequest(prof *profile.Profile) rawRequest {
	pu := prof.Purchase
	t := rawRequest{method: pu.Method, url: pu.URL, body: pu.Body, ok: isToken(pu.Method)}
	for name, tmpl := range pu.Headers {
		c := textproto.CanonicalMIMEHeaderKey(name)
		if !isToken(c) || slices.Contains(rawOwnHeaders, c) || slices.ContainsFunc(t.headers, func(h rawHeader) bool { return h.name == c }) {
			t.ok = false
		}
		t.headers = append(t.headers, rawHeader{name: c, tmpl: tmpl})
	}
	slices.SortFunc(t.headers, func(a, b rawHeader) int { return strings.Compare(a.name, b.name) })
	return t
}

// isToken reports whether s is a non-empty HTTP token of letters, digits and dashes.
func isToken(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
	})
}

// rawURL is a rendered purchase URL as the request writes it, kept while the next buyer's renders
// the same, and the buffers append renders a buyer's URL, body and header values into: one per
// preparing goroutine, so that writing a buyer leaves nothing behind but its bytes.
type rawURL struct {
	rendered, requestURI, host, full string
	url, body, val                   []byte
}

// append writes buyer v's purchase after dst. It reports false, having written nothing that
// counts, when net/http must write this one.
func (t *rawRequest) append(dst []byte, base string, v profile.Vars, last *rawURL) ([]byte, bool) {
	if !t.ok || t.url == "" {
		return dst, false
	}
	// Rendered into a reused buffer: a buyer's URL is most often the last one's.
	last.url = profile.AppendRoute(last.url[:0], base, t.url, v)
	if string(last.url) != last.rendered {
		u := string(last.url)
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme != "http" || pu.Opaque != "" || pu.User != nil || !plainHost(pu.Host) {
			return dst, false
		}
		last.rendered, last.requestURI, last.host, last.full = u, pu.RequestURI(), pu.Host, pu.String()
	}
	dst = append(dst, t.method...)
	dst = append(dst, ' ')
	dst = append(dst, last.requestURI...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, last.host...)
	dst = append(dst, "\r\nUser-Agent: Go-http-client/1.1\r\n"...)
	last.body = profile.AppendRender(last.body[:0], t.body, v)
	if len(last.body) > 0 || t.method == "POST" || t.method == "PUT" || t.method == "PATCH" { // as net/http's transfer writer
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(last.body)), 10)
		dst = append(dst, "\r\n"...)
	}
	for _, h := range t.headers {
		last.val = profile.AppendRender(last.val[:0], h.tmpl, v)
		if len(last.val) == 0 {
			continue // PurchaseRequest sets no header that renders empty
		}
		if bytes.ContainsAny(last.val, "\r\n") {
			return dst, false
		}
		dst = append(dst, h.name...)
		dst = append(dst, ": "...)
		dst = append(dst, bytes.Trim(last.val, " \t")...)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	return append(dst, last.body...), true
}

// plainHost is a host[:port] net/http writes as it is: printable ASCII, no zone, no path, no
// empty port (which net/http drops).
func plainHost(h string) bool {
	return h != "" && !strings.HasSuffix(h, ":") &&
		!strings.ContainsFunc(h, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '/' || r == '%' || r == '@' })
}
