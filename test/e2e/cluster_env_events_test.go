package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// containerLog returns the message part of every line the CRI logged for
// container of the pod ns/name (uid) under the daemon's pod log dir.
func containerLog(t *testing.T, d *daemon, ns, name string, uid types.UID, container string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(d.logDir, fmt.Sprintf("%s_%s_%s", ns, name, uid), container, "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, l := range strings.Split(string(data), "\n") {
			if parts, ok := criLogLine(l); ok {
				b.WriteString(parts[3])
				if parts[2] == "F" {
					b.WriteString("\n")
				}
			}
		}
	}
	return b.String()
}

// TestCluster_EnvAndEvents runs `serve --kubeconfig` against a real
// kube-apiserver and checks what issue #19 asks of the container
// environment and of events, through the API server only:
//   - a pod in a namespace with a Service sees <SVC>_SERVICE_HOST and the
//     other link variables of that Service, and KUBERNETES_SERVICE_HOST
//     of the API server's Service in default; a headless Service gives
//     nothing; a pod with enableServiceLinks false sees only KUBERNETES_*;
//   - the kubelet's events (Pulled, Created, Started) are on the API
//     server for the pod, with source kubelet/<node>, the pod's UID and
//     the container's fieldPath, read as core/v1 and as events.k8s.io/v1
//     (what `kubectl describe pod` and `kubectl get events` list);
//   - a crash-looping container's BackOff events fold into one event
//     whose count grows.
func TestCluster_EnvAndEvents(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-env"
	const ns = "shop"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	d.start(t)
	cs := cp.Admin
	ctx, cancel := context.WithTimeout(context.Background(), scaled(5*time.Minute))
	defer cancel()
	require.NoError(t, cp.CreateNamespace(ctx, ns))

	// The API server's own Service (created by the apiserver itself).
	var master *v1.Service
	waitFor(t, "the kubernetes Service in default", scaled(60*time.Second), func() string {
		var err error
		if master, err = cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err != nil {
			return err.Error()
		}
		return ""
	})
	web, err := cs.CoreV1().Services(ns).Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-front"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "metrics", Port: 9100, Protocol: v1.ProtocolUDP},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Services(ns).Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "headless"},
		Spec:       v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	envPod := func(name string, links bool) *v1.Pod {
		p := clusterPod(name, node, false)
		p.Namespace = ns
		p.Spec.EnableServiceLinks = &links
		p.Spec.Containers[0].Command = []string{"sh", "-c", "env | sort; echo END-OF-ENV; sleep 3600"}
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "FRONT", Value: "http://$(WEB_FRONT_SERVICE_HOST):$(WEB_FRONT_SERVICE_PORT)"}}
		return p
	}
	crash := clusterPod("crash", node, false)
	crash.Namespace = ns
	crash.Spec.Containers[0].Command = []string{"sh", "-c", "exit 3"}
	created := map[string]*v1.Pod{}
	for _, p := range []*v1.Pod{envPod("linked", true), envPod("unlinked", false), crash} {
		got, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		created[p.Name] = got
	}

	// The environments, from the containers' own output.
	envOf := func(name string) map[string]string {
		t.Helper()
		var out string
		waitFor(t, name+"'s env in its log", scaled(90*time.Second), func() string {
			out = containerLog(t, d, ns, name, created[name].UID, "c")
			if !strings.Contains(out, "END-OF-ENV") {
				p, _ := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if p != nil {
					return podSummary(p)
				}
				return "no output yet"
			}
			return ""
		})
		env := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				env[k] = v
			}
		}
		return env
	}
	ip, apiIP := web.Spec.ClusterIP, master.Spec.ClusterIP
	apiPort := fmt.Sprint(master.Spec.Ports[0].Port)
	linked := envOf("linked")
	for k, want := range map[string]string{
		"KUBERNETES_SERVICE_HOST":        apiIP,
		"KUBERNETES_SERVICE_PORT":        apiPort,
		"KUBERNETES_PORT":                "tcp://" + apiIP + ":" + apiPort,
		"WEB_FRONT_SERVICE_HOST":         ip,
		"WEB_FRONT_SERVICE_PORT":         "80",
		"WEB_FRONT_SERVICE_PORT_HTTP":    "80",
		"WEB_FRONT_SERVICE_PORT_METRICS": "9100",
		"WEB_FRONT_PORT":                 "tcp://" + ip + ":80",
		"WEB_FRONT_PORT_80_TCP_ADDR":     ip,
		"WEB_FRONT_PORT_9100_UDP":        "udp://" + ip + ":9100",
		"FRONT":                          "http://" + ip + ":80",
	} {
		require.Equal(t, want, linked[k], "%s in the linked pod's env", k)
	}
	for k := range linked {
		require.False(t, strings.HasPrefix(k, "HEADLESS_"), "a headless Service gives no variables: %s", k)
	}
	unlinked := envOf("unlinked")
	require.Equal(t, apiIP, unlinked["KUBERNETES_SERVICE_HOST"], "KUBERNETES_* whatever enableServiceLinks says")
	require.NotContains(t, unlinked, "WEB_FRONT_SERVICE_HOST")
	require.Equal(t, "http://$(WEB_FRONT_SERVICE_HOST):$(WEB_FRONT_SERVICE_PORT)", unlinked["FRONT"])

	// The kubelet's events of the linked pod, as kubectl describe finds
	// them (field selectors on the involved object).
	podEvents := func(name string) []v1.Event {
		t.Helper()
		sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": name, "involvedObject.uid": string(created[name].UID)}.AsSelector()
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel.String()})
		require.NoError(t, err)
		return list.Items
	}
	summary := func(evs []v1.Event) string {
		var b strings.Builder
		for _, e := range evs {
			fmt.Fprintf(&b, "%s %s x%d %q; ", e.Reason, e.InvolvedObject.FieldPath, e.Count, e.Message)
		}
		return b.String()
	}
	var evs []v1.Event
	waitFor(t, "linked's Pulled, Created and Started events on the API server", scaled(60*time.Second), func() string {
		evs = podEvents("linked")
		have := map[string]bool{}
		for _, e := range evs {
			have[e.Reason] = true
		}
		if !have["Pulled"] || !have["Created"] || !have["Started"] {
			return summary(evs)
		}
		return ""
	})
	for _, e := range evs {
		require.Equal(t, v1.EventSource{Component: "kubelet", Host: node}, e.Source, summary(evs))
		require.Equal(t, "v1", e.InvolvedObject.APIVersion)
		switch e.Reason {
		case "Pulling", "Pulled", "Created", "Started":
			require.Equal(t, "spec.containers{c}", e.InvolvedObject.FieldPath, summary(evs))
		case "MissingClusterDNS":
			require.Empty(t, e.InvolvedObject.FieldPath, "a pod-level event: %s", summary(evs))
		}
		switch e.Reason {
		case "Created":
			require.Equal(t, "Created container: c", e.Message)
		case "Started":
			require.Equal(t, "Started container c", e.Message)
			require.Equal(t, v1.EventTypeNormal, e.Type)
		}
	}
	// events.k8s.io/v1 shows the same events (kubectl get events reads it).
	ev1, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	found := false
	for _, e := range ev1.Items {
		if e.Regarding.Name == "linked" && e.Reason == "Started" && e.ReportingController == "kubelet" && e.ReportingInstance == node {
			found = true
		}
	}
	require.True(t, found, "linked's Started event through events.k8s.io/v1")

	// Repeats fold: BackOff of the crashing container, one event, count up.
	waitFor(t, "crash's BackOff event folded (count ≥ 2)", scaled(120*time.Second), func() string {
		evs := podEvents("crash")
		n := 0
		for _, e := range evs {
			if e.Reason == "BackOff" {
				n++
				if e.Count >= 2 && e.Type == v1.EventTypeWarning && strings.HasPrefix(e.Message, "Back-off restarting failed container c in pod crash_shop(") {
					return ""
				}
			}
		}
		if n > 1 {
			t.Fatalf("BackOff events were not folded into one: %s", summary(evs))
		}
		return summary(evs)
	})

	// The node's Starting and NodeReady events.
	waitFor(t, "the node's Starting and NodeReady events", scaled(30*time.Second), func() string {
		sel := fields.Set{"involvedObject.kind": "Node", "involvedObject.name": node}.AsSelector().String()
		list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return err.Error()
		}
		have := map[string]bool{}
		for _, e := range list.Items {
			have[e.Reason+": "+e.Message] = true
		}
		if !have["Starting: Starting kubelet."] || !have["NodeReady: Node "+node+" status is now: NodeReady"] {
			return summary(list.Items)
		}
		return ""
	})
}
