// Command pause is the process that holds a pod sandbox's namespaces open.
//
// It is PID 1 of the sandbox, so it must do what init does: reap the zombies
// of processes reparented to it (for example when a container shares the
// sandbox PID namespace). It sleeps until SIGINT or SIGTERM and then exits 0.
// Built statically (CGO_ENABLED=0) by hack/images into the image
// <registry>/minikubelet/pause.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("minikubelet pause")
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pause: warning: not running as PID 1, zombies of other processes are not reaped")
	}
	// Capacity > 1 so that a burst of SIGCHLDs does not hide a SIGTERM; the
	// reap loop collects every exited child per SIGCHLD anyway.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "pause: shutting down on %v\n", sig)
		os.Exit(0)
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
