package main

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/minikubelet/minikubelet/cmd/minikubelet/earlyinit"
)

// dropBinaryPages unmaps the pages of the daemon's own binary that are
// mapped into it (its code and read-only data, not its writable data) and,
// with evict, evicts them from the page cache, so that its resident file
// pages are what it uses from then on, not what its start-up or a burst of
// work touched. Serve drops them once it serves, and the governor
// (serve_procs.go) again after ten calm seconds that follow the start or
// a burst; only a drop after a burst evicts (the burst was pods created,
// adopted or removed in numbers, whose code the quiet loop never runs
// again).
//
// Why: the binary's code and tables are ~31 MiB, and package
// initialization, flag parsing and the node's checks touch pages all over
// them. A page fault maps more than the page: the part of the large folio
// the page cache holds it in (this kernel, 6.18, caches ext4 files in
// large folios) and the cached pages 64 KiB around it (fault-around, which
// madvise cannot turn off). Unmapped only, the pages come back by minor
// faults in those large pieces. Evicted (POSIX_FADV_DONTNEED, which evicts
// only pages no process maps: another minikubelet's stay) from mappings
// marked MADV_RANDOM, which turns the fault's read-ahead off, a page
// touched again is read alone, and fault-around finds few cached
// neighbours to map with it.
//
// make bench, manifest-steady, 110 pods with two probes each, containerd
// 2.4: with no drop after start, RSS 36.2 MiB (RssFile 20.7); unmapped at
// serve and after the pods' creation, 32.6 (17.4) in one session, 34.9
// (20.4) in another; unmapped and evicted, that other session, 26.7 MiB
// (RssFile 12.2). The price: the first run of code not run since an
// eviction reads its page from the disk, a page at a time, and a process
// that starts the binary next reads it from the disk too. Evicting after
// the start as well cost the next pods' start 5-17 % (make bench's start
// scenario, median, four same-session pairs), which is why the start's
// drop only unmaps. What eviction saves is real memory: the binary's page
// cache, which the daemon's cgroup is charged for, shrinks by as much as
// RSS.
//
// MADV_DONTNEED on a private file mapping that was never written discards
// nothing but the page table entries. So only mappings with no anonymous
// page are dropped: read-only now is not never written (a PIE build's
// loader writes relocations into .data.rel.ro, then makes it read-only;
// dropping those copies would bring back the file's unrelocated bytes).
// The writable segment is left alone: dropping it would reset Go's
// initialized globals to the file's contents.
//
// It returns how many bytes of mappings it dropped.
func dropBinaryPages(evict bool) (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var dropped int64
	for _, r := range droppable(smaps, exe) {
		advice := []uintptr{unix.MADV_DONTNEED}
		if evict {
			advice = []uintptr{unix.MADV_RANDOM, unix.MADV_DONTNEED}
		}
		for _, a := range advice {
			if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], a); errno != 0 {
				return dropped, fmt.Errorf("madvise(%d) %#x-%#x: %w", a, r[0], r[1], errno)
			}
		}
		dropped += int64(r[1] - r[0])
	}
	if dropped == 0 || !evict {
		return dropped, nil
	}
	// Through /proc/self/exe: the file this process runs, even when its
	// path names another by now (an upgrade in place).
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return dropped, err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return dropped, fmt.Errorf("evicting %s from the page cache: %w", exe, err)
	}
	return dropped, nil
}

// dropBinaryPagesLogged drops the binary's pages (dropBinaryPages) and
// logs how it went; after names what just ended.
func dropBinaryPagesLogged(logger *slog.Logger, after string, evict bool) {
	before := rssFileKiB()
	n, err := dropBinaryPages(evict)
	switch {
	case logger == nil:
	case err != nil:
		logger.Warn("Could not unmap the binary's pages; the daemon's RSS stays higher", "after", after, "err", err)
	default:
		logger.Debug("Unmapped the binary's pages", "after", after, "mappings", n, "evicted", evict, "rssFileKiBBefore", before, "rssFileKiBAfter", rssFileKiB())
	}
}

// droppable returns the address ranges of smaps (/proc/self/smaps) that
// dropBinaryPages may drop: private, not writable mappings of the file
// exe whose Anonymous field is 0 kB (no page of them was ever written).
func droppable(smaps []byte, exe string) [][2]uintptr {
	var out [][2]uintptr
	var cur [2]uintptr
	candidate := false
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := earlyinit.ReadOnlyMapping([]byte(line), exe); ok {
			cur, candidate = [2]uintptr{lo, hi}, true
			continue
		}
		f := strings.Fields(line)
		if len(f) > 0 && !strings.HasSuffix(f[0], ":") {
			candidate = false // another mapping's header
			continue
		}
		if len(f) == 3 && f[0] == "Anonymous:" && candidate {
			if f[1] == "0" {
				out = append(out, cur)
			}
			candidate = false
		}
	}
	return out
}

// rssFileKiB reads the process's resident file pages (RssFile) from
// /proc/self/status; -1 if it cannot.
func rssFileKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
