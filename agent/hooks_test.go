package agent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri"
)

const hookPod = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: demo}
spec:
  containers:
  - name: web
    image: reg.local/web:1
    ports: [{name: http, containerPort: 8080}]
`

// hookFixture is an agent with one created and started container in the
// fake runtime and an idle worker for its pod (no goroutine), for calling
// the hook functions directly.
type hookFixture struct {
	*harness
	pod *v1.Pod
	pw  *podWorker
	id  string
}

func newHookFixture(t *testing.T) *hookFixture {
	t.Helper()
	h := newHarness(t)
	pod := testPod(t, hookPod)
	ctx := context.Background()
	sbID, err := h.fake.Runtime.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
	}, "")
	require.NoError(t, err)
	id, err := h.fake.Runtime.CreateContainer(ctx, sbID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "web"},
		Image:    &runtimeapi.ImageSpec{Image: "reg.local/web:1"},
	}, nil)
	require.NoError(t, err)
	require.NoError(t, h.fake.Runtime.StartContainer(ctx, id))
	h.fake.Reset()
	return &hookFixture{harness: h, pod: pod, pw: newPodWorker(h.agent, pod), id: id}
}

// events returns "Reason: message" of every recorded event.
func (r *recorder) eventTexts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

// hostPort splits an httptest server URL.
func hostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	host, port, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(rawURL, "http://"), "https://"))
	require.NoError(t, err)
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	return host, n
}

// requestLog is an httptest handler recording the requests it got.
type requestLog struct {
	mu   sync.Mutex
	reqs []*http.Request
	code int
}

func (l *requestLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.reqs = append(l.reqs, r.Clone(context.Background()))
	code := l.code
	l.mu.Unlock()
	if code == 0 {
		code = http.StatusOK
	}
	w.WriteHeader(code)
	_, _ = w.Write([]byte("body"))
}

func (l *requestLog) last(t *testing.T) *http.Request {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.NotEmpty(t, l.reqs)
	return l.reqs[len(l.reqs)-1]
}

func TestRunLifecycleHandler_HTTPGet(t *testing.T) {
	tests := []struct {
		name    string
		code    int
		tls     bool
		scheme  v1.URIScheme
		named   bool // port by the container's port name
		host    bool // set httpGet.host instead of the pod IP
		headers []v1.HTTPHeader
		closed  bool // server gone: transport error
		wantErr string
		wantUA  string
		check   func(t *testing.T, r *http.Request)
	}{
		{name: "200", code: 200, wantUA: "kube-lifecycle/1.36"},
		{name: "status codes are ignored", code: 500, wantUA: "kube-lifecycle/1.36"},
		{name: "404 too", code: 404, wantUA: "kube-lifecycle/1.36"},
		{name: "named port", named: true, wantUA: "kube-lifecycle/1.36"},
		{name: "explicit host", host: true, wantUA: "kube-lifecycle/1.36"},
		{
			name:    "headers, user agent kept",
			headers: []v1.HTTPHeader{{Name: "X-Token", Value: "t1"}, {Name: "User-Agent", Value: "mine/1"}, {Name: "Host", Value: "example.test"}},
			wantUA:  "mine/1",
			check: func(t *testing.T, r *http.Request) {
				assert.Equal(t, "t1", r.Header.Get("X-Token"))
				assert.Equal(t, "example.test", r.Host)
				assert.Equal(t, "*/*", r.Header.Get("Accept"))
			},
		},
		{name: "https, certificate not checked", tls: true, scheme: v1.URISchemeHTTPS, wantUA: "kube-lifecycle/1.36"},
		{name: "transport error fails", closed: true, wantErr: `HTTP lifecycle hook (/hook?x=1) for Container "web" in Pod "web_demo(`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newHookFixture(t)
			log := &requestLog{code: tt.code}
			var srv *httptest.Server
			if tt.tls {
				srv = httptest.NewTLSServer(log)
			} else {
				srv = httptest.NewServer(log)
			}
			defer srv.Close()
			host, port := hostPort(t, srv.URL)
			if tt.closed {
				srv.Close()
			}
			c := f.pod.Spec.Containers[0].DeepCopy()
			g := &v1.HTTPGetAction{Path: "/hook?x=1", Port: intstr.FromInt32(int32(port)), Scheme: tt.scheme, HTTPHeaders: tt.headers}
			if tt.named {
				c.Ports[0].ContainerPort = int32(port)
				g.Port = intstr.FromString("http")
			}
			podIP := host
			if tt.host {
				g.Host, podIP = host, "192.0.2.1" // the pod IP must not be used
			}
			msg, err := f.agent.runLifecycleHandler(context.Background(), f.pw, c, f.id, podIP, &v1.LifecycleHandler{HTTPGet: g})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, msg, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Empty(t, msg)
			r := log.last(t)
			assert.Equal(t, "/hook", r.URL.Path)
			assert.Equal(t, "x=1", r.URL.RawQuery)
			assert.Equal(t, tt.wantUA, r.Header.Get("User-Agent"))
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func TestRunLifecycleHandler_HTTPSFallsBackToHTTP(t *testing.T) {
	f := newHookFixture(t)
	log := &requestLog{}
	srv := httptest.NewServer(log)
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	g := &v1.HTTPGetAction{
		Path: "/stop", Port: intstr.FromInt32(int32(port)), Scheme: v1.URISchemeHTTPS,
		HTTPHeaders: []v1.HTTPHeader{{Name: "Authorization", Value: "Bearer secret"}, {Name: "X-Keep", Value: "1"}},
	}
	msg, err := f.agent.runLifecycleHandler(context.Background(), f.pw, &f.pod.Spec.Containers[0], f.id, host, &v1.LifecycleHandler{HTTPGet: g})
	require.NoError(t, err, msg)
	r := log.last(t)
	assert.Equal(t, "/stop", r.URL.Path)
	assert.Empty(t, r.Header.Get("Authorization"), "credentials are not sent over plain HTTP")
	assert.Equal(t, "1", r.Header.Get("X-Keep"))
	texts := f.rec.eventTexts()
	require.Len(t, texts, 1)
	assert.True(t, strings.HasPrefix(texts[0], "LifecycleHTTPFallback: "), texts[0])
	assert.Equal(t, v1.EventTypeWarning, f.pw.eventList()[0].Type)
}

func TestRunLifecycleHandler_Exec(t *testing.T) {
	tests := []struct {
		name     string
		stdout   string
		stderr   string
		err      error
		wantMsgs []string // substrings of the failure message; nil = success
	}{
		{name: "exit 0", stdout: "fine"},
		{
			name: "non-zero exit", stdout: "out;", stderr: "boom", err: &cri.ExitError{ExitCode: 2},
			wantMsgs: []string{`Exec lifecycle hook ([/bin/hook arg]) for Container "web" in Pod "web_demo(`, "command exited with code 2", `message: "out;boom"`},
		},
		{name: "runtime error", err: assert.AnError, wantMsgs: []string{assert.AnError.Error()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newHookFixture(t)
			f.fake.SetExecHandler(func(string, []string) ([]byte, []byte, error) {
				return []byte(tt.stdout), []byte(tt.stderr), tt.err
			})
			h := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/hook", "arg"}}}
			msg, err := f.agent.runLifecycleHandler(context.Background(), f.pw, &f.pod.Spec.Containers[0], f.id, "", h)
			assert.Equal(t, []string{"ExecSync web /bin/hook arg"}, f.fake.Calls())
			if tt.wantMsgs == nil {
				assert.NoError(t, err)
				assert.Empty(t, msg)
				return
			}
			require.Error(t, err)
			for _, want := range tt.wantMsgs {
				assert.Contains(t, msg, want)
			}
		})
	}
}

func TestRunLifecycleHandler_Sleep(t *testing.T) {
	f := newHookFixture(t)
	c := &f.pod.Spec.Containers[0]

	// A cancelled context (the container is being killed) ends the sleep
	// with a failure.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msg, err := f.agent.runLifecycleHandler(ctx, f.pw, c, f.id, "", &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}})
	require.Error(t, err)
	assert.Contains(t, msg, "Sleep lifecycle hook (5)")
	assert.Contains(t, msg, "container terminated before sleep hook finished")

	// Zero seconds returns at once.
	_, err = f.agent.runLifecycleHandler(context.Background(), f.pw, c, f.id, "", &v1.LifecycleHandler{Sleep: &v1.SleepAction{}})
	require.NoError(t, err)

	// Otherwise it waits on the agent's clock.
	done := make(chan error, 1)
	go func() {
		_, err := f.agent.runLifecycleHandler(context.Background(), f.pw, c, f.id, "", &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}})
		done <- err
	}()
	for !f.clock.HasWaiters() {
		runtime.Gosched()
	}
	f.clock.Step(4 * time.Second)
	select {
	case <-done:
		t.Fatal("sleep ended early")
	default:
	}
	f.clock.Step(time.Second)
	require.NoError(t, <-done)
}

func TestRunLifecycleHandler_TCPSocketFails(t *testing.T) {
	f := newHookFixture(t)
	msg, err := f.agent.runLifecycleHandler(context.Background(), f.pw, &f.pod.Spec.Containers[0], f.id, "",
		&v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}})
	require.Error(t, err)
	assert.Contains(t, msg, "tcpSocket is not supported for lifecycle hooks")
	assert.Empty(t, f.fake.Calls())
}

// lifecyclePod is hookPod with lifecycle hooks set after loading: the
// manifest loader refuses lifecycle until support.go lists it.
func lifecyclePod(t *testing.T, lc *v1.Lifecycle) *v1.Pod {
	t.Helper()
	pod := testPod(t, hookPod)
	pod.Spec.Containers[0].Lifecycle = lc
	return pod
}

func TestAgent_PostStartHookFailureKillsContainer(t *testing.T) {
	h := newHarness(t)
	h.fake.SetExecHandler(func(_ string, cmd []string) ([]byte, []byte, error) {
		return []byte("no config"), nil, &cri.ExitError{ExitCode: 1}
	})
	pod := lifecyclePod(t, &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/init-hook"}}}})
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "PostStartHookError", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "PostStartHookError"
	})
	ws := p.Status.ContainerStatuses[0].State.Waiting
	assert.Contains(t, ws.Message, `Exec lifecycle hook ([/bin/init-hook]) for Container "web"`)
	assert.Contains(t, ws.Message, `message: "no config"`)
	assert.Equal(t, int32(137), p.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode, "the container was killed")

	calls := without(h.fake.Calls(), observeCalls...)
	start := indexOf(calls, "StartContainer web")
	exec := indexOf(calls, "ExecSync web /bin/init-hook")
	stop := indexOf(calls, "StopContainer web timeout=30")
	require.True(t, start >= 0 && exec >= 0 && stop >= 0, "calls: %v", calls)
	assert.Less(t, start, exec)
	assert.Less(t, exec, stop)

	texts := h.rec.eventTexts()
	assert.Contains(t, texts, "Killing: FailedPostStartHook")
	found := false
	for _, e := range texts {
		if strings.HasPrefix(e, "FailedPostStartHook: Exec lifecycle hook") {
			found = true
		}
	}
	assert.True(t, found, "events: %v", texts)
}

func TestAgent_PostStartHookSuccess(t *testing.T) {
	h := newHarness(t)
	pod := lifecyclePod(t, &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/ok"}}}})
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	assert.NotNil(t, p.Status.ContainerStatuses[0].State.Running)
	// The pull runs alongside sandbox creation; the rest is in order.
	calls := without(h.fake.Calls(), append(observeCalls, "PullImage", "RunPodSandbox")...)
	assert.Equal(t, []string{"CreateContainer web attempt=0", "StartContainer web", "ExecSync web /bin/ok"}, calls)
	assert.NotContains(t, h.rec.reasons(), "FailedPostStartHook")
}

// teardown removes the pod and waits for its worker to finish.
func (h *harness) teardown(t *testing.T, pod *v1.Pod) {
	t.Helper()
	done := h.agent.PodDone(pod.UID)
	require.NotNil(t, done)
	h.agent.SetPods(nil)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("teardown did not finish")
	}
}

func TestAgent_PreStopHookRunsBeforeStop(t *testing.T) {
	h := newHarness(t)
	// The hook takes 3 s of the 30 s grace period.
	h.fake.SetExecHandler(func(_ string, cmd []string) ([]byte, []byte, error) {
		h.clock.Step(3 * time.Second)
		return nil, nil, nil
	})
	pod := lifecyclePod(t, &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain"}}}})
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.fake.Reset()
	h.teardown(t, pod)

	calls := without(h.fake.Calls(), observeCalls...)
	exec := indexOf(calls, "ExecSync web /bin/drain")
	stop := indexOf(calls, "StopContainer web timeout=27")
	require.True(t, exec >= 0 && stop >= 0, "calls: %v", calls)
	assert.Less(t, exec, stop)
	assert.Contains(t, h.rec.eventTexts(), "Killing: Stopping container web")
	assert.NotContains(t, h.rec.reasons(), "FailedPreStopHook")

	assert.NotContains(t, calls, "StopContainer web timeout=30", "the hook's time comes off the grace period")
}

func TestAgent_FailedPreStopHookStillStops(t *testing.T) {
	h := newHarness(t)
	h.fake.SetExecHandler(func(_ string, cmd []string) ([]byte, []byte, error) {
		return nil, []byte("drain failed"), &cri.ExitError{ExitCode: 3}
	})
	pod := lifecyclePod(t, &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain"}}}})
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.fake.Reset()
	h.teardown(t, pod)

	calls := without(h.fake.Calls(), observeCalls...)
	assert.Less(t, indexOf(calls, "ExecSync web /bin/drain"), indexOf(calls, "StopContainer web timeout=30"))
	assert.Contains(t, calls, "StopContainer web timeout=30")
	found := false
	for _, e := range h.rec.eventTexts() {
		if strings.HasPrefix(e, "FailedPreStopHook: ") && strings.Contains(e, `message: "drain failed"`) {
			found = true
		}
	}
	assert.True(t, found, "events: %v", h.rec.eventTexts())
}

func TestKillContainer_PreStopFromAnnotation(t *testing.T) {
	h := newHarness(t)
	pod := lifecyclePod(t, &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain", "--fast"}}}})
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.agent.stopWorkers()
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")

	// A spec that no longer names the container: the hook comes from the
	// container's annotation.
	other := pod.DeepCopy()
	other.Spec.Containers[0].Name = "renamed"
	other.Spec.Containers[0].Lifecycle = nil
	pw := newPodWorker(h.agent, other)
	h.fake.Reset()
	require.NoError(t, h.agent.killContainer(context.Background(), pw, id, "web", "", 10))
	assert.Equal(t, []string{"ContainerStatus web", "ExecSync web /bin/drain --fast", "StopContainer web timeout=10"}, h.fake.Calls())
}

func TestKillContainer_PreStopBoundedByGrace(t *testing.T) {
	f := newHookFixture(t)
	// A 60 s sleep hook with a 5 s grace period: the hook is cut off after
	// 5 s and the runtime still gets the 2 s minimum.
	f.pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 60}}}
	done := make(chan error, 1)
	go func() { done <- f.agent.killContainer(context.Background(), f.pw, f.id, "web", "", 5) }()
	// Advance the clock by exactly the grace period (5 s, whenever someone
	// waits on it). A killer that waited for the whole 60 s hook would
	// then never return.
	for stepped := 0; stepped < 5; {
		select {
		case err := <-done:
			t.Fatalf("killContainer returned after %d s of a 5 s grace period: %v", stepped, err)
		default:
		}
		if f.clock.HasWaiters() {
			f.clock.Step(time.Second)
			stepped++
		}
		runtime.Gosched()
	}
	select {
	case err := <-done:
		require.NoError(t, err)
		assert.Equal(t, []string{"StopContainer web timeout=2"}, f.fake.Calls())
	case <-time.After(10 * time.Second):
		t.Fatal("the hook was waited for beyond the grace period")
	}
}

func TestKillContainer_NoHookWithoutGrace(t *testing.T) {
	f := newHookFixture(t)
	f.pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain"}}}}
	require.NoError(t, f.agent.killContainer(context.Background(), f.pw, f.id, "web", "custom reason", 0))
	assert.Equal(t, []string{"StopContainer web timeout=2"}, f.fake.Calls())
	assert.Equal(t, []string{"Killing: custom reason"}, f.rec.eventTexts())
}

func TestGenerateContainerConfig_PreStopAnnotation(t *testing.T) {
	h := newHarness(t)
	pod := lifecyclePod(t, &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("http")}}})
	cfg, err := h.agent.generateContainerConfig(pod, &pod.Spec.Containers[0], podspec.ContainerTypeRegular, 0, "img", "10.0.0.1", nil, nil)
	require.NoError(t, err)
	got := podspec.ContainerFromAnnotations("web", cfg.Annotations)
	assert.Equal(t, pod.Spec.Containers[0].Lifecycle.PreStop, got.Lifecycle.PreStop)
	assert.Equal(t, pod.Spec.Containers[0].Ports, got.Ports)

	plain := testPod(t, hookPod)
	cfg, err = h.agent.generateContainerConfig(plain, &plain.Spec.Containers[0], podspec.ContainerTypeRegular, 0, "img", "10.0.0.1", nil, nil)
	require.NoError(t, err)
	assert.NotContains(t, cfg.Annotations, podspec.AnnotationPreStopHandler)
}

func TestAgent_PostStartHookAbandonedWhenAgentStops(t *testing.T) {
	h := newHarness(t)
	entered, release := make(chan struct{}), make(chan struct{})
	h.fake.SetExecHandler(func(string, []string) ([]byte, []byte, error) {
		close(entered)
		<-release
		return nil, nil, &cri.ExitError{ExitCode: 1} // as if cut off
	})
	pod := lifecyclePod(t, &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/slow"}}}})
	h.agent.SetPods([]*v1.Pod{pod})
	<-entered
	h.agent.mu.Lock()
	w := h.agent.workers[pod.UID]
	h.agent.mu.Unlock()
	w.cancel() // the agent stops; pods keep running
	close(release)
	h.agent.stopWorkers()
	assert.NotContains(t, strings.Join(h.fake.Calls(), "\n"), "StopContainer")
	assert.NotContains(t, h.rec.reasons(), "FailedPostStartHook")
}

// A pod torn down publishes, before its containers are removed, their final
// states and a terminal phase (the kubelet's SyncTerminatingPod): a cluster
// pod a finalizer keeps shows its containers terminated (conformance:
// "Lifecycle Sleep Hook ... valid prestop hook using sleep action", which
// waits for that state).
func TestAgent_TeardownPublishesStoppedContainers(t *testing.T) {
	h := newHarness(t)
	pod := lifecyclePod(t, &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 1}}})
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	done := h.agent.PodDone(pod.UID)
	h.agent.SetPods(nil)
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		case <-time.After(20 * time.Millisecond):
			h.clock.Step(500 * time.Millisecond) // the sleep hook's second
		}
	}
	h.rec.mu.Lock()
	last := h.rec.statuses[len(h.rec.statuses)-1]
	h.rec.mu.Unlock()
	require.Len(t, last.Status.ContainerStatuses, 1)
	term := last.Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, term, "the container's final state: %+v", last.Status.ContainerStatuses[0].State)
	assert.False(t, term.FinishedAt.IsZero())
	assert.Contains(t, []v1.PodPhase{v1.PodSucceeded, v1.PodFailed}, last.Status.Phase, "a stopped pod does not restart: its phase is terminal")
}

// A deletion with a shorter grace period cuts a kill under way short: a
// preStop sleep hook started with the pod's 100 s ends at the new 3 s
// deadline, and the runtime gets the 2 s minimum (the kubelet's pod workers
// restart a termination with a shorter grace period; conformance: "Lifecycle
// Sleep Hook ... reduce GracePeriodSeconds during runtime").
func TestKillContainer_ShorterDeletionGraceCutsPreStopShort(t *testing.T) {
	f := newHookFixture(t)
	f.pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 50}}}
	done := make(chan error, 1)
	start := f.clock.Now()
	go func() { done <- f.agent.killContainer(context.Background(), f.pw, f.id, "web", "", 100) }()
	// Let the hook run 2 s, then delete with grace 3.
	for stepped := 0; stepped < 2; {
		if f.clock.HasWaiters() {
			f.clock.Step(time.Second)
			stepped++
		}
		runtime.Gosched()
	}
	f.pw.setDeletion(ptr.To[int64](3), f.clock.Now(), true)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-done:
			require.NoError(t, err)
			took := f.clock.Since(start)
			assert.GreaterOrEqual(t, took, 5*time.Second, "the hook ran until the new deadline")
			assert.Less(t, took, 10*time.Second, "not the 50 s sleep nor the 100 s grace")
			assert.Equal(t, []string{"StopContainer web timeout=2"}, f.fake.Calls())
			return
		case <-deadline:
			t.Fatalf("the kill was not cut short; fake time passed: %s", f.clock.Since(start))
		default:
		}
		if f.clock.HasWaiters() {
			f.clock.Step(500 * time.Millisecond)
		}
		time.Sleep(time.Millisecond)
	}
}
