// Package hostile is a corpus of hostile or broken Pod manifests, each with
// the exact message minikubelet refuses it with: through the file sources
// (the manifest directory and `minikubelet run`) and through the API.
//
// A case is cases/NAME.yaml or cases/NAME.json, or a generator below for
// inputs too large to commit (the huge ones are built at test time), plus
//
//   - cases/NAME.err: the file sources' message, one problem per line, each
//     prefixed with the file's name (NAME.yaml or NAME.json);
//   - cases/NAME.api: the HTTP status code of POST
//     /api/v1/namespaces/default/pods with the case as the body, on the
//     first line, then the v1.Status message.
//
// The unit test of this package checks every case without root; the e2e
// test (test/e2e/hostile_test.go) submits them to a real daemon.
package hostile

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed cases
var files embed.FS

// Case is one hostile input.
type Case struct {
	// Name is the case's name; FileName its file name (Name plus .yaml or
	// .json), under which the file sources see it.
	Name, FileName string
	// Data is the input.
	Data []byte
	// ContentType is what the API is told the body is.
	ContentType string
	// WantFile is the exact message of the file sources, one problem per
	// line, each prefixed with FileName.
	WantFile string
	// WantCode and WantAPI are the API's HTTP status and Status message.
	WantCode int
	WantAPI  string
	// Generated cases are built by a generator, not read from a file.
	Generated bool
}

// MaxManifestBytes mirrors manifest.MaxManifestBytes (this package must not
// import agent: the tests import both and compare).
const MaxManifestBytes = 4 << 20

// podYAML is a valid pod with room for one more spec field and one more
// container field, and pod names a, b, …
func podYAML(name, specExtra, containerExtra string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n" + specExtra +
		"  containers:\n  - name: app\n    image: 127.0.0.1:5000/busybox:1.36\n" + containerExtra
}

// generators build the inputs too large to commit, by case name; the
// extension is the input's format.
var generators = map[string]func() []byte{
	// A file just over the limit: refused by its size, never parsed.
	"huge-file.yaml": func() []byte {
		head := podYAML("huge", "", "")
		pad := strings.Repeat("# padding padding padding padding padding padding padding padding\n", MaxManifestBytes/64)
		return []byte(head + pad)
	},
	// 8 MiB of one JSON string: refused by size.
	"huge-json-string.json": func() []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + strings.Repeat("x", 8<<20) + `"}}`)
	},
	// 100 000 nested YAML flow sequences in an annotation.
	"deep-nesting.yaml": func() []byte {
		const depth = 100_000
		return []byte(strings.Replace(podYAML("deep", "", ""), "  name: deep\n",
			"  name: deep\n  annotations:\n    a: "+strings.Repeat("[", depth)+strings.Repeat("]", depth)+"\n", 1))
	},
	// 20 000 nested JSON arrays.
	"deep-nesting-arrays.json": func() []byte {
		const depth = 20_000
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deep","annotations":{"a":` +
			strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}}`)
	},
	// 20 000 nested objects in a field the Pod type has.
	"deep-nesting-objects.json": func() []byte {
		const depth = 20_000
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deep"},"spec":` +
			strings.Repeat(`{"x":`, depth) + "1" + strings.Repeat("}", depth) + `}`)
	},
	// 5 000 small valid pods in one file.
	"multi-document-bomb.yaml": func() []byte {
		var b strings.Builder
		for i := range 5000 {
			b.WriteString(podYAML("bomb-"+strconv.Itoa(i), "", ""))
			b.WriteString("---\n")
		}
		return []byte(b.String())
	},
	// A million empty documents.
	"empty-document-bomb.yaml": func() []byte {
		return []byte(strings.Repeat("---\n", 1_000_000) + podYAML("empty-bomb", "", ""))
	},
	// A v1 List of 1 000 pods.
	"list-bomb.json": func() []byte {
		items := make([]string, 1000)
		for i := range items {
			items[i] = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"l` + strconv.Itoa(i) + `"},"spec":{"containers":[{"name":"app","image":"busybox"}]}}`
		}
		return []byte(`{"apiVersion":"v1","kind":"List","items":[` + strings.Join(items, ",") + `]}`)
	},
	// 1 000 containers in one pod.
	"thousand-containers.yaml": func() []byte {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: thousand\nspec:\n  containers:\n")
		for i := range 1000 {
			fmt.Fprintf(&b, "  - {name: c%d, image: 127.0.0.1:5000/busybox:1.36}\n", i)
		}
		return []byte(b.String())
	},
	// 1 000 init containers in one pod.
	"thousand-init-containers.yaml": func() []byte {
		var b strings.Builder
		b.WriteString(podYAML("thousand-init", "", ""))
		b.WriteString("  initContainers:\n")
		for i := range 1000 {
			fmt.Fprintf(&b, "  - {name: i%d, image: 127.0.0.1:5000/busybox:1.36}\n", i)
		}
		return []byte(b.String())
	},
	// A label value of 100 KiB.
	"huge-label-value.yaml": func() []byte {
		return []byte(strings.Replace(podYAML("huge-label", "", ""), "  name: huge-label\n",
			"  name: huge-label\n  labels:\n    app: "+strings.Repeat("v", 100<<10)+"\n", 1))
	},
	// A label key of 100 KiB (JSON: YAML keys are limited to 1 024 characters).
	"huge-label-key.json": func() []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"huge-label-key","labels":{"` + strings.Repeat("k", 100<<10) +
			`":"v"}},"spec":{"containers":[{"name":"app","image":"busybox"}]}}`)
	},
	// 300 KiB of annotations (the limit is 256 KiB in total).
	"huge-annotations.yaml": func() []byte {
		return []byte(strings.Replace(podYAML("huge-annotations", "", ""), "  name: huge-annotations\n",
			"  name: huge-annotations\n  annotations:\n    a: "+strings.Repeat("a", 150<<10)+"\n    b: "+strings.Repeat("b", 150<<10)+"\n", 1))
	},
	// 4 000 environment variables, 1.2 MiB of them. (Many more, shorter
	// ones are refused the same way, but parsing megabytes of YAML under
	// the race detector takes half a minute.)
	"huge-env-list.yaml": func() []byte {
		var b strings.Builder
		b.WriteString(podYAML("huge-env", "", "    env:\n"))
		value := strings.Repeat("x", 300)
		for i := range 4000 {
			fmt.Fprintf(&b, "    - {name: V%d, value: %s}\n", i, value)
		}
		return []byte(b.String())
	},
	// One environment variable of 200 KiB.
	"huge-env-value.yaml": func() []byte {
		return []byte(podYAML("huge-env-value", "", "    env:\n    - name: BIG\n      value: "+strings.Repeat("x", 200<<10)+"\n"))
	},
	// A 300-character pod name with a 300-character image.
	"huge-name.yaml": func() []byte {
		return []byte(podYAML(strings.Repeat("n", 300), "", ""))
	},
}

// Cases returns every case, sorted by name. It fails when a case lacks an
// input or one of its expected messages (update with the unit test's
// -update flag, then review the diff).
func Cases() ([]Case, error) {
	return load(false)
}

// CasesForUpdate is Cases that tolerates missing expected messages, for
// the unit test's -update.
func CasesForUpdate() ([]Case, error) {
	return load(true)
}

func load(partial bool) ([]Case, error) {
	inputs := map[string][]byte{} // file name → data (nil: generated)
	for name := range generators {
		inputs[name] = nil
	}
	entries, err := fs.ReadDir(files, "cases")
	if err != nil {
		return nil, fmt.Errorf("read the corpus: %w", err)
	}
	for _, e := range entries {
		ext := path.Ext(e.Name())
		if ext != ".yaml" && ext != ".json" {
			continue
		}
		if _, dup := inputs[e.Name()]; dup {
			return nil, fmt.Errorf("case %s is both a file and a generator", e.Name())
		}
		data, err := files.ReadFile("cases/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("read the corpus: %w", err)
		}
		inputs[e.Name()] = data
	}

	// Every expected message belongs to a case.
	for _, e := range entries {
		ext := path.Ext(e.Name())
		if ext != ".err" && ext != ".api" {
			continue
		}
		base := strings.TrimSuffix(e.Name(), ext)
		_, y := inputs[base+".yaml"]
		_, j := inputs[base+".json"]
		if !y && !j {
			return nil, fmt.Errorf("cases/%s belongs to no case: remove it", e.Name())
		}
	}

	var cases []Case
	names := map[string]bool{}
	for _, fileName := range slices.Sorted(mapKeys(inputs)) {
		ext := path.Ext(fileName)
		if name := strings.TrimSuffix(fileName, ext); names[name] {
			return nil, fmt.Errorf("two cases are named %s: their expected messages would be shared", name)
		} else {
			names[name] = true
		}
		c := Case{Name: strings.TrimSuffix(fileName, ext), FileName: fileName, Data: inputs[fileName], ContentType: "application/yaml"}
		if ext == ".json" {
			c.ContentType = "application/json"
		}
		if gen, ok := generators[fileName]; ok {
			c.Data, c.Generated = gen(), true
		}
		errText, errFile := files.ReadFile("cases/" + c.Name + ".err")
		apiText, errAPI := files.ReadFile("cases/" + c.Name + ".api")
		if (errFile != nil || errAPI != nil) && !partial {
			return nil, fmt.Errorf("case %s lacks its expected messages (cases/%s.err and .api): run go test ./test/hostile -update and review them", fileName, c.Name)
		}
		c.WantFile = strings.TrimSuffix(string(errText), "\n")
		code, msg, _ := strings.Cut(strings.TrimSuffix(string(apiText), "\n"), "\n")
		if errAPI == nil {
			if c.WantCode, err = strconv.Atoi(code); err != nil {
				return nil, fmt.Errorf("cases/%s.api: the first line must be the HTTP status code: %w", c.Name, err)
			}
		}
		c.WantAPI = msg
		cases = append(cases, c)
	}
	return cases, nil
}

// mapKeys iterates over the keys of m.
func mapKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// APIMessage is the .api file's text for a response.
func APIMessage(code int, msg string) string { return strconv.Itoa(code) + "\n" + msg + "\n" }
