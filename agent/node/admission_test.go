package node

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// admNode is a 2-CPU, 4 GiB node with room for 110 pods.
func admNode() Info {
	alloc := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("2"),
		v1.ResourceMemory: resource.MustParse("4Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	return Info{
		Name: "node1",
		Labels: map[string]string{
			v1.LabelHostname: "node1", v1.LabelOSStable: runtime.GOOS, v1.LabelArchStable: runtime.GOARCH,
			"disk": "ssd", "gen": "5",
		},
		Capacity:    alloc.DeepCopy(),
		Allocatable: alloc,
	}
}

// admContainer is a container requesting cpu and memory ("" = none).
func admContainer(name, cpu, mem string) v1.Container {
	c := v1.Container{Name: name, Image: "busybox"}
	if cpu != "" || mem != "" {
		c.Resources.Requests = v1.ResourceList{}
	}
	if cpu != "" {
		c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return c
}

// admSidecar is admContainer as a native sidecar.
func admSidecar(name, cpu, mem string) v1.Container {
	c := admContainer(name, cpu, mem)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

// admPod is a pod named name with the given app containers.
func admPod(name string, containers ...v1.Container) *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
	p.Spec.NodeName = "node1"
	p.Spec.Containers = containers
	return p
}

// withPhase sets the pod's phase.
func withPhase(p *v1.Pod, ph v1.PodPhase) *v1.Pod {
	p.Status.Phase = ph
	return p
}

// withHostPort adds a host port to the pod's first container.
func withHostPort(p *v1.Pod, port int32, proto v1.Protocol, ip string) *v1.Pod {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{
		ContainerPort: 80, HostPort: port, Protocol: proto, HostIP: ip,
	})
	return p
}

func TestAdmitPod(t *testing.T) {
	cpuPod := func(name, cpu string) *v1.Pod { return admPod(name, admContainer("c", cpu, "")) }
	memPod := func(name, mem string) *v1.Pod { return admPod(name, admContainer("c", "", mem)) }

	tests := []struct {
		name     string
		node     func(*Info)
		pod      *v1.Pod
		admitted []*v1.Pod
		reason   string
		message  string
	}{
		{
			name: "fits",
			pod:  cpuPod("new", "500m"), admitted: []*v1.Pod{cpuPod("a", "1500m")},
		},
		{
			name: "OutOfcpu",
			pod:  cpuPod("new", "500m"), admitted: []*v1.Pod{cpuPod("a", "1"), cpuPod("b", "800m")},
			reason:  "OutOfcpu",
			message: "Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000",
		},
		{
			name: "OutOfmemory in bytes",
			pod:  memPod("new", "1Gi"), admitted: []*v1.Pod{memPod("a", "3Gi"), memPod("b", "512Mi")},
			reason:  "OutOfmemory",
			message: "Node didn't have enough resource: memory, requested: 1073741824, used: 3758096384, capacity: 4294967296",
		},
		{
			name:    "a pod larger than the whole node",
			pod:     memPod("new", "5Gi"),
			reason:  "OutOfmemory",
			message: "Node didn't have enough resource: memory, requested: 5368709120, used: 0, capacity: 4294967296",
		},
		{
			name:   "cpu is reported before memory",
			pod:    admPod("new", admContainer("c", "3", "5Gi")),
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000",
		},
		{
			name: "OutOfpods",
			node: func(n *Info) { n.Allocatable[v1.ResourcePods] = resource.MustParse("2") },
			pod:  cpuPod("new", ""), admitted: []*v1.Pod{cpuPod("a", ""), cpuPod("b", "")},
			reason:  "OutOfpods",
			message: "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
		},
		{
			name: "pod count is reported before cpu",
			node: func(n *Info) { n.Allocatable[v1.ResourcePods] = resource.MustParse("1") },
			pod:  cpuPod("new", "3"), admitted: []*v1.Pod{cpuPod("a", "")},
			reason: "OutOfpods", message: "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1",
		},
		{
			name: "a pod without requests fits an overcommitted node",
			pod:  cpuPod("new", ""), admitted: []*v1.Pod{cpuPod("a", "3")},
		},
		{
			name: "a pod without cpu request fits when cpu is full",
			pod:  memPod("new", "1Gi"), admitted: []*v1.Pod{cpuPod("a", "2")},
		},
		{
			name: "terminal pods do not count",
			pod:  cpuPod("new", "1500m"),
			admitted: []*v1.Pod{
				withPhase(cpuPod("done", "2"), v1.PodSucceeded),
				withPhase(cpuPod("failed", "2"), v1.PodFailed),
				withPhase(cpuPod("running", "500m"), v1.PodRunning),
			},
		},
		{
			name: "terminal pods do not count toward the pod limit",
			node: func(n *Info) { n.Allocatable[v1.ResourcePods] = resource.MustParse("1") },
			pod:  cpuPod("new", ""), admitted: []*v1.Pod{withPhase(cpuPod("a", ""), v1.PodSucceeded)},
		},
		{
			name: "same UID is not counted twice",
			pod:  cpuPod("new", "1500m"), admitted: []*v1.Pod{cpuPod("new", "1500m"), cpuPod("a", "500m")},
		},
		{
			name: "init container max rule: the largest init container",
			pod: func() *v1.Pod {
				p := cpuPod("new", "500m")
				p.Spec.InitContainers = []v1.Container{admContainer("i1", "1500m", ""), admContainer("i2", "800m", "")}
				return p
			}(),
			admitted: []*v1.Pod{cpuPod("a", "600m")},
			reason:   "OutOfcpu",
			message:  "Node didn't have enough resource: cpu, requested: 1500, used: 600, capacity: 2000",
		},
		{
			name: "init container max rule: the app sum when larger",
			pod: func() *v1.Pod {
				p := admPod("new", admContainer("c1", "700m", ""), admContainer("c2", "700m", ""))
				p.Spec.InitContainers = []v1.Container{admContainer("i1", "1", "")}
				return p
			}(),
			admitted: []*v1.Pod{cpuPod("a", "700m")},
			reason:   "OutOfcpu",
			message:  "Node didn't have enough resource: cpu, requested: 1400, used: 700, capacity: 2000",
		},
		{
			name: "sidecar rule: sidecars add to the app containers",
			pod: func() *v1.Pod {
				p := cpuPod("new", "500m")
				p.Spec.InitContainers = []v1.Container{admSidecar("s1", "300m", "")}
				return p
			}(),
			admitted: []*v1.Pod{cpuPod("a", "1300m")},
			reason:   "OutOfcpu",
			message:  "Node didn't have enough resource: cpu, requested: 800, used: 1300, capacity: 2000",
		},
		{
			name: "sidecar rule: a later init container runs beside the earlier sidecars",
			pod: func() *v1.Pod {
				p := cpuPod("new", "100m")
				p.Spec.InitContainers = []v1.Container{
					admSidecar("s1", "300m", ""),
					admContainer("i1", "1", ""),  // 1000 + 300 = 1300
					admSidecar("s2", "200m", ""), // 300 + 200 = 500
				}
				return p
			}(),
			admitted: []*v1.Pod{cpuPod("a", "1")},
			reason:   "OutOfcpu",
			message:  "Node didn't have enough resource: cpu, requested: 1300, used: 1000, capacity: 2000",
		},
		{
			name: "admitted pods count by the same rule",
			pod:  cpuPod("new", "600m"),
			admitted: []*v1.Pod{func() *v1.Pod {
				p := cpuPod("a", "100m")
				p.Spec.InitContainers = []v1.Container{admContainer("i1", "1500m", "")}
				return p
			}()},
			reason:  "OutOfcpu",
			message: "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000",
		},
		{
			name:     "hostPort taken",
			pod:      withHostPort(cpuPod("new", ""), 8080, v1.ProtocolTCP, ""),
			admitted: []*v1.Pod{withHostPort(cpuPod("a", ""), 8080, v1.ProtocolTCP, "")},
			reason:   "NodePorts",
			message:  "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
		},
		{
			name:     "same hostPort, other protocol",
			pod:      withHostPort(cpuPod("new", ""), 8080, v1.ProtocolUDP, ""),
			admitted: []*v1.Pod{withHostPort(cpuPod("a", ""), 8080, v1.ProtocolTCP, "")},
		},
		{
			name:     "same hostPort, different host IPs",
			pod:      withHostPort(cpuPod("new", ""), 8080, v1.ProtocolTCP, "127.0.0.1"),
			admitted: []*v1.Pod{withHostPort(cpuPod("a", ""), 8080, v1.ProtocolTCP, "10.0.0.1")},
		},
		{
			name:     "0.0.0.0 against 127.0.0.1",
			pod:      withHostPort(cpuPod("new", ""), 8080, v1.ProtocolTCP, "0.0.0.0"),
			admitted: []*v1.Pod{withHostPort(cpuPod("a", ""), 8080, v1.ProtocolTCP, "127.0.0.1")},
			reason:   "NodePorts",
			message:  "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
		},
		{
			name:     "127.0.0.1 against all addresses",
			pod:      withHostPort(cpuPod("new", ""), 8080, v1.ProtocolTCP, "127.0.0.1"),
			admitted: []*v1.Pod{withHostPort(cpuPod("a", ""), 8080, v1.ProtocolTCP, "")},
			reason:   "NodePorts",
			message:  "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
		},
		{
			name:     "same host IP",
			pod:      withHostPort(cpuPod("new", ""), 53, v1.ProtocolUDP, "127.0.0.1"),
			admitted: []*v1.Pod{withHostPort(cpuPod("a", ""), 53, v1.ProtocolUDP, "127.0.0.1")},
			reason:   "NodePorts",
			message:  "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
		},
		{
			name:     "hostPort of a terminal pod is free",
			pod:      withHostPort(cpuPod("new", ""), 8080, v1.ProtocolTCP, ""),
			admitted: []*v1.Pod{withPhase(withHostPort(cpuPod("a", ""), 8080, v1.ProtocolTCP, ""), v1.PodFailed)},
		},
		{
			name: "hostPort of a sidecar counts",
			pod:  withHostPort(cpuPod("new", ""), 8080, v1.ProtocolTCP, ""),
			admitted: []*v1.Pod{func() *v1.Pod {
				p := cpuPod("a", "")
				s := admSidecar("s", "", "")
				s.Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}}
				p.Spec.InitContainers = []v1.Container{s}
				return p
			}()},
			reason:  "NodePorts",
			message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
		},
		{
			name: "hostPort of a regular init container does not count",
			pod:  withHostPort(cpuPod("new", ""), 8080, v1.ProtocolTCP, ""),
			admitted: []*v1.Pod{func() *v1.Pod {
				p := cpuPod("a", "")
				i := admContainer("i", "", "")
				i.Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}}
				p.Spec.InitContainers = []v1.Container{i}
				return p
			}()},
		},
		{
			name: "nodeSelector matches",
			pod: func() *v1.Pod {
				p := cpuPod("new", "")
				p.Spec.NodeSelector = map[string]string{"disk": "ssd", v1.LabelHostname: "node1"}
				return p
			}(),
		},
		{
			name: "nodeSelector value mismatch",
			pod: func() *v1.Pod {
				p := cpuPod("new", "")
				p.Spec.NodeSelector = map[string]string{"disk": "hdd"}
				return p
			}(),
			reason:  "NodeAffinity",
			message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
		},
		{
			name: "nodeSelector on a missing label",
			pod: func() *v1.Pod {
				p := cpuPod("new", "")
				p.Spec.NodeSelector = map[string]string{"gpu": "true"}
				return p
			}(),
			reason:  "NodeAffinity",
			message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
		},
		{
			name: "nodeName mismatch",
			pod: func() *v1.Pod {
				p := cpuPod("new", "")
				p.Spec.NodeName = "node2"
				return p
			}(),
			reason:  "NodeName",
			message: "Predicate NodeName failed: node(s) didn't match the requested node name",
		},
		{
			name: "empty nodeName",
			pod: func() *v1.Pod {
				p := cpuPod("new", "")
				p.Spec.NodeName = ""
				return p
			}(),
		},
		{
			name: "resources are reported before node affinity",
			pod: func() *v1.Pod {
				p := cpuPod("new", "3")
				p.Spec.NodeSelector = map[string]string{"disk": "hdd"}
				return p
			}(),
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000",
		},
		{
			name: "kubernetes.io/os pod label of another OS",
			pod: func() *v1.Pod {
				p := cpuPod("new", "")
				p.Labels = map[string]string{v1.LabelOSStable: "windows"}
				return p
			}(),
			reason:  "PodOSSelectorNodeLabelDoesNotMatch",
			message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := admNode()
			if tc.node != nil {
				tc.node(&node)
			}
			ok, reason, message := Admit(node, tc.pod, tc.admitted)
			assert.Equal(t, tc.reason == "", ok)
			assert.Equal(t, tc.reason, reason)
			assert.Equal(t, tc.message, message)
		})
	}
}

func TestAdmitPod_NodeAffinity(t *testing.T) {
	expr := func(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
		return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	term := func(reqs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchExpressions: reqs}
	}
	tests := []struct {
		name  string
		terms []v1.NodeSelectorTerm
		want  bool
	}{
		{"In", []v1.NodeSelectorTerm{term(expr("disk", v1.NodeSelectorOpIn, "hdd", "ssd"))}, true},
		{"In without the value", []v1.NodeSelectorTerm{term(expr("disk", v1.NodeSelectorOpIn, "hdd"))}, false},
		{"In on a missing label", []v1.NodeSelectorTerm{term(expr("gpu", v1.NodeSelectorOpIn, "yes"))}, false},
		{"NotIn", []v1.NodeSelectorTerm{term(expr("disk", v1.NodeSelectorOpNotIn, "hdd"))}, true},
		{"NotIn on a missing label", []v1.NodeSelectorTerm{term(expr("gpu", v1.NodeSelectorOpNotIn, "yes"))}, true},
		{"NotIn with the value", []v1.NodeSelectorTerm{term(expr("disk", v1.NodeSelectorOpNotIn, "ssd"))}, false},
		{"Exists", []v1.NodeSelectorTerm{term(expr("disk", v1.NodeSelectorOpExists))}, true},
		{"Exists missing", []v1.NodeSelectorTerm{term(expr("gpu", v1.NodeSelectorOpExists))}, false},
		{"DoesNotExist", []v1.NodeSelectorTerm{term(expr("gpu", v1.NodeSelectorOpDoesNotExist))}, true},
		{"DoesNotExist present", []v1.NodeSelectorTerm{term(expr("disk", v1.NodeSelectorOpDoesNotExist))}, false},
		{"Gt", []v1.NodeSelectorTerm{term(expr("gen", v1.NodeSelectorOpGt, "4"))}, true},
		{"Gt equal", []v1.NodeSelectorTerm{term(expr("gen", v1.NodeSelectorOpGt, "5"))}, false},
		{"Lt", []v1.NodeSelectorTerm{term(expr("gen", v1.NodeSelectorOpLt, "6"))}, true},
		{"Lt on a non-integer label", []v1.NodeSelectorTerm{term(expr("disk", v1.NodeSelectorOpLt, "6"))}, false},
		{"expressions are ANDed", []v1.NodeSelectorTerm{term(expr("disk", v1.NodeSelectorOpExists), expr("gpu", v1.NodeSelectorOpExists))}, false},
		{"terms are ORed", []v1.NodeSelectorTerm{term(expr("gpu", v1.NodeSelectorOpExists)), term(expr("disk", v1.NodeSelectorOpExists))}, true},
		{"an empty term matches nothing", []v1.NodeSelectorTerm{{}}, false},
		{"no terms match nothing", nil, false},
		{"matchFields metadata.name", []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{expr("metadata.name", v1.NodeSelectorOpIn, "node1")}}}, true},
		{"matchFields other name", []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{expr("metadata.name", v1.NodeSelectorOpIn, "node2")}}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := admPod("new", admContainer("c", "", ""))
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: tc.terms},
			}}
			ok, reason, _ := Admit(admNode(), p, nil)
			assert.Equal(t, tc.want, ok)
			if !tc.want {
				assert.Equal(t, "NodeAffinity", reason)
			}
		})
	}
}

func TestEffectivePodRequests(t *testing.T) {
	p := admPod("p", admContainer("c1", "100m", "100Mi"), admContainer("c2", "200m", "200Mi"))
	p.Spec.InitContainers = []v1.Container{
		admContainer("i1", "50m", "1Gi"),  // 50m, 1Gi
		admSidecar("s1", "100m", "10Mi"),  // 100m, 10Mi
		admContainer("i2", "900m", "1Mi"), // 900+100m, 1+10Mi
	}
	got := effectivePodRequests(p)
	// cpu: max(300+100, 50, 100, 1000) = 1000m; memory: max(310Mi, 1Gi, …) = 1Gi.
	assert.Equal(t, podRequests{milliCPU: 1000, memory: 1 << 30}, got)
}

func TestRejectedStatus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := admPod("p", admContainer("c", "1", "1Gi"))
	p.Spec.InitContainers = []v1.Container{admContainer("i1", "", ""), admContainer("i2", "", "")}
	st := RejectedStatus(p, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000", now)

	assert.Equal(t, v1.PodFailed, st.Phase)
	assert.Equal(t, "OutOfcpu", st.Reason)
	assert.Equal(t, "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000", st.Message)
	assert.Equal(t, v1.PodQOSBurstable, st.QOSClass)
	require.NotNil(t, st.StartTime)
	assert.True(t, st.StartTime.Time.Equal(now))
	assert.Empty(t, st.ContainerStatuses, "no container ran")
	assert.Empty(t, st.InitContainerStatuses)
	assert.Empty(t, st.PodIP)

	conds := map[v1.PodConditionType]v1.PodCondition{}
	for _, c := range st.Conditions {
		conds[c.Type] = c
		assert.True(t, c.LastTransitionTime.Time.Equal(now), c.Type)
	}
	assert.Len(t, conds, 5)
	assert.Equal(t, v1.ConditionFalse, conds[v1.PodReadyToStartContainers].Status)
	assert.Equal(t, v1.ConditionFalse, conds[v1.PodInitialized].Status)
	assert.Equal(t, "containers with unknown status: [i1 i2]", conds[v1.PodInitialized].Message)
	assert.Equal(t, "PodFailed", conds[v1.ContainersReady].Reason)
	assert.Equal(t, "PodFailed", conds[v1.PodReady].Reason)
	assert.Equal(t, v1.ConditionTrue, conds[v1.PodScheduled].Status)

	// Without init containers the pod counts as initialized.
	st = RejectedStatus(admPod("q", admContainer("c", "", "")), "NodePorts", "x", now)
	for _, c := range st.Conditions {
		if c.Type == v1.PodInitialized {
			assert.Equal(t, v1.ConditionTrue, c.Status)
		}
	}
	assert.Equal(t, v1.PodQOSBestEffort, st.QOSClass)
}

// TestAdmitPod_EphemeralStorage: ephemeral-storage requests are checked
// after cpu and memory, against allocatable minus the requests of the
// admitted pods, with the kubelet's reason and message; init containers
// count as for cpu (the effective request); a node without an
// ephemeral-storage capacity does not check it.
func TestAdmitPod_EphemeralStorage(t *testing.T) {
	node := admNode()
	node.Capacity[v1.ResourceEphemeralStorage] = resource.MustParse("10Gi")
	node.Allocatable[v1.ResourceEphemeralStorage] = resource.MustParse("9Gi")
	storagePod := func(name, size string) *v1.Pod {
		c := admContainer("c", "", "")
		c.Resources.Requests = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(size)}
		return admPod(name, c)
	}
	running := []*v1.Pod{storagePod("a", "4Gi"), withPhase(storagePod("done", "8Gi"), v1.PodSucceeded)}

	ok, _, _ := Admit(node, storagePod("fits", "5Gi"), running)
	assert.True(t, ok, "4Gi + 5Gi fit in 9Gi allocatable")

	ok, reason, msg := Admit(node, storagePod("big", "6Gi"), running)
	require.False(t, ok)
	assert.Equal(t, "OutOfephemeral-storage", reason)
	assert.Equal(t, "Node didn't have enough resource: ephemeral-storage, requested: 6442450944, used: 4294967296, capacity: 9663676416", msg)

	// An init container's request counts on its own (the effective request).
	p := storagePod("init", "1Gi")
	initC := admContainer("init", "", "")
	initC.Resources.Requests = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("6Gi")}
	p.Spec.InitContainers = []v1.Container{initC}
	ok, reason, _ = Admit(node, p, running)
	assert.False(t, ok)
	assert.Equal(t, "OutOfephemeral-storage", reason)

	// cpu is reported first when both are short.
	both := storagePod("both", "100Gi")
	both.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("3")
	_, reason, _ = Admit(node, both, nil)
	assert.Equal(t, "OutOfcpu", reason)

	// No ephemeral-storage capacity known: not checked.
	ok, _, _ = Admit(admNode(), storagePod("unknown", "100Gi"), nil)
	assert.True(t, ok)
}
