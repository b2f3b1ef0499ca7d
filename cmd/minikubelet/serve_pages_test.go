package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/minikubelet/minikubelet/cmd/minikubelet/earlyinit"
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
		lo, hi, ok := earlyinit.ReadOnlyMapping([]byte(tc.line), exe)
		assert.Equal(t, tc.ok, ok, tc.line)
		assert.Equal(t, tc.lo, lo, tc.line)
		assert.Equal(t, tc.hi, hi, tc.line)
	}
	// A path with a space (a binary replaced while running is "… (deleted)").
	lo, _, ok := earlyinit.ReadOnlyMapping([]byte("00400000-00401000 r-xp 00000000 fe:00 1 /opt/mk (deleted)"), "/opt/mk (deleted)")
	assert.True(t, ok)
	assert.Equal(t, uintptr(0x400000), lo)
}

// TestDropBinaryPages drops the test binary's own code and read-only data
// from its page tables: its resident file pages fall, and the process
// (whose code was just unmapped) goes on running and computing correctly.
func TestDropBinaryPages(t *testing.T) {
	// Touch code and tables: a test binary's start-up maps much of them.
	_ = assert.ObjectsAreEqual(map[string]int{"a": 1}, map[string]int{"a": 1})
	// The whole binary in the page cache (an earlier run in this process
	// evicted it), written back: a test binary the linker has just
	// written is dirty, and eviction skips dirty pages (an installed
	// daemon's binary is long clean).
	exeFile, err := os.Open("/proc/self/exe")
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, exeFile)
	require.NoError(t, err)
	require.NoError(t, exeFile.Sync())
	require.NoError(t, exeFile.Close())
	before, cachedBefore := rssFileKiB(), cachedPages(t)
	require.Positive(t, before)
	n, err := dropBinaryPages(true)
	require.NoError(t, err)
	assert.Positive(t, n, "the test binary's code is mapped")
	after, cachedAfter := rssFileKiB(), cachedPages(t)
	t.Logf("RssFile %d KiB -> %d KiB (%d KiB of mappings dropped); binary's pages in the page cache %d -> %d",
		before, after, n>>10, cachedBefore, cachedAfter)
	assert.Less(t, after, before, "unmapped pages are no longer resident")
	var fs unix.Statfs_t
	require.NoError(t, unix.Statfs("/proc/self/exe", &fs))
	if fs.Type != unix.TMPFS_MAGIC { // tmpfs pages are the file: nothing to evict
		assert.Less(t, cachedAfter, cachedBefore/2, "the dropped pages left the page cache")
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	assert.Equal(t, len(droppable(smaps, exe)), randomReadMappings(string(smaps), exe),
		"every dropped mapping reads no pages ahead (MADV_RANDOM: VmFlags rr)")
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

// cachedPages counts the pages of the running binary that are in the page
// cache (mincore on a mapping of its own).
func cachedPages(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/exe")
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer func() { _ = unix.Munmap(m) }()
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, errno, "mincore")
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// randomReadMappings counts the mappings of exe in smaps whose VmFlags
// include rr (MADV_RANDOM).
func randomReadMappings(smaps, exe string) int {
	n, ours := 0, false
	for _, l := range strings.Split(smaps, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && !strings.HasSuffix(f[0], ":"):
			ours = len(f) >= 6 && strings.Join(f[5:], " ") == exe
		case ours && len(f) > 0 && f[0] == "VmFlags:" && slices.Contains(f[1:], "rr"):
			n++
		}
	}
	return n
}

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
