package main

import (
	"errors"
	"fmt"
	"io"
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

// TestDropBinaryPages drops the test binary's own code and read-only data
// from its page tables: its resident file pages fall, and the process
// (whose code was just unmapped) goes on running and computing correctly.
func TestDropBinaryPages(t *testing.T) {
	// Touch code and tables: a test binary's start-up maps much of them.
	_ = assert.ObjectsAreEqual(map[string]int{"a": 1}, map[string]int{"a": 1})
	before := rssFileKiB()
	require.Positive(t, before)
	n, err := dropBinaryPages()
	require.NoError(t, err)
	assert.Positive(t, n, "the test binary's code is mapped")
	after := rssFileKiB()
	t.Logf("RssFile %d KiB -> %d KiB (%d KiB of mappings dropped)", before, after, n>>10)
	assert.Less(t, after, before, "unmapped pages are no longer resident")
	// Code runs again after the drop (faulted back from the page cache),
	// and what it reads is intact: interface calls through itabs and type
	// descriptors (read-only data), initialized globals (writable data).
	sum := 0
	for i := range 1000 {
		sum += i
	}
	assert.Equal(t, 499500, sum)
	wrapped := fmt.Errorf("reading: %w", io.EOF)
	assert.True(t, errors.Is(wrapped, io.EOF))
	assert.Equal(t, "reading: EOF", fmt.Sprint(wrapped))
	assert.Equal(t, "a pod network not ready", fmt.Sprintf("%s %s", "a", initializedGlobal))
}

var initializedGlobal = "pod network not ready"

// TestDroppable: only read-only private mappings of the binary that were
// never written are dropped; a relocated (PIE .data.rel.ro) mapping shows
// anonymous pages and is kept.
func TestDroppable(t *testing.T) {
	const exe = "/usr/local/bin/minikubelet"
	smaps := `00400000-012f2000 r-xp 00000000 fe:00 123                                /usr/local/bin/minikubelet
Size:              15304 kB
Rss:               14000 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me sd
012f2000-02370000 r--p 00ef2000 fe:00 123                                /usr/local/bin/minikubelet
Size:              16888 kB
Anonymous:             0 kB
VmFlags: rd mr mw me sd
02370000-02380000 r--p 01f70000 fe:00 123                                /usr/local/bin/minikubelet
Size:                 64 kB
Anonymous:             8 kB
VmFlags: rd mr mw me ac sd
02380000-02424000 rw-p 01f80000 fe:00 123                                /usr/local/bin/minikubelet
Anonymous:           500 kB
02424000-02500000 r--p 00000000 fe:00 123                                /usr/local/bin/minikubelet
Size:                 64 kB
7f0000000000-7f0000001000 r--p 00000000 fe:00 9                          /usr/lib/x.so
Anonymous:             0 kB
c000000000-c000400000 rw-p 00000000 00:00 0 
Anonymous:          4096 kB
`
	got := droppable([]byte(smaps), exe)
	assert.Equal(t, [][2]uintptr{{0x400000, 0x12f2000}, {0x12f2000, 0x2370000}}, got,
		"the relocated, the writable, the one without an Anonymous field, another file's and anonymous memory are kept")
}
