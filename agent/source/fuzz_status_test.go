package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
)

// FuzzPodStoreLoadStatus writes arbitrary bytes as the final status file
// of a stored pod and opens the store as a restarted daemon does. The file
// is the agent's own, but a crash, a disk error or a hand edit can leave
// anything there. It checks that opening never fails or panics because of
// it, that the pod always loads, and that the file is either used (a
// terminal phase, and saved again it reads back the same) or reported (one
// FileError naming its path, with a UTF-8 message) and ignored.
func FuzzPodStoreLoadStatus(f *testing.F) {
	f.Add([]byte(`{"uid":"UID","namespace":"default","name":"job","status":{"phase":"Succeeded"}}`))
	f.Add([]byte(`{"uid":"UID","namespace":"default","name":"job","status":{"phase":"Failed","reason":"Evicted","containerStatuses":[{"name":"c","state":{"terminated":{"exitCode":137}}}]}}`))
	f.Add([]byte(`{"uid":"UID","namespace":"default","name":"job","status":{"phase":"Running"}}`))
	f.Add([]byte(`{"uid":"other","namespace":"default","name":"job","status":{"phase":"Succeeded"}}`))
	f.Add([]byte(`{"uid":"UID","namespace":"default","name":"job","status":{"phase":"Failed","conditions":[],"message":"\u00e9"}}`))
	f.Add([]byte(`{`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		s, err := NewPodStore(dir, manifesttest.TestNode)
		if err != nil {
			t.Fatal(err)
		}
		pod, err := s.Add(manifesttest.APIPod("", "job", "c"))
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.ReplaceAll(string(data), "UID", string(pod.UID)))
		path := filepath.Join(dir, storeStatusDir, string(pod.UID)+".json")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}

		s2, err := NewPodStore(dir, manifesttest.TestNode)
		if err != nil {
			t.Fatalf("NewPodStore failed because of a status file: %v", err)
		}
		pods, podErrs := s2.List()
		if len(pods) != 1 || len(podErrs) != 0 {
			t.Fatalf("a status file changed the pods: %d pods, errors %v", len(pods), podErrs)
		}
		st, ok := s2.FinalStatus(pod.UID)
		errs := s2.FinalStatusErrors()
		switch {
		case ok && len(errs) > 0, !ok && len(errs) != 1:
			t.Fatalf("used %v and reported %d errors", ok, len(errs))
		case !ok:
			if errs[0].Path != path {
				t.Fatalf("error names %q, not %q", errs[0].Path, path)
			}
			if msg := errs[0].Err.Error(); msg == "" || !utf8.ValidString(msg) {
				t.Fatalf("message %q is empty or not UTF-8", msg)
			}
			return
		}
		if st.Phase != v1.PodSucceeded && st.Phase != v1.PodFailed {
			t.Fatalf("a status in phase %q was used", st.Phase)
		}
		if err := s2.SaveFinalStatus(pods[0], st); err != nil {
			t.Fatalf("a loaded status cannot be saved again: %v", err)
		}
		s3, err := NewPodStore(dir, manifesttest.TestNode)
		if err != nil {
			t.Fatal(err)
		}
		again, ok := s3.FinalStatus(pod.UID)
		if !ok || len(s3.FinalStatusErrors()) > 0 {
			t.Fatalf("a saved status does not load: %v", s3.FinalStatusErrors())
		}
		if !equality.Semantic.DeepEqual(st, again) {
			t.Fatalf("saved and loaded again, the status changed:\n%+v\n%+v", st, again)
		}
	})
}
