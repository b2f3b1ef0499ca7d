package agent

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/cri/critest"
)

// stream is one scripted GetContainerEvents connection: it delivers events,
// then ends with err, or stays open until cancelled when err is nil.
type stream struct {
	events []*runtimeapi.ContainerEventResponse
	err    error
}

// eventRuntime is the fake runtime with scripted event streams; once the
// script is used up, a connection stays open until cancelled.
type eventRuntime struct {
	*critest.FakeRuntime
	mu      sync.Mutex
	streams []stream
	calls   int
	// ended counts the connections that ended with their stream's err.
	ended int
}

func (r *eventRuntime) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, _ func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	r.mu.Lock()
	r.calls++
	var s stream
	if len(r.streams) > 0 {
		s, r.streams = r.streams[0], r.streams[1:]
	}
	r.mu.Unlock()
	for _, ev := range s.events {
		select {
		case ch <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.err != nil {
		r.mu.Lock()
		r.ended++
		r.mu.Unlock()
		return s.err
	}
	<-ctx.Done()
	return ctx.Err()
}

// lockedBuffer is a log sink safe for the watcher's goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func containerEvent(uid string, typ runtimeapi.ContainerEventType) *runtimeapi.ContainerEventResponse {
	ev := &runtimeapi.ContainerEventResponse{ContainerId: "c-" + uid, ContainerEventType: typ, CreatedAt: time.Now().UnixNano()}
	if uid != "" {
		ev.PodSandboxStatus = &runtimeapi.PodSandboxStatus{Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid}}
	}
	return ev
}

// metricOf reads one unlabelled sample from the agent's metrics text.
func metricOf(t *testing.T, a *Agent, name string) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, a.WriteMetrics(&buf))
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(buf.String())
	require.NotNil(t, m, "metric %s missing:\n%s", name, buf.String())
	return m[1]
}

func TestWatchContainerEvents(t *testing.T) {
	unimplemented := status.Error(codes.Unimplemented, "unknown method GetContainerEvents for service runtime.v1.RuntimeService")
	broken := status.Error(codes.Unavailable, "error reading from server: EOF")
	tests := []struct {
		name    string
		streams []stream
		// wantUIDs arrive on out in this order.
		wantUIDs []types.UID
		// returns: the watcher gives up by itself (no API).
		returns             bool
		wantConns, wantErrs string
		wantLog, wantNoLog  string
		wantFollowing       int
		wantCallsAtLeast    int
	}{
		{
			name:      "containerd 1.6: Unimplemented, left to the relist",
			streams:   []stream{{err: unimplemented}},
			returns:   true,
			wantConns: "0", wantErrs: "1",
			wantLog:       "Runtime does not stream container events; relying on the periodic relist",
			wantNoLog:     "Following the runtime's container events",
			wantFollowing: 0, wantCallsAtLeast: 1,
		},
		{
			name: "containerd 2.x: each pod's event is forwarded, events without a sandbox are not",
			streams: []stream{{events: []*runtimeapi.ContainerEventResponse{
				containerEvent("uid-a", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT),
				containerEvent("", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT),
				containerEvent("uid-b", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT),
			}}},
			wantUIDs:  []types.UID{"uid-a", "uid-b"},
			wantConns: "1", wantErrs: "0",
			wantLog:       "Following the runtime's container events",
			wantNoLog:     "does not stream",
			wantFollowing: 1, wantCallsAtLeast: 1,
		},
		{
			name: "a broken stream (containerd restarted) is reconnected",
			streams: []stream{
				{events: []*runtimeapi.ContainerEventResponse{containerEvent("uid-a", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)}, err: broken},
				{err: broken},
				{events: []*runtimeapi.ContainerEventResponse{containerEvent("uid-b", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)}},
			},
			wantUIDs:  []types.UID{"uid-a", "uid-b"},
			wantConns: "2", wantErrs: "2",
			wantLog:       "Following the runtime's container events",
			wantNoLog:     "does not stream",
			wantFollowing: 1, wantCallsAtLeast: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &eventRuntime{FakeRuntime: critest.New().Runtime, streams: tt.streams}
			logs := &lockedBuffer{}
			a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}},
				Deps{Runtime: rt, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := make(chan *runtimeapi.ContainerEventResponse)
			returned := make(chan struct{})
			go func() {
				a.watchContainerEvents(ctx, out)
				close(returned)
			}()

			for _, want := range tt.wantUIDs {
				select {
				case got := <-out:
					assert.Equal(t, want, types.UID(got.GetPodSandboxStatus().GetMetadata().GetUid()))
				case <-returned:
					t.Fatalf("watcher returned before delivering %s", want)
				case <-time.After(5 * time.Second):
					t.Fatalf("no event for %s within 5s", want)
				}
			}
			if tt.returns {
				select {
				case <-returned:
				case <-time.After(5 * time.Second):
					t.Fatal("the watcher kept going on a runtime without the API")
				}
			} else {
				select {
				case <-returned:
					t.Fatal("the watcher returned while the stream was open")
				case ev := <-out:
					t.Fatalf("unexpected event for %s", ev.GetPodSandboxStatus().GetMetadata().GetUid())
				case <-time.After(100 * time.Millisecond):
				}
				cancel()
				select {
				case <-returned:
				case <-time.After(5 * time.Second):
					t.Fatal("the watcher did not stop when its context ended")
				}
			}
			rt.mu.Lock()
			calls := rt.calls
			rt.mu.Unlock()
			assert.GreaterOrEqual(t, calls, tt.wantCallsAtLeast, "GetContainerEvents calls")
			assert.Equal(t, tt.wantConns, metricOf(t, a, "kubelet_evented_pleg_connection_success_count"))
			assert.Equal(t, tt.wantErrs, metricOf(t, a, "kubelet_evented_pleg_connection_error_count"))
			assert.Contains(t, logs.String(), tt.wantLog)
			assert.NotContains(t, logs.String(), tt.wantNoLog)
			assert.Equal(t, tt.wantFollowing, strings.Count(logs.String(), "Following the runtime's container events"),
				"the live stream is logged once, not per connection")
		})
	}
}

// switchableEvents is a fake runtime whose one event stream the test feeds
// and breaks at will.
type switchableEvents struct {
	*critest.FakeRuntime
	events chan *runtimeapi.ContainerEventResponse
	end    chan error
}

func (r *switchableEvents) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, _ func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	for {
		select {
		case ev := <-r.events:
			select {
			case ch <- ev:
			case <-ctx.Done():
				return ctx.Err()
			}
		case err := <-r.end:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestRun_RelistIsTheSafetyNetWhileEventsStream: while a runtime that
// sends every event to every subscriber streams container events, the
// sync loop lists the runtime at the period after an event or a failed
// relist, and otherwise every tenth period only; once the stream breaks
// (events may be lost), every period again. A runtime that does not
// (containerd 1.7) keeps the relist every period.
func TestRun_RelistIsTheSafetyNetWhileEventsStream(t *testing.T) {
	for _, tc := range []struct {
		version string
		evented bool
	}{{"v2.4.2", true}, {"1.7.27", false}} {
		t.Run("containerd "+tc.version, func(t *testing.T) {
			fake := critest.New()
			fake.Runtime.SetVersion("containerd", tc.version)
			clock := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			fake.Now = clock.Now
			rt := &switchableEvents{FakeRuntime: fake.Runtime, events: make(chan *runtimeapi.ContainerEventResponse), end: make(chan error)}
			a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}},
				Deps{Runtime: rt, Images: fake.Images, Clock: clock})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			defer func() { cancel(); <-done }()
			lists := func() int {
				n := 0
				for _, c := range fake.Calls() {
					if c == "ListPodSandbox" {
						n++
					}
				}
				return n
			}
			// step advances the fake clock by one relist period once the
			// loop's timer is armed, and returns the lists made once the
			// loop handled the period: it re-arms its timer after the
			// relist (while the stream is open, the timer is the clock's
			// only waiter).
			step := func() int {
				require.Eventually(t, clock.HasWaiters, 5*time.Second, time.Millisecond, "the loop's timer is armed")
				clock.Step(time.Second)
				require.Eventually(t, clock.HasWaiters, 5*time.Second, time.Millisecond, "the loop handled the period")
				return lists()
			}

			require.Equal(t, 1, step(), "no events yet: a relist every period")
			require.Equal(t, 2, step())

			rt.events <- containerEvent("uid-a", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
			require.Eventually(t, a.eventSeen.Load, 5*time.Second, time.Millisecond, "the event arrived")
			if !tc.evented {
				for i := 3; i <= 25; i++ {
					require.Equal(t, i, step(), "events that may not all reach this agent: every period")
				}
				return
			}
			require.Eventually(t, a.eventsLive.Load, 5*time.Second, time.Millisecond, "the first event makes the stream live")
			base := lists()
			assert.Equal(t, base+1, step(), "the period after an event relists (tick 3)")
			for i := 0; i < 30; i++ {
				step()
			}
			// 30 more periods, ticks 4..33 of the loop: a relist on ticks
			// 10, 20 and 30.
			assert.Equal(t, base+4, lists(), "while events stream and none comes, every tenth period")
			rt.events <- containerEvent("uid-a", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
			require.Eventually(t, a.eventSeen.Load, 5*time.Second, time.Millisecond)
			assert.Equal(t, base+5, step(), "an event: the next period relists (tick 34)")
			assert.Equal(t, base+5, step(), "then every tenth period again (tick 35)")
			fake.InjectError("ListPodSandbox", status.Error(codes.Unavailable, "containerd restarting"))
			rt.events <- containerEvent("uid-a", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
			require.Eventually(t, a.eventSeen.Load, 5*time.Second, time.Millisecond)
			assert.Equal(t, base+6, step(), "an event: tick 36 relists, and fails")
			assert.Equal(t, base+7, step(), "a failed relist: the next period relists again (tick 37)")
			assert.Equal(t, base+7, step(), "that one succeeded: tick 38 does not")

			rt.end <- status.Error(codes.Unavailable, "error reading from server: EOF")
			require.Eventually(t, func() bool { return !a.eventsLive.Load() }, 5*time.Second, time.Millisecond, "a broken stream is not live")
			// The watcher's reconnect waits on the clock too: step once and
			// wait for the relist itself.
			base = lists()
			clock.Step(time.Second)
			require.Eventually(t, func() bool { return lists() == base+1 }, 5*time.Second, time.Millisecond, "after the stream broke, the next period relists")
		})
	}
}

// The events of a worker's own start (issue #27): a sync ends by observing
// what it created and started, so those events, held while it was busy,
// do not wake it again; an event its observation has not seen does, busy
// or not.
func TestPodWorker_RuntimeEventWakesOnlyForWhatItHasNotSeen(t *testing.T) {
	sb := &runtimeapi.PodSandboxStatus{Id: "sb1", State: runtimeapi.PodSandboxState_SANDBOX_READY}
	ev := func(id string, typ runtimeapi.ContainerEventType, cs ...*runtimeapi.ContainerStatus) *runtimeapi.ContainerEventResponse {
		return &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ, PodSandboxStatus: sb, ContainersStatuses: cs}
	}
	ownStart := []*runtimeapi.ContainerEventResponse{
		ev("sb1", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT),
		ev("sb1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT),
		ev("c1", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, &runtimeapi.ContainerStatus{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_CREATED}),
		ev("c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, &runtimeapi.ContainerStatus{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING}),
	}
	exited := ev("c1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, &runtimeapi.ContainerStatus{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_EXITED})
	afterStart := &podState{
		sandboxes:  []*sandboxInfo{{id: "sb1", ready: true}},
		containers: []*containerInfo{{id: "c1", name: "app", sandboxID: "sb1", state: runtimeapi.ContainerState_CONTAINER_RUNNING}},
	}
	woken := func(w *podWorker) bool {
		select {
		case <-w.wake:
			return true
		default:
			return false
		}
	}
	newWorker := func() *podWorker { return &podWorker{wake: make(chan struct{}, 1), startTime: time.Now()} }

	t.Run("held while busy, covered by the closing observation", func(t *testing.T) {
		w := newWorker()
		w.busy = true
		for _, e := range ownStart {
			w.runtimeEvent(e)
		}
		assert.False(t, woken(w), "a busy worker is not woken by an event")
		w.setObserved(afterStart)
		w.setIdle()
		assert.False(t, woken(w), "its own start's events: no second sync")
	})
	t.Run("held while busy, not covered", func(t *testing.T) {
		w := newWorker()
		w.busy = true
		w.runtimeEvent(ownStart[0])
		w.runtimeEvent(exited)
		w.setObserved(afterStart)
		w.setIdle()
		assert.True(t, woken(w), "the exit came after the closing observation")
	})
	t.Run("held while busy, an exit the closing observation saw", func(t *testing.T) {
		// The container the sync started exited before its closing
		// observation: the sync planned without the exit, so the stop
		// wakes it (the restart's back-off, CrashLoopBackOff, is set there).
		w := newWorker()
		w.busy = true
		w.runtimeEvent(ownStart[3])
		w.runtimeEvent(exited)
		w.setObserved(&podState{
			sandboxes:  afterStart.sandboxes,
			containers: []*containerInfo{{id: "c1", name: "app", sandboxID: "sb1", state: runtimeapi.ContainerState_CONTAINER_EXITED}},
		})
		w.setIdle()
		assert.True(t, woken(w))
	})
	t.Run("held while busy, the sync observed nothing", func(t *testing.T) {
		w := newWorker()
		w.busy = true
		w.runtimeEvent(ownStart[0])
		w.setIdle()
		assert.True(t, woken(w))
	})
	t.Run("more held than kept", func(t *testing.T) {
		w := newWorker()
		w.busy = true
		for range maxHeldEvents + 1 {
			w.runtimeEvent(ownStart[3])
		}
		w.setObserved(afterStart)
		w.setIdle()
		assert.True(t, woken(w), "past maxHeldEvents the worker syncs whatever they said")
		w.busy = true
		w.runtimeEvent(ownStart[3])
		w.setIdle()
		assert.False(t, woken(w), "setIdle forgot what it looked at")
	})
	t.Run("idle", func(t *testing.T) {
		w := newWorker()
		w.runtimeEvent(ownStart[0])
		assert.True(t, woken(w), "nothing observed yet")
		w.setObserved(afterStart)
		for _, e := range ownStart {
			w.runtimeEvent(e)
		}
		assert.False(t, woken(w), "events the observation covers")
		w.runtimeEvent(exited)
		assert.True(t, woken(w), "an exit it has not seen")
	})
}

// Events a stream delivered before it broke reach the workers: the watcher
// is still handing the first to out when the stream's second event is
// buffered and the call returns, so both are ready at its next select.
// Before the drain, that select dropped the second about every other time
// (CI lost one on a busy machine, 2026-12-01).
func TestWatchContainerEvents_DeliversWhatCameBeforeTheStreamBroke(t *testing.T) {
	broken := status.Error(codes.Unavailable, "error reading from server: EOF")
	for range 20 {
		rt := &eventRuntime{FakeRuntime: critest.New().Runtime, streams: []stream{{events: []*runtimeapi.ContainerEventResponse{
			containerEvent("uid-a", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT),
			containerEvent("uid-b", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT),
		}, err: broken}}}
		a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}},
			Deps{Runtime: rt, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithCancel(context.Background())
		out := make(chan *runtimeapi.ContainerEventResponse)
		returned := make(chan struct{})
		go func() {
			a.watchContainerEvents(ctx, out)
			close(returned)
		}()
		require.Eventually(t, func() bool {
			rt.mu.Lock()
			defer rt.mu.Unlock()
			return rt.ended == 1
		}, 5*time.Second, time.Millisecond, "the stream did not end")
		for _, want := range []types.UID{"uid-a", "uid-b"} {
			select {
			case got := <-out:
				require.Equal(t, want, types.UID(got.GetPodSandboxStatus().GetMetadata().GetUid()))
			case <-time.After(5 * time.Second):
				t.Fatalf("no event for %s within 5s", want)
			}
		}
		cancel()
		<-returned
	}
}
