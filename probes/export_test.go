package probes

// SetTestHook lets the external tests see worker scheduling points: what is
// "waiting" (parked, or about to run again at once) or "exited". Call it before the
// first UpdatePod.
func (m *Manager) SetTestHook(f func(container string, kind Kind, what string)) {
	m.testHook = func(ev hookEvent) { f(ev.container, ev.kind, ev.what) }
}
