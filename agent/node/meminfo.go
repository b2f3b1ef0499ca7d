package node

// The node's one reader of /proc/meminfo: Detect's memory capacity
// (MemTotal) and the eviction manager's memory.available on cgroup v2
// (agent/eviction_stats.go: MemTotal − MemFree) read it through
// MeminfoFile, with the path injected (RealHost's is ProcMeminfo; the
// eviction stats' is under their proc root), so that unit tests never
// read the host.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ProcMeminfo is the host's meminfo file.
const ProcMeminfo = "/proc/meminfo"

// MeminfoFile returns the reader of the meminfo file at path.
func MeminfoFile(path string) func() ([]byte, error) {
	return func() ([]byte, error) { return os.ReadFile(path) }
}

// MeminfoField is a meminfo field in bytes ("kB" is KiB), 0 when absent
// or malformed.
func MeminfoField(b []byte, key string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		return n
	}
	return 0
}

// parseMemTotal returns MemTotal from /proc/meminfo content, in bytes.
func parseMemTotal(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || key != "MemTotal" {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 || len(fields) > 2 {
			return 0, fmt.Errorf("malformed MemTotal line %q", sc.Text())
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("malformed MemTotal line %q", sc.Text())
		}
		if len(fields) == 2 {
			// The kernel writes "kB" and means KiB.
			if fields[1] != "kB" {
				return 0, fmt.Errorf("malformed MemTotal line %q: unknown unit", sc.Text())
			}
			n *= 1024
		}
		return n, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no MemTotal in meminfo")
}
