package main

// Eviction flags of `serve` (issue #21): the kubelet's --eviction-* flags
// with its defaults, and the monitoring period for tests.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/gc"
	"github.com/minikubelet/minikubelet/cri"
)

// evictFlags are serve's eviction settings.
type evictFlags struct {
	hard, soft, softGrace, minReclaim string
	maxPodGrace                       int64
	transition, period, volumeStats   time.Duration
}

// register adds the flags to fs with the kubelet's defaults.
func (f *evictFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.hard, "eviction-hard", eviction.DefaultEvictionHard,
		"hard eviction thresholds, signal<quantity or signal<percent (signals: memory.available, allocatableMemory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available; <0 turns one off)")
	fs.StringVar(&f.soft, "eviction-soft", "", "soft eviction thresholds, as --eviction-hard; each needs a grace period")
	fs.StringVar(&f.softGrace, "eviction-soft-grace-period", "", "how long each soft threshold must hold before pods are evicted, e.g. memory.available=1m30s")
	fs.Int64Var(&f.maxPodGrace, "eviction-max-pod-grace-period", 0, "grace period, in seconds, of a pod evicted for a soft threshold, or the pod's terminationGracePeriodSeconds if shorter (0: at once)")
	fs.DurationVar(&f.transition, "eviction-pressure-transition-period", eviction.DefaultPressureTransitionPeriod,
		"how long a pressure condition stays true after its threshold was last crossed")
	fs.StringVar(&f.minReclaim, "eviction-minimum-reclaim", "", "how far above its threshold a signal must be back before a met threshold counts as resolved, e.g. nodefs.available=500Mi")
	fs.DurationVar(&f.period, "eviction-monitoring-period", eviction.DefaultPeriod,
		"how often the eviction signals are observed (the kubelet's 10s housekeeping; shorter for tests)")
	fs.DurationVar(&f.volumeStats, "volume-stats-agg-period", eviction.DefaultVolumeStatsAggPeriod,
		"how often each pod's emptyDirs, pod directory and logs are walked for local storage limits and disk eviction: 1 to 2 periods apart, as the kubelet's (writable layers are read every eviction cycle)")
}

// config validates the flags into the agent's configuration; a usage
// error (exit code 2) if wrong.
func (f *evictFlags) config() (eviction.Config, error) {
	ths, err := eviction.ParseThresholds(f.hard, f.soft, f.softGrace)
	if err != nil {
		return eviction.Config{}, &exitError{code: 2, err: err}
	}
	mr, err := eviction.ParseMinimumReclaim(f.minReclaim)
	if err != nil {
		return eviction.Config{}, &exitError{code: 2, err: err}
	}
	if f.period <= 0 || f.transition < 0 {
		return eviction.Config{}, &exitError{code: 2, err: errors.New("--eviction-monitoring-period must be positive and --eviction-pressure-transition-period not negative")}
	}
	// The kubelet turns volume stats off with a negative period; here the
	// walks are what local storage limits are checked against.
	if f.volumeStats <= 0 {
		return eviction.Config{}, &exitError{code: 2, err: errors.New("--volume-stats-agg-period must be positive: the walks it paces are what local storage limits are checked against")}
	}
	return eviction.Config{Thresholds: ths, MinimumReclaim: mr, MaxPodGracePeriod: f.maxPodGrace,
		PressureTransitionPeriod: f.transition, Period: f.period, VolumeStatsAggPeriod: f.volumeStats}, nil
}

// start enables eviction on a and runs it until ctx ends.
func (f *evictFlags) start(ctx context.Context, a *agent.Agent, inst *cri.Instrumented, g gc.Reclaimer, logger *slog.Logger) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	cfg.Stats = a.NewEvictionStats(inst)
	cfg.Reclaim = g
	if err := a.EnableEviction(cfg); err != nil {
		return err
	}
	var names []string
	for _, t := range cfg.Thresholds {
		names = append(names, fmt.Sprintf("%s(grace %s)", t, t.GracePeriod))
	}
	logger.Info("Eviction", "thresholds", names, "period", cfg.Period, "volumeStatsAggPeriod", cfg.VolumeStatsAggPeriod, "pressureTransitionPeriod", cfg.PressureTransitionPeriod,
		"maxPodGracePeriod", cfg.MaxPodGracePeriod)
	go a.RunEviction(ctx)
	return nil
}
