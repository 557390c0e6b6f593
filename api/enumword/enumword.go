// Package enumword names protobuf enum values the way people read them:
// TASK_STATE_RUNNING is "running", UPDATE_STATE_ROLLBACK_PAUSED is
// "rollback_paused". The CLI prints these words and the daemon logs them,
// so what an operator sees in `jaco service ps` is what they grep for in
// the log.
package enumword

import (
	"strconv"
	"strings"
	"sync"
	"unicode"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Of is e's word, or its number in decimal when its descriptor does not
// know it (a value from a newer peer).
func Of(e protoreflect.Enum) string {
	if w, ok := Name(e.Descriptor(), e.Number()); ok {
		return w
	}
	return strconv.FormatInt(int64(e.Number()), 10)
}

// Name is the word for value n of the enum ed; false when ed has no such
// value.
func Name(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) (string, bool) {
	w, ok := wordsOf(ed)[n]
	return w, ok
}

// cache holds each enum's words by value, worked out on first use: the
// event log names the states of every task write (manager/events).
var cache sync.Map // protoreflect.FullName → map[protoreflect.EnumNumber]string

func wordsOf(ed protoreflect.EnumDescriptor) map[protoreflect.EnumNumber]string {
	if ws, ok := cache.Load(ed.FullName()); ok {
		return ws.(map[protoreflect.EnumNumber]string)
	}
	p := prefix(ed)
	ws := make(map[protoreflect.EnumNumber]string, ed.Values().Len())
	for i := range ed.Values().Len() {
		vd := ed.Values().Get(i)
		name := string(vd.Name())
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			name = name[len(p):]
		}
		ws[vd.Number()] = strings.ToLower(name)
	}
	cache.Store(ed.FullName(), ws)
	return ws
}

// prefix is the prefix the style guide puts on every value of an enum:
// its name in UPPER_SNAKE_CASE (NodeStatusState → NODE_STATUS_STATE_).
// Failing that, the values' longest common prefix ending in "_".
func prefix(ed protoreflect.EnumDescriptor) string {
	p := upperSnake(string(ed.Name())) + "_"
	vals := ed.Values()
	all := true
	for i := 0; i < vals.Len(); i++ {
		all = all && strings.HasPrefix(string(vals.Get(i).Name()), p)
	}
	if all || vals.Len() < 2 {
		return p
	}
	common := string(vals.Get(0).Name())
	for i := 1; i < vals.Len(); i++ {
		n := string(vals.Get(i).Name())
		for !strings.HasPrefix(n, common) {
			common = common[:len(common)-1]
		}
	}
	return common[:strings.LastIndex(common, "_")+1]
}

func upperSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
