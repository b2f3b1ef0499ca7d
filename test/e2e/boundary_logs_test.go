package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/agent/api"
)

// Issue #16, finding 9: one log request must not take the daemon's memory.
// A pod writes a single 100 MB line (no newline, then sleeps: the runtime
// keeps splitting it into 16 KiB partial lines and never ends it); the
// test reads it through the daemon's API in full, with tailLines=1 and
// with follow, and samples the daemon's VmRSS all along: it stays under
// 64 MiB (before the fix a 60 MB line took it from 33 to 221 MB).

const boundaryLogsPod = "e2e-boundary-logs"

// hugeLineBytes is what the pod writes: one line of 'a's.
const hugeLineBytes = 100_000_000

const boundaryLogsManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-boundary-logs
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "head -c 100000000 /dev/zero | tr '\\0' a; exec sleep 3600"]
`

// rssLimit is the daemon's RSS the test allows while serving the log.
const rssLimit = 64 << 20

func TestBoundaryLogs_HugeLineBoundedRSS(t *testing.T) {
	// The rotation limit is above the log's size, so that the current file
	// holds the whole line.
	d := newDaemon(t, []string{boundaryLogsPod}, "--container-log-max-size", "200Mi")
	d.start(t)
	pid := d.cmd.Process.Pid

	p := d.run(t, boundaryLogsManifest)
	require.Equal(t, 0, waitExit(t, p, 3*time.Minute), "run's exit code:\n%s", p.output())

	// The runtime keeps the last piece of an unfinished line until more
	// comes: wait until all but at most 64 KiB is in the file and it
	// stopped growing.
	path := waitLogSize(t, d, boundaryLogsPod, "app", hugeLineBytes-64<<10)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	t.Logf("log file %s: %d bytes", path, fi.Size())
	base := procStatusKB(t, pid, "VmRSS")
	t.Logf("daemon RSS before the reads: %d KiB (VmHWM %d KiB)", base, procStatusKB(t, pid, "VmHWM"))

	c := d.api()
	tail1 := int64(1)
	reads := []struct {
		name   string
		req    api.LogRequest
		follow time.Duration // read for this long, then cancel
	}{
		{name: "full", req: api.LogRequest{}},
		{name: "tailLines=1", req: api.LogRequest{TailLines: &tail1}},
		{name: "follow", req: api.LogRequest{Follow: true}, follow: 8 * time.Second},
		{name: "follow tailLines=1 timestamps", req: api.LogRequest{Follow: true, TailLines: &tail1, Timestamps: true}, follow: 8 * time.Second},
	}
	for _, r := range reads {
		mon := watchRSS(t, pid)
		start := time.Now()
		n, other, err := readLog(c, r.req, r.follow)
		peak := mon.stop()
		require.NoError(t, err, r.name)
		require.NoError(t, mon.err, "%s: sample the daemon's RSS", r.name)
		t.Logf("%s: read %d bytes in %s; daemon VmRSS peak %d KiB (%d samples)", r.name, n, time.Since(start).Round(time.Millisecond), peak/1024, mon.samples)
		// The whole line, and nothing but 'a's (a timestamp prefix aside).
		assert.GreaterOrEqual(t, n, int64(hugeLineBytes-64<<10), "%s: bytes read", r.name)
		assert.LessOrEqual(t, n, int64(hugeLineBytes+64), "%s: bytes read", r.name)
		assert.LessOrEqual(t, other, int64(len("2006-01-02T15:04:05.999999999Z ")), "%s: bytes other than 'a'", r.name)
		assert.Less(t, peak, int64(rssLimit), "%s: the daemon's VmRSS during the read", r.name)
	}
	hwm := procStatusKB(t, pid, "VmHWM")
	t.Logf("daemon VmHWM after all reads: %d KiB", hwm)
	assert.Less(t, hwm*1024, int64(rssLimit), "the daemon's VmHWM (peak RSS of its whole life)")
}

// readLog reads a log through the API to its end (follow > 0: for that
// long, then cancels) and returns the bytes read and how many of them are
// not 'a'.
func readLog(c *api.Client, req api.LogRequest, follow time.Duration) (n, other int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if follow > 0 {
		var cancelF context.CancelFunc
		ctx, cancelF = context.WithTimeout(ctx, follow)
		defer cancelF()
	}
	rc, err := c.Logs(ctx, "default", boundaryLogsPod, req)
	if err != nil {
		return 0, 0, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	buf := make([]byte, 64<<10)
	for {
		k, rerr := br.Read(buf)
		n += int64(k)
		for _, b := range buf[:k] {
			if b != 'a' {
				other++
			}
		}
		if rerr == io.EOF {
			return n, other, nil
		}
		if rerr != nil {
			if follow > 0 && ctx.Err() != nil {
				return n, other, nil // the follow ran its time
			}
			return n, other, rerr
		}
	}
}

// waitLogSize waits until the container's current log file holds at least
// size bytes and has stopped growing, and returns its path.
func waitLogSize(t *testing.T, d *daemon, pod, container string, size int64) string {
	t.Helper()
	var path string
	var last int64 = -1
	deadline := time.Now().Add(scaled(3 * time.Minute))
	for {
		matches, _ := filepath.Glob(filepath.Join(d.logDir, "default_"+pod+"_*", container, "0.log"))
		if len(matches) == 1 {
			path = matches[0]
			if fi, err := os.Stat(path); err == nil {
				if fi.Size() >= size && fi.Size() == last {
					return path
				}
				last = fi.Size()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log of %s/%s did not reach %d bytes within 3m (files %v, last size %d)", pod, container, size, matches, last)
		}
		time.Sleep(time.Second)
	}
}

// procStatusKB returns a "kB" field of /proc/<pid>/status (VmRSS, VmHWM).
func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	v, err := readProcStatusKB(pid, field)
	require.NoError(t, err)
	return v
}

func readProcStatusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		k, v, ok := strings.Cut(string(l), ":")
		if !ok || k != field {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/%d/status: %s: %q", pid, field, v)
		}
		return strconv.ParseInt(f[0], 10, 64)
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// rssWatch samples a process's VmRSS every 20 ms until stopped.
type rssWatch struct {
	done chan struct{}
	wg   sync.WaitGroup
	// peak (bytes), samples and err are written by the sampler and read
	// after stop.
	peak    int64
	samples int
	err     error
}

func watchRSS(t *testing.T, pid int) *rssWatch {
	w := &rssWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			kb, err := readProcStatusKB(pid, "VmRSS")
			if err != nil {
				w.err = err
				return
			}
			w.samples++
			w.peak = max(w.peak, kb*1024)
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { _ = w.stop() })
	return w
}

// stop ends the sampling and returns the peak VmRSS in bytes.
func (w *rssWatch) stop() int64 {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	return w.peak
}
