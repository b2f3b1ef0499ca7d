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

	"github.com/minikubelet/minikubelet/agent/api"
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
	row := api.PodRow(p, now)
	var cells []string
	if withNamespace {
		cells = append(cells, p.Namespace)
	}
	cells = append(cells, p.Name, row.Ready, row.Status, row.Restarts, age(p.CreationTimestamp, now))
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

// conditionTrue reports whether the pod has condition t with status True.
func conditionTrue(pod *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
