package deviceplugin

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// devicePod is a pod whose one container "c" asks for n devices of res.
func devicePod(uid string, n int64) *v1.Pod {
	rl := v1.ResourceList{res: *resource.NewQuantity(n, resource.DecimalSI)}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Limits: rl, Requests: rl}}}},
	}
}

func env(cfg *runtimeapi.ContainerConfig, key string) (string, bool) {
	for _, kv := range cfg.Envs {
		if kv.Key == key {
			return string(kv.Value), true
		}
	}
	return "", false
}

func TestAdmitAllocateAndApply(t *testing.T) {
	m, _ := newStarted(t, "")
	p := newFakePlugin(healthy("d0", "d1")...)
	p.opts = &pluginapi.DevicePluginOptions{PreStartRequired: true}
	p.respond = func(ids []string) *pluginapi.ContainerAllocateResponse {
		return &pluginapi.ContainerAllocateResponse{
			Envs:        map[string]string{"DEV": strings.Join(ids, ",")},
			Mounts:      []*pluginapi.Mount{{ContainerPath: "/dev-data", HostPath: "/var/dev-data", ReadOnly: true}, {ContainerPath: "relative", HostPath: "/x"}},
			Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/fake0", HostPath: "/dev/null", Permissions: "rw"}},
			Annotations: map[string]string{"example.com/dev": "yes"},
			CdiDevices:  []*pluginapi.CDIDevice{{Name: "example.com/dev=d0"}},
		}
	}
	startPlugin(t, m, p, res, "p.sock")
	waitCounts(t, m, res, counts{2, 2})

	pod := devicePod("pod-a", 1)
	if reason, msg := m.Admit(pod, nil); reason != "" {
		t.Fatalf("Admit: %s: %s", reason, msg)
	}
	cfg := &runtimeapi.ContainerConfig{Envs: []*runtimeapi.KeyValue{{Key: "OWN", Value: []byte("1")}}}
	if err := m.ApplyContainer(context.Background(), pod, "c", cfg); err != nil {
		t.Fatal(err)
	}
	if v, ok := env(cfg, "DEV"); !ok || v != "d0" {
		t.Errorf("DEV = %q, %v; want d0 (the first free device)", v, ok)
	}
	if len(cfg.Mounts) != 1 || cfg.Mounts[0].ContainerPath != "/dev-data" || !cfg.Mounts[0].Readonly {
		t.Errorf("mounts %v, want /dev-data read-only (the relative one skipped)", cfg.Mounts)
	}
	if len(cfg.Devices) != 1 || cfg.Devices[0].HostPath != "/dev/null" || cfg.Devices[0].Permissions != "rw" {
		t.Errorf("devices %v", cfg.Devices)
	}
	if cfg.Annotations["example.com/dev"] != "yes" || len(cfg.CDIDevices) != 1 {
		t.Errorf("annotations %v, CDI devices %v", cfg.Annotations, cfg.CDIDevices)
	}
	// A restart of the container reuses the answer; PreStartContainer is
	// called before every start.
	if err := m.ApplyContainer(context.Background(), pod, "c", &runtimeapi.ContainerConfig{}); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	allocs, preStarts := len(p.allocated), len(p.preStarts)
	p.mu.Unlock()
	if allocs != 1 || preStarts != 2 {
		t.Errorf("Allocate called %d times, PreStartContainer %d; want 1 and 2", allocs, preStarts)
	}
	// A container without devices gets nothing.
	other := &runtimeapi.ContainerConfig{}
	if err := m.ApplyContainer(context.Background(), pod, "other", other); err != nil || len(other.Envs) != 0 {
		t.Errorf("container without devices: %v, %v", err, other.Envs)
	}

	// One device left: a pod asking for two is rejected as the kubelet
	// rejects it.
	reason, msg := m.Admit(devicePod("pod-b", 2), nil)
	if reason != "UnexpectedAdmissionError" || msg != "Allocate failed due to requested number of devices unavailable for example.com/dev. Requested: 2, Available: 1, which is unexpected" {
		t.Errorf("Admit = %q, %q", reason, msg)
	}
	if reason, msg := m.Admit(devicePod("pod-c", 1), nil); reason != "" {
		t.Fatalf("Admit of the last device: %s: %s", reason, msg)
	}
	if reason, _ := m.Admit(devicePod("pod-d", 1), nil); reason != "UnexpectedAdmissionError" {
		t.Errorf("every device taken: reason %q", reason)
	}
	// A pod without device requests, or with an extended resource no
	// plugin serves, is not the manager's.
	clusterLevel := devicePod("pod-e", 1)
	otherRes := v1.ResourceList{"example.com/other": resource.MustParse("3")}
	clusterLevel.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: otherRes, Requests: otherRes}
	if reason, _ := m.Admit(clusterLevel, nil); reason != "" {
		t.Errorf("cluster-level extended resource: rejected with %q", reason)
	}
}

func TestUnhealthyDevicesAreNotGiven(t *testing.T) {
	m, _ := newStarted(t, "")
	p := newFakePlugin(healthy("d0", "d1")...)
	startPlugin(t, m, p, res, "p.sock")
	waitCounts(t, m, res, counts{2, 2})
	p.setHealth("d0", pluginapi.Unhealthy)
	waitCounts(t, m, res, counts{2, 1})
	pod := devicePod("pod-a", 1)
	if reason, msg := m.Admit(pod, nil); reason != "" {
		t.Fatalf("Admit: %s: %s", reason, msg)
	}
	cfg := &runtimeapi.ContainerConfig{}
	if err := m.ApplyContainer(context.Background(), pod, "c", cfg); err != nil {
		t.Fatal(err)
	}
	if v, _ := env(cfg, "DEVICES"); v != "d1" {
		t.Errorf("got device %q, want the healthy d1", v)
	}
	// A stopped plugin's resource is at 0: nothing to admit.
	p.srv.Stop()
	waitCounts(t, m, res, counts{2, 0})
	if reason, _ := m.Admit(devicePod("pod-b", 1), nil); reason != "UnexpectedAdmissionError" {
		t.Errorf("stopped plugin: reason %q", reason)
	}
}

func TestPreferredAllocationIsAsked(t *testing.T) {
	m, _ := newStarted(t, "")
	p := newFakePlugin(healthy("d0", "d1", "d2")...)
	p.opts = &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}
	p.preferred = []string{"d2"}
	startPlugin(t, m, p, res, "p.sock")
	waitCounts(t, m, res, counts{3, 3})
	pod := devicePod("pod-a", 1)
	if reason, msg := m.Admit(pod, nil); reason != "" {
		t.Fatalf("Admit: %s: %s", reason, msg)
	}
	cfg := &runtimeapi.ContainerConfig{}
	if err := m.ApplyContainer(context.Background(), pod, "c", cfg); err != nil {
		t.Fatal(err)
	}
	if v, _ := env(cfg, "DEVICES"); v != "d2" {
		t.Errorf("allocated %q, want the plugin's preference d2", v)
	}
	// d0 and d1 are free, d2 is not.
	if reason, _ := m.Admit(devicePod("pod-b", 2), nil); reason != "" {
		t.Errorf("two free devices left: rejected with %q", reason)
	}
	if reason, _ := m.Admit(devicePod("pod-c", 1), nil); reason == "" {
		t.Error("a fourth device was given")
	}
}

func TestInitContainersDevicesAreReused(t *testing.T) {
	m, _ := newStarted(t, "")
	startPlugin(t, m, newFakePlugin(healthy("d0", "d1")...), res, "p.sock")
	waitCounts(t, m, res, counts{2, 2})
	pod := devicePod("pod-a", 2)
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Resources: pod.Spec.Containers[0].Resources}}
	if reason, msg := m.Admit(pod, nil); reason != "" {
		t.Fatalf("Admit: %s: %s (the init container's devices are the container's)", reason, msg)
	}
	for _, c := range []string{"init", "c"} {
		cfg := &runtimeapi.ContainerConfig{}
		if err := m.ApplyContainer(context.Background(), pod, c, cfg); err != nil {
			t.Fatal(err)
		}
		if v, _ := env(cfg, "DEVICES"); v != "d0,d1" {
			t.Errorf("%s got %q, want d0,d1", c, v)
		}
	}
}

func TestDevicesGoBackWhenThePodIsDone(t *testing.T) {
	m, _ := newStarted(t, "")
	startPlugin(t, m, newFakePlugin(healthy("d0")...), res, "p.sock")
	waitCounts(t, m, res, counts{1, 1})
	done := map[types.UID]chan struct{}{"pod-a": make(chan struct{})}
	m.SetPodDone(func(uid types.UID) <-chan struct{} { return done[uid] })
	if reason, _ := m.Admit(devicePod("pod-a", 1), nil); reason != "" {
		t.Fatal(reason)
	}
	if reason, _ := m.Admit(devicePod("pod-b", 1), nil); reason == "" {
		t.Fatal("the device was given twice")
	}
	close(done["pod-a"])
	eventually(t, "the device released", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.pods) == 0
	})
	if reason, msg := m.Admit(devicePod("pod-b", 1), nil); reason != "" {
		t.Fatalf("after pod-a's teardown: %s: %s", reason, msg)
	}
	// A finished pod gives its devices back at the next admission.
	finished := devicePod("pod-b", 1)
	finished.Status.Phase = v1.PodSucceeded
	if reason, msg := m.Admit(devicePod("pod-c", 1), func() []*v1.Pod { return []*v1.Pod{finished} }); reason != "" {
		t.Fatalf("pod-b finished: %s: %s", reason, msg)
	}
}

func TestCheckpointSurvivesARestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	m1, _ := newStarted(t, dir)
	p1 := newFakePlugin(healthy("d0", "d1")...)
	startPlugin(t, m1, p1, res, "p.sock")
	waitCounts(t, m1, res, counts{2, 2})
	pod := devicePod("pod-a", 1)
	if reason, _ := m1.Admit(pod, nil); reason != "" {
		t.Fatal(reason)
	}
	if err := m1.ApplyContainer(context.Background(), pod, "c", &runtimeapi.ContainerConfig{}); err != nil {
		t.Fatal(err)
	}
	m1.Stop()
	fi, err := os.Lstat(filepath.Join(dir, checkpointName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("checkpoint: %v, %v", fi, err)
	}

	m2, _ := newStarted(t, dir)
	// Before the plugin is back, the resource is there at 0.
	if got := resourceCounts(m2, res); got != (counts{0, 0}) {
		t.Errorf("restored resource %+v, want 0/0", got)
	}
	p2 := newFakePlugin(healthy("d0", "d1")...)
	startPlugin(t, m2, p2, res, "p2.sock")
	waitCounts(t, m2, res, counts{2, 2})
	// The running pod keeps its device; only one is left for others.
	if reason, _ := m2.Admit(pod, nil); reason != "" {
		t.Fatalf("re-admission after the restart: %s", reason)
	}
	if reason, _ := m2.Admit(devicePod("pod-b", 2), nil); reason != "UnexpectedAdmissionError" {
		t.Errorf("a device was given twice after the restart (reason %q)", reason)
	}
	cfg := &runtimeapi.ContainerConfig{}
	if err := m2.ApplyContainer(context.Background(), pod, "c", cfg); err != nil {
		t.Fatal(err)
	}
	if v, _ := env(cfg, "DEVICES"); v != "d0" {
		t.Errorf("restored answer %q, want d0", v)
	}
	if slices.Contains(p2.Calls(), "Allocate") {
		t.Error("Allocate asked again for a restored pod")
	}
}

func TestCorruptCheckpointIsIgnored(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, checkpointName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, _ := newStarted(t, dir)
	if c, _ := m.Resources(); len(c) != 0 {
		t.Errorf("resources from a corrupt checkpoint: %v", c)
	}
	// A symlink in its place is not followed.
	_ = os.Remove(filepath.Join(dir, checkpointName))
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte(`{"version":1,"registered":["example.com/dev"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, checkpointName)); err != nil {
		t.Fatal(err)
	}
	m2 := New(Config{Dir: dir})
	if err := m2.loadCheckpoint(); err == nil {
		t.Error("a symlinked checkpoint was read")
	}
}

func TestOversizedCheckpointIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, maxCheckpointBytes+1)
	if err := os.WriteFile(filepath.Join(dir, checkpointName), big, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := New(Config{Dir: dir}).loadCheckpoint(); err == nil {
		t.Error("a checkpoint over the bound was read")
	}
}
