package resize

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/minikubelet/minikubelet/agent/safepath"
)

// CheckpointFile is the checkpoint's name in the pod's directory.
const CheckpointFile = "resources.json"

// maxCheckpointSize bounds what LoadCheckpoint reads.
const maxCheckpointSize = 1 << 20

// Checkpoint is the checkpoint's content.
type Checkpoint struct {
	Allocated Resources `json:"allocated"`
	Actuated  Resources `json:"actuated,omitempty"`
}

// LoadCheckpoint reads the checkpoint in dir, the pod's directory. ok is
// false when there is none or it cannot be read (the pod then starts from
// its spec); err says why a file that was read is not trusted (torn, or
// without an allocation), for the caller to log.
func LoadCheckpoint(dir string) (cp Checkpoint, ok bool, err error) {
	b, err := safepath.ReadFile(filepath.Join(dir, CheckpointFile), maxCheckpointSize)
	if err != nil {
		return Checkpoint{}, false, nil
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		return Checkpoint{}, false, fmt.Errorf("resources checkpoint %s: %w", filepath.Join(dir, CheckpointFile), err)
	}
	if cp.Allocated == nil {
		return Checkpoint{}, false, fmt.Errorf("resources checkpoint %s: %w", filepath.Join(dir, CheckpointFile), errNoAllocation)
	}
	return cp, true, nil
}

var errNoAllocation = errors.New("no allocated resources")

// SaveCheckpoint writes cp into dir atomically: a temporary file of its own
// renamed over the checkpoint. dir is the agent's own (under its root dir),
// never a path a pod controls. Concurrent writers each rename a whole file
// into place; which one is left is the callers' to order (the engine's
// worker saves its snapshots under one lock).
func SaveCheckpoint(dir string, cp Checkpoint) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("save resources checkpoint: %w", err)
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("save resources checkpoint: %w", err)
	}
	// A temporary file of its own: two writers of one name could rename
	// each other's half-written file into place.
	f, err := os.CreateTemp(dir, CheckpointFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("save resources checkpoint: %w", err)
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), filepath.Join(dir, CheckpointFile))
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("save resources checkpoint: %w", werr)
	}
	return nil
}
