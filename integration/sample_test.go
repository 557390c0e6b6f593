package integration

import (
	"math"
	"sync"
)

// fewestDuring calls count over and over while during runs and returns
// the smallest count it saw and how many samples that took: what a
// drain's "never fewer than wanted" is checked against. Failed reads are
// not samples; with none at all, fewest is 0 (nothing was shown).
func fewestDuring(count func() (int, error), during func()) (fewest, samples int) {
	fewest = math.MaxInt
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, err := count(); err == nil {
				samples++
				fewest = min(fewest, n)
			}
		}
	})
	during()
	close(stop)
	wg.Wait()
	if samples == 0 {
		fewest = 0
	}
	return fewest, samples
}
