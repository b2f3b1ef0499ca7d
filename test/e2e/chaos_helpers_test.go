package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// chaosPod is a one-container busybox pod that sleeps, deleted at once.
func chaosPod(name string) *v1.Pod {
	zero := int64(0)
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers: []v1.Container{{
				Name:  "c",
				Image: suite.registry + "/minikubelet/busybox:1.36",
				// Exits on SIGTERM at once (a plain sleep as PID 1 ignores
				// it and waits for the SIGKILL a second later).
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
			}},
		},
	}
}

// runtimeView is what the runtime holds, by pod UID.
type runtimeView struct {
	ready, notReady map[string][]string // pod UID → sandbox IDs
	running, other  map[string][]string // pod UID → "name/id" of containers
	sandboxIP       map[string]string   // READY sandbox ID → IP
}

func (v runtimeView) String() string {
	var b strings.Builder
	uids := map[string]bool{}
	for _, m := range []map[string][]string{v.ready, v.notReady, v.running, v.other} {
		for u := range m {
			uids[u] = true
		}
	}
	keys := make([]string, 0, len(uids))
	for u := range uids {
		keys = append(keys, u)
	}
	sort.Strings(keys)
	for _, u := range keys {
		fmt.Fprintf(&b, "  pod %s: ready sandboxes %v, notready %v, running containers %v, other containers %v\n",
			shortID(u), v.ready[u], v.notReady[u], v.running[u], v.other[u])
	}
	return b.String()
}

// counts says how many objects of each kind v holds, in one line.
func (v runtimeView) counts() string {
	n := func(m map[string][]string) (k int) {
		for _, objs := range m {
			k += len(objs)
		}
		return k
	}
	return fmt.Sprintf("%d ready sandboxes, %d notready, %d running containers, %d other", n(v.ready), n(v.notReady), n(v.running), n(v.other))
}

// observeRuntime lists the runtime's sandboxes and containers.
func observeRuntime(r *privateRuntime) (runtimeView, error) {
	v := runtimeView{ready: map[string][]string{}, notReady: map[string][]string{}, running: map[string][]string{}, other: map[string][]string{}, sandboxIP: map[string]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sbs, err := r.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return v, err
	}
	for _, sb := range sbs {
		uid := sb.Labels["io.kubernetes.pod.uid"]
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			v.ready[uid] = append(v.ready[uid], shortID(sb.Id))
			st, err := r.rt.PodSandboxStatus(ctx, sb.Id, false)
			if err != nil {
				return v, err
			}
			v.sandboxIP[sb.Id] = st.GetStatus().GetNetwork().GetIp()
		} else {
			v.notReady[uid] = append(v.notReady[uid], shortID(sb.Id))
		}
	}
	cs, err := r.rt.ListContainers(ctx, nil)
	if err != nil {
		return v, err
	}
	for _, c := range cs {
		uid := c.Labels["io.kubernetes.pod.uid"]
		entry := c.Metadata.GetName() + "/" + shortID(c.Id)
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			v.running[uid] = append(v.running[uid], entry)
		} else {
			entry += "/" + c.State.String()
			if st, err := r.rt.ContainerStatus(ctx, c.Id, false); err == nil {
				s := st.GetStatus()
				entry += fmt.Sprintf("(started=%v exit=%d reason=%q message=%q)", s.GetStartedAt() != 0, s.GetExitCode(), s.GetReason(), s.GetMessage())
			}
			v.other[uid] = append(v.other[uid], entry)
		}
	}
	return v, nil
}

// ipLeaks compares the host-local store with the READY sandboxes' IPs,
// one to one; it describes every difference.
func ipLeaks(res map[string]string, v runtimeView) []string {
	var diffs []string
	want := map[string]string{} // IP → sandbox
	for id, ip := range v.sandboxIP {
		if ip != "" {
			want[ip] = id
		}
	}
	for ip, id := range res {
		if want[ip] != id {
			diffs = append(diffs, fmt.Sprintf("reserved %s for %s, which is no live sandbox's IP (live owner %q)", ip, shortID(id), shortID(want[ip])))
		}
	}
	for ip, id := range want {
		if res[ip] != id {
			diffs = append(diffs, fmt.Sprintf("live sandbox %s has IP %s that host-local does not hold for it (holder %q)", shortID(id), ip, shortID(res[ip])))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// podCgroups finds the pod cgroup directories of uid under the kubepods
// hierarchy of the cpu, memory and pids controllers (cgroupfs driver).
func podCgroups(uid string) []string {
	var found []string
	for _, ctrl := range []string{"cpu", "memory", "pids"} {
		for _, tier := range []string{"", "burstable", "besteffort"} {
			p := filepath.Join("/sys/fs/cgroup", ctrl, "kubepods", tier, "pod"+uid)
			if _, err := os.Stat(p); err == nil {
				found = append(found, p)
			}
		}
	}
	return found
}

// waitFor polls cond every 200 ms until it returns "" (converged) or the
// timeout passes, and fails with the last difference it described.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		diff := cond()
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not converged after %s:\n%s", what, timeout, diff)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
