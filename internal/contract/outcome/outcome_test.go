package outcome

import (
	"fmt"
	"net/http"
	"testing"
)

func TestHTTPStatus(t *testing.T) {
	want := map[Code]int{
		Reserved: 202, SoldOut: 410, AlreadyPurchased: 409, NotStarted: 425, NotAdmitted: 429, RateLimited: 429,
		Paused: 503, InvalidRequest: 400, Unauthorized: 401, NotFound: 404, MethodNotAllowed: 405,
		BodyTooLarge: 413, Unprocessable: 422, Unavailable: 503, Overloaded: 503, PipelineDown: 503, Internal: 500,
	}
	for c, st := range want {
		if got := HTTPStatus(c); got != st {
			t.Errorf("%s -> %d, want %d", c, got, st)
		}
	}
	if HTTPStatus("SOMETHING_NEW") != http.StatusInternalServerError {
		t.Error("unknown codes must be 500")
	}
}

func TestCodeAndMessageThroughWrapping(t *testing.T) {
	err := fmt.Errorf("context: %w", Errorf(SoldOut, "item %s is gone", "x"))
	if CodeOf(err) != SoldOut || MessageOf(err) != "item x is gone" {
		t.Fatalf("got %s %q", CodeOf(err), MessageOf(err))
	}
	plain := fmt.Errorf("dial tcp: refused")
	if CodeOf(plain) != Internal || MessageOf(plain) != "internal error" {
		t.Fatal("internal details must not leak into messages")
	}
}
