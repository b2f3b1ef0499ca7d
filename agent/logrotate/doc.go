// Package logrotate rotates the containers' CRI log files, the kubelet's
// container log manager (pkg/kubelet/logs); issue #30 moved it out of the
// engine. The runtime writes each container's output to one log file and
// never rotates it; a Rotator renames a file that grew too big, asks the
// runtime to reopen it (CRI ReopenContainerLog), then prunes the oldest
// rotated files:
//
//	0.log (> MaxSize) ──rename──> 0.log.20260102-030405.000000
//	                  ──ReopenContainerLog──> runtime creates a new 0.log
//	                     └─ fails: rename back, retry next period
//	                  ──prune──> keep the newest MaxFiles-1 rotated files
//
// Rotated files stay uncompressed (the kubelet gzips all but the newest):
// `minikubelet logs` reads them as they are.
//
// It also keeps the kubelet's container log symlinks (symlink.go):
// <ContainerLogsDir>/<pod>_<namespace>_<container>-<id>.log points at the
// container's log file, for log shippers that read /var/log/containers.
// The engine links a container's log after its start and unlinks it when
// the container is removed.
//
// It sees the runtime through Runtime (three CRI calls; cri.Runtime has
// them) and is told which containers are its caller's (Options.Selector
// and Options.Owns); the engine (package agent, agent/logrotate.go) builds
// it with the agent's label and ownership test, and the daemon runs it.
//
// It must not import the engine (package agent), agent/daemon, cgroups,
// cni, probes, k8s.io/api or cmd; of the repository it uses cri (its
// errors; its tests: cri/critest). hack/verify-imports.sh enforces it, for
// its tests too.
package logrotate
