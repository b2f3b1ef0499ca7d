package fingerprint

import (
	"sort"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A fingerprint is its parts, sorted and joined by ",": "s/<id>/<state>"
// per sandbox and "c/<id>/<state>" per container, the state by its CRI
// enum name. Equal fingerprints mean the same objects in the same states.

// Sandbox is one sandbox's part.
func Sandbox(id string, state runtimeapi.PodSandboxState) string {
	return string(AppendSandbox(nil, id, state))
}

// Container is one container's part.
func Container(id string, state runtimeapi.ContainerState) string {
	return string(AppendContainer(nil, id, state))
}

// AppendSandbox appends Sandbox(id, state) to b (the relister renders
// every relist's parts into one reused buffer).
func AppendSandbox(b []byte, id string, state runtimeapi.PodSandboxState) []byte {
	b = append(b, "s/"...)
	b = append(b, id...)
	b = append(b, '/')
	return append(b, state.String()...)
}

// AppendContainer appends Container(id, state) to b.
func AppendContainer(b []byte, id string, state runtimeapi.ContainerState) []byte {
	b = append(b, "c/"...)
	b = append(b, id...)
	b = append(b, '/')
	return append(b, state.String()...)
}

// Join sorts the parts (in place) and joins them.
func Join(parts []string) string {
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// lookup finds the part of the object id of the given kind ('s' or 'c') in
// fp and returns its state's name.
func lookup(fp string, kind byte, id string) (string, bool) {
	if id == "" {
		return "", false
	}
	for part := range strings.SplitSeq(fp, ",") {
		if len(part) > len(id)+3 && part[0] == kind && part[1] == '/' && part[2:2+len(id)] == id && part[2+len(id)] == '/' {
			return part[3+len(id):], true
		}
	}
	return "", false
}

// containerRank orders a container's states by its life: created, then
// running, then exited. Unknown has no place in it (-1).
func containerRank(name string) int {
	switch name {
	case runtimeapi.ContainerState_CONTAINER_CREATED.String():
		return 0
	case runtimeapi.ContainerState_CONTAINER_RUNNING.String():
		return 1
	case runtimeapi.ContainerState_CONTAINER_EXITED.String():
		return 2
	}
	return -1
}

// containerSeen reports whether fp holds container id in state s or in a
// later one of its life (an unknown state only as itself).
func containerSeen(fp, id string, s runtimeapi.ContainerState) bool {
	got, ok := lookup(fp, 'c', id)
	if !ok {
		return false
	}
	if got == s.String() {
		return true
	}
	want, have := containerRank(s.String()), containerRank(got)
	return want >= 0 && have >= 0 && have >= want
}

// sandboxSeen reports whether fp holds sandbox id in state s, or not ready
// where s is ready (a sandbox stopped since, which never becomes ready
// again).
func sandboxSeen(fp, id string, s runtimeapi.PodSandboxState) bool {
	got, ok := lookup(fp, 's', id)
	return ok && (got == s.String() || (s == runtimeapi.PodSandboxState_SANDBOX_READY && got == runtimeapi.PodSandboxState_SANDBOX_NOTREADY.String()))
}

// Covers reports whether an observation whose fingerprint is observed has
// already seen everything the event says: the event's own object in the
// state its type implies (created: listed; started: running or later;
// deleted: not listed), and the sandbox and container states the event
// carries (containerd 2.x sends the pod's sandbox status and its
// containers' statuses with each event), each in that state or a later
// one of its life. An event that names no object is never covered. A
// covered event came before the observation, or describes what it saw:
// syncing the pod again would find nothing new.
//
// A stop is never covered, even when the observation shows the exit: a
// container that a sync started and that exited before the sync's closing
// observation is in that observation, but the sync planned without its
// exit. Its restart back-off (the CrashLoopBackOff reason and its BackOff
// event), its OOM kill's event and the pod's next step come from the sync
// the stop wakes, as before events were filtered (review of issue #27's
// change).
func Covers(observed string, ev *runtimeapi.ContainerEventResponse) bool {
	id := ev.GetContainerId()
	if id == "" {
		return false
	}
	sb := ev.GetPodSandboxStatus()
	isSandbox := sb != nil && sb.GetId() == id
	kind := byte('c')
	if isSandbox {
		kind = 's'
	}
	_, listed := lookup(observed, kind, id)
	deleted := false
	switch ev.GetContainerEventType() {
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		deleted = true
		// A sandbox's event may come without its status: either kind.
		_, s := lookup(observed, 's', id)
		_, c := lookup(observed, 'c', id)
		if s || c {
			return false
		}
	case runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT:
		if !listed || (!isSandbox && !containerSeen(observed, id, runtimeapi.ContainerState_CONTAINER_CREATED)) {
			return false
		}
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		if !listed || (!isSandbox && !containerSeen(observed, id, runtimeapi.ContainerState_CONTAINER_RUNNING)) {
			return false
		}
	default: // a stop (see above), or a type this package does not know
		return false
	}
	// The deleted object's own status, if the event carries one, is what
	// it was before it went.
	if sb != nil && sb.GetId() != "" && !(deleted && isSandbox) && !sandboxSeen(observed, sb.GetId(), sb.GetState()) {
		return false
	}
	for _, c := range ev.GetContainersStatuses() {
		if !(deleted && c.GetId() == id) && !containerSeen(observed, c.GetId(), c.GetState()) {
			return false
		}
	}
	return true
}
