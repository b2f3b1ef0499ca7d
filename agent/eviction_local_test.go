package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/podstatus"
)

// localStoragePod is a pod whose container "app" has the given resources
// and a disk emptyDir "data" with sizeLimit 10Mi, or no volume when
// sizeLimit is "".
func localStoragePod(t *testing.T, name, resources, sizeLimit string) *v1.Pod {
	t.Helper()
	vols := ""
	if sizeLimit != "" {
		vols = `
  volumes:
  - name: data
    emptyDir: {sizeLimit: ` + sizeLimit + `}`
	}
	return testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: `+name+`, namespace: default}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: app
    image: reg.local/app:1
    resources: `+resources+vols+`
`)
}

// Local storage limits are checked every cycle with no threshold met: the
// pod past its limit, and only it, ends Failed/Evicted with the kubelet's
// message and an Evicted event, killed with the short grace period and
// without a DisruptionTarget condition (the kubelet adds none here);
// the bystander within its limits keeps running; the cycle reports the
// pod evicted so the loop waits for its cleanup.
func TestEviction_LocalStorageLimits(t *testing.T) {
	tests := []struct {
		name       string
		resources  string
		sizeLimit  string
		offender   eviction.LocalStorageUsage
		imageFs    string // the observation's image filesystem; "" unknown
		wantSignal string
		wantMsg    string
	}{
		{
			name: "emptyDir past its sizeLimit", resources: "{}", sizeLimit: "10Mi",
			offender:   eviction.LocalStorageUsage{EmptyDirs: map[string]int64{"data": 10*mi + 1}, ContainerRootfs: map[string]int64{"app": 0}},
			wantSignal: eviction.SignalEmptyDirFsLimit, wantMsg: `Usage of EmptyDir volume "data" exceeds the limit "10Mi". `,
		},
		{
			name: "container writable layer and logs past its limit", resources: "{limits: {ephemeral-storage: 20Mi}}",
			offender: eviction.LocalStorageUsage{ContainerRootfs: map[string]int64{"app": 15 * mi}, ContainerLogs: map[string]int64{"app": 5*mi + 1},
				Pod: 20 * mi, PodMeasured: true},
			wantSignal: eviction.SignalEphemeralContainerFsLimit, wantMsg: `Container app exceeded its local ephemeral storage limit "20Mi". `,
		},
		{
			name: "pod total past its containers' limits", resources: "{limits: {ephemeral-storage: 20Mi}}", sizeLimit: "100Mi",
			offender: eviction.LocalStorageUsage{EmptyDirs: map[string]int64{"data": 19 * mi}, ContainerRootfs: map[string]int64{"app": mi},
				ContainerLogs: map[string]int64{"app": mi}, Pod: 21 * mi, PodMeasured: true},
			wantSignal: eviction.SignalEphemeralPodFsLimit, wantMsg: "Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. ",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			off := localStoragePod(t, "offender", tc.resources, tc.sizeLimit)
			by := localStoragePod(t, "bystander", tc.resources, tc.sizeLimit)
			free := localStoragePod(t, "nolimits", "{}", "")
			h, st, _ := evictionHarness(t, "memory.available<100Mi", "", "", off, by, free)
			st.set(eviction.SignalMemoryAvailable, 4000*mi, 4096*mi) // no pressure
			st.local = map[string]*eviction.LocalStorageUsage{
				"offender": &tc.offender,
				// Exactly at every limit: within.
				"bystander": {EmptyDirs: map[string]int64{"data": 10 * mi}, ContainerRootfs: map[string]int64{"app": 10 * mi},
					ContainerLogs: map[string]int64{"app": 10 * mi}, Pod: 20 * mi, PodMeasured: true},
			}
			m := h.agent.eviction

			evicted := m.Synchronize(context.Background())
			require.Len(t, evicted, 1)
			assert.Equal(t, "offender", evicted[0].Name)
			assert.Equal(t, []int{2}, st.localAsked, "only the pods with limits are measured")
			got := waitEvicted(t, h, off)
			assert.Equal(t, v1.PodFailed, got.Status.Phase)
			assert.Equal(t, tc.wantMsg, got.Status.Message)
			assert.False(t, podstatus.ConditionTrue(got.Status.Conditions, v1.DisruptionTarget), "no DisruptionTarget for a local storage eviction")
			assert.Equal(t, "StopContainer app timeout=2", stopCalls(h, "app")[0])
			var ev *podevents.Event
			h.rec.mu.Lock()
			for i := range h.rec.events {
				if h.rec.events[i].Reason == eviction.Reason {
					ev = &h.rec.events[i]
				}
			}
			h.rec.mu.Unlock()
			require.NotNil(t, ev, "an Evicted event")
			assert.Equal(t, v1.EventTypeWarning, ev.Type)
			assert.Equal(t, tc.wantMsg, ev.Message)
			assert.Equal(t, v1.PodRunning, podStatus(t, h, by).Status.Phase, "the bystander keeps running")
			assert.Equal(t, v1.PodRunning, podStatus(t, h, free).Status.Phase)
			for _, c := range m.Conditions() {
				assert.False(t, c.Status, "%s: nothing else of the node changes", c.Type)
			}
			_, _, recs := m.Snapshot()
			require.Len(t, recs, 1)
			assert.Equal(t, tc.wantSignal, recs[0].Signal)
			var metrics strings.Builder
			require.NoError(t, h.agent.WriteMetrics(&metrics))
			assert.Contains(t, metrics.String(), `kubelet_evictions{eviction_signal="`+tc.wantSignal+`"} 1`)

			// The next cycle: the evicted pod is not measured again, the
			// bystander stays within its limits.
			assert.Empty(t, m.Synchronize(context.Background()))
			assert.Equal(t, []int{2, 1}, st.localAsked)
		})
	}
}

// A dedicated image filesystem (known, not the node's) takes the writable
// layer out of a container's own limit, as in the kubelet; unknown, it
// counts. (Memory emptyDirs are left out in eviction's
// TestLocalStorageViolation: the fake runtime harness would mount a real
// tmpfs for one.)
func TestEviction_LocalStorageImageFs(t *testing.T) {
	p := localStoragePod(t, "layer", "{limits: {ephemeral-storage: 20Mi}}", "10Mi")
	h, st, _ := evictionHarness(t, "memory.available<100Mi", "", "", p)
	st.local = map[string]*eviction.LocalStorageUsage{"layer": {
		ContainerRootfs: map[string]int64{"app": 30 * mi}, ContainerLogs: map[string]int64{"app": mi},
	}}
	m := h.agent.eviction

	st.mu.Lock()
	st.obs.ImageFsPath, st.obs.SameFs = "/var/lib/containerd", false
	st.mu.Unlock()
	assert.Empty(t, m.Synchronize(context.Background()), "dedicated imagefs: 1Mi of logs is within 20Mi")

	st.mu.Lock()
	st.obs.ImageFsPath = "" // unknown: the layer counts
	st.mu.Unlock()
	evicted := m.Synchronize(context.Background())
	require.Len(t, evicted, 1)
	assert.Equal(t, `Container app exceeded its local ephemeral storage limit "20Mi". `, waitEvicted(t, h, p).Status.Message)
}

// Critical pods (here static pods and system-critical priority) are never
// evicted for local storage either.
func TestEviction_LocalStorageSkipsCriticalPods(t *testing.T) {
	p := localStoragePod(t, "critical", "{}", "10Mi")
	prio := int32(eviction.CriticalPriority)
	p.Spec.Priority = &prio
	h, st, _ := evictionHarness(t, "memory.available<100Mi", "", "", p)
	st.local = map[string]*eviction.LocalStorageUsage{"critical": {EmptyDirs: map[string]int64{"data": 1 << 30}, ContainerRootfs: map[string]int64{"app": 0}}}
	assert.Empty(t, h.agent.eviction.Synchronize(context.Background()))
	assert.Empty(t, st.localAsked, "not even measured")
	assert.Equal(t, v1.PodRunning, podStatus(t, h, p).Status.Phase)
}
