package manifest

import (
	"fmt"
	"path/filepath"
	"strings"
)

// CheckSubPath refuses a subPath that is absolute or climbs with "..":
// validation refuses them too; the translation (agent/podspec) and the
// pinning (agent/volume) check again, the last line.
func CheckSubPath(sub string) error {
	if filepath.IsAbs(sub) || sub == ".." || strings.HasPrefix(sub, "../") || strings.Contains(sub, "/../") || strings.HasSuffix(sub, "/..") {
		return fmt.Errorf("subPath %q must be a relative path inside the volume", sub)
	}
	return nil
}
