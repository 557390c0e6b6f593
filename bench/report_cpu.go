package main

import (
	"fmt"
	"strings"
)

// processCPU is what each process of one rate run spent a write, from its
// trace: µs of CPU per acknowledged write.
type processCPU struct {
	leader    float64
	followers []float64
	generator float64
}

func (p processCPU) total() float64 {
	t := p.leader + p.generator
	for _, f := range p.followers {
		t += f
	}
	return t
}

// cpuByProcess sums r's trace, tenth by tenth, per process.
func cpuByProcess(r *rateResult) (processCPU, bool) {
	if r.Acked == 0 || len(r.Trace) == 0 {
		return processCPU{}, false
	}
	var servers []float64
	var self float64
	for _, t := range r.Trace {
		for i, c := range t.Servers {
			if i == len(servers) {
				servers = append(servers, 0)
			}
			servers[i] += c
		}
		self += t.Self
	}
	if len(servers) == 0 {
		return processCPU{}, false
	}
	perWrite := func(cores float64) float64 { return cores * tenth.Seconds() * 1e6 / float64(r.Acked) }
	p := processCPU{leader: perWrite(servers[0]), generator: perWrite(self)}
	for _, s := range servers[1:] {
		p.followers = append(p.followers, perWrite(s))
	}
	return p, true
}

// writeCPUByProcess adds the table of each run's CPU a write, process by
// process, and the rate the machine's cores could commit at that cost
// were they busy with nothing else: the ceiling a run cannot pass
// whatever its latency (docs/bench/cluster.md, "the floor").
func writeCPUByProcess(b *strings.Builder, rs []*rateResult) {
	b.WriteString("\n### CPU a write, by process (µs per acknowledged write, from the trace)\n\n")
	b.WriteString("| offered/s | system | leader | each follower | load generator | all | the machine's cores ÷ all, writes/s |\n|---:|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		p, ok := cpuByProcess(r)
		if !ok {
			continue
		}
		fs := make([]string, len(p.followers))
		for i, f := range p.followers {
			fs[i] = fmt.Sprintf("%.0f", f)
		}
		follow := strings.Join(fs, ", ")
		if follow == "" {
			follow = "–"
		}
		fmt.Fprintf(b, "| %.0f | %s | %.0f | %s | %.0f | %.0f | %.0f |\n", r.Offered, r.System, p.leader, follow, p.generator, p.total(),
			float64(r.Cores)*1e6/p.total())
	}
}
