package deploy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// replicatedDir is the overlay of three replicas per service with shared key rings.
var replicatedDir = filepath.Join(k8sDir, "overlays", "replicated")

// patchOp is one operation of a JSON patch (RFC 6902); the kit uses test, replace, add
// and remove.
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// applyPatch applies ops to obj (a typed Kubernetes object) as kustomize does, and
// decodes the result strictly into a new object of the same type: a patch that adds a
// member the API type does not have is an error, as it would be at the API server.
func applyPatch(obj any, ops []patchOp) (any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	for i, op := range ops {
		if doc, err = applyOp(doc, op); err != nil {
			return nil, fmt.Errorf("operation %d (%s %s): %w", i+1, op.Op, op.Path, err)
		}
	}
	if b, err = json.Marshal(doc); err != nil {
		return nil, err
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
	if err := decodeStrict(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

func applyOp(doc any, op patchOp) (any, error) {
	if !strings.HasPrefix(op.Path, "/") {
		return nil, fmt.Errorf("path must start with /")
	}
	tokens := strings.Split(op.Path[1:], "/")
	for i, tok := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
	}
	var value any
	if op.Op != "remove" {
		if len(op.Value) == 0 {
			return nil, fmt.Errorf("no value")
		}
		if err := json.Unmarshal(op.Value, &value); err != nil {
			return nil, err
		}
	}
	parent, err := pointer(doc, tokens[:len(tokens)-1])
	if err != nil {
		return nil, err
	}
	last := tokens[len(tokens)-1]
	switch p := parent.(type) {
	case map[string]any:
		cur, ok := p[last]
		switch op.Op {
		case "test":
			if !ok || !reflect.DeepEqual(cur, value) {
				return nil, fmt.Errorf("test failed: %v, want %v", cur, value)
			}
		case "replace", "remove":
			if !ok {
				return nil, fmt.Errorf("no member %q", last)
			}
			if op.Op == "remove" {
				delete(p, last)
			} else {
				p[last] = value
			}
		case "add":
			p[last] = value
		default:
			return nil, fmt.Errorf("operation %q", op.Op)
		}
		return doc, nil
	case []any:
		if op.Op == "add" && last == "-" {
			return doc, setPointer(doc, tokens[:len(tokens)-1], append(p, value))
		}
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i > len(p) || (i == len(p) && op.Op != "add") {
			return nil, fmt.Errorf("index %q of %d elements", last, len(p))
		}
		switch op.Op {
		case "test":
			if !reflect.DeepEqual(p[i], value) {
				return nil, fmt.Errorf("test failed: %v, want %v", p[i], value)
			}
			return doc, nil
		case "replace":
			p[i] = value
			return doc, nil
		case "remove":
			return doc, setPointer(doc, tokens[:len(tokens)-1], slices.Delete(p, i, i+1))
		case "add":
			return doc, setPointer(doc, tokens[:len(tokens)-1], slices.Insert(p, i, value))
		}
		return nil, fmt.Errorf("operation %q", op.Op)
	}
	return nil, fmt.Errorf("parent is neither an object nor an array")
}

// pointer follows tokens (a JSON pointer's) from doc.
func pointer(doc any, tokens []string) (any, error) {
	for _, tok := range tokens {
		switch v := doc.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q", tok)
			}
			doc = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, fmt.Errorf("index %q of %d elements", tok, len(v))
			}
			doc = v[i]
		default:
			return nil, fmt.Errorf("%q: not an object or array", tok)
		}
	}
	return doc, nil
}

// setPointer replaces the array at tokens (its length changed) in its parent.
func setPointer(doc any, tokens []string, value any) error {
	parent, err := pointer(doc, tokens[:len(tokens)-1])
	if err != nil {
		return err
	}
	last := tokens[len(tokens)-1]
	switch p := parent.(type) {
	case map[string]any:
		p[last] = value
	case []any:
		i, _ := strconv.Atoi(last)
		p[i] = value
	}
	return nil
}

// The JSON patch of the test does what kustomize's does, refuses what kustomize
// refuses (a failed test op, a missing member), and yields only valid API objects.
func TestJSONPatch(t *testing.T) {
	base := func() *appsv1.Deployment {
		var d appsv1.Deployment
		if err := decodeStrict([]byte(`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
			"spec": {"replicas": 2, "template": {"spec": {"volumes": [{"name": "a"}, {"name": "b"}], "containers": [{"name": "c"}]}}}}`), &d); err != nil {
			t.Fatal(err)
		}
		return &d
	}
	ops := func(s string) []patchOp {
		var o []patchOp
		if err := decodeStrict([]byte(s), &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	got, err := applyPatch(base(), ops(`[{"op": "replace", "path": "/spec/replicas", "value": 3},
		{"op": "test", "path": "/spec/template/spec/volumes/1/name", "value": "b"},
		{"op": "replace", "path": "/spec/template/spec/volumes/1", "value": {"name": "k"}},
		{"op": "add", "path": "/spec/template/spec/volumes/-", "value": {"name": "z"}},
		{"op": "add", "path": "/spec/template/spec/volumes/0", "value": {"name": "first"}},
		{"op": "remove", "path": "/spec/template/spec/volumes/1"}]`))
	if err != nil {
		t.Fatal(err)
	}
	d := got.(*appsv1.Deployment)
	var names []string
	for _, v := range d.Spec.Template.Spec.Volumes {
		names = append(names, v.Name)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 || !slices.Equal(names, []string{"first", "k", "z"}) {
		t.Fatalf("replicas %v, volumes %v", d.Spec.Replicas, names)
	}
	for _, bad := range []string{
		`[{"op": "test", "path": "/spec/template/spec/volumes/1/name", "value": "a"}]`,
		`[{"op": "replace", "path": "/spec/paused2", "value": true}]`,
		`[{"op": "add", "path": "/spec/template/spec/bogus", "value": 1}]`,
		`[{"op": "replace", "path": "/spec/template/spec/volumes/5", "value": {"name": "k"}}]`,
		`[{"op": "move", "path": "/spec/replicas", "value": 1}]`,
	} {
		if _, err := applyPatch(base(), ops(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// configOf returns the configuration file (the generator source) a service container
// of w runs with, or "".
func configOf(u *unit, w podTemplate, ct corev1.Container) string {
	i := slices.Index(ct.Args, "--config")
	if i < 0 || i+1 >= len(ct.Args) {
		return ""
	}
	v, rel := mountedAt(w, ct, ct.Args[i+1])
	if v == nil || v.ConfigMap == nil {
		return ""
	}
	return u.data[dataKey("ConfigMap", w.ns, v.ConfigMap.Name)][rel]
}

// mountedAt returns the volume of ct that file is in, and file's path in it.
func mountedAt(w podTemplate, ct corev1.Container, file string) (*corev1.Volume, string) {
	for _, m := range ct.VolumeMounts {
		rel, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for i, v := range w.tmpl.Spec.Volumes {
			if v.Name == m.Name {
				return &w.tmpl.Spec.Volumes[i], rel
			}
		}
	}
	return nil, ""
}

// checkReplicated checks what the replicated overlay promises beyond the checker's
// general rules: three replicas of each service with a PodDisruptionBudget keeping two,
// keys.shared with its secret from a Secret and no signing key file, the store in
// Redis as an ACL user whose password comes from a Secret, readiness on /readyz, and a
// Redis that reads its ACL users from a Secret.
func checkReplicated(t *testing.T, u *unit) {
	t.Helper()
	services := map[string]bool{}
	for _, w := range u.workloads() {
		for _, ct := range w.tmpl.Spec.Containers {
			cf := u.dir + ": " + w.kind + " " + w.name + " container " + ct.Name
			svc, ours := isOurs(ct)
			if !ours {
				if strings.HasPrefix(ct.Image, "redis:") {
					i := slices.Index(ct.Args, "--aclfile")
					if i < 0 || i+1 >= len(ct.Args) {
						t.Errorf("%s: Redis without --aclfile: anyone on its network could write claims", cf)
						continue
					}
					if v, rel := mountedAt(w, ct, ct.Args[i+1]); v == nil || v.Secret == nil || u.data[dataKey("Secret", w.ns, v.Secret.SecretName)] == nil ||
						!keyIn(u.data[dataKey("Secret", w.ns, v.Secret.SecretName)], rel) {
						t.Errorf("%s: --aclfile %s is not a key of a mounted Secret", cf, ct.Args[i+1])
					}
				}
				continue
			}
			services[svc] = true
			if w.replicas != 3 {
				t.Errorf("%s: %d replicas, want 3", cf, w.replicas)
			}
			if p := ct.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
				t.Errorf("%s: no readiness probe on /readyz", cf)
			}
			for _, v := range w.tmpl.Spec.Volumes {
				if v.Secret != nil && strings.Contains(v.Secret.SecretName, "signing-key") {
					t.Errorf("%s mounts the signing key Secret %s; the replicated form keeps its keys in Redis", cf, v.Secret.SecretName)
				}
			}
			src := configOf(u, w, ct)
			if src == "" {
				t.Errorf("%s: its configuration is no generated key of a mounted ConfigMap", cf)
				continue
			}
			cfg := readServiceConfig(t, src)
			if cfg.str("keys", "signing_key_file") != "" || cfg.str("keys", "data_dir") != "" {
				t.Errorf("%s: keys.signing_key_file or keys.data_dir with keys.shared", src)
			}
			if cfg.str("keys", "rotation_period") == "" {
				t.Errorf("%s: no keys.rotation_period: the shared ring would never rotate", src)
			}
			if cfg.str("store", "type") != "redis" || cfg.str("store", "redis", "username") == "" {
				t.Errorf("%s: the store must be Redis as an ACL user", src)
			}
			for _, member := range [][]string{{"keys", "shared", "secret_file"}, {"store", "redis", "password_file"}} {
				file := cfg.str(member...)
				v, rel := mountedAt(w, ct, file)
				if file == "" || v == nil || v.Secret == nil {
					t.Errorf("%s: %s %q is not in a mounted Secret of %s", src, strings.Join(member, "."), file, cf)
					continue
				}
				if keys := u.data[dataKey("Secret", w.ns, v.Secret.SecretName)]; !keyIn(keys, rel) {
					t.Errorf("%s: %s: Secret %s has no key %s", src, strings.Join(member, "."), v.Secret.SecretName, rel)
				}
			}
		}
	}
	if !services["wit-issuer"] || !services["tts"] {
		t.Errorf("%s: services %v, want wit-issuer and tts", u.dir, services)
	}
	for _, o := range u.objects {
		if pdb, ok := o.obj.(*policyv1.PodDisruptionBudget); ok {
			if m := pdb.Spec.MinAvailable; m == nil || m.IntValue() != 2 {
				t.Errorf("%s: PodDisruptionBudget %s: minAvailable %v, want 2 of 3", u.dir, o.name, m)
			}
		}
	}
}

// keyIn reports whether key is a key of a ConfigMap's or Secret's keys.
func keyIn(keys map[string]string, key string) bool {
	_, ok := keys[key]
	return ok
}

// TestKustomizeBuildReplicated renders the replicated overlay with kubectl kustomize
// (generate.sh first when openssl is there) and checks what would be applied as
// TestKubernetesManifests checks the sources, plus the overlay's promises
// (checkReplicated). With generate.sh's files it also checks that Redis's ACL file
// holds the SHA-256 of the services' password, that the key ring secrets are long
// enough, and the serving certificates. Without kubectl it skips.
func TestKustomizeBuildReplicated(t *testing.T) {
	kubectl, tree := kustomizeTree(t)
	overlay := filepath.Join(tree, "overlays", "replicated")
	os.RemoveAll(filepath.Join(overlay, "secrets"))
	os.RemoveAll(filepath.Join(overlay, "workloads"))
	generated := generateOr(t, overlay, placeholdersIn)
	u, counts := renderOverlay(t, kubectl, overlay, "rendered replicated")
	for kind, n := range map[string]int{"Deployment": 2, "StatefulSet": 1, "Service": 3, "PodDisruptionBudget": 2,
		"NetworkPolicy": 1, "ConfigMap": 4, "Secret": 6} {
		if counts["dialogtrust "+kind] != n {
			t.Errorf("%d %ss, want %d", counts["dialogtrust "+kind], kind, n)
		}
	}
	c := &checker{t: t, u: u, missing: map[string]bool{}, configs: map[string]bool{}}
	c.run()
	if len(c.configs) != 2 {
		t.Errorf("%d rendered configurations checked, want 2", len(c.configs))
	}
	checkReplicated(t, u)
	if !generated {
		return
	}
	s := filepath.Join(overlay, "secrets")
	password, err := os.ReadFile(filepath.Join(s, "redis-password"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bytes.TrimRight(password, "\r\n"))
	acl, err := os.ReadFile(filepath.Join(s, "redis-users.acl"))
	if err != nil || !strings.Contains(string(acl), "user dialogtrust on #"+hex.EncodeToString(sum[:])+" ~dialogtrust:* ") ||
		!strings.Contains(string(acl), "user default on nopass -@all +ping\n") || bytes.Contains(acl, bytes.TrimSpace(password)) {
		t.Errorf("redis-users.acl does not hold the password's SHA-256 for user dialogtrust, or holds the password (%v):\n%s", err, acl)
	}
	for _, k := range []string{"wit-issuer-keyring.secret", "tts-keyring.secret"} {
		b, err := os.ReadFile(filepath.Join(s, k))
		if err != nil || len(bytes.TrimRight(b, "\r\n")) < 32 {
			t.Errorf("%s: %v, %d bytes; the key ring needs at least 32", k, err, len(b))
		}
		if st, err := os.Stat(filepath.Join(s, k)); err != nil || st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: %v; want a private file (mode 0600)", k, err)
		}
	}
	checkServingCerts(t, s, filepath.Join(overlay, "config"))
}
