package lifecycle

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"
)

func TestTerminationOrder(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init"}, {Name: "s1", RestartPolicy: &always}, {Name: "s2", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "web"}},
	}}
	clk := testclock.NewFakeClock(time.Unix(0, 0))
	o := NewTerminationOrder(pod, []string{"web", "s1", "s2", "stray"})
	ctx := context.Background()
	// App containers and what the spec does not name wait for nobody.
	if got := o.WaitForTurn(ctx, clk, "web", 30); got != 0 {
		t.Errorf("web waited %d s", got)
	}
	turn := func(name string) <-chan int64 {
		ch := make(chan int64, 1)
		go func() { ch <- o.WaitForTurn(ctx, clk, name, 30) }()
		return ch
	}
	s1, s2 := turn("s1"), turn("s2")
	o.Exited("web")
	o.Exited("stray")
	select {
	case <-s1:
		t.Fatal("s1 went on before s2 exited")
	case got := <-s2:
		if got != 0 {
			t.Errorf("s2 waited %d s of fake time", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("s2 still waits once the app containers exited")
	}
	for !clk.HasWaiters() { // s1's timer: it is waiting
		time.Sleep(time.Millisecond)
	}
	clk.Step(4 * time.Second)
	o.Exited("s2")
	o.Exited("s2") // twice: nothing
	if got := <-s1; got != 4 {
		t.Errorf("s1 waited %d s, want the 4 s that passed", got)
	}

	// The grace period bounds the wait: what is left is 0.
	o = NewTerminationOrder(pod, []string{"web", "s1"})
	w := turn2(o, clk, "s1", 3)
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(3 * time.Second)
	if got := <-w; got != 3 {
		t.Errorf("a wait past the grace period took %d s, want 3", got)
	}
}

func turn2(o *TerminationOrder, clk *testclock.FakeClock, name string, grace int64) <-chan int64 {
	ch := make(chan int64, 1)
	go func() { ch <- o.WaitForTurn(context.Background(), clk, name, grace) }()
	return ch
}
