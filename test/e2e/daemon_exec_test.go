package e2e

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, suite.bin, append([]string{"exec", "--socket", d.sock}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("minikubelet exec %s: %v", strings.Join(args, " "), err)
		}
		require.NoError(t, ctx.Err(), "minikubelet exec %s did not finish within 2m", strings.Join(args, " "))
		return cliResult{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
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
		err := cmd.Wait()
		out := term.output()
		t.Logf("minikubelet exec -it:\n%s", out)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 3, ee.ExitCode(), "the shell's exit code")
		// The typed line's echo holds "$((6*7))", not 42: 42 on a line of
		// its own is the shell's output, through the terminal.
		assert.Regexp(t, regexp.MustCompile(`(?m)^42\r?$`), out[at:])
		// The local terminal is out of raw mode again.
		tio, err := unix.IoctlGetTermios(int(term.slave.Fd()), unix.TCGETS)
		require.NoError(t, err)
		assert.NotZero(t, tio.Lflag&unix.ECHO, "ECHO restored")
		assert.NotZero(t, tio.Lflag&unix.ICANON, "ICANON restored")
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
