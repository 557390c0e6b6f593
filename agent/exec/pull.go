package exec

import "fmt"

// PullError is a runtime's failure to pull a replica's image. The agent
// reports it as image_pull_denied when the registry refused the
// credentials (or their absence) and image_pull_failed otherwise.
type PullError struct {
	Image string
	// Denied: the registry answered 401 or 403.
	Denied bool
	Err    error
}

func (e *PullError) Error() string {
	if e.Denied {
		return fmt.Sprintf("pull %s: access denied by the registry: %v", e.Image, e.Err)
	}
	return fmt.Sprintf("pull %s: %v", e.Image, e.Err)
}

func (e *PullError) Unwrap() error { return e.Err }
