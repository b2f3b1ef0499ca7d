package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

const getUsage = `Usage: minikubelet get pods [NAME...] [-n NS | -A] [-o wide|json|yaml|name] [-w]

List the node's pods with kubectl's columns: NAME READY STATUS RESTARTS AGE
(-o wide adds IP and NODE; -A adds NAMESPACE). With -w (--watch), list them,
then print a line (or an object) for each change until interrupted.
`

func getCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("get", getUsage, stderr)
	var cf clientFlags
	cf.register(fs)
	var all bool
	var output string
	fs.BoolVar(&all, "all-namespaces", false, "list the pods of every namespace")
	fs.BoolVar(&all, "A", false, "shorthand for --all-namespaces")
	fs.StringVar(&output, "output", "", "output format: wide, json, yaml or name")
	fs.StringVar(&output, "o", "", "shorthand for --output")
	var watching bool
	fs.BoolVar(&watching, "watch", false, "after listing, print each change of the pods until interrupted")
	fs.BoolVar(&watching, "w", false, "shorthand for --watch")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpIsNil(err)
	}
	names, err := podNames(fs, pos)
	if err != nil {
		return err
	}
	switch output {
	case "", "wide", "json", "yaml", "name":
	default:
		return usageError(fs, "--output must be wide, json, yaml or name, not %q", output)
	}
	if all && len(names) > 0 {
		return usageError(fs, "a pod name cannot be used with --all-namespaces")
	}
	if watching && len(names) > 1 {
		return usageError(fs, "--watch follows one pod or all of them, not %d names", len(names))
	}
	c := cf.client()
	if watching {
		ns := cf.namespace
		if all {
			ns = ""
		}
		name := ""
		if len(names) == 1 {
			name = names[0]
		}
		return watchPods(ctx, c, ns, name, output, stdout, stderr)
	}

	var pods []v1.Pod
	single := len(names) == 1
	if len(names) == 0 {
		ns := cf.namespace
		if all {
			ns = ""
		}
		l, err := c.ListPods(ctx, ns)
		if err != nil {
			return err
		}
		pods = l.Items
	} else {
		for _, n := range names {
			p, err := c.GetPod(ctx, cf.namespace, n)
			if err != nil {
				return err
			}
			pods = append(pods, *p)
		}
	}

	switch output {
	case "json", "yaml":
		var obj any
		if single {
			p := pods[0]
			p.APIVersion, p.Kind = "v1", "Pod"
			obj = &p
		} else {
			obj = &v1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: nonNil(pods)}
		}
		var b []byte
		if output == "json" {
			b, err = json.MarshalIndent(obj, "", "    ")
			b = append(b, '\n')
		} else {
			b, err = yaml.Marshal(obj)
		}
		if err != nil {
			return fmt.Errorf("encode %s: %w", output, err)
		}
		_, err = stdout.Write(b)
		return err
	case "name":
		for _, p := range pods {
			fmt.Fprintf(stdout, "pod/%s\n", p.Name)
		}
		return nil
	}
	if len(pods) == 0 {
		if all {
			fmt.Fprintln(stderr, "No resources found")
		} else {
			fmt.Fprintf(stderr, "No resources found in %s namespace.\n", cf.namespace)
		}
		return nil
	}
	return printPodTable(stdout, pods, output == "wide", all, time.Now())
}

// helpIsNil maps the -h outcome of parseArgs to success.
func helpIsNil(err error) error {
	if err == errHelpShown {
		return nil
	}
	return err
}

// nonNil returns s, or an empty slice for nil (so JSON says "items": []).
func nonNil(s []v1.Pod) []v1.Pod {
	if s == nil {
		return []v1.Pod{}
	}
	return s
}

// printPodTable prints pods with kubectl's columns and padding.
func printPodTable(w io.Writer, pods []v1.Pod, wide, withNamespace bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0) // kubectl's printers.GetNewTabWriter
	fmt.Fprintln(tw, strings.Join(podTableHeader(wide, withNamespace), "\t"))
	for i := range pods {
		fmt.Fprintln(tw, strings.Join(podTableCells(&pods[i], wide, withNamespace, now), "\t"))
	}
	return tw.Flush()
}

// podTableHeader is the table's header cells.
func podTableHeader(wide, withNamespace bool) []string {
	var head []string
	if withNamespace {
		head = append(head, "NAMESPACE")
	}
	head = append(head, "NAME", "READY", "STATUS", "RESTARTS", "AGE")
	if wide {
		head = append(head, "IP", "NODE")
	}
	return head
}

// podTableCells is one pod's row.
func podTableCells(p *v1.Pod, wide, withNamespace bool, now time.Time) []string {
	row := podRow(p, now)
	var cells []string
	if withNamespace {
		cells = append(cells, p.Namespace)
	}
	cells = append(cells, p.Name, row.ready, row.status, row.restarts, age(p.CreationTimestamp, now))
	if wide {
		cells = append(cells, orNone(p.Status.PodIP), orNone(p.Spec.NodeName))
	}
	return cells
}

// orNone returns s, or "<none>" for "".
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// age formats the time since t like kubectl ("<unknown>" for zero).
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// podTableRow is the computed cells of one pod.
type podTableRow struct {
	ready, status, restarts string
}

// podRow computes READY, STATUS and RESTARTS as kubectl's printPod does
// (k8s.io/kubernetes pkg/printers/internalversion/printers.go): the
// pod's phase or reason, overridden by the first init container that has
// not completed ("Init:N/M", "Init:<reason>"), then by the main
// containers' waiting/terminated reasons, "Terminating" on deletion.
func podRow(pod *v1.Pod, now time.Time) podTableRow {
	restarts, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	ready := 0
	var lastRestart, sidecarLastRestart time.Time

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}

	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			total++
		}
	}

	initializing := false
	for i, c := range pod.Status.InitContainerStatuses {
		restarts += int(c.RestartCount)
		if t := c.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(lastRestart) {
			lastRestart = t.FinishedAt.Time
		}
		if sidecars[c.Name] {
			sidecarRestarts += int(c.RestartCount)
			if t := c.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(sidecarLastRestart) {
				sidecarLastRestart = t.FinishedAt.Time
			}
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case sidecars[c.Name] && c.Started != nil && *c.Started:
			if c.Ready {
				ready++
			}
			continue
		case c.State.Terminated != nil:
			t := c.State.Terminated
			switch {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || conditionTrue(pod, v1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, sidecarLastRestart
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := pod.Status.ContainerStatuses[i]
			restarts += int(c.RestartCount)
			if t := c.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(lastRestart) {
				lastRestart = t.FinishedAt.Time
			}
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			case c.State.Terminated != nil && c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
			case c.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.Ready && c.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		// A completed container next to a running one: the pod still runs.
		if reason == "Completed" && hasRunning {
			if conditionTrue(pod, v1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		reason = "Terminating"
	}
	if reason == "" {
		reason = string(v1.PodPending)
	}

	r := fmt.Sprint(restarts)
	if restarts > 0 && !lastRestart.IsZero() {
		r = fmt.Sprintf("%d (%s ago)", restarts, duration.HumanDuration(now.Sub(lastRestart)))
	}
	return podTableRow{ready: fmt.Sprintf("%d/%d", ready, total), status: reason, restarts: r}
}

// conditionTrue reports whether the pod has condition t with status True.
func conditionTrue(pod *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
