// Package linearcheck records what concurrent clients did to a cluster and
// checks it: a history of versioned compare-and-set registers must be
// linearizable (checked with porcupine), and an append-only set must hold
// every acknowledged add, nothing never sent and nothing twice
// (docs/design.md §14).
//
// A nemesis runner uses it like this: it makes one Recorder per run and
// hands it to every client goroutine; each client calls Invoke before it
// sends a request and Done (or DoneErr with the gRPC error) when the answer
// comes, while the nemesis kills, pauses and partitions managers. After the
// faults are healed the runner reads the set once more, linearizably, and
// calls CheckRegisters and CheckSet with the seed as the label and a
// directory for evidence. A Result that is not OK names the label and the
// files holding the history (JSON) and porcupine's visualization, so the
// failing run can be studied and replayed from its seed.
//
// Each operation ends in one of three outcomes. Only an answer that proves
// the request was never applied is Refused (OutcomeOf decides by reason
// word, never by message text); anything else that is not a success is
// Unknown, because treating a maybe-applied write as not applied would
// make the checker report violations the cluster did not commit, and
// treating it as applied would hide lost writes.
package linearcheck
