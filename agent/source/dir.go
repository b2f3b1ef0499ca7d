package source

// Over 600 lines: the directory source is one loop (watch, debounce, scan,
// the removed-and-recreated record, the pending set) whose parts share its
// state; split, each part would reach into the others' fields.
//
// The static manifest directory (the kubelet's file source, --pod-manifest-path):
// every manifest file in one directory is desired state (house style rule 5).
// DirSource watches the directory and sends its complete pod set whenever
// that set changes; the daemon merges it with the API-submitted pods.
//
//	         fsnotify event ──> arm 100 ms window ──┐
//	start ───────────────────────────────────────────┼──> scan ──> changed? ──> pending ──> out
//	         rescan ticker (20 s) ──────────────────┘                (newest wins while the
//	                                                                   consumer is busy)

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

const (
	// dirRescanPeriod is the safety-net rescan of the manifest directory, in
	// case a file notification is lost (the kubelet's fileCheckFrequency).
	dirRescanPeriod = 20 * time.Second
	// dirDebounce coalesces the burst of events an editor's save makes
	// (write temp, rename, chmod) into one scan. A file that appears
	// (created, or renamed into place: the atomic-write idiom) after a
	// quiet spell is read at once, before the window (see Run): the
	// kubelet reads a static pod file as soon as inotify reports it, and
	// the window alone would add its 100 ms to every new pod's start.
	dirDebounce = 100 * time.Millisecond
)

// SourceUpdate is the full desired set of one pod source.
type SourceUpdate struct {
	// Source is "file" (the manifest directory) or "api" (PodStore).
	Source string
	// Pods are defaulted and validated, each annotated
	// kubernetes.io/config.source=<Source> and, for the file source,
	// minikubelet.io/source-file=<path>. Sorted by file name, then by order
	// within the file.
	Pods []*v1.Pod
	// ConfigMaps and Secrets are the v1 ConfigMap and Secret documents of
	// the manifest files, which the pods' volumes and env refer to.
	ConfigMaps []*v1.ConfigMap
	Secrets    []*v1.Secret
	// Errors are the files that could not be used, with why; they never stop
	// the other files.
	Errors []FileError
	// Recreated are the UIDs of pods of Pods whose file was removed and
	// created again (same path, same UID) before a set without them
	// reached the consumer: the kubelet's file source reports the removal
	// and then the addition, so the pod is stopped and started again
	// (node e2e "MirrorPod ... should successfully recreate when file is
	// removed and recreated": its container's restart count becomes 1).
	// The consumer does the same. Only the manifest directory sets it,
	// and only for what file notifications saw (a rescan alone cannot
	// tell a file recreated from one left alone).
	Recreated []types.UID
	// Applied, when set, is closed by the consumer once it applied the set
	// (the agent holds its pods): the cluster source asks the agent whether
	// it finished a pod the set marks deleted only then (a pod first seen
	// marked gets its worker in that apply).
	Applied chan struct{}
}

// FileError is one manifest file that could not be used.
type FileError struct {
	// Path is the file (or the directory, when it could not be read).
	Path string
	// Err says why. It is a *ManifestError (errors.Is ErrInvalidManifest)
	// when the content was refused, else an I/O error.
	Err error
}

// DirSource is the static manifest directory as a pod source.
type DirSource struct {
	// dir is the directory, absolute: the path is part of each pod's derived
	// UID, so ./manifests and its absolute spelling must not differ.
	dir      string
	nodeName string
	logger   *slog.Logger
	clock    clock.WithTicker

	// The fields below are fixed before Run; tests change them.

	// watch turns file notifications on; off, only the rescan sees changes.
	watch bool
	// rescanPeriod is the safety-net rescan period (dirRescanPeriod).
	rescanPeriod time.Duration
	// scanned, when set, is called by Run's goroutine after every scan.
	scanned func()

	// files caches each manifest file's prepared objects by path, valid
	// while the file's content (its SHA-256) is unchanged: a rescan of an
	// unchanged directory decodes and validates nothing. Used by scan only
	// (Run's goroutine).
	files map[string]*dirFile
}

// dirFile is what a manifest file last held and gave.
type dirFile struct {
	sum     [sha256.Size]byte
	pods    []*v1.Pod
	cms     []*v1.ConfigMap
	secrets []*v1.Secret
	err     error
}

// NewDirSource returns the source of the manifest directory dir. clk may be
// nil (the real clock).
func NewDirSource(dir, nodeName string, logger *slog.Logger, clk clock.WithTicker) *DirSource {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &DirSource{
		dir:          filepath.Clean(dir),
		nodeName:     nodeName,
		logger:       logger.With("component", "manifest-dir", "dir", dir),
		clock:        clk,
		watch:        true,
		rescanPeriod: dirRescanPeriod,
	}
}

// Dir returns the (absolute) directory watched.
func (s *DirSource) Dir() string { return s.dir }

// Run sends the directory's complete pod set on out at start and whenever it
// changed: a file notification arms a ~100 ms window after which the
// directory is scanned, and a rescan every 20 s is the safety net. An update
// is sent only when the pods or the errors differ from the last one sent;
// while out is not read, newer sets replace the unsent one, so Run never
// blocks on its consumer. A missing directory is created (0755); one that
// cannot be created or read is reported as a FileError (Path: the
// directory), keeps the pods of the last successful scan, and is retried.
// Run returns when ctx ends.
func (s *DirSource) Run(ctx context.Context, out chan<- SourceUpdate) {
	w := s.newWatcher()
	if w != nil {
		defer w.close()
	}
	ticker := s.clock.NewTicker(s.rescanPeriod)
	defer ticker.Stop()

	var (
		// window fires when the coalescing window after an event ends;
		// nil while no window is open.
		window clock.Timer
		// sent and sentFP describe the last update out received.
		sent   bool
		sentFP [sha256.Size]byte
		// pending is the newest set not yet received by out, and pendingFP
		// its fingerprint.
		pending   *SourceUpdate
		pendingFP [sha256.Size]byte
		// last is the set of the last scan that could read the
		// directory: a directory that turns unreadable (permissions, a
		// failing disk) reports an error but removes neither the pods nor
		// the ConfigMaps and Secrets they use; lastFiles are the files it
		// came from.
		last      SourceUpdate
		lastFiles []fileSum
		// sentUIDs are the pods of the last set out received. gone holds
		// the files seen removed (a Remove or Rename notification, or a
		// scan that missed them) since, each with the sequence number
		// goneSeq gave it; pendingSeq is goneSeq at pending's scan: once
		// out received pending, the removals it reflects are forgotten.
		// A pod of sentUIDs whose file is in gone and back is Recreated.
		sentUIDs            map[types.UID]bool
		gone                = map[string]uint64{}
		goneSeq, pendingSeq uint64
	)
	markGone := func(path string) {
		goneSeq++
		gone[path] = goneSeq
	}
	// scan reads the directory; leading is the scan at a quiet spell's
	// first Create event, before the debounce window, which leaves out
	// files still empty (created, not yet written: the window's scan
	// reads them).
	scan := func(leading bool) {
		// Create the directory before watching it, watch it before reading
		// it: no change falls between.
		s.ensureDir()
		if w != nil {
			w.ensure(s.dir)
		}
		u, files := s.scanFiles(leading)
		if len(u.Errors) > 0 && u.Errors[0].Path == s.dir {
			// The same (shared, read-only) objects as last time.
			u.Pods, u.ConfigMaps, u.Secrets = last.Pods, last.ConfigMaps, last.Secrets
			files = lastFiles
		} else {
			present := make(map[string]bool, len(files))
			for _, f := range files {
				present[f.path] = true
			}
			for _, f := range lastFiles {
				if !present[f.path] {
					markGone(f.path)
				}
			}
			u.Recreated = recreatedPods(u.Pods, gone, sentUIDs)
			last, lastFiles = u, files
		}
		fp := fingerprint(files, u.Errors)
		switch {
		case len(u.Recreated) > 0:
			// The same set, maybe, but the consumer must see the
			// removal: never dropped as unchanged.
			pending, pendingFP, pendingSeq = &u, fp, goneSeq
		case pending != nil && fp == pendingFP, pending == nil && sent && fp == sentFP:
			// Nothing new for the consumer.
		case pending != nil && sent && fp == sentFP:
			// Changed and changed back before the consumer looked.
			pending = nil
		default:
			pending, pendingFP, pendingSeq = &u, fp, goneSeq
		}
		if s.scanned != nil {
			s.scanned()
		}
	}

	scan(false)
	for {
		var (
			sendC   chan<- SourceUpdate
			next    SourceUpdate
			windowC <-chan time.Time
		)
		if pending != nil {
			sendC, next = out, *pending
		}
		if window != nil {
			windowC = window.C()
		}
		select {
		case <-ctx.Done():
			if window != nil {
				window.Stop()
			}
			return
		case sendC <- next:
			sent, sentFP, pending = true, pendingFP, nil
			sentUIDs = make(map[types.UID]bool, len(next.Pods))
			for _, p := range next.Pods {
				sentUIDs[p.UID] = true
			}
			for path, seq := range gone {
				if seq <= pendingSeq {
					delete(gone, path)
				}
			}
		case ev := <-w.events():
			if !w.relevant(ev, s.dir) {
				break
			}
			if (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) && filepath.Clean(ev.Name) != s.dir {
				// Recorded inside a window too: the file may be back
				// by the window's scan.
				markGone(filepath.Clean(ev.Name))
			}
			if window != nil {
				break
			}
			if ev.Has(fsnotify.Create) && filepath.Clean(ev.Name) != s.dir {
				// A new file after a quiet spell: read now. Writes and
				// removals wait for the window (a file rewritten in
				// place may be half written); so does the rest of
				// this burst, and the window's scan sees its end.
				scan(true)
			}
			window = s.clock.NewTimer(dirDebounce)
		case err := <-w.errors():
			// Most likely the event queue overflowed: events were lost.
			s.logger.Warn("Manifest directory notification failed; rescanning", "err", err)
			if window == nil {
				window = s.clock.NewTimer(dirDebounce)
			}
		case <-windowC:
			window = nil
			scan(false)
		case <-ticker.C():
			scan(false)
		}
	}
}

// recreatedPods returns the UIDs of pods that the consumer has (sent)
// whose file is in gone: removed and back since.
func recreatedPods(pods []*v1.Pod, gone map[string]uint64, sent map[types.UID]bool) []types.UID {
	if len(gone) == 0 {
		return nil
	}
	var out []types.UID
	for _, p := range pods {
		if _, ok := gone[p.Annotations[AnnotationSourceFile]]; ok && sent[p.UID] {
			out = append(out, p.UID)
		}
	}
	return out
}

// isEmptyFile reports whether path is a regular file of size 0 (following
// symlinks, as readFile does).
func isEmptyFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

// fileSum names a manifest file's content: its path and SHA-256.
type fileSum struct {
	path string
	sum  [sha256.Size]byte
}

// Scan reads the directory once and returns its complete pod set.
func (s *DirSource) Scan() SourceUpdate {
	u, _ := s.scanFiles(false)
	return u
}

// scanFiles is scan, also returning the files whose objects the set holds.
// Files are taken in name order; a pod (namespace/name or UID) defined
// again by a later file makes that later file an error naming both. An
// unchanged file's objects are the same (shared) objects as at the last
// scan: consumers must not modify them (the agent does not).
func (s *DirSource) scanFiles(skipEmpty bool) (SourceUpdate, []fileSum) {
	u := SourceUpdate{Source: SourceFile}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		u.Errors = append(u.Errors, FileError{Path: s.dir, Err: fmt.Errorf("read manifest directory: %w", err)})
		return u, nil
	}
	var files []fileSum
	seen := map[string]bool{}
	defer func() {
		for path := range s.files {
			if !seen[path] {
				delete(s.files, path)
			}
		}
	}()

	byName := map[string]string{}     // namespace/name → file that defines it
	byUID := map[types.UID]string{}   // uid → file that uses it
	dataByName := map[string]string{} // kind/namespace/name → file
	// os.ReadDir sorts by name: the earlier file wins a conflict.
	for _, e := range entries {
		if !isManifestFileName(e.Name()) {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		var (
			pods    []*v1.Pod
			cms     []*v1.ConfigMap
			secrets []*v1.Secret
			sum     [sha256.Size]byte
			err     error
		)
		if f := s.files[path]; skipEmpty && isEmptyFile(path) {
			if f == nil {
				continue // created, not yet written
			}
			// Truncated to be written again: what it held until
			// the window's scan reads it.
			pods, cms, secrets, sum, err = f.pods, f.cms, f.secrets, f.sum, f.err
		} else {
			pods, cms, secrets, sum, err = s.readFile(path)
		}
		seen[path] = true
		if errors.Is(err, errNotAFile) {
			continue // a directory, or a symlink to one
		}
		if err != nil {
			u.Errors = append(u.Errors, FileError{Path: path, Err: err})
			continue
		}
		if err := checkCrossFile(pods, path, byName, byUID); err != nil {
			u.Errors = append(u.Errors, FileError{Path: path, Err: err})
			continue
		}
		if err := checkCrossFileData(cms, secrets, path, dataByName); err != nil {
			u.Errors = append(u.Errors, FileError{Path: path, Err: err})
			continue
		}
		u.ConfigMaps = append(u.ConfigMaps, cms...)
		u.Secrets = append(u.Secrets, secrets...)
		for _, p := range pods {
			byName[p.Namespace+"/"+p.Name] = path
			byUID[p.UID] = path
			u.Pods = append(u.Pods, p)
		}
		files = append(files, fileSum{path: path, sum: sum})
	}
	return u, files
}

// ensureDir creates the directory (0755) when it is missing. A failure is
// left for scan to report, as it cannot read the directory either.
func (s *DirSource) ensureDir() {
	if _, err := os.Stat(s.dir); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err := os.MkdirAll(s.dir, 0o755); err == nil {
		s.logger.Info("Created the manifest directory")
	}
}

// errNotAFile marks a directory entry that is not a file to read.
var errNotAFile = errors.New("not a regular file")

// readFile reads one manifest file and prepares its pods (PrepareManifest,
// with the path as the source: the path is part of the derived UID), each
// annotated with its source and file, and returns the content's SHA-256.
// A file whose content is what it was at the last scan gives the objects
// (or the error) of then, without decoding it again.
func (s *DirSource) readFile(path string) ([]*v1.Pod, []*v1.ConfigMap, []*v1.Secret, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	// Follows symlinks, as the kubelet does.
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, nil, nil, sum, errNotAFile
	}
	data, err := manifest.ReadManifestFile(path)
	if err != nil {
		return nil, nil, nil, sum, err
	}
	sum = sha256.Sum256(data)
	if f := s.files[path]; f != nil && f.sum == sum {
		return f.pods, f.cms, f.secrets, sum, f.err
	}
	pods, cms, secrets, err := manifest.PrepareObjects(data, path, s.nodeName)
	for _, p := range pods {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		// After the UID was derived: these never change it.
		p.Annotations[AnnotationConfigSource] = SourceFile
		p.Annotations[AnnotationSourceFile] = path
	}
	if s.files == nil {
		s.files = map[string]*dirFile{}
	}
	s.files[path] = &dirFile{sum: sum, pods: pods, cms: cms, secrets: secrets, err: err}
	return pods, cms, secrets, sum, err
}

// checkCrossFileData refuses ConfigMaps and Secrets an earlier file
// already defines.
func checkCrossFileData(cms []*v1.ConfigMap, secrets []*v1.Secret, path string, seen map[string]string) error {
	var problems []string
	keys := make([]string, 0, len(cms)+len(secrets))
	for _, c := range cms {
		keys = append(keys, "ConfigMap "+c.Namespace+"/"+c.Name)
	}
	for _, sc := range secrets {
		keys = append(keys, "Secret "+sc.Namespace+"/"+sc.Name)
	}
	for _, k := range keys {
		if other, ok := seen[k]; ok {
			problems = append(problems, fmt.Sprintf("%s is already defined in %s", k, other))
		}
	}
	if len(problems) > 0 {
		return &manifest.ManifestError{Source: path, Problems: problems}
	}
	for _, k := range keys {
		seen[k] = path
	}
	return nil
}

// checkCrossFile refuses pods already defined by an earlier file (by
// namespace/name, or by an explicit UID), naming that file, as a
// *ManifestError in PrepareManifest's words.
func checkCrossFile(pods []*v1.Pod, path string, byName map[string]string, byUID map[types.UID]string) error {
	var problems []string
	for _, p := range pods {
		key := p.Namespace + "/" + p.Name
		if first, dup := byName[key]; dup {
			e := field.Duplicate(field.NewPath("metadata", "name"), key)
			e.Detail = "also defined in " + first
			problems = append(problems, e.Error())
		} else if first, dup := byUID[p.UID]; dup {
			e := field.Duplicate(field.NewPath("metadata", "uid"), string(p.UID))
			e.Detail = "also used in " + first
			problems = append(problems, e.Error())
		}
	}
	if len(problems) > 0 {
		return &manifest.ManifestError{Source: path, Problems: problems}
	}
	return nil
}

// isManifestFileName reports whether a directory entry is read as a
// manifest: *.yaml, *.yml or *.json (any case), except dotfiles and editor
// and backup leftovers.
func isManifestFileName(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") {
		return false
	}
	lower := strings.ToLower(name)
	for _, junk := range []string{".swp", ".swx", ".bak", ".tmp"} {
		if strings.HasSuffix(lower, junk) {
			return false
		}
	}
	switch filepath.Ext(lower) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// fingerprint summarises an update, to tell whether it differs from the
// last one sent: the files its objects come from with their content's
// SHA-256 (the objects are a function of path and content), and the
// errors' text, in order.
func fingerprint(files []fileSum, errs []FileError) [sha256.Size]byte {
	h := sha256.New()
	for _, f := range files {
		h.Write([]byte(f.path))
		h.Write([]byte{0})
		h.Write(f.sum[:])
	}
	h.Write([]byte{1})
	for _, e := range errs {
		fmt.Fprintf(h, "%s\x00%v\x00", e.Path, e.Err)
	}
	var fp [sha256.Size]byte
	copy(fp[:], h.Sum(nil))
	return fp
}

// dirWatcher is the fsnotify watch of the manifest directory. A nil
// *dirWatcher (notifications unavailable or off) has nil channels, which a
// select never picks.
type dirWatcher struct {
	w      *fsnotify.Watcher
	logger *slog.Logger
	// watching is true while the directory is watched; it is re-added
	// after it was missing or replaced. Only Run's goroutine uses it.
	watching bool
	// warned avoids logging the same failure to watch at every rescan.
	warned bool
}

// newWatcher starts fsnotify, or returns nil (rescans only) when
// notifications are off or unavailable (e.g. out of inotify instances).
func (s *DirSource) newWatcher() *dirWatcher {
	if !s.watch {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.logger.Warn("File notifications unavailable; the manifest directory is rescanned every period only",
			"period", s.rescanPeriod, "err", err)
		return nil
	}
	return &dirWatcher{w: w, logger: s.logger}
}

// ensure watches dir if it is not watched yet.
func (d *dirWatcher) ensure(dir string) {
	if d.watching {
		return
	}
	if err := d.w.Add(dir); err != nil {
		if !d.warned {
			d.logger.Warn("Cannot watch the manifest directory; relying on the periodic rescan", "err", err)
			d.warned = true
		}
		return
	}
	d.watching, d.warned = true, false
}

// relevant reports whether ev may change the pod set. An event on the
// directory itself (removed, renamed) drops the watch so the next scan
// watches it again.
func (d *dirWatcher) relevant(ev fsnotify.Event, dir string) bool {
	if filepath.Clean(ev.Name) == dir {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			_ = d.w.Remove(dir) // may already be gone with the directory
			d.watching = false
		}
		return true
	}
	return isManifestFileName(filepath.Base(ev.Name))
}

// events returns the event channel, nil for a nil watcher.
func (d *dirWatcher) events() <-chan fsnotify.Event {
	if d == nil {
		return nil
	}
	return d.w.Events
}

// errors returns the error channel, nil for a nil watcher.
func (d *dirWatcher) errors() <-chan error {
	if d == nil {
		return nil
	}
	return d.w.Errors
}

// close stops fsnotify.
func (d *dirWatcher) close() { _ = d.w.Close() }
