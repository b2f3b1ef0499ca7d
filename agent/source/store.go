package source

// Over 600 lines: the pod store's one commit path (files, fsync, group commit,
// generation) must be read as a whole to see its crash safety; its
// ConfigMaps and Secrets, final statuses and replace are in store_*.go.

// The pods accepted through the API, as manifests in the daemon's root dir
// (house style rule 5: manifest files are the only persisted desired state).
// One file per pod, <dir>/<namespace>_<name>.yaml, holding the pod as
// submitted; reading it back yields the same defaulted pod with the same UID,
// so a restarted daemon adopts the running pod instead of recreating it.
//
// The ConfigMaps and Secrets accepted through the API live beside them, in
// <dir>/configmaps/<namespace>_<name>.yaml and <dir>/secrets/…, written the
// same way (atomically, mode 0600 in 0700 directories), defaulted as the
// API server would (a Secret's stringData already merged into data).
//
// The final status of a pod that finished lives in <dir>/status/<uid>.json
// (store_status.go), so a restarted daemon never runs a finished pod again.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

var (
	// ErrPodExists classifies PodStore.Add of a namespace/name (or an
	// explicit UID) the store already holds.
	ErrPodExists = errors.New("pod already exists")
	// ErrPodNotFound classifies PodStore.Delete of a pod the store does not
	// hold.
	ErrPodNotFound = errors.New("pod not found")
	// ErrPodReplaced classifies PodStore.UpdatePod of a pod whose stored
	// UID changed meanwhile (it was deleted and created again).
	ErrPodReplaced = errors.New("the stored pod has another UID: it was deleted and created again")
	// ErrConfigDataExists classifies PodStore.AddConfigMap or AddSecret of
	// a namespace/name the store already holds.
	ErrConfigDataExists = errors.New("already exists")
	// ErrConfigDataNotFound classifies PodStore.DeleteConfigMap or
	// DeleteSecret of an object the store does not hold.
	ErrConfigDataNotFound = errors.New("not found")
)

// Subdirectories of the store directory for the API's ConfigMaps and
// Secrets. List skips directories, so they never read as pods.
const (
	storeConfigMapDir = "configmaps"
	storeSecretDir    = "secrets"
)

// storeTempPrefix starts the name of a file being written; a crash can leave
// one behind, which NewPodStore removes (loading ignores dotfiles).
const storeTempPrefix = ".tmp-"

// PodInvalidError is PodStore.Add's refusal of a pod by defaulting and
// validation. Errs are the field errors, ready for a 422
// (apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, Name, Errs)). It
// unwraps to a *ManifestError with the same problems, so errors.As with a
// *ManifestError and errors.Is(err, ErrInvalidManifest) also hold.
type PodInvalidError struct {
	Namespace, Name string
	// Errs lists every problem, as the validation produced it.
	Errs field.ErrorList
}

// Error lists the problems, one per line, like a ManifestError.
func (e *PodInvalidError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the problems as a *ManifestError.
func (e *PodInvalidError) Unwrap() error {
	me := &manifest.ManifestError{Source: apiPodSource(e.Namespace, e.Name)}
	for _, fe := range e.Errs {
		me.Problems = append(me.Problems, fe.Error())
	}
	return me
}

// PodStore keeps the pods accepted through the API as manifest files in one
// directory, and the same set in memory.
//
// The directory is read once, when the store opens; from then on the store
// is its only writer, and every Add and Delete changes the directory and the
// set in memory together (a file edited by hand while the daemon runs is
// read at its next start). Readers (Snapshot, List) never touch the disk.
//
// Writes are committed in groups: each request writes and fsyncs its own
// temporary file, then queues its rename (or removal). The first queued
// request commits everything queued — renames and removals in arrival order,
// which the set in memory then shows, then one fsync per directory they
// touched — while later requests queue for the next group. Every request
// returns only once its own change is durable (or failed), so a crash never
// loses an acknowledged change; under load, many requests share one
// directory fsync. (A change is shown while its directory is fsynced: a
// crash then keeps it or not, and it was not acknowledged.)
type PodStore struct {
	dir string
	// secretDir holds the Secrets (storeSecretDir of dir unless
	// NewPodStoreWithSecretDir put them on a tmpfs outside the root dir).
	secretDir string
	nodeName  string

	// mu guards the fields below. The stored set (pods, cms, secrets and
	// the bad files) is written only by the committing request, with mu
	// held; that request may read it without mu.
	mu sync.Mutex
	// pods, cms and secrets are the stored objects by file name, as the
	// files read back (shared with every snapshot: read-only).
	pods    map[string]*v1.Pod
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
	// badPods and badConfig hold, by path, the files (of pods, and of
	// ConfigMaps and Secrets) that could not be used when the store opened;
	// removing one (a Delete of its name) drops it.
	badPods, badConfig map[string]FileError
	// final holds the stored final statuses of the stored pods, by UID,
	// and badStatus the status files that could not be used when the
	// store opened, by path (store_status.go).
	final     map[types.UID]*v1.PodStatus
	badStatus map[string]FileError
	// gen counts the groups that changed the set; snap is the snapshot of
	// generation snapGen (nil before the first).
	gen     uint64
	snap    *SourceUpdate
	snapGen uint64
	// queue holds the requests waiting for the next group commit;
	// committing is set while a request commits one.
	queue      []*storeOp
	committing bool
	// updates (capacity 1) is signalled after every committed change.
	updates chan struct{}

	// Syncs counts fsyncs (files and directories), for tests and the
	// benchmark; batchHook, when set (tests), is called by the committing
	// request with the size of its group before committing it.
	Syncs     atomic.Int64
	batchHook func(n int)
}

// storeOp is one queued change: the rename of a written temporary file to
// its name (an add), or the removal of a file.
type storeOp struct {
	dir, name string
	// tmp is the fsynced temporary file of an add; "" for a removal.
	tmp string
	// pod is an added pod; uid its explicit UID, which no other pod may
	// use ("" when derived).
	pod *v1.Pod
	uid types.UID
	// what names the object in errors ("pod default/web"); exists and
	// notFound are the sentinels of an add of a taken name and of a
	// removal of a missing file.
	what             string
	exists, notFound error
	// replace renames the temporary file over the stored one, which must
	// exist (notFound otherwise): an update (source_store_replace.go).
	replace bool
	// sameUID, for an update in place, is the UID the stored pod must
	// still have (ErrPodReplaced otherwise).
	sameUID types.UID
	// statusOf is, for the write of a final status (store_status.go), the
	// file of its pod, which must hold a pod with UID uid.
	statusOf string
	// apply changes the set in memory once the file is renamed or
	// removed; it runs with mu held.
	apply func()

	// done is closed when the op is committed (err is its outcome), or
	// when it is to commit the next group (lead is set).
	done    chan struct{}
	lead    bool
	err     error
	applied bool
}

// NewPodStore opens (creating it 0700) the store directory dir, e.g.
// <root>/api-pods, removes temporary files a crash left behind, and reads
// the stored pods, ConfigMaps and Secrets.
//
// Its Secrets are files under dir too: the daemon opens its store with
// NewPodStoreWithSecretDir instead, which keeps them off the disk.
func NewPodStore(dir, nodeName string) (*PodStore, error) {
	return openPodStore(dir, filepath.Join(dir, storeSecretDir), nodeName)
}

// openPodStore is NewPodStore with the Secrets in secretDir.
func openPodStore(dir, secretDir, nodeName string) (*PodStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pod store: %w", err)
	}
	// The subdirectories of ConfigMaps and Secrets appear with their first
	// object (addConfig).
	// Leftovers in the status directory go with the stale statuses
	// (loadStatuses).
	for _, d := range []string{dir, filepath.Join(dir, storeConfigMapDir), secretDir} {
		entries, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) && d != dir {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read pod store: %w", err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), storeTempPrefix) {
				_ = os.Remove(filepath.Join(d, e.Name())) // a leftover; loading ignores it anyway
			}
		}
	}
	s := &PodStore{dir: dir, secretDir: secretDir, nodeName: nodeName, updates: make(chan struct{}, 1),
		badPods: map[string]FileError{}, badConfig: map[string]FileError{}, badStatus: map[string]FileError{}}
	var errs []FileError
	s.pods, errs = s.loadPods()
	for _, fe := range errs {
		s.badPods[fe.Path] = fe
	}
	s.final, errs = s.loadStatuses()
	for _, fe := range errs {
		s.badStatus[fe.Path] = fe
	}
	s.cms, s.secrets, errs = s.loadConfigData()
	for _, fe := range errs {
		s.badConfig[fe.Path] = fe
	}
	return s, nil
}

// storedForm is pod as the store keeps it (Add, ReplacePod, Prepare): a
// copy without status, typed v1/Pod, in the default namespace when it names
// none; its encoded bytes; and the pod prepared from those bytes, exactly
// as a restarted store reads them back.
func (s *PodStore) storedForm(pod *v1.Pod) (p *v1.Pod, data []byte, prepared *v1.Pod, err error) {
	p = pod.DeepCopy()
	p.Status = v1.PodStatus{}
	// The server's field: the store sets it (Add, ReplacePod, loadPods).
	p.CreationTimestamp = metav1.Time{}
	p.APIVersion, p.Kind = "v1", "Pod"
	if p.Namespace == "" {
		p.Namespace = v1.NamespaceDefault
	}
	data, err = manifest.EncodeStoredPod(p)
	if err != nil {
		// The YAML encoder fails on some of what validation refuses (a
		// label key of more than 1 024 bytes): report that instead.
		q := p.DeepCopy()
		q.Generation = 0 // the store's, never the pod's fault
		if _, verr := s.preparePod(q); verr != nil {
			return nil, nil, nil, verr
		}
		return nil, nil, nil, err
	}
	prepared, err = s.prepare(data)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, data, prepared, nil
}

// Add validates pod, as submitted through the API, and persists it. The
// status is dropped (it is never read from a manifest) and an empty namespace
// becomes "default". The pod gets PrepareManifest's defaults and validation
// with the source "api:<namespace>/<name>", so its UID is deterministic and
// a restarted daemon reads the same one. The file
// <dir>/<namespace>_<name>.yaml is written atomically and durably (temp
// file, fsync, rename, fsync of the directory) before Add returns.
//
// Add returns the defaulted pod, annotated kubernetes.io/config.source=api.
// A refused pod is a *PodInvalidError; a namespace/name (or explicit UID)
// already stored is an error wrapping ErrPodExists.
func (s *PodStore) Add(pod *v1.Pod) (*v1.Pod, error) {
	// metadata.generation is the server's: 1 for a new pod, whatever the
	// client sent (KEP 5067, as the API server since v1.33).
	pod = pod.DeepCopy()
	pod.Generation = 1
	p, data, prepared, err := s.storedForm(pod)
	if err != nil {
		return nil, err
	}
	key := p.Namespace + "/" + p.Name
	name := storeFileName(p.Namespace, p.Name)
	var uid types.UID
	if pod.UID != "" {
		uid = prepared.UID // an explicit UID could collide; derived ones include the name
	}
	// Refuse what is already stored before writing anything; the commit
	// checks again, against the directory and the changes queued before.
	s.mu.Lock()
	_, taken := s.pods[name]
	holder := s.uidHolderLocked(uid)
	s.mu.Unlock()
	if taken {
		return nil, fmt.Errorf("pod %s: %w", key, ErrPodExists)
	}
	if holder != nil {
		return nil, uidTakenError(key, uid, holder)
	}
	tmp, err := s.writeTemp(s.dir, name, data)
	if err != nil {
		return nil, fmt.Errorf("add pod %s: %w", key, err)
	}
	prepared.CreationTimestamp = stampCreation(tmp, time.Now())
	op := &storeOp{dir: s.dir, name: name, tmp: tmp, pod: prepared, uid: uid, what: "pod " + key, exists: ErrPodExists,
		apply: func() { s.pods[name] = prepared }}
	if err := s.commit(op); err != nil {
		return nil, err
	}
	return prepared.DeepCopy(), nil
}

// uidHolderLocked returns the stored pod using the explicit uid, or nil
// (also for ""); s.mu is held.
func (s *PodStore) uidHolderLocked(uid types.UID) *v1.Pod {
	if uid == "" {
		return nil
	}
	for _, p := range s.pods {
		if p.UID == uid {
			return p
		}
	}
	return nil
}

// uidTakenError is Add's refusal of an explicit UID another pod uses.
func uidTakenError(key string, uid types.UID, holder *v1.Pod) error {
	return fmt.Errorf("pod %s: uid %s is already used by pod %s/%s: %w", key, uid, holder.Namespace, holder.Name, ErrPodExists)
}

// Delete removes the pod's file, durably (the directory is fsynced) before
// it returns; a pod the store does not hold is an error wrapping
// ErrPodNotFound.
func (s *PodStore) Delete(namespace, name string) error {
	key := namespace + "/" + name
	// Names that no valid pod has could also be paths: refuse them first.
	if len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return fmt.Errorf("pod %s: %w", key, ErrPodNotFound)
	}
	file := storeFileName(namespace, name)
	return s.commit(&storeOp{dir: s.dir, name: file, what: "pod " + key, notFound: ErrPodNotFound,
		apply: func() { delete(s.pods, file) }})
}

// commit queues op and returns once it is committed: either by the group
// commit op joins, or by the one op leads (the first queued request while
// no commit runs, or the first of the queue when the previous commit ends).
func (s *PodStore) commit(op *storeOp) error {
	op.done = make(chan struct{})
	s.mu.Lock()
	s.queue = append(s.queue, op)
	if s.committing {
		s.mu.Unlock()
		<-op.done
		if !op.lead {
			return op.err
		}
		s.mu.Lock()
	}
	s.committing = true
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()

	if s.batchHook != nil {
		s.batchHook(len(batch))
	}
	dirs := s.renameBatch(batch)

	// The changes are visible in the directory: publish them (readers, the
	// daemon among them, may act while the directory is being fsynced; a
	// crash now leaves each change either done or not, never acknowledged).
	s.mu.Lock()
	changed, podsChanged := false, false
	for _, o := range batch {
		if o.applied {
			o.apply()
			path := filepath.Join(o.dir, o.name) // no longer a bad file
			delete(s.badPods, path)
			delete(s.badConfig, path)
			delete(s.badStatus, path)
			// A final status is no part of the set.
			changed = changed || o.statusOf == ""
			podsChanged = podsChanged || o.dir == s.dir
		}
	}
	var stale []string
	if podsChanged {
		// The final statuses of pods deleted or replaced go with them.
		stale = s.staleStatusesLocked()
		changed = changed || len(stale) > 0
	}
	if changed {
		s.gen++
		select {
		case s.updates <- struct{}{}:
		default: // a signal is pending already
		}
	}
	s.mu.Unlock()

	if removeStatusFiles(stale) {
		if _, ok := dirs[s.statusDir()]; !ok {
			dirs[s.statusDir()] = nil // best effort: no op fails for it
		}
	}
	s.syncDirs(dirs)

	s.mu.Lock()
	if len(s.queue) > 0 {
		next := s.queue[0]
		next.lead = true
		close(next.done)
	} else {
		s.committing = false
	}
	s.mu.Unlock()
	for _, o := range batch {
		if o != op {
			close(o.done)
		}
	}
	return op.err
}

// renameBatch renames and removes the batch's files in order, setting the
// outcome of the ops that fail and marking the others applied, and returns
// those by directory. Only the committing request runs it, so it reads the
// committed set without mu.
func (s *PodStore) renameBatch(batch []*storeOp) map[string][]*storeOp {
	dirs := map[string][]*storeOp{}
	added := map[types.UID]*v1.Pod{} // explicit UIDs added by this batch
	removed := map[string]bool{}     // pod files removed by this batch
	touched := map[string]bool{}     // pod files added, replaced or removed by this batch
	for _, o := range batch {
		path := filepath.Join(o.dir, o.name)
		if o.dir == s.dir {
			touched[o.name] = true
		}
		if o.statusOf != "" {
			// The final status of a pod (store_status.go): written over
			// any earlier one, as long as its pod is still stored.
			if o.err = s.checkStatus(o, touched); o.err == nil {
				if err := os.Rename(o.tmp, path); err != nil {
					o.err = fmt.Errorf("store %s: %w", o.what, err)
				}
			}
			if o.err != nil {
				_ = os.Remove(o.tmp)
				continue
			}
			o.applied = true
			dirs[o.dir] = append(dirs[o.dir], o)
			continue
		}
		if o.tmp == "" {
			if err := os.Remove(path); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					o.err = fmt.Errorf("%s: %w", o.what, o.notFound)
				} else {
					o.err = fmt.Errorf("delete %s: %w", o.what, err)
				}
				continue
			}
			if o.dir == s.dir {
				removed[o.name] = true
				for uid, p := range added {
					if storeFileName(p.Namespace, p.Name) == o.name {
						delete(added, uid)
					}
				}
			}
		} else {
			o.err = s.checkAdd(o, path, added, removed)
			// An update in place: the file must still hold the pod it
			// updates (a removal earlier in the batch fails the Lstat
			// of checkAdd; an add cannot follow it in the same batch,
			// Add refusing a stored name).
			if o.err == nil && o.sameUID != "" {
				if cur := s.pods[o.name]; cur == nil || cur.UID != o.sameUID {
					o.err = fmt.Errorf("%s: %w", o.what, ErrPodReplaced)
				}
			}
			if o.err == nil {
				if err := os.Rename(o.tmp, path); err != nil {
					o.err = fmt.Errorf("add %s: %w", o.what, err)
				}
			}
			if o.err != nil {
				_ = os.Remove(o.tmp)
				continue
			}
			if o.uid != "" {
				added[o.uid] = o.pod
			}
			delete(removed, o.name)
		}
		o.applied = true
		dirs[o.dir] = append(dirs[o.dir], o)
	}
	return dirs
}

// syncDirs fsyncs each directory of dirs once, which makes the renames and
// removals of its ops durable; an op whose directory fails fails too.
func (s *PodStore) syncDirs(dirs map[string][]*storeOp) {
	for dir, ops := range dirs {
		if err := s.syncDir(dir); err != nil {
			// The change is visible but may not survive a crash: it
			// stays in memory as on disk, and the request fails.
			for _, o := range ops {
				verb := "add"
				if o.statusOf != "" {
					verb = "store"
				} else if o.tmp == "" {
					verb = "delete"
				}
				o.err = fmt.Errorf("%s %s: %w", verb, o.what, err)
			}
		}
	}
}

// checkAdd refuses an add whose file exists (also one that could not be
// used when the store opened) or whose explicit UID a pod stored, or added
// earlier in the batch, uses.
func (s *PodStore) checkAdd(o *storeOp, path string, added map[types.UID]*v1.Pod, removed map[string]bool) error {
	switch _, err := os.Lstat(path); {
	case err == nil && !o.replace:
		return fmt.Errorf("%s: %w", o.what, o.exists)
	case errors.Is(err, fs.ErrNotExist) && o.replace:
		return fmt.Errorf("%s: %w", o.what, o.notFound)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("add %s: %w", o.what, err)
	}
	if o.uid == "" {
		return nil
	}
	key := o.pod.Namespace + "/" + o.pod.Name
	if p := added[o.uid]; p != nil {
		return uidTakenError(key, o.uid, p)
	}
	for n, p := range s.pods {
		if p.UID == o.uid && !removed[n] {
			return uidTakenError(key, o.uid, p)
		}
	}
	return nil
}

// List returns the stored pods, defaulted and validated as Add did (same
// UIDs), annotated kubernetes.io/config.source=api, in file name order,
// and the files that could not be used when the store opened (edited by
// hand, or refused by a newer minikubelet), each a FileError that never
// hides the others. The pods are shared: read-only.
func (s *PodStore) List() ([]*v1.Pod, []FileError) {
	u, _ := s.SnapshotGen()
	s.mu.Lock()
	defer s.mu.Unlock()
	return u.Pods, sortedErrors(s.badPods)
}

// Updates is signalled after every committed Add and Delete of a pod,
// ConfigMap or Secret: read the new set with Snapshot. The channel has
// capacity 1, so signals while one is pending merge into it.
func (s *PodStore) Updates() <-chan struct{} { return s.updates }

// Snapshot returns the complete set the store holds, as SourceUpdate
// {Source: "api"}: the pods, ConfigMaps and Secrets in file name order and
// the files that could not be used. Everything in it is shared with the
// store and later snapshots: read-only.
func (s *PodStore) Snapshot() SourceUpdate {
	u, _ := s.SnapshotGen()
	return u
}

// SnapshotGen is Snapshot with its generation: every change committed before
// the call is in a snapshot of the same or a later generation, and two
// snapshots of one generation are the same.
func (s *PodStore) SnapshotGen() (SourceUpdate, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap != nil && s.snapGen == s.gen {
		return *s.snap, s.gen
	}
	u := SourceUpdate{Source: SourceAPI}
	for _, name := range slices.Sorted(maps.Keys(s.pods)) {
		u.Pods = append(u.Pods, s.pods[name])
	}
	for _, name := range slices.Sorted(maps.Keys(s.cms)) {
		u.ConfigMaps = append(u.ConfigMaps, s.cms[name])
	}
	for _, name := range slices.Sorted(maps.Keys(s.secrets)) {
		u.Secrets = append(u.Secrets, s.secrets[name])
	}
	u.Errors = append(sortedErrors(s.badPods), sortedErrors(s.badConfig)...)
	s.snap, s.snapGen = &u, s.gen
	return u, s.gen
}

// sortedErrors lists bad files by path.
func sortedErrors(bad map[string]FileError) []FileError {
	var errs []FileError
	for _, path := range slices.Sorted(maps.Keys(bad)) {
		errs = append(errs, bad[path])
	}
	return errs
}

// loadPods reads every stored pod, defaulted and validated as Add did,
// with the files that cannot be used.
func (s *PodStore) loadPods() (map[string]*v1.Pod, []FileError) {
	pods := map[string]*v1.Pod{}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return pods, []FileError{{Path: s.dir, Err: fmt.Errorf("read pod store: %w", err)}}
	}
	var errs []FileError
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".yaml") || e.IsDir() {
			continue
		}
		path := filepath.Join(s.dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, FileError{Path: path, Err: fmt.Errorf("read stored pod: %w", err)})
			continue
		}
		p, err := s.prepare(data)
		if err != nil {
			errs = append(errs, FileError{Path: path, Err: err})
			continue
		}
		if want := storeFileName(p.Namespace, p.Name); name != want {
			errs = append(errs, FileError{Path: path, Err: fmt.Errorf("stored pod %s/%s belongs in %s: %w", p.Namespace, p.Name, want, manifest.ErrInvalidManifest)})
			continue
		}
		// The creation time is the file's (stampCreation), so a restarted
		// daemon shows the pod's age, as the API server keeps an object's.
		if fi, err := os.Stat(path); err == nil {
			p.CreationTimestamp = metav1.NewTime(fi.ModTime().Truncate(time.Second))
		}
		// A pod stored before the store kept metadata.generation: its
		// first generation.
		p.Generation = max(p.Generation, 1)
		pods[name] = p
	}
	return pods, errs
}

// prepare decodes one stored pod and applies PrepareManifest's defaults and
// checks, with the source "api:<namespace>/<name>". Refusals of the pod are a
// *PodInvalidError.
func (s *PodStore) prepare(data []byte) (*v1.Pod, error) {
	gen, data, err := splitGeneration(data)
	if err != nil {
		return nil, &manifest.ManifestError{Source: "api", Problems: []string{err.Error()}}
	}
	pods, err := manifest.DecodeManifest(data, "api")
	if err != nil {
		return nil, err
	}
	if len(pods) != 1 {
		return nil, &manifest.ManifestError{Source: "api", Problems: []string{fmt.Sprintf("a stored pod file must hold one Pod, not %d", len(pods))}}
	}
	p, err := s.preparePod(pods[0])
	if err != nil {
		return nil, err
	}
	p.Generation = gen
	return p, nil
}

// splitGeneration takes metadata.generation out of a stored pod file: the
// store writes it (it plays the API server's part, which sets it), while a
// manifest may not carry it (manifest.DecodeManifest refuses the field).
// It returns the generation (0 if none) and the document without it.
// Anything but one YAML mapping is returned as it is, for
// manifest.DecodeManifest to refuse with its line or document.
func splitGeneration(data []byte) (int64, []byte, error) {
	if bytes.Contains(data, []byte("\n---")) || bytes.HasPrefix(data, []byte("---")) {
		return 0, data, nil
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return 0, data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber() // keep int64 fields exact
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return 0, data, nil
	}
	meta, _ := obj["metadata"].(map[string]any)
	raw, ok := meta["generation"]
	if !ok {
		return 0, data, nil
	}
	delete(meta, "generation")
	n, _ := raw.(json.Number)
	gen, err := n.Int64()
	if err != nil || gen < 0 {
		return 0, nil, fmt.Errorf("metadata.generation: %v is not a generation", raw)
	}
	if j, err = json.Marshal(obj); err != nil {
		return 0, nil, fmt.Errorf("decode stored pod: %w", err)
	}
	return gen, j, nil
}

// preparePod is prepare for a decoded pod.
func (s *PodStore) preparePod(p *v1.Pod) (*v1.Pod, error) {
	if p.Namespace == "" {
		p.Namespace = v1.NamespaceDefault
	}
	manifest.SetPodDefaults(p, apiPodSource(p.Namespace, p.Name), s.nodeName)
	errs := manifest.ValidatePod(p)
	// As PrepareManifest: a pod bound to another node is not ours to run.
	if s.nodeName != "" && p.Spec.NodeName != s.nodeName {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nodeName"), p.Spec.NodeName,
			fmt.Sprintf("must be empty or the name of this node (%q)", s.nodeName)))
	}
	if len(errs) > 0 {
		return nil, &PodInvalidError{Namespace: p.Namespace, Name: p.Name, Errs: errs}
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[AnnotationConfigSource] = SourceAPI
	return p, nil
}

// stampCreation sets the modification time of a pod's file, written and
// not yet renamed, to its creation time (at, at the API's precision of a
// second) and returns that time: loadPods reads it back as the pod's
// creationTimestamp. A file system that cannot set it leaves the write's
// time, which is within the same second or so.
func stampCreation(tmp string, at time.Time) metav1.Time {
	at = at.Truncate(time.Second)
	_ = os.Chtimes(tmp, at, at)
	return metav1.NewTime(at)
}

// apiPodSource is the source an API pod's UID is derived from.
func apiPodSource(namespace, name string) string { return "api:" + namespace + "/" + name }

// storeFileName is the file of a pod. A namespace (DNS label) and a name (DNS
// subdomain) never contain "_" or "/", so the name is unambiguous and stays
// in the directory.
func storeFileName(namespace, name string) string { return namespace + "_" + name + ".yaml" }

// writeTemp writes data to a new temporary file in dir for the file name,
// fsyncs it and returns its path: renamed to name and followed by an fsync
// of dir, it makes name hold data completely even across a crash or power
// loss, or keep its old state. The file is 0600.
func (s *PodStore) writeTemp(dir, name string, data []byte) (_ string, retErr error) {
	f, err := os.CreateTemp(dir, storeTempPrefix+name+"-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	defer func() {
		if retErr != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return "", err
	}
	if err := f.Chmod(0o600); err != nil {
		return "", err
	}
	s.Syncs.Add(1)
	if err := f.Sync(); err != nil {
		return "", err
	}
	return tmp, f.Close()
}

// syncDir fsyncs a directory, making renames and removals in it durable.
func (s *PodStore) syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	s.Syncs.Add(1)
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
