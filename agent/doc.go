// Package agent is what every node runs to execute the replicas assigned
// to it (docs/design.md §9).
//
// The contract:
//
//   - Session: the agent holds one session with the leader's dispatcher
//     through any manager it knows (the configured addresses, then the
//     list the dispatcher sends, kept in Dir/agent.db for the next start).
//     It heartbeats at the period the dispatcher names. Any failure — a
//     manager unreachable, no_leader, a stale session id, a stream the
//     dispatcher closed — ends the session; the agent opens a new one
//     through the next manager with exponential backoff. That is also how
//     it follows the leader across elections.
//   - Assignments: a COMPLETE set replaces what the agent runs (replicas
//     absent from it are stopped and removed), applied once its last part
//     came when it was sent in several messages; INCREMENTAL messages
//     update or remove replicas.
//   - Replicas: one runner goroutine per replica drives its exec.Controller
//     through not_before → prepare (PREPARING) → start (STARTING; an
//     already-running replica is adopted) → health (RUNNING once healthy,
//     at once without a check; FAILED "unhealthy" after the check's
//     retries, the replica stopped) → exit (COMPLETE on code 0, FAILED
//     "exit_code" otherwise). Desired state past RUNNING stops it
//     (SHUTDOWN); removal stops it, runs Remove and forgets it. A status
//     only moves forward.
//   - Secrets and configs: they come with the assignments naming them and
//     are kept in memory only — never in the db or any other file, never
//     logged — and handed to the runtime as exec.Replica.Files; one goes
//     once no replica of the agent names it. A restarted agent holds back
//     the prepare of a replica that names some until the first
//     assignments came. A replica whose file did not come fails to
//     prepare (secret_missing, config_missing).
//   - Reports: the latest status of each replica is kept in the db and
//     queued; batches go out at most every StatusInterval (a replica
//     running or ended goes at once) and are retried on the next session
//     until the dispatcher accepts them.
//   - Survival: the agent never stops a replica because it lost the
//     managers or because it is itself stopping. A new agent over the same
//     Dir re-creates the runners from the db and re-adopts the replicas
//     (Start → exec.ErrAlreadyStarted → Wait) before any manager answers.
//
// Server serves api.AgentService: replica logs from Dir/logs/<task id>.log
// (see agent/logs) and image loading through an ImageLoader.
package agent
