// Command standin is the one binary behind the stand-in images that the
// end-to-end tests serve under the names the Kubernetes documentation's
// examples use (nginx, redis, agnhost, etcd, stress, ...; see
// hack/images/standins.go). The machine running the tests has no internet,
// so these images are built locally and reached through containerd registry
// mirrors; each one does what its example relies on and nothing more.
//
// Like busybox, it picks its behaviour from the name it was started as
// (argv[0]'s base name), through symlinks in each image:
//
//	nginx           static files from /usr/share/nginx/html on :80; -s quit|stop|reload
//	redis-server    RESP on :6379: PING, ECHO, SET, GET, QUIT
//	etcd            grpc.health.v1 on the --listen-client-urls port
//	agnhost         subcommands liveness, netexec, pause, serve-hostname
//	http-echo       -text on -listen (:5678)
//	hello-app       "Hello, world!" on $PORT (8080)
//	node            "Hello Kubernetes!" on :8080 (node-hello's server.js)
//	goproxy         an HTTP listener on :8080
//	test-webserver  the root file system over HTTP on :80
//	stress          polinux/stress (--vm, --vm-bytes, --vm-hang, --cpu) and
//	                vish/stress (-cpus) flags
//	printenv        coreutils printenv (the host's busybox lacks the applet)
//	nmeter          busybox's nmeter, -d MSEC and %[N]t only (the host's
//	                busybox lacks it; the node e2e specs time their logs with it)
//
// Every server exits 0 on SIGTERM or SIGINT: as PID 1 a process without a
// handler would ignore them and make each pod's teardown wait out its grace
// period.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// commands maps an invocation name to its implementation; each returns the
// process exit code.
var commands = map[string]func(args []string) int{
	"nginx":          nginxMain,
	"redis-server":   redisMain,
	"etcd":           etcdMain,
	"agnhost":        agnhostMain,
	"http-echo":      httpEchoMain,
	"hello-app":      helloAppMain,
	"node":           nodeHelloMain,
	"goproxy":        goproxyMain,
	"test-webserver": testWebserverMain,
	"stress":         stressMain,
	"printenv":       printenvMain,
	"nmeter":         nmeterMain,
}

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if name == "standin" && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	cmd, ok := commands[name]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "standin: unknown command %q; one of: %s\n", name, strings.Join(names, ", "))
		os.Exit(127)
	}
	os.Exit(cmd(args))
}

// printenvMain is coreutils printenv: every variable without arguments,
// else the value of each named one, exit 1 when one is unset.
func printenvMain(args []string) int {
	if len(args) == 0 {
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0
	}
	code := 0
	for _, k := range args {
		v, ok := os.LookupEnv(k)
		if !ok {
			code = 1
			continue
		}
		fmt.Println(v)
	}
	return code
}
