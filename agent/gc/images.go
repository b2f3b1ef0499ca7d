package gc

// Over 600 lines: the image manager's loop, its detection of what is in use (image
// volumes included) and its removal, which share one lock and one record
// of first-seen times.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/cri"
)

// The kubelet's image GC defaults (pkg/kubelet/apis/config/v1beta1
// defaults.go, pkg/kubelet/kubelet.go).
const (
	// DefaultImageGCHighThresholdPercent is the image filesystem usage at
	// and above which unused images are removed.
	DefaultImageGCHighThresholdPercent = 85
	// DefaultImageGCLowThresholdPercent is the usage image GC frees down to.
	DefaultImageGCLowThresholdPercent = 80
	// DefaultImageMinimumGCAge is how long an image is kept after it was
	// first detected, used or not (it may have just been pulled for a
	// container about to start).
	DefaultImageMinimumGCAge = 2 * time.Minute
	// ImageGCPeriod is how often image GC runs (the kubelet's
	// ImageGCPeriod).
	ImageGCPeriod = 5 * time.Minute
)

// Reasons an image was removed: the values of the reason label of
// kubelet_image_garbage_collected_total, as the kubelet's.
const (
	// ReasonSpace: the image filesystem was above the high threshold.
	ReasonSpace = "space"
	// ReasonAge: the image was unused for longer than the maximum age.
	ReasonAge = "age"
)

// Node event reasons of image GC (the kubelet's pkg/kubelet/events).
const (
	// EventFreeDiskSpaceFailed: GC could not free enough to get below the
	// low threshold.
	EventFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	// EventInvalidDiskCapacity: the image filesystem reports no capacity.
	EventInvalidDiskCapacity = "InvalidDiskCapacity"
	// EventImageGCFailed: a GC run failed (the runtime did not answer).
	EventImageGCFailed = "ImageGCFailed"
	// EventImageRemoved is minikubelet's: an image was removed, and why.
	EventImageRemoved = "ImageGarbageCollected"
)

// ImageService is the part of the CRI image service image GC uses
// (cri-api's signatures: cri.Client, cri.Instrumented and the fakes
// satisfy it).
type ImageService interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// ContainerLister lists the runtime's containers and tells of one
// (cri-api's signatures): a container's status lists its mounts, whose
// Image is the image an image volume mounts.
type ContainerLister interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// FsStats is the size of a filesystem, from statfs(2).
type FsStats struct {
	// Capacity is the filesystem's size in bytes.
	Capacity uint64
	// Available is what an unprivileged writer may still use, in bytes.
	Available uint64
}

// StatFS returns the stats of the filesystem holding path.
type StatFS func(path string) (FsStats, error)

// ImagePolicy is when images are removed (the kubelet's ImageGCPolicy).
type ImagePolicy struct {
	// HighThresholdPercent is the image filesystem usage (percent of its
	// capacity in use) at and above which unused images are removed; 100
	// turns removal for space off.
	HighThresholdPercent int
	// LowThresholdPercent is the usage removal for space aims for.
	LowThresholdPercent int
	// MinAge is how long after its first detection an image is never
	// removed for space.
	MinAge time.Duration
	// MaxAge removes images unused for longer, whatever the usage; 0 is
	// off.
	MaxAge time.Duration
}

// DefaultImagePolicy is the kubelet's.
func DefaultImagePolicy() ImagePolicy {
	return ImagePolicy{
		HighThresholdPercent: DefaultImageGCHighThresholdPercent,
		LowThresholdPercent:  DefaultImageGCLowThresholdPercent,
		MinAge:               DefaultImageMinimumGCAge,
	}
}

// Validate checks the policy as the kubelet validates its configuration.
func (p ImagePolicy) Validate() error {
	var errs []error
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("image GC high threshold %d%% must be between 0 and 100", p.HighThresholdPercent))
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("image GC low threshold %d%% must be between 0 and 100", p.LowThresholdPercent))
	}
	if p.LowThresholdPercent >= p.HighThresholdPercent && p.HighThresholdPercent != 100 {
		errs = append(errs, fmt.Errorf("image GC low threshold %d%% must be below the high threshold %d%%", p.LowThresholdPercent, p.HighThresholdPercent))
	}
	if p.MinAge < 0 {
		errs = append(errs, fmt.Errorf("image minimum GC age %s must not be negative", p.MinAge))
	}
	if p.MaxAge < 0 || (p.MaxAge != 0 && p.MaxAge <= p.MinAge) {
		errs = append(errs, fmt.Errorf("image maximum GC age %s must be 0 (off) or above the minimum age %s", p.MaxAge, p.MinAge))
	}
	return errors.Join(errs...)
}

// ImageManagerConfig are an ImageManager's collaborators.
type ImageManagerConfig struct {
	// Images is the runtime's image service.
	Images ImageService
	// Containers lists every container on the runtime, whoever made it:
	// an image any of them uses, or mounts as an image volume, is in use
	// (as the kubelet counts).
	Containers ContainerLister
	// StatFS measures the image filesystem; nil is statfs(2).
	StatFS StatFS
	// Policy says when images go.
	Policy ImagePolicy
	// Clock is the time source; nil is the real clock.
	Clock clock.WithTicker
	// Logger gets one line per removed image and per failed run.
	Logger *slog.Logger
	// Registerer gets kubelet_image_garbage_collected_total; nil registers
	// nothing.
	Registerer prometheus.Registerer
	// Event, if set, is told node events: type (Normal, Warning), reason
	// and message.
	Event func(eventType, reason, message string)
	// RuntimeTimeout bounds each CRI call; 0 is 2 minutes (RemoveImage of
	// a big image takes a while).
	RuntimeTimeout time.Duration
	// PressureCheckPeriod is how often Run checks the usage between
	// collections (DefaultPressureCheckPeriod if 0, never if negative).
	PressureCheckPeriod time.Duration
	// Keep are images (ID, tag or digest) never removed, as if always in
	// use: the runtime's sandbox image, which containerd 1.6 does not mark
	// pinned (the kubelet always kept its sandbox image).
	Keep []string
}

// ImageManager is the image garbage collector. Its methods are safe for
// concurrent use; Run is called once.
type ImageManager struct {
	cfg       ImageManagerConfig
	logger    *slog.Logger
	collected *prometheus.CounterVec

	// trigger asks Run for a collection now; capacity 1 so Trigger never
	// blocks and requests made during a run coalesce into one more run.
	trigger chan struct{}

	// mu guards records and status; a collection holds it throughout, so
	// collections never overlap.
	mu sync.Mutex
	// records holds what is known of each image on the runtime, by image
	// ID; images gone from the runtime are dropped at each detection.
	records map[string]*imageRecord
	// status is the loop's health (house style rule 18).
	status LoopStatus
}

// imageRecord is what image GC remembers of one image.
type imageRecord struct {
	// firstDetected is when the agent first saw the image (its start, for
	// images present then).
	firstDetected time.Time
	// lastUsed is when a container last used it; zero if none did since
	// the agent started.
	lastUsed time.Time
	// size is the image's size as the runtime reports it.
	size uint64
	// name is a tag or digest to show in logs (the ID if it has none).
	name string
}

// NewImageManager builds an image GC manager. Nothing runs until Run or
// GarbageCollect.
func NewImageManager(cfg ImageManagerConfig) (*ImageManager, error) {
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.StatFS == nil {
		cfg.StatFS = Statfs
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RuntimeTimeout == 0 {
		cfg.RuntimeTimeout = 2 * time.Minute
	}
	m := &ImageManager{
		cfg:     cfg,
		logger:  cfg.Logger.With("component", "image-gc"),
		trigger: make(chan struct{}, 1),
		records: map[string]*imageRecord{},
		collected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_image_garbage_collected_total",
			Help: "Total number of images garbage collected by the kubelet, whether through disk usage or image age.",
		}, []string{"reason"}),
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(m.collected); err != nil {
			return nil, fmt.Errorf("register image GC metrics: %w", err)
		}
		if err := registerStatus(cfg.Registerer, "image", m.Status); err != nil {
			return nil, fmt.Errorf("register image GC metrics: %w", err)
		}
	}
	return m, nil
}

// Trigger asks Run for a collection as soon as possible; it never blocks.
func (m *ImageManager) Trigger() {
	select {
	case m.trigger <- struct{}{}:
	default:
	}
}

// Status returns the loop's health.
func (m *ImageManager) Status() LoopStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// DefaultPressureCheckPeriod is how often Run looks at the image
// filesystem's usage between collections: the kubelet's eviction
// monitoring interval, at which its eviction manager reclaims unused
// images once imagefs.available is below its threshold, without waiting
// for the next image GC period.
const DefaultPressureCheckPeriod = 10 * time.Second

// Run detects the images present at start (those in use count as used
// now), then collects every period (ImageGCPeriod if 0), on Trigger, and
// as soon as a pressure check (every PressureCheckPeriod) finds the image
// filesystem at or above the high threshold, until ctx ends. After a
// collection that left the usage above the high threshold (nothing more
// could go), pressure checks wait for the next periodic collection, so a
// full disk of used images does not cost a collection every 10 seconds.
func (m *ImageManager) Run(ctx context.Context, period time.Duration) {
	if period <= 0 {
		period = ImageGCPeriod
	}
	if err := m.Detect(ctx); err != nil {
		m.logger.Warn("Initial image detection failed; images are detected at the first collection", "err", err)
	}
	t := m.cfg.Clock.NewTicker(period)
	defer t.Stop()
	var pressure <-chan time.Time
	if p := m.cfg.PressureCheckPeriod; p >= 0 {
		if p == 0 {
			p = DefaultPressureCheckPeriod
		}
		pt := m.cfg.Clock.NewTicker(p)
		defer pt.Stop()
		pressure = pt.C()
	}
	// held: the last collection could not get below the high threshold;
	// pressure checks wait for the next periodic or triggered run.
	held := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-m.trigger:
		case <-pressure:
			start := time.Now() // wall time: the cost, whatever the clock
			over := !held && m.overHigh(ctx)
			m.addBusy(time.Since(start))
			if !over {
				continue
			}
		}
		start := time.Now()
		res, err := m.Collect(ctx)
		m.addBusy(time.Since(start))
		if err != nil {
			m.logger.Warn("Image garbage collection failed", "err", err)
			m.event("Warning", EventImageGCFailed, err.Error())
		}
		held = err != nil && res.UsagePercent >= 0 && len(res.Removed) == 0
	}
}

// addBusy accounts for time spent working.
func (m *ImageManager) addBusy(d time.Duration) {
	m.mu.Lock()
	m.status.Busy += d
	m.mu.Unlock()
}

// overHigh reports whether the image filesystem is at or above the high
// threshold now; a failed measurement says no (the periodic collection
// reports it).
func (m *ImageManager) overHigh(ctx context.Context) bool {
	if m.cfg.Policy.HighThresholdPercent == 100 {
		return false
	}
	capacity, available, _, err := m.imageFs(ctx)
	if err != nil {
		return false
	}
	return 100-int(available*100/capacity) >= m.cfg.Policy.HighThresholdPercent
}

// Detect records the runtime's images: new ones as detected now, those a
// container uses as used now. Images no longer on the runtime are
// forgotten.
func (m *ImageManager) Detect(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.detectLocked(ctx, m.cfg.Clock.Now())
	return err
}

// candidate is an image image GC may remove.
type candidate struct {
	id string
	imageRecord
}

// detectLocked lists images and containers, updates the records at now
// and returns the images that may be removed (not pinned, not in use), in
// eviction order: least recently used first, never used before used,
// ties broken by first detection (the kubelet's byLastUsedAndDetected).
func (m *ImageManager) detectLocked(ctx context.Context, now time.Time) ([]candidate, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.RuntimeTimeout)
	defer cancel()
	images, err := m.cfg.Images.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	// Every container the runtime lists, in any state, of any agent or
	// none: an exited container still refers to its image.
	ctrs, err := m.cfg.Containers.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	inUse := make(map[string]bool, 2*len(ctrs)+len(m.cfg.Keep))
	for _, k := range m.cfg.Keep {
		inUse[k] = true
	}
	for _, c := range ctrs {
		for _, ref := range []string{c.GetImageRef(), c.GetImageId(), c.GetImage().GetImage()} {
			if ref != "" {
				inUse[ref] = true
			}
		}
	}
	if err := m.addImageVolumes(ctx, images, ctrs, inUse); err != nil {
		return nil, err
	}
	present := make(map[string]bool, len(images))
	var out []candidate
	for _, img := range images {
		id := img.GetId()
		if id == "" {
			continue
		}
		present[id] = true
		rec := m.records[id]
		if rec == nil {
			rec = &imageRecord{firstDetected: now}
			m.records[id] = rec
		}
		rec.size = img.GetSize()
		rec.name = imageName(img)
		used := imageUsed(img, inUse)
		if used {
			rec.lastUsed = now
		}
		if img.GetPinned() || used {
			continue
		}
		out = append(out, candidate{id: id, imageRecord: *rec})
	}
	for id := range m.records {
		if !present[id] {
			delete(m.records, id)
		}
	}
	slices.SortFunc(out, func(a, b candidate) int {
		if c := a.lastUsed.Compare(b.lastUsed); c != 0 {
			return c
		}
		if c := a.firstDetected.Compare(b.firstDetected); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out, nil
}

// addImageVolumes adds to inUse the images the containers mount as image
// volumes (their status's Mount.Image), as the kubelet's handleImageVolumes
// does: an image a live pod mounts is in use, and containerd's snapshot of
// it would go with it. It asks for each container's status (the list does
// not carry mounts) only when some image would otherwise be a candidate
// for removal. A container gone meanwhile is skipped.
func (m *ImageManager) addImageVolumes(ctx context.Context, images []*runtimeapi.Image, ctrs []*runtimeapi.Container, inUse map[string]bool) error {
	if !slices.ContainsFunc(images, func(img *runtimeapi.Image) bool { return !img.GetPinned() && !imageUsed(img, inUse) }) {
		return nil
	}
	for _, c := range ctrs {
		resp, err := m.cfg.Containers.ContainerStatus(ctx, c.GetId(), false)
		if cri.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("status of container %s: %w", c.GetId(), err)
		}
		for _, mnt := range resp.GetStatus().GetMounts() {
			if ref := mnt.GetImage().GetImage(); ref != "" {
				inUse[ref] = true
			}
		}
	}
	return nil
}

// imageUsed reports whether any container refers to img by ID, tag or
// digest.
func imageUsed(img *runtimeapi.Image, inUse map[string]bool) bool {
	if inUse[img.GetId()] {
		return true
	}
	for _, r := range img.GetRepoTags() {
		if inUse[r] {
			return true
		}
	}
	for _, r := range img.GetRepoDigests() {
		if inUse[r] {
			return true
		}
	}
	return false
}

// imageName is the name to show for img: its first tag, else its first
// digest, else its ID.
func imageName(img *runtimeapi.Image) string {
	if t := img.GetRepoTags(); len(t) > 0 {
		return t[0]
	}
	if d := img.GetRepoDigests(); len(d) > 0 {
		return d[0]
	}
	return img.GetId()
}

// Result is what one collection did.
type Result struct {
	// UsagePercent is the image filesystem's usage before the collection
	// (percent of capacity in use); -1 if it was not measured.
	UsagePercent int
	// Removed are the removed images' names, in removal order.
	Removed []string
	// Freed is the summed size of the removed images.
	Freed uint64
}

// GarbageCollect runs one collection, as the kubelet's GarbageCollect:
// images unused for longer than MaxAge go first; then, if the image
// filesystem is at or above the high threshold, unused images older than
// MinAge go, least recently used first, until what they free brings the
// usage down to the low threshold.
func (m *ImageManager) GarbageCollect(ctx context.Context) error {
	_, err := m.Collect(ctx)
	return err
}

// Collect is GarbageCollect returning what it did.
func (m *ImageManager) Collect(ctx context.Context) (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	res, err := m.collectLocked(ctx)
	m.status.Runs++
	m.status.Removed += len(res.Removed)
	if err != nil {
		m.status.Failures++
		m.status.ConsecutiveFailures++
		m.status.LastError = err.Error()
	} else {
		m.status.ConsecutiveFailures = 0
		m.status.LastSuccess = m.cfg.Clock.Now()
	}
	return res, err
}

func (m *ImageManager) collectLocked(ctx context.Context) (Result, error) {
	res := Result{UsagePercent: -1}
	now := m.cfg.Clock.Now()
	images, err := m.detectLocked(ctx, now)
	if err != nil {
		return res, err
	}
	var errs []error

	// Step 1: images unused for longer than the maximum age, whatever the
	// usage. An image never used since the agent started counts as unused
	// since it was detected (the kubelet waits MaxAge after its start for
	// the same reason: not to remove what it merely has not seen in use).
	if p := m.cfg.Policy; p.MaxAge > 0 {
		kept := images[:0]
		for _, img := range images {
			unusedSince := img.lastUsed
			if unusedSince.IsZero() {
				unusedSince = img.firstDetected
			}
			if idle := now.Sub(unusedSince); idle > p.MaxAge {
				if err := m.remove(ctx, img, ReasonAge, fmt.Sprintf("unused for %s, above the maximum age %s", idle.Round(time.Second), p.MaxAge)); err != nil {
					errs = append(errs, err)
					kept = append(kept, img)
					continue
				}
				res.Removed = append(res.Removed, img.name)
				res.Freed += img.size
				continue
			}
			kept = append(kept, img)
		}
		images = kept
	}

	// Step 2: disk usage.
	capacity, available, mountpoint, err := m.imageFs(ctx)
	if err != nil {
		errs = append(errs, err)
		return res, errors.Join(errs...)
	}
	usage := 100 - int(available*100/capacity)
	res.UsagePercent = usage
	if usage < m.cfg.Policy.HighThresholdPercent || m.cfg.Policy.HighThresholdPercent == 100 {
		return res, errors.Join(errs...)
	}
	// Free enough to leave LowThresholdPercent in use.
	target := int64(capacity*uint64(100-m.cfg.Policy.LowThresholdPercent)/100) - int64(available)
	m.logger.Info("Image filesystem usage is at or above the high threshold; removing unused images",
		"usagePercent", usage, "highThresholdPercent", m.cfg.Policy.HighThresholdPercent,
		"lowThresholdPercent", m.cfg.Policy.LowThresholdPercent, "bytesToFree", target, "mountpoint", mountpoint)
	var freed int64
	for _, img := range images {
		if freed >= target {
			break
		}
		if age := now.Sub(img.firstDetected); age < m.cfg.Policy.MinAge {
			continue
		}
		why := fmt.Sprintf("image filesystem %d%% full (high threshold %d%%, freeing %d bytes down to %d%%)",
			usage, m.cfg.Policy.HighThresholdPercent, target, m.cfg.Policy.LowThresholdPercent)
		if err := m.remove(ctx, img, ReasonSpace, why); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += int64(img.size)
		res.Removed = append(res.Removed, img.name)
		res.Freed += img.size
	}
	if freed < target {
		err := fmt.Errorf("failed to garbage collect required amount of images: attempted to free %d bytes, but only found %d bytes eligible to free", target, freed)
		m.event("Warning", EventFreeDiskSpaceFailed, err.Error())
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// imageFs measures the filesystem holding the runtime's images: the
// runtime names it (ImageFsInfo's mountpoint), statfs sizes it, as the
// kubelet asks cadvisor for the filesystem of that mountpoint.
func (m *ImageManager) imageFs(ctx context.Context) (capacity, available uint64, mountpoint string, err error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.RuntimeTimeout)
	defer cancel()
	info, err := m.cfg.Images.ImageFsInfo(ctx)
	if err != nil {
		return 0, 0, "", fmt.Errorf("image filesystem info: %w", err)
	}
	fss := info.GetImageFilesystems()
	if len(fss) == 0 || fss[0].GetFsId().GetMountpoint() == "" {
		return 0, 0, "", errors.New("image filesystem info: the runtime names no image filesystem")
	}
	mountpoint = fss[0].GetFsId().GetMountpoint()
	st, err := m.cfg.StatFS(mountpoint)
	if err != nil {
		return 0, 0, mountpoint, fmt.Errorf("size the image filesystem at %s: %w", mountpoint, err)
	}
	if st.Capacity == 0 {
		err := fmt.Errorf("invalid capacity 0 on the image filesystem at %s", mountpoint)
		m.event("Warning", EventInvalidDiskCapacity, err.Error())
		return 0, 0, mountpoint, err
	}
	available = min(st.Available, st.Capacity)
	return st.Capacity, available, mountpoint, nil
}

// remove removes one image and accounts for it; why says what made it go.
func (m *ImageManager) remove(ctx context.Context, img candidate, reason, why string) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.RuntimeTimeout)
	defer cancel()
	if err := m.cfg.Images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: img.id}); err != nil {
		return fmt.Errorf("remove image %s (%s): %w", img.name, img.id, err)
	}
	delete(m.records, img.id)
	m.collected.WithLabelValues(reason).Inc()
	lastUsed := "never since the agent started"
	if !img.lastUsed.IsZero() {
		lastUsed = img.lastUsed.UTC().Format(time.RFC3339)
	}
	m.logger.Info("Removed an unused image", "image", img.name, "imageID", img.id, "size", img.size,
		"reason", reason, "why", why, "lastUsed", lastUsed, "firstDetected", img.firstDetected.UTC().Format(time.RFC3339))
	m.event("Normal", EventImageRemoved, fmt.Sprintf("Removed image %s (%d bytes, last used %s): %s", img.name, img.size, lastUsed, why))
	return nil
}

// event tells the configured Event function, if any.
func (m *ImageManager) event(eventType, reason, message string) {
	if m.cfg.Event != nil {
		m.cfg.Event(eventType, reason, message)
	}
}

// ReasonEviction labels images removed by the eviction manager's reclaim.
const ReasonEviction = "eviction"

// DeleteUnused removes every unused image older than MinAge, least
// recently used first, whatever the thresholds: the kubelet's
// DeleteUnusedImages, which its eviction manager calls to reclaim the
// image (or node) filesystem before it evicts pods for disk pressure.
func (m *ImageManager) DeleteUnused(ctx context.Context) (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	res := Result{UsagePercent: -1}
	now := m.cfg.Clock.Now()
	images, err := m.detectLocked(ctx, now)
	if err != nil {
		return res, err
	}
	var errs []error
	for _, img := range images {
		if now.Sub(img.firstDetected) < m.cfg.Policy.MinAge {
			continue
		}
		if err := m.remove(ctx, img, ReasonEviction, "the node is under disk pressure (eviction manager reclaim)"); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Removed = append(res.Removed, img.name)
		res.Freed += img.size
	}
	m.status.Removed += len(res.Removed)
	return res, errors.Join(errs...)
}
