package deploy

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestHelmChartServiceMonitorAndSPIRE: with serviceMonitor.enabled each service gets a
// ServiceMonitor (decoded strictly into the Prometheus Operator's type) that selects
// exactly its Service, scrapes /metrics on a port of it over HTTPS and verifies the
// certificate for the Service's name against the CA ConfigMap; with
// witIssuer.spire.enabled the issuer serves with the SVID from the Workload API socket
// in the SPIFFE CSI driver's volume (tls.workload_api_socket), has no TLS Secret, and
// its configuration still passes -check-config.
func TestHelmChartServiceMonitorAndSPIRE(t *testing.T) {
	u := renderChart(t, chartDir, values(t, `
serviceMonitor: {enabled: true}
trust: {caCert: "-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n"}
witIssuer:
  spire: {enabled: true}
  workloads:
    w1.pub.jwk: {kty: OKP, crv: Ed25519, alg: EdDSA, x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
  config:
    auth:
      assertion:
        workloads: [{id: "wimse://example.org/agent/w1", jwk_file: /etc/dialogtrust/workloads/w1.pub.jwk}]
`))
	checkChartUnit(t, u, []string{"Secret tts-signing-key", "Secret tts-tls", "Secret wit-issuer-signing-key"})
	services := map[string]*corev1.Service{}
	monitors := map[string]*monitoringv1.ServiceMonitor{}
	var wit *appsv1.Deployment
	for _, o := range u.objects {
		switch v := o.obj.(type) {
		case *corev1.Service:
			services[o.name] = v
		case *monitoringv1.ServiceMonitor:
			monitors[o.name] = v
		case *appsv1.Deployment:
			if o.name == "wit-issuer" {
				wit = v
			}
		}
	}
	for _, svc := range []string{"wit-issuer", "tts"} {
		m := monitors[svc]
		if m == nil {
			t.Errorf("no ServiceMonitor %s", svc)
			continue
		}
		sel, err := metav1LabelSelector(&m.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		var selected []string
		for name, s := range services {
			if sel.Matches(labels.Set(s.Labels)) {
				selected = append(selected, name)
			}
		}
		if !slices.Equal(selected, []string{svc}) {
			t.Errorf("ServiceMonitor %s selects Services %q, want [%s]", svc, selected, svc)
		}
		if len(m.Spec.Endpoints) != 1 {
			t.Fatalf("ServiceMonitor %s: %d endpoints", svc, len(m.Spec.Endpoints))
		}
		ep := m.Spec.Endpoints[0]
		portOK := false
		for _, p := range services[svc].Spec.Ports {
			portOK = portOK || p.Name == ep.Port
		}
		if !portOK || ep.Path != "/metrics" || ep.Scheme == nil || *ep.Scheme != "https" {
			t.Errorf("ServiceMonitor %s scrapes %v %s on port %q, want https /metrics on a port of the Service", svc, ep.Scheme, ep.Path, ep.Port)
		}
		tc := ep.TLSConfig
		if tc == nil || tc.ServerName == nil || *tc.ServerName != svc+"."+helmNamespace+".svc" || tc.CA.ConfigMap == nil ||
			tc.CA.ConfigMap.Name != "dialogtrust-ca" || tc.CA.ConfigMap.Key != "ca.crt" || (tc.InsecureSkipVerify != nil && *tc.InsecureSkipVerify) {
			t.Errorf("ServiceMonitor %s: TLS %+v, want the Service's name verified against dialogtrust-ca's ca.crt", svc, tc)
		}
		if keys := u.data[dataKey("ConfigMap", helmNamespace, "dialogtrust-ca")]; keys["ca.crt"] == "" {
			t.Error("trust.caCert set, but the chart renders no dialogtrust-ca with ca.crt")
		}
	}
	if wit == nil {
		t.Fatal("no wit-issuer Deployment")
	}
	ct := wit.Spec.Template.Spec.Containers[0]
	volumes := map[string]corev1.Volume{}
	for _, v := range wit.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
		if v.Secret != nil && v.Secret.SecretName == "wit-issuer-tls" {
			t.Error("with SPIRE the issuer still mounts the TLS Secret")
		}
	}
	cfg := readServiceConfig(t, u.data[dataKey("ConfigMap", helmNamespace, "wit-issuer-config")]["wit-issuer.yaml"])
	if cfg.str("tls", "cert_file") != "" {
		t.Error("with SPIRE the configuration still names a certificate file")
	}
	checkSocketMounted(t, ct, volumes, cfg.str("tls", "workload_api_socket"))
	// The registered workload's JWK reaches the issuer as JSON, in the file its
	// configuration names (the checker above found the file mounted).
	jwkFile := u.data[dataKey("ConfigMap", helmNamespace, "wit-issuer-workloads")]["w1.pub.jwk"]
	if jwkFile == "" {
		t.Fatal("no w1.pub.jwk in wit-issuer-workloads")
	}
	var jwk map[string]any
	if b, err := os.ReadFile(jwkFile); err != nil || json.Unmarshal(b, &jwk) != nil || jwk["kty"] != "OKP" || jwk["x"] == nil {
		t.Errorf("w1.pub.jwk is not the JWK of the values: %v %v", jwk, err)
	}
}

// TestHelmChartExternalRedis: with redis.enabled false the chart renders no Redis
// (StatefulSet, Service, NetworkPolicy), and the services' configurations name the
// external addresses, cluster mode, the ACL user and its password file, and TLS with
// the CA from the named ConfigMap, each mounted; -check-config accepts them.
func TestHelmChartExternalRedis(t *testing.T) {
	u := renderChart(t, chartDir, values(t, `
redis:
  enabled: false
  auth: {enabled: true}
  external:
    addrs: ["redis-0.redis.example:6379", "redis-1.redis.example:6379"]
    cluster: true
    tls: {enabled: true, caConfigMapName: redis-ca, serverName: redis.example}
keys: {kind: shared}
`))
	checkChartUnit(t, u, []string{"ConfigMap dialogtrust-ca", "ConfigMap redis-ca", "Secret redis-password",
		"Secret tts-keyring", "Secret tts-tls", "Secret wit-issuer-keyring", "Secret wit-issuer-tls"})
	for _, o := range u.objects {
		if o.name == "redis" {
			t.Errorf("redis.enabled false, but the chart renders %s redis", o.kind)
		}
	}
	for _, svc := range []string{"wit-issuer", "tts"} {
		cfg := readServiceConfig(t, u.data[dataKey("ConfigMap", helmNamespace, svc+"-config")][svc+".yaml"])
		addrs, _ := cfg.get("store", "redis", "addrs").([]any)
		if len(addrs) != 2 || addrs[0] != "redis-0.redis.example:6379" || cfg.get("store", "redis", "cluster") != true ||
			cfg.str("store", "redis", "username") != "dialogtrust" || cfg.str("store", "redis", "tls", "server_name") != "redis.example" ||
			cfg.str("keys", "shared", "secret_file") == "" {
			t.Errorf("%s: store %v keys %v", svc, cfg.get("store"), cfg.get("keys"))
		}
	}
}

func metav1LabelSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s)
}

// TestHelmChartNamePrefix: two releases in one namespace (namePrefix a- and b-) render
// disjoint objects, and each release's selectors, NetworkPolicy and TTS configuration
// name its own wit-issuer and Redis only, never the other release's.
func TestHelmChartNamePrefix(t *testing.T) {
	names := map[string]string{}
	for _, p := range []string{"a-", "b-"} {
		rel := p + "dt"
		out, err := helmTemplate(chartDir, rel, helmNamespace, values(t, "namePrefix: "+p))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeManifests(rel, []byte(out))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			key := o.kind + " " + o.name
			if prev, ok := names[key]; ok {
				t.Errorf("%s rendered by releases %s and %s", key, prev, rel)
			}
			names[key] = rel
			if !strings.HasPrefix(o.name, p) {
				t.Errorf("%s of release %s lacks the prefix %s", key, rel, p)
			}
			switch v := o.obj.(type) {
			case *appsv1.Deployment:
				if v.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] != rel {
					t.Errorf("%s selects pods of any release", key)
				}
			case *networkingv1.NetworkPolicy:
				for _, in := range v.Spec.Ingress {
					for _, from := range in.From {
						if from.PodSelector == nil || from.PodSelector.MatchLabels["app.kubernetes.io/instance"] != rel {
							t.Errorf("%s admits pods of another release", key)
						}
					}
				}
			case *corev1.ConfigMap:
				if o.name == p+"tts-config" {
					var cfg map[string]any
					if err := yaml.Unmarshal([]byte(v.Data["tts.yaml"]), &cfg); err != nil {
						t.Fatal(err)
					}
					c := serviceConfig{raw: cfg}
					wits, _ := c.get("wits").([]any)
					addrs, _ := c.get("store", "redis", "addrs").([]any)
					if len(wits) != 1 || wits[0].(map[string]any)["jwks_url"] != "https://"+p+"wit-issuer."+helmNamespace+".svc/.well-known/jwks.json" ||
						len(addrs) != 1 || addrs[0] != p+"redis:6379" || c.str("issuer") != "https://"+p+"tts."+helmNamespace+".svc" {
						t.Errorf("%s: wits %v, redis %v, issuer %s: not this release's", key, wits, addrs, c.str("issuer"))
					}
				}
			}
		}
	}
}

// TestHelmChartsNeedNoNetwork: rendering needs neither a cluster (client-only dry run)
// nor a chart repository: no chart declares dependencies, which helm would fetch.
func TestHelmChartsNeedNoNetwork(t *testing.T) {
	for _, dir := range []string{chartDir, agentChartDir} {
		ch, err := loader.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ch.Metadata.Dependencies) > 0 || len(ch.Dependencies()) > 0 {
			t.Errorf("%s has dependencies; the tests (and CI) render without a chart repository", dir)
		}
	}
}
