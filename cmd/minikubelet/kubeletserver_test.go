package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseProcStatCPU(t *testing.T) {
	got, err := parseProcStatCPU("cpu  100 20 30 5000 40 5 6 7 0 0\ncpu0 50 10 15 2500 20 2 3 3 0 0\nintr 1\n")
	require.NoError(t, err)
	require.InDelta(t, 1.68, got, 1e-9, "user+nice+system+irq+softirq+steal ticks / 100")
	_, err = parseProcStatCPU("intr 1\n")
	require.Error(t, err)
}

func TestParseMeminfoWorkingSet(t *testing.T) {
	got, err := parseMeminfoWorkingSet("MemTotal:        8000 kB\nMemFree:  1000 kB\nMemAvailable:    3000 kB\n")
	require.NoError(t, err)
	require.Equal(t, uint64(5000*1024), got)
	_, err = parseMeminfoWorkingSet("MemTotal: 8000 kB\n")
	require.Error(t, err)
}
