package deviceplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/minikubelet/minikubelet/agent/atomicfile"
	"github.com/minikubelet/minikubelet/agent/safepath"
)

const (
	// checkpointName is the checkpoint in the plugin directory; not the
	// kubelet's kubelet_internal_checkpoint, whose format differs.
	checkpointName = "minikubelet_device_checkpoint.json"
	// maxCheckpointBytes bounds the read: plugins (root, but still other
	// programs) can write in the directory.
	maxCheckpointBytes = 4 << 20
	checkpointVersion  = 1
)

// checkpointFile is the checkpoint's JSON.
type checkpointFile struct {
	Version int `json:"version"`
	// Registered are the resources registered when it was written: after
	// a restart they are reported at 0 until their plugin registers again
	// (and dropped 5 minutes later), as the kubelet does.
	Registered []string `json:"registered,omitempty"`
	// Removed are the resources dropped after their plugin stopped: the
	// Node keeps showing them at 0.
	Removed []string          `json:"removed,omitempty"`
	Entries []checkpointEntry `json:"entries,omitempty"`
}

// checkpointEntry is one container's devices of one resource.
type checkpointEntry struct {
	PodUID    string   `json:"podUID"`
	Container string   `json:"container"`
	Resource  string   `json:"resource"`
	Devices   []string `json:"devices"`
	// Response is the plugin's Allocate answer (protobuf), if asked yet.
	Response []byte `json:"response,omitempty"`
}

func (m *Manager) checkpointPath() string { return filepath.Join(m.dir, checkpointName) }

// saveLocked writes the checkpoint; a failure is logged (the kubelet does
// the same): the devices stay assigned in memory.
func (m *Manager) saveLocked() {
	if m.dir == "" {
		return
	}
	cp := checkpointFile{Version: checkpointVersion, Registered: slices.Sorted(maps.Keys(m.resources)), Removed: slices.Sorted(maps.Keys(m.removed))}
	for uid, cs := range m.pods {
		for c, rs := range cs {
			for name, al := range rs {
				e := checkpointEntry{PodUID: string(uid), Container: c, Resource: name, Devices: al.devices}
				if al.response != nil {
					b, err := proto.Marshal(al.response)
					if err != nil {
						m.logger.Warn("Cannot encode a device plugin's answer for the checkpoint", "resource", name, "err", err)
					}
					e.Response = b
				}
				cp.Entries = append(cp.Entries, e)
			}
		}
	}
	slices.SortFunc(cp.Entries, func(a, b checkpointEntry) int {
		return strings.Compare(a.PodUID+"\x00"+a.Container+"\x00"+a.Resource, b.PodUID+"\x00"+b.Container+"\x00"+b.Resource)
	})
	data, err := json.Marshal(cp)
	if err == nil {
		err = atomicfile.Write(m.checkpointPath(), data, 0o600)
	}
	if err != nil {
		m.logger.Warn("Cannot write the device checkpoint; a restart may forget which devices pods hold", "path", m.checkpointPath(), "err", err)
	}
}

// loadCheckpoint reads the checkpoint (a missing one is an empty start).
func (m *Manager) loadCheckpoint() error {
	data, err := safepath.ReadFile(m.checkpointPath(), maxCheckpointBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var cp checkpointFile
	if err := json.Unmarshal(data, &cp); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if cp.Version != checkpointVersion {
		return fmt.Errorf("version %d, want %d", cp.Version, checkpointVersion)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for _, name := range cp.Registered {
		if isExtendedResourceName(name) && m.resources[name] == nil {
			m.resources[name] = &resourceState{devices: map[string]bool{}, stoppedAt: now}
		}
	}
	for _, name := range cp.Removed {
		if isExtendedResourceName(name) && m.resources[name] == nil {
			m.removed[name] = true
		}
	}
	for _, e := range cp.Entries {
		if e.PodUID == "" || e.Container == "" || !isExtendedResourceName(e.Resource) || len(e.Devices) == 0 {
			continue
		}
		al := &allocation{devices: e.Devices}
		if len(e.Response) > 0 {
			r := &pluginapi.ContainerAllocateResponse{}
			if err := proto.Unmarshal(e.Response, r); err != nil {
				m.logger.Warn("Device checkpoint entry's plugin answer unreadable; the plugin is asked again", "podUID", e.PodUID, "resource", e.Resource, "err", err)
			} else {
				al.response = r
			}
		}
		uid := types.UID(e.PodUID)
		if m.pods[uid] == nil {
			m.pods[uid] = map[string]map[string]*allocation{}
			m.restored = append(m.restored, uid)
		}
		if m.pods[uid][e.Container] == nil {
			m.pods[uid][e.Container] = map[string]*allocation{}
		}
		m.pods[uid][e.Container][e.Resource] = al
	}
	return nil
}
