package node

// The node's one reader of /proc/meminfo: Detect's memory capacity
// (MemTotal), the eviction manager's memory.available on cgroup v2
// (agent/eviction/hoststats: MemTotal − MemFree), the cluster Node's
// MemAvailable (agent/cluster/host.go) and the local API's node memory
// (agent/api/discovery.go) read it through MeminfoFile or their own
// injected file reader and parse it here, so that unit tests never read
// the host. agent/stats (which imports nothing of agent/) and
// cmd/minikubelet's kubelet server keep their own.

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
	n, _ := MeminfoValue(b, key)
	return n
}

// MeminfoValue is a meminfo field in bytes ("kB" is KiB); ok is false
// when it is absent or its number malformed.
func MeminfoValue(b []byte, key string) (n int64, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, rest, found := strings.Cut(sc.Text(), ":")
		if !found || k != key {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		return n, true
	}
	return 0, false
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
