package termmsg

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criLog renders CRI log records; a record is "stream tag content".
func criLog(records ...string) string {
	var b strings.Builder
	for i, r := range records {
		fmt.Fprintf(&b, "2026-01-02T03:04:%02d.000000001Z %s\n", i%60, r)
	}
	return b.String()
}

func TestReadTerminationMessage(t *testing.T) {
	const path = "/dev/termination-log"
	fallback := string(v1.TerminationMessageFallbackToLogsOnError)
	file := string(v1.TerminationMessageReadFile)
	long := strings.Repeat("a", 5000) + "END"
	var manyLines []string
	for i := range 100 {
		manyLines = append(manyLines, fmt.Sprintf("stdout F line %d", i))
	}
	var wantLast80 strings.Builder
	for i := 20; i < 100; i++ {
		fmt.Fprintf(&wantLast80, "line %d\n", i)
	}
	var wideLines []string
	for range 80 {
		wideLines = append(wideLines, "stderr F "+strings.Repeat("x", 99))
	}

	tests := []struct {
		name     string
		file     *string // nil = no file at the mount
		dirFile  bool    // the mounted host path is a directory: refused
		noMount  bool
		policy   string
		exitCode int32
		log      string
		want     string
		wantPfx  string
	}{
		{name: "file", file: new("bye"), policy: file, exitCode: 0, want: "bye"},
		{name: "file wins over logs", file: new("bye"), policy: fallback, exitCode: 1, log: criLog("stdout F log line"), want: "bye"},
		{name: "last 4096 bytes of the file", file: &long, policy: file, want: long[len(long)-4096:]},
		{name: "empty file, policy File", file: new(""), policy: file, exitCode: 1, log: criLog("stdout F log line"), want: ""},
		{name: "empty file, fallback, exit 0", file: new(""), policy: fallback, exitCode: 0, log: criLog("stdout F log line"), want: ""},
		{name: "empty file, fallback, exit 1", file: new(""), policy: fallback, exitCode: 1, log: criLog("stdout F log line"), want: "log line\n"},
		{name: "missing file, fallback", policy: fallback, exitCode: 2, log: criLog("stdout F a", "stderr F b"), want: "a\nb\n"},
		{name: "no mount, fallback", noMount: true, policy: fallback, exitCode: 2, log: criLog("stdout F a"), want: "a\n"},
		{name: "no mount, File", noMount: true, policy: file, exitCode: 2, log: criLog("stdout F a"), want: ""},
		{
			name: "partial lines joined", file: new(""), policy: fallback, exitCode: 1,
			log:  criLog("stdout P par", "stdout P t:ial", "stdout F  end", "stderr F next", "stdout F "),
			want: "part:ial end\nnext\n\n",
		},
		{name: "log ending mid-line", policy: fallback, exitCode: 1, log: criLog("stdout F a", "stdout P b"), want: "a\nb"},
		{name: "malformed records skipped", policy: fallback, exitCode: 1, log: criLog("stdout F a", "garbage", "stdout X b") + "short\n", want: "a\n"},
		{name: "last 80 lines", policy: fallback, exitCode: 1, log: criLog(manyLines...), want: wantLast80.String()},
		{name: "2048 bytes of the last lines", policy: fallback, exitCode: 1, log: criLog(wideLines...), want: strings.Repeat(strings.Repeat("x", 99)+"\n", 21)[:2048]},
		{name: "no log", policy: fallback, exitCode: 1, want: ""},
		{name: "a directory is refused, fallback", dirFile: true, policy: fallback, exitCode: 1, log: criLog("stdout F a"), want: "a\n"},
		{name: "a directory is refused, File", dirFile: true, policy: file, exitCode: 1, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			host := filepath.Join(dir, "msg")
			switch {
			case tt.dirFile:
				require.NoError(t, os.Mkdir(host, 0o755))
			case tt.file != nil:
				require.NoError(t, os.WriteFile(host, []byte(*tt.file), 0o666))
			}
			mounts := []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: dir}}
			if !tt.noMount {
				mounts = append(mounts, &runtimeapi.Mount{ContainerPath: path, HostPath: host})
			}
			logPath := filepath.Join(dir, "0.log")
			if tt.log != "" {
				require.NoError(t, os.WriteFile(logPath, []byte(tt.log), 0o644))
			}
			got := Read(path, tt.policy, tt.exitCode, mounts, logPath, filepath.Join(dir, "pods"))
			if tt.wantPfx != "" {
				assert.True(t, strings.HasPrefix(got, tt.wantPfx), got)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLastLogLines_LargeFile(t *testing.T) {
	// Many chunks of log: only the end is read, and lines crossing chunk
	// boundaries are whole.
	var records []string
	for i := range 5000 {
		records = append(records, fmt.Sprintf("stdout F %05d %s", i, strings.Repeat("y", 40)))
	}
	p := filepath.Join(t.TempDir(), "0.log")
	require.NoError(t, os.WriteFile(p, []byte(criLog(records...)), 0o644))
	got, err := lastLogLines(p, 3, 1<<20)
	require.NoError(t, err)
	y := strings.Repeat("y", 40)
	assert.Equal(t, "04997 "+y+"\n04998 "+y+"\n04999 "+y+"\n", got)

	got, err = lastLogLines(p, 10000, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, 5000, strings.Count(got, "\n"), "fewer lines than asked: the whole log")
	assert.True(t, strings.HasPrefix(got, "00000 "))
}

func TestParseCRILogLine(t *testing.T) {
	tests := []struct {
		line        string
		content     string
		partial, ok bool
	}{
		{line: "2016-10-06T00:17:09.669794202Z stdout F hello world", content: "hello world", ok: true},
		{line: "2016-10-06T00:17:09.669794202Z stderr P hel", content: "hel", partial: true, ok: true},
		{line: "2016-10-06T00:17:09.669794202Z stdout F ", content: "", ok: true},
		{line: "2016-10-06T00:17:09.669794202Z stdout F", content: "", ok: true},
		{line: "2016-10-06T00:17:09.669794202Z stdout P:x tagged", content: "tagged", partial: true, ok: true},
		{line: "2016-10-06T00:17:09.669794202Z stdout", ok: false},
		{line: "2016-10-06T00:17:09.669794202Z stdout Q what", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			content, partial, ok := parseCRILogLine([]byte(tt.line))
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.partial, partial)
			assert.Equal(t, tt.content, string(content))
		})
	}
}

func TestJoinTerminationMessage(t *testing.T) {
	assert.Equal(t, "", Join("", ""))
	assert.Equal(t, "oom", Join("oom", ""))
	assert.Equal(t, "bye", Join("", "bye"))
	assert.Equal(t, "oom: bye", Join("oom", "bye"))
}

func TestTerminationMessageCache(t *testing.T) {
	var c Cache
	reads := 0
	read := func() string { reads++; return "msg" }
	assert.Equal(t, "msg", c.Get("a", read))
	assert.Equal(t, "msg", c.Get("a", read))
	assert.Equal(t, 1, reads, "read once per container instance")
	assert.Equal(t, "", c.Get("b", func() string { return "" }))
	assert.Equal(t, "", c.Get("b", func() string { t.Fatal("empty message re-read"); return "" }))
	c.Forget("a")
	c.Get("a", read)
	assert.Equal(t, 2, reads)
}

// A pod's file at the termination path is hostile (issue #16): a symlink
// to a host file, a FIFO, a path inside a volume through a swapped
// directory. None is read, none blocks; the message is empty (or the log
// tail when the policy says so).
func TestReadTerminationMessage_Hostile(t *testing.T) {
	const path = "/dev/termination-log"
	pods := filepath.Join(t.TempDir(), "pods")
	vol := filepath.Join(pods, "uid", "volumes", "kubernetes.io~empty-dir", "data")
	require.NoError(t, os.MkdirAll(vol, 0o755))
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("HOST-SECRET"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(vol, "link")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(vol, "fifo"), 0o666))
	// A directory of the subPath swapped for a symlink to the host after
	// the path string was taken (what an older agent handed the CRI).
	require.NoError(t, os.Symlink(outside, filepath.Join(vol, "sub")))
	logPath := filepath.Join(t.TempDir(), "0.log")
	require.NoError(t, os.WriteFile(logPath, []byte(criLog("stdout F from the log")), 0o644))

	for _, tt := range []struct {
		name, hostPath, policy, want string
	}{
		{"symlink to a host file", filepath.Join(vol, "link"), "File", ""},
		{"symlink, fallback", filepath.Join(vol, "link"), "FallbackToLogsOnError", "from the log\n"},
		{"FIFO", filepath.Join(vol, "fifo"), "File", ""},
		{"FIFO, fallback", filepath.Join(vol, "fifo"), "FallbackToLogsOnError", "from the log\n"},
		{"through a swapped directory", filepath.Join(vol, "sub", "secret"), "File", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mounts := []*runtimeapi.Mount{{ContainerPath: path, HostPath: tt.hostPath}}
			done := make(chan string, 1)
			go func() { done <- Read(path, tt.policy, 1, mounts, logPath, pods) }()
			select {
			case got := <-done:
				assert.Equal(t, tt.want, got)
			case <-time.After(5 * time.Second):
				t.Fatal("reading the termination message blocked")
			}
		})
	}
}

func TestMountedFileRoot(t *testing.T) {
	const pods = "/var/lib/mkl/pods"
	for _, tt := range []struct{ host, root, rel string }{
		{pods + "/u/volumes/kubernetes.io~empty-dir/data/a/b", pods + "/u/volumes/kubernetes.io~empty-dir/data", "a/b"},
		{pods + "/u/volume-subpaths/data/c/0", pods + "/u/volume-subpaths/data/c", "0"},
		{pods + "/u/containers/c/0123abcd", pods + "/u/containers/c", "0123abcd"},
		{"/srv/data/x", "/srv/data", "x"},
	} {
		root, rel := mountedFileRoot(tt.host, pods)
		assert.Equal(t, tt.root, root, tt.host)
		assert.Equal(t, tt.rel, rel, tt.host)
	}
}

// A single log line far longer than the message reads only what the
// message can hold (memory stays bounded for any line length).
func TestLastLogLines_LongLine(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "0.log")
	long := strings.Repeat("y", 4<<20)
	require.NoError(t, os.WriteFile(logPath, []byte(criLog("stdout F "+long)), 0o644))
	got, err := lastLogLines(logPath, maxTerminationLogLines, maxTerminationLogBytes)
	require.NoError(t, err)
	assert.Equal(t, long[:maxTerminationLogBytes], got)
}
