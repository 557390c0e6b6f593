package compose

import (
	"regexp"
	"strings"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
)

// Interpolation as docker stack deploy does it (docker CLI 28.2, its
// cli/compose/template), not as docker compose does: jaco stack deploy
// is the Swarm command's counterpart, and a file must give the same
// values under both. What differs from compose-go's own substitution,
// each seen on a 28.2.2 CLI (docs/operator-guide.md, Stacks):
//
//   - ${VAR:+alt} and ${VAR+alt} are refused as invalid, as is nesting
//     beyond the first '}': ${A:-${B}} is the text "${B" and a "}".
//   - A modifier is found anywhere in the braces, the first ":-", then
//     "-", ":?", "?" winning: ${A:?must-be-set} with A unset is "be-set".
//   - An unbraced $VAR takes a modifier too, up to the next '}' or the
//     end: $A-suffix is A's value when A is set, and "suffix" otherwise.
//
// One difference is kept on purpose: docker reports a missing required
// variable only when it is the value's last reference (each later
// reference's outcome overwrites the error), so "${A:?need A} ${B}"
// deploys with A empty. jaco refuses it: a file docker would deploy
// with a value its author required is refused, never changed silently.
//
// The variables come from the CLI's environment alone: docker stack
// deploy reads no .env file and has no --env-file.

// useDockerSubstitute makes a loader interpolate with dockerSubstitute.
// Options without interpolation (reading the files' bytes) are left so.
func useDockerSubstitute(o *loader.Options) {
	if o.Interpolate != nil {
		o.Interpolate.Substitute = dockerSubstitute
	}
}

// dockerReference is a '$' and what follows it: "$$", a name with an
// optional modifier, the same in braces, or nothing valid.
var dockerReference = regexp.MustCompile(`\$(?i:(\$)|([_a-z][_a-z0-9]*(?::?[-?][^}]*)?)|\{([_a-z][_a-z0-9]*(?::?[-?][^}]*)?)\}|())`)

// dockerSubstitute replaces the references in s as docker stack deploy
// does; a compose-go loader option installs it.
func dockerSubstitute(s string, lookup template.Mapping) (string, error) {
	var err error
	out := dockerReference.ReplaceAllStringFunc(s, func(ref string) string {
		if err != nil {
			return ""
		}
		m := dockerReference.FindStringSubmatch(ref)
		if m[1] != "" {
			return "$"
		}
		body := m[2]
		if body == "" {
			body = m[3]
		}
		if body == "" {
			err = &template.InvalidTemplateError{Template: s}
			return ""
		}
		var value string
		value, err = resolveReference(body, lookup)
		return value
	})
	return out, err
}

// resolveReference is the value of one reference's body (NAME with its
// modifier, if any), the modifiers tried in docker's order.
func resolveReference(body string, lookup template.Mapping) (string, error) {
	if name, dflt, ok := strings.Cut(body, ":-"); ok {
		if v, set := lookup(name); set && v != "" {
			return v, nil
		}
		return dflt, nil
	}
	if name, dflt, ok := strings.Cut(body, "-"); ok {
		if v, set := lookup(name); set {
			return v, nil
		}
		return dflt, nil
	}
	for _, sep := range []string{":?", "?"} {
		name, msg, ok := strings.Cut(body, sep)
		if !ok {
			continue
		}
		v, set := lookup(name)
		if !set || sep == ":?" && v == "" {
			return "", &template.InvalidTemplateError{Template: "required variable " + name + " is missing a value: " + msg}
		}
		return v, nil
	}
	v, _ := lookup(body)
	return v, nil
}
