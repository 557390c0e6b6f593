package api

import "time"

// DefaultDrainTimeout is NodeDrain.replacement_timeout when the drain
// request sets none. It lives beside the message it defaults because two
// leader subsystems read it: the Control API writes it into a new drain,
// and the orchestrator's drain machine falls back to it for a drain that
// holds no timeout.
const DefaultDrainTimeout = 5 * time.Minute
