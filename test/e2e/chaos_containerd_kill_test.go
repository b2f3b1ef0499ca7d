package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// probedPod is a testserver pod with an HTTP liveness and a TCP readiness
// probe at 1 s, and an exec liveness probe (which needs the runtime). Each
// has 5 s to answer: at the default 1 s, the chaos tests against both
// containerds at once got a container restarted by a probe that timed out
// for want of CPU, not for the outage (an exec probe the runtime cannot
// run errors at once, whatever its timeout).
func probedPod(name string) *v1.Pod {
	zero := int64(0)
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers: []v1.Container{{
				Name:  "web",
				Image: suite.registry + "/minikubelet/testserver:v1",
				LivenessProbe: &v1.Probe{
					ProbeHandler:     v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
					PeriodSeconds:    1,
					TimeoutSeconds:   5,
					FailureThreshold: 2,
				},
				ReadinessProbe: &v1.Probe{
					ProbeHandler:   v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
					PeriodSeconds:  1,
					TimeoutSeconds: 5,
				},
			}, {
				Name:    "side",
				Image:   suite.registry + "/minikubelet/busybox:1.36",
				Command: []string{"sleep", "3600"},
				LivenessProbe: &v1.Probe{
					ProbeHandler:     v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
					PeriodSeconds:    1,
					TimeoutSeconds:   5,
					FailureThreshold: 1,
				},
			}},
		},
	}
}

// containerPids are the processes in a container's cgroup (cgroupfs
// driver: <pod cgroup>/<container ID>).
func containerPids(t *testing.T, uid, id string) []int {
	t.Helper()
	for _, pod := range podCgroups(uid) {
		if !strings.HasPrefix(pod, "/sys/fs/cgroup/pids/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(pod, id, "cgroup.procs"))
		if err != nil {
			continue
		}
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		return pids
	}
	return nil
}

// TestChaosContainerdKill kills containerd with SIGKILL under load (pods
// with HTTP, TCP and exec probes at 1 s), kills one container's process
// while containerd is down, and restarts containerd: the other pods keep
// running (same container IDs, no restart, no probe-caused kill: exec probes
// that fail for want of a runtime are not probe failures), the daemon
// reconnects by itself, and within 5 s of the runtime reporting it (once
// it answers again) the status shows the container that died meanwhile.
func TestChaosContainerdKill(t *testing.T) {
	t.Parallel()
	r := newPrivateRuntime(t)
	names := []string{"chaos-ctrd-0", "chaos-ctrd-1", "chaos-ctrd-2", "chaos-ctrd-victim"}
	d := r.newDaemon(t, names)
	d.start(t)
	c := d.api()
	for _, n := range names {
		ctx, cancel := shortCtx()
		_, err := c.CreatePod(ctx, probedPod(n))
		cancel()
		require.NoError(t, err)
	}
	before := map[string]map[string]string{} // pod → container → ID
	// pod → container → restarts before the outage: a container that
	// died before it (a testserver once exited 2 a second after its
	// start on a machine at load 22) is not the outage's doing.
	restarts := map[string]map[string]int32{}
	uids := map[string]string{}
	for _, n := range names {
		p := d.waitPod(t, n, "Running and Ready", 2*time.Minute, func(p *v1.Pod) bool { return isRunning(p) && isReady(p) })
		uids[n] = string(p.UID)
		before[n] = map[string]string{}
		restarts[n] = map[string]int32{}
		for _, cs := range p.Status.ContainerStatuses {
			before[n][cs.Name] = strings.TrimPrefix(cs.ContainerID, "containerd://")
			restarts[n][cs.Name] = cs.RestartCount
		}
	}
	victim := before["chaos-ctrd-victim"]["side"]
	pids := containerPids(t, uids["chaos-ctrd-victim"], victim)
	require.NotEmpty(t, pids, "processes of the victim container %s", shortID(victim))

	mark, _ := d.out.snapshot()
	r.kill9(t)
	down := time.Now()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// The outage lasts until the daemon has felt it: an exec probe (1 s
	// period) of each pod errored for want of a runtime.
	waitFor(t, "exec probes erroring while containerd is down", 20*time.Second, func() string {
		out, _ := d.out.snapshot()
		if n := strings.Count(out[len(mark):], "Liveness probe errored: exec"); n < len(names) {
			return fmt.Sprintf("%d exec probe errors since the kill", n)
		}
		return ""
	})
	r.start(t)
	r.waitCRI(t, time.Minute)
	answered := time.Now()
	lost := sandboxesRecoveredNotReady(t, r, uids, names[:3])
	// containerd 2.x, under load, can answer for seconds before it has
	// processed the exit the victim's shim saw while it was down; until
	// then the runtime itself reports the container running, and no agent
	// can know better (the chaos tests against both containerds at once:
	// the runtime still reported it running 5 s after answering). The
	// 5 s are the daemon's: from when the runtime reports the exit.
	waitFor(t, "the runtime reporting the victim container exited", time.Minute, func() string {
		ctx, cancel := shortCtx()
		defer cancel()
		st, err := r.rt.ContainerStatus(ctx, victim, false)
		if err != nil {
			return err.Error()
		}
		if st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return "the runtime reports it running"
		}
		return ""
	})
	back := time.Now()
	t.Logf("containerd down for %s; it reported the victim's exit %s after it answered", answered.Sub(down).Round(time.Millisecond), back.Sub(answered).Round(time.Millisecond))

	// Within 5 s: the daemon is ready again and the victim's status shows
	// the kill (a terminated instance with exit code 137, or the runtime's
	// "exit unknown", restarted or waiting to be).
	deadline := back.Add(5 * time.Second)
	var lastErr string
	for {
		code, body, err := d.get("/readyz")
		p, perr := c.GetPod(context.Background(), "default", "chaos-ctrd-victim")
		ok := err == nil && code == http.StatusOK && perr == nil
		if ok {
			ok = false
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name != "side" {
					continue
				}
				term := cs.LastTerminationState.Terminated
				if cs.State.Terminated != nil {
					term = cs.State.Terminated
				}
				// 137 (SIGKILL) when the runtime collected the exit; a
				// containerd (2.x) that finds the task gone at recovery,
				// its shim having exited while containerd was down,
				// records its "exit unknown" instead: 255, reason Unknown
				// (its CRI unknownExitCode/unknownExitReason). Either way
				// the status must show that instance terminated.
				ok = term != nil && strings.Contains(term.ContainerID, victim) &&
					(term.ExitCode == 137 || term.ExitCode == 255 && term.Reason == "Unknown")
			}
			lastErr = podSummary(p)
		} else {
			lastErr = fmt.Sprintf("readyz %d %q %v; get pod %v", code, body, err, perr)
		}
		if ok {
			t.Logf("victim's death shown %s after the runtime reported it", time.Since(back).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status does not show the container killed during the outage within 5 s of the runtime reporting its exit:\n%s", lastErr)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The others keep running, unchanged: same IDs, no restart, Ready; for
	// a few probe periods after the restart too.
	for until := time.Now().Add(4 * time.Second); time.Now().Before(until); time.Sleep(500 * time.Millisecond) {
		for _, n := range names[:3] {
			if lost[n] {
				continue
			}
			p, err := c.GetPod(context.Background(), "default", n)
			require.NoError(t, err)
			require.True(t, isRunning(p) && isReady(p), "%s after the containerd restart: %s", n, podSummary(p))
			for _, cs := range p.Status.ContainerStatuses {
				require.Equal(t, before[n][cs.Name], strings.TrimPrefix(cs.ContainerID, "containerd://"), "%s/%s was replaced: %s", n, cs.Name, podSummary(p))
				require.Equal(t, restarts[n][cs.Name], cs.RestartCount, "%s/%s restarted: %s", n, cs.Name, podSummary(p))
			}
		}
	}
	// The victim comes back.
	d.waitPod(t, "chaos-ctrd-victim", "Ready again after the restart of its container", time.Minute, func(p *v1.Pod) bool {
		if !isReady(p) {
			return false
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "side" && cs.RestartCount < 1 {
				return false
			}
		}
		return true
	})
	// A pod whose sandbox the runtime's recovery lost is replaced, as the
	// kubelet replaces a pod whose sandbox changed: Running and Ready again.
	for n := range lost {
		d.waitPod(t, n, "Running and Ready in a new sandbox after the runtime lost its own", 2*time.Minute, func(p *v1.Pod) bool { return isRunning(p) && isReady(p) })
	}
	// No leaked IP, waited for: a sandbox being made (its CNI ADD done,
	// not yet listed) holds an IP no listed sandbox has (a pod replaced
	// as above).
	waitFor(t, "IPs after the containerd restart", 30*time.Second, func() string {
		v, err := observeRuntime(r)
		if err != nil {
			return err.Error()
		}
		if leaks := ipLeaks(r.reservations(t), v); len(leaks) > 0 {
			return strings.Join(leaks, "\n") + "\n" + v.String()
		}
		return ""
	})
	for _, n := range names[:3] {
		p, err := c.GetPod(context.Background(), "default", n)
		require.NoError(t, err)
		for _, cs := range p.Status.ContainerStatuses {
			if !lost[n] && before[n][cs.Name] != strings.TrimPrefix(cs.ContainerID, "containerd://") {
				t.Logf("%s/%s was replaced after the first seconds: %s", n, cs.Name, podSummary(p))
			}
		}
	}
	// Since the kill (mark): an exec probe the runtime cannot run errored,
	// it did not fail; an HTTP probe may miss once under load, never
	// failureThreshold times. Before it, a testserver slower to listen
	// than its liveness probe's two periods (no initial delay) under load
	// was killed and restarted as any kubelet would (CI, containerd 2.4):
	// not the outage's doing, and the pods were Ready again before it.
	out, _ := d.out.snapshot()
	out = out[len(mark):]
	require.Contains(t, out, "Liveness probe errored: exec", "the exec probes ran into the outage")
	require.NotContains(t, out, "will be restarted", "no container killed by a probe around the outage")
}

// sandboxesRecoveredNotReady returns the pods (of names) whose sandbox the
// runtime reports not ready at its first answer after the restart, each
// logged. containerd 1.6 under load does that to a running pod: its
// recovery asks each shim for the task's state with a 2 s bound
// (services/tasks/local.go getProcessState), takes the "unknown" of a
// slow shim for stopped, and kills the pause process itself
// (pkg/cri/server/restart.go loadSandbox); a shim that does not answer
// its reconnect within 5 s is deleted with its processes. (2.3 and later
// keep the processes, but still report the sandbox not ready.) Its
// answer then is final: recovery ends before the CRI answers. The agent
// replaces such a pod, as the kubelet does a pod whose sandbox changed:
// the runtime's verdict, not the agent's, so the test does not hold
// those pods unchanged (CI stop 47, containerd 1.6: chaos-ctrd-2 was
// replaced after a 16 s outage at load 50). This lists at once, as a
// rule before the agent's next relist (1 s); a sandbox the agent itself
// stopped in that instant would be excused too, which only loosens the
// check, never fails it.
func sandboxesRecoveredNotReady(t *testing.T, r *privateRuntime, uids map[string]string, names []string) map[string]bool {
	t.Helper()
	ctx, cancel := shortCtx()
	defer cancel()
	sbs, err := r.rt.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	lost := map[string]bool{}
	for _, n := range names {
		for _, sb := range sbs {
			if sb.Labels["io.kubernetes.pod.uid"] == uids[n] && sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
				t.Logf("%s: the runtime came back with its sandbox %s not ready; the pod is replaced, not held unchanged", n, shortID(sb.Id))
				lost[n] = true
			}
		}
	}
	return lost
}
