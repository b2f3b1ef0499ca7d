package volume

// Resolving a hostPath the way the host would: symlinks followed as far as
// the path exists, /proc/<pid>/root prefixes stripped. The engine's guard
// (hostpath_guard.go) compares the result with its own state.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// PathContains reports whether the clean absolute path dir is p or one of
// its parents.
func PathContains(dir, p string) bool {
	return dir == p || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// ResolveHostPath returns the clean absolute path p names on the host: each
// existing component's symlink followed (relative and absolute targets),
// a /proc/…/root component replaced by /, and the part that does not
// exist yet taken literally (the runtime or a *OrCreate type would create
// it there). It reads the file system but never fails: a component it
// cannot read is taken as it is.
func ResolveHostPath(p string) string {
	rest := strings.Split(filepath.Clean("/"+p), "/")
	resolved, links := "/", 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		if procRoot.MatchString(next) {
			resolved = "/"
			continue
		}
		// /proc/self/root and the like before following /proc/self: the
		// answer does not depend on which process reads it.
		if n := ProcRootAhead(next, rest); n > 0 {
			resolved, rest = "/", rest[n:]
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 || links >= maxHostPathLinks {
			resolved = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			resolved = next
			continue
		}
		links++
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return resolved
}

// ProcRootAhead returns how many components of rest complete next into a
// /proc/…/root path (0: none).
func ProcRootAhead(next string, rest []string) int {
	if next != "/proc" && !strings.HasPrefix(next, "/proc/") {
		return 0
	}
	for n := 1; n <= 4; n++ {
		if len(rest) >= n && procRoot.MatchString(next+"/"+strings.Join(rest[:n], "/")) {
			return n
		}
	}
	return 0
}

// procRoot matches a /proc path that names a process's root directory:
// /proc/self/root, /proc/thread-self/root, /proc/<pid>/root and
// /proc/<pid>/task/<tid>/root. Whatever process it is, the guard takes it
// for the host's root (the agent's processes and most others have it).
var procRoot = regexp.MustCompile(`^/proc/(self|thread-self|[0-9]+)(/task/[0-9]+)?/root$`)

// maxHostPathLinks bounds the symlinks followed (the kernel's 40): a
// longer chain fails to mount anyway.
const maxHostPathLinks = 40
