package access

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/jaco-project/jaco/protobuf/plugin/internal/pluginopt"
)

// accessOption is the method option this plugin reads (api/options.proto).
const accessOption = "jaco.api.access"

// The Go constants of package api/access each enum value of AccessPolicy
// becomes. A value missing here (added to options.proto alone) is an error,
// never dropped: dropping a caller or state would change who gets in.
var (
	callerIdents = map[protoreflect.Name]string{
		"ANYONE":   "Anyone",
		"LOCAL":    "Local",
		"OPERATOR": "Operator",
		"NODE":     "Node",
		"MANAGER":  "Manager",
	}
	stateIdents = map[protoreflect.Name]string{
		"UNINITIALIZED": "Uninitialized",
		"LOCKED":        "Locked",
		"WORKER":        "Worker",
	}
)

// policy is one method's (jaco.api.access) option, checked, with its enum
// values already named as package api/access's constants.
type policy struct {
	allow           []string
	alsoServed      []string
	refusal         string
	unauthenticated bool
}

// findPolicies looks the option declaration up in the request.
func findPolicies(gen *protogen.Plugin) (*pluginopt.Options, error) {
	return pluginopt.Find(gen, map[protoreflect.FullName]protoreflect.Kind{accessOption: protoreflect.MessageKind})
}

// readPolicy reads and checks m's policy. A method without one is an error:
// the point of declaring access in the protos is that no rpc is forgotten.
func readPolicy(opts *pluginopt.Options, m *protogen.Method) (policy, error) {
	v, set, err := opts.Get(m.Desc.Options(), accessOption)
	if err != nil {
		return policy{}, err
	}
	if !set {
		return policy{}, fmt.Errorf("declares no access policy: add option (%s) = {allow: [...] ...} (api/options.proto)", accessOption)
	}
	msg := v.Message()
	p := policy{
		refusal:         field(msg, "refusal").String(),
		unauthenticated: field(msg, "unauthenticated").Bool(),
	}
	if p.allow, err = enumIdents(msg, "allow", callerIdents); err != nil {
		return policy{}, err
	}
	if p.alsoServed, err = enumIdents(msg, "also_served", stateIdents); err != nil {
		return policy{}, err
	}
	return p, p.check()
}

// check refuses a policy that cannot mean what its author meant.
func (p policy) check() error {
	open := slices.Contains(p.allow, "Anyone")
	switch {
	case len(p.allow) == 0:
		return errors.New("access policy allows nobody: list its callers in allow")
	case open && len(p.allow) > 1:
		return errors.New("access policy allows ANYONE and more: ANYONE stands alone")
	case open && (p.refusal != "" || p.unauthenticated):
		return errors.New("access policy allows ANYONE, so its refusal is never given: drop refusal and unauthenticated")
	case !open && p.refusal == "":
		return errors.New("access policy has no refusal: say what a caller outside allow lacks")
	}
	return nil
}

// field returns the value of msg's field name. The names are those of
// AccessPolicy; a renamed field fails loudly rather than reading as unset.
func field(msg protoreflect.Message, name protoreflect.Name) protoreflect.Value {
	fd := msg.Descriptor().Fields().ByName(name)
	if fd == nil {
		panic(fmt.Sprintf("%s has no field %s: update protoc-gen-access with api/options.proto", msg.Descriptor().FullName(), name))
	}
	return msg.Get(fd)
}

// enumIdents names the values of msg's repeated enum field name by idents,
// refusing unknown and repeated values.
func enumIdents(msg protoreflect.Message, name protoreflect.Name, idents map[protoreflect.Name]string) ([]string, error) {
	list := field(msg, name).List()
	values := msg.Descriptor().Fields().ByName(name).Enum().Values()
	var out []string
	for i := range list.Len() {
		n := list.Get(i).Enum()
		vd := values.ByNumber(n)
		if vd == nil {
			return nil, fmt.Errorf("access policy %s: unknown value %d", name, n)
		}
		ident, ok := idents[vd.Name()]
		if !ok {
			return nil, fmt.Errorf("access policy %s: %s is not a value protoc-gen-access knows", name, vd.Name())
		}
		if slices.Contains(out, ident) {
			return nil, fmt.Errorf("access policy %s: %s listed twice", name, vd.Name())
		}
		out = append(out, ident)
	}
	return out, nil
}
