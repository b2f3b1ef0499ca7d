package logrotate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The kubelet's container log symlinks (kuberuntime's legacyLogSymlink):
// <ContainerLogsDir>/<pod>_<namespace>_<container>-<containerID>.log points
// at the container's CRI log file under the pod log directory. Log shippers
// (fluentd, fluent-bit, the node e2e "ContainerLogPath" spec) read
// /var/log/containers, not /var/log/pods.

// ext4MaxFileNameLen is the longest file name ext4 takes; the kubelet
// truncates the link's name (before ".log") to fit.
const ext4MaxFileNameLen = 255

// ContainerLogSymlink is the link's path, as the kubelet's logSymlink
// names it.
func ContainerLogSymlink(dir, podName, namespace, container, containerID string) string {
	const suffix = ".log"
	name := fmt.Sprintf("%s_%s_%s-%s", podName, namespace, container, containerID)
	if len(name) > ext4MaxFileNameLen-len(suffix) {
		name = name[:ext4MaxFileNameLen-len(suffix)]
	}
	return filepath.Join(dir, name+suffix)
}

// LinkContainerLog makes the container's log symlink in dir, pointing at
// logPath, once logPath exists (the kubelet links only a log the runtime
// created); an old link of that name is replaced. dir "" does nothing.
func LinkContainerLog(dir, podName, namespace, container, containerID, logPath string) error {
	if dir == "" || logPath == "" {
		return nil
	}
	if _, err := os.Stat(logPath); err != nil {
		return nil //nolint:nilerr // no log file: nothing to link, as the kubelet
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	link := ContainerLogSymlink(dir, podName, namespace, container, containerID)
	if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.Symlink(logPath, link)
}

// UnlinkContainerLog removes the log symlinks of a removed container: the
// symlinks in dir whose name ends in -<containerID>.log, or, for a name
// the truncation cut short, in -<at least 12 characters of containerID>.
// Regular files are never removed.
func UnlinkContainerLog(dir, containerID string) error {
	if dir == "" || containerID == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok || e.Type()&os.ModeSymlink == 0 {
			continue
		}
		id := base[strings.LastIndex(base, "-")+1:]
		if id != containerID && (len(id) < 12 || !strings.HasPrefix(containerID, id)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
