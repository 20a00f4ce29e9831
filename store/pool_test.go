package store_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

func TestPoolAtLeastRaisesThePoolUnlessTheURLSetsIt(t *testing.T) {
	url := storetest.DatabaseURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	def := int32(max(4, runtime.NumCPU()))
	for _, c := range []struct {
		name string
		url  string
		opts []store.Option
		want int32
	}{
		{"no option: pgx's default", url, nil, def},
		{"raised", url, []store.Option{store.PoolAtLeast(int(def) + 16)}, def + 16},
		{"never lowered", url, []store.Option{store.PoolAtLeast(1)}, def},
		{"pool_max_conns in the URL wins", url + sep + "pool_max_conns=3", []store.Option{store.PoolAtLeast(40)}, 3},
	} {
		s, err := store.Open(context.Background(), c.url, storetest.Logger(t), c.opts...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := s.Pool().Config().MaxConns; got != c.want {
			t.Errorf("%s: MaxConns = %d; want %d", c.name, got, c.want)
		}
		s.Close()
	}
}
