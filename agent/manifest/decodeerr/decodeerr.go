// Package decodeerr locates decoding errors of manifests: by field path for
// JSON decoding, by line for YAML parsing, so that every refusal of a
// manifest says where the problem is. The manifest sources (package agent)
// and the API server (package api) share it.
package decodeerr

// Decoding errors with a field path. encoding/json (and sigs.k8s.io/json)
// say where a type error is only as a dotted path without list indexes
// ("spec.containers.ports.containerPort"), and not at all for an error of
// a type's own UnmarshalJSON (a Quantity, a Time, an IntOrString): "quantities
// must match the regular expression …". Problem finds the exact path
// by decoding ever smaller parts of the document into the matching part of
// the Go type; it only runs on an input already refused.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
	strictjson "sigs.k8s.io/json"
)

// MaxBadValueBytes bounds a bad value quoted in a message: a hostile input
// must not make its refusal megabytes long (the message is returned by the
// API, logged and shown in the pod list).
const MaxBadValueBytes = 256

// Problem returns err, an error of decoding the JSON data into a new
// value of typ, as one located problem: "path: Invalid type: got string,
// expected int32" or "path: Invalid value: "1e400": quantities must …".
// itemPath (a List item) prefixes the path; it may be nil.
func Problem(data []byte, typ reflect.Type, itemPath *field.Path, err error) string {
	// Not valid JSON: there is no field yet, only a position. (The strict
	// decoder's SyntaxError is its own type: ask encoding/json.)
	var syntaxErr *json.SyntaxError
	if errors.As(json.Unmarshal(data, new(any)), &syntaxErr) {
		return withItem(itemPath, fmt.Sprintf("%s (at byte %d)", truncateMessage(syntaxErr.Error()), syntaxErr.Offset))
	}
	path, raw, leaf := locateDecodeError(data, typ, itemPath)
	// The leaf's own error: the top one may be about another field.
	if leafErr := UnmarshalStrict(raw, reflect.New(leaf).Interface()); leafErr != nil {
		err = leafErr
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		msg := fmt.Sprintf("Invalid type: got %s, expected %s", typeErr.Value, jsonTypeName(typeErr.Type))
		if path == nil {
			return msg
		}
		return path.String() + ": " + msg
	}
	// The message of a type's own UnmarshalJSON may quote the value.
	msg := truncateMessage(strings.TrimPrefix(err.Error(), "json: "))
	if path == nil {
		return msg
	}
	return field.Invalid(path, badValueText(raw), msg).Error()
}

// withItem prefixes msg with the List item it is about, if any.
func withItem(itemPath *field.Path, msg string) string {
	if itemPath == nil {
		return msg
	}
	return itemPath.String() + ": " + msg
}

// UnmarshalStrict decodes data into v case-sensitively, as
// sigs.k8s.io/json's UnmarshalStrict, returning only a fatal error (not
// unknown or duplicate fields).
func UnmarshalStrict(data []byte, v any) error {
	_, err := strictjson.UnmarshalStrict(data, v)
	return err
}

// locateDecodeError returns the path of the deepest part of data that does
// not decode into its part of typ, that part's JSON and its Go type. path
// is where data sits (nil: the document).
func locateDecodeError(data []byte, typ reflect.Type, path *field.Path) (*field.Path, []byte, reflect.Type) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	fails := func(raw []byte, t reflect.Type) bool {
		return UnmarshalStrict(raw, reflect.New(t).Interface()) != nil
	}
	unmarshaler := reflect.TypeFor[json.Unmarshaler]()
	if typ.Implements(unmarshaler) || reflect.PointerTo(typ).Implements(unmarshaler) {
		return path, data, typ // the type decodes itself: the error is its own
	}
	switch typ.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return path, data, typ
		}
		fields := jsonFieldTypes(typ)
		for _, k := range slices.Sorted(mapKeys(obj)) {
			if ft, ok := fields[k]; ok && fails(obj[k], ft) {
				return locateDecodeError(obj[k], ft, childPath(path, k))
			}
		}
	case reflect.Slice, reflect.Array:
		if typ.Elem().Kind() == reflect.Uint8 {
			return path, data, typ // []byte is base64 text
		}
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return path, data, typ
		}
		for i, item := range items {
			if fails(item, typ.Elem()) {
				return locateDecodeError(item, typ.Elem(), indexPath(path, i))
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return path, data, typ
		}
		for _, k := range slices.Sorted(mapKeys(obj)) {
			if fails(obj[k], typ.Elem()) {
				return locateDecodeError(obj[k], typ.Elem(), keyPath(path, k))
			}
		}
	}
	return path, data, typ
}

// mapKeys returns the keys of m.
func mapKeys(m map[string]json.RawMessage) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// childPath, indexPath and keyPath extend a path that may be nil.
func childPath(p *field.Path, name string) *field.Path {
	if p == nil {
		return field.NewPath(name)
	}
	return p.Child(name)
}

func indexPath(p *field.Path, i int) *field.Path {
	if p == nil {
		return field.NewPath("").Index(i) // not reached: documents are objects
	}
	return p.Index(i)
}

func keyPath(p *field.Path, k string) *field.Path {
	if p == nil {
		return field.NewPath("").Key(k) // not reached: documents are objects
	}
	return p.Key(k)
}

// jsonFieldTypes maps the JSON names of a struct's fields to their types,
// with inline (embedded, untagged) structs flattened, as encoding/json
// decodes them.
func jsonFieldTypes(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				for k, v := range jsonFieldTypes(inner) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// jsonTypeName names a Go type as JSON would: "object", "array", "string",
// "boolean", "number"; integer types keep their name, which gives the range.
func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return t.String()
}

// badValueText is the JSON value raw as a message shows it: a string
// without its quotes, anything else as written; at most MaxBadValueBytes.
func badValueText(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	return TruncateValue(s)
}

// TruncateValue shortens s to at most MaxBadValueBytes (on a rune
// boundary), saying how long it was.
func TruncateValue(s string) string {
	if len(s) <= MaxBadValueBytes {
		return s
	}
	cut := MaxBadValueBytes
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
}

// truncateMessage bounds an error message that may quote the input.
func truncateMessage(msg string) string {
	if len(msg) <= 2*MaxBadValueBytes {
		return msg
	}
	cut := 2 * MaxBadValueBytes
	for cut > 0 && !isRuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", msg[:cut], len(msg))
}

// isRuneStart reports whether b starts a UTF-8 sequence.
func isRuneStart(b byte) bool { return b&0xc0 != 0x80 }

// yamlAnchorErrorRE matches the parser's errors about one alias, which are
// located at the alias's first use.
var yamlAnchorErrorRE = regexp.MustCompile(`^yaml: (unknown anchor|anchor) '([^']*)' (referenced|value contains itself)$`)

// yamlLineRE matches the line of a YAML parser error.
var yamlLineRE = regexp.MustCompile(`\bline [0-9]+\b`)

// LocateYAML gives msg, a YAML parser error about chunk, a line when it has
// none: the line of the offending byte when the error says which (a
// control character, invalid UTF-8, an alias), the last line for a
// truncated document, else the document's first line, said as such
// ("yaml: in the document starting at line N: …"). Lines count from 1 in
// the stream; chunk starts at line firstLine (0-based). A message with a
// line is returned as is.
func LocateYAML(msg string, chunk []byte, firstLine int) string {
	if yamlLineRE.MatchString(msg) {
		return msg
	}
	body := strings.TrimPrefix(msg, "yaml: ")
	lineOf := func(off int) string {
		return "yaml: line " + strconv.Itoa(firstLine+1+bytes.Count(chunk[:off], []byte("\n"))) + ": " + body
	}
	switch {
	case strings.Contains(msg, "control characters are not allowed"):
		if off := bytes.IndexFunc(chunk, isYAMLControl); off >= 0 {
			return lineOf(off)
		}
	case strings.Contains(msg, "UTF-8"):
		for off := 0; off < len(chunk); {
			r, n := utf8.DecodeRune(chunk[off:])
			if r == utf8.RuneError && n <= 1 {
				return lineOf(off)
			}
			off += n
		}
	case strings.Contains(msg, "end of stream"):
		return lineOf(len(bytes.TrimRight(chunk, "\n")))
	}
	if m := yamlAnchorErrorRE.FindStringSubmatch(msg); m != nil {
		if off := bytes.Index(chunk, []byte("*"+m[2])); off >= 0 {
			return lineOf(off)
		}
	}
	// The document starts at its first line that is not blank or a comment.
	start := firstLine + 1
	for _, l := range bytes.SplitAfter(chunk, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			break
		}
		start++
	}
	return "yaml: in the document starting at line " + strconv.Itoa(start) + ": " + body
}

// isYAMLControl reports a character YAML does not allow in a stream: the
// C0 controls but tab, newline and carriage return, DEL, and the C1
// controls but NEL.
func isYAMLControl(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case r == 0xfffe || r == 0xffff:
		return true
	}
	return false
}
