package main

import (
	"context"
	"io"
	"log"
	"net/http"
	"sync"
	"time"
)

// scrapeEvery is how often the jaco-metrics system's members are scraped
// during a run: fifteen times as often as Prometheus's default, so that
// the cost measured bounds what an operator's scraper adds.
const scrapeEvery = time.Second

// scraper fetches each member's /metrics every scrapeEvery, as Prometheus
// would, until stop.
type scraper struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	// scrapes and failures count the fetches, for the log.
	scrapes, failures int
}

func startScraper(addrs []string) *scraper {
	ctx, cancel := context.WithCancel(context.Background())
	s := &scraper{cancel: cancel}
	client := &http.Client{Timeout: scrapeEvery}
	for _, addr := range addrs {
		s.wg.Go(func() {
			tick := time.NewTicker(scrapeEvery)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				ok := fetch(ctx, client, "http://"+addr+"/metrics")
				s.mu.Lock()
				s.scrapes++
				if !ok {
					s.failures++
				}
				s.mu.Unlock()
			}
		})
	}
	return s
}

// fetch reads url whole and reports whether it answered 200.
func fetch(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK
}

// stop ends the scrapes and logs how many there were.
func (s *scraper) stop() {
	s.cancel()
	s.wg.Wait()
	log.Printf("metrics: %d scrapes, %d failed", s.scrapes, s.failures)
}
