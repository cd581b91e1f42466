package deploy

import (
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// agentValues are the sidecar values of the operator guide's example: an agent whose
// application listens on 8000 and gets the egress's URL in DIALOGTRUST_EGRESS.
const agentValues = `
name: w1
app:
  image: example/agent:0.1.0
  port: 8000
  livenessProbe: {httpGet: {path: /healthz, port: app}}
  readinessProbe: {httpGet: {path: /healthz, port: app}}
`

// TestHelmAgentSidecar renders the agent chart with the sidecar values and checks the
// pod it gives: the proxy is a native sidecar (started before the application), its
// configuration reaches it from the chart's ConfigMap at the path its --config names
// and the real `dialogtrust proxy -check-config` accepts it; every file it names is in
// a mounted volume; the application reaches the egress over loopback (the egress
// listens on 127.0.0.1:P and the application's DIALOGTRUST_EGRESS is
// http://127.0.0.1:P), and the ingress forwards to the application's port on loopback;
// the Service and the NetworkPolicy admit callers to the ingress and the operational
// port only, never to the application's port.
func TestHelmAgentSidecar(t *testing.T) {
	u := renderChart(t, agentChartDir, values(t, agentValues))
	var dep *appsv1.Deployment
	var svc *corev1.Service
	var np *networkingv1.NetworkPolicy
	for _, o := range u.objects {
		switch v := o.obj.(type) {
		case *appsv1.Deployment:
			dep = v
		case *corev1.Service:
			svc = v
		case *networkingv1.NetworkPolicy:
			np = v
		}
	}
	if dep == nil || svc == nil || np == nil {
		t.Fatalf("want a Deployment, a Service and a NetworkPolicy; got %d objects", len(u.objects))
	}
	// The kit's pod checks: security contexts, resources, probes, volumes.
	c := &checker{t: t, u: u, partial: true, missing: map[string]bool{}, configs: map[string]bool{}}
	w := u.workloads()[0]
	c.checkPod(w, "Deployment w1")
	if want := []string{"ConfigMap dialogtrust-ca", "Secret w1-proxy-keys", "Secret w1-proxy-tls"}; !slices.Equal(sortedKeys(c.missing), want) {
		t.Errorf("the agent chart refers to %q that it does not create, want %q", sortedKeys(c.missing), want)
	}
	spec := dep.Spec.Template.Spec
	if spec.HostNetwork {
		t.Error("the pod uses the host's network: its loopback ports would be every pod's on the node")
	}
	if len(spec.InitContainers) != 1 || spec.InitContainers[0].Name != "proxy" || !isSidecar(spec.InitContainers[0]) {
		t.Fatalf("want the proxy as the one native sidecar (init container, restartPolicy Always), got %+v", spec.InitContainers)
	}
	proxy := spec.InitContainers[0]
	if proxy.StartupProbe == nil {
		t.Error("the sidecar has no startup probe: the application could start before the egress listens")
	}
	if len(spec.Containers) != 1 || spec.Containers[0].Name != "app" {
		t.Fatalf("want one application container, got %d", len(spec.Containers))
	}
	app := spec.Containers[0]
	if img, _, _ := strings.Cut(proxy.Image, ":"); img != "dialogtrust/dialogtrust" || !slices.Equal(proxy.Args[:1], []string{"proxy"}) {
		t.Errorf("the sidecar runs %s %q, want dialogtrust/dialogtrust proxy", proxy.Image, proxy.Args)
	}

	// The configuration: --config names a key of the mounted ConfigMap.
	i := slices.Index(proxy.Args, "--config")
	if i < 0 || i+1 >= len(proxy.Args) {
		t.Fatalf("sidecar args %q name no --config", proxy.Args)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	file := resolveMounted(t, c, proxy, volumes, proxy.Args[i+1])
	if file == "" {
		t.Fatalf("--config %s is not a key of a ConfigMap the chart renders and mounts in the sidecar", proxy.Args[i+1])
	}
	if err := checkProxyConfig(t, file); err != nil {
		t.Fatal(err)
	}
	cfg := readServiceConfig(t, file)
	for member, f := range cfg.files() {
		if _, found := mountedKey(c, proxy, volumes, f); !found {
			t.Errorf("%s %s is in no volume mounted in the sidecar", member, f)
		}
	}
	for _, e := range proxy.Env {
		if e.Name == "SSL_CERT_FILE" {
			if _, found := mountedKey(c, proxy, volumes, e.Value); !found {
				t.Errorf("SSL_CERT_FILE %s is in no volume mounted in the sidecar", e.Value)
			}
		}
	}

	// The application reaches the egress over loopback: same pod, same network
	// namespace, and nothing outside the pod reaches a loopback port.
	host, port := splitHostPort(t, "egress.listen", cfg.str("egress", "listen"))
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("egress.listen %s: not a loopback address", cfg.str("egress", "listen"))
	}
	egressURL := ""
	for _, e := range app.Env {
		if e.Name == "DIALOGTRUST_EGRESS" {
			egressURL = e.Value
		}
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d", port); egressURL != want {
		t.Errorf("the application's DIALOGTRUST_EGRESS is %q, want %q (the egress's listener)", egressURL, want)
	}
	if _, ok := containerPort(proxy, intstr.FromInt32(int32(port))); ok {
		t.Errorf("the egress port %d is a container port: it is for the pod's loopback only", port)
	}

	// The ingress forwards to the application's port on loopback, and listens on the
	// sidecar's ingress port, which the Service targets.
	appPort, ok := containerPort(app, intstr.FromString("app"))
	if !ok {
		t.Fatal("the application declares no port named app")
	}
	if got, want := cfg.str("ingress", "upstream"), fmt.Sprintf("http://127.0.0.1:%d", appPort); got != want {
		t.Errorf("ingress.upstream %q, want %q", got, want)
	}
	_, inPort := splitHostPort(t, "ingress.listen", cfg.str("ingress", "listen"))
	if p, ok := containerPort(proxy, intstr.FromString("ingress")); !ok || int(p) != inPort {
		t.Errorf("ingress.listen port %d is not the sidecar's port named ingress (%d)", inPort, p)
	}
	if cfg.str("ingress", "tls", "cert_file") == "" {
		t.Error("the ingress serves without TLS")
	}
	_, opsPort := splitHostPort(t, "listen", cfg.str("listen"))
	for _, probe := range []*corev1.Probe{proxy.StartupProbe, proxy.LivenessProbe, proxy.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Fatal("a sidecar probe is not an HTTP GET")
		}
		if p, _ := containerPort(proxy, probe.HTTPGet.Port); int(p) != opsPort {
			t.Errorf("probe %s on port %d, the operational listener is on %d", probe.HTTPGet.Path, p, opsPort)
		}
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Error("the Service does not select the agent's pods")
	}
	for _, p := range svc.Spec.Ports {
		if cp, _ := containerPort(proxy, p.TargetPort); int(cp) != inPort {
			t.Errorf("the Service's port %s targets %s, not the ingress", p.Name, p.TargetPort.String())
		}
	}
	// The NetworkPolicy admits the ingress and the operational port, and nothing else.
	sel := np.Spec.PodSelector
	if !selects(t, &sel, w) {
		t.Error("the NetworkPolicy does not apply to the agent's pods")
	}
	var admitted []int
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Error("a NetworkPolicy rule admits every port, the application's too")
		}
		for _, p := range rule.Ports {
			if p.Port == nil {
				t.Error("a NetworkPolicy rule admits every port")
				continue
			}
			cp, ok := containerPort(proxy, *p.Port)
			if !ok {
				t.Errorf("the NetworkPolicy admits port %s, which is not the sidecar's", p.Port.String())
			}
			admitted = append(admitted, int(cp))
		}
	}
	slices.Sort(admitted)
	if want := []int{opsPort, inPort}; !slices.Equal(admitted, want) {
		t.Errorf("the NetworkPolicy admits ports %v, want %v (the operational port and the ingress)", admitted, want)
	}
}

// TestHelmAgentSidecarSPIRE: with proxy.spire.enabled the sidecar takes its X.509-SVID
// from the Workload API: the configuration names the socket in the volume the SPIFFE
// CSI driver mounts, and the real proxy accepts it.
func TestHelmAgentSidecarSPIRE(t *testing.T) {
	vals := values(t, agentValues+`
proxy:
  spire: {enabled: true}
  config:
    trust_domains: [example.org]
    workload:
      id: spiffe://example.org/agent/w1
      wit_issuer: https://wit-issuer.dialogtrust.svc
      auth: x509svid
      server_id: spiffe://example.org/wit-issuer
    wits:
      - {trust_domain: example.org, jwks_url: "https://wit-issuer.dialogtrust.svc/.well-known/jwks.json"}
    egress:
      tts: {token_endpoint: "https://tts.dialogtrust.svc/token", issuer: "https://tts.dialogtrust.svc", self_signed_subject: alice@example.org}
      routes:
        - {prefix: /t1, upstream: "https://t1.example.org/mcp", audience: example.org, recipient: "https://t1.example.org/"}
    ingress:
      audiences: [https://w1.example.org/]
      txn_tokens: {jwks_url: "https://tts.dialogtrust.svc/.well-known/jwks.json"}
`)
	u := renderChart(t, agentChartDir, vals)
	w := u.workloads()[0]
	proxy := w.tmpl.Spec.InitContainers[0]
	volumes := map[string]corev1.Volume{}
	for _, v := range w.tmpl.Spec.Volumes {
		volumes[v.Name] = v
	}
	c := &checker{t: t, u: u, partial: true, missing: map[string]bool{}, configs: map[string]bool{}}
	c.checkPod(w, "Deployment w1")
	file := resolveMounted(t, c, proxy, volumes, proxy.Args[slices.Index(proxy.Args, "--config")+1])
	if err := checkProxyConfig(t, file); err != nil {
		t.Fatal(err)
	}
	cfg := readServiceConfig(t, file)
	checkSocketMounted(t, proxy, volumes, cfg.str("workload", "workload_api", "socket"))
}

// checkSocketMounted: a unix:// Workload API address lies in a volume of the SPIFFE
// CSI driver mounted in ct.
func checkSocketMounted(t *testing.T, ct corev1.Container, volumes map[string]corev1.Volume, addr string) {
	t.Helper()
	p, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		t.Fatalf("Workload API address %q is not unix://", addr)
	}
	for _, m := range ct.VolumeMounts {
		if strings.HasPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/") {
			if v := volumes[m.Name]; v.CSI == nil || v.CSI.Driver != "csi.spiffe.io" {
				t.Errorf("the socket %s is in volume %s, not the SPIFFE CSI driver's", p, m.Name)
			}
			return
		}
	}
	t.Errorf("the Workload API socket %s is in no volume mounted in %s", p, ct.Name)
}

// checkProxyConfig runs `dialogtrust proxy -check-config -config file`, the real
// loader and checks.
func checkProxyConfig(t *testing.T, file string) error {
	t.Helper()
	return checkProxyConfigWith(t, command(t, "dialogtrust"), file)
}

// checkProxyConfigWith is checkProxyConfig with the binary bin (commandCgo).
func checkProxyConfigWith(t *testing.T, bin, file string) error {
	t.Helper()
	cmd := exec.Command(bin, "proxy", "-check-config", "-config", file)
	cmd.Env = cleanEnv(nil)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dialogtrust proxy -check-config -config %s: %v\n%s", file, err, out)
	}
	return nil
}

// mountedKey finds the ConfigMap or Secret key a path in ct comes from: its source
// file when the unit has the data, and whether the path lies in a mounted volume that
// has (or, unresolved, may have) that key.
func mountedKey(c *checker, ct corev1.Container, volumes map[string]corev1.Volume, file string) (string, bool) {
	v, rel, ok := mountedVolume(ct, volumes, file)
	if !ok {
		return "", false
	}
	keys, ok := c.volumeKeys(v, helmNamespace, ct.Name)
	if !ok {
		return "", false
	}
	if keys == nil {
		return "", true // a Secret the operator creates
	}
	src, ok := keys[rel]
	return src, ok
}

func resolveMounted(t *testing.T, c *checker, ct corev1.Container, volumes map[string]corev1.Volume, file string) string {
	t.Helper()
	src, _ := mountedKey(c, ct, volumes, file)
	return src
}

func splitHostPort(t *testing.T, what, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s %q: %v", what, addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%s %q: %v", what, addr, err)
	}
	return h, n
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
