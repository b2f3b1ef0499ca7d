package main

// This file is `minikubelet attach`, kubectl attach against the daemon: a
// streaming session on /pods/{name}/attach to the process a container
// already runs, through the session machinery exec -i uses
// (exec_stream.go).

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
	v1 "k8s.io/api/core/v1"
)

const attachUsage = `Usage: minikubelet attach NAME [-c CONTAINER] [-n NS] [-i] [-t] [-q]

Attach to the process a container already runs (its main process, not a
new one: for that, use exec), as kubectl attach does: its output is shown
as it comes; -i also passes stdin to it, which needs a container started
with stdin: true; -t (-it) a terminal, which needs tty: true (else it is
dropped with kubectl's warning). Without -c the container is the one the
kubectl.kubernetes.io/default-container annotation names, else the first.
The session ends when the process exits (exit code 0, as kubectl attach:
read the process's own with describe) or on ^C without -t; with -t, ^C
goes to the process.

Examples:
  minikubelet attach web
  minikubelet attach -it shell -c debug
  printf 'a\nb\n' | minikubelet attach -i reader
`

// attachOptions are attach's parsed arguments.
type attachOptions struct {
	clientFlags
	pod, container    string
	stdin, tty, quiet bool
}

// parseAttachArgs parses attach's arguments: one pod (NAME, pod/NAME or
// pods NAME, as kubectl takes).
func parseAttachArgs(args []string, stderr io.Writer) (attachOptions, error) {
	fs := newFlagSet("attach", attachUsage, stderr)
	var o attachOptions
	var it bool
	o.clientFlags.register(fs)
	fs.StringVar(&o.container, "container", "", "the container (default: the kubectl.kubernetes.io/default-container annotation's, else the first)")
	fs.StringVar(&o.container, "c", "", "shorthand for --container")
	fs.BoolVar(&o.stdin, "stdin", false, "pass stdin to the container (it needs stdin: true)")
	fs.BoolVar(&o.stdin, "i", false, "shorthand for --stdin")
	fs.BoolVar(&o.tty, "tty", false, "stdin is a terminal (the container needs tty: true)")
	fs.BoolVar(&o.tty, "t", false, "shorthand for --tty")
	fs.BoolVar(&it, "it", false, "shorthand for -i -t")
	fs.BoolVar(&it, "ti", false, "shorthand for -i -t")
	fs.BoolVar(&o.quiet, "quiet", false, "print only the session's output: no hints or warnings")
	fs.BoolVar(&o.quiet, "q", false, "shorthand for --quiet")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return o, err
	}
	if it {
		o.stdin, o.tty = true, true
	}
	switch {
	case len(pos) == 1:
		o.pod = podName(pos[0])
	case len(pos) == 2 && isPodResource(pos[0]):
		o.pod = pos[1]
	case len(pos) == 0:
		return o, usageError(fs, "attach needs a pod name")
	default:
		return o, usageError(fs, "attach takes one pod, got %q", pos)
	}
	return o, nil
}

// attachStdin is the stdin attach -i reads (a variable for tests).
var attachStdin = os.Stdin

func attachCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseAttachArgs(args, stderr)
	if err != nil {
		return helpIsNil(err)
	}
	pod, err := o.client().GetPod(ctx, o.namespace, o.pod)
	if err != nil {
		return execError(err, o.namespace, o.pod)
	}
	warn := stderr
	if o.quiet {
		warn = io.Discard
	}
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return fmt.Errorf("cannot attach a container in a completed pod; current phase is %s: see its output with `minikubelet logs %s -n %s`",
			pod.Status.Phase, pod.Name, pod.Namespace)
	}
	c, path, err := attachContainer(pod, o.container, warn)
	if err != nil {
		return err
	}
	if err := containerRunning(pod, c.Name); err != nil {
		return err
	}
	var stdin *os.File
	if o.stdin {
		stdin = attachStdin
	}
	tty, err := attachTTY(pod, c, path, o.stdin, o.tty, stdin != nil && term.IsTerminal(int(stdin.Fd())), warn)
	if err != nil {
		return err
	}
	// As kubectl: the session is recorded in the container's log, and the
	// process printed its prompt before we came.
	fmt.Fprintln(warn, "All commands and output from this session will be recorded in container logs, including credentials and sensitive information passed through the command prompt.")
	fmt.Fprintln(warn, "If you don't see a command prompt, try pressing enter.")
	u := streamURL(o.namespace, o.pod, "attach", c.Name, nil, o.stdin, tty)
	err = streamSession(ctx, o.socket, u, stdin, stdout, stderr, tty)
	if err := sessionError(ctx, err, fmt.Sprintf("attach to container %s of pod %s/%s", c.Name, o.namespace, o.pod)); err != nil {
		return err
	}
	if !o.quiet && o.stdin && tty {
		fmt.Fprintln(stdout, reattachMessage(pod, c.Name, path))
	}
	return nil
}

// attachContainer is the container attach goes to, as kubectl chooses it:
// the one named (a container, init container or ephemeral container); else
// the one the kubectl.kubernetes.io/default-container annotation names;
// else the first, saying so on warn when there were others. path is the
// container's field path (spec.containers[0]).
func attachContainer(pod *v1.Pod, name string, warn io.Writer) (c *v1.Container, path string, err error) {
	if name != "" {
		if c, path = findContainer(pod, name); c == nil {
			return nil, "", fmt.Errorf("container %s not found in pod %s/%s: list its containers with `minikubelet describe pod %s -n %s`",
				name, pod.Namespace, pod.Name, pod.Name, pod.Namespace)
		}
		return c, path, nil
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, "", fmt.Errorf("pod %s/%s has no containers", pod.Namespace, pod.Name)
	}
	if a := pod.Annotations["kubectl.kubernetes.io/default-container"]; a != "" {
		// An annotation naming no container is ignored, as by kubectl.
		if c, path = findContainer(pod, a); c != nil {
			return c, path, nil
		}
	}
	c = &pod.Spec.Containers[0]
	if len(pod.Spec.Containers) > 1 || len(pod.Spec.InitContainers) > 0 || len(pod.Spec.EphemeralContainers) > 0 {
		var names []string
		for _, x := range pod.Spec.Containers {
			names = append(names, x.Name)
		}
		for _, x := range pod.Spec.InitContainers {
			names = append(names, x.Name+" (init)")
		}
		for _, x := range pod.Spec.EphemeralContainers {
			names = append(names, x.Name+" (ephem)")
		}
		fmt.Fprintf(warn, "Defaulted container %q out of: %s\n", c.Name, strings.Join(names, ", "))
	}
	return c, "spec.containers[0]", nil
}

// findContainer finds the container name among pod's containers, init
// containers and ephemeral containers (as a Container: their common
// fields), and returns it with its field path.
func findContainer(pod *v1.Pod, name string) (c *v1.Container, path string) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], fmt.Sprintf("spec.containers[%d]", i)
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], fmt.Sprintf("spec.initContainers[%d]", i)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if e := &pod.Spec.EphemeralContainers[i]; e.Name == name {
			c := v1.Container(e.EphemeralContainerCommon)
			return &c, fmt.Sprintf("spec.ephemeralContainers[%d]", i)
		}
	}
	return nil, ""
}

// attachTTY decides whether the session has a terminal, as kubectl does:
// the container's own setting wins (a process's terminal cannot change
// once it started), -t on a container without one is dropped with
// kubectl's warning, and a terminal needs -i on a terminal (useTTY).
//
// -i on a container started without stdin is an error here. kubectl
// attaches anyway and the runtime drops what is typed, so the session
// looks stuck until the process exits; saying so serves the user better.
func attachTTY(pod *v1.Pod, c *v1.Container, path string, stdin, tty, stdinIsTerminal bool, warn io.Writer) (bool, error) {
	if stdin && !c.Stdin {
		return false, fmt.Errorf("container %s of pod %s/%s was not started with stdin (%s.stdin is false), so -i has nothing to write to: attach without -i to see its output, or run a new shell with `minikubelet exec -it %s -c %s -n %s -- sh`",
			c.Name, pod.Namespace, pod.Name, path, pod.Name, c.Name, pod.Namespace)
	}
	if tty && !c.TTY {
		fmt.Fprintf(warn, "error: Unable to use a TTY - container %s did not allocate one\n", c.Name)
	}
	if !stdin || !c.TTY {
		return false, nil
	}
	return useTTY(stdinIsTerminal, warn), nil
}

// reattachMessage is what kubectl prints when an interactive session ends.
func reattachMessage(pod *v1.Pod, container, path string) string {
	cmd := fmt.Sprintf("minikubelet attach %s -c %s -n %s -i -t", pod.Name, container, pod.Namespace)
	if strings.HasPrefix(path, "spec.ephemeralContainers") {
		return "Session ended, the ephemeral container will not be restarted but may be reattached using '" + cmd + "' if it is still running"
	}
	return "Session ended, resume using '" + cmd + "' command"
}
