package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pty is a pseudo-terminal a command runs on as its controlling terminal,
// as in an interactive shell: what it writes is collected from the master.
type pty struct {
	master, slave *os.File
	mu            sync.Mutex
	out           bytes.Buffer
	done          chan struct{}
}

// openPTY opens a pseudo-terminal of rows×cols (/dev/ptmx, unlocked).
func openPTY(t *testing.T, rows, cols uint16) *pty {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0), "unlock the pty")
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	p := &pty{master: m, slave: s, done: make(chan struct{})}
	p.resize(t, rows, cols)
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { s.Close(); m.Close() })
	return p
}

// resize sets the terminal's size (the kernel signals SIGWINCH to the
// terminal's foreground process group).
func (p *pty) resize(t *testing.T, rows, cols uint16) {
	t.Helper()
	require.NoError(t, unix.IoctlSetWinsize(int(p.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}))
}

// start runs cmd in a new session with the pty as its controlling
// terminal and standard streams.
func (p *pty) start(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.slave, p.slave, p.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
}

// send types s on the terminal.
func (p *pty) send(t *testing.T, s string) {
	t.Helper()
	_, err := io.WriteString(p.master, s)
	require.NoError(t, err)
}

// output is everything the terminal showed so far.
func (p *pty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitFor waits until the terminal showed want after the first `after`
// bytes, and returns the length of the output then.
func (p *pty) waitFor(t *testing.T, after int, want string, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out := p.output()
		if i := strings.Index(out[min(after, len(out)):], want); i >= 0 {
			return len(out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal did not show %q within %s; it showed:\n%s", want, timeout, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// assertCooked checks that the terminal is out of raw mode (echo and line
// editing back), as a client that put it in raw mode must leave it.
func (p *pty) assertCooked(t *testing.T) {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS)
	require.NoError(t, err)
	assert.NotZero(t, tio.Lflag&unix.ECHO, "ECHO restored")
	assert.NotZero(t, tio.Lflag&unix.ICANON, "ICANON restored")
}
