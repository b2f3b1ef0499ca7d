package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestParseAttachArgs(t *testing.T) {
	t.Setenv(socketEnv, "/test/api.sock")
	tests := map[string]struct {
		args     []string
		want     attachOptions
		wantCode int // a usage error's exit code
	}{
		"name":                {args: []string{"web"}, want: attachOptions{pod: "web"}},
		"pod/name":            {args: []string{"pod/web"}, want: attachOptions{pod: "web"}},
		"pods name":           {args: []string{"pods", "web"}, want: attachOptions{pod: "web"}},
		"it, flags after":     {args: []string{"web", "-it", "-c", "app", "-n", "prod"}, want: attachOptions{pod: "web", container: "app", stdin: true, tty: true}},
		"ti":                  {args: []string{"-ti", "web"}, want: attachOptions{pod: "web", stdin: true, tty: true}},
		"long flags":          {args: []string{"--stdin", "--tty", "--quiet", "--container", "app", "web"}, want: attachOptions{pod: "web", container: "app", stdin: true, tty: true, quiet: true}},
		"i alone":             {args: []string{"-i", "-q", "web"}, want: attachOptions{pod: "web", stdin: true, quiet: true}},
		"no pod":              {args: []string{"-i"}, wantCode: 2},
		"two pods":            {args: []string{"web", "db"}, wantCode: 2},
		"another resource":    {args: []string{"deploy", "web"}, wantCode: 2},
		"unknown flag":        {args: []string{"--timeout", "5s", "web"}, wantCode: 2},
		"exec's command form": {args: []string{"web", "--", "sh"}, wantCode: 2},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseAttachArgs(tt.args, io.Discard)
			if tt.wantCode != 0 {
				assert.Equal(t, tt.wantCode, exitCode(err), "%v", err)
				return
			}
			require.NoError(t, err)
			want := tt.want
			want.socket = "/test/api.sock"
			want.namespace = "default"
			if name == "it, flags after" {
				want.namespace = "prod"
			}
			assert.Equal(t, want, got)
		})
	}
}

func TestAttachContainer(t *testing.T) {
	tests := map[string]struct {
		mutate   func(p *v1.Pod)
		name     string
		want     string
		wantPath string
		wantWarn string
		wantErr  string
	}{
		"named":      {name: "side", want: "side", wantPath: "spec.containers[1]"},
		"named init": {name: "init", want: "init", wantPath: "spec.initContainers[0]"},
		"named ephemeral": {name: "debug", want: "debug", wantPath: "spec.ephemeralContainers[0]", mutate: func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Stdin: true, TTY: true}}}
		}},
		"named missing": {name: "nope", wantErr: "container nope not found in pod default/web: list its containers with `minikubelet describe pod web -n default`"},
		"default: the first, saying so": {want: "app", wantPath: "spec.containers[0]",
			wantWarn: `Defaulted container "app" out of: app, side, init (init)` + "\n"},
		"default: the annotation's": {want: "side", wantPath: "spec.containers[1]", mutate: func(p *v1.Pod) {
			p.Annotations = map[string]string{"kubectl.kubernetes.io/default-container": "side"}
		}},
		"default: an annotation naming no container is ignored": {want: "app", wantPath: "spec.containers[0]",
			wantWarn: `Defaulted container "app" out of: app, side, debug (ephem)` + "\n", mutate: func(p *v1.Pod) {
				p.Annotations = map[string]string{"kubectl.kubernetes.io/default-container": "gone"}
				p.Spec.InitContainers = nil
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
			}},
		"default: the only container, silently": {want: "app", wantPath: "spec.containers[0]", mutate: func(p *v1.Pod) {
			p.Spec.InitContainers = nil
			p.Spec.Containers = p.Spec.Containers[:1]
		}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			pod := basePod()
			if tt.mutate != nil {
				tt.mutate(pod)
			}
			var warn bytes.Buffer
			c, path, err := attachContainer(pod, tt.name, &warn)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.Name)
			assert.Equal(t, tt.wantPath, path)
			assert.Equal(t, tt.wantWarn, warn.String())
		})
	}
}

func TestAttachTTY(t *testing.T) {
	const tyWarn = "error: Unable to use a TTY - container app did not allocate one\n"
	tests := map[string]struct {
		stdinC, ttyC          bool // the container's spec
		stdin, tty, terminal  bool // the flags, and whether stdin is a terminal
		want                  bool
		wantWarn, wantErrPart string
	}{
		"output only":                      {},
		"-it on a terminal":                {stdinC: true, ttyC: true, stdin: true, tty: true, terminal: true, want: true},
		"-it on a pipe":                    {stdinC: true, ttyC: true, stdin: true, tty: true, wantWarn: ttyWarning + "\n"},
		"-i on a tty container: forced":    {stdinC: true, ttyC: true, stdin: true, terminal: true, want: true},
		"-i piped to a tty container":      {stdinC: true, ttyC: true, stdin: true, wantWarn: ttyWarning + "\n"},
		"-i on a stdin container":          {stdinC: true, stdin: true, terminal: true},
		"-it on a container without a tty": {stdinC: true, stdin: true, tty: true, terminal: true, wantWarn: tyWarn},
		"no -i on a tty container":         {stdinC: true, ttyC: true, terminal: true},
		"-t without -i, container w/o tty": {tty: true, wantWarn: tyWarn},
		"-i on a container without stdin":  {stdin: true, terminal: true, wantErrPart: "container app of pod default/web was not started with stdin (spec.containers[0].stdin is false)"},
		"-it on a container without stdin": {ttyC: true, stdin: true, tty: true, terminal: true, wantErrPart: "attach without -i to see its output, or run a new shell with `minikubelet exec -it web -c app -n default -- sh`"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := &v1.Container{Name: "app", Stdin: tt.stdinC, TTY: tt.ttyC}
			var warn bytes.Buffer
			got, err := attachTTY(basePod(), c, "spec.containers[0]", tt.stdin, tt.tty, tt.terminal, &warn)
			if tt.wantErrPart != "" {
				assert.ErrorContains(t, err, tt.wantErrPart)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantWarn, warn.String())
		})
	}
}

func TestReattachMessage(t *testing.T) {
	pod := basePod()
	assert.Equal(t, "Session ended, resume using 'minikubelet attach web -c app -n default -i -t' command",
		reattachMessage(pod, "app", "spec.containers[0]"))
	assert.Equal(t, "Session ended, the ephemeral container will not be restarted but may be reattached using 'minikubelet attach web -c debug -n default -i -t' if it is still running",
		reattachMessage(pod, "debug", "spec.ephemeralContainers[0]"))
}

// TestAttach_Errors drives attachCommand against the fake daemon (no
// runtime streaming): every check before the session, and the session's
// upgrade reaching the daemon's attach endpoint.
func TestAttach_Errors(t *testing.T) {
	b, sock := startDaemon(t)
	ctx := context.Background()
	pipeStdin(t, &attachStdin)

	done := basePod()
	done.Name, done.Status.Phase = "done", v1.PodSucceeded
	b.SetPod(done)
	shell := basePod()
	shell.Name = "shell"
	shell.Spec.Containers[1].Stdin, shell.Spec.Containers[1].TTY = true, true
	shell.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Stdin: true, TTY: true}}}
	shell.Status.EphemeralContainerStatuses = []v1.ContainerStatus{{Name: "debug",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
	b.SetPod(shell)

	t.Run("PodNotFound", func(t *testing.T) {
		_, _, err := cli(t, ctx, sock, "attach", "-n", "prod", "nope")
		assert.ErrorContains(t, err, `"nope" not found`)
		assert.ErrorContains(t, err, "minikubelet get pods -n prod")
	})
	t.Run("CompletedPod", func(t *testing.T) {
		_, _, err := cli(t, ctx, sock, "attach", "done")
		assert.EqualError(t, err, "cannot attach a container in a completed pod; current phase is Succeeded: see its output with `minikubelet logs done -n default`")
	})
	t.Run("ContainerNotFound", func(t *testing.T) {
		_, _, err := cli(t, ctx, sock, "attach", "web", "-c", "nope")
		assert.ErrorContains(t, err, "container nope not found in pod default/web")
	})
	t.Run("ContainerTerminated", func(t *testing.T) {
		_, _, err := cli(t, ctx, sock, "attach", "web", "-c", "init")
		assert.EqualError(t, err, "container init of pod default/web is not running (terminated: Completed): see why with `minikubelet describe pod web -n default`")
	})
	t.Run("EphemeralContainerTerminated", func(t *testing.T) {
		_, _, err := cli(t, ctx, sock, "attach", "-it", "shell", "-c", "debug")
		assert.EqualError(t, err, "container debug of pod default/shell is not running (terminated: Completed): see why with `minikubelet describe pod shell -n default`")
	})
	t.Run("StdinWithoutContainerStdin", func(t *testing.T) {
		_, _, err := cli(t, ctx, sock, "attach", "-i", "web", "-c", "app")
		assert.ErrorContains(t, err, "was not started with stdin (spec.containers[0].stdin is false)")
	})
	// The fake daemon serves no runtime streaming: the SPDY upgrade reaches
	// its attach endpoint and gets its 503 back, after kubectl's hints.
	t.Run("Upgrade", func(t *testing.T) {
		stdout, stderr, err := cli(t, ctx, sock, "attach", "-it", "shell", "-c", "side")
		assert.ErrorContains(t, err, "attach to container side of pod default/shell: ")
		assert.ErrorContains(t, err, "attach sessions are not served by this API")
		assert.Empty(t, stdout)
		assert.Equal(t, ttyWarning+"\n"+
			"All commands and output from this session will be recorded in container logs, including credentials and sensitive information passed through the command prompt.\n"+
			"If you don't see a command prompt, try pressing enter.\n", stderr)
	})
	t.Run("UpgradeQuiet", func(t *testing.T) {
		_, stderr, err := cli(t, ctx, sock, "attach", "-q", "-t", "web")
		assert.ErrorContains(t, err, "attach sessions are not served by this API")
		assert.Empty(t, stderr, "-q: no hints, no warnings (the default container, the dropped -t)")
	})
}
