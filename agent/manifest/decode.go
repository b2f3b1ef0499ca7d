package manifest

// Over 600 lines: strict decoding of every form a manifest takes (YAML and
// JSON, lists, multi-document files, ConfigMaps and Secrets beside pods),
// with the line and document of each error.

// This file is step 1 of the data path: it turns the bytes of a manifest
// (the file given to `minikubelet run`) into Pods, strictly. Defaulting lives
// in defaults.go, validation in validate.go and the list of fields minikubelet
// honours in support.go; PrepareManifest chains the three.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	yamlv3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/agent/manifest/decodeerr"
)

// ErrInvalidManifest classifies every error returned by DecodeManifest,
// LoadManifestFile (except a failed read) and PrepareManifest: the input was
// refused before anything was created. Check it with errors.Is.
var ErrInvalidManifest = errors.New("invalid manifest")

// ManifestError lists every problem found in one manifest input. Its Error
// text has one problem per line, each prefixed with the source, so that a
// user sees everything that is wrong at once.
type ManifestError struct {
	// Source names the input (usually its path); empty when unknown.
	Source string
	// Problems are the messages, each already prefixed with its document
	// ("document 2: ") when the input had several documents.
	Problems []string
}

// Error returns one line per problem, each prefixed with the source.
func (e *ManifestError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if e.Source != "" {
			b.WriteString(e.Source)
			b.WriteString(": ")
		}
		b.WriteString(p)
	}
	return b.String()
}

// Is reports ErrInvalidManifest as the class of every ManifestError.
func (e *ManifestError) Is(target error) bool { return target == ErrInvalidManifest }

// manifestPod is one Pod decoded from an input, with where it came from so
// later errors can point back at it.
type manifestPod struct {
	// pod is the decoded Pod; nil for a ConfigMap or Secret document.
	pod *v1.Pod
	// cm and secret hold a ConfigMap or Secret document (PrepareObjects).
	cm     *v1.ConfigMap
	secret *v1.Secret
	// where is "document N" when the input held several documents, else "".
	where string
	// itemPath is "items[i]" for a Pod inside a v1 List, else nil.
	itemPath *field.Path
}

// prefix returns the location prefix ("document 2: ") for problems of this pod.
func (m manifestPod) prefix() string {
	if m.where == "" {
		return ""
	}
	return m.where + ": "
}

// DecodeManifest decodes a YAML or JSON byte stream holding one or more
// documents (YAML `---` separators; a JSON object, or a v1 List of Pods, is
// also accepted) into Pods.
//
// Decoding is strict: an unknown or duplicated field is an error naming its
// path (`spec.containers[0].imagePullPolicyy: unknown field`). Objects other
// than apiVersion v1 kind Pod are refused. Empty documents are skipped; an
// input without any Pod is an error. Every problem is reported, prefixed by
// source and, when there are several documents, by the document number
// (counting non-empty documents from 1). The returned error is a
// *ManifestError.
func DecodeManifest(data []byte, source string) ([]*v1.Pod, error) {
	mps, problems := decodeManifest(data)
	if len(problems) > 0 {
		return nil, &ManifestError{Source: source, Problems: problems}
	}
	pods := make([]*v1.Pod, 0, len(mps))
	for _, mp := range mps {
		pods = append(pods, mp.pod)
	}
	return pods, nil
}

// LoadManifestFile reads the manifest at path (ReadManifestFile) and
// decodes it with DecodeManifest, using path as the source.
func LoadManifestFile(path string) ([]*v1.Pod, error) {
	data, err := ReadManifestFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeManifest(data, path)
}

// Limits on one manifest input, checked before it is parsed, so that a
// hostile input costs little to refuse.
const (
	// MaxManifestBytes bounds a manifest file (and any input of
	// DecodeManifest and friends). A Pod object in etcd is limited to about
	// 1.5 MiB, and the API's request bodies to 1 MiB; a file may hold
	// several pods with their ConfigMaps and Secrets, hence a little more.
	MaxManifestBytes = 4 << 20
	// maxManifestDocuments bounds the YAML documents of one input and the
	// items of a List. A node runs at most 110 pods (the kubelet's maxPods
	// default); with a ConfigMap and a Secret for each that is 330 objects,
	// and 500 leaves room. Every document is parsed, defaulted and validated,
	// so a stream of 100 000 tiny documents would otherwise cost seconds of
	// CPU at every rescan of the manifest directory.
	maxManifestDocuments = 500
)

// tooLargeProblem is the problem of an input (what: "file" or "input") of
// size bytes over MaxManifestBytes; size 0 when only a lower bound is known.
func tooLargeProblem(what string, size int64) string {
	has := "more than " + strconv.Itoa(MaxManifestBytes) + " bytes"
	if size > 0 {
		has = strconv.FormatInt(size, 10) + " bytes"
	}
	return fmt.Sprintf("the %s has %s, more than the %d (%d MiB) a manifest may have: a Pod is far smaller; split it into several files or remove what it does not need",
		what, has, MaxManifestBytes, MaxManifestBytes>>20)
}

// ReadManifestFile reads the manifest file at path, following symlinks. A
// file larger than MaxManifestBytes is refused from its size, before it is
// read, with a *ManifestError; so is anything but a regular file (a FIFO
// would block the read forever). Other failures are I/O errors ("read
// manifest: …").
func ReadManifestFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if !fi.Mode().IsRegular() {
		what := "something else"
		switch t := fi.Mode().Type(); {
		case t&fs.ModeDir != 0:
			what = "a directory"
		case t&fs.ModeNamedPipe != 0:
			what = "a named pipe"
		case t&fs.ModeSocket != 0:
			what = "a socket"
		case t&fs.ModeDevice != 0:
			what = "a device"
		}
		return nil, fmt.Errorf("read manifest: %s is %s, not a regular file: give a YAML or JSON file", path, what)
	}
	if fi.Size() > MaxManifestBytes {
		return nil, &ManifestError{Source: path, Problems: []string{tooLargeProblem("file", fi.Size())}}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	defer f.Close()
	// The file may have grown since Stat.
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if len(data) > MaxManifestBytes {
		return nil, &ManifestError{Source: path, Problems: []string{tooLargeProblem("file", 0)}}
	}
	return data, nil
}

// PrepareManifest decodes data (DecodeManifest), applies defaults
// (SetPodDefaults) and validates (ValidatePod) every Pod in it. It also
// refuses two Pods with the same namespace/name (or the same UID) in one
// input, and a spec.nodeName other than nodeName (when nodeName is set).
// Either all Pods are returned, or none and a *ManifestError listing every
// problem, one per line, prefixed with the source.
func PrepareManifest(data []byte, source, nodeName string) ([]*v1.Pod, error) {
	mps, problems := decodeManifest(data)
	problems = preparePods(mps, problems, source, nodeName)
	if len(problems) > 0 {
		return nil, &ManifestError{Source: source, Problems: problems}
	}
	pods := make([]*v1.Pod, 0, len(mps))
	for _, mp := range mps {
		pods = append(pods, mp.pod)
	}
	return pods, nil
}

// preparePods defaults and validates the decoded pods of mps (other
// objects are skipped) and returns problems with theirs appended.
func preparePods(mps []manifestPod, problems []string, source, nodeName string) []string {
	// Pods that decoded cleanly are still defaulted and validated, so the user
	// sees all problems of the input in one go.
	byName := map[string]string{} // namespace/name → where it was first defined
	byUID := map[string]string{}  // uid → where it was first used
	for _, mp := range mps {
		if mp.pod == nil {
			continue
		}
		SetPodDefaults(mp.pod, source, nodeName)
		errs := ValidatePod(mp.pod)
		// A pod bound to another node is not this node's to run.
		if nodeName != "" && mp.pod.Spec.NodeName != nodeName {
			errs = append(errs, field.Invalid(field.NewPath("spec", "nodeName"), mp.pod.Spec.NodeName,
				fmt.Sprintf("must be empty or the name of this node (%q)", nodeName)))
		}

		// The same pod twice in one input would fight over one sandbox.
		where := mp.where
		if mp.itemPath != nil {
			where = strings.TrimSpace(where + " " + mp.itemPath.String())
		}
		nameDup := false
		if key := mp.pod.Namespace + "/" + mp.pod.Name; mp.pod.Name != "" {
			var first string
			if first, nameDup = byName[key]; nameDup {
				e := field.Duplicate(field.NewPath("metadata", "name"), key)
				e.Detail = "also defined in " + first
				errs = append(errs, e)
			} else {
				byName[key] = where
			}
		}
		// Identical pods get identical derived UIDs: report only the name then.
		if uid := string(mp.pod.UID); uid != "" && !nameDup {
			if first, dup := byUID[uid]; dup {
				e := field.Duplicate(field.NewPath("metadata", "uid"), uid)
				e.Detail = "also used in " + first
				errs = append(errs, e)
			} else {
				byUID[uid] = where
			}
		}
		for _, e := range errs {
			problems = append(problems, mp.prefix()+prefixField(e, mp.itemPath).Error())
		}
	}
	return problems
}

// DecodeObjects is DecodeManifest that also accepts apiVersion v1
// ConfigMap and Secret documents (alone, next to Pods, or as items of a v1
// List), strictly decoded. Nothing is defaulted or validated. An input
// without any object is an error; one with only ConfigMaps and Secrets is
// not. The returned error is a *ManifestError.
func DecodeObjects(data []byte, source string) (pods []*v1.Pod, cms []*v1.ConfigMap, secrets []*v1.Secret, err error) {
	mps, problems := decodeDocuments(data, true)
	if len(problems) > 0 {
		return nil, nil, nil, &ManifestError{Source: source, Problems: problems}
	}
	pods, cms, secrets = splitObjects(mps)
	return pods, cms, secrets, nil
}

// PrepareObjects is PrepareManifest for an input that may also hold
// ConfigMap and Secret documents: pods are defaulted and validated as
// PrepareManifest does, ConfigMaps and Secrets get the API server's
// defaults (namespace "default", Secret type Opaque, stringData merged into
// data) and validation (names, configmap key rules, size, the keys of the
// Secret's type); two objects of one kind with the same namespace/name are
// refused. Either everything is returned, or nothing and a *ManifestError
// listing every problem.
func PrepareObjects(data []byte, source, nodeName string) (pods []*v1.Pod, cms []*v1.ConfigMap, secrets []*v1.Secret, err error) {
	mps, problems := decodeDocuments(data, true)
	problems = preparePods(mps, problems, source, nodeName)
	problems = prepareConfigObjects(mps, problems)
	if len(problems) > 0 {
		return nil, nil, nil, &ManifestError{Source: source, Problems: problems}
	}
	pods, cms, secrets = splitObjects(mps)
	return pods, cms, secrets, nil
}

// splitObjects sorts decoded documents by kind, keeping their order.
func splitObjects(mps []manifestPod) (pods []*v1.Pod, cms []*v1.ConfigMap, secrets []*v1.Secret) {
	for _, mp := range mps {
		switch {
		case mp.pod != nil:
			pods = append(pods, mp.pod)
		case mp.cm != nil:
			cms = append(cms, mp.cm)
		case mp.secret != nil:
			secrets = append(secrets, mp.secret)
		}
	}
	return pods, cms, secrets
}

// prefixField returns e with its field path moved under prefix (a List
// item), leaving e untouched.
func prefixField(e *field.Error, prefix *field.Path) *field.Error {
	if prefix == nil {
		return e
	}
	c := *e
	c.Field = prefix.String() + "." + e.Field
	return &c
}

// yamlDoc is one document of a YAML stream, converted to JSON.
type yamlDoc struct {
	// json is the document converted to JSON; nil when it failed to convert.
	json []byte
	// problems found while converting (syntax errors, duplicate keys).
	problems []string
}

// decodeManifest is DecodeManifest without the error wrapping: it returns
// the Pods decoded so far and every problem found, each already prefixed with
// its document when there are several.
func decodeManifest(data []byte) ([]manifestPod, []string) {
	return decodeDocuments(data, false)
}

// decodeDocuments is decodeManifest that also returns ConfigMap and Secret
// documents when withConfig is set (PrepareObjects); otherwise they are
// refused by kind.
func decodeDocuments(data []byte, withConfig bool) ([]manifestPod, []string) {
	// The file sources check the size before reading; this guards the
	// other callers.
	if len(data) > MaxManifestBytes {
		return nil, []string{tooLargeProblem("input", int64(len(data)))}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM

	var docs []yamlDoc
	if isJSON(data) {
		docs = []yamlDoc{{json: data}}
	} else {
		if n := countYAMLDocuments(data); n > maxManifestDocuments {
			return nil, []string{fmt.Sprintf("the input has %d YAML documents, more than the %d a manifest may hold: split it into several files", n, maxManifestDocuments)}
		}
		docs = splitYAML(data)
	}
	if len(docs) == 0 {
		return nil, []string{"no Pod found: the manifest is empty"}
	}

	var (
		pods     []manifestPod
		problems []string
	)
	for i, d := range docs {
		where := ""
		if len(docs) > 1 {
			where = "document " + strconv.Itoa(i+1)
		}
		prefix := ""
		if where != "" {
			prefix = where + ": "
		}
		for _, p := range d.problems {
			problems = append(problems, prefix+p)
		}
		if d.json == nil {
			continue
		}
		docPods, docProblems := decodeObject(d.json, nil)
		for _, p := range docProblems {
			problems = append(problems, prefix+p)
		}
		for _, dp := range docPods {
			if dp.pod == nil && !withConfig {
				kind := "ConfigMap"
				if dp.secret != nil {
					kind = "Secret"
				}
				problems = append(problems, prefix+prefixField(&field.Error{Type: field.ErrorTypeNotSupported, Field: "kind", BadValue: kind,
					Detail: "not accepted by this source yet: only apiVersion v1 kind Pod (or a v1 List of Pods); ConfigMap and Secret documents are accepted by minikubelet run"}, dp.itemPath).Error())
				continue
			}
			dp.where = where
			pods = append(pods, dp)
		}
	}
	if len(pods) == 0 && len(problems) == 0 {
		problems = append(problems, "no Pod found: the List has no items")
	}
	return pods, problems
}

// isJSON reports whether data is a single JSON value. YAML would accept it
// too, but decoding it as JSON keeps the JSON semantics (and byte offsets).
func isJSON(data []byte) bool {
	trimmed := bytes.TrimSpace(data)
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed)
}

// yamlLineRE matches the line numbers in YAML parser errors.
var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// splitYAML splits a YAML stream at `---` lines and converts each non-empty
// document to JSON. Errors carry line numbers of the whole stream, not of the
// document.
func splitYAML(data []byte) []yamlDoc {
	var docs []yamlDoc
	lines := bytes.SplitAfter(data, []byte("\n"))
	start := 0 // index of the first line of the current document
	flush := func(end int) {
		chunk := bytes.Join(lines[start:end], nil)
		if d, ok := convertYAMLDoc(chunk, start); ok {
			docs = append(docs, d)
		}
	}
	for i, line := range lines {
		if isDocSeparator(line) {
			flush(i)
			start = i + 1
		}
	}
	flush(len(lines))
	return docs
}

// countYAMLDocuments counts the documents splitYAML would parse, empty
// ones included, without parsing any.
func countYAMLDocuments(data []byte) int {
	n := 1
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		if isDocSeparator(line) {
			n++
		}
	}
	return n
}

// isDocSeparator reports whether line is a YAML document separator: `---`
// alone or followed by a comment.
func isDocSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// convertYAMLDoc converts one YAML document, whose first line is line
// firstLine (0-based) of the stream, to JSON. It reports false for an empty
// document (only whitespace and comments, or null).
func convertYAMLDoc(chunk []byte, firstLine int) (yamlDoc, bool) {
	fixLines := func(msg string) string {
		return yamlLineRE.ReplaceAllStringFunc(msg, func(m string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
			return "line " + strconv.Itoa(n+firstLine)
		})
	}
	j, err := yaml.YAMLToJSON(chunk)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
		msg = decodeerr.LocateYAML(msg, chunk, firstLine)
		return yamlDoc{problems: []string{fixLines(msg)}}, true
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return yamlDoc{}, false
	}
	// YAMLToJSON keeps one of two duplicated keys silently; find them with a
	// second parse that keeps every key, so they are reported like JSON ones.
	var node yamlv3.Node
	if yamlv3.Unmarshal(chunk, &node) == nil {
		var problems []string
		findDuplicateKeys(&node, "", func(path string, line int) {
			problems = append(problems, fmt.Sprintf("%s: duplicate field (line %d)", displayPath(path), line+firstLine))
		})
		if len(problems) > 0 {
			return yamlDoc{problems: problems}, true
		}
	}
	return yamlDoc{json: j}, true
}

// findDuplicateKeys walks a YAML node tree and calls report for every mapping
// key that appears a second time in the same mapping.
func findDuplicateKeys(n *yamlv3.Node, path string, report func(path string, line int)) {
	join := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			findDuplicateKeys(c, path, report)
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			findDuplicateKeys(c, path+"["+strconv.Itoa(i)+"]", report)
		}
	case yamlv3.MappingNode:
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yamlv3.ScalarNode && k.Value != "<<" {
				if seen[k.Value] {
					report(join(k.Value), k.Line)
				}
				seen[k.Value] = true
			}
			findDuplicateKeys(v, join(k.Value), report)
		}
	}
}

// typeMeta is the part of any object read before choosing how to decode it.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// decodeObject decodes one JSON document: a v1 Pod, or a v1 List of Pods.
// itemPath is set for an item of a List.
func decodeObject(data []byte, itemPath *field.Path) ([]manifestPod, []string) {
	problem := func(e *field.Error) []string {
		return []string{prefixField(e, itemPath).Error()}
	}
	var tm typeMeta
	// Case-sensitive, as the strict decoding of the object that follows.
	if err := decodeerr.UnmarshalStrict(data, &tm); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field == "" {
			return nil, []string{withItem(itemPath, "expected an object (a Pod), got "+typeErr.Value)}
		}
		return nil, []string{decodeerr.Problem(data, reflect.TypeFor[typeMeta](), itemPath, err)}
	}

	switch {
	case tm.Kind == "" || tm.APIVersion == "":
		var problems []string
		if tm.APIVersion == "" {
			problems = append(problems, problem(field.Required(field.NewPath("apiVersion"), "the manifest must be apiVersion v1 kind Pod"))...)
		}
		if tm.Kind == "" {
			problems = append(problems, problem(field.Required(field.NewPath("kind"), "the manifest must be apiVersion v1 kind Pod"))...)
		}
		return nil, problems
	case tm.Kind == "List" && itemPath == nil && tm.APIVersion == "v1":
		return decodeList(data)
	case tm.Kind == "Pod":
		if tm.APIVersion != "v1" {
			return nil, problem(field.NotSupported(field.NewPath("apiVersion"), tm.APIVersion, []string{"v1"}))
		}
		return decodePod(data, itemPath)
	case (tm.Kind == "ConfigMap" || tm.Kind == "Secret") && tm.APIVersion == "v1":
		// Pods-only callers (decodeManifest) refuse them later.
		return decodeConfigObject(data, tm.Kind, itemPath)
	default:
		return nil, problem(&field.Error{Type: field.ErrorTypeNotSupported, Field: "kind", BadValue: tm.Kind,
			Detail: fmt.Sprintf("%s %s is not supported by minikubelet: only apiVersion v1 kind Pod (or a v1 List of Pods) can be run", tm.APIVersion, tm.Kind)})
	}
}

// withItem prefixes msg with the List item it is about, if any.
func withItem(itemPath *field.Path, msg string) string {
	if itemPath == nil {
		return msg
	}
	return itemPath.String() + ": " + msg
}

// decodeList decodes the items of a v1 List, each of which must be a Pod.
func decodeList(data []byte) ([]manifestPod, []string) {
	var list struct {
		typeMeta
		Metadata json.RawMessage   `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	strictErrs, err := strictjson.UnmarshalStrict(data, &list)
	if err != nil {
		return nil, []string{decodeerr.Problem(data, reflect.TypeOf(list), nil, err)}
	}
	problems := StrictProblems(strictErrs, nil)
	if n := len(list.Items); n > maxManifestDocuments {
		return nil, append(problems, field.TooMany(field.NewPath("items"), n, maxManifestDocuments).Error())
	}
	var pods []manifestPod
	for i, item := range list.Items {
		itemPods, itemProblems := decodeObject(item, field.NewPath("items").Index(i))
		pods = append(pods, itemPods...)
		problems = append(problems, itemProblems...)
	}
	return pods, problems
}

// decodePod strictly decodes one v1 Pod.
func decodePod(data []byte, itemPath *field.Path) ([]manifestPod, []string) {
	pod := &v1.Pod{}
	strictErrs, err := strictjson.UnmarshalStrict(data, pod)
	if err != nil {
		return nil, []string{decodeerr.Problem(data, reflect.TypeFor[v1.Pod](), itemPath, err)}
	}
	if problems := StrictProblems(strictErrs, itemPath); len(problems) > 0 {
		return nil, problems
	}
	return []manifestPod{{pod: pod, itemPath: itemPath}}, nil
}

// StrictProblems turns the strict-decoding errors of sigs.k8s.io/json into
// `path: unknown field` / `path: duplicate field` messages.
func StrictProblems(errs []error, itemPath *field.Path) []string {
	var problems []string
	for _, err := range errs {
		var fe strictjson.FieldError
		if !errors.As(err, &fe) {
			problems = append(problems, withItem(itemPath, err.Error()))
			continue
		}
		kind := "unknown field"
		if strings.HasPrefix(err.Error(), "duplicate field") {
			kind = "duplicate field"
		}
		path := fe.FieldPath()
		if itemPath != nil {
			path = itemPath.String() + "." + path
		}
		problems = append(problems, displayPath(path)+": "+kind)
	}
	return problems
}

// displayPath quotes a field path that holds what would make the message
// ambiguous (a field or key named with spaces, colons, quotes or invisible
// characters): `"a: b": unknown field`.
func displayPath(p string) string {
	odd := func(r rune) bool { return unicode.IsSpace(r) || r == ':' || r == '"' || !unicode.IsPrint(r) }
	if p == "" || strings.ContainsFunc(p, odd) {
		return strconv.Quote(p)
	}
	return p
}

// JsonErrorText makes a JSON decoding error readable: the Go type names of
// the decoder mean little to someone who wrote YAML.
func JsonErrorText(err error) string {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if m := jsonTypeErrorRE.FindStringSubmatch(msg); m != nil {
		// The path has no list indexes: the decoder does not track them.
		return fmt.Sprintf("%s: Invalid type: got %s, expected %s", m[2], m[1], m[3])
	}
	return msg
}

// jsonTypeErrorRE matches a type error of the JSON decoder:
// "cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32".
var jsonTypeErrorRE = regexp.MustCompile(`^cannot unmarshal (\S+) into Go struct field [^.\s]+\.(\S+) of type (\S+)$`)
