package probes

import (
	"container/heap"
	"time"

	"k8s.io/utils/clock"
)

// The workers' schedule. A worker waiting for its next run has no
// goroutine and no timer of its own: it is parked in the Manager's queue,
// ordered by the instant it is due, and one scheduler goroutine with one
// timer starts a goroutine for each worker as it comes due (or when it is
// triggered), which runs the probe and parks the worker again. With a
// goroutine and a timer per worker, 110 pods with two probes each kept 220
// goroutines parked between their runs, each with a stack the size the
// runtime starts goroutines with (8 KiB here, set by the probes' own
// stacks), and every run woke its worker, which woke a goroutine for the
// probe and waited for it. The scheduler runs only while a worker is
// parked: with nothing to probe, the package has no goroutine.

// workerState says where a worker is. Guarded by Manager.mu.
type workerState uint8

const (
	// workerRunning: a goroutine runs the worker (probing or about to
	// park). A trigger is recorded in worker.triggered.
	workerRunning workerState = iota
	// workerParked: in the queue, no goroutine; worker.wake is when it is
	// due.
	workerParked
	// workerDone: exited (stopped, on hold, or startup done).
	workerDone
)

// wakeReason is why a worker's goroutine runs.
type wakeReason uint8

const (
	// wakeStart: the worker was just created; its first run is scheduled.
	wakeStart wakeReason = iota
	// wakeDue: its scheduled run is due.
	wakeDue
	// wakeTriggered: Trigger asked for a run off the schedule.
	wakeTriggered
	// wakeNone: nothing to run; park (or exit if stopped).
	wakeNone
)

// workerQueue is a min-heap of parked workers by wake time
// (container/heap).
type workerQueue []*worker

func (q workerQueue) Len() int           { return len(q) }
func (q workerQueue) Less(i, j int) bool { return q[i].wake.Before(q[j].wake) }
func (q workerQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}

func (q *workerQueue) Push(x any) {
	w := x.(*worker)
	w.index = len(*q)
	*q = append(*q, w)
}

func (q *workerQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	w.index = -1
	return w
}

// scheduler is the Manager's part that wakes parked workers. Its fields
// are guarded by Manager.mu.
type scheduler struct {
	// queue holds the parked workers.
	queue workerQueue
	// running is set while the scheduler goroutine runs (counted in
	// Manager.wg); it exits when the queue is empty.
	running bool
	// timer is the scheduler's one timer, created at the first park; armed
	// is the instant it is set for (zero: stopped or fired).
	timer clock.Timer
	armed time.Time
	// kick wakes the scheduler goroutine when the queue empties, so that
	// it exits instead of waiting for a timer that may be far off.
	kick chan struct{}
}

// parkLocked queues w until w.wake and makes sure the scheduler wakes in
// time. m.mu must be held.
func (m *Manager) parkLocked(w *worker) {
	s := &m.sched
	w.state = workerParked
	heap.Push(&s.queue, w)
	if !s.running {
		s.running = true
		if s.kick == nil {
			s.kick = make(chan struct{}, 1)
		}
		m.wg.Add(1)
		go m.schedule()
	}
	m.armLocked()
}

// unparkLocked takes a parked w out of the queue and marks it running: the
// caller starts its goroutine. m.mu must be held.
func (m *Manager) unparkLocked(w *worker) {
	s := &m.sched
	heap.Remove(&s.queue, w.index)
	w.state = workerRunning
	if len(s.queue) == 0 {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// triggerLocked asks w for a run now: a parked worker gets a goroutine, a
// running one runs again before it parks. A pending trigger is not
// repeated. m.mu must be held.
func (m *Manager) triggerLocked(w *worker) {
	switch w.state {
	case workerParked:
		m.unparkLocked(w)
		go w.run(wakeTriggered)
	case workerRunning:
		w.triggered = true
	}
}

// armLocked sets the timer for the earliest parked worker unless it is set
// for that instant or earlier already (an early wake-up finds nothing due
// and re-arms). m.mu must be held and the queue not empty.
func (m *Manager) armLocked() {
	s := &m.sched
	at := s.queue[0].wake
	if !s.armed.IsZero() && !at.Before(s.armed) {
		return
	}
	d := at.Sub(m.clock.Now())
	if s.timer == nil {
		s.timer = m.clock.NewTimer(d)
	} else {
		s.stopTimer()
		s.timer.Reset(d)
	}
	s.armed = at
}

// stopTimer stops the timer and empties its channel: a fake clock's timer
// (tests) keeps a value it sent after Stop, and a clock step that fires it
// again would block on the full channel while holding the clock's lock.
func (s *scheduler) stopTimer() {
	if !s.timer.Stop() {
		select {
		case <-s.timer.C():
		default:
		}
	}
}

// schedule is the scheduler goroutine: on each timer expiry it starts the
// workers that are due, until the queue is empty.
func (m *Manager) schedule() {
	defer m.wg.Done()
	s := &m.sched
	for {
		m.mu.Lock()
		c := s.timer.C()
		m.mu.Unlock()
		select {
		case <-c:
		case <-s.kick:
		}
		m.mu.Lock()
		s.armed = time.Time{}
		now := m.clock.Now()
		for len(s.queue) > 0 && !s.queue[0].wake.After(now) {
			w := heap.Pop(&s.queue).(*worker)
			w.state = workerRunning
			go w.run(wakeDue)
		}
		if len(s.queue) == 0 {
			s.running = false
			s.stopTimer()
			m.mu.Unlock()
			return
		}
		m.armLocked()
		m.mu.Unlock()
	}
}
