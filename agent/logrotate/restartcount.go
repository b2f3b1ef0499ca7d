package logrotate

import (
	"os"
	"regexp"
	"strconv"
)

// logFileRE matches the kubelet's container log names: N.log, optionally
// with a rotation suffix.
var logFileRE = regexp.MustCompile(`^(\d+)\.log(\..+)?$`)

// RestartCountFromLogs returns 1 + the highest N of the N.log files in dir
// (a container's log directory), or 0 when there are none: the restart
// count a container goes on from when its earlier instances are gone, as
// the kubelet's calcRestartCountByLogDir.
func RestartCountFromLogs(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if m := logFileRE.FindStringSubmatch(e.Name()); m != nil {
			if k, err := strconv.Atoi(m[1]); err == nil && k+1 > n {
				n = k + 1
			}
		}
	}
	return n
}
