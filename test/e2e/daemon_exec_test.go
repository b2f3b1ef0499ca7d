package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

const execPodManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-d-exec-it
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
`

// TestDaemon_ExecInteractive runs the real `minikubelet exec -it` on a
// pseudo-terminal and `exec -i` with piped stdin, through the daemon's
// streaming exec to the runtime's CRI streaming server.
func TestDaemon_ExecInteractive(t *testing.T) {
	const pod = "e2e-d-exec-it"
	d := newDaemon(t, []string{pod})
	d.start(t)
	p := d.run(t, execPodManifest)
	code := waitExit(t, p, 3*time.Minute)
	require.Equal(t, 0, code, "run's exit code\n%s", p.output())

	// mk runs `minikubelet exec` with args (the socket added) and the
	// given stdin.
	mk := func(t *testing.T, stdin string, args ...string) cliResult {
		t.Helper()
		return d.cliIn(t, stdin, "exec", args...)
	}

	t.Run("TTY", func(t *testing.T) {
		term := openPTY(t, 40, 120)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, suite.bin, "exec", "--socket", d.sock, "-it", pod, "--", "sh")
		term.start(t, cmd)
		at := term.waitFor(t, 0, "#", time.Minute)
		// The terminal's size at the start, then a resize (SIGWINCH).
		term.send(t, "stty size\r")
		at = term.waitFor(t, at, "40 120", 30*time.Second)
		term.resize(t, 50, 132)
		deadline := time.Now().Add(30 * time.Second)
		for {
			term.send(t, "stty size\r")
			next := term.waitFor(t, at, "\n", 10*time.Second)
			if strings.Contains(term.output()[at:], "50 132") {
				break
			}
			require.True(t, time.Now().Before(deadline), "the resize did not reach the container:\n%s", term.output())
			at = next
			time.Sleep(200 * time.Millisecond) // the resize is forwarded asynchronously
		}
		at = len(term.output())
		term.send(t, "echo $((6*7)); exit 3\r")
		// The pty's reader may lag behind the exited process: wait for the
		// output (the typed line's echo shows "$((6*7))", never 42).
		term.waitFor(t, at, "42", 30*time.Second)
		err := cmd.Wait()
		out := term.output()
		t.Logf("minikubelet exec -it:\n%s", out)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 3, ee.ExitCode(), "the shell's exit code")
		// The typed line's echo holds "$((6*7))", not 42: 42 on a line of
		// its own is the shell's output, through the terminal.
		assert.Regexp(t, regexp.MustCompile(`(?m)^42\r?$`), out[at:])
		term.assertCooked(t)
	})

	t.Run("StdinPipe", func(t *testing.T) {
		r := mk(t, "a\nb\n", "-i", pod, "--", "wc", "-l")
		require.Equal(t, 0, r.code, "%s", r)
		assert.Equal(t, "2", strings.TrimSpace(r.stdout), "%s", r)
		assert.Empty(t, r.stderr)
	})

	t.Run("StdinExitCodeAndStderr", func(t *testing.T) {
		r := mk(t, "hi\n", "-i", pod, "--", "sh", "-c", "read l; echo got-$l; echo err-$l >&2; exit 5")
		assert.Equal(t, 5, r.code, "%s", r)
		assert.Equal(t, "got-hi\n", r.stdout)
		assert.Contains(t, r.stderr, "err-hi\n")
		assert.Contains(t, r.stderr, "command terminated with exit code 5")
	})

	t.Run("TTYWithoutTerminalWarns", func(t *testing.T) {
		r := mk(t, "x\n", "-it", pod, "--", "sh", "-c", "read l; echo got-$l")
		require.Equal(t, 0, r.code, "%s", r)
		assert.Equal(t, "got-x\n", r.stdout)
		assert.Contains(t, r.stderr, "Unable to use a TTY - input is not a terminal or the right kind of file\n")
	})

	t.Run("ContainerNotFound", func(t *testing.T) {
		r := mk(t, "", "-i", pod, "-c", "nope", "--", "true")
		assert.Equal(t, 1, r.code, "%s", r)
		assert.Contains(t, r.stderr, "container nope is not valid for pod e2e-d-exec-it")
	})
}

const attachPodManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-d-attach
  annotations:
    kubectl.kubernetes.io/default-container: shell
spec:
  terminationGracePeriodSeconds: 2
  restartPolicy: Never
  containers:
  - name: plain
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
  - name: shell
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh"]
    stdin: true
    tty: true
  - name: reader
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "while read l; do echo got-$l; done; echo bye"]
    stdin: true
    stdinOnce: true
`

// TestDaemon_Attach runs the real `minikubelet attach` against the
// processes containers already run: -it on a pseudo-terminal to a shell
// started with stdin and a tty, -i with piped stdin, and the refusals.
func TestDaemon_Attach(t *testing.T) {
	const pod = "e2e-d-attach"
	d := newDaemon(t, []string{pod})
	d.start(t)
	p := d.run(t, attachPodManifest)
	code := waitExit(t, p, 3*time.Minute)
	require.Equal(t, 0, code, "run's exit code\n%s", p.output())

	t.Run("StdinWithoutContainerStdin", func(t *testing.T) {
		r := d.cli(t, "attach", "-i", pod, "-c", "plain")
		assert.Equal(t, 1, r.code, "%s", r)
		assert.Contains(t, r.stderr, "container plain of pod default/e2e-d-attach was not started with stdin (spec.containers[0].stdin is false)")
	})

	// stdinOnce: the piped input's end closes the container's stdin, its
	// loop ends, and so does the session.
	t.Run("StdinPipe", func(t *testing.T) {
		r := d.cliIn(t, "a\nb\n", "attach", "-i", pod, "-c", "reader")
		require.Equal(t, 0, r.code, "%s", r)
		assert.Equal(t, "got-a\ngot-b\nbye\n", r.stdout)
		assert.Contains(t, r.stderr, "If you don't see a command prompt, try pressing enter.")
	})

	// No -c: the default-container annotation's (shell), not the first.
	t.Run("TTY", func(t *testing.T) {
		term := openPTY(t, 40, 120)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, suite.bin, "attach", "--socket", d.sock, "-it", pod)
		term.start(t, cmd)
		at := term.waitFor(t, 0, "If you don't see a command prompt, try pressing enter.", time.Minute)
		term.send(t, "echo $((6*7))\r")
		at = term.waitFor(t, at, "42", 30*time.Second)
		term.send(t, "exit 3\r")
		err := cmd.Wait()
		// As kubectl attach: the session's end is not the process's exit
		// code (the attach stream carries none); describe has it.
		require.NoError(t, err, "the session ends with the process, exit 0\n%s", term.output())
		// The pty's reader may still be behind the exited process.
		term.waitFor(t, at, "Session ended, resume using 'minikubelet attach e2e-d-attach -c shell -n default -i -t' command", 10*time.Second)
		out := term.output()
		t.Logf("minikubelet attach -it:\n%s", out)
		assert.Regexp(t, regexp.MustCompile(`(?m)^42\r?$`), out, "the shell's output, through the terminal")
		term.assertCooked(t)
	})

	t.Run("TerminatedContainer", func(t *testing.T) {
		var exitCode int32 = -1
		d.waitPod(t, pod, "shell terminated", time.Minute, func(p *v1.Pod) bool {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == "shell" && cs.State.Terminated != nil {
					exitCode = cs.State.Terminated.ExitCode
					return true
				}
			}
			return false
		})
		assert.Equal(t, int32(3), exitCode, "the exit code the attached shell ended with")
		r := d.cli(t, "attach", "-it", pod, "-c", "shell")
		assert.Equal(t, 1, r.code, "%s", r)
		assert.Contains(t, r.stderr, "container shell of pod default/e2e-d-attach is not running (terminated: Error)")
	})
}
