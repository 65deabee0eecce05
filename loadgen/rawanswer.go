package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http/httputil"

	"golang.org/x/net/http/httpguts"
)

// rawAnswer is what the raw engine keeps of one HTTP/1.1 answer.
type rawAnswer struct {
	status     int
	proto      string
	close      bool // the server closes the connection after it
	retryAfter string
	body       []byte // at most maxBody bytes of it, in the reader's buffer until its next answer
	headed     bool   // the status line and headers were read: the server has the request
}

// errMalformed is an answer that is not HTTP/1.x.
var errMalformed = errors.New("malformed HTTP answer")

// readRawAnswer reads one answer off a pipelined connection: the status line, the headers the
// raw engine uses (Content-Length, Transfer-Encoding, Connection, Retry-After) and the body. It
// is net/http's ReadResponse cut to that: no header map, no Response, no body reader, which were
// a tenth of the generator's CPU in a 50,000-buyer burst. An answer it cannot frame is an error,
// never a guess: the stream would be out of step. The body is read into buf, which the next answer
// reuses.
func readRawAnswer(br *bufio.Reader, buf *bytes.Buffer) (rawAnswer, error) {
	var a rawAnswer
	line, err := readLine(br)
	if err != nil {
		return a, err
	}
	if a.proto, a.status, err = statusLine(line); err != nil {
		return a, err
	}
	length, chunked := -1, false
	var connection []string
	for {
		line, err := readLine(br)
		if err != nil {
			return a, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return a, fmt.Errorf("%w: header line %q", errMalformed, line)
		}
		value = bytes.Trim(value, " \t")
		switch {
		case equalFold(name, "Content-Length"):
			n, ok := digits(value)
			if !ok || length >= 0 && n != length {
				return a, fmt.Errorf("%w: Content-Length %q", errMalformed, value)
			}
			length = n
		case equalFold(name, "Transfer-Encoding"):
			if !equalFold(value, "chunked") {
				return a, fmt.Errorf("%w: Transfer-Encoding %q", errMalformed, value)
			}
			chunked = true
		case equalFold(name, "Connection"):
			connection = append(connection, string(value))
		case equalFold(name, "Retry-After"):
			a.retryAfter = string(value)
		}
	}
	// As net/http decides it: a "close" token among the Connection values, or HTTP/1.0 without a
	// "keep-alive" one.
	a.close = httpguts.HeaderValuesContainsToken(connection, "close") ||
		a.proto == "HTTP/1.0" && !httpguts.HeaderValuesContainsToken(connection, "keep-alive")
	a.headed = true
	a.body, err = readRawBody(br, a, length, chunked, buf)
	return a, err
}

// readRawBody reads the answer's body as its headers frame it: none for 1xx, 204 and 304, chunked,
// by length, or to the end of the connection.
func readRawBody(br *bufio.Reader, a rawAnswer, length int, chunked bool, buf *bytes.Buffer) ([]byte, error) {
	var body io.Reader
	switch {
	case a.status < 200 || a.status == 204 || a.status == 304:
		return nil, nil
	case chunked:
		body = httputil.NewChunkedReader(br)
	case length == 0:
		return nil, nil
	case length > 0:
		body = io.LimitReader(br, int64(length))
	case !a.close:
		return nil, fmt.Errorf("%w: a kept-alive answer with neither Content-Length nor chunks", errMalformed)
	default:
		body = br // to the end of the connection
	}
	buf.Reset()
	_, err := buf.ReadFrom(io.LimitReader(body, maxBody))
	b := buf.Bytes()
	var rest int64
	if err == nil {
		rest, err = io.Copy(io.Discard, body) // keep the stream in step past an oversized answer
	}
	if err == nil && length > 0 && int64(len(b))+rest < int64(length) {
		err = io.ErrUnexpectedEOF // the connection ended inside the body
	}
	for chunked && err == nil { // the trailer, to its empty line
		var line []byte
		if line, err = readLine(br); err == nil && len(line) == 0 {
			break
		}
	}
	return b, err
}

// readLine reads a line without its CRLF (or LF); a line longer than the reader's buffer is an
// error.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: a line longer than %d bytes", errMalformed, br.Size())
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// statusLine reads "HTTP/1.1 409 Conflict".
func statusLine(line []byte) (string, int, error) {
	proto, rest, ok := bytes.Cut(line, []byte(" "))
	var p string
	switch {
	case !ok:
	case string(proto) == "HTTP/1.1":
		p = "HTTP/1.1"
	case string(proto) == "HTTP/1.0":
		p = "HTTP/1.0"
	}
	code, _, _ := bytes.Cut(rest, []byte(" "))
	n, isNum := digits(code)
	if p == "" || !isNum || len(code) != 3 || n < 100 {
		return "", 0, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	return p, n, nil
}

// digits reads a decimal number of at most 18 digits, nothing else (no sign, no spaces).
func digits(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// equalFold is ASCII case-insensitive equality of b and s.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}
