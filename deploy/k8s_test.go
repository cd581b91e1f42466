package deploy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const k8sDir = "k8s"

// kustomization is the part of kustomize's Kustomization that deploy/k8s uses, decoded
// strictly like the manifests.
type kustomization struct {
	APIVersion         string      `json:"apiVersion"`
	Kind               string      `json:"kind"`
	Namespace          string      `json:"namespace,omitempty"`
	Resources          []string    `json:"resources,omitempty"`
	Images             []kImage    `json:"images,omitempty"`
	ConfigMapGenerator []generator `json:"configMapGenerator,omitempty"`
	SecretGenerator    []generator `json:"secretGenerator,omitempty"`
	Patches            []kPatch    `json:"patches,omitempty"`
}

// kPatch is a patch of the kustomization: a JSON patch (RFC 6902) file, applied to the
// objects its target selects by kind and, if given, name. The kit writes no strategic
// merge patches, so the test need not know the merge keys of every API type.
type kPatch struct {
	Path   string       `json:"path"`
	Target *patchTarget `json:"target"`
}

type patchTarget struct {
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
}

type kImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

type generator struct {
	Name     string   `json:"name"`
	Behavior string   `json:"behavior,omitempty"`
	Type     string   `json:"type,omitempty"`
	Files    []string `json:"files,omitempty"`
	Literals []string `json:"literals,omitempty"`
}

// newTyped returns the Kubernetes API type for apiVersion and kind. A kind the kit does
// not use is an error rather than a pass: the test must understand every object.
func newTyped(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		return &corev1.Namespace{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1 Secret":
		return &corev1.Secret{}, nil
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, nil
	}
	return nil, fmt.Errorf("apiVersion %q kind %q: not a type this test knows", apiVersion, kind)
}

// decodeStrict turns one YAML document into its typed object: duplicate keys are errors
// (YAMLToJSONStrict), and so is any member the API type does not have
// (DisallowUnknownFields), as the API server's strict field validation would say.
func decodeStrict(doc []byte, into any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the object")
	}
	return nil
}

// object is one decoded manifest.
type object struct {
	where string // file#document
	kind  string
	ns    string
	name  string
	obj   any
}

// decodeManifests decodes every document of a file. Documents that hold only comments
// are skipped.
func decodeManifests(file string, data []byte) ([]object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []object
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if j, err := yaml.YAMLToJSON(doc); err == nil && string(j) == "null" {
			continue
		}
		where := fmt.Sprintf("%s#%d", file, i)
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		typed, err := newTyped(tm.APIVersion, tm.Kind)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if err := decodeStrict(doc, typed); err != nil {
			return nil, fmt.Errorf("%s (%s): %w", where, tm.Kind, err)
		}
		meta := typed.(metav1.Object)
		if meta.GetName() == "" {
			return nil, fmt.Errorf("%s: %s without a name", where, tm.Kind)
		}
		out = append(out, object{where: where, kind: tm.Kind, ns: meta.GetNamespace(), name: meta.GetName(), obj: typed})
	}
}

// unit is what a kustomization puts together: its objects (with its namespace applied)
// and the keys of every ConfigMap and Secret, with the file each generated key is read
// from.
type unit struct {
	dir     string
	objects []object
	// data maps "ConfigMap ns/name" or "Secret ns/name" to key -> source file ("" when
	// the key is written in a manifest).
	data map[string]map[string]string
	// sources are the generator input files.
	sources []string
	// manifests are the files of resources.
	manifests []string
	// patches are the patch files.
	patches []string
}

func dataKey(kind, ns, name string) string { return kind + " " + ns + "/" + name }

// loadUnit reads the kustomization in dir and, recursively, the ones it names.
func loadUnit(t *testing.T, dir string) *unit {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := decodeStrict(b, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Fatalf("%s/kustomization.yaml: apiVersion %q kind %q", dir, k.APIVersion, k.Kind)
	}
	u := &unit{dir: dir, data: map[string]map[string]string{}}
	add := func(o object) {
		if k.Namespace != "" {
			o.ns = k.Namespace
		}
		u.objects = append(u.objects, o)
		switch v := o.obj.(type) {
		case *corev1.ConfigMap:
			keys := map[string]string{}
			for key := range v.Data {
				keys[key] = ""
			}
			for key := range v.BinaryData {
				keys[key] = ""
			}
			u.data[dataKey("ConfigMap", o.ns, o.name)] = keys
		case *corev1.Secret:
			keys := map[string]string{}
			for key := range v.Data {
				keys[key] = ""
			}
			for key := range v.StringData {
				keys[key] = ""
			}
			u.data[dataKey("Secret", o.ns, o.name)] = keys
		}
	}
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: resource %s: %v", dir, r, err)
		}
		if st.IsDir() {
			sub := loadUnit(t, p)
			for _, o := range sub.objects {
				add(o)
			}
			for key, keys := range sub.data {
				if _, ok := u.data[key]; !ok { // generated in sub: keep its keys
					kind, rest, _ := strings.Cut(key, " ")
					ns, name, _ := strings.Cut(rest, "/")
					if k.Namespace != "" {
						ns = k.Namespace
					}
					u.data[dataKey(kind, ns, name)] = keys
				}
			}
			u.sources = append(u.sources, sub.sources...)
			u.manifests = append(u.manifests, sub.manifests...)
			u.patches = append(u.patches, sub.patches...)
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeManifests(p, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			add(o)
		}
		u.manifests = append(u.manifests, p)
	}
	for _, p := range k.Patches {
		if p.Path == "" || p.Target == nil || p.Target.Kind == "" {
			t.Errorf("%s: a patch needs a path and a target kind (the kit's patches are JSON patches)", dir)
			continue
		}
		file := filepath.Join(dir, p.Path)
		u.patches = append(u.patches, file)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ops []patchOp
		if err := decodeStrict(b, &ops); err != nil {
			t.Errorf("%s: not a JSON patch: %v", file, err)
			continue
		}
		n := 0
		for i, o := range u.objects {
			if o.kind != p.Target.Kind || (p.Target.Name != "" && o.name != p.Target.Name) {
				continue
			}
			n++
			patched, err := applyPatch(o.obj, ops)
			if err != nil {
				t.Errorf("%s on %s %s: %v", file, o.kind, o.name, err)
				continue
			}
			u.objects[i].obj = patched
		}
		if n == 0 {
			t.Errorf("%s: its target %+v selects nothing", file, *p.Target)
		}
	}
	for _, g := range []struct {
		kind string
		gens []generator
	}{{"ConfigMap", k.ConfigMapGenerator}, {"Secret", k.SecretGenerator}} {
		for _, gen := range g.gens {
			key := dataKey(g.kind, k.Namespace, gen.Name)
			keys := map[string]string{}
			switch gen.Behavior {
			case "", "create":
				if _, ok := u.data[key]; ok {
					t.Errorf("%s: %s %s generated over an existing one without behavior: replace or merge", dir, g.kind, gen.Name)
				}
			case "merge":
				keys = u.data[key]
				if keys == nil {
					t.Errorf("%s: %s %s merges into nothing", dir, g.kind, gen.Name)
					keys = map[string]string{}
				}
			case "replace":
				if _, ok := u.data[key]; !ok {
					t.Errorf("%s: %s %s replaces nothing", dir, g.kind, gen.Name)
				}
			default:
				t.Errorf("%s: %s %s: behavior %q", dir, g.kind, gen.Name, gen.Behavior)
			}
			for _, f := range gen.Files {
				name, file, ok := strings.Cut(f, "=")
				if !ok {
					name, file = path.Base(f), f
				}
				if strings.Contains(file, "..") {
					t.Errorf("%s: %s reads %s outside the kustomization (kustomize refuses that)", dir, gen.Name, file)
				}
				keys[name] = filepath.Join(dir, file)
				u.sources = append(u.sources, filepath.Join(dir, file))
			}
			for _, l := range gen.Literals {
				name, _, _ := strings.Cut(l, "=")
				keys[name] = ""
			}
			u.data[key] = keys
		}
	}
	return u
}

// podTemplate is a workload's pod template, with what the checks need around it.
type podTemplate struct {
	kind, ns, name string
	replicas       int32
	selector       *metav1.LabelSelector
	tmpl           *corev1.PodTemplateSpec
}

func (u *unit) workloads() []podTemplate {
	var out []podTemplate
	for _, o := range u.objects {
		switch v := o.obj.(type) {
		case *appsv1.Deployment:
			r := int32(1)
			if v.Spec.Replicas != nil {
				r = *v.Spec.Replicas
			}
			out = append(out, podTemplate{"Deployment", o.ns, o.name, r, v.Spec.Selector, &v.Spec.Template})
		case *appsv1.StatefulSet:
			r := int32(1)
			if v.Spec.Replicas != nil {
				r = *v.Spec.Replicas
			}
			out = append(out, podTemplate{"StatefulSet", o.ns, o.name, r, v.Spec.Selector, &v.Spec.Template})
		}
	}
	return out
}

// selects reports whether sel (a LabelSelector) selects the pods of w.
func selects(t *testing.T, sel *metav1.LabelSelector, w podTemplate) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("selector %v: %v", sel, err)
		return false
	}
	return !s.Empty() && s.Matches(labels.Set(w.tmpl.Labels))
}

// isSidecar: an init container that runs beside the pod's containers for the pod's
// life (a native sidecar, restartPolicy Always).
func isSidecar(ct corev1.Container) bool {
	return ct.RestartPolicy != nil && *ct.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// podContainers are the containers that serve while the pod runs: its containers and
// its native sidecars.
func podContainers(spec corev1.PodSpec) []corev1.Container {
	out := slices.Clone(spec.Containers)
	for _, ct := range spec.InitContainers {
		if isSidecar(ct) {
			out = append(out, ct)
		}
	}
	return out
}

// hasPort reports whether a container of w exposes port (a name or a number).
func hasPort(w podTemplate, port intstr.IntOrString) bool {
	for _, c := range podContainers(w.tmpl.Spec) {
		for _, p := range c.Ports {
			if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
				return true
			}
		}
	}
	return false
}

func containerPort(c corev1.Container, port intstr.IntOrString) (int32, bool) {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// checker checks a unit. A partial unit (the base) may leave references to ConfigMaps
// and Secrets unresolved; they are collected in missing instead of failing.
type checker struct {
	t       *testing.T
	u       *unit
	partial bool
	missing map[string]bool
	// configs are the configuration files checked with -check-config.
	configs map[string]bool
}

func (c *checker) errorf(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf("%s: "+format, append([]any{c.u.dir}, args...)...)
}

// keys returns the keys of a ConfigMap or Secret, or nil (and records or reports it)
// when the unit does not define it.
func (c *checker) keys(kind, ns, name, from string) map[string]string {
	c.t.Helper()
	keys, ok := c.u.data[dataKey(kind, ns, name)]
	if !ok {
		if c.partial {
			c.missing[kind+" "+name] = true
		} else {
			c.errorf("%s refers to %s %s/%s, which this kustomization does not define", from, kind, ns, name)
		}
		return nil
	}
	return keys
}

// imageRef splits an image reference into repository and tag (without a digest); a
// registry's port is part of the repository.
func imageRef(image string) (repo, tag string) {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i], image[i+1:]
	}
	return image, ""
}

// isOurs: a container of the services (not Redis): an image dialogtrust/<service>, from
// any registry.
func isOurs(ct corev1.Container) (service string, ok bool) {
	repo, _ := imageRef(ct.Image)
	if i := strings.LastIndex(repo, "/dialogtrust/"); i >= 0 {
		repo = repo[i+1:]
	}
	svc, ok := strings.CutPrefix(repo, "dialogtrust/")
	return svc, ok
}

func (c *checker) run() {
	t := c.t
	ws := c.u.workloads()
	if len(ws) == 0 {
		c.errorf("no workloads")
	}
	for _, w := range ws {
		from := w.kind + " " + w.name
		if !selects(t, w.selector, w) {
			c.errorf("%s: selector %v does not match its pod labels %v", from, w.selector, w.tmpl.Labels)
		}
		c.checkPod(w, from)
	}
	pdbs := map[string]int{}
	for _, o := range c.u.objects {
		from := o.kind + " " + o.name + " (" + o.where + ")"
		switch v := o.obj.(type) {
		case *corev1.Service:
			if len(v.Spec.Selector) == 0 {
				c.errorf("%s has no selector", from)
				continue
			}
			var targets []podTemplate
			for _, w := range ws {
				if w.ns == o.ns && labels.SelectorFromSet(v.Spec.Selector).Matches(labels.Set(w.tmpl.Labels)) {
					targets = append(targets, w)
				}
			}
			if len(targets) == 0 {
				c.errorf("%s selects no workload", from)
			}
			for _, p := range v.Spec.Ports {
				for _, w := range targets {
					if !hasPort(w, p.TargetPort) {
						c.errorf("%s: targetPort %s is not a port of %s", from, p.TargetPort.String(), w.name)
					}
				}
			}
		case *policyv1.PodDisruptionBudget:
			var matched []podTemplate
			for _, w := range ws {
				if w.kind == "Deployment" && w.ns == o.ns && selects(t, v.Spec.Selector, w) {
					matched = append(matched, w)
					pdbs[w.ns+"/"+w.name]++
				}
			}
			if len(matched) != 1 {
				c.errorf("%s selects %d Deployments, want 1", from, len(matched))
				continue
			}
			// minAvailable equal to replicas would block every node drain.
			if v.Spec.MinAvailable != nil && v.Spec.MinAvailable.Type == intstr.Int && v.Spec.MinAvailable.IntVal >= matched[0].replicas {
				c.errorf("%s: minAvailable %d with %d replicas blocks every drain", from, v.Spec.MinAvailable.IntVal, matched[0].replicas)
			}
		case *networkingv1.NetworkPolicy:
			var targets []podTemplate
			for _, w := range ws {
				if w.ns == o.ns && selects(t, &v.Spec.PodSelector, w) {
					targets = append(targets, w)
				}
			}
			if len(targets) == 0 {
				c.errorf("%s applies to no workload", from)
			}
			for _, in := range v.Spec.Ingress {
				for _, peer := range in.From {
					if peer.PodSelector == nil {
						continue
					}
					n := 0
					for _, w := range ws {
						if w.ns == o.ns && selects(t, peer.PodSelector, w) {
							n++
						}
					}
					if n == 0 {
						c.errorf("%s admits pods that no workload runs (%v)", from, peer.PodSelector)
					}
				}
				for _, p := range in.Ports {
					for _, w := range targets {
						if p.Port != nil && !hasPort(w, *p.Port) {
							c.errorf("%s: port %s is not a port of %s", from, p.Port.String(), w.name)
						}
					}
				}
			}
		}
	}
	for _, w := range ws {
		if w.kind == "Deployment" && pdbs[w.ns+"/"+w.name] != 1 {
			c.errorf("Deployment %s has %d PodDisruptionBudgets, want 1", w.name, pdbs[w.ns+"/"+w.name])
		}
	}
}

func (c *checker) checkPod(w podTemplate, from string) {
	spec := w.tmpl.Spec
	volumes := map[string]corev1.Volume{}
	external := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
		switch {
		case v.ConfigMap != nil:
			c.keys("ConfigMap", w.ns, v.ConfigMap.Name, from+" volume "+v.Name)
		case v.Secret != nil:
			c.keys("Secret", w.ns, v.Secret.SecretName, from+" volume "+v.Name)
		case v.EmptyDir != nil:
		case v.CSI != nil && v.CSI.Driver == "csi.spiffe.io" && v.CSI.ReadOnly != nil && *v.CSI.ReadOnly:
			// The SPIFFE CSI driver: the SPIRE agent's Workload API socket, read-only.
		case v.HostPath != nil || v.Image != nil || v.CSI != nil || v.PersistentVolumeClaim != nil:
			// Files from outside the cluster's objects (the PKCS#11 module of
			// keys.pkcs11.volume, a SPIRE socket directory on the node): every
			// container mounts them read-only (below).
			external[v.Name] = true
		default:
			c.errorf("%s: volume %s of a kind this test does not check", from, v.Name)
		}
	}
	claims := map[string]bool{}
	if w.kind == "StatefulSet" {
		for _, o := range c.u.objects {
			if s, ok := o.obj.(*appsv1.StatefulSet); ok && o.name == w.name {
				for _, pvc := range s.Spec.VolumeClaimTemplates {
					claims[pvc.Name] = true
				}
			}
		}
	}
	podNonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		c.errorf("%s mounts a service account token it does not need", from)
	}
	for _, ct := range spec.InitContainers {
		if !isSidecar(ct) {
			c.errorf("%s: init container %s: init containers other than native sidecars (restartPolicy Always) are not checked by this test", from, ct.Name)
		}
	}
	for _, ct := range podContainers(spec) {
		cf := from + " container " + ct.Name
		sc := ct.SecurityContext
		switch {
		case sc == nil:
			c.errorf("%s has no securityContext", cf)
		default:
			if !podNonRoot && (sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
				c.errorf("%s: runAsNonRoot is not set", cf)
			}
			if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
				c.errorf("%s runs as uid 0", cf)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				c.errorf("%s: readOnlyRootFilesystem is not true", cf)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				c.errorf("%s: allowPrivilegeEscalation is not false", cf)
			}
			if sc.Privileged != nil && *sc.Privileged {
				c.errorf("%s is privileged", cf)
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				c.errorf("%s: capabilities must drop ALL and add none", cf)
			}
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := ct.Resources.Requests[r]; !ok {
				c.errorf("%s: no %s request", cf, r)
			}
			if _, ok := ct.Resources.Limits[r]; !ok {
				c.errorf("%s: no %s limit", cf, r)
			}
		}
		if name, tag, ok := strings.Cut(ct.Image, ":"); !ok || tag == "latest" || name == "" {
			c.errorf("%s: image %q needs a tag other than latest", cf, ct.Image)
		}
		for _, m := range ct.VolumeMounts {
			if _, ok := volumes[m.Name]; !ok && !claims[m.Name] {
				c.errorf("%s mounts %s, which is neither a volume nor a claim template", cf, m.Name)
			}
			if external[m.Name] && !m.ReadOnly {
				c.errorf("%s mounts %s (from the node or outside the cluster) writable; mount it readOnly", cf, m.Name)
			}
		}
		for _, e := range ct.Env {
			if e.ValueFrom != nil {
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					if keys := c.keys("ConfigMap", w.ns, r.Name, cf+" env "+e.Name); keys != nil {
						if _, ok := keys[r.Key]; !ok {
							c.errorf("%s env %s: ConfigMap %s has no key %s", cf, e.Name, r.Name, r.Key)
						}
					}
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					if keys := c.keys("Secret", w.ns, r.Name, cf+" env "+e.Name); keys != nil {
						if _, ok := keys[r.Key]; !ok {
							c.errorf("%s env %s: Secret %s has no key %s", cf, e.Name, r.Name, r.Key)
						}
					}
				}
			}
		}
		for _, e := range ct.EnvFrom {
			if e.ConfigMapRef != nil {
				c.keys("ConfigMap", w.ns, e.ConfigMapRef.Name, cf+" envFrom")
			}
			if e.SecretRef != nil {
				c.keys("Secret", w.ns, e.SecretRef.Name, cf+" envFrom")
			}
		}
		for _, p := range []struct {
			kind  string
			probe *corev1.Probe
		}{{"liveness", ct.LivenessProbe}, {"readiness", ct.ReadinessProbe}, {"startup", ct.StartupProbe}} {
			if p.probe == nil {
				if p.kind != "startup" {
					c.errorf("%s has no %s probe", cf, p.kind)
				}
				continue
			}
			var port *intstr.IntOrString
			switch {
			case p.probe.HTTPGet != nil:
				port = &p.probe.HTTPGet.Port
			case p.probe.TCPSocket != nil:
				port = &p.probe.TCPSocket.Port
			case p.probe.GRPC != nil:
				port = &intstr.IntOrString{Type: intstr.Int, IntVal: p.probe.GRPC.Port}
			}
			if port != nil {
				if _, ok := containerPort(ct, *port); !ok {
					c.errorf("%s: %s probe port %s is not a container port", cf, p.kind, port.String())
				}
			}
		}
		if svc, ours := isOurs(ct); ours && (svc == "wit-issuer" || svc == "tts") {
			c.checkService(w, ct, svc, volumes, cf)
		}
	}
}

// checkService checks a container of cmd/wit-issuer or cmd/tts against its
// configuration file: the file reaches the container through a ConfigMap, the real
// loader accepts it, it listens on the probed container port, and every file it names
// (and SSL_CERT_FILE) is a key of a mounted ConfigMap or Secret.
func (c *checker) checkService(w podTemplate, ct corev1.Container, svc string, volumes map[string]corev1.Volume, cf string) {
	if w.replicas < 2 {
		c.errorf("%s: %d replicas, want at least 2", cf, w.replicas)
	}
	for kind, p := range map[string]*corev1.Probe{"liveness": ct.LivenessProbe, "readiness": ct.ReadinessProbe} {
		want := map[string]string{"liveness": "/healthz", "readiness": "/readyz"}[kind]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want {
			c.errorf("%s: the %s probe must be GET %s", cf, kind, want)
		}
	}
	// resolve finds the ConfigMap or Secret key a file path comes from.
	resolve := func(file string) (source string, found, known bool) {
		v, rel, ok := mountedVolume(ct, volumes, file)
		if !ok {
			return "", false, true
		}
		keys, ok := c.volumeKeys(v, w.ns, cf)
		if !ok || keys == nil {
			return "", true, false // not a ConfigMap or Secret, or unresolved in a partial unit
		}
		src, ok := keys[rel]
		return src, ok, true
	}
	for _, e := range ct.Env {
		if e.Name == "SSL_CERT_FILE" {
			if _, found, _ := resolve(e.Value); !found {
				c.errorf("%s: SSL_CERT_FILE %s is in no mounted ConfigMap or Secret", cf, e.Value)
			}
		}
	}
	i := slices.Index(ct.Args, "--config")
	if i < 0 || i+1 >= len(ct.Args) {
		c.errorf("%s: args %q name no --config file", cf, ct.Args)
		return
	}
	src, found, known := resolve(ct.Args[i+1])
	if !known {
		return
	}
	if !found || src == "" {
		c.errorf("%s: --config %s is not a generated key of a mounted ConfigMap", cf, ct.Args[i+1])
		return
	}
	// The binary the image holds: an hsm image's (tag -hsm) is built with cgo and
	// can load a PKCS#11 module; the others are static.
	bin := command(c.t, svc)
	if _, tag := imageRef(ct.Image); strings.HasSuffix(tag, "-hsm") {
		bin = commandCgo(c.t, svc, true)
	}
	if err := checkConfigWith(c.t, bin, svc, src, nil); err != nil {
		c.errorf("%s: %v", cf, err)
	}
	c.configs[src] = true
	cfg := readServiceConfig(c.t, src)
	if ct.ReadinessProbe != nil && ct.ReadinessProbe.HTTPGet != nil {
		port, _ := containerPort(ct, ct.ReadinessProbe.HTTPGet.Port)
		if int(port) != cfg.listenPort(c.t) {
			c.errorf("%s: probes port %d, %s listens on %d", cf, port, src, cfg.listenPort(c.t))
		}
		tls := cfg.str("tls", "cert_file") != "" || cfg.str("tls", "workload_api_socket") != ""
		if scheme := ct.ReadinessProbe.HTTPGet.Scheme; tls != (scheme == corev1.URISchemeHTTPS) {
			c.errorf("%s: probe scheme %s, but TLS in %s is %v", cf, scheme, src, tls)
		}
	}
	// keys.pkcs11.module is loaded from a volume mounted read-only (checkPod).
	if module := cfg.str("keys", "pkcs11", "module"); module != "" {
		in := false
		for _, m := range ct.VolumeMounts {
			v := volumes[m.Name]
			if strings.HasPrefix(module, strings.TrimSuffix(m.MountPath, "/")+"/") && m.ReadOnly &&
				(v.HostPath != nil || v.Image != nil || v.CSI != nil || v.PersistentVolumeClaim != nil) {
				in = true
			}
		}
		if !in {
			c.errorf("%s: keys.pkcs11.module %s is in no read-only mounted volume of %s", src, module, cf)
		}
	}
	for member, file := range cfg.files() {
		if member == "keys.data_dir" {
			c.errorf("%s: keys.data_dir gives every replica a key of its own; use signing_key_file from a Secret", src)
			continue
		}
		if _, found, known := resolve(file); known && !found {
			c.errorf("%s: %s %s is in no mounted ConfigMap or Secret of %s", src, member, file, cf)
		}
	}
}

// The base leaves exactly these to an overlay (see base/kustomization.yaml).
var baseLeavesToOverlay = []string{
	"ConfigMap dialogtrust-ca", "ConfigMap tts-config", "ConfigMap wit-issuer-config", "ConfigMap wit-issuer-workloads",
	"Secret tts-signing-key", "Secret tts-tls", "Secret wit-issuer-signing-key", "Secret wit-issuer-tls",
}

// TestKubernetesManifests decodes every document of every manifest under deploy/k8s
// strictly into its Kubernetes API type, and checks each kustomization: workloads
// (selectors, security context, resources, probes, volumes and env from ConfigMaps and
// Secrets it defines), Services (selector, target ports), PodDisruptionBudgets (one per
// Deployment, matching it), NetworkPolicies, and the services' configuration files
// (accepted by the real loader, listening on the probed port, every file they name
// mounted). The base is checked too, except that it may leave exactly the documented
// ConfigMaps and Secrets to the overlays.
func TestKubernetesManifests(t *testing.T) {
	var kustomizations, manifests []string
	err := filepath.WalkDir(k8sDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case d.Name() == "kustomization.yaml":
			kustomizations = append(kustomizations, filepath.Dir(p))
		case strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml"):
			manifests = append(manifests, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	units := map[string]*unit{}
	sources := map[string]bool{}
	reachable := map[string]bool{}
	patches := map[string]bool{}
	for _, dir := range kustomizations {
		u := loadUnit(t, dir)
		units[dir] = u
		for _, s := range u.sources {
			sources[s] = true
		}
		for _, m := range u.manifests {
			reachable[m] = true
		}
		for _, p := range u.patches {
			patches[p] = true
		}
	}
	// Every YAML file is a manifest of some kustomization or a generator input (a
	// service configuration, checked below); a manifest nobody includes is a mistake.
	decoded := 0
	for _, m := range manifests {
		if sources[m] || patches[m] {
			continue
		}
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeManifests(m, b)
		if err != nil {
			t.Error(err)
		}
		decoded += len(objs)
		if !reachable[m] {
			t.Errorf("%s is in no kustomization's resources", m)
		}
	}
	if decoded == 0 {
		t.Fatal("no manifests decoded")
	}

	configs := map[string]bool{}
	for dir, u := range units {
		c := &checker{t: t, u: u, partial: dir == filepath.Join(k8sDir, "base"), missing: map[string]bool{}, configs: configs}
		c.run()
		if dir == replicatedDir {
			checkReplicated(t, u)
		}
		if c.partial {
			var missing []string
			for m := range c.missing {
				missing = append(missing, m)
			}
			slices.Sort(missing)
			if !slices.Equal(missing, baseLeavesToOverlay) {
				t.Errorf("the base leaves %q to overlays, documented: %q", missing, baseLeavesToOverlay)
			}
		}
	}
	for s := range sources {
		if strings.HasSuffix(s, ".yaml") && !configs[s] {
			t.Errorf("%s is generated into a ConfigMap but no container runs with it", s)
		}
	}
	if len(configs) == 0 {
		t.Error("no service configuration was checked")
	}
}

// TestKubernetesManifestsRejectUnknownFields keeps the strict decoding honest.
func TestKubernetesManifestsRejectUnknownFields(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nmetadata: {name: y}\n",
		"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x, nmespace: y}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {endpoints: [{port: https, tlsConfig: {serverName: x, insecure: true}}]}\n",
	} {
		if _, err := decodeManifests("test.yaml", []byte(doc)); err == nil {
			t.Errorf("accepted:\n%s", doc)
		}
	}
}

// TestKustomizeBuild renders the two-domains overlay with kustomize (kubectl kustomize)
// and runs the same checks on what would be applied: generated names with their hash
// suffixes, namespaces, and the configuration as it lands in the ConfigMaps. When
// openssl is there, the overlay's generate.sh makes the keys and certificates first,
// and the certificates are checked: they chain to the domain's CA for the host names
// the configurations use, and the registered workload key is the public half of the
// one generated for the workload. Without kubectl the test skips: kustomize is not part
// of CI's requirements; TestKubernetesManifests checks the sources either way.
func TestKustomizeBuild(t *testing.T) {
	kubectl, tree := kustomizeTree(t)
	overlay := filepath.Join(tree, "overlays", "two-domains")
	// Never read keys a developer generated in the working tree.
	for _, d := range []string{"a", "b"} {
		os.RemoveAll(filepath.Join(overlay, d, "secrets"))
		os.RemoveAll(filepath.Join(overlay, d, "workloads"))
	}
	generated := generateOr(t, overlay, placeholders)

	u, counts := renderOverlay(t, kubectl, overlay, "rendered two-domains")
	for _, ns := range []string{"dialogtrust-a", "dialogtrust-b"} {
		for kind, n := range map[string]int{"Deployment": 2, "StatefulSet": 1, "Service": 3, "PodDisruptionBudget": 2,
			"NetworkPolicy": 1, "ConfigMap": 4, "Secret": 4} {
			if counts[ns+" "+kind] != n {
				t.Errorf("namespace %s: %d %ss, want %d", ns, counts[ns+" "+kind], kind, n)
			}
		}
	}
	if counts[" Namespace"] != 2 {
		t.Errorf("%d Namespaces, want 2", counts[" Namespace"])
	}
	c := &checker{t: t, u: u, missing: map[string]bool{}, configs: map[string]bool{}}
	c.run()
	if len(c.configs) != 4 {
		t.Errorf("%d rendered configurations checked, want 4", len(c.configs))
	}
	if generated {
		checkGenerated(t, overlay)
	}
}

// renderOverlay renders overlay with kubectl kustomize into a unit named dir: its
// objects, and its ConfigMaps' data written to files (so that the checker runs
// -check-config on the rendered text). counts are the objects by "namespace kind".
func renderOverlay(t *testing.T, kubectl, overlay, dir string) (*unit, map[string]int) {
	t.Helper()
	cmd := exec.Command(kubectl, "kustomize", overlay)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, stderr.String())
	}
	objs, err := decodeManifests("rendered", out)
	if err != nil {
		t.Fatal(err)
	}
	u := &unit{dir: dir, objects: objs, data: map[string]map[string]string{}}
	rendered := t.TempDir()
	counts := map[string]int{}
	for _, o := range objs {
		counts[o.ns+" "+o.kind]++
		switch v := o.obj.(type) {
		case *corev1.ConfigMap:
			// Written out, so that the checker runs -check-config on the rendered text.
			u.data[dataKey("ConfigMap", o.ns, o.name)] = writeKeys(t, filepath.Join(rendered, o.ns, o.name), v.Data)
		case *corev1.Secret:
			keys := map[string]string{}
			for k := range v.Data {
				keys[k] = ""
			}
			u.data[dataKey("Secret", o.ns, o.name)] = keys
			// Generated names end in -<hash>.
			if base, _, ok := cutLast(o.name, "-"); ok && strings.HasSuffix(base, "-tls") && v.Type != corev1.SecretTypeTLS {
				t.Errorf("Secret %s/%s has type %q, want kubernetes.io/tls", o.ns, o.name, v.Type)
			}
		}
		if o.kind != "Namespace" && o.ns == "" {
			t.Errorf("%s %s has no namespace", o.kind, o.name)
		}
	}
	return u, counts
}

func runGenerate(t *testing.T, overlay string) {
	t.Helper()
	run := func(args ...string) {
		cmd := exec.Command("bash", append([]string{filepath.Join(overlay, "generate.sh")}, args...)...)
		cmd.Env = cleanEnv(map[string]string{"DIALOGTRUST": command(t, "dialogtrust")})
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("generate.sh %v: %v\n%s", args, err, out)
		}
	}
	run()
	before := snapshot(t, overlay)
	run() // again: keeps what is there
	if after := snapshot(t, overlay); !maps.Equal(before, after) {
		t.Error("a second generate.sh changed the files; it must keep what exists")
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// placeholders writes a stand-in for every generator input that generate.sh would
// write, so that kustomize can render the overlay.
func placeholders(t *testing.T, overlay string) {
	t.Helper()
	for _, d := range []string{"a", "b"} {
		placeholdersIn(t, filepath.Join(overlay, d))
	}
}

// placeholdersIn writes a stand-in for every missing generator input of the
// kustomization in dir.
func placeholdersIn(t *testing.T, dir string) {
	t.Helper()
	u := loadUnit(t, dir)
	for _, s := range u.sources {
		if _, err := os.Stat(s); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(s), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s, []byte("placeholder\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// checkGenerated checks generate.sh's output against the configurations that use it.
func checkGenerated(t *testing.T, overlay string) {
	t.Helper()
	for _, d := range []string{"a", "b"} {
		dir := filepath.Join(overlay, d)
		s := filepath.Join(dir, "secrets")
		roots := checkServingCerts(t, s, filepath.Join(dir, "config"))
		for _, svc := range []string{"wit-issuer", "tts"} {
			for _, f := range []string{svc + ".key", svc + "-signing-key.jwk"} {
				if st, err := os.Stat(filepath.Join(s, f)); err != nil || st.Mode().Perm()&0o077 != 0 {
					t.Errorf("%s/%s: %v; want a private file (mode 0600)", s, f, err)
				}
			}
		}
		// The TTS fetches the wit-issuer's JWKS at this https URL, trusting only the
		// domain's CA (SSL_CERT_FILE): the certificate must be good for that host.
		tts := readServiceConfig(t, filepath.Join(dir, "config", "tts.yaml"))
		wits, _ := tts.get("wits").([]any)
		for _, w := range wits {
			u, _ := url.Parse(w.(map[string]any)["jwks_url"].(string))
			pair, err := tls.LoadX509KeyPair(filepath.Join(s, "wit-issuer.crt"), filepath.Join(s, "wit-issuer.key"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pair.Leaf.Verify(x509.VerifyOptions{DNSName: u.Hostname(), Roots: roots}); err != nil {
				t.Errorf("%s.example: the TTS would not accept the wit-issuer's certificate for %s: %v", d, u.Host, err)
			}
		}
		pub, err := exec.Command(command(t, "dialogtrust"), "key", "public", "--in", filepath.Join(s, d+"1.jwk")).Output()
		if err != nil {
			t.Fatal(err)
		}
		registered, err := os.ReadFile(filepath.Join(dir, "workloads", d+"1.pub.jwk"))
		if err != nil || !bytes.Equal(bytes.TrimSpace(pub), bytes.TrimSpace(registered)) {
			t.Errorf("%s.example: the registered workload key is not the public half of %s1.jwk (%v)", d, d, err)
		}
		for _, svc := range []string{"wit-issuer", "tts"} {
			if err := exec.Command(command(t, "dialogtrust"), "key", "public", "--in", filepath.Join(s, svc+"-signing-key.jwk")).Run(); err != nil {
				t.Errorf("%s.example: %s-signing-key.jwk is not a private JWK: %v", d, svc, err)
			}
		}
	}
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// mountedVolume finds the mount of ct that file lies under (the first whose path is a
// prefix of it): the mounted volume and file's path in it.
func mountedVolume(ct corev1.Container, volumes map[string]corev1.Volume, file string) (corev1.Volume, string, bool) {
	for _, m := range ct.VolumeMounts {
		if rel, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/"); ok {
			return volumes[m.Name], rel, true
		}
	}
	return corev1.Volume{}, "", false
}

// volumeKeys are the keys of a ConfigMap or Secret volume in namespace ns (c.keys: nil
// when the unit does not have its data); ok is false for any other volume.
func (c *checker) volumeKeys(v corev1.Volume, ns, where string) (keys map[string]string, ok bool) {
	switch {
	case v.ConfigMap != nil:
		return c.keys("ConfigMap", ns, v.ConfigMap.Name, where), true
	case v.Secret != nil:
		return c.keys("Secret", ns, v.Secret.SecretName, where), true
	}
	return nil, false
}

// writeKeys writes each key of a ConfigMap's data to a file of its name in dir and
// returns the files by key.
func writeKeys(t *testing.T, dir string, data map[string]string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	for k, d := range data {
		f := filepath.Join(dir, k)
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(d), 0o600); err != nil {
			t.Fatal(err)
		}
		keys[k] = f
	}
	return keys
}
