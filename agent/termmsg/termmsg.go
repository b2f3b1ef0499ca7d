package termmsg

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/safepath"
)

// Limits of the kubelet (pkg/kubelet/container/runtime.go).
const (
	// MaxMessageBytes is read from the end of the message file.
	MaxMessageBytes = 4 * 1024
	// maxTerminationLogLines and maxTerminationLogBytes bound the log
	// fall-back: the last lines, then at most this many bytes of them.
	maxTerminationLogLines = 80
	maxTerminationLogBytes = 2 * 1024
	// MaxPodMessageBytes is what all of a pod's containers'
	// termination messages may take together (the kubelet's
	// MaxPodTerminationMessageLogLength).
	MaxPodMessageBytes = 12 * 1024
)

// Limit returns st with each terminated state's message cut to
// an even share of MaxPodMessageBytes, as the kubelet's status
// manager does to every status it keeps and sends (normalizeStatus): the
// share is divided among the spec's init and app containers, and applies
// to their states, last states and the ephemeral containers' alike. A pod
// of many containers that each write 4 KiB therefore publishes 12 KiB of
// their bytes, not 4 KiB times the number of containers. Like the kubelet
// it keeps the head of each message; unlike it, it cuts at a character
// boundary (the kubelet cuts bytes, which may leave invalid UTF-8).
func Limit(spec *v1.PodSpec, st v1.PodStatus) v1.PodStatus {
	share := MaxPodMessageBytes
	if n := len(spec.InitContainers) + len(spec.Containers); n > 0 {
		share /= n
	}
	each := func(st *v1.PodStatus, fn func(*v1.ContainerStateTerminated) bool) bool {
		for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
			for i := range list {
				for _, t := range []*v1.ContainerStateTerminated{list[i].State.Terminated, list[i].LastTerminationState.Terminated} {
					if t != nil && len(t.Message) > share && fn(t) {
						return true
					}
				}
			}
		}
		return false
	}
	if !each(&st, func(*v1.ContainerStateTerminated) bool { return true }) {
		return st // nothing to cut: the caller's status as it is
	}
	st = *st.DeepCopy() // the caller's stays whole
	each(&st, func(t *v1.ContainerStateTerminated) bool {
		i := share
		for i > 0 && !utf8.RuneStart(t.Message[i]) {
			i--
		}
		t.Message = t.Message[:i]
		return false
	})
	return st
}

// Join appends a termination message to the runtime's
// message for the terminated state, as the kubelet does.
func Join(runtimeMsg, msg string) string {
	switch {
	case msg == "":
		return runtimeMsg
	case runtimeMsg == "":
		return msg
	}
	return runtimeMsg + ": " + msg
}

// Read is the kubelet's rule: the last 4096 bytes of the
// file mounted at path; with FallbackToLogsOnError, a non-zero exit and an
// empty or missing file, the end of the container's log.
//
// The file is the pod's to write, and to replace: it is opened beneath the
// root of the mount that covers it (mountedFileRoot), without following a
// symlink, regular files only, without blocking (a FIFO is refused before
// it is opened), and only its last 4096 bytes are read. A refused file
// counts as empty: the message never holds anything but the pod's file.
// When several mounts are at path, the last one is what the container saw.
func Read(path, policy string, exitCode int32, mounts []*runtimeapi.Mount, logPath, podsDir string) string {
	fallback := policy == string(v1.TerminationMessageFallbackToLogsOnError) && exitCode != 0
	var mount *runtimeapi.Mount
	for _, m := range mounts {
		if path != "" && m.GetContainerPath() == path {
			mount = m
		}
	}
	if mount != nil {
		root, rel := mountedFileRoot(mount.GetHostPath(), podsDir)
		data, err := readTailBeneath(root, rel, MaxMessageBytes)
		switch {
		case errors.Is(err, os.ErrNotExist), errors.Is(err, safepath.ErrSymlink),
			errors.Is(err, safepath.ErrNotRegular), errors.Is(err, safepath.ErrEscapes):
			// Missing or refused: as empty.
		case err != nil:
			return fmt.Sprintf("Error on reading termination log: %v", err)
		case len(data) > 0 || !fallback:
			return string(data)
		}
	}
	if !fallback || !filepath.IsAbs(logPath) {
		return ""
	}
	msg, err := lastLogLines(logPath, maxTerminationLogLines, maxTerminationLogBytes)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return msg
}

// mountedFileRoot splits the host path of a mount into the directory
// trusted as a root and the rest, which is the pod's: inside a pod volume
// (<podsDir>/<uid>/volumes/<plugin>/<volume>/...) the volume's directory;
// anywhere else, the path's own directory, which is the agent's (its
// termination files and pinned subPath targets) or the node's (a hostPath
// volume the pod spec names itself).
func mountedFileRoot(hostPath, podsDir string) (root, rel string) {
	hostPath = filepath.Clean(hostPath)
	if rest, ok := strings.CutPrefix(hostPath, filepath.Clean(podsDir)+"/"); ok {
		parts := strings.Split(rest, "/")
		if len(parts) > 4 && parts[1] == "volumes" {
			return filepath.Join(podsDir, filepath.Join(parts[:4]...)), filepath.Join(parts[4:]...)
		}
	}
	return filepath.Dir(hostPath), filepath.Base(hostPath)
}

// readTailBeneath returns at most max bytes from the end of the regular
// file rel beneath root (safepath.OpenBeneath).
func readTailBeneath(root, rel string, max int64) ([]byte, error) {
	f, err := safepath.OpenBeneath(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return safepath.ReadTail(f, max)
}

// maxLogRecordHeader bounds the header of one CRI log record (timestamp,
// stream, tags and their spaces) when lastLogLines sizes its read.
const maxLogRecordHeader = 256

// logChunk is how much of a log file tailStart reads at a time, going
// backwards from the end.
const logChunk = 32 * 1024

// lastLogLines returns the content of the last n records of a CRI log file,
// stdout and stderr together, then cut to the first maxBytes bytes: the
// kubelet's tail-with-byte-limit read of the log. A full record (F) ends its
// line with a newline; partial records (P) are joined with the records that
// continue them. Only the end of the file is read.
//
// Memory stays bounded whatever the container printed: from the start
// offset at most maxBytes plus the record headers of n lines are read, so
// a line of gigabytes costs what a short one does.
func lastLogLines(path string, n int, maxBytes int) (string, error) {
	f, err := safepath.OpenFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	defer f.Close()
	start, err := tailStart(f, n)
	if err != nil {
		return "", err
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return "", err
	}
	var out []byte
	r := bufio.NewReader(io.LimitReader(f, int64(maxBytes)+int64(n+1)*maxLogRecordHeader))
	for len(out) < maxBytes {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			content, partial, ok := parseCRILogLine(bytes.TrimSuffix(line, []byte("\n")))
			if ok {
				out = append(out, content...)
				if !partial {
					out = append(out, '\n')
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
	}
	if len(out) > maxBytes {
		out = out[:maxBytes]
	}
	return string(out), nil
}

// tailStart returns the offset of the n-th last line of f (0 when f has
// fewer lines), reading backwards from the end in chunks.
func tailStart(f *os.File, n int) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	off := fi.Size()
	if off == 0 {
		return 0, nil
	}
	buf := make([]byte, logChunk)
	// The newline ending the last line does not start a line.
	need := n
	if _, err := f.ReadAt(buf[:1], off-1); err != nil {
		return 0, err
	}
	if buf[0] == '\n' {
		need++
	}
	for off > 0 {
		step := min(int64(logChunk), off)
		off -= step
		chunk := buf[:step]
		if _, err := f.ReadAt(chunk, off); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' {
				continue
			}
			need--
			if need == 0 {
				return off + int64(i) + 1, nil
			}
		}
	}
	return 0, nil
}

// parseCRILogLine splits one CRI log record (kubelet-facts §6.5) into its
// content and whether it is a partial line, through the API's parser (the
// one `minikubelet logs` uses, fuzzed there). ok is false for a malformed
// record.
func parseCRILogLine(line []byte) (content []byte, partial, ok bool) {
	l, err := api.ParseCRILogLine(line)
	if err != nil {
		return nil, false, false
	}
	return l.Content, l.Partial, true
}
