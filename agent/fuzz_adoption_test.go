package agent

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"

	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// FuzzAdoptionAnnotations feeds arbitrary CRI labels and annotations
// (what the runtime hands back when a restarted agent adopts or collects
// its sandboxes and containers; another writer of the runtime could have
// set anything) through the code that reads them:
//   - listPod: the container is found by its pod-UID label and its hash,
//     type and restart count come from its annotations as they are (a
//     malformed count reads as 0, as in the kubelet);
//   - podspec.ContainerFromAnnotations (killing a container the spec no longer
//     names): the name is kept, ports and the preStop handler are exactly
//     what the annotations decode to, or absent when they do not decode;
//   - burstableMilli (the Burstable tier's CPU shares): never negative,
//     whatever the annotations say, the sum saturates instead of
//     wrapping, and a huge sum gives the most shares, not the fewest
//     (podspec.MilliCPUToShares overflowed).
func FuzzAdoptionAnnotations(f *testing.F) {
	f.Add("uid-1", "c", "1f2e3d", "3", "container", `[{"containerPort":80,"protocol":"TCP"}]`, `{"exec":{"command":["true"]}}`, "100", "250")
	f.Add("", "", "", "-1", "init", `[{"containerPort":"x"}]`, `{"httpGet":{"port":"http"}}`, "-5", "9223372036854775807")
	f.Add("u", "app", "zz", "99999999999999999999", "", "null", "[]", "x", "9223372036854775807")
	f.Fuzz(func(t *testing.T, uid, name, hash, restart, ctype, ports, preStop, cpu1, cpu2 string) {
		if uid == "" {
			uid = "uid"
		}
		ann := map[string]string{
			podspec.AnnotationContainerHash:  hash,
			podspec.AnnotationRestartCount:   restart,
			podspec.AnnotationContainerType:  ctype,
			podspec.AnnotationContainerPorts: ports,
			podspec.AnnotationPreStopHandler: preStop,
		}
		wantRestart, err := strconv.Atoi(restart)
		if err != nil {
			wantRestart = 0
		}
		if got := podspec.AnnotationInt(ann, podspec.AnnotationRestartCount); got != wantRestart {
			t.Fatalf("podspec.AnnotationInt(%q) = %d, want %d", restart, got, wantRestart)
		}

		// listPod over a runtime holding this container.
		fake := critest.New()
		fake.Runtime.SetFakeContainers([]*critesting.FakeContainer{{ContainerStatus: runtimeapi.ContainerStatus{
			Id:          "cid",
			Metadata:    &runtimeapi.ContainerMetadata{Name: name},
			State:       runtimeapi.ContainerState_CONTAINER_EXITED,
			Labels:      map[string]string{podspec.LabelPodUID: uid, podspec.LabelManagedBy: podspec.ManagedByValue, podspec.LabelContainerName: name},
			Annotations: ann,
		}, SandboxID: "sid"}})
		a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{Runtime: fake.Runtime, Images: fake.Images})
		st, err := a.listPod(context.Background(), &v1.Pod{})
		if err != nil {
			t.Fatalf("listPod: %v", err)
		}
		if len(st.containers) != 0 {
			t.Fatalf("a pod without UID adopted %d containers", len(st.containers))
		}
		pod := &v1.Pod{}
		pod.UID = types.UID(uid)
		st, err = a.listPod(context.Background(), pod)
		if err != nil {
			t.Fatalf("listPod: %v", err)
		}
		if len(st.containers) != 1 {
			t.Fatalf("listPod found %d containers, want 1", len(st.containers))
		}
		c := st.containers[0]
		if c.name != name || c.hash != hash || c.ctype != ctype || c.restartCount != wantRestart || c.sandboxID != "sid" {
			t.Fatalf("listPod read %+v from annotations %v", *c, ann)
		}

		// podspec.ContainerFromAnnotations.
		got := podspec.ContainerFromAnnotations(name, ann)
		if got.Name != name {
			t.Fatalf("name %q became %q", name, got.Name)
		}
		var wantPorts []v1.ContainerPort
		if ports != "" {
			if err := json.Unmarshal([]byte(ports), &wantPorts); err != nil {
				wantPorts = nil
			}
		}
		if len(wantPorts) != len(got.Ports) || (len(wantPorts) > 0 && !reflect.DeepEqual(wantPorts, got.Ports)) {
			t.Fatalf("ports %q read as %+v, want %+v", ports, got.Ports, wantPorts)
		}
		h := &v1.LifecycleHandler{}
		if preStop != "" && json.Unmarshal([]byte(preStop), h) == nil {
			if got.Lifecycle == nil || !reflect.DeepEqual(got.Lifecycle.PreStop, h) {
				t.Fatalf("preStop %q read as %+v", preStop, got.Lifecycle)
			}
		} else if got.Lifecycle != nil {
			t.Fatalf("preStop %q that does not decode read as %+v", preStop, got.Lifecycle)
		}

		// podcgroup.BurstableMilli.
		sb := func(cpu string, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
			return &runtimeapi.PodSandbox{State: state, Annotations: map[string]string{
				podspec.AnnotationQOSClass: string(v1.PodQOSBurstable), podspec.AnnotationCPURequest: cpu}}
		}
		ready := runtimeapi.PodSandboxState_SANDBOX_READY
		want := func(cpus ...string) int64 {
			var sum int64
			for _, c := range cpus {
				m, err := strconv.ParseInt(c, 10, 64)
				if err != nil || m < 0 {
					continue
				}
				if sum > math.MaxInt64-m {
					return math.MaxInt64
				}
				sum += m
			}
			return sum
		}
		sum := podcgroup.BurstableMilli([]*runtimeapi.PodSandbox{sb(cpu1, ready), sb(cpu2, ready), sb(cpu2, runtimeapi.PodSandboxState_SANDBOX_NOTREADY)})
		if sum < 0 || sum != want(cpu1, cpu2) {
			t.Fatalf("podcgroup.BurstableMilli(%q, %q) = %d, want %d", cpu1, cpu2, sum, want(cpu1, cpu2))
		}
		// The shares grow with the sum up to their maximum.
		if s, w := podspec.MilliCPUToShares(sum), min(max(sum*podspec.SharesPerCPU/podspec.MilliPerCPU, podspec.MinShares), podspec.MaxShares); sum <= podspec.MaxShares && s != w || sum > podspec.MaxShares && s != podspec.MaxShares {
			t.Fatalf("shares %d for %d millicores", s, sum)
		}
	})
}
