package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

// jacoWriteSize is the encoded size of a typical JoinToken as
// IssueJoinToken stores it, alone and inside its raft request.
func jacoWriteSize() (token, request int) {
	now := timestamppb.Now()
	jt := &api.JoinToken{
		Id:        strings.Repeat("a", 24),
		Meta:      &api.Meta{Version: 123456, CreatedAt: now, UpdatedAt: now},
		Hash:      make([]byte, 32),
		Role:      api.NodeRole_NODE_ROLE_WORKER,
		ExpiresAt: now,
	}
	req := &api.InternalRaftRequest{Id: 1 << 62, Actions: []*api.StoreAction{{
		Kind:   api.StoreAction_KIND_CREATE,
		Target: &api.StoreAction_JoinToken{JoinToken: jt},
	}}}
	return proto.Size(jt), proto.Size(req)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func writeCSV(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

// ratio formats a/b, or "—" when b is zero.
func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func passWord(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// cpuPerK is the servers' CPU milliseconds per 1000 acknowledged writes,
// over the three processes, above what they burn idle.
func cpuPerK(r *rateResult) float64 {
	if r.Acked == 0 {
		return 0
	}
	return (r.ServerCPU - r.IdleCores*r.CPUWindow) * 1e6 / float64(r.Acked)
}

// machineBusy is the share of the machine's CPUs the three servers and
// the load generator used while the load ran (its drain included): near
// 100 % the machine, not the system's latency, caps what it achieves.
func machineBusy(r *rateResult) float64 {
	if r.CPUWindow == 0 || r.Cores == 0 {
		return 0
	}
	return (r.ServerCPU + r.ClientCPU) / (r.CPUWindow * float64(r.Cores))
}

func writeRate(out string, rs []*rateResult, o rateOpts) error {
	if len(rs) == 0 {
		return nil
	}
	jt, req := jacoWriteSize()
	meta := map[string]any{
		"when":     time.Now().UTC().Format(time.RFC3339),
		"duration": o.duration.String(),
		"conns":    o.conns,
		// What one write carries: jaco's JoinToken inside its raft
		// request (before sealing), and etcd's key plus value.
		"jaco_jointoken_bytes":    jt,
		"jaco_raft_request_bytes": req,
		"etcd_put_bytes":          etcdPayload,
		"results":                 rs,
	}
	if err := writeJSON(filepath.Join(out, "rate.json"), meta); err != nil {
		return err
	}
	rows := [][]string{{"system", "offered_per_s", "clients", "achieved_per_s", "acked", "dropped", "abandoned", "errors",
		"sched_p50_ms", "sched_p99_ms", "sched_max_ms", "sched_stddev_ms",
		"service_p50_ms", "service_p99_ms", "service_max_ms", "service_stddev_ms",
		"server_cpu_s", "server_idle_cores", "client_cpu_s", "machine_busy", "pass", "pass_etcdctl_timing", "loadavg_before", "elections"}}
	for _, r := range rs {
		rows = append(rows, []string{r.System, f1(r.Offered), fmt.Sprint(r.Clients), f1(r.Achieved), fmt.Sprint(r.Acked),
			fmt.Sprint(r.Dropped), fmt.Sprint(r.Abandoned), fmt.Sprint(sum(r.Errors)),
			f2(r.FromSched.P50), f2(r.FromSched.P99), f2(r.FromSched.Max), f2(r.FromSched.Stddev),
			f2(r.Service.P50), f2(r.Service.P99), f2(r.Service.Max), f2(r.Service.Stddev),
			f2(r.ServerCPU), f2(r.IdleCores), f2(r.ClientCPU), f2(machineBusy(r)), fmt.Sprint(r.Pass), fmt.Sprint(r.PassService), r.Load1, fmt.Sprint(r.Elections)})
	}
	if err := writeCSV(filepath.Join(out, "rate.csv"), rows); err != nil {
		return err
	}
	timeline := [][]string{{"system", "offered_per_s", "second", "acks"}}
	for _, r := range rs {
		for s, n := range r.PerSecond {
			timeline = append(timeline, []string{r.System, f1(r.Offered), fmt.Sprint(s), fmt.Sprint(n)})
		}
	}
	if err := writeCSV(filepath.Join(out, "rate-timeline.csv"), timeline); err != nil {
		return err
	}
	trace := [][]string{{"system", "offered_per_s", "t_s", "slowest_ms", "leader_cores", "follower1_cores", "follower2_cores", "load_generator_cores", "machine_idle_cores"}}
	for _, r := range rs {
		for _, t := range r.Trace {
			row := []string{r.System, f1(r.Offered), f1(t.At), f1(t.SlowestMS)}
			for i := range 3 {
				v := ""
				if i < len(t.Servers) {
					v = f2(t.Servers[i])
				}
				row = append(row, v)
			}
			trace = append(trace, append(row, f2(t.Self), f2(t.Idle)))
		}
	}
	if err := writeCSV(filepath.Join(out, "rate-trace.csv"), trace); err != nil {
		return err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "### Committed writes at fixed offered rates (%s each)\n\n", o.duration)
	b.WriteString("Latency from each write's scheduled time (open loop); \"service\" is from the time it was sent. Machine busy is the CPU the servers and the load generator used, over all the machine's cores.\n\n")
	b.WriteString("| offered/s | system | achieved/s | p50 ms | p99 ms | max ms | stddev ms | service p50 / p99 ms | errors, dropped | server CPU ms / 1000 writes (idle %) | machine busy | elections | check perf |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		verdict := passWord(r.Pass)
		if !r.Pass {
			verdict += ": " + strings.Join(r.Fails, "; ")
		}
		fmt.Fprintf(&b, "| %.0f | %s | %.0f | %.2f | %.2f | %.1f | %.1f | %.2f / %.2f | %d, %d | %.0f (%.0f %%) | %.0f %% | %d | %s |\n",
			r.Offered, r.System, r.Achieved, r.FromSched.P50, r.FromSched.P99, r.FromSched.Max, r.FromSched.Stddev,
			r.Service.P50, r.Service.P99, sum(r.Errors), r.Dropped+r.Abandoned, cpuPerK(r), 100*r.IdleCores, 100*machineBusy(r), r.Elections, verdict)
	}
	by := map[float64]map[string]*rateResult{}
	var offered []float64
	for _, r := range rs {
		if by[r.Offered] == nil {
			by[r.Offered] = map[string]*rateResult{}
			offered = append(offered, r.Offered)
		}
		by[r.Offered][r.System] = r
	}
	for _, pair := range [][2]string{{"jaco", "etcd"}, {"jaco-metrics", "jaco"}} {
		writeRatios(&b, by, offered, pair[0], pair[1])
	}
	writeCPUByProcess(&b, rs)
	return os.WriteFile(filepath.Join(out, "rate.md"), []byte(b.String()), 0o644)
}

// writeRatios adds the table of num's figures over den's, rate by rate,
// when the run has both systems.
func writeRatios(b *strings.Builder, by map[float64]map[string]*rateResult, offered []float64, num, den string) {
	header := false
	for _, off := range offered {
		n, d := by[off][num], by[off][den]
		if n == nil || d == nil {
			continue
		}
		if !header {
			fmt.Fprintf(b, "\n### %s ÷ %s, same rate, same run\n\n", num, den)
			b.WriteString("| offered/s | achieved | p50 | p99 | max | CPU per write |\n|---:|---:|---:|---:|---:|---:|\n")
			header = true
		}
		fmt.Fprintf(b, "| %.0f | %s | %s | %s | %s | %s |\n", off,
			ratio(n.Achieved, d.Achieved), ratio(n.FromSched.P50, d.FromSched.P50), ratio(n.FromSched.P99, d.FromSched.P99),
			ratio(n.FromSched.Max, d.FromSched.Max), ratio(cpuPerK(n), cpuPerK(d)))
	}
}

func failoverStats(rs []*failoverResult, sys string) (latStats, []int64) {
	var ns []int64
	for _, r := range rs {
		if r.System == sys {
			ns = append(ns, int64(r.FirstAckMS*1e6))
		}
	}
	return summarize(ns), ns
}

func writeFailover(out string, rs []*failoverResult, o failoverOpts) error {
	if len(rs) == 0 {
		return nil
	}
	meta := map[string]any{
		"when":            time.Now().UTC().Format(time.RFC3339),
		"attempt_every":   o.every.String(),
		"attempt_timeout": o.timeout.String(),
		"fault":           o.fault,
		"results":         rs,
	}
	if err := writeJSON(filepath.Join(out, "failover.json"), meta); err != nil {
		return err
	}
	rows := [][]string{{"system", "round", "killed", "new_leader", "kill_to_first_ack_ms", "attempts", "restart_to_healthy_ms"}}
	for _, r := range rs {
		rows = append(rows, []string{r.System, fmt.Sprint(r.Round), r.Killed, r.NewLeader, f1(r.FirstAckMS), fmt.Sprint(r.Attempts), f1(r.RejoinMS)})
	}
	if err := writeCSV(filepath.Join(out, "failover.csv"), rows); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Leader %s → first acknowledged write (attempt every %s, %s timeout each)\n\n", o.fault.what(), o.every, o.timeout)
	fmt.Fprintf(&b, "| system | leaders lost | min ms | p50 ms | p99 ms | max ms | mean ms | %s → healthy p50 ms |\n|---|---:|---:|---:|---:|---:|---:|---:|\n", o.fault.back())
	stats := map[string]latStats{}
	for _, sys := range o.systems {
		s, ns := failoverStats(rs, sys)
		if s.N == 0 {
			continue
		}
		stats[sys] = s
		sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
		var rj []int64
		for _, r := range rs {
			if r.System == sys {
				rj = append(rj, int64(r.RejoinMS*1e6))
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", sys, s.N, float64(ns[0])/1e6, s.P50, s.P99, s.Max, s.Mean, summarize(rj).P50)
	}
	if j, e := stats["jaco"], stats["etcd"]; j.N > 0 && e.N > 0 {
		fmt.Fprintf(&b, "| **jaco ÷ etcd** | | | **%s** | **%s** | %s | %s | |\n", ratio(j.P50, e.P50), ratio(j.P99, e.P99), ratio(j.Max, e.Max), ratio(j.Mean, e.Mean))
	}
	return os.WriteFile(filepath.Join(out, "failover.md"), []byte(b.String()), 0o644)
}

func writeJoin(out string, rs []*joinResult, o joinOpts) error {
	if len(rs) == 0 {
		return nil
	}
	meta := map[string]any{
		"when":        time.Now().UTC().Format(time.RFC3339),
		"join_settle": o.settle.String(),
		"results":     rs,
	}
	if err := writeJSON(filepath.Join(out, "join.json"), meta); err != nil {
		return err
	}
	rows := [][]string{{"round", "join_cmd_ms", "join_to_voter_ms", "join_to_m2_voter_ms", "order"}}
	var cmd, voter, m2 []int64
	for _, r := range rs {
		rows = append(rows, []string{fmt.Sprint(r.Round), f1(r.JoinCmdMS), f1(r.VoterMS), f1(r.M2VoterMS), r.Order})
		cmd = append(cmd, int64(r.JoinCmdMS*1e6))
		voter = append(voter, int64(r.VoterMS*1e6))
		m2 = append(m2, int64(r.M2VoterMS*1e6))
	}
	if err := writeCSV(filepath.Join(out, "join.csv"), rows); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### `jaco node join` of a third manager → VOTER (%d fresh clusters)\n\n", len(rs))
	b.WriteString("| measured from the start of `jaco node join` on m3 | p50 ms | max ms |\n|---|---:|---:|\n")
	c, v, w := summarize(cmd), summarize(voter), summarize(m2)
	fmt.Fprintf(&b, "| `jaco node join` returns | %.0f | %.0f |\n", c.P50, c.Max)
	fmt.Fprintf(&b, "| m2 (the earlier nonvoter) is VOTER | %.0f | %.0f |\n", w.P50, w.Max)
	fmt.Fprintf(&b, "| **m3 is VOTER** | **%.0f** | **%.0f** |\n", v.P50, v.Max)
	return os.WriteFile(filepath.Join(out, "join.md"), []byte(b.String()), 0o644)
}
