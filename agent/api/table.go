package api

// This file is server-side printing: with Accept
// application/json;as=Table;v=v1;g=meta.k8s.io a list or get answers a
// metav1.Table with the columns kubectl shows against a cluster (those of
// the API server's printers: k8s.io/kubernetes pkg/printers/internalversion).
// Columns of priority 1 are the ones kubectl adds with -o wide. Each row
// carries the object as includeObject asks: its metadata by default
// (PartialObjectMetadata), the whole object, or none.

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// tableRequest is what a request asks of a Table.
type tableRequest struct {
	// include is includeObject: None, Metadata (default) or Object.
	include metav1.IncludeObjectPolicy
	now     time.Time
}

// wantTable reports whether the request's Accept header asks for a
// meta.k8s.io/v1 Table, in any of its media ranges.
func wantTable(r *http.Request) (tableRequest, bool) {
	t := tableRequest{include: metav1.IncludeMetadata, now: time.Now()}
	switch v := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject")); v {
	case metav1.IncludeNone, metav1.IncludeObject, metav1.IncludeMetadata:
		t.include = v
	}
	for _, accept := range r.Header.Values("Accept") {
		for _, part := range strings.Split(accept, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != "application/json" {
				continue
			}
			if params["as"] == "Table" && params["g"] == "meta.k8s.io" && params["v"] == "v1" {
				return t, true
			}
		}
	}
	return t, false
}

// newTable returns a Table with the columns (name, type, priority, description).
func newTable(cols ...metav1.TableColumnDefinition) *metav1.Table {
	return &metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ColumnDefinitions: cols,
		Rows:              []metav1.TableRow{},
	}
}

func col(name, typ string, priority int32, desc string) metav1.TableColumnDefinition {
	c := metav1.TableColumnDefinition{Name: name, Type: typ, Priority: priority, Description: desc}
	if name == "Name" {
		c.Format = "name"
	}
	return c
}

// addRow appends a row for obj, whose object meta is om.
func (t tableRequest) addRow(tab *metav1.Table, obj any, om metav1.ObjectMeta, cells ...any) {
	row := metav1.TableRow{Cells: cells}
	switch t.include {
	case metav1.IncludeObject:
		if b, err := json.Marshal(obj); err == nil {
			row.Object = runtime.RawExtension{Raw: b}
		}
	case metav1.IncludeMetadata:
		pom := metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			ObjectMeta: om,
		}
		if b, err := json.Marshal(pom); err == nil {
			row.Object = runtime.RawExtension{Raw: b}
		}
	}
	tab.Rows = append(tab.Rows, row)
}

// age formats the time since ts as kubectl does ("<unknown>" for zero).
func age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

var podColumns = []metav1.TableColumnDefinition{
	col("Name", "string", 0, "Name must be unique within a namespace."),
	col("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
	col("Status", "string", 0, "The aggregate status of the containers in this pod."),
	col("Restarts", "string", 0, "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
	col("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object was created."),
	col("IP", "string", 1, "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."),
	col("Node", "string", 1, "NodeName is a request to schedule this pod onto a specific node."),
	col("Nominated Node", "string", 1, "nominatedNodeName is set only when this pod preempts other pods on the node."),
	col("Readiness Gates", "string", 1, "If specified, all readiness gates will be evaluated for pod readiness."),
}

// podTable is the Table of pods.
func podTable(pods []*v1.Pod, t tableRequest) *metav1.Table {
	tab := newTable(podColumns...)
	for _, p := range pods {
		pod := *p
		pod.APIVersion, pod.Kind = "v1", "Pod"
		row := PodRow(&pod, t.now)
		gates := "<none>"
		if n := len(pod.Spec.ReadinessGates); n > 0 {
			ok := 0
			for _, g := range pod.Spec.ReadinessGates {
				for _, c := range pod.Status.Conditions {
					if c.Type == g.ConditionType && c.Status == v1.ConditionTrue {
						ok++
						break
					}
				}
			}
			gates = fmt.Sprintf("%d/%d", ok, n)
		}
		t.addRow(tab, &pod, pod.ObjectMeta,
			pod.Name, row.Ready, row.Status, row.Restarts, age(pod.CreationTimestamp, t.now),
			orNone(pod.Status.PodIP), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates)
	}
	return tab
}

func configMapTable(cms []*v1.ConfigMap, t tableRequest) *metav1.Table {
	tab := newTable(
		col("Name", "string", 0, "Name must be unique within a namespace."),
		col("Data", "string", 0, "Data contains the configuration data."),
		col("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object was created."),
	)
	for _, c := range cms {
		cm := *c
		cm.APIVersion, cm.Kind = "v1", "ConfigMap"
		t.addRow(tab, &cm, cm.ObjectMeta, cm.Name, int64(len(cm.Data)+len(cm.BinaryData)), age(cm.CreationTimestamp, t.now))
	}
	return tab
}

func secretTable(secrets []*v1.Secret, t tableRequest) *metav1.Table {
	tab := newTable(
		col("Name", "string", 0, "Name must be unique within a namespace."),
		col("Type", "string", 0, "The type of the secret"),
		col("Data", "string", 0, "The number of entries in the secret"),
		col("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object was created."),
	)
	for _, s := range secrets {
		sec := *s
		sec.APIVersion, sec.Kind = "v1", "Secret"
		t.addRow(tab, &sec, sec.ObjectMeta, sec.Name, string(sec.Type), int64(len(sec.Data)), age(sec.CreationTimestamp, t.now))
	}
	return tab
}

func eventTable(events []v1.Event, t tableRequest) *metav1.Table {
	tab := newTable(
		col("Last Seen", "string", 0, "Time when this Event was last observed."),
		col("Type", "string", 0, "Type of this event (Normal, Warning), new types could be added in the future."),
		col("Reason", "string", 0, "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
		col("Object", "string", 0, "The object that this event is about."),
		col("Subobject", "string", 1, "The subobject this event is about: the field path of the object."),
		col("Source", "string", 1, "The component reporting this event."),
		col("Message", "string", 0, "A human-readable description of the status of this operation."),
		col("First Seen", "string", 1, "The time at which the event was first recorded."),
		col("Count", "string", 1, "The number of times this event has occurred."),
		col("Name", "string", 1, "Name must be unique within a namespace."),
	)
	for i := range events {
		ev := events[i]
		ev.APIVersion, ev.Kind = "v1", "Event"
		last := ev.LastTimestamp
		if ev.Series != nil {
			last = metav1.Time{Time: ev.Series.LastObservedTime.Time}
		} else if last.IsZero() {
			last = metav1.Time{Time: ev.EventTime.Time}
		}
		first := ev.FirstTimestamp
		if first.IsZero() {
			first = metav1.Time{Time: ev.EventTime.Time}
		}
		count := ev.Count
		if ev.Series != nil {
			count = ev.Series.Count
		} else if count == 0 {
			count = 1
		}
		source := ev.Source.Component
		if source == "" {
			source = ev.ReportingController
		}
		if ev.Source.Host != "" {
			source += ", " + ev.Source.Host
		}
		t.addRow(tab, &ev, ev.ObjectMeta,
			age(last, t.now), ev.Type, ev.Reason,
			strings.ToLower(ev.InvolvedObject.Kind)+"/"+ev.InvolvedObject.Name,
			ev.InvolvedObject.FieldPath, source, strings.TrimSpace(ev.Message),
			age(first, t.now), int64(count), ev.Name)
	}
	return tab
}

func namespaceTable(nss []v1.Namespace, t tableRequest) *metav1.Table {
	tab := newTable(
		col("Name", "string", 0, "Name must be unique within a namespace."),
		col("Status", "string", 0, "The status of the namespace"),
		col("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object was created."),
	)
	for i := range nss {
		ns := nss[i]
		t.addRow(tab, &ns, ns.ObjectMeta, ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, t.now))
	}
	return tab
}

func nodeTable(nodes []v1.Node, t tableRequest) *metav1.Table {
	tab := newTable(
		col("Name", "string", 0, "Name must be unique within a namespace."),
		col("Status", "string", 0, "The status of the node"),
		col("Roles", "string", 0, "The roles of the node"),
		col("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object was created."),
		col("Version", "string", 0, "Kubelet Version reported by the node."),
		col("Internal-IP", "string", 1, "List of internal IPs."),
		col("External-IP", "string", 1, "List of external IPs."),
		col("OS-Image", "string", 1, "OS image reported by the node from /etc/os-release."),
		col("Kernel-Version", "string", 1, "Kernel version reported by the node."),
		col("Container-Runtime", "string", 1, "Container runtime version reported by the node."),
	)
	for i := range nodes {
		n := nodes[i]
		status := "Unknown"
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				status = "NotReady"
				if c.Status == v1.ConditionTrue {
					status = "Ready"
				}
			}
		}
		var internal, external string
		for _, a := range n.Status.Addresses {
			switch a.Type {
			case v1.NodeInternalIP:
				internal = a.Address
			case v1.NodeExternalIP:
				external = a.Address
			}
		}
		info := n.Status.NodeInfo
		t.addRow(tab, &n, n.ObjectMeta, n.Name, status, "<none>", age(n.CreationTimestamp, t.now),
			info.KubeletVersion, orNone(internal), orNone(external), orNone(info.OSImage), orNone(info.KernelVersion), orNone(info.ContainerRuntimeVersion))
	}
	return tab
}
