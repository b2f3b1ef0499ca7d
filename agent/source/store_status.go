package source

// The final status of the pods accepted through the API. The local API plays
// the API server's part for its pods, and the API server keeps a terminal
// pod's status: a kubelet that restarts reads the phase back and never starts
// a terminal pod again. Without it, a restarted daemon found a local pod that
// had completed (and whose containers GC had reclaimed), or that had been
// evicted, with nothing left in the runtime, and ran it again: a
// restartPolicy Never job ran twice, an evicted pod came back.
//
// So, once a pod's worker finishes it, its final status is stored beside the
// pod, in <dir>/status/<uid>.json (written as the pods are: temp file, fsync,
// rename, fsync of the directory, mode 0600). The file is keyed to the pod's
// UID: a replaced pod (a changed pod gets a new UID) or a pod added again
// after a delete with an explicit new UID does not inherit it. It goes with
// the pod: a Delete (or a replace) removes it in the same commit, and a file
// whose UID no stored pod has (a crash between the two removals) is removed
// when the store opens, so an identical pod added again later (same derived
// UID) starts afresh.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/safepath"
)

// storeStatusDir is the subdirectory of the store directory holding the
// final statuses; List skips directories, so it never reads as a pod.
const storeStatusDir = "status"

// maxStatusFileBytes bounds the read of one final status file, and the
// write: a status is a few KiB, and one whose containers' messages make it
// larger is stored with them trimmed (marshalStatusBounded); anything
// larger is not one the agent wrote.
const maxStatusFileBytes = 1 << 20

// storedStatus is the content of a final status file.
type storedStatus struct {
	// UID, Namespace and Name identify the pod; UID must match the file's
	// name.
	UID       types.UID `json:"uid"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	// Status is the pod's final status, in a terminal phase.
	Status v1.PodStatus `json:"status"`
}

// statusFileName is the file of the final status of pod uid. A valid UID
// (manifest's uidRE: alphanumerics and '-') is a plain file name.
func statusFileName(uid types.UID) string { return string(uid) + ".json" }

// FinalStatus returns the stored final status of the API pod uid (a copy),
// or false when none is stored (or its file could not be used:
// FinalStatusErrors reports it).
func (s *PodStore) FinalStatus(uid types.UID) (v1.PodStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.final[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *st.DeepCopy(), true
}

// FinalStatusErrors returns the final status files that could not be used
// when the store opened (corrupt, too large, a symlink), by path, still
// present: their pods have no final status and run as if they had not
// finished. They are not in Snapshot's Errors, which lists the files of
// pods that cannot run: the daemon logs these once.
func (s *PodStore) FinalStatusErrors() []FileError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedErrors(s.badStatus)
}

// SaveFinalStatus stores st as the final status of pod, which must be a
// stored pod (same namespace, name and UID) and st in a terminal phase. It
// returns once the file is durable. A pod no longer stored (deleted or
// replaced meanwhile) wraps ErrPodNotFound and nothing is written.
func (s *PodStore) SaveFinalStatus(pod *v1.Pod, st v1.PodStatus) error {
	key := pod.Namespace + "/" + pod.Name
	if st.Phase != v1.PodSucceeded && st.Phase != v1.PodFailed {
		return fmt.Errorf("store final status of pod %s: phase %q is not terminal", key, st.Phase)
	}
	if !statusKeyValid(pod) {
		return fmt.Errorf("store final status of pod %s: %w", key, ErrPodNotFound)
	}
	ss := &storedStatus{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Status: *st.DeepCopy()}
	data, err := marshalStatusBounded(ss) // may trim ss.Status's messages
	if err != nil {
		return fmt.Errorf("store final status of pod %s: %w", key, err)
	}
	if err := os.MkdirAll(s.statusDir(), 0o700); err != nil {
		return fmt.Errorf("store final status of pod %s: %w", key, err)
	}
	name := statusFileName(pod.UID)
	tmp, err := s.writeTemp(s.statusDir(), name, data)
	if err != nil {
		return fmt.Errorf("store final status of pod %s: %w", key, err)
	}
	saved := ss.Status // as stored: what a restarted daemon reads back
	uid := pod.UID
	op := &storeOp{dir: s.statusDir(), name: name, tmp: tmp, what: "final status of pod " + key, notFound: ErrPodNotFound,
		statusOf: storeFileName(pod.Namespace, pod.Name), uid: uid,
		apply: func() { s.final[uid] = &saved }}
	return s.commit(op)
}

// marshalStatusBounded returns the JSON of ss, at most maxStatusFileBytes,
// so the store reads back every file it writes (a larger one is ignored,
// and the restarted daemon would run the finished pod again). The
// containers' messages are the pod's bytes: a termination message is up
// to 4 KiB a container of anything, which JSON may escape six-fold ('<'
// is \u003c), and a pod has up to 100 init, 100 app and any number of
// ephemeral containers, each with a state and a last state. So when the
// status does not fit, those messages are cut to their last
// trimmedMessageBytes (a termination message is its file's tail), then
// dropped; ss.Status is changed to what is stored. The agent's statuses
// already share 12 KiB of messages among a pod's init and app containers,
// as the kubelet's (termmsg.Limit), but each of any
// number of ephemeral containers keeps a share too, so the file's bound
// is still applied here, where a larger file would make the status
// unusable.
func marshalStatusBounded(ss *storedStatus) ([]byte, error) {
	data, err := json.Marshal(ss)
	for _, keep := range []int{trimmedMessageBytes, 0} {
		if err != nil || len(data) <= maxStatusFileBytes {
			return data, err
		}
		trimContainerMessages(&ss.Status, keep)
		data, err = json.Marshal(ss)
	}
	if err == nil && len(data) > maxStatusFileBytes {
		err = fmt.Errorf("the status is %d bytes even without its containers' messages, more than %d", len(data), maxStatusFileBytes)
	}
	return data, err
}

// trimmedMessageBytes is what marshalStatusBounded first keeps of each
// container message of a status too large to store.
const trimmedMessageBytes = 256

// trimContainerMessages cuts every container state's message in st to its
// last keep bytes (whole UTF-8 characters).
func trimContainerMessages(st *v1.PodStatus, keep int) {
	trim := func(s string) string {
		if len(s) <= keep {
			return s
		}
		i := len(s) - keep
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		return s[i:]
	}
	state := func(cs *v1.ContainerState) {
		if cs.Waiting != nil {
			cs.Waiting.Message = trim(cs.Waiting.Message)
		}
		if cs.Terminated != nil {
			cs.Terminated.Message = trim(cs.Terminated.Message)
		}
	}
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
}

// statusKeyValid reports whether pod's UID, namespace and name are what
// a stored pod has (none of them could then be a path).
func statusKeyValid(pod *v1.Pod) bool {
	return validStatusUID(pod.UID) && len(validation.IsDNS1123Label(pod.Namespace)) == 0 && len(validation.IsDNS1123Subdomain(pod.Name)) == 0
}

// validStatusUID reports whether uid can name a status file: what
// manifest validation accepts as a UID (alphanumerics and '-', at most 128).
func validStatusUID(uid types.UID) bool {
	u := string(uid)
	if u == "" || len(u) > 128 || u[0] == '-' || u[len(u)-1] == '-' {
		return false
	}
	for _, c := range u {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// statusDir is the directory of the final statuses.
func (s *PodStore) statusDir() string { return filepath.Join(s.dir, storeStatusDir) }

// checkStatus refuses a status op whose pod is not stored with its UID, or
// whose pod file this batch changed before it (a delete, a replace: the
// pod the worker finished is gone).
func (s *PodStore) checkStatus(o *storeOp, touched map[string]bool) error {
	if p := s.pods[o.statusOf]; p == nil || p.UID != o.uid || touched[o.statusOf] {
		return fmt.Errorf("%s: the pod is no longer stored: %w", o.what, o.notFound)
	}
	return nil
}

// staleStatusesLocked drops from memory the final statuses whose UID no
// stored pod has (deleted or replaced) and returns their files; s.mu is
// held.
func (s *PodStore) staleStatusesLocked() []string {
	if len(s.final) == 0 && len(s.badStatus) == 0 {
		return nil
	}
	held := make(map[types.UID]bool, len(s.pods))
	for _, p := range s.pods {
		held[p.UID] = true
	}
	var stale []string
	for uid := range s.final {
		if !held[uid] {
			delete(s.final, uid)
			stale = append(stale, filepath.Join(s.statusDir(), statusFileName(uid)))
		}
	}
	for path := range s.badStatus {
		if uid := types.UID(strings.TrimSuffix(filepath.Base(path), ".json")); !held[uid] {
			delete(s.badStatus, path)
			stale = append(stale, path)
		}
	}
	return stale
}

// removeStatusFiles removes the files of stale statuses (best effort: a
// file left behind is removed when the store next opens, as its UID has no
// pod) and reports whether it removed any.
func removeStatusFiles(paths []string) bool {
	removed := false
	for _, p := range paths {
		if err := os.Remove(p); err == nil {
			removed = true
		}
	}
	return removed
}

// loadStatuses reads the final status files of the stored pods, removing
// those whose UID no stored pod has (and leftover temporary files); a file
// that cannot be used is returned as a FileError and ignored (the pod then
// runs as if it had never finished).
func (s *PodStore) loadStatuses() (map[types.UID]*v1.PodStatus, []FileError) {
	final := map[types.UID]*v1.PodStatus{}
	dir := s.statusDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return final, nil
	}
	if err != nil {
		return final, []FileError{{Path: dir, Err: fmt.Errorf("read final pod statuses: %w", err)}}
	}
	held := map[types.UID]*v1.Pod{}
	for _, p := range s.pods {
		held[p.UID] = p
	}
	var errs []FileError
	removed := false
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		uid := types.UID(strings.TrimSuffix(name, ".json"))
		if strings.HasPrefix(name, storeTempPrefix) || (strings.HasSuffix(name, ".json") && held[uid] == nil && validStatusUID(uid)) {
			// A crash's leftover, or the status of a pod deleted or
			// replaced (a crash between the two removals).
			if os.Remove(path) == nil {
				removed = true
			}
			continue
		}
		if !strings.HasSuffix(name, ".json") || !validStatusUID(uid) {
			continue // not the store's
		}
		st, err := readStatusFile(path, held[uid])
		if err != nil {
			errs = append(errs, FileError{Path: path, Err: err})
			continue
		}
		final[uid] = st
	}
	if removed {
		_ = s.syncDir(dir) // best effort: a file back after a crash is removed again
	}
	return final, errs
}

// readStatusFile reads one final status file of pod: bounded, never
// through a symlink, and checked (its pod, a terminal phase).
func readStatusFile(path string, pod *v1.Pod) (*v1.PodStatus, error) {
	data, err := safepath.ReadFile(path, maxStatusFileBytes)
	if err != nil {
		return nil, fmt.Errorf("final status of pod %s/%s ignored (the pod runs as if it had not finished): %w", pod.Namespace, pod.Name, err)
	}
	var ss storedStatus
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ss); err != nil {
		return nil, fmt.Errorf("final status of pod %s/%s ignored (the pod runs as if it had not finished): %w: %w", pod.Namespace, pod.Name, err, manifest.ErrInvalidManifest)
	}
	switch {
	case ss.UID != pod.UID || ss.Namespace != pod.Namespace || ss.Name != pod.Name:
		return nil, fmt.Errorf("final status of pod %s/%s ignored (the pod runs as if it had not finished): it names pod %s/%s (uid %s): %w", pod.Namespace, pod.Name, ss.Namespace, ss.Name, ss.UID, manifest.ErrInvalidManifest)
	case ss.Status.Phase != v1.PodSucceeded && ss.Status.Phase != v1.PodFailed:
		return nil, fmt.Errorf("final status of pod %s/%s ignored (the pod runs as if it had not finished): phase %q is not terminal: %w", pod.Namespace, pod.Name, ss.Status.Phase, manifest.ErrInvalidManifest)
	}
	return &ss.Status, nil
}
