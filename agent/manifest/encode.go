package manifest

// The stored form of a pod: the YAML the API's store writes and reads back.

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// EncodeStoredPod renders a pod as the YAML manifest a user would write:
// without the empty status and the null creationTimestamp that marshalling a
// v1.Pod adds.
func EncodeStoredPod(p *v1.Pod) ([]byte, error) {
	j, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber() // keep int64 fields exact
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	delete(obj, "status")
	if meta, ok := obj["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	if j, err = json.Marshal(obj); err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	return y, nil
}
