package launchdir

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMeta(t *testing.T) {
	meta, err := ParseMeta([]string{"env=prod", "debug", "db-host=a=b"})
	if err != nil {
		t.Fatal(err)
	}
	if meta["env"] != "prod" || meta["debug"] != "true" || meta["db-host"] != "a=b" {
		t.Errorf("meta %v", meta)
	}
	for _, bad := range [][]string{{"=x"}, {"1a=x"}, {"a.b=x"}, {"a-b=1", "a_b=2"}, {"x=a\nb"}} {
		if _, err := ParseMeta(bad); err == nil {
			t.Errorf("ParseMeta(%q) accepted", bad)
		}
	}
}

func TestInstantiate(t *testing.T) {
	cfg, err := Load("../../examples/launch")
	if err != nil {
		t.Fatal(err)
	}
	ns := Namespace{ID: "0123456789abcdef", Meta: map[string]string{"environment": "prod", "fast-path": "true"}}
	specs, err := Instantiate(cfg, ns)
	if err != nil {
		t.Fatal(err)
	}
	if specs[0].Name != "01234567_db" || specs[1].Name != "01234567_web" || !slices.Equal(specs[1].DependsOn, []string{"01234567_db"}) {
		t.Errorf("names %s %s depends_on %v", specs[0].Name, specs[1].Name, specs[1].DependsOn)
	}
	if cfg.Services[1].Spec.DependsOn[0] != "db" {
		t.Error("Instantiate changed the loaded configuration")
	}
	web := specs[1]
	wantEnv := []string{"PORT=8080", "JACO_NAMESPACE_ID=0123456789abcdef", "JACO_META_ENVIRONMENT=prod", "JACO_META_FAST_PATH=true"}
	if !slices.Equal(web.Env, wantEnv) {
		t.Errorf("env %v, want %v", web.Env, wantEnv)
	}
	l := web.Labels
	if l[LabelID] != ns.ID || l[LabelName] != "" || l[LabelService] != "web" || l[LabelReplicas] != "2" ||
		l[LabelServices] != "db,web" || l[LabelMetaPrefix+"environment"] != "prod" || !strings.HasSuffix(l[LabelDir], "examples/launch") {
		t.Errorf("labels %v", l)
	}
	back, ok := FromLabels(l)
	if !ok || back.ID != ns.ID || back.Meta["fast-path"] != "true" || back.Prefix() != "01234567" {
		t.Errorf("FromLabels: %+v %v", back, ok)
	}
	named, err := Instantiate(cfg, Namespace{ID: ns.ID, Name: "shop"})
	if err != nil || named[0].Name != "shop_db" {
		t.Errorf("with -L shop: %v, %v", named, err)
	}
	if err := CheckName("Shop_1"); err == nil {
		t.Error("CheckName accepted Shop_1")
	}
}
