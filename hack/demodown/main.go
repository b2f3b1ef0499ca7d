// Command demodown lists and removes the pods minikubelet created on a
// containerd, through the CRI, for hack/demo-down.sh:
//
//	go run ./hack/demodown [-endpoint E] list
//	go run ./hack/demodown [-endpoint E] [-dry-run] remove NAMESPACE/NAME... | -all
//
// list prints one line per pod: "NAMESPACE/NAME STATE AGENT UID" (AGENT is
// the io.minikubelet.agent label: serve-… for a daemon, run-PID for a
// foreground run). remove stops each pod's containers and sandboxes (the
// runtime runs CNI DEL then, which releases the IP and the pod's iptables
// rules) and removes them, printing one line per pod. Only objects labelled
// io.minikubelet.managed-by=minikubelet are ever touched.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

const (
	labelManagedBy = "io.minikubelet.managed-by"
	labelAgent     = "io.minikubelet.agent"
	labelName      = "io.kubernetes.pod.name"
	labelNamespace = "io.kubernetes.pod.namespace"
	labelUID       = "io.kubernetes.pod.uid"
)

func main() {
	endpoint := flag.String("endpoint", "unix:///run/containerd/containerd.sock", "the containerd CRI endpoint")
	all := flag.Bool("all", false, "remove: every pod minikubelet created")
	dry := flag.Bool("dry-run", false, "remove: only print what would be removed")
	flag.Parse()
	if err := run(*endpoint, *all, *dry, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "demodown:", err)
		os.Exit(1)
	}
}

type pod struct {
	key        string // namespace/name
	state      string
	agent      string
	uid        string
	sandboxes  []string
	containers []string
}

func run(endpoint string, all, dry bool, args []string) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "remove") {
		return fmt.Errorf("usage: demodown [-endpoint E] list | [-dry-run] remove NAMESPACE/NAME... | -all remove")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := cri.Dial(ctx, endpoint, cri.Options{Timeout: time.Minute})
	if err != nil {
		return err
	}
	defer c.Close()
	pods, err := list(ctx, c)
	if err != nil {
		return err
	}
	if args[0] == "list" {
		for _, p := range pods {
			fmt.Printf("%s %s %s %s\n", p.key, p.state, p.agent, p.uid)
		}
		return nil
	}
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[a] = true
	}
	for _, p := range pods {
		if !all && !want[p.key] {
			continue
		}
		what := fmt.Sprintf("%d container(s), %d sandbox(es)", len(p.containers), len(p.sandboxes))
		if dry {
			fmt.Printf("would remove pod %s (%s, created by %s)\n", p.key, what, p.agent)
			continue
		}
		for _, id := range p.containers {
			if err := c.StopContainer(ctx, id, 10); err != nil {
				return fmt.Errorf("pod %s: stop container %s: %w", p.key, id, err)
			}
			if err := c.RemoveContainer(ctx, id); err != nil {
				return fmt.Errorf("pod %s: remove container %s: %w", p.key, id, err)
			}
		}
		for _, id := range p.sandboxes {
			// StopPodSandbox has the runtime call CNI DEL: the pod's IP and
			// its masquerade rules go with it.
			if err := c.StopPodSandbox(ctx, id); err != nil {
				return fmt.Errorf("pod %s: stop sandbox %s: %w", p.key, id, err)
			}
			if err := c.RemovePodSandbox(ctx, id); err != nil {
				return fmt.Errorf("pod %s: remove sandbox %s: %w", p.key, id, err)
			}
		}
		fmt.Printf("removed pod %s (%s, created by %s)\n", p.key, what, p.agent)
	}
	return nil
}

// list groups minikubelet's sandboxes and containers by pod.
func list(ctx context.Context, c *cri.Client) ([]*pod, error) {
	sel := map[string]string{labelManagedBy: "minikubelet"}
	sbs, err := c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	cs, err := c.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	pods := map[string]*pod{}
	get := func(l map[string]string) *pod {
		key := l[labelNamespace] + "/" + l[labelName]
		p := pods[key]
		if p == nil {
			p = &pod{key: key, state: "NotReady", agent: l[labelAgent], uid: l[labelUID]}
			if p.agent == "" {
				p.agent = "serve"
			}
			pods[key] = p
		}
		return p
	}
	for _, sb := range sbs {
		p := get(sb.Labels)
		p.sandboxes = append(p.sandboxes, sb.Id)
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			p.state = "Ready"
		}
	}
	for _, ctr := range cs {
		p := get(ctr.Labels)
		p.containers = append(p.containers, ctr.Id)
	}
	out := make([]*pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Compare(out[i].key, out[j].key) < 0 })
	return out, nil
}
