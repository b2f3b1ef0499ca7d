// Command rawrun is the floor of `minikubelet run pod.yaml`: a process that
// dials the runtime (the same Version handshake), makes the floor's CRI
// calls for one pod (package floor: pod cgroup, ImageStatus,
// RunPodSandbox, PodSandboxStatus, CreateContainer, StartContainer), and
// then stays until SIGINT or SIGTERM, when it stops and removes the pod
// and exits, as `minikubelet run` does in the foreground. hack/bench.sh
// builds it beside the bench, whose run-launch scenario launches both
// (test/bench/launch.go).
//
// It prints one line per step on stdout ("handshake", "started",
// "removed") as it reaches it: the bench times the handshake line from
// the launch, as it times minikubelet run's "runtime" line.
//
// Kept minimal on purpose (no logging, no flags package beyond the
// standard one, nothing of the agent): its process start and package
// initialisation are part of what it measures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/test/bench/floor"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "rawrun:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("rawrun", flag.ContinueOnError)
	endpoint := fs.String("runtime-endpoint", "", "CRI endpoint (required)")
	image := fs.String("image", "", "the container's image, present in the runtime (required)")
	name := fs.String("name", "", "the pod's name (required)")
	ns := fs.String("namespace", floor.DefaultNamespace, "the pod's namespace")
	logDir := fs.String("log-dir", "", "pod log root (required)")
	fileDir := fs.String("file-dir", "", "directory of the pods' hosts and termination-log files (required)")
	perQOS := fs.Bool("cgroups-per-qos", true, "make the pod cgroup under kubepods/besteffort, as the agent does")
	ctrArgs := fs.String("args", "", "the container's arguments, space-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *endpoint == "" || *image == "" || *name == "" || *logDir == "" || *fileDir == "" {
		return errors.New("--runtime-endpoint, --image, --name, --log-dir and --file-dir are required (the bench passes them)")
	}
	// Signals first: a SIGTERM that arrives while the pod is being made
	// removes it once made, instead of killing the process half-way.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	t0 := time.Now()
	rt, err := cri.Dial(context.Background(), *endpoint, cri.Options{Timeout: 3 * time.Minute})
	if err != nil {
		return err
	}
	defer rt.Close()
	fmt.Printf("handshake %s\n", time.Since(t0))
	c := &floor.Client{RT: rt, LogDir: *logDir, FileDir: *fileDir, Image: *image, Args: strings.Fields(*ctrArgs), Namespace: *ns}
	if *perQOS {
		if c.Cgroups, err = cgroups.New(cgroups.Config{}); err != nil {
			return err
		}
	}
	// The calls run on a context of their own: the signal ends the wait
	// below, not a call in flight.
	p, err := c.Start(context.Background(), *name)
	if err != nil {
		return errors.Join(err, c.Remove(context.Background(), p))
	}
	fmt.Printf("started %s\n", time.Since(t0))
	<-ctx.Done()
	if err := c.Remove(context.Background(), p); err != nil {
		return err
	}
	fmt.Println("removed")
	return nil
}
