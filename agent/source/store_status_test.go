package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
)

// completedStatus is the final status of a pod whose one container exited 0.
func completedStatus() v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodSucceeded,
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "PodCompleted"}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "hello", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", FinishedAt: metav1.Unix(1700000000, 0)}}}}}
}

// TestPodStore_FinalStatus: the final status of a stored pod is kept
// across a reopen, keyed to the pod's UID, and goes with the pod.
func TestPodStore_FinalStatus(t *testing.T) {
	s, dir := newTestStore(t)
	pod, err := s.Add(manifesttest.APIPod("", "job", "hello"))
	require.NoError(t, err)
	drain(t, s)
	_, ok := s.FinalStatus(pod.UID)
	require.False(t, ok, "no status before the pod finished")

	require.NoError(t, s.SaveFinalStatus(pod, completedStatus()))
	path := filepath.Join(dir, storeStatusDir, string(pod.UID)+".json")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	select {
	case <-s.Updates():
		t.Fatal("a final status is no change of the pod set")
	default:
	}
	got, ok := s.FinalStatus(pod.UID)
	require.True(t, ok)
	assert.Equal(t, completedStatus(), got)

	// A restarted daemon reads it back, with the same pod.
	s2, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	pods, errs := s2.List()
	require.Empty(t, errs)
	require.Len(t, pods, 1)
	got, ok = s2.FinalStatus(pods[0].UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodSucceeded, got.Phase)
	assert.Equal(t, int32(0), got.ContainerStatuses[0].State.Terminated.ExitCode)
	assert.Equal(t, "Completed", got.ContainerStatuses[0].State.Terminated.Reason)
	assert.True(t, got.ContainerStatuses[0].State.Terminated.FinishedAt.Equal(&metav1.Time{Time: metav1.Unix(1700000000, 0).Time}))
	assert.Empty(t, s2.Snapshot().Errors)
	assert.Empty(t, s2.FinalStatusErrors())

	// Deleting the pod removes its status, durably.
	require.NoError(t, s2.Delete("default", "job"))
	_, ok = s2.FinalStatus(pod.UID)
	assert.False(t, ok)
	_, err = os.Stat(path)
	assert.True(t, errors.Is(err, os.ErrNotExist), "status file left: %v", err)

	// The same pod added again (same derived UID) starts afresh.
	again, err := s2.Add(manifesttest.APIPod("", "job", "hello"))
	require.NoError(t, err)
	require.Equal(t, pod.UID, again.UID)
	_, ok = s2.FinalStatus(again.UID)
	assert.False(t, ok)

	// A status saved for a pod no longer stored is refused.
	require.NoError(t, s2.Delete("default", "job"))
	err = s2.SaveFinalStatus(pod, completedStatus())
	assert.ErrorIs(t, err, ErrPodNotFound)
	_, err = os.Stat(path)
	assert.True(t, errors.Is(err, os.ErrNotExist))
	// And a phase that is not terminal.
	again, err = s2.Add(manifesttest.APIPod("", "job", "hello"))
	require.NoError(t, err)
	assert.ErrorContains(t, s2.SaveFinalStatus(again, v1.PodStatus{Phase: v1.PodRunning}), "not terminal")
}

// TestPodStore_FinalStatusReplaced: a pod deleted and created again with
// another content (kubectl replace --force: a new UID) does not inherit
// the old pod's final status, whose file goes; an update in place keeps
// it (the same pod).
func TestPodStore_FinalStatusReplaced(t *testing.T) {
	s, dir := newTestStore(t)
	old, err := s.Add(manifesttest.APIPod("", "job", "hello"))
	require.NoError(t, err)
	require.NoError(t, s.SaveFinalStatus(old, completedStatus()))

	upd := manifesttest.APIPod("", "job", "hello")
	upd.UID = old.UID
	upd.Labels = map[string]string{"run": "1"}
	_, changed, err := s.UpdatePod(upd, nil)
	require.NoError(t, err)
	require.True(t, changed)
	_, ok := s.FinalStatus(old.UID)
	assert.True(t, ok, "an update in place keeps the final status")

	next := manifesttest.APIPod("", "job", "hello")
	next.Labels = map[string]string{"run": "2"}
	require.NoError(t, s.Delete("default", "job"))
	repl, err := s.Add(next)
	require.NoError(t, err)
	require.NotEqual(t, old.UID, repl.UID)
	_, ok = s.FinalStatus(repl.UID)
	assert.False(t, ok, "the replacement inherits nothing")
	_, ok = s.FinalStatus(old.UID)
	assert.False(t, ok, "the old pod's status went with it")
	_, err = os.Stat(filepath.Join(dir, storeStatusDir, string(old.UID)+".json"))
	assert.True(t, errors.Is(err, os.ErrNotExist))

	// The old pod's worker finishing late stores nothing.
	assert.ErrorIs(t, s.SaveFinalStatus(old, completedStatus()), ErrPodNotFound)
}

// TestPodStore_FinalStatusStaleAndCorrupt: opening the store removes the
// status of a pod it no longer holds (a crash between the removals), and
// reports a corrupt status file without failing; the pod then has no
// final status (it runs as if it had not finished).
func TestPodStore_FinalStatusStaleAndCorrupt(t *testing.T) {
	s, dir := newTestStore(t)
	a, err := s.Add(manifesttest.APIPod("", "a", "hello"))
	require.NoError(t, err)
	b, err := s.Add(manifesttest.APIPod("", "b", "hello"))
	require.NoError(t, err)
	require.NoError(t, s.SaveFinalStatus(a, completedStatus()))
	require.NoError(t, s.SaveFinalStatus(b, completedStatus()))
	statusDir := filepath.Join(dir, storeStatusDir)
	// A crash: pod a's file went, its status stayed; a temporary file too.
	require.NoError(t, os.Remove(filepath.Join(dir, "default_a.yaml")))
	require.NoError(t, os.WriteFile(filepath.Join(statusDir, storeTempPrefix+"x"), []byte("{"), 0o600))

	corrupt := map[string]func(path string) error{
		"not JSON": func(p string) error { return os.WriteFile(p, []byte("{\"uid\":"), 0o600) },
		"unknown field": func(p string) error {
			return os.WriteFile(p, []byte(`{"uid":"`+string(b.UID)+`","namespace":"default","name":"b","status":{"phase":"Succeeded"},"x":1}`), 0o600)
		},
		"another pod": func(p string) error {
			return os.WriteFile(p, []byte(`{"uid":"`+string(a.UID)+`","namespace":"default","name":"a","status":{"phase":"Succeeded"}}`), 0o600)
		},
		"not terminal": func(p string) error {
			return os.WriteFile(p, []byte(`{"uid":"`+string(b.UID)+`","namespace":"default","name":"b","status":{"phase":"Running"}}`), 0o600)
		},
		"too large": func(p string) error { return os.WriteFile(p, []byte(strings.Repeat(" ", maxStatusFileBytes+1)), 0o600) },
		"symlink": func(p string) error {
			target := filepath.Join(t.TempDir(), "elsewhere.json")
			if err := os.WriteFile(target, []byte(`{"uid":"`+string(b.UID)+`","namespace":"default","name":"b","status":{"phase":"Succeeded"}}`), 0o600); err != nil {
				return err
			}
			_ = os.Remove(p)
			return os.Symlink(target, p)
		},
	}
	bPath := filepath.Join(statusDir, string(b.UID)+".json")
	first := true
	for name, write := range corrupt {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, write(bPath))
			s2, err := NewPodStore(dir, "node-1")
			require.NoError(t, err, "a corrupt status never fails the store")
			if first {
				first = false
				_, err := os.Stat(filepath.Join(statusDir, string(a.UID)+".json"))
				assert.True(t, errors.Is(err, os.ErrNotExist), "stale status of a pod no longer stored kept: %v", err)
				_, err = os.Stat(filepath.Join(statusDir, storeTempPrefix+"x"))
				assert.True(t, errors.Is(err, os.ErrNotExist), "temporary file kept")
			}
			_, ok := s2.FinalStatus(b.UID)
			assert.False(t, ok, "a corrupt status is ignored")
			pods, podErrs := s2.List()
			assert.Len(t, pods, 1, "the pod itself loads")
			assert.Empty(t, podErrs)
			assert.Empty(t, s2.Snapshot().Errors, "no pod file is bad: nothing listed as an unusable manifest")
			errs := s2.FinalStatusErrors()
			require.Len(t, errs, 1, "reported")
			assert.Equal(t, bPath, errs[0].Path)
			assert.Contains(t, errs[0].Err.Error(), "final status of pod default/b ignored")
			if name != "too large" && name != "symlink" {
				assert.ErrorIs(t, errs[0].Err, manifest.ErrInvalidManifest)
			}

			// The pod finishing again stores a good status over it and
			// clears the report.
			require.NoError(t, s2.SaveFinalStatus(pods[0], completedStatus()))
			_, ok = s2.FinalStatus(b.UID)
			assert.True(t, ok)
			assert.Empty(t, s2.FinalStatusErrors())
			fi, err := os.Lstat(bPath)
			require.NoError(t, err)
			assert.True(t, fi.Mode().IsRegular(), "the symlink was replaced, not followed")
		})
	}
}
