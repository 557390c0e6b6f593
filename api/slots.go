package api

// MaxListedSlots is how many slots a WatchServiceMessage lists at most
// (control.proto): past it the manager counts the slots running the
// current spec instead, and the CLI shows a large service's progress as
// counts. 1 000 slots take about 150 KB; 41 500 went over gRPC's 4 MiB
// message limit, and `service create --replicas 100000` failed
// ResourceExhausted.
const MaxListedSlots = 1000
