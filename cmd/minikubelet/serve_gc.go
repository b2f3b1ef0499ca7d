package main

// Garbage collection flags of `serve` (issue #21), kept out of serve.go:
// the kubelet's image GC flags, plus the periods of both collectors for
// tests and impatient nodes.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/gc"
	"github.com/minikubelet/minikubelet/cri"
)

// gcFlags are serve's garbage collection settings.
type gcFlags struct {
	policy          gc.ImagePolicy
	imageGCPeriod   time.Duration
	containerPeriod time.Duration
}

// register adds the flags to fs with the kubelet's defaults.
func (f *gcFlags) register(fs *flag.FlagSet) {
	d := gc.DefaultImagePolicy()
	fs.IntVar(&f.policy.HighThresholdPercent, "image-gc-high-threshold", d.HighThresholdPercent,
		"percent of the image filesystem in use at and above which unused images are removed (100: never for space)")
	fs.IntVar(&f.policy.LowThresholdPercent, "image-gc-low-threshold", d.LowThresholdPercent,
		"percent of the image filesystem in use image garbage collection frees down to")
	fs.DurationVar(&f.policy.MinAge, "image-minimum-gc-age", d.MinAge,
		"an image is never removed for space sooner than this after it was first seen")
	fs.DurationVar(&f.policy.MaxAge, "image-maximum-gc-age", 0,
		"remove images unused for longer than this, whatever the usage (0: off)")
	fs.DurationVar(&f.imageGCPeriod, "image-gc-period", gc.ImageGCPeriod,
		"how often image garbage collection runs (the kubelet's 5m)")
	fs.DurationVar(&f.containerPeriod, "container-gc-period", gc.ContainerGCPeriod,
		"how often dead containers and sandboxes of gone pods, and their logs, are removed (the kubelet's 1m)")
}

// validate checks the settings; a usage error (exit code 2) if wrong.
func (f *gcFlags) validate() error {
	if err := f.policy.Validate(); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("image garbage collection: %w", err)}
	}
	if f.imageGCPeriod <= 0 || f.containerPeriod <= 0 {
		return &exitError{code: 2, err: errors.New("--image-gc-period and --container-gc-period must be positive")}
	}
	return nil
}

// start validates the settings and starts image and container GC for a's
// pods on the runtime behind inst; they stop with ctx. The collectors are
// returned for the eviction manager's reclaim.
func (f *gcFlags) start(ctx context.Context, a *agent.Agent, inst *cri.Instrumented, logger *slog.Logger) (gc.Reclaimer, error) {
	if err := f.validate(); err != nil {
		return gc.Reclaimer{}, err
	}
	// The sandbox image stays, pinned by the runtime or not.
	var keep []string
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	st, err := inst.Status(sctx, true)
	cancel()
	if err != nil {
		logger.Warn("Could not ask the runtime for its sandbox image; image GC keeps it only if the runtime pins it", "err", err)
	} else if img := cri.SandboxImage(st.GetInfo()); img != "" {
		keep = append(keep, img)
	}
	images, err := gc.NewImageManager(gc.ImageManagerConfig{
		Keep:       keep,
		Images:     inst,
		Containers: inst, // every container on the runtime, whoever made it
		Policy:     f.policy,
		Logger:     logger,
		Registerer: a.MetricsRegisterer(),
		// TODO(gc): node events in cluster mode (issue #21); the log line
		// of each removal names the image and why meanwhile.
	})
	if err != nil {
		return gc.Reclaimer{}, err
	}
	containers, err := a.NewContainerGC()
	if err != nil {
		return gc.Reclaimer{}, err
	}
	logger.Info("Garbage collection", "keepImages", keep, "imageGCHighThresholdPercent", f.policy.HighThresholdPercent,
		"imageGCLowThresholdPercent", f.policy.LowThresholdPercent, "imageMinimumGCAge", f.policy.MinAge,
		"imageMaximumGCAge", f.policy.MaxAge, "imageGCPeriod", f.imageGCPeriod, "containerGCPeriod", f.containerPeriod)
	go images.Run(ctx, f.imageGCPeriod)
	go containers.Run(ctx, f.containerPeriod)
	return gc.Reclaimer{Images: images, Containers: containers}, nil
}
