// Package floor is the benchmark's floor: a raw CRI client that makes
// exactly the calls a kubelet must make for the benchmark's pods, with no
// agent, no API, no status. The bench (test/bench) runs it in process;
// test/bench/rawrun runs it as a process of its own, the floor of
// `minikubelet run`. What it does per pod is the kubelet's minimum for a
// single-container pod whose image is present:
//
//	pod cgroup (kubepods/besteffort/pod<uid>), pod log dir, /etc/hosts and
//	termination-log files        — local files, as the kubelet creates them
//	ImageStatus                  — the kubelet's EnsureImageExists for
//	                               IfNotPresent (concurrent with the sandbox)
//	RunPodSandbox                — same conflist (CNI ADD), same cgroup parent shape
//	PodSandboxStatus             — the pod IP (for env, hosts, probes)
//	CreateContainer, StartContainer
//
// "Started" is the StartContainer call returning. Deletion is
// StopContainer (the grace period, raised to the kubelet's 2 s minimum as
// minikubelet does), StopPodSandbox (CNI DEL) and RemovePodSandbox.
//
// It imports only the project's cri and cgroups packages and cri-api, so
// that rawrun stays a small binary: its start is part of what it measures.
package floor

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cri"
)

// Labels of the floor's pods: the kubelet's identity labels, and the
// bench's own marker so that cleanup finds them. They carry no
// io.minikubelet.managed-by label: no minikubelet ever sees them.
const (
	LabelBench   = "io.minikubelet.bench"
	LabelPodName = "io.kubernetes.pod.name"
	LabelPodNS   = "io.kubernetes.pod.namespace"
	LabelPodUID  = "io.kubernetes.pod.uid"
	LabelCtrName = "io.kubernetes.container.name"
	// DefaultNamespace is the namespace of the floor's pods when Client
	// names none.
	DefaultNamespace = "bench"
)

// Runtime is the part of the CRI the floor calls (cri.Client has it).
type Runtime interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
}

var _ Runtime = (*cri.Client)(nil)

// Client is the floor.
type Client struct {
	RT Runtime
	// Cgroups makes the pod cgroups; nil: none (the daemon runs without
	// --cgroups-per-qos).
	Cgroups cgroups.Manager
	LogDir  string // pod log root
	FileDir string // per-pod hosts and termination-log files
	Image   string
	// Args are the container's arguments (testserver flags).
	Args []string
	// Namespace of the pods (DefaultNamespace when empty).
	Namespace string
}

// Pod is one pod the floor created.
type Pod struct {
	Name, UID   string
	Namespace   string
	SandboxID   string
	ContainerID string
	IP          string
	Cgroup      cgroups.Name
	// Phases of the start, for the breakdown.
	Phases Phases
}

// Phases splits a pod start into the steps both sides share: before
// RunPodSandbox, RunPodSandbox with its status, between the sandbox and
// CreateContainer, CreateContainer, StartContainer, and from the start's
// return to the state being observed (0 for the floor: its call returning
// is the observation).
type Phases struct {
	Pre, Sandbox, Prep, Create, Start, Observe time.Duration
}

// NewUID returns a random version 4 UUID.
func NewUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (r *Client) ns() string {
	if r.Namespace == "" {
		return DefaultNamespace
	}
	return r.Namespace
}

// podLogDir is the kubelet's <ns>_<name>_<uid> directory of a pod.
func (r *Client) podLogDir(ns, name, uid string) string {
	return filepath.Join(r.LogDir, fmt.Sprintf("%s_%s_%s", ns, name, uid))
}

// Start creates and starts the pod and returns it once StartContainer
// returned.
func (r *Client) Start(ctx context.Context, name string) (*Pod, error) {
	begin := time.Now()
	ns := r.ns()
	p := &Pod{Name: name, UID: NewUID(), Namespace: ns}
	labels := map[string]string{
		LabelPodName: name, LabelPodNS: ns, LabelPodUID: p.UID, LabelBench: "raw",
	}
	logDir := r.podLogDir(ns, name, p.UID)
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: ns, Uid: p.UID},
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
		st, err := r.RT.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: r.Image}, false)
		if err == nil && st.GetImage() == nil {
			err = fmt.Errorf("image %s is not present", r.Image)
		}
		imgc <- imgResult{ref: st.GetImage().GetId(), err: err}
	}()
	if r.Cgroups != nil {
		p.Cgroup = cgroups.PodName(cgroups.KubepodsBestEffort, p.UID)
		if err := r.Cgroups.Ensure(p.Cgroup, cgroups.Resources{}); err != nil {
			<-imgc
			return p, fmt.Errorf("pod cgroup: %w", err)
		}
		sbCfg.Linux.CgroupParent = r.Cgroups.Path(p.Cgroup)
	}
	if err := os.MkdirAll(filepath.Join(logDir, "app"), 0o755); err != nil {
		<-imgc
		return p, err
	}
	t0 := time.Now()
	id, err := r.RT.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		<-imgc
		return p, fmt.Errorf("RunPodSandbox: %w", err)
	}
	p.SandboxID = id
	st, err := r.RT.PodSandboxStatus(ctx, id, false)
	if err != nil {
		<-imgc
		return p, fmt.Errorf("PodSandboxStatus: %w", err)
	}
	p.IP = st.GetStatus().GetNetwork().GetIp()
	t1 := time.Now()
	img := <-imgc
	if img.err != nil {
		return p, fmt.Errorf("ImageStatus: %w", img.err)
	}
	// The files a kubelet writes for every container: /etc/hosts and the
	// termination log.
	podFiles := filepath.Join(r.FileDir, p.UID)
	if err := os.MkdirAll(podFiles, 0o750); err != nil {
		return p, err
	}
	hosts := filepath.Join(podFiles, "etc-hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost\n"+p.IP+"\t"+name+"\n"), 0o644); err != nil {
		return p, err
	}
	term := filepath.Join(podFiles, "termination-log")
	if err := os.WriteFile(term, nil, 0o666); err != nil {
		return p, err
	}
	ctrCfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: img.ref, UserSpecifiedImage: r.Image},
		Args:     r.Args,
		Envs: []*runtimeapi.KeyValue{
			{Key: "POD_NAME", Value: []byte(name)}, {Key: "POD_IP", Value: []byte(p.IP)},
		},
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/etc/hosts", HostPath: hosts},
			{ContainerPath: "/dev/termination-log", HostPath: term},
		},
		Labels:  map[string]string{LabelPodName: name, LabelPodNS: ns, LabelPodUID: p.UID, LabelCtrName: "app", LabelBench: "raw"},
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
	cid, err := r.RT.CreateContainer(ctx, id, ctrCfg, sbCfg)
	if err != nil {
		return p, fmt.Errorf("CreateContainer: %w", err)
	}
	p.ContainerID = cid
	t3 := time.Now()
	if err := r.RT.StartContainer(ctx, cid); err != nil {
		return p, fmt.Errorf("StartContainer: %w", err)
	}
	t4 := time.Now()
	p.Phases = Phases{Pre: t0.Sub(begin), Sandbox: t1.Sub(t0), Prep: t2.Sub(t1), Create: t3.Sub(t2), Start: t4.Sub(t3)}
	return p, nil
}

// KubeletMinimumGracePeriod is the kubelet's floor for StopContainer's
// timeout (minimumGracePeriodInSeconds, kubelet-facts §7.2): a kubelet, and
// minikubelet, gives the runtime 2 s even for a grace period of 0 or 1 s.
const KubeletMinimumGracePeriod = 2

// Stop is the raw deletion of one pod: StopContainer with the grace
// period (at least KubeletMinimumGracePeriod), StopPodSandbox (CNI DEL),
// RemovePodSandbox.
// Each call is retried once, as a kubelet's next sync would: a loaded
// containerd 1.6 occasionally loses a shim connection ("ttrpc: closed").
func (r *Client) Stop(ctx context.Context, p *Pod, grace int64) error {
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
	if p.ContainerID != "" {
		timeout := max(grace, KubeletMinimumGracePeriod)
		retry("StopContainer", func() error { return r.RT.StopContainer(ctx, p.ContainerID, timeout) })
	}
	if p.SandboxID != "" {
		retry("StopPodSandbox", func() error { return r.RT.StopPodSandbox(ctx, p.SandboxID) })
		retry("RemovePodSandbox", func() error { return r.RT.RemovePodSandbox(ctx, p.SandboxID) })
	}
	return errors.Join(errs...)
}

// Release removes what Stop leaves on the host (cgroup, files); untimed.
func (r *Client) Release(p *Pod) error {
	var errs []error
	if r.Cgroups != nil && p.Cgroup != nil {
		if err := r.Cgroups.Destroy(p.Cgroup); err != nil {
			errs = append(errs, err)
		}
	}
	ns := p.Namespace
	if ns == "" {
		ns = r.ns()
	}
	errs = append(errs, os.RemoveAll(filepath.Join(r.FileDir, p.UID)))
	errs = append(errs, os.RemoveAll(r.podLogDir(ns, p.Name, p.UID)))
	return errors.Join(errs...)
}

// Remove stops, removes and releases one pod (cleanup between
// iterations, untimed).
func (r *Client) Remove(ctx context.Context, p *Pod) error {
	return errors.Join(r.Stop(ctx, p, 0), r.Release(p))
}

// RemoveAll removes pods concurrently.
func (r *Client) RemoveAll(ctx context.Context, pods []*Pod) error {
	var wg sync.WaitGroup
	errs := make([]error, len(pods))
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.Remove(ctx, p)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
