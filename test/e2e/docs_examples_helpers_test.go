package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/test/testutil"
)

// Helpers for docs_examples_test.go: run one unmodified manifest of
// ../shared/k8s-docs-examples and look at its pod by UID (several examples
// share a pod name, and they run in parallel).

// docsExamplesDir is where CI checks out the shared examples, beside the
// repository ($MINIKUBELET_DOCS_EXAMPLES overrides it).
func docsExamplesDir() string { return testutil.DocsExamplesDir(suite.repo) }

// docsPod is one example's run and the pod it declares.
type docsPod struct {
	t         *testing.T
	p         *runProc
	file      string
	namespace string
	name      string
	uid       string
}

// startDocs runs the example file as it is (no REGISTRY substitution: the
// mirrors serve its images).
func startDocs(t *testing.T, file string) *docsPod {
	t.Helper()
	path := filepath.Join(docsExamplesDir(), file)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var meta struct {
		Metadata struct{ Name, Namespace string }
	}
	require.NoError(t, yaml.Unmarshal(b, &meta), file)
	d := &docsPod{t: t, file: file, namespace: meta.Metadata.Namespace, name: meta.Metadata.Name}
	if d.namespace == "" {
		d.namespace = "default"
	}
	var extra []string
	if _, ok := docsPrivileged[file]; ok {
		extra = append(extra, privilegedLevel)
	}
	d.p = startRunPath(t, path, extra...)
	return d
}

// key is the pod's namespace/name as run prints it.
func (d *docsPod) key() string { return regexp.QuoteMeta(d.namespace + "/" + d.name) }

// waitFor waits for a line about this pod matching re (after the pod key).
func (d *docsPod) waitFor(re string, timeout time.Duration) []string {
	d.t.Helper()
	return d.p.waitFor(d.key()+`\s+`+re, timeout)
}

// validated returns the UID and QoS class of the validated line.
func (d *docsPod) validated() (uid, qos string) {
	d.t.Helper()
	m := d.waitFor(`validated\s+.*uid ([0-9a-f-]+), qos (\w+)`, 30*time.Second)
	d.uid = m[1]
	return m[1], m[2]
}

// running waits for phase Running and returns the pod IP.
func (d *docsPod) running() string {
	d.t.Helper()
	d.validated()
	return d.waitFor(`status\s+Running ip=(\S+)`, 2*time.Minute)[1]
}

// ready waits for phase Running with n of n containers ready.
func (d *docsPod) ready(n int) {
	d.t.Helper()
	d.waitFor(fmt.Sprintf(`status\s+Running ip=\S+ ready=%d/%d `, n, n), 2*time.Minute)
}

// containers lists the pod's containers in the runtime.
func (d *docsPod) containers() []*runtimeapi.Container {
	d.t.Helper()
	require.NotEmpty(d.t, d.uid, "validated() first")
	cs, err := suite.rt.ListContainers(ctx(d.t), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": d.uid}})
	require.NoError(d.t, err)
	return cs
}

// id returns the running container's ID, waiting up to a minute for it.
func (d *docsPod) id(container string) string {
	d.t.Helper()
	var id string
	eventually(d.t, time.Minute, "container "+container+" running", func() bool {
		for _, c := range d.containers() {
			if c.GetMetadata().GetName() == container && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				id = c.Id
				return true
			}
		}
		return false
	})
	return id
}

// exec runs a command in the container and returns stdout.
func (d *docsPod) exec(container string, cmd ...string) string {
	d.t.Helper()
	return execIn(d.t, d.id(container), cmd...)
}

// procStatus returns the fields of /proc/1/status in the container.
func (d *docsPod) procStatus(container string) map[string]string {
	d.t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(d.exec(container, "cat", "/proc/1/status"), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// logs returns the container's log lines (the CRI log format's message
// part) across its instances.
func (d *docsPod) logs(container string) string {
	d.t.Helper()
	dir := filepath.Join(suite.dir, "pod-logs", fmt.Sprintf("%s_%s_%s", d.namespace, d.name, d.uid), container)
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(d.t, err)
		for _, l := range strings.Split(string(data), "\n") {
			if parts, ok := criLogLine(l); ok {
				b.WriteString(parts[3])
				if parts[2] == "F" {
					b.WriteString("\n")
				}
			}
		}
	}
	return b.String()
}

// waitLogs waits until the container's log matches re.
func (d *docsPod) waitLogs(container, re string, timeout time.Duration) string {
	d.t.Helper()
	rx := regexp.MustCompile(re)
	var out string
	eventually(d.t, timeout, fmt.Sprintf("%s's log to match /%s/", container, re), func() bool {
		out = d.logs(container)
		return rx.MatchString(out)
	})
	return out
}

// podCgroup returns the pod cgroup from the sandbox line.
func (d *docsPod) podCgroup() string {
	d.t.Helper()
	return d.waitFor(`sandbox\s+.*, cgroup (\S+)\n`, 2*time.Minute)[1]
}

// stop interrupts run, waits for a clean exit and returns how long the
// teardown took.
func (d *docsPod) stop() time.Duration {
	d.t.Helper()
	start := time.Now()
	d.p.interrupt()
	return time.Since(start)
}

// tcpDial connects to addr, writes send and returns the first line read.
func tcpDial(t *testing.T, addr, send string) string {
	t.Helper()
	var line string
	eventually(t, 20*time.Second, "a reply from "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte(send)); err != nil {
			return false
		}
		buf := make([]byte, 256)
		n, _ := c.Read(buf)
		line = strings.TrimSpace(string(buf[:n]))
		return n > 0
	})
	return line
}

// httpGetStatus fetches a URL and returns status and body, retrying
// connection errors for a while.
func httpGetStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	var code int
	var body string
	eventually(t, 20*time.Second, "GET "+url, func() bool {
		var err error
		code, body, err = httpTry(url)
		return err == nil
	})
	return code, body
}

// httpTry is one GET with a short timeout.
func httpTry(url string) (int, string, error) {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// docsStepBound is how long one step of a pod's start may take after the
// step it waits for: the kubelet takes the next step at the sync that the
// PLEG event of the previous one triggers (a relist period, 1 s, plus the
// start itself), not at a periodic resync (issue #17: app containers
// behind a native sidecar started a resync, a minute, later).
const docsStepBound = 5 * time.Second

// containerTimes returns when the newest instance of container started and
// finished (zero if it has not), from the runtime's ContainerStatus,
// waiting up to 2 minutes (image pulls) for the instance to exist and, if
// finished is set, to have exited.
func (d *docsPod) containerTimes(container string, finished bool) (started, ended time.Time) {
	d.t.Helper()
	eventually(d.t, 2*time.Minute, "container "+container+" started", func() bool {
		var newest *runtimeapi.Container
		for _, c := range d.containers() {
			if c.GetMetadata().GetName() == container && (newest == nil || c.CreatedAt > newest.CreatedAt) {
				newest = c
			}
		}
		if newest == nil {
			return false
		}
		resp, err := suite.rt.ContainerStatus(ctx(d.t), newest.Id, false)
		if err != nil || resp.GetStatus().GetStartedAt() == 0 {
			return false
		}
		s := resp.GetStatus()
		started = time.Unix(0, s.StartedAt)
		if s.FinishedAt != 0 {
			ended = time.Unix(0, s.FinishedAt)
		}
		return !finished || s.State == runtimeapi.ContainerState_CONTAINER_EXITED
	})
	return started, ended
}

// startedPromptly asserts that each container in next started within
// docsStepBound of the container it waits for: after started, or after it
// finished (a regular init container).
func (d *docsPod) startedPromptly(after string, afterFinished bool, next ...string) {
	d.t.Helper()
	d.startedWithin(docsStepBound, after, afterFinished, next...)
}

// startedWithin is startedPromptly with another bound (a step that waits
// for a probe as well).
func (d *docsPod) startedWithin(bound time.Duration, after string, afterFinished bool, next ...string) {
	d.t.Helper()
	if d.uid == "" {
		d.validated()
	}
	start, end := d.containerTimes(after, afterFinished)
	ref, what := start, "started"
	if afterFinished {
		ref, what = end, "finished"
	}
	for _, c := range next {
		s, _ := d.containerTimes(c, false)
		gap := s.Sub(ref)
		d.t.Logf("%s started %s after %s %s", c, gap.Round(time.Millisecond), after, what)
		require.LessOrEqual(d.t, gap, bound, "%s must start within %s of %s having %s (a step waited for a periodic resync)", c, bound, after, what)
		require.GreaterOrEqual(d.t, gap, time.Duration(0), "%s started before %s %s", c, after, what)
	}
}
