package api

import (
	"maps"
	"slices"
	"strings"
)

// VolumeOptionWords is a volume's driver options as k=v words, sorted,
// comma-separated; "none" when there are none: how messages that compare
// two volumes' options name them.
func VolumeOptionWords(opts map[string]string) string {
	if len(opts) == 0 {
		return "none"
	}
	var words []string
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		words = append(words, k+"="+opts[k])
	}
	return strings.Join(words, ",")
}
