package deploy

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// agentPKCS11Values: the sidecar's assertion and handoff keys in a SoftHSM2 token whose
// module comes from the node.
const agentPKCS11Values = agentValues + `
proxy:
  pkcs11:
    enabled: true
    assertionKeyLabel: w1-assertion
    handoffKeyLabel: w1-handoff
    module: libsofthsm2.so
    tokenLabel: agents
    pinSecretName: agents-hsm-pin
    volume: {hostPath: {path: /usr/lib/softhsm, type: Directory}}
    env: [{name: SOFTHSM2_CONF, value: /opt/pkcs11/softhsm2.conf}]
  config:
    handoff:
      key_file: /etc/dialogtrust/keys/handoff.jwk
      trust_file: /etc/dialogtrust/keys/handoff-trust.json
`

// TestHelmAgentSidecarPKCS11 (issue 27, the proxy's keys in a token): with
// proxy.pkcs11 the sidecar runs the hsm image; its configuration has workload.pkcs11
// and handoff.pkcs11 (labels of the values, the module in the read-only volume, the
// PIN as the file of the PIN Secret) in place of assertion_key_file and
// handoff.key_file; the pod passes the kit's checks, and the real `dialogtrust proxy
// -check-config` accepts the configuration when built with cgo and refuses it
// (pkcs11_unavailable) when built without, as the static image is.
func TestHelmAgentSidecarPKCS11(t *testing.T) {
	u := renderChart(t, agentChartDir, values(t, agentPKCS11Values))
	w := u.workloads()[0]
	c := &checker{t: t, u: u, partial: true, missing: map[string]bool{}, configs: map[string]bool{}}
	c.checkPod(w, "Deployment w1")
	if want := []string{"ConfigMap dialogtrust-ca", "Secret agents-hsm-pin", "Secret w1-proxy-keys", "Secret w1-proxy-tls"}; !slices.Equal(sortedKeys(c.missing), want) {
		t.Errorf("the agent chart refers to %q that it does not create, want %q", sortedKeys(c.missing), want)
	}
	proxy := w.tmpl.Spec.InitContainers[0]
	if proxy.Image != "dialogtrust/dialogtrust:dev-hsm" {
		t.Errorf("the sidecar runs %s, want the hsm image", proxy.Image)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range w.tmpl.Spec.Volumes {
		volumes[v.Name] = v
	}
	file := resolveMounted(t, c, proxy, volumes, proxy.Args[slices.Index(proxy.Args, "--config")+1])
	if file == "" {
		t.Fatal("no configuration file")
	}
	cfg := readServiceConfig(t, file)
	for section, label := range map[string]string{"workload": "w1-assertion", "handoff": "w1-handoff"} {
		p, _ := cfg.get(section, "pkcs11").(map[string]any)
		want := map[string]any{"module": "/opt/pkcs11/libsofthsm2.so", "token_label": "agents", "pin_file": "/etc/dialogtrust/hsm/pin", "label": label}
		if !maps.Equal(p, want) {
			t.Errorf("%s.pkcs11 %v, want %v", section, p, want)
		}
	}
	if cfg.get("workload", "assertion_key_file") != nil || cfg.get("handoff", "key_file") != nil {
		t.Error("a key file beside the key in the token")
	}
	if cfg.str("handoff", "trust_file") == "" {
		t.Error("handoff.trust_file lost")
	}
	var pinFrom, moduleFrom string
	for _, m := range proxy.VolumeMounts {
		v := volumes[m.Name]
		if rel, ok := strings.CutPrefix("/etc/dialogtrust/hsm/pin", m.MountPath+"/"); ok && v.Secret != nil {
			pinFrom = v.Secret.SecretName + "/" + rel
		}
		if strings.HasPrefix("/opt/pkcs11/libsofthsm2.so", m.MountPath+"/") && m.ReadOnly && v.HostPath != nil {
			moduleFrom = v.HostPath.Path
		}
	}
	if pinFrom != "agents-hsm-pin/pin" || moduleFrom != "/usr/lib/softhsm" {
		t.Errorf("the PIN comes from %q, the module from %q", pinFrom, moduleFrom)
	}
	env := map[string]string{}
	for _, e := range proxy.Env {
		env[e.Name] = e.Value
	}
	if env["SOFTHSM2_CONF"] == "" || env["SSL_CERT_FILE"] == "" {
		t.Errorf("the sidecar's env %v", env)
	}
	if err := checkProxyConfigWith(t, commandCgo(t, "dialogtrust", true), file); err != nil {
		t.Errorf("built with cgo: %v", err)
	}
	if err := checkProxyConfigWith(t, commandCgo(t, "dialogtrust", false), file); err == nil || !strings.Contains(err.Error(), "without cgo") {
		t.Errorf("built without cgo, the proxy accepted its keys in a token: %v", err)
	}
}

// TestHelmAgentSidecarPKCS11RefusesBadValues: as the services' chart, the agent chart
// refuses the static image as the hsm image, a missing module, PIN Secret, token or
// volume, a PIN or a pkcs11 section in the proxy's config, and a token that holds none
// of the proxy's keys; a handoff key without a handoff section fails the render.
func TestHelmAgentSidecarPKCS11RefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name, vals, want string
		renderOnly       bool // lint renders in lint mode, where required only warns
	}{
		{"static image", "proxy: {hsmImage: dialogtrust/dialogtrust:dev}", "hsmImage", false},
		{"no module", "proxy: {pkcs11: {module: ''}}", "module", false},
		{"no PIN Secret", "proxy: {pkcs11: {pinSecretName: ''}}", "pinSecretName", false},
		{"a PIN value", "proxy: {pkcs11: {pin: '1234'}}", "pin", false},
		{"no token", "proxy: {pkcs11: {tokenLabel: ''}}", "/proxy/pkcs11", false},
		{"slot and token label", "proxy: {pkcs11: {slot: 0}}", "/proxy/pkcs11", false},
		{"no volume", "proxy: {pkcs11: {volume: null}}", "volume", false},
		{"no key in the token", "proxy: {pkcs11: {assertionKeyLabel: '', handoffKeyLabel: ''}}", "/proxy/pkcs11", false},
		{"pkcs11 in the config", "proxy: {config: {workload: {pkcs11: {pin_env: PIN}}}}", "/proxy/config/workload", false},
		{"module outside the volume", "proxy: {pkcs11: {module: ../etc/m.so}}", "module", false},
		{"handoff key without handoff", "proxy: {config: {handoff: null}}", "handoff", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := func() map[string]any { return mergeValues(values(t, agentPKCS11Values), values(t, tc.vals)) }
			lintErr := helmLint(agentChartDir, vals())
			_, tmplErr := helmTemplate(agentChartDir, helmRelease, helmNamespace, vals())
			if tmplErr == nil || (lintErr == nil && !tc.renderOnly) {
				t.Fatalf("accepted: lint %v, template %v", lintErr, tmplErr)
			}
			if !strings.Contains(tmplErr.Error(), tc.want) {
				t.Errorf("template error %q does not name %s", tmplErr, tc.want)
			}
		})
	}
}
