package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// referenceLog is ReadLog's non-follow output computed the simple way, in
// memory (the reader before issue #16): join each stream's partial lines,
// drop lines older than Since, keep the last TailLines, unfinished lines
// at the end last in the order they began.
func referenceLog(data []byte, opts LogOptions) string {
	type rec struct {
		ts       time.Time
		content  []byte
		complete bool
	}
	var all []rec
	pending := map[string]*rec{}
	var order []string
	lines := bytes.SplitAfter(data, []byte("\n"))
	for _, line := range lines {
		if len(line) == 0 {
			continue
		}
		l, err := ParseCRILogLine(line)
		if err != nil {
			continue
		}
		p := pending[l.Stream]
		if p == nil {
			p = &rec{ts: l.Timestamp}
			pending[l.Stream] = p
			order = append(order, l.Stream)
		}
		p.content = append(p.content, l.Content...)
		if l.Partial {
			continue
		}
		p.complete = true
		delete(pending, l.Stream)
		order = removeString(order, l.Stream)
		all = append(all, *p)
	}
	for _, s := range order {
		all = append(all, *pending[s])
	}
	if opts.TailLines != nil {
		n := int(max(*opts.TailLines, 0))
		if n < len(all) {
			all = all[len(all)-n:]
		}
	}
	var b strings.Builder
	for _, r := range all {
		if !opts.Since.IsZero() && r.ts.Before(opts.Since) {
			continue
		}
		if opts.Timestamps {
			b.WriteString(r.ts.Format(timeFormatOut) + " ")
		}
		b.Write(r.content)
		if r.complete {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// removeString returns s without its first v.
func removeString(s []string, v string) []string {
	for i, x := range s {
		if x == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// genLog builds a CRI log from a byte script: each byte picks the stream,
// the tag and the content length of one line; timestamps increase.
func genLog(script []byte) []byte {
	var b bytes.Buffer
	for i, c := range script {
		stream := StreamStdout
		if c&1 == 1 {
			stream = StreamStderr
		}
		tag := "F"
		if c&2 == 2 {
			tag = "P"
		}
		switch {
		case c&0xfc == 0xfc:
			b.WriteString("garbage\n")
			continue
		case c&0xfc == 0xf8:
			b.WriteString("\n")
			continue
		case c&0xfc == 0xf4: // no content field at all
			b.WriteString(strings.TrimSuffix(criLine(i, stream, tag, ""), " \n") + "\n")
			continue
		}
		content := strings.Repeat(string(rune('a'+i%26)), int(c>>2)%40)
		b.WriteString(criLine(i, stream, tag, content))
	}
	return b.Bytes()
}

// FuzzReadLog checks the streaming reader against referenceLog for any mix
// of streams, partial lines, garbage, tails, Since and a missing final
// newline: the bounded reader must not change what is written.
func FuzzReadLog(f *testing.F) {
	f.Add([]byte{0, 2, 1, 0, 0xfc, 0, 0}, int64(3), uint8(0), false, false)
	f.Add([]byte{2, 3, 2, 1, 3, 0}, int64(1), uint8(2), true, true)
	f.Add([]byte{2, 1, 1, 1, 1}, int64(2), uint8(0), false, false)
	f.Add([]byte{3, 2, 0, 0, 1}, int64(-1), uint8(3), true, false)
	f.Fuzz(func(t *testing.T, script []byte, tail int64, since uint8, timestamps, cutLast bool) {
		if len(script) > 200 {
			script = script[:200]
		}
		data := genLog(script)
		if cutLast {
			data = bytes.TrimSuffix(data, []byte("\n"))
		}
		opts := LogOptions{Timestamps: timestamps}
		if tail >= 0 {
			opts.TailLines = ptr(tail % 300)
		}
		if since > 0 {
			opts.Since = time.Date(2024, 1, 1, 0, 0, int(since)%60, 0, time.UTC)
		}
		path := filepath.Join(t.TempDir(), "0.log")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		var got bytes.Buffer
		require.NoError(t, ReadLog(context.Background(), path, opts, &got))
		want := referenceLog(data, opts)
		if got.String() != want {
			t.Fatalf("log %q, opts %+v (tail %v):\n got %q\nwant %q", data, opts, tail, got.String(), want)
		}
	})
}

// allocated returns the bytes fn allocates on the heap.
func allocated(t *testing.T, fn func()) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// bigLog writes a log of about size bytes to a new file: as the runtime
// writes one long line (16 KiB P parts), as one raw line (a writer that
// does not split), or as many short F lines.
func bigLog(t *testing.T, kind string, size int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	w := &bytes.Buffer{}
	flush := func() {
		_, err := f.Write(w.Bytes())
		require.NoError(t, err)
		w.Reset()
	}
	ts := "2024-01-01T00:00:00.000000001Z"
	switch kind {
	case "parts": // no newline of its own: the writer is still on it
		part := strings.Repeat("a", 16<<10)
		for n := 0; n < size; n += len(part) {
			fmt.Fprintf(w, "%s stdout P %s\n", ts, part)
			if w.Len() > 1<<20 {
				flush()
			}
		}
	case "raw":
		fmt.Fprintf(w, "%s stdout F ", ts)
		flush()
		chunk := bytes.Repeat([]byte("b"), 1<<20)
		for n := 0; n < size; n += len(chunk) {
			_, err := f.Write(chunk)
			require.NoError(t, err)
		}
		w.WriteString("\n")
	case "lines":
		for i := 0; w.Len() > 0 || i*100 < size; i++ {
			fmt.Fprintf(w, "%s stdout F line %08d %s\n", ts, i, strings.Repeat("c", 50))
			if w.Len() > 1<<20 || (i+1)*100 >= size {
				flush()
			}
			if (i+1)*100 >= size {
				break
			}
		}
	}
	flush()
	return path
}

// countingWriter counts what it is given and keeps its last bytes.
type countingWriter struct {
	n    int64
	last []byte
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	c.last = append(c.last[:0], p[max(0, len(p)-64):]...)
	return len(p), nil
}

// TestReadLog_BoundedMemory reads 100 MB logs (one line as the runtime
// splits it, one raw line, a million short lines) in full and with tails:
// whatever the log, one read allocates less than 4 MiB in all.
func TestReadLog_BoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MB files")
	}
	const size = 100 << 20
	const bound = 4 << 20
	tests := []struct {
		kind     string
		tail     *int64
		minBytes int64 // written at least
		lastLine string
	}{
		{kind: "parts", minBytes: size},
		{kind: "parts", tail: ptr[int64](1), minBytes: size},
		{kind: "parts", tail: ptr[int64](10), minBytes: size},
		{kind: "raw", minBytes: size},
		{kind: "raw", tail: ptr[int64](1), minBytes: size},
		{kind: "lines", tail: ptr[int64](10), lastLine: "c\n"},
		{kind: "lines", tail: ptr[int64](0)},
	}
	paths := map[string]string{}
	parent := t
	for _, tt := range tests {
		name := tt.kind + "/all"
		if tt.tail != nil {
			name = fmt.Sprintf("%s/tail=%d", tt.kind, *tt.tail)
		}
		t.Run(name, func(t *testing.T) {
			if paths[tt.kind] == "" {
				paths[tt.kind] = bigLog(parent, tt.kind, size)
			}
			out := &countingWriter{}
			var err error
			alloc := allocated(t, func() {
				err = ReadLog(context.Background(), paths[tt.kind], LogOptions{TailLines: tt.tail}, out)
			})
			require.NoError(t, err)
			t.Logf("wrote %d bytes, allocated %d bytes", out.n, alloc)
			assert.Less(t, alloc, uint64(bound), "allocated bytes")
			assert.GreaterOrEqual(t, out.n, tt.minBytes)
			if tt.tail != nil && tt.kind == "lines" {
				assert.Equal(t, *tt.tail*int64(len("line 00000000 ")+50+1), out.n)
			}
		})
	}
}

// TestReadLog_FollowBoundedMemory follows a log while the runtime appends
// a 16 MiB line in 16 KiB parts, rotates the file in the middle of it and
// finishes it in the new file: the follower allocates less than 4 MiB.
func TestReadLog_FollowBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 16 MiB")
	}
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path, criLine(1, "stdout", "F", "first"))
	part := criLine(2, "stdout", "P", strings.Repeat("p", 16<<10))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncCounter{}
	errc := make(chan error, 1)
	go func() {
		errc <- ReadLog(ctx, path, LogOptions{Follow: true, PollInterval: time.Millisecond}, out)
	}()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	for i := range 1024 {
		if i == 512 { // rotate half way
			require.NoError(t, f.Close())
			require.NoError(t, os.Rename(path, path+".20240101-000003"))
			f, err = os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
			require.NoError(t, err)
		}
		_, err := f.WriteString(part)
		require.NoError(t, err)
	}
	_, err = f.WriteString(criLine(3, "stdout", "F", "end"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	want := int64(len("first\n") + 1024*(16<<10) + len("end\n"))
	require.Eventually(t, func() bool { return out.count() == want }, 20*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-errc)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("followed %d bytes, allocated %d bytes", want, alloc)
	assert.Less(t, alloc, uint64(4<<20))
}

// syncCounter counts bytes written from another goroutine.
type syncCounter struct {
	mu sync.Mutex
	n  int64
}

func (c *syncCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += int64(len(p))
	return len(p), nil
}

func (c *syncCounter) count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestReadLog_LongHeaderSkipped: a line whose header does not fit in
// maxLogHeader bytes is skipped, the lines around it are not.
func TestReadLog_LongHeaderSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	long := "2024-01-01T00:00:02Z stdout F" + strings.Repeat(":x", 200) + " content\n"
	writeFile(t, path, criLine(1, "stdout", "F", "a"), long, criLine(3, "stdout", "F", "b"))
	for _, tail := range []*int64{nil, ptr[int64](2)} {
		var buf bytes.Buffer
		require.NoError(t, ReadLog(context.Background(), path, LogOptions{TailLines: tail}, &buf))
		assert.Equal(t, "a\nb\n", buf.String())
	}
}

func TestReadLog_LimitBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path, criLine(1, "stdout", "F", "hello"), criLine(2, "stdout", "F", "world"))
	tests := []struct {
		name  string
		limit int64
		want  string
	}{
		{name: "inside a line", limit: 3, want: "hel"},
		{name: "at a line end", limit: 6, want: "hello\n"},
		{name: "more than the log", limit: 100, want: "hello\nworld\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, ReadLog(context.Background(), path, LogOptions{LimitBytes: tt.limit}, &buf))
			assert.Equal(t, tt.want, buf.String())
		})
	}
	// A follower stops at the limit too.
	out, stop := follow(t, path, LogOptions{LimitBytes: 8})
	waitFor(t, out, "hello\nwo")
	require.NoError(t, stop())
}

// TestReadLog_RefusesNonRegular: a symlink in place of the log (to a host
// file) and a FIFO (which would block a reader) are refused at once.
func TestReadLog_RefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	writeFile(t, secret, criLine(1, "stdout", "F", "host secret"))
	link := filepath.Join(dir, "0.log")
	require.NoError(t, os.Symlink(secret, link))
	fifo := filepath.Join(dir, "1.log")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	for _, path := range []string{link, fifo, dir} {
		done := make(chan error, 1)
		var buf bytes.Buffer
		go func() { done <- ReadLog(context.Background(), path, LogOptions{}, &buf) }()
		select {
		case err := <-done:
			require.Error(t, err, path)
			assert.Empty(t, buf.String())
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadLog of %s blocked", path)
		}
	}
}

// TestReadLog_TailMatchesReference compares the tail of logs bigger than
// the read window (lines crossing chunk boundaries, interleaved streams,
// long partial lines) with referenceLog.
func TestReadLog_TailMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var b bytes.Buffer
	for i := range 3000 {
		stream := []string{"stdout", "stderr"}[rng.Intn(2)]
		tag := []string{"F", "P"}[rng.Intn(2)]
		n := rng.Intn(200)
		if rng.Intn(50) == 0 {
			n = 40 << 10 // longer than a window
		}
		b.WriteString(criLine(i%60, stream, tag, strings.Repeat(string(rune('a'+i%26)), n)))
	}
	path := filepath.Join(t.TempDir(), "0.log")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	for _, tail := range []int64{0, 1, 2, 3, 10, 100, 1000, 5000} {
		for _, ts := range []bool{false, true} {
			opts := LogOptions{TailLines: ptr(tail), Timestamps: ts}
			var got bytes.Buffer
			require.NoError(t, ReadLog(context.Background(), path, opts, &got))
			want := referenceLog(b.Bytes(), opts)
			require.Equal(t, len(want), got.Len(), "tail %d", tail)
			require.True(t, want == got.String(), "tail %d differs", tail)
		}
	}
	var got bytes.Buffer
	require.NoError(t, ReadLog(context.Background(), path, LogOptions{}, &got))
	require.True(t, referenceLog(b.Bytes(), LogOptions{}) == got.String(), "full log differs")
	_, _ = io.Copy(io.Discard, &got)
}

// TestReadLog_FollowChunkedWrites follows a one-stream log written in
// random pieces (lines cut anywhere, long lines streamed before their
// newline arrives) and compares what it wrote with referenceLog of the
// whole file: the streaming follower writes the same bytes.
func TestReadLog_FollowChunkedWrites(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	var b bytes.Buffer
	for i := range 300 {
		tag := []string{"F", "P"}[rng.Intn(2)]
		n := rng.Intn(100)
		if rng.Intn(10) == 0 {
			n = 1000 + rng.Intn(40<<10) // past a header's bytes and a window
		}
		b.WriteString(criLine(i%60, "stdout", tag, strings.Repeat(string(rune('a'+i%26)), n)))
	}
	b.WriteString(criLine(1, "stdout", "F", "end"))
	data := b.Bytes()
	for _, ts := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "0.log")
		writeFile(t, path)
		out, stop := follow(t, path, LogOptions{Timestamps: ts})
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rng.Intn(3000))
			_, err := f.Write(rest[:n])
			require.NoError(t, err)
			rest = rest[n:]
			if rng.Intn(4) == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		require.NoError(t, f.Close())
		want := referenceLog(data, LogOptions{Timestamps: ts})
		require.Eventually(t, func() bool { return len(out.String()) >= len(want) }, 10*time.Second, 5*time.Millisecond)
		require.NoError(t, stop())
		require.True(t, out.String() == want, "timestamps %v: output differs (%d bytes, want %d)", ts, len(out.String()), len(want))
	}
}
