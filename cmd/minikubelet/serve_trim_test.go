package main

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadOnlyMappings(t *testing.T) {
	maps := `00400000-012f5000 r-xp 00000000 fe:00 10305834                           /usr/bin/minikubelet
012f5000-02377000 r--p 00ef5000 fe:00 10305834                           /usr/bin/minikubelet
02377000-0242b000 rw-p 01f77000 fe:00 10305834                           /usr/bin/minikubelet
0242b000-04475000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r-xp 00000000 fe:00 42                         /usr/bin/minikubelet-other
7f0000002000-7f0000003000 r--s 00000000 fe:00 10305834                   /usr/bin/minikubelet
7f0000004000-7f0000005000 r-xp 00000000 fe:00 77                         /usr/lib/with space/x
7ffe3ce47000-7ffe3ce68000 rw-p 00000000 00:00 0                          [stack]
`
	got, err := readOnlyMappings([]byte(maps), "/usr/bin/minikubelet")
	require.NoError(t, err)
	assert.Equal(t, []mapping{{0x400000, 0x12f5000}, {0x12f5000, 0x2377000}}, got,
		"the executable's private read-only mappings: never its data, a shared mapping or another file")

	got, err = readOnlyMappings([]byte(maps), "/usr/lib/with space/x")
	require.NoError(t, err)
	assert.Equal(t, []mapping{{0x7f0000004000, 0x7f0000005000}}, got)

	_, err = readOnlyMappings([]byte("zz-01 r-xp 0 fe:00 1 /x\n"), "/x")
	assert.ErrorContains(t, err, "bad address range")
}

// residentPages counts the pages of ranges this process has mapped
// (/proc/self/pagemap's present bit).
func residentPages(t *testing.T, ranges []mapping) int {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	require.NoError(t, err)
	defer f.Close()
	n := 0
	buf := make([]byte, 8*512)
	for _, r := range ranges {
		for p := r.start; p < r.end; p += 512 * 4096 {
			pages := min(512, int((r.end-p)/4096))
			_, err := f.ReadAt(buf[:8*pages], int64(p/4096*8))
			require.NoError(t, err)
			for i := range pages {
				if binary.LittleEndian.Uint64(buf[8*i:])&(1<<63) != 0 {
					n++
				}
			}
		}
	}
	return n
}

// trimCode unmaps this (test) process's executable pages, and the process
// goes on running: the pages come back as it touches them.
func TestTrimCode(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	ranges, err := readOnlyMappings(maps, exe)
	require.NoError(t, err)
	require.NotEmpty(t, ranges, "code and read-only data")
	before := residentPages(t, ranges)
	n, err := trimCode()
	require.NoError(t, err)
	after := residentPages(t, ranges)
	size := 0
	for _, r := range ranges {
		size += int(r.end - r.start)
	}
	assert.Equal(t, size, n)
	assert.Less(t, after, before/2, "most of the %d resident pages are unmapped (%d left)", before, after)
	TestReadOnlyMappings(t) // code that ran before runs again
}
