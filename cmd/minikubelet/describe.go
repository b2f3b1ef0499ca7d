package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/minikubelet/minikubelet/agent/api"
)

const describeUsage = `Usage: minikubelet describe pod NAME [-n NS]
       minikubelet describe node [NAME]

Show a pod like kubectl describe: its containers (state, last state, ready,
restarts, probes and their last result), conditions, QoS class, IP, cgroup,
the startup trace (how long each step took), the step it is stuck at with
the likely cause, and its events.

Show the node: its pressure conditions with their last transition,
capacity and allocatable, the usage of the node and image filesystems, the
eviction signals and thresholds, and the last evictions.
`

func describeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("describe", describeUsage, stderr)
	var cf clientFlags
	cf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpIsNil(err)
	}
	if node, ok := nodeArg(pos); ok {
		return describeNodeCommand(ctx, cf.client(), node, stdout) // describe_node.go
	}
	names, err := podNames(fs, pos)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return usageError(fs, "describe needs a pod name")
	}
	c := cf.client()
	for i, name := range names {
		pod, err := c.GetPod(ctx, cf.namespace, name)
		if err != nil {
			return err
		}
		// Details and events are best effort: the pod may go meanwhile.
		details, derr := c.Details(ctx, cf.namespace, name)
		if derr != nil {
			details = nil
		}
		var events []v1.Event
		if l, err := c.Events(ctx, cf.namespace, name); err == nil {
			events = l.Items
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := describePod(stdout, pod, details, events, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

// describeTime is kubectl describe's time format.
const describeTime = time.RFC1123Z

// describer writes "Key:\tvalue" lines at indentation levels into a
// tabwriter, like kubectl's PrefixWriter.
type describer struct {
	tw *tabwriter.Writer
}

func (d *describer) line(level int, format string, a ...any) {
	fmt.Fprintf(d.tw, strings.Repeat("  ", level)+format+"\n", a...)
}

// describePod renders a pod, its details (nil if unavailable) and its
// events as kubectl describe does, plus minikubelet's startup trace and
// "Stuck at" line.
func describePod(w io.Writer, pod *v1.Pod, details *api.PodDetails, events []v1.Event, now time.Time) error {
	d := &describer{tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
	d.line(0, "Name:\t%s", pod.Name)
	d.line(0, "Namespace:\t%s", pod.Namespace)
	node := orNone(pod.Spec.NodeName)
	if pod.Status.HostIP != "" {
		node += "/" + pod.Status.HostIP
	}
	d.line(0, "Node:\t%s", node)
	if pod.Status.StartTime != nil {
		d.line(0, "Start Time:\t%s", pod.Status.StartTime.Format(describeTime))
	}
	d.mapLines("Labels", pod.Labels)
	d.mapLines("Annotations", pod.Annotations)
	if pod.DeletionTimestamp != nil {
		d.line(0, "Status:\tTerminating (lasts %s)", duration.HumanDuration(now.Sub(pod.DeletionTimestamp.Time)))
		if pod.DeletionGracePeriodSeconds != nil {
			d.line(0, "Termination Grace Period:\t%ds", *pod.DeletionGracePeriodSeconds)
		}
	} else {
		d.line(0, "Status:\t%s", orNone(string(pod.Status.Phase)))
	}
	if pod.Status.Reason != "" {
		d.line(0, "Reason:\t%s", pod.Status.Reason)
	}
	if pod.Status.Message != "" {
		d.line(0, "Message:\t%s", pod.Status.Message)
	}
	d.line(0, "IP:\t%s", pod.Status.PodIP)
	if len(pod.Status.PodIPs) > 0 {
		d.line(0, "IPs:")
		for _, ip := range pod.Status.PodIPs {
			d.line(1, "IP:\t%s", ip.IP)
		}
	} else {
		d.line(0, "IPs:\t<none>")
	}
	if pod.Status.QOSClass != "" {
		d.line(0, "QoS Class:\t%s", pod.Status.QOSClass)
	}
	if details != nil {
		d.line(0, "Cgroup:\t%s", orNone(details.CgroupPath))
		d.line(0, "Source:\t%s", orNone(details.Source))
	}

	var probes []api.ProbeState
	if details != nil {
		probes = details.Probes
	}
	if len(pod.Spec.InitContainers) > 0 {
		d.line(0, "Init Containers:")
		for _, c := range pod.Spec.InitContainers {
			d.container(c, findContainerStatus(pod.Status.InitContainerStatuses, c.Name), probes)
		}
	}
	d.line(0, "Containers:")
	for _, c := range pod.Spec.Containers {
		d.container(c, findContainerStatus(pod.Status.ContainerStatuses, c.Name), probes)
	}

	if len(pod.Status.Conditions) > 0 {
		d.line(0, "Conditions:")
		d.line(1, "Type\tStatus")
		for _, c := range pod.Status.Conditions {
			d.line(1, "%s \t%s", c.Type, c.Status)
		}
	}
	if details != nil && len(details.Steps) > 0 {
		d.line(0, "Startup Trace:")
		d.line(1, "Step\tDuration\tAt\tDetail")
		d.line(1, "----\t--------\t--\t------")
		for _, s := range details.Steps {
			at := "-"
			if !s.At.IsZero() {
				at = s.At.Format(time.TimeOnly)
			}
			d.line(1, "%s\t%s\t%s\t%s", s.Name, roundDuration(s.Duration), at, s.Detail)
		}
	}
	if details != nil && details.Stuck != nil {
		st := details.Stuck
		msg := st.Step + ": " + st.Cause
		if st.Hint != "" {
			msg += " (" + st.Hint + ")"
		}
		d.line(0, "Stuck at:\t%s", msg)
	}
	d.events(events, now)
	return d.tw.Flush()
}

// mapLines writes a label-like map, one "k=v" per line, sorted.
func (d *describer) mapLines(title string, m map[string]string) {
	if len(m) == 0 {
		d.line(0, "%s:\t<none>", title)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i == 0 {
			d.line(0, "%s:\t%s=%s", title, k, m[k])
		} else {
			d.line(0, "\t%s=%s", k, m[k])
		}
	}
}

// findContainerStatus returns the status of container name, or nil.
func findContainerStatus(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// container writes one container's section.
func (d *describer) container(c v1.Container, st *v1.ContainerStatus, probes []api.ProbeState) {
	d.line(1, "%s:", c.Name)
	if st != nil && st.ContainerID != "" {
		d.line(2, "Container ID:\t%s", st.ContainerID)
	}
	d.line(2, "Image:\t%s", c.Image)
	if st != nil && st.ImageID != "" {
		d.line(2, "Image ID:\t%s", st.ImageID)
	}
	for _, p := range c.Ports {
		d.line(2, "Port:\t%d/%s", p.ContainerPort, p.Protocol)
	}
	if len(c.Command) > 0 {
		d.line(2, "Command:\t%s", strings.Join(c.Command, " "))
	}
	if len(c.Args) > 0 {
		d.line(2, "Args:\t%s", strings.Join(c.Args, " "))
	}
	if st == nil {
		d.line(2, "State:\tWaiting")
		d.line(3, "Reason:\tPodInitializing")
	} else {
		d.state("State", st.State)
		if st.LastTerminationState != (v1.ContainerState{}) {
			d.state("Last State", st.LastTerminationState)
		}
		d.line(2, "Ready:\t%s", titleBool(st.Ready))
		d.line(2, "Restart Count:\t%d", st.RestartCount)
	}
	for _, r := range []struct {
		kind  string
		probe *v1.Probe
	}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
		if r.probe == nil {
			continue
		}
		d.line(2, "%s:\t%s", r.kind, describeProbe(r.probe))
		for _, ps := range probes {
			if ps.Container != c.Name || !strings.EqualFold(ps.Kind, r.kind) {
				continue
			}
			d.line(3, "Last Result:\t%s", probeResultLine(ps))
		}
	}
}

// probeResultLine is a probe's "Last Result": what its last run returned
// (not the probe's verdict, which a liveness probe keeps at success until
// failureThreshold runs failed), the output of a run that failed or warned
// (the daemon cuts it as api.CutProbeMessage; cut here too for an older
// daemon), the consecutive failures against the threshold, and when.
func probeResultLine(ps api.ProbeState) string {
	last := ps.LastResult
	if last == "" {
		last = ps.Result // an older daemon, or no run yet
	}
	if ps.LastMessage != "" && last != "success" {
		last += ": " + api.CutProbeMessage(ps.LastMessage)
	}
	if ps.Failures > 0 {
		noun := "failures"
		if ps.Failures == 1 {
			noun = "failure"
		}
		last += fmt.Sprintf(" (%d consecutive %s", ps.Failures, noun)
		if ps.FailureThreshold > 0 {
			last += fmt.Sprintf(", failureThreshold %d", ps.FailureThreshold)
		}
		last += ")"
	}
	if ps.Result != "" && ps.LastResult != "" && ps.Result != ps.LastResult {
		last += "; the probe still counts as " + ps.Result
	}
	if !ps.LastProbeTime.IsZero() {
		last += " at " + ps.LastProbeTime.Format(time.TimeOnly)
	}
	return last
}

// state writes a container state block.
func (d *describer) state(title string, s v1.ContainerState) {
	switch {
	case s.Running != nil:
		d.line(2, "%s:\tRunning", title)
		d.timeLine("Started", s.Running.StartedAt)
	case s.Waiting != nil:
		d.line(2, "%s:\tWaiting", title)
		if s.Waiting.Reason != "" {
			d.line(3, "Reason:\t%s", s.Waiting.Reason)
		}
		if s.Waiting.Message != "" {
			d.line(3, "Message:\t%s", s.Waiting.Message)
		}
	case s.Terminated != nil:
		t := s.Terminated
		d.line(2, "%s:\tTerminated", title)
		if t.Reason != "" {
			d.line(3, "Reason:\t%s", t.Reason)
		}
		if t.Message != "" {
			d.line(3, "Message:\t%s", strings.TrimSpace(t.Message))
		}
		d.line(3, "Exit Code:\t%d", t.ExitCode)
		if t.Signal != 0 {
			d.line(3, "Signal:\t%d", t.Signal)
		}
		d.timeLine("Started", t.StartedAt)
		d.timeLine("Finished", t.FinishedAt)
	default:
		d.line(2, "%s:\tWaiting", title)
	}
}

// timeLine writes a state's time, unless it is unknown.
func (d *describer) timeLine(title string, t metav1.Time) {
	if !t.IsZero() {
		d.line(3, "%s:\t%s", title, t.Format(describeTime))
	}
}

// titleBool is kubectl's True/False.
func titleBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// describeProbe is kubectl's one-line probe description.
func describeProbe(p *v1.Probe) string {
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
	switch {
	case p.Exec != nil:
		return fmt.Sprintf("exec [%s] %s", strings.Join(p.Exec.Command, " "), attrs)
	case p.HTTPGet != nil:
		scheme := strings.ToLower(string(p.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		return fmt.Sprintf("http-get %s://%s:%s%s %s", scheme, p.HTTPGet.Host, p.HTTPGet.Port.String(), p.HTTPGet.Path, attrs)
	case p.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s %s", p.TCPSocket.Host, p.TCPSocket.Port.String(), attrs)
	case p.GRPC != nil:
		return fmt.Sprintf("grpc <pod>:%d %s %s", p.GRPC.Port, ptrString(p.GRPC.Service), attrs)
	}
	return "unknown " + attrs
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// roundDuration shortens a step duration for display.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.String()
}

// events writes the Events table like kubectl: Type Reason Age From
// Message, age "3m (x4 over 10m)" for repeated events.
func (d *describer) events(events []v1.Event, now time.Time) {
	if len(events) == 0 {
		d.line(0, "Events:\t<none>")
		return
	}
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b v1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	d.line(0, "Events:")
	d.line(1, "Type\tReason\tAge\tFrom\tMessage")
	d.line(1, "----\t------\t----\t----\t-------")
	for _, e := range events {
		ageStr := relTime(eventTime(e), now)
		if e.Count > 1 {
			first := e.FirstTimestamp.Time
			if first.IsZero() {
				first = eventTime(e)
			}
			ageStr = fmt.Sprintf("%s (x%d over %s)", ageStr, e.Count, relTime(first, now))
		}
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		d.line(1, "%s\t%s\t%s\t%s\t%s", e.Type, e.Reason, ageStr, from, strings.TrimSpace(e.Message))
	}
}

// eventTime is when an event last happened.
func eventTime(e v1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

// relTime is an age for describe ("<unknown>" for zero).
func relTime(t, now time.Time) string {
	return age(metav1.NewTime(t), now)
}
