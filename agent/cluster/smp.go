package cluster

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// twoWayMergePatch returns the strategic merge patch that takes original
// to modified, two values of the API type of dataStruct (v1.Pod, v1.Node),
// as client-go's strategicpatch.CreateTwoWayMergePatch does for the status
// patches the kubelet sends:
//
//   - objects are compared key by key; a key only in original is deleted
//     (null), one only in modified is set, one in both is compared
//     recursively;
//   - a list whose field has patchStrategy "merge" (conditions by type,
//     addresses by type, podIPs by ip, …) is merged by its patchMergeKey:
//     changed elements carry their key and their differences, removed ones
//     "$patch": "delete", and "$setElementOrder/<field>" gives the order,
//     so elements another writer added on the server (a scheduler's or a
//     controller's condition) stay;
//   - every other list is replaced whole when it differs.
//
// strategicpatch itself is not linked: it reads OpenAPI schemas too, and
// the kube-openapi and gnostic packages that come with it were, with
// client-go's gentype (see typedResource), 2.5 MB of the binary's code and
// read-only data, mapped by the daemon whether or not it joins a cluster
// (issue #8, RSS). The merge keys come from the Go types'
// patchStrategy and patchMergeKey tags, where strategicpatch reads them
// too; the unit tests apply both patches to the same server-side objects
// and compare.
func twoWayMergePatch(original, modified []byte, dataStruct any) ([]byte, error) {
	var o, m map[string]any
	if err := json.Unmarshal(original, &o); err != nil {
		return nil, fmt.Errorf("original: %w", err)
	}
	if err := json.Unmarshal(modified, &m); err != nil {
		return nil, fmt.Errorf("modified: %w", err)
	}
	p, err := diffObjects(o, m, reflect.TypeOf(dataStruct), "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// diffObjects is the patch from o to m, two JSON objects of Go type t (a
// struct, or a map whose values are t's element type; nil when unknown).
func diffObjects(o, m map[string]any, t reflect.Type, path string) (map[string]any, error) {
	t = deref(t)
	patch := map[string]any{}
	for k, mv := range m {
		f, ft := fieldOf(t, k)
		ov, ok := o[k]
		if ol, isList := mv.([]any); isList && mergeStrategy(f) {
			prev, _ := ov.([]any)
			if ok && ov != nil && prev == nil {
				return nil, fmt.Errorf("%s%s: a list in one version and not in the other", path, k)
			}
			if err := diffMergeList(patch, k, prev, ol, f, path+k); err != nil {
				return nil, err
			}
			continue
		}
		if !ok {
			patch[k] = mv
			continue
		}
		om, oIsMap := ov.(map[string]any)
		mm, mIsMap := mv.(map[string]any)
		if oIsMap && mIsMap {
			sub, err := diffObjects(om, mm, ft, path+k+".")
			if err != nil {
				return nil, err
			}
			if len(sub) > 0 {
				patch[k] = sub
			}
			continue
		}
		if !reflect.DeepEqual(ov, mv) {
			patch[k] = mv
		}
	}
	for k := range o {
		if _, ok := m[k]; !ok {
			patch[k] = nil
		}
	}
	return patch, nil
}

// diffMergeList adds to patch the changes from list o to list m of field
// f, whose elements are merged by f's patchMergeKey.
func diffMergeList(patch map[string]any, name string, o, m []any, f *reflect.StructField, path string) error {
	key := f.Tag.Get("patchMergeKey")
	if key == "" || strings.Contains(f.Tag.Get("patchStrategy"), "retainKeys") {
		return fmt.Errorf("%s: patch strategy %q with merge key %q is not supported", path, f.Tag.Get("patchStrategy"), key)
	}
	elemT := deref(f.Type.Elem())
	keyOf := func(e any) (any, map[string]any, error) {
		em, ok := e.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("%s: merging a list of %T is not supported", path, e)
		}
		kv, ok := em[key]
		if !ok {
			return nil, nil, fmt.Errorf("%s: an element has no merge key %q", path, key)
		}
		return kv, em, nil
	}
	before := make(map[any]map[string]any, len(o))
	var beforeKeys []any
	for _, e := range o {
		kv, em, err := keyOf(e)
		if err != nil {
			return err
		}
		before[kv] = em
		beforeKeys = append(beforeKeys, kv)
	}
	var changes []any
	var order []any
	after := make(map[any]bool, len(m))
	for _, e := range m {
		kv, em, err := keyOf(e)
		if err != nil {
			return err
		}
		after[kv] = true
		order = append(order, map[string]any{key: kv})
		prev, ok := before[kv]
		if !ok {
			changes = append(changes, em)
			continue
		}
		d, err := diffObjects(prev, em, elemT, fmt.Sprintf("%s[%s=%v].", path, key, kv))
		if err != nil {
			return err
		}
		if len(d) > 0 {
			d[key] = kv
			changes = append(changes, d)
		}
	}
	for _, kv := range beforeKeys {
		if !after[kv] {
			changes = append(changes, map[string]any{key: kv, "$patch": "delete"})
		}
	}
	if len(changes) == 0 && sameKeys(beforeKeys, order, key) {
		return nil
	}
	if len(changes) > 0 {
		patch[name] = changes
	}
	patch["$setElementOrder/"+name] = order
	return nil
}

// sameKeys reports whether the keys of order, in order, are keys.
func sameKeys(keys []any, order []any, key string) bool {
	if len(keys) != len(order) {
		return false
	}
	for i, kv := range keys {
		if order[i].(map[string]any)[key] != kv {
			return false
		}
	}
	return true
}

// mergeStrategy reports whether the list field f is merged by key.
func mergeStrategy(f *reflect.StructField) bool {
	if f == nil {
		return false
	}
	for _, s := range strings.Split(f.Tag.Get("patchStrategy"), ",") {
		if s == "merge" {
			return true
		}
	}
	return false
}

// fieldOf returns the struct field of t (a struct type) whose JSON name is
// name, and the type of the values under name: the field's type, or a
// map's element type. Both are nil when unknown.
func fieldOf(t reflect.Type, name string) (*reflect.StructField, reflect.Type) {
	switch {
	case t == nil:
		return nil, nil
	case t.Kind() == reflect.Map:
		return nil, t.Elem()
	case t.Kind() != reflect.Struct:
		return nil, nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		jsonName, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && jsonName == "" && (opts == "inline" || strings.Contains(opts, "inline")) {
			if g, gt := fieldOf(deref(f.Type), name); g != nil {
				return g, gt
			}
			continue
		}
		if jsonName == "" {
			jsonName = f.Name
		}
		if jsonName == name {
			return &f, f.Type
		}
	}
	return nil, nil
}

// deref strips pointers and slices down to the element type.
func deref(t reflect.Type) reflect.Type {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
		t = t.Elem()
	}
	return t
}
