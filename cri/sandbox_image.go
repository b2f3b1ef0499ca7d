package cri

import "encoding/json"

// SandboxImage is the runtime's sandbox (pause) image, from the "config"
// entry of a verbose Status's info: containerd 1.x reports it as
// sandboxImage, 2.x as pinnedImages.sandbox. "" when neither is there.
// Image GC keeps it even where the runtime does not mark it pinned
// (containerd 1.6), as the kubelet always kept its sandbox image.
func SandboxImage(info map[string]string) string {
	var cfg struct {
		SandboxImage string            `json:"sandboxImage"`
		PinnedImages map[string]string `json:"pinnedImages"`
	}
	if err := json.Unmarshal([]byte(info["config"]), &cfg); err != nil {
		return ""
	}
	if cfg.SandboxImage != "" {
		return cfg.SandboxImage
	}
	return cfg.PinnedImages["sandbox"]
}
