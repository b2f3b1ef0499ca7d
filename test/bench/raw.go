package main

// The floor: a raw CRI client that makes exactly the calls a kubelet must
// make for the benchmark's pods, with no agent, no API, no status. What it
// does per pod is the kubelet's minimum for a single-container pod whose
// image is present:
//
//	pod cgroup (kubepods/besteffort/pod<uid>), pod log dir, /etc/hosts and
//	termination-log files        — local files, as the kubelet creates them
//	ImageStatus                  — the kubelet's EnsureImageExists for
//	                               IfNotPresent (concurrent with the sandbox)
//	RunPodSandbox                — same conflist (CNI ADD), same cgroup parent shape
//	PodSandboxStatus             — the pod IP (for env, hosts, probes)
//	CreateContainer, StartContainer
//
// "Started" is the StartContainer call returning; "Ready" is a TCP connect
// to podIP:port succeeding. Deletion is StopContainer (the grace period,
// raised to the kubelet's 2 s minimum as minikubelet does), StopPodSandbox
// (CNI DEL) and RemovePodSandbox.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cri"
)

// Labels of the raw pods: the kubelet's identity labels, and the bench's
// own marker so that cleanup finds them. They carry no
// io.minikubelet.managed-by label: the daemon never sees them.
const (
	labelBench   = "io.minikubelet.bench"
	labelPodName = "io.kubernetes.pod.name"
	labelPodNS   = "io.kubernetes.pod.namespace"
	labelPodUID  = "io.kubernetes.pod.uid"
	labelCtrName = "io.kubernetes.container.name"
	benchNS      = "bench"
)

// rawClient is the floor.
type rawClient struct {
	rt      *cri.Client
	cg      cgroups.Manager // nil: no pod cgroups (the daemon runs without --cgroups-per-qos)
	logDir  string          // pod log root
	fileDir string          // per-pod hosts and termination-log files
	image   string
	// args are the container's arguments (testserver flags).
	args []string
}

// rawPod is one pod the floor created.
type rawPod struct {
	name, uid   string
	sandboxID   string
	containerID string
	ip          string
	cgroup      cgroups.Name
	// phases of the start, for the breakdown.
	phases phases
}

// phases splits a pod start into the steps both sides share: before
// RunPodSandbox, RunPodSandbox with its status, between the sandbox and
// CreateContainer, CreateContainer, StartContainer, and from the start's
// return to the state being observed (0 for the floor: its call returning
// is the observation).
type phases struct {
	pre, sandbox, prep, create, start, observe time.Duration
}

func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// start creates and starts the pod and returns it once StartContainer
// returned.
func (r *rawClient) start(ctx context.Context, name string) (*rawPod, error) {
	begin := time.Now()
	p := &rawPod{name: name, uid: newUID()}
	labels := map[string]string{
		labelPodName: name, labelPodNS: benchNS, labelPodUID: p.uid, labelBench: "raw",
	}
	logDir := filepath.Join(r.logDir, fmt.Sprintf("%s_%s_%s", benchNS, name, p.uid))
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: benchNS, Uid: p.uid},
		Hostname:     name,
		LogDirectory: logDir,
		Labels:       labels,
		Annotations:  map[string]string{"io.kubernetes.pod.qosClass": "BestEffort"},
		DnsConfig:    &runtimeapi.DNSConfig{Servers: []string{"127.0.0.53"}, Options: []string{"ndots:5"}},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
				Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
		},
	}
	// The image check runs while the sandbox comes up.
	type imgResult struct {
		ref string
		err error
	}
	imgc := make(chan imgResult, 1)
	go func() {
		st, err := r.rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: r.image}, false)
		if err == nil && st.GetImage() == nil {
			err = fmt.Errorf("image %s is not present", r.image)
		}
		imgc <- imgResult{ref: st.GetImage().GetId(), err: err}
	}()
	if r.cg != nil {
		p.cgroup = cgroups.PodName(cgroups.KubepodsBestEffort, p.uid)
		if err := r.cg.Ensure(p.cgroup, cgroups.Resources{}); err != nil {
			<-imgc
			return p, fmt.Errorf("pod cgroup: %w", err)
		}
		sbCfg.Linux.CgroupParent = r.cg.Path(p.cgroup)
	}
	if err := os.MkdirAll(filepath.Join(logDir, "app"), 0o755); err != nil {
		<-imgc
		return p, err
	}
	t0 := time.Now()
	id, err := r.rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		<-imgc
		return p, fmt.Errorf("RunPodSandbox: %w", err)
	}
	p.sandboxID = id
	st, err := r.rt.PodSandboxStatus(ctx, id, false)
	if err != nil {
		<-imgc
		return p, fmt.Errorf("PodSandboxStatus: %w", err)
	}
	p.ip = st.GetStatus().GetNetwork().GetIp()
	t1 := time.Now()
	img := <-imgc
	if img.err != nil {
		return p, fmt.Errorf("ImageStatus: %w", img.err)
	}
	// The files a kubelet writes for every container: /etc/hosts and the
	// termination log.
	podFiles := filepath.Join(r.fileDir, p.uid)
	if err := os.MkdirAll(podFiles, 0o750); err != nil {
		return p, err
	}
	hosts := filepath.Join(podFiles, "etc-hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost\n"+p.ip+"\t"+name+"\n"), 0o644); err != nil {
		return p, err
	}
	term := filepath.Join(podFiles, "termination-log")
	if err := os.WriteFile(term, nil, 0o666); err != nil {
		return p, err
	}
	ctrCfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: img.ref, UserSpecifiedImage: r.image},
		Args:     r.args,
		Envs: []*runtimeapi.KeyValue{
			{Key: "POD_NAME", Value: []byte(name)}, {Key: "POD_IP", Value: []byte(p.ip)},
		},
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/etc/hosts", HostPath: hosts},
			{ContainerPath: "/dev/termination-log", HostPath: term},
		},
		Labels:  map[string]string{labelPodName: name, labelPodNS: benchNS, labelPodUID: p.uid, labelCtrName: "app", labelBench: "raw"},
		LogPath: filepath.Join("app", "0.log"),
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 1000},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: sbCfg.Linux.SecurityContext.NamespaceOptions,
				RunAsUser:        &runtimeapi.Int64Value{Value: 0},
				Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			},
		},
	}
	t2 := time.Now()
	cid, err := r.rt.CreateContainer(ctx, id, ctrCfg, sbCfg)
	if err != nil {
		return p, fmt.Errorf("CreateContainer: %w", err)
	}
	p.containerID = cid
	t3 := time.Now()
	if err := r.rt.StartContainer(ctx, cid); err != nil {
		return p, fmt.Errorf("StartContainer: %w", err)
	}
	t4 := time.Now()
	p.phases = phases{pre: t0.Sub(begin), sandbox: t1.Sub(t0), prep: t2.Sub(t1), create: t3.Sub(t2), start: t4.Sub(t3)}
	return p, nil
}

// waitTCP connects to ip:port until it succeeds (every millisecond).
func waitTCP(ctx context.Context, ip string, port int) error {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	d := net.Dialer{Timeout: time.Second}
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("connect %s: %w (last: %v)", addr, ctx.Err(), err)
		case <-time.After(time.Millisecond):
		}
	}
}

// kubeletMinimumGracePeriod is the kubelet's floor for StopContainer's
// timeout (minimumGracePeriodInSeconds, kubelet-facts §7.2): a kubelet, and
// minikubelet, gives the runtime 2 s even for a grace period of 0 or 1 s.
const kubeletMinimumGracePeriod = 2

// stop is the raw deletion of one pod: StopContainer with the grace
// period (at least kubeletMinimumGracePeriod), StopPodSandbox (CNI DEL),
// RemovePodSandbox.
// Each call is retried once, as a kubelet's next sync would: a loaded
// containerd 1.6 occasionally loses a shim connection ("ttrpc: closed").
func (r *rawClient) stop(ctx context.Context, p *rawPod, grace int64) error {
	var errs []error
	retry := func(what string, call func() error) {
		err := call()
		if err != nil && !cri.IsNotFound(err) {
			err = call()
		}
		if err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	if p.containerID != "" {
		timeout := max(grace, kubeletMinimumGracePeriod)
		retry("StopContainer", func() error { return r.rt.StopContainer(ctx, p.containerID, timeout) })
	}
	if p.sandboxID != "" {
		retry("StopPodSandbox", func() error { return r.rt.StopPodSandbox(ctx, p.sandboxID) })
		retry("RemovePodSandbox", func() error { return r.rt.RemovePodSandbox(ctx, p.sandboxID) })
	}
	return errors.Join(errs...)
}

// release removes what stop leaves on the host (cgroup, files); untimed.
func (r *rawClient) release(p *rawPod) error {
	var errs []error
	if r.cg != nil && p.cgroup != nil {
		if err := r.cg.Destroy(p.cgroup); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, os.RemoveAll(filepath.Join(r.fileDir, p.uid)))
	errs = append(errs, os.RemoveAll(filepath.Join(r.logDir, fmt.Sprintf("%s_%s_%s", benchNS, p.name, p.uid))))
	return errors.Join(errs...)
}

// remove stops, removes and releases one pod (cleanup between
// iterations, untimed).
func (r *rawClient) remove(ctx context.Context, p *rawPod) error {
	return errors.Join(r.stop(ctx, p, 0), r.release(p))
}

// removeAll removes pods concurrently.
func (r *rawClient) removeAll(ctx context.Context, pods []*rawPod) error {
	var wg sync.WaitGroup
	errs := make([]error, len(pods))
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.remove(ctx, p)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
