package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/store/storetest"
)

type fakePinger struct{ err error }

func (f fakePinger) Ping(context.Context) error { return f.err }

func TestReadyHandler(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	down := errors.New(`failed to connect to user=bobnet database=bobnet host=10.1.2.3: dial tcp 10.1.2.3:6379: connection refused`)
	readyHandler(map[string]pinger{"postgres": fakePinger{}, "redis": fakePinger{down}}, storetest.Logger(t))(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "redis") || strings.Contains(rec.Body.String(), "postgres") {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	// Unauthenticated callers learn what is down, not where it lives.
	for _, internal := range []string{"10.1.2.3", "user=", "database=", "dial tcp", "6379"} {
		if strings.Contains(rec.Body.String(), internal) {
			t.Errorf("/readyz shows %q: %s", internal, rec.Body.String())
		}
	}
	rec = httptest.NewRecorder()
	readyHandler(map[string]pinger{"postgres": fakePinger{}}, storetest.Logger(t))(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%d", rec.Code)
	}
}

func TestListenAddressInUseIsAClearError(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = listen("BOBNET_LISTEN", ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "BOBNET_LISTEN: "+ln.Addr().String()+" is already in use") {
		t.Fatalf("err = %v", err)
	}
}
