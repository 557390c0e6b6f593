package node

import (
	"log/slog"
	"sync"
	"time"
)

// stopReportEvery is how long a stopping daemon runs before it says which
// step it waits in, and how often it says so again. Every step of a clean
// stop is bounded well below it (the servers' graceful stop by 5 s, a
// hand-over by 1 s), so a report means something waits that should not.
const stopReportEvery = 5 * time.Second

// stopWatch names the step a stopping daemon is in and, while stopping
// lasts longer than it should, logs that step: whoever waits for the
// process (an operator's service manager, a test) then reads what it
// waits for before killing it.
type stopWatch struct {
	log   *slog.Logger
	every time.Duration
	start time.Time

	mu   sync.Mutex
	step string

	done  chan struct{} // closed by end
	ended chan struct{} // closed when the reporting goroutine returns
}

// watchStop starts reporting a stop that is in step first.
func watchStop(log *slog.Logger, every time.Duration, first string) *stopWatch {
	w := &stopWatch{log: log, every: every, start: time.Now(), step: first,
		done: make(chan struct{}), ended: make(chan struct{})}
	go w.report()
	return w
}

// enter records that the stop moved on to step.
func (w *stopWatch) enter(step string) {
	w.mu.Lock()
	w.step = step
	w.mu.Unlock()
}

// end stops the reports and logs how long the stop took.
func (w *stopWatch) end() {
	close(w.done)
	<-w.ended
	w.log.Info("jacod stopped", "took", time.Since(w.start).Round(time.Millisecond))
}

func (w *stopWatch) report() {
	defer close(w.ended)
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			w.mu.Lock()
			step := w.step
			w.mu.Unlock()
			w.log.Warn("jacod still stopping", "step", step, "for", time.Since(w.start).Round(time.Second))
		}
	}
}
