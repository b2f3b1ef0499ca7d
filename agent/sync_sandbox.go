package agent

// syncPod's sandbox step (Step 4 of syncPod, sync_pod.go): the pod's
// sandbox created or reused, and what its creation waits for, started
// together before it: the runtime's network readiness and the pod's
// cgroup (sandboxPrelude). Split from sync_pod.go to keep the engine's
// files under 800 lines (#18); the code is unchanged.

import (
	"context"
	"errors"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri"
)

// networkState is the runtime's NetworkReady condition.
type networkState struct {
	ready           bool
	reason, message string
	err             error
}

// sandboxPrelude is what creating a sandbox needs first, started while a new
// pod is observed instead of after: the pod network's readiness (the
// runtime's Status) and the pod cgroup. Neither changes anything when the
// observation finds the pod running already (an agent restart adopting it):
// Status is a question, and the pod cgroup exists and gets the same
// settings again. A nil prelude does the work when asked.
type sandboxPrelude struct {
	pod *v1.Pod
	net chan networkState
	// cgroup delivers ensurePodCgroup's result; done is closed once it ran.
	cgroup chan podCgroupResult
	done   chan struct{}
}

type podCgroupResult struct {
	parent string
	err    error
}

// startSandboxPrelude starts the prelude of the pod's sandbox.
func (a *Agent) startSandboxPrelude(ctx context.Context, pod *v1.Pod) *sandboxPrelude {
	p := &sandboxPrelude{pod: pod, cgroup: make(chan podCgroupResult, 1), done: make(chan struct{})}
	if !pod.Spec.HostNetwork {
		p.net = make(chan networkState, 1)
		go func() { p.net <- a.networkState(ctx) }()
	}
	go func() {
		defer close(p.done)
		parent, err := a.ensurePodCgroup(pod)
		p.cgroup <- podCgroupResult{parent: parent, err: err}
	}()
	return p
}

// networkState returns the pod network's readiness.
func (p *sandboxPrelude) networkState(ctx context.Context, a *Agent) networkState {
	if p == nil || p.net == nil {
		return a.networkState(ctx)
	}
	return <-p.net
}

// podCgroup returns the pod cgroup's path for the sandbox's CgroupParent.
func (p *sandboxPrelude) podCgroup(a *Agent, pod *v1.Pod) (string, error) {
	if p == nil || p.pod != pod {
		return a.ensurePodCgroup(pod)
	}
	r := <-p.cgroup
	return r.parent, r.err
}

// wait returns once the prelude's cgroup work is done: a sync must not
// leave it running into a teardown, which removes the pod cgroup.
func (p *sandboxPrelude) wait() {
	<-p.done
}

// networkState asks the runtime about the pod network, unless a ready
// answer stands (Deps.NetworkReady).
func (a *Agent) networkState(ctx context.Context) networkState {
	ok, reason, msg, err := a.readyCache.Reuse(ctx, a.cfg.Network, a.networkReady)
	return networkState{ready: ok, reason: reason, message: msg, err: err}
}

// podNetworkHint names the node's pod network and its conflist in the
// not-ready message, and says what brings it back. The agent installs the
// conflist at start and, like the kubelet, leaves the runtime's CNI config
// alone afterwards: a conflist removed at runtime is the operator's doing.
func (a *Agent) podNetworkHint() string {
	n := a.cfg.Network
	path := cni.ConfPath(n)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("pod network %q (%s) has no conflist: %s is missing; restore it or restart minikubelet, which reinstalls it", n.Name, n.PodCIDR, path)
	}
	return fmt.Sprintf("pod network %q (%s): the runtime has not loaded %s yet", n.Name, n.PodCIDR, path)
}

// ensureSandbox returns the sandbox to start containers in, creating it if
// the plan says so. Creating a sandbox takes hundreds of milliseconds (CNI
// ADD), so the pod's images are pulled at the same time; the kubelet does
// these in sequence. The returned map holds the refs of pulled images.
func (a *Agent) ensureSandbox(ctx context.Context, w *podWorker, pod *v1.Pod, st *podState, act podActions, res *syncResult, pre *sandboxPrelude) (*sandboxInfo, map[string]pullResult) {
	if !act.CreateSandbox {
		if act.SandboxID == "" {
			return nil, nil
		}
		cfg, err := a.generatePodSandboxConfig(pod, act.Attempt)
		if err != nil {
			w.event(v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to generate sandbox config: %v", err)
			res.fail()
			return nil, nil
		}
		// Containers (re)created in the existing sandbox must land in the
		// pod cgroup too: containerd derives their cgroup from the sandbox
		// config's CgroupParent (without it, /k8s.io/<id> outside the pod's
		// cgroup on cgroupfs, and a runc error with systemd).
		cfg.Linux.CgroupParent = a.podCgroups().Path(pod)
		return &sandboxInfo{id: act.SandboxID, attempt: act.Attempt, ip: st.sandboxes[0].ip, config: cfg, ready: true}, nil
	}
	cfg, err := a.generatePodSandboxConfig(pod, act.Attempt)
	if err != nil { // the kubelet's createPodSandbox error, in its event's words (e2e_node's FQDN spec reads them)
		w.event(v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		res.fail()
		return nil, nil
	}

	// Pull every image the pod will need while the sandbox comes up
	// (images.Manager.PullAll).
	prepulled, pulls := a.imageManager().PullAll(ctx, pod, w.pullReport, cfg)

	// A lone node has no cluster DNS (MissingClusterDNS), and resolver
	// limits may trim the pod's DNS config (DNSConfigForming): sandbox.go.
	if _, warns, err := a.podDNS(pod); err == nil {
		for _, wn := range warns {
			w.event(v1.EventTypeWarning, wn.Reason, "%s", wn.Message)
		}
	}
	// The pod cgroup first: containerd creates the sandbox and every
	// container below it.
	parent, err := pre.podCgroup(a, pod)
	if err != nil {
		pulls.Wait()
		w.event(v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create the pod cgroup: %v", err)
		res.fail()
		return nil, prepulled
	}
	cfg.Linux.CgroupParent = parent
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil { // as the kubelet, before RunPodSandbox
		w.event(v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod log directory: %v", err)
		res.fail()
		pulls.Wait()
		return nil, nil
	}
	t0 := a.clock.Now()
	// Not cut short by a termination: containerd may keep a cancelled call's sandbox after the teardown listed the pod.
	ctx, rcancel := w.killContext(ctx)
	defer rcancel()
	id, err := a.runtime.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		// A call that timed out may still have created the sandbox.
		res.lostTrack()
		pulls.Wait()
		w.event(v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %s", cri.Message(err))
		res.fail()
		return nil, prepulled
	}
	sb := &sandboxInfo{id: id, attempt: act.Attempt, config: cfg, ready: true}
	resp, err := a.runtime.PodSandboxStatus(ctx, id, false)
	if err != nil {
		res.lostTrack()
		pulls.Wait()
		w.event(v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to read new pod sandbox status: %s", cri.Message(err))
		res.fail()
		return nil, prepulled
	}
	sb.ip = resp.GetStatus().GetNetwork().GetIp()
	if s := resp.GetStatus(); s != nil {
		res.mu.Lock()
		res.sandbox = sandboxFromStatus(s)
		res.mu.Unlock()
	} else {
		res.lostTrack()
	}
	detail := fmt.Sprintf("%s attempt %d", shortID(id), act.Attempt)
	if pod.Spec.HostNetwork {
		detail += ", host network"
	} else {
		detail += ", IP " + sb.ip
	}
	if parent != "" {
		detail += ", cgroup " + parent
	}
	w.step(podevents.StepSandbox, a.clock.Since(t0), detail)
	pulls.Wait()
	return sb, prepulled
}
