package cni

import (
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
)

// Each plugin's VERSION answer is a process start (1.5–2 ms of CPU for each
// of the four plugins here). A foreground run checks them beside its
// runtime handshake and its manifest's validation, on a machine whose
// containerd is starting the pod's sandbox at the same time: with two
// cores, the four processes were the largest part of the 12–15 ms between
// `minikubelet run`'s start and its first runtime answer (issue #27). A
// plugin file that has not changed since it answered gives the same
// answer, so the answer is kept in Config.CheckCache, by the file's stamp.
// The cache is the agent's state (its root dir), never the runtime's conf
// dir, where a stray file could be read as a network config. Losing it,
// or a file that does not parse, only means the plugins are run again.
// What the stamp does not see: a plugin that stopped being runnable
// without its file changing (its directory remounted noexec, a shared
// library or interpreter it needs removed), or rewritten in place to the
// same size within the file system's timestamp granularity. containerd
// then fails the sandbox's CNI ADD with the plugin's error, as it would
// for a plugin broken after any check.

// maxCheckCache bounds the cache file read: a few plugins, a few hundred
// bytes each.
const maxCheckCache = 64 << 10

// checkCacheKey is a plugin's entry in the cache: its path and the spec
// version the conflist asks of it.
func checkCacheKey(path, cniVersion string) string { return path + " " + cniVersion }

// readCheckCache returns the cache's entries, or none (no file, a file too
// large or that does not parse).
func readCheckCache(path string) map[string]string {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNoFollow, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCheckCache+1))
	if err != nil || len(data) > maxCheckCache {
		return nil
	}
	var m map[string]string
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	return m
}

// writeCheckCache records stamps, the plugins that answered now, unless
// known holds them already. Best effort: the write is atomic (a temporary
// file renamed), not durable, and a failure only costs a later check.
func writeCheckCache(path string, known, stamps map[string]string) {
	if path == "" || len(stamps) == 0 {
		return
	}
	merged := maps.Clone(known)
	if merged == nil {
		merged = map[string]string{}
	}
	changed := false
	for k, v := range stamps {
		if merged[k] != v {
			merged[k], changed = v, true
		}
	}
	if !changed {
		return
	}
	data, err := json.Marshal(merged)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		_ = os.Remove(tmp.Name())
	}
}
