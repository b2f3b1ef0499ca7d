package fingerprint

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	ready    = runtimeapi.PodSandboxState_SANDBOX_READY
	notReady = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	created  = runtimeapi.ContainerState_CONTAINER_CREATED
	running  = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited   = runtimeapi.ContainerState_CONTAINER_EXITED
	unknown  = runtimeapi.ContainerState_CONTAINER_UNKNOWN

	evCreated = runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
	evStarted = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	evStopped = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	evDeleted = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
)

func TestRender(t *testing.T) {
	if got, want := Sandbox("sb1", ready), "s/sb1/SANDBOX_READY"; got != want {
		t.Errorf("Sandbox = %q, want %q", got, want)
	}
	if got, want := Container("c1", exited), "c/c1/CONTAINER_EXITED"; got != want {
		t.Errorf("Container = %q, want %q", got, want)
	}
	if got, want := string(AppendContainer([]byte("x"), "c1", running)), "xc/c1/CONTAINER_RUNNING"; got != want {
		t.Errorf("AppendContainer = %q, want %q", got, want)
	}
	if got, want := Join([]string{Container("c1", running), Sandbox("sb1", ready)}), "c/c1/CONTAINER_RUNNING,s/sb1/SANDBOX_READY"; got != want {
		t.Errorf("Join = %q, want %q", got, want)
	}
}

// ev is a containerd 2.x-shaped event: the object, its type, the pod's
// sandbox status and its containers' statuses.
func ev(id string, typ runtimeapi.ContainerEventType, sb *runtimeapi.PodSandboxStatus, cs ...*runtimeapi.ContainerStatus) *runtimeapi.ContainerEventResponse {
	return &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ, PodSandboxStatus: sb, ContainersStatuses: cs}
}

func sbs(id string, s runtimeapi.PodSandboxState) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{Id: id, State: s}
}

func cst(id string, s runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{Id: id, State: s}
}

func TestCovers(t *testing.T) {
	// What a worker observes at the end of the sync that created sandbox
	// sb1 and started c1 (and, in its first sandbox sb0, a dead c0).
	started := Join([]string{Sandbox("sb1", ready), Container("c1", running)})
	stopped := Join([]string{Sandbox("sb1", notReady), Container("c1", exited)})
	for _, tc := range []struct {
		name     string
		observed string
		ev       *runtimeapi.ContainerEventResponse
		want     bool
	}{
		// The events of the worker's own start: nothing new.
		{"sandbox created", started, ev("sb1", evCreated, sbs("sb1", ready)), true},
		{"sandbox started", started, ev("sb1", evStarted, sbs("sb1", ready)), true},
		{"container created", started, ev("c1", evCreated, sbs("sb1", ready), cst("c1", created)), true},
		{"container started", started, ev("c1", evStarted, sbs("sb1", ready), cst("c1", running)), true},
		{"created event without statuses", started, ev("c1", evCreated, nil), true},
		{"started event without statuses", started, ev("c1", evStarted, nil), true},
		// An older event after a newer observation: still nothing new.
		{"started event after the exit was seen", stopped, ev("c1", evStarted, sbs("sb1", ready), cst("c1", running)), true},
		// A stop, seen or not: the sync that saw it planned without it.
		{"container stopped, seen", stopped, ev("c1", evStopped, sbs("sb1", ready), cst("c1", exited)), false},
		{"sandbox stopped, seen", stopped, ev("sb1", evStopped, sbs("sb1", notReady), cst("c1", exited)), false},

		// What the observation has not seen.
		{"container exited", started, ev("c1", evStopped, sbs("sb1", ready), cst("c1", exited)), false},
		{"stopped event without statuses", started, ev("c1", evStopped, nil), false},
		{"sandbox stopped", started, ev("sb1", evStopped, sbs("sb1", notReady)), false},
		{"sandbox status not ready", started, ev("c1", evStarted, sbs("sb1", notReady), cst("c1", running)), false},
		{"a container the worker never saw", started, ev("c2", evCreated, sbs("sb1", ready), cst("c1", running), cst("c2", created)), false},
		{"another container's change in the statuses", started, ev("c1", evStarted, sbs("sb1", ready), cst("c1", running), cst("c3", running)), false},
		{"a sandbox the worker never saw", started, ev("sb2", evCreated, sbs("sb2", ready)), false},
		{"unknown state", started, ev("c1", evStarted, sbs("sb1", ready), cst("c1", unknown)), false},
		{"nothing observed", "", ev("c1", evCreated, nil), false},
		{"no object", started, ev("", evCreated, nil), false},
		{"unknown event type", started, ev("c1", runtimeapi.ContainerEventType(42), nil), false},

		// Deletions: seen when the object is gone from the observation.
		{"container deleted, seen gone", Sandbox("sb1", notReady), ev("c1", evDeleted, sbs("sb1", notReady), cst("c1", exited)), true},
		{"container deleted, still listed", stopped, ev("c1", evDeleted, sbs("sb1", notReady)), false},
		{"sandbox deleted, seen gone", "", ev("sb1", evDeleted, sbs("sb1", notReady)), true},
		{"sandbox deleted, still listed", stopped, ev("sb1", evDeleted, nil), false},

		// An ID that is a prefix of another is not that other.
		{"prefix of a listed ID", Join([]string{Sandbox("sb1", ready), Container("c10", running)}), ev("c1", evCreated, nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Covers(tc.observed, tc.ev); got != tc.want {
				t.Errorf("Covers(%q, %v) = %v, want %v", tc.observed, tc.ev, got, tc.want)
			}
		})
	}
}
