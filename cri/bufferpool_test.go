package cri

import (
	"testing"

	"google.golang.org/grpc/mem"
)

// A response of a few tens of KiB, as ListContainers of 100 pods, takes a
// buffer of the next power of two from grpc's codec pool, not grpc-go's
// 1 MiB tier.
func TestDefaultBufferPool_SizesResponsesClosely(t *testing.T) {
	pool := mem.DefaultBufferPool()
	for _, tc := range []struct{ size, maxCap int }{
		{100, 256},
		{5 << 10, 8 << 10},
		{70 << 10, 128 << 10},
		{300 << 10, 512 << 10},
		{3 << 20, 4 << 20},
	} {
		buf := pool.Get(tc.size)
		if len(*buf) != tc.size || cap(*buf) > tc.maxCap {
			t.Errorf("Get(%d): len %d, cap %d; want len %d, cap at most %d", tc.size, len(*buf), cap(*buf), tc.size, tc.maxCap)
		}
		pool.Put(buf)
	}
}
