package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadOnlyMapping(t *testing.T) {
	const exe = "/usr/local/bin/minikubelet"
	for _, tc := range []struct {
		line   string
		ok     bool
		lo, hi uintptr
	}{
		{"00400000-012f2000 r-xp 00000000 fe:00 123 /usr/local/bin/minikubelet", true, 0x400000, 0x12f2000},
		{"012f2000-02370000 r--p 00ef2000 fe:00 123 /usr/local/bin/minikubelet", true, 0x12f2000, 0x2370000},
		// Writable data: dropping it would reset initialized globals.
		{"02370000-02424000 rw-p 01f70000 fe:00 123 /usr/local/bin/minikubelet", false, 0, 0},
		// Another file, anonymous memory, a shared mapping.
		{"7f0000000000-7f0000001000 r--p 00000000 fe:00 9 /usr/lib/x.so", false, 0, 0},
		{"c000000000-c000400000 rw-p 00000000 00:00 0", false, 0, 0},
		{"00400000-012f2000 r-xs 00000000 fe:00 123 /usr/local/bin/minikubelet", false, 0, 0},
		{"00400000-012f2000 r-xp 00000000 fe:00 123 /usr/local/bin/minikubelet-other", false, 0, 0},
		{"012f2000-00400000 r--p 00000000 fe:00 123 /usr/local/bin/minikubelet", false, 0, 0},
		{"garbage", false, 0, 0},
	} {
		lo, hi, ok := readOnlyMapping(tc.line, exe)
		assert.Equal(t, tc.ok, ok, tc.line)
		assert.Equal(t, tc.lo, lo, tc.line)
		assert.Equal(t, tc.hi, hi, tc.line)
	}
	// A path with a space (a binary replaced while running is "… (deleted)").
	lo, _, ok := readOnlyMapping("00400000-00401000 r-xp 00000000 fe:00 1 /opt/mk (deleted)", "/opt/mk (deleted)")
	assert.True(t, ok)
	assert.Equal(t, uintptr(0x400000), lo)
}

// TestDropStartupPages drops the test binary's own code and read-only data
// from its page tables: its resident file pages fall, and the process
// (whose code was just unmapped) goes on running and computing correctly.
func TestDropStartupPages(t *testing.T) {
	// Touch code and tables: a test binary's start-up maps much of them.
	_ = assert.ObjectsAreEqual(map[string]int{"a": 1}, map[string]int{"a": 1})
	before := rssFileKiB()
	require.Positive(t, before)
	n, err := dropStartupPages()
	require.NoError(t, err)
	assert.Positive(t, n, "the test binary's code is mapped")
	after := rssFileKiB()
	t.Logf("RssFile %d KiB -> %d KiB (%d KiB of mappings dropped)", before, after, n>>10)
	assert.Less(t, after, before, "unmapped pages are no longer resident")
	// Code runs again after the drop (faulted back from the page cache).
	sum := 0
	for i := range 1000 {
		sum += i
	}
	assert.Equal(t, 499500, sum)
}
