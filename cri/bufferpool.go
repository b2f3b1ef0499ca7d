package cri

import (
	"fmt"

	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// bufferPoolExponents are the sizes, as powers of two, of the buffers
// grpc-go takes from its default pool: 256 B to 16 MiB (maxMsgSize), every
// power of two from 4 KiB up.
//
// grpc-go's own tiers jump from 32 KiB to 1 MiB, and its proto codec copies
// every response that spans more than one HTTP/2 frame (16 KiB) into one
// buffer from that pool before decoding it. A ListContainers or
// ListPodSandbox response of 100 pods is 40–100 KiB, so each relist took two
// fresh 1 MiB buffers: with the agent's GOGC, one such list nearly started a
// collection by itself, and they were a fifth of everything the daemon
// allocated with 110 probed pods (heap profile, make bench steady). The
// pools are sync.Pools, emptied by the collections they would otherwise
// provoke, so the fix is the size, not the reuse.
var bufferPoolExponents = []uint8{8, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}

// The codec's pool can only be changed process-wide, and only before any
// connection exists (grpc-go: experimental.SetDefaultBufferPool, "during
// initialization time"): the CRI is the daemon's main gRPC peer. The other
// gRPC users decode with the same pool (the device-plugin server's
// transport keeps grpc-go's own, which it read when grpc initialised).
func init() {
	pool, err := mem.NewBinaryTieredBufferPool(bufferPoolExponents...)
	if err != nil {
		panic(fmt.Sprintf("cri: grpc buffer pool: %v", err))
	}
	experimental.SetDefaultBufferPool(pool)
}
