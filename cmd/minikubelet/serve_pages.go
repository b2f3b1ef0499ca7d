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
)

// dropBinaryPages unmaps the pages of the daemon's own binary that are
// mapped into it (its code and read-only data, not its writable data), so
// that its resident file pages are what it uses from then on, not what its
// start-up or a burst of work touched. Serve drops them once it serves,
// and the governor (serve_procs.go) again after ten quiet seconds that
// follow the start or a busier second: adopting a node's pods and creating
// new ones run code the quiet loop never runs again. make bench,
// manifest-steady, 110 pods with two probes each, containerd 2.4, one
// session: with the drop at serve only, RSS 36.2 MiB (RssFile 20.7); with
// the drop after the pods' creation too, 32.6 MiB (RssFile 17.4), and
// 19.8 against 27.6 MiB with no pods.
//
// Why: the binary's code and tables are ~31 MiB, and package
// initialization, flag parsing and the node's checks touch pages all over
// them. The kernel maps 64 KiB around each page faulted in (fault-around;
// madvise cannot turn it off), so a daemon that has only started already
// has 21 MiB of the binary resident (RssFile), most of which it never runs
// again. Dropped, the pages stay in the page cache: a page the daemon
// needs again is mapped back on its next touch by a minor fault, without
// I/O. The memory charged to the daemon's cgroup does not change (the page
// cache is charged, mapped or not); RSS, which top and the bench report,
// does, and unmapped page cache is the first the kernel reclaims.
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
func dropBinaryPages() (int64, error) {
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
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_DONTNEED); errno != 0 {
			return dropped, fmt.Errorf("madvise %#x-%#x: %w", r[0], r[1], errno)
		}
		dropped += int64(r[1] - r[0])
	}
	return dropped, nil
}

// dropBinaryPagesLogged drops the binary's pages (dropBinaryPages) and
// logs how it went; after names what just ended.
func dropBinaryPagesLogged(logger *slog.Logger, after string) {
	before := rssFileKiB()
	n, err := dropBinaryPages()
	switch {
	case logger == nil:
	case err != nil:
		logger.Warn("Could not unmap the binary's pages; the daemon's RSS stays higher", "after", after, "err", err)
	default:
		logger.Debug("Unmapped the binary's pages", "after", after, "mappings", n, "rssFileKiBBefore", before, "rssFileKiBAfter", rssFileKiB())
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
		if lo, hi, ok := readOnlyMapping(line, exe); ok {
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

// readOnlyMapping parses one line of /proc/self/maps and reports the
// address range of a mapping of the file exe that is not writable.
func readOnlyMapping(line, exe string) (lo, hi uintptr, ok bool) {
	f := strings.Fields(line)
	// address perms offset dev inode path
	if len(f) < 6 || strings.Join(f[5:], " ") != exe || len(f[1]) < 4 || f[1][0] != 'r' || f[1][1] != '-' || f[1][3] != 'p' {
		return 0, 0, false
	}
	from, to, found := strings.Cut(f[0], "-")
	if !found {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(from, 16, 64)
	h, err2 := strconv.ParseUint(to, 16, 64)
	if err1 != nil || err2 != nil || h <= l {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
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
