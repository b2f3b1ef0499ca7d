package main

// `minikubelet describe node` (issue #21): the node as the daemon sees
// it, describe-style: capacity, allocatable, the filesystems' usage, the
// pressure conditions with their last transition, the eviction signals
// and thresholds, and the last evictions.

import (
	"context"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/minikubelet/minikubelet/agent/api"
)

// isNodeResource reports whether s names the nodes resource.
func isNodeResource(s string) bool {
	switch strings.ToLower(s) {
	case "node", "nodes", "no":
		return true
	}
	return false
}

// nodeArg returns the node name of `describe node [NAME]` or
// `describe node/NAME` ("" = this node) and whether pos names a node.
func nodeArg(pos []string) (name string, ok bool) {
	if len(pos) == 0 {
		return "", false
	}
	if kind, n, cut := strings.Cut(pos[0], "/"); cut {
		return n, isNodeResource(kind)
	}
	if !isNodeResource(pos[0]) {
		return "", false
	}
	if len(pos) > 1 {
		return pos[1], true
	}
	return "", true
}

// describeNodeCommand prints the node's description.
func describeNodeCommand(ctx context.Context, c *api.Client, name string, stdout io.Writer) error {
	if name == "" {
		vi, err := c.Version(ctx)
		if err != nil {
			return err
		}
		name = vi.NodeName
	}
	d, err := c.NodeDetails(ctx, name)
	if err != nil {
		return err
	}
	return describeNode(stdout, name, d, time.Now())
}

// describeNode renders the node's details.
func describeNode(w io.Writer, name string, nd *api.NodeDetails, now time.Time) error {
	d := &describer{tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
	d.line(0, "Name:\t%s", name)
	d.line(0, "Conditions:")
	if len(nd.Conditions) == 0 {
		d.line(1, "<none: eviction is off>")
	} else {
		d.line(1, "Type\tStatus\tLastTransitionTime\tReason\tMessage")
		d.line(1, "----\t------\t------------------\t------\t-------")
		for _, c := range nd.Conditions {
			d.line(1, "%s\t%s\t%s (%s ago)\t%s\t%s", c.Type, c.Status, c.LastTransitionTime.Format(describeTime),
				duration.HumanDuration(now.Sub(c.LastTransitionTime.Time)), c.Reason, c.Message)
		}
	}
	for _, rl := range []struct {
		title string
		list  v1.ResourceList
	}{{"Capacity", nd.Capacity}, {"Allocatable", nd.Allocatable}} {
		d.line(0, "%s:", rl.title)
		for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods} {
			if q, ok := rl.list[r]; ok {
				d.line(1, "%s:\t%s", r, q.String())
			}
		}
	}
	d.line(0, "Filesystems:")
	if len(nd.Filesystems) == 0 {
		d.line(1, "<none observed yet>")
	} else {
		d.line(1, "Name\tPath\tUsed\tCapacity\tUse%%\tInodes Used\tInodes")
		d.line(1, "----\t----\t----\t--------\t----\t-----------\t------")
		for _, f := range nd.Filesystems {
			used := f.CapacityBytes - f.AvailableBytes
			pct := int64(0)
			if f.CapacityBytes > 0 {
				pct = used * 100 / f.CapacityBytes
			}
			d.line(1, "%s\t%s\t%s\t%s\t%d%%\t%d\t%d", f.Name, f.Path, bytesQ(used), bytesQ(f.CapacityBytes), pct, f.InodesTotal-f.InodesFree, f.InodesTotal)
		}
	}
	if len(nd.Signals) > 0 {
		d.line(0, "Eviction Signals:\t(observed %s ago)", duration.HumanDuration(now.Sub(nd.ObservedAt)))
		for _, s := range nd.Signals {
			if strings.HasPrefix(s.Name, "pid") || strings.Contains(s.Name, "inodes") {
				d.line(1, "%s:\t%d of %d", s.Name, s.Available, s.Capacity)
				continue
			}
			d.line(1, "%s:\t%s of %s", s.Name, bytesQ(s.Available), bytesQ(s.Capacity))
		}
	}
	if len(nd.Thresholds) > 0 {
		d.line(0, "Eviction Thresholds:\t%s", strings.Join(nd.Thresholds, ", "))
	}
	for _, e := range nd.Errors {
		d.line(0, "Observation Error:\t%s", e)
	}
	d.line(0, "Evictions:")
	if len(nd.Evictions) == 0 {
		d.line(1, "<none>")
	} else {
		d.line(1, "Pod\tSignal\tAge\tMessage")
		d.line(1, "---\t------\t---\t-------")
		for i := len(nd.Evictions) - 1; i >= 0; i-- { // newest first
			e := nd.Evictions[i]
			d.line(1, "%s\t%s\t%s\t%s", e.Pod, e.Signal, duration.HumanDuration(now.Sub(e.Time)), e.Message)
		}
	}
	return d.tw.Flush()
}

// bytesQ renders bytes as a binary quantity (90Mi).
func bytesQ(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
