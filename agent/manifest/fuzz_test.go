package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	strictjson "sigs.k8s.io/json"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/manifest/decodeerr"
	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
)

// FuzzPrepareObjects feeds arbitrary bytes through the chain every source
// uses (decode, defaults, validation: PrepareObjects for the manifest
// directory and `minikubelet run`; DecodeManifest then SetPodDefaults and
// ValidatePod for the API's store) and checks that it never panics, that
// a refusal is a *ManifestError whose every problem is located (see
// unlocated), and that an accepted pod is accepted again after a round
// trip through its own defaulted form. The seed corpus is every fixture of
// testdata/manifests plus testdata/fuzz/FuzzPrepareObjects.
func FuzzPrepareObjects(f *testing.F) {
	for _, dir := range []string{"valid", "invalid"} {
		for _, ext := range []string{"*.yaml", "*.json"} {
			files, err := filepath.Glob(filepath.Join("testdata", "manifests", dir, ext))
			if err != nil {
				f.Fatal(err)
			}
			for _, file := range files {
				data, err := os.ReadFile(file)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, cms, secrets, err := manifest.PrepareObjects(data, "fuzz.yaml", manifesttest.TestNode)
		if err != nil {
			if pods != nil || cms != nil || secrets != nil {
				t.Fatalf("objects returned with an error: %v", err)
			}
			if !errors.Is(err, manifest.ErrInvalidManifest) {
				t.Fatalf("refusal is not ErrInvalidManifest: %v", err)
			}
			if bad := manifesttest.Unlocated(err); len(bad) > 0 {
				t.Fatalf("problems that name no field path, line or document:\n%s", strings.Join(bad, "\n"))
			}
			for _, p := range err.(*manifest.ManifestError).Problems {
				if !utf8.ValidString(p) {
					t.Fatalf("problem is not valid UTF-8: %q", p)
				}
			}
		} else if len(pods)+len(cms)+len(secrets) == 0 {
			t.Fatal("no objects and no error")
		}
		// What was accepted stays accepted in its stored (defaulted) form.
		for _, p := range pods {
			stored, err := manifest.EncodeStoredPod(p)
			if err != nil {
				t.Fatalf("encode accepted pod: %v", err)
			}
			if _, err := manifest.PrepareManifest(stored, "fuzz.yaml", manifesttest.TestNode); err != nil {
				t.Fatalf("accepted pod refused after a round trip: %v\n%s", err, stored)
			}
		}

		// The API's decoding of a JSON body (api.Server.createPod): its
		// refusal names a field, a byte offset, or that it is no object.
		var apiPod v1.Pod
		if _, err := strictjson.UnmarshalStrict(data, &apiPod); err != nil {
			msg := decodeerr.Problem(data, reflect.TypeFor[v1.Pod](), nil, err)
			if !manifesttest.FieldProblemRE.MatchString(msg) && !manifesttest.APILocatedRE.MatchString(msg) {
				t.Fatalf("API decode error names no field or offset: %s", msg)
			}
		}

		// The API's store: decode, then default and validate each pod.
		raw, err := manifest.DecodeManifest(data, "api")
		if err != nil {
			if bad := manifesttest.Unlocated(err); len(bad) > 0 {
				t.Fatalf("DecodeManifest: problems that name no field path, line or document:\n%s", strings.Join(bad, "\n"))
			}
			return
		}
		for _, p := range raw {
			manifest.SetPodDefaults(p, "api", manifesttest.TestNode)
			_ = manifest.ValidatePod(p)
		}
	})
}
