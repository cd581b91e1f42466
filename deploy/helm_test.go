package deploy

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	goyaml "github.com/goccy/go-yaml"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The chart is rendered as release "dialogtrust" into namespace "dialogtrust", the
// namespace of overlays/replicated, so that the issuer URLs it derives are the ones the
// overlay's configuration files name.
const (
	helmRelease   = "dialogtrust"
	helmNamespace = "dialogtrust"
	agentChartDir = "helm/dialogtrust-agent"
)

// helmAddedLabels are the labels the chart puts on objects, selectors and pods beyond
// the base's two (app.kubernetes.io/name, part-of). They are the one allowed difference
// in labels: instance narrows every selector to this release (so that two releases in
// one namespace never select each other's pods), the others only describe. Every
// selector is still checked to select its own workload by the checker.
var helmAddedLabels = []string{
	"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart",
}

// helmAddedAnnotations: the pod templates' checksum of the configuration, which rolls
// the pods when the configuration changes (kustomize does that by the hash suffix of a
// generated ConfigMap's name instead).
var helmAddedAnnotations = []string{"checksum/config"}

// renderChart renders chart dir with vals (helm lint --strict first, which must pass)
// and decodes every object strictly. ConfigMap data are written to files, so that the
// checker runs -check-config on the rendered configuration.
func renderChart(t *testing.T, dir string, vals map[string]any) *unit {
	t.Helper()
	if err := helmLint(dir, vals); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	out, err := helmTemplate(dir, helmRelease, helmNamespace, vals)
	if err != nil {
		t.Fatalf("helm template %s: %v", dir, err)
	}
	objs, err := decodeManifests("helm template "+dir, []byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	u := &unit{dir: "chart " + dir, data: map[string]map[string]string{}}
	files := t.TempDir()
	for _, o := range objs {
		if o.ns != "" {
			t.Errorf("%s %s: the chart sets a namespace (%s); helm's --namespace decides", o.kind, o.name, o.ns)
		}
		o.ns = helmNamespace
		u.objects = append(u.objects, o)
		switch v := o.obj.(type) {
		case *corev1.ConfigMap:
			u.data[dataKey("ConfigMap", o.ns, o.name)] = writeKeys(t, filepath.Join(files, o.name), v.Data)
		case *corev1.Secret:
			t.Errorf("Secret %s: the chart must not hold key material; it refers to Secrets the operator creates", o.name)
		}
	}
	return u
}

// checkChartUnit runs the kustomize checks on a rendered chart. The chart refers to
// Secrets (and the CA ConfigMap) it does not create: want lists them.
func checkChartUnit(t *testing.T, u *unit, want []string) {
	t.Helper()
	c := &checker{t: t, u: u, partial: true, missing: map[string]bool{}, configs: map[string]bool{}}
	c.run()
	missing := slices.Sorted(maps.Keys(c.missing))
	slices.Sort(want)
	if !slices.Equal(missing, want) {
		t.Errorf("%s refers to %q that it does not create, want %q", u.dir, missing, want)
	}
	if len(c.configs) != 2 {
		t.Errorf("%s: %d service configurations checked with -check-config, want 2", u.dir, len(c.configs))
	}
}

// normalized is an object as JSON, less what the chart adds by design (see
// helmAddedLabels, helmAddedAnnotations) and the namespace (helm's --namespace, the
// overlay's namespace:). Maps that only held such labels are dropped, so that a
// NetworkPolicy peer of matchExpressions plus the instance label compares equal to one
// of the same matchExpressions.
func normalized(t *testing.T, obj any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "namespace")
	}
	strip(m)
	return m
}

// strip removes the chart's labels and annotations everywhere in v, and reports
// whether v is a map that stripping emptied.
func strip(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		removed := false
		for _, k := range append(slices.Clone(helmAddedLabels), helmAddedAnnotations...) {
			if _, ok := v[k]; ok {
				delete(v, k)
				removed = true
			}
		}
		for k, e := range v {
			if strip(e) {
				delete(v, k)
			}
		}
		return removed && len(v) == 0
	case []any:
		for _, e := range v {
			strip(e)
		}
	}
	return false
}

// compareUnits compares the objects of a rendered chart with a kustomization's, by
// kind and name, semantically (typed, then as JSON less the allowed differences).
// Every object of want must be rendered; the chart may add only the objects
// extra allows ("Kind name"), and want's objects missing from the chart must be in
// absent.
func compareUnits(t *testing.T, chart, want *unit, extra, absent []string) {
	t.Helper()
	got := map[string]object{}
	for _, o := range chart.objects {
		got[o.kind+" "+o.name] = o
	}
	seen := map[string]bool{}
	for _, w := range want.objects {
		key := w.kind + " " + w.name
		g, ok := got[key]
		if !ok {
			if !slices.Contains(absent, key) {
				t.Errorf("%s: the chart renders no %s", want.dir, key)
			}
			continue
		}
		seen[key] = true
		if w.kind == "ConfigMap" {
			continue // compared by content where the test has it (compareConfigs)
		}
		gn, wn := normalized(t, g.obj), normalized(t, w.obj)
		if !reflect.DeepEqual(gn, wn) {
			gy, _ := yaml.Marshal(gn)
			wy, _ := yaml.Marshal(wn)
			t.Errorf("%s differs from %s's:\n--- chart\n%s\n--- %s\n%s", key, want.dir, gy, want.dir, wy)
		}
	}
	for key := range got {
		if !seen[key] && !slices.Contains(extra, key) {
			t.Errorf("the chart renders %s, which %s does not have", key, want.dir)
		}
	}
}

// compareConfigs checks that the configuration the chart rendered for each service is
// the overlay's file, member for member.
func compareConfigs(t *testing.T, chart, want *unit) {
	t.Helper()
	for _, svc := range []string{"wit-issuer", "tts"} {
		key := dataKey("ConfigMap", helmNamespace, svc+"-config")
		gf, wf := chart.data[key][svc+".yaml"], want.data[key][svc+".yaml"]
		if gf == "" || wf == "" {
			t.Errorf("%s: no %s.yaml (chart %q, %s %q)", key, svc, gf, want.dir, wf)
			continue
		}
		g, w := readYAMLFile(t, gf), readYAMLFile(t, wf)
		if !reflect.DeepEqual(g, w) {
			gy, _ := yaml.Marshal(g)
			wy, _ := yaml.Marshal(w)
			t.Errorf("%s.yaml: the chart's configuration is not %s:\n--- chart\n%s\n--- %s\n%s", svc, wf, gy, wf, wy)
		}
	}
}

// readYAMLFile reads a YAML file as a map.
func readYAMLFile(t testing.TB, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := goyaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// values builds chart values from YAML text.
func values(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("values: %v\n%s", err, text)
	}
	return m
}

// overlayConfigAsValues reads an overlay's service configuration as the chart's
// <service>.config value: less listen and tls, which the chart sets (and its schema
// refuses in config).
func overlayConfigAsValues(t *testing.T, file string) map[string]any {
	t.Helper()
	m := readYAMLFile(t, file)
	delete(m, "listen")
	delete(m, "tls")
	// Through JSON, as helm reads values: numbers float64, no YAML-specific types.
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHelmChartLintDefaults runs helm lint --strict on both charts with their default
// values, and renders them: the defaults are a starting point that deploys.
func TestHelmChartLintDefaults(t *testing.T) {
	u := renderChart(t, chartDir, nil)
	checkChartUnit(t, u, []string{"ConfigMap dialogtrust-ca", "Secret tts-signing-key", "Secret tts-tls",
		"Secret wit-issuer-signing-key", "Secret wit-issuer-tls"})
	a := renderChart(t, agentChartDir, nil)
	if len(a.objects) == 0 {
		t.Fatal("the agent chart rendered nothing")
	}
}

// TestHelmChartRefusesBadValues keeps lint and the schema honest: values that would
// deploy something else than asked are refused at lint or render time, with a message
// that names the value.
func TestHelmChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct{ name, vals, want string }{
		{"unknown key source", "keys: {kind: kms}", "/keys/kind"},
		{"pkcs11 without its values", "keys: {kind: pkcs11}", "/keys"},
		{"one replica", "tts: {replicas: 1}", "replicas"},
		{"latest tag", "witIssuer: {image: dialogtrust/wit-issuer:latest}", "image"},
		{"listen in config", "tts: {config: {listen: 0.0.0.0:1}}", "config"},
		{"external without addrs", "redis: {enabled: false}", "/redis/external/addrs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := values(t, tc.vals)
			lintErr := helmLint(chartDir, vals)
			_, tmplErr := helmTemplate(chartDir, helmRelease, helmNamespace, vals)
			if lintErr == nil || tmplErr == nil {
				t.Fatalf("accepted: lint %v, template %v", lintErr, tmplErr)
			}
			if !strings.Contains(tmplErr.Error(), tc.want) {
				t.Errorf("template error %q does not name %s", tmplErr, tc.want)
			}
		})
	}
}

// TestHelmChartMatchesKustomizeBase: with keys.kind file and the chart's Redis (the
// defaults), the chart renders the objects of deploy/k8s/base, the same up to the
// allowed differences (helmAddedLabels, helmAddedAnnotations), plus the ConfigMaps the
// base leaves to an overlay, which the chart makes from values.
func TestHelmChartMatchesKustomizeBase(t *testing.T) {
	u := renderChart(t, chartDir, nil)
	base := loadUnit(t, filepath.Join(k8sDir, "base"))
	compareUnits(t, u, base, []string{"ConfigMap wit-issuer-config", "ConfigMap tts-config", "ConfigMap wit-issuer-workloads"}, nil)
}

// TestHelmChartMatchesReplicatedOverlay: with the settings of overlays/replicated
// (keys.kind shared, three replicas, minAvailable 2, Redis ACL users, and its two
// configuration files as the services' config values), the chart renders the
// overlay's objects as kustomize would patch them, and configuration files equal to
// the overlay's, member for member: the members the chart sets (listen, tls, the key
// source, the store's addresses and credentials) come out as the overlay wrote them.
// The overlay's Namespace is not the chart's (helm install --create-namespace, or
// your own, labelled for the restricted Pod Security Standard), nor are the
// ConfigMaps of workloads and CA, made from generate.sh's files.
func TestHelmChartMatchesReplicatedOverlay(t *testing.T) {
	over := filepath.Join(k8sDir, "overlays", "replicated")
	vals := values(t, `
keys: {kind: shared}
redis: {auth: {enabled: true}}
witIssuer: {replicas: 3, podDisruptionBudget: {minAvailable: 2}, workloadsConfigMapName: wit-issuer-workloads}
tts: {replicas: 3, podDisruptionBudget: {minAvailable: 2}}
`)
	vals["witIssuer"].(map[string]any)["config"] = overlayConfigAsValues(t, filepath.Join(over, "config", "wit-issuer.yaml"))
	vals["tts"].(map[string]any)["config"] = overlayConfigAsValues(t, filepath.Join(over, "config", "tts.yaml"))
	u := renderChart(t, chartDir, vals)
	checkChartUnit(t, u, []string{"ConfigMap dialogtrust-ca", "ConfigMap wit-issuer-workloads", "Secret redis-acl",
		"Secret redis-password", "Secret tts-keyring", "Secret tts-tls", "Secret wit-issuer-keyring", "Secret wit-issuer-tls"})
	want := loadUnit(t, over)
	// The overlay generates its configuration ConfigMaps (loadUnit keeps their files,
	// not objects): compareConfigs compares their contents.
	compareUnits(t, u, want, []string{"ConfigMap wit-issuer-config", "ConfigMap tts-config"}, []string{"Namespace dialogtrust", "ConfigMap wit-issuer-workloads", "ConfigMap dialogtrust-ca"})
	compareConfigs(t, u, want)
}
