package source

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
)

// storeWholeFile starts the store's own problem of a pod file as a whole
// (it has no better place than the file FileError.Path names).
const storeWholeFile = "a stored pod file must hold one Pod, not "

// FuzzPodStoreLoad writes one arbitrary file into a pod store directory
// (the pods, the ConfigMaps or the Secrets), under an arbitrary name, and
// opens the store as a restarted daemon does. The files under the root dir
// are the agent's own, but a crash, a disk error or a hand edit can leave
// anything there. It checks that:
//   - opening never fails and never panics because of one file's content;
//   - the file is either loaded (one object) or reported (one FileError
//     naming its path, errors.Is ErrInvalidManifest, valid UTF-8, and for
//     a pod every problem located: a field path, a YAML line, or the file
//     as a whole);
//   - a loaded object lives in the file its namespace and name give, and
//     its stored form is a fixed point: encoded again and loaded again it
//     encodes to the same bytes.
func FuzzPodStoreLoad(f *testing.F) {
	for _, name := range []string{"pod-basic.yaml", "configmap-volume.yaml"} {
		if data, err := os.ReadFile(filepath.Join("manifest", "testdata", "manifests", "valid", name)); err == nil {
			f.Add(data, "default_x.yaml", uint8(0))
		}
	}
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: busybox\n"), "default_p.yaml", uint8(0))
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: other\nspec:\n  nodeName: elsewhere\n  containers:\n  - name: c\n    image: busybox\n"), "other_p.yaml", uint8(0))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: default\ndata:\n  k: v\n"), "default_cm.yaml", uint8(1))
	f.Add([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: default\ndata:\n  k: dg==\n"), "default_s.yaml", uint8(2))
	f.Add([]byte("---\n---\n"), "default_p.yaml", uint8(0))
	f.Add([]byte("{"), "default_cm.yaml", uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, name string, kind uint8) {
		// A plain file name the store reads: no directory, not hidden,
		// ending in .yaml.
		name = strings.NewReplacer("/", "", "\x00", "").Replace(name)
		if len(name) > 100 {
			name = name[:100]
		}
		name = strings.TrimSuffix(name, ".yaml")
		if name == "" || strings.HasPrefix(name, ".") {
			name = "x" + name
		}
		name += ".yaml"
		dir := t.TempDir()
		sub := []string{"", storeConfigMapDir, storeSecretDir}[kind%3]
		path := filepath.Join(dir, sub, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Skip("file name the filesystem refuses") // e.g. too long in bytes
		}

		s, err := NewPodStore(dir, manifesttest.TestNode)
		if err != nil {
			t.Fatalf("NewPodStore failed because of one file: %v", err)
		}
		pods, podErrs := s.List()
		cms, secrets, cfgErrs := s.ListConfigData()
		errs := append(podErrs, cfgErrs...)
		if n := len(pods) + len(cms) + len(secrets) + len(errs); n != 1 {
			t.Fatalf("one file gave %d pods, %d ConfigMaps, %d Secrets and %d errors", len(pods), len(cms), len(secrets), len(errs))
		}
		for _, fe := range errs {
			if fe.Path != path {
				t.Fatalf("error names %q, not the file %q: %v", fe.Path, path, fe.Err)
			}
			if !errors.Is(fe.Err, manifest.ErrInvalidManifest) {
				t.Fatalf("refusal of %s is not ErrInvalidManifest: %v", name, fe.Err)
			}
			if msg := fe.Err.Error(); msg == "" || !utf8.ValidString(msg) {
				t.Fatalf("refusal message %q is empty or not UTF-8", msg)
			}
			if sub != "" {
				continue
			}
			var me *manifest.ManifestError
			if errors.As(fe.Err, &me) {
				var bad []string
				for _, p := range manifesttest.Unlocated(fe.Err) {
					if !strings.HasPrefix(p, storeWholeFile) {
						bad = append(bad, p)
					}
				}
				if len(bad) > 0 {
					t.Fatalf("problems that name no field path, line or document:\n%s", strings.Join(bad, "\n"))
				}
			}
		}
		for _, p := range pods {
			if want := storeFileName(p.Namespace, p.Name); want != name {
				t.Fatalf("pod %s/%s loaded from %s", p.Namespace, p.Name, name)
			}
			if p.Annotations[AnnotationConfigSource] != SourceAPI {
				t.Fatalf("loaded pod's source %q", p.Annotations[AnnotationConfigSource])
			}
			// The creation time is the file's, a server field the stored
			// form leaves out (storedForm).
			if p.CreationTimestamp.IsZero() {
				t.Fatalf("loaded pod %s/%s has no creationTimestamp", p.Namespace, p.Name)
			}
			p = p.DeepCopy()
			p.CreationTimestamp = metav1.Time{}
			once, err := manifest.EncodeStoredPod(p)
			if err != nil {
				t.Fatalf("encode loaded pod: %v", err)
			}
			again, err := s.prepare(once)
			if err != nil {
				t.Fatalf("loaded pod refused in its stored form: %v\n%s", err, once)
			}
			twice, err := manifest.EncodeStoredPod(again)
			if err != nil {
				t.Fatalf("encode reloaded pod: %v", err)
			}
			if !bytes.Equal(once, twice) {
				t.Fatalf("stored form is no fixed point:\n%s\n---\n%s", once, twice)
			}
		}
		for _, cm := range cms {
			checkConfigFixedPoint(t, name, cm.Namespace, cm.Name, cm, &v1.ConfigMap{})
		}
		for _, sec := range secrets {
			checkConfigFixedPoint(t, name, sec.Namespace, sec.Name, sec, &v1.Secret{})
		}
	})
}

// checkConfigFixedPoint checks that a loaded ConfigMap or Secret came from
// its own file and decodes from its stored form to the same stored form.
func checkConfigFixedPoint(t *testing.T, file, namespace, name string, obj, fresh any) {
	t.Helper()
	if want := storeFileName(namespace, name); want != file {
		t.Fatalf("%s/%s loaded from %s", namespace, name, file)
	}
	once, err := encodeStoredConfig(obj)
	if err != nil {
		t.Fatalf("encode loaded object: %v", err)
	}
	if err := decodeStoredConfig(once, fresh); err != nil {
		t.Fatalf("loaded object refused in its stored form: %v\n%s", err, once)
	}
	twice, err := encodeStoredConfig(fresh)
	if err != nil {
		t.Fatalf("encode reloaded object: %v", err)
	}
	if !bytes.Equal(once, twice) {
		t.Fatalf("stored form is no fixed point:\n%s\n---\n%s", once, twice)
	}
}
