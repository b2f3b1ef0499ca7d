package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// crashLooper's container counts its runs in an emptyDir (which outlives
// the container's restarts), prints the run's number and exits 1: the
// output of a run names it.
func crashLooper(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptrTo[int64](1),
			Volumes:                       []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{{
				Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36",
				Command:      []string{"sh", "-c", `n=$(cat /d/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /d/n; echo "run-$n"; exit 1`},
				VolumeMounts: []v1.VolumeMount{{Name: "d", MountPath: "/d"}},
			}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// inBackOff reports whether the pod's container waits in CrashLoopBackOff
// after at least one restart (RESTARTS ≥ 1, as in issue #28).
func inBackOff(p *v1.Pod) bool {
	if p == nil || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	cs := p.Status.ContainerStatuses[0]
	return cs.RestartCount >= 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
}

// TestDaemon_LogsPreviousInCrashLoop: with a container in a crash loop's
// back-off (RESTARTS ≥ 1), `logs -p` prints the output of its last run,
// through the CLI and through the real kubectl over the daemon's TCP API,
// as with the kubelet (the instance lastState.terminated names). issue
// #28: both said "no previous instance of container "c"".
func TestDaemon_LogsPreviousInCrashLoop(t *testing.T) {
	const pod = "e2e-logs-prev"
	addr := "127.0.0.1:" + freeTCPPort(t)
	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	// A short back-off: the second crash comes 2 s after the first.
	d := newDaemon(t, []string{pod}, "--api-address", addr, "--admin-kubeconfig", kubeconfig, "--backoff-initial", "2s", "--backoff-max", "20s")
	d.start(t)
	waitTLS(t, addr)
	c, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // kubectl may have to be built
	defer cancel()
	_, err := d.api().CreatePod(c, crashLooper(pod))
	require.NoError(t, err)

	var kubectl string // built once the CLI's check is done
	k := func(args ...string) (string, error) {
		cmd := exec.CommandContext(c, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out.String())
		return out.String(), err
	}
	// Each check reads the restart count, then the log, then the count
	// again: the log is of the run that count names only if no restart
	// came in between (back-off: 2 s, then 4 s, 8 s...).
	check := func(name string, logs func() (string, error)) {
		t.Run(name, func(t *testing.T) {
			for attempt := 0; ; attempt++ {
				p := d.waitPod(t, pod, "in CrashLoopBackOff with RESTARTS >= 1", 2*time.Minute, inBackOff)
				restarts := p.Status.ContainerStatuses[0].RestartCount
				out, err := logs()
				after, gerr := d.api().GetPod(c, "default", pod)
				require.NoError(t, gerr)
				if !inBackOff(after) || after.Status.ContainerStatuses[0].RestartCount != restarts {
					require.Less(t, attempt, 5, "the container restarted during every attempt")
					continue
				}
				require.NoError(t, err, "logs -p in back-off: %s", out)
				// RESTARTS = r: r+1 runs so far, the last one dead.
				assert.Equal(t, "run-"+strconv.Itoa(int(restarts)+1)+"\n", out, "the last run's output (RESTARTS %d)", restarts)
				return
			}
		})
	}
	check("CLI", func() (string, error) {
		r := d.cli(t, "logs", pod, "-p")
		if r.code != 0 {
			return r.String(), fmt.Errorf("exit %d", r.code)
		}
		return r.stdout, nil
	})
	kubectl = kubectlBin(t)
	check("Kubectl", func() (string, error) { return k("logs", "-p", pod) })
	check("KubectlPreviousWithContainer", func() (string, error) { return k("logs", "--previous", pod, "-c", "c") })

	// A container that never restarted has no previous instance: the
	// kubelet's words, as a 400 kubectl prints.
	t.Run("NoPreviousIsTheKubeletsError", func(t *testing.T) {
		const other = "e2e-logs-prev-none"
		p := crashLooper(other)
		p.Spec.Containers[0].Command = []string{"sh", "-c", "echo up; sleep 3600"}
		p.Spec.Volumes, p.Spec.Containers[0].VolumeMounts = nil, nil
		_, err := d.api().CreatePod(c, p)
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = d.api().DeletePod(context.Background(), "default", other, nil)
			d.waitPod(t, other, "gone", time.Minute, func(p *v1.Pod) bool { return p == nil })
		})
		d.waitPod(t, other, "Running", 2*time.Minute, isRunning)
		out, err := k("logs", "-p", other)
		require.Error(t, err)
		assert.Contains(t, out, `previous terminated container "c" in pod "`+other+`" not found`)
	})
}

// TestDaemon_AgesSurviveRestart: a pod's creationTimestamp and
// status.startTime (AGE and Start Time) are the same after a daemon
// restart as before, for a pod of the local API and for a manifest-dir
// pod: issue #28 saw AGE 0s and Start Time the restart's time while the
// container said it started minutes before.
func TestDaemon_AgesSurviveRestart(t *testing.T) {
	const apiPod, staticPod = "e2e-age-api", "e2e-age-static"
	d := newDaemon(t, []string{apiPod, staticPod})
	d.start(t)
	c, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sleeper := func(name string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s/minikubelet/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, name, suite.registry)
	}
	require.NoError(t, os.WriteFile(filepath.Join(d.manifests, staticPod+".yaml"), []byte(sleeper(staticPod)), 0o644))
	api := crashLooper(apiPod)
	api.Spec.Volumes, api.Spec.Containers[0].VolumeMounts = nil, nil
	api.Spec.Containers[0].Command = []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}
	_, err := d.api().CreatePod(c, api)
	require.NoError(t, err)

	type ages struct{ created, started, containerStarted time.Time }
	read := func(name string) ages {
		p := d.waitPod(t, name, "Running", 2*time.Minute, isRunning)
		require.NotNil(t, p.Status.StartTime, name)
		require.NotNil(t, p.Status.ContainerStatuses[0].State.Running, name)
		return ages{p.CreationTimestamp.Time, p.Status.StartTime.Time, p.Status.ContainerStatuses[0].State.Running.StartedAt.Time}
	}
	before := map[string]ages{apiPod: read(apiPod), staticPod: read(staticPod)}
	t.Logf("before: %+v", before)
	// Long enough that a reset shows at the API's second precision.
	time.Sleep(3 * time.Second)
	d.stop(t)
	restarted := time.Now()
	d.start(t)
	after := map[string]ages{}
	for _, name := range []string{apiPod, staticPod} {
		got := read(name)
		after[name] = got
		b := before[name]
		assert.Equal(t, b.containerStarted, got.containerStarted, "%s: the same container runs (adopted)", name)
		// The restarted daemon takes a pod's start from its sandbox's
		// creation (the runtime keeps no earlier time), which can be a
		// few seconds after the first daemon accepted it; never the
		// restart's time.
		for what, pair := range map[string][2]time.Time{"creationTimestamp": {b.created, got.created}, "status.startTime": {b.started, got.started}} {
			was, now := pair[0], pair[1]
			assert.True(t, !now.Before(was) && now.Sub(was) <= 5*time.Second, "%s: %s %s, before the restart %s", name, what, now, was)
			assert.True(t, now.Before(restarted.Add(-2*time.Second)), "%s: %s %s is about the restart's time %s", name, what, now, restarted)
		}
		assert.False(t, got.started.After(got.containerStarted), "%s: the pod started (%s) before its container (%s)", name, got.started, got.containerStarted)
	}
	assert.Equal(t, before[apiPod].created, after[apiPod].created, "the local API's pod keeps its creationTimestamp exactly (its stored file's)")
	// What the user saw: AGE in get, Start Time in describe.
	out := d.cli(t, "get", "pods")
	require.Equal(t, 0, out.code, "%s", out)
	for _, line := range strings.Split(out.stdout, "\n") {
		if strings.HasPrefix(line, apiPod) || strings.HasPrefix(line, staticPod) {
			f := strings.Fields(line)
			age, err := time.ParseDuration(f[len(f)-1])
			require.NoError(t, err, "AGE of %q", line)
			assert.GreaterOrEqual(t, age, 3*time.Second, "AGE after the restart: %q", line)
		}
	}
	desc := d.cli(t, "describe", "pod", apiPod)
	require.Equal(t, 0, desc.code, "%s", desc)
	assert.Regexp(t, `Start Time:\s+`+regexp.QuoteMeta(after[apiPod].started.Local().Format(time.RFC1123Z)), desc.stdout)
}
