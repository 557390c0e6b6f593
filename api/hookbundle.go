package api

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The hooks of a HookBundle: launch is required, the others optional.
const (
	HookPrepare = "prepare"
	HookLaunch  = "launch"
	HookFinish  = "finish"
	HookCleanup = "cleanup"
)

// HookNames are the file names a hook bundle may hold, in the order the
// hooks run.
var HookNames = []string{HookPrepare, HookLaunch, HookFinish, HookCleanup}

// CheckHookFiles refuses the files of a hook bundle that holds anything
// but hooks, or no launch. The control API checks a spec with it and the
// hooks runtime a replica's bundle, so both refuse the same bundles.
func CheckHookFiles(files map[string][]byte) error {
	var unknown []string
	for name := range files {
		if !slices.Contains(HookNames, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("hook bundle files %q are not hooks (hooks: %s)", unknown, strings.Join(HookNames, ", "))
	}
	if _, ok := files[HookLaunch]; !ok {
		return errors.New("the hook bundle has no launch executable")
	}
	return nil
}
