package deploy

import (
	"maps"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// pkcs11Values are chart values with keys.kind pkcs11: SoftHSM2's module from the node
// (hostPath), the token by label, the PIN from the Secret hsm-pin.
const pkcs11Values = `
keys:
  kind: pkcs11
  pkcs11:
    module: libsofthsm2.so
    tokenLabel: dialogtrust
    pinSecretName: hsm-pin
    volume: {hostPath: {path: /usr/lib/softhsm, type: Directory}}
    env: [{name: SOFTHSM2_CONF, value: /opt/pkcs11/softhsm2.conf}]
`

// deployments returns the chart's Deployments by name.
func deployments(u *unit) map[string]*appsv1.Deployment {
	out := map[string]*appsv1.Deployment{}
	for _, o := range u.objects {
		if d, ok := o.obj.(*appsv1.Deployment); ok {
			out[o.name] = d
		}
	}
	return out
}

// TestHelmChartPKCS11 (issue 27, "the shared key ring or PKCS#11"): with keys.kind
// pkcs11 both services run their hsm image (built with cgo), and their configurations,
// which the real -check-config of the cgo-built commands accepts (checkChartUnit), have
// exactly the keys.pkcs11 section of the values: the module in the volume mounted
// read-only, the token, the PIN as the file of the PIN Secret's key "pin" (never
// pin_env, never in a ConfigMap), and a key label per service; no key or key-ring
// Secret is mounted. The vendor client's environment reaches the containers.
func TestHelmChartPKCS11(t *testing.T) {
	u := renderChart(t, chartDir, values(t, pkcs11Values))
	checkChartUnit(t, u, []string{"ConfigMap dialogtrust-ca", "Secret hsm-pin", "Secret tts-tls", "Secret wit-issuer-tls"})
	deps := deployments(u)
	for _, svc := range []string{"wit-issuer", "tts"} {
		d := deps[svc]
		if d == nil {
			t.Fatalf("no Deployment %s", svc)
		}
		spec := d.Spec.Template.Spec
		ct := spec.Containers[0]
		if want := "dialogtrust/" + svc + ":dev-hsm"; ct.Image != want {
			t.Errorf("%s runs %s, want the hsm image %s", svc, ct.Image, want)
		}
		cfg := readServiceConfig(t, u.data[dataKey("ConfigMap", helmNamespace, svc+"-config")][svc+".yaml"])
		p, _ := cfg.get("keys", "pkcs11").(map[string]any)
		want := map[string]any{
			"module": "/opt/pkcs11/libsofthsm2.so", "token_label": "dialogtrust",
			"pin_file": "/etc/dialogtrust/hsm/pin", "label": "dialogtrust-" + svc,
		}
		if !maps.Equal(p, want) {
			t.Errorf("%s: keys.pkcs11 %v, want %v", svc, p, want)
		}
		for _, k := range []string{"signing_key_file", "shared", "data_dir"} {
			if cfg.get("keys", k) != nil {
				t.Errorf("%s: keys.%s beside keys.pkcs11", svc, k)
			}
		}
		volumes := map[string]corev1.Volume{}
		for _, v := range spec.Volumes {
			volumes[v.Name] = v
			if v.Secret != nil && (strings.HasSuffix(v.Secret.SecretName, "-signing-key") || strings.HasSuffix(v.Secret.SecretName, "-keyring")) {
				t.Errorf("%s mounts the key Secret %s with keys.kind pkcs11", svc, v.Secret.SecretName)
			}
		}
		var pinFrom, moduleFrom string
		for _, m := range ct.VolumeMounts {
			v := volumes[m.Name]
			if rel, ok := strings.CutPrefix(p["pin_file"].(string), m.MountPath+"/"); ok && v.Secret != nil {
				pinFrom = v.Secret.SecretName + "/" + rel
			}
			if _, ok := strings.CutPrefix(p["module"].(string), m.MountPath+"/"); ok && m.ReadOnly && v.HostPath != nil {
				moduleFrom = v.HostPath.Path
			}
		}
		if pinFrom != "hsm-pin/pin" {
			t.Errorf("%s: pin_file comes from %q, want the key pin of Secret hsm-pin", svc, pinFrom)
		}
		if moduleFrom != "/usr/lib/softhsm" {
			t.Errorf("%s: the module comes from %q, want the read-only hostPath /usr/lib/softhsm", svc, moduleFrom)
		}
		env := map[string]string{}
		for _, e := range ct.Env {
			env[e.Name] = e.Value
		}
		if env["SOFTHSM2_CONF"] != "/opt/pkcs11/softhsm2.conf" {
			t.Errorf("%s: env %v lacks keys.pkcs11.env", svc, env)
		}
		if svc == "tts" && env["SSL_CERT_FILE"] == "" {
			t.Error("tts: SSL_CERT_FILE lost beside keys.pkcs11.env")
		}
	}
	// Nothing of the PIN's: no ConfigMap names pin_env or holds a pin member.
	for key, files := range u.data {
		for name, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "pin_env") || strings.Contains(string(b), "pin:") {
				t.Errorf("%s %s carries a PIN member:\n%s", key, name, b)
			}
		}
	}
}

// TestHelmChartPKCS11ImageVolumeAndSlot: the module from an image volume, the token by
// slot 0 (a zero that a template's truthiness would drop), and a name prefix, which
// gives each release's services key labels of their own in a shared token.
func TestHelmChartPKCS11ImageVolumeAndSlot(t *testing.T) {
	u := renderChart(t, chartDir, values(t, `
namePrefix: a-
keys:
  kind: pkcs11
  pkcs11:
    module: lib/libvendor-pkcs11.so
    slot: 0
    pinSecretName: hsm-pin
    mountPath: /hsm
    volume: {image: {reference: "registry.example/hsm-client:5.1", pullPolicy: IfNotPresent}}
witIssuer: {hsmImage: "registry.example:5000/dialogtrust/wit-issuer:1.2.0-hsm"}
tts: {keys: {label: dt-a-tts}}
`))
	checkChartUnit(t, u, []string{"ConfigMap dialogtrust-ca", "Secret hsm-pin", "Secret tts-tls", "Secret wit-issuer-tls"})
	deps := deployments(u)
	for svc, label := range map[string]string{"wit-issuer": "dialogtrust-a-wit-issuer", "tts": "dt-a-tts"} {
		d := deps["a-"+svc]
		if d == nil {
			t.Fatalf("no Deployment a-%s", svc)
		}
		cfg := readServiceConfig(t, u.data[dataKey("ConfigMap", helmNamespace, "a-"+svc+"-config")][svc+".yaml"])
		if slot, ok := cfg.get("keys", "pkcs11", "slot").(uint64); !ok || slot != 0 || cfg.get("keys", "pkcs11", "token_label") != nil {
			t.Errorf("%s: keys.pkcs11 %v, want slot 0 and no token_label", svc, cfg.get("keys", "pkcs11"))
		}
		if got := cfg.str("keys", "pkcs11", "label"); got != label {
			t.Errorf("%s: label %q, want %q", svc, got, label)
		}
		var image *corev1.ImageVolumeSource
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Image != nil {
				image = v.Image
			}
		}
		if image == nil || image.Reference != "registry.example/hsm-client:5.1" {
			t.Errorf("%s: image volume %+v", svc, image)
		}
	}
	if img := deps["a-wit-issuer"].Spec.Template.Spec.Containers[0].Image; img != "registry.example:5000/dialogtrust/wit-issuer:1.2.0-hsm" {
		t.Errorf("wit-issuer runs %s", img)
	}
}

// TestHelmChartPKCS11NeedsTheHsmImage: the configuration the chart renders for a token
// is refused by -check-config of the commands built without cgo, as the static images
// build them (pkcs11_unavailable): the hsm image is not a preference.
func TestHelmChartPKCS11NeedsTheHsmImage(t *testing.T) {
	u := renderChart(t, chartDir, values(t, pkcs11Values))
	for _, svc := range []string{"wit-issuer", "tts"} {
		f := u.data[dataKey("ConfigMap", helmNamespace, svc+"-config")][svc+".yaml"]
		if err := checkConfigWith(t, commandCgo(t, svc, true), svc, f, nil); err != nil {
			t.Errorf("built with cgo: %v", err)
		}
		err := checkConfigWith(t, commandCgo(t, svc, false), svc, f, nil)
		if err == nil || !strings.Contains(err.Error(), "pkcs11_unavailable") && !strings.Contains(err.Error(), "without cgo") {
			t.Errorf("%s built without cgo accepted keys.pkcs11: %v", svc, err)
		}
	}
}

// TestHelmChartPKCS11RefusesBadValues: lint and template refuse pkcs11 values that
// would not start or would leak the PIN, naming the value: the static image as the
// hsm image, no module, no PIN Secret, no token or two, no volume or two kinds, a
// writable or cluster-internal volume kind, a module outside the volume, a PIN given
// as a value (it would land in a ConfigMap), keys.pkcs11 in a service's config, a
// mount over the chart's own paths, a label a token cannot hold.
func TestHelmChartPKCS11RefusesBadValues(t *testing.T) {
	if err := helmLint(chartDir, values(t, pkcs11Values)); err != nil {
		t.Fatalf("the good values are refused: %v", err)
	}
	for _, tc := range []struct{ name, vals, want string }{
		{"static image", "tts: {hsmImage: dialogtrust/tts:dev}", "hsmImage"},
		{"static image of the other service", "witIssuer: {hsmImage: dialogtrust/wit-issuer:1.0}", "hsmImage"},
		{"no hsm image", "tts: {hsmImage: null}", "hsmImage"},
		{"no module", "keys: {pkcs11: {module: ''}}", "module"},
		{"no module at all", "keys: {pkcs11: {module: null}}", "module"},
		{"no PIN Secret", "keys: {pkcs11: {pinSecretName: ''}}", "pinSecretName"},
		{"a PIN value", "keys: {pkcs11: {pin: '1234'}}", "pin"},
		{"a PIN in the config", "tts: {config: {keys: {pkcs11: {pin_env: HSM_PIN}}}}", "config"},
		{"slot and token label", "keys: {pkcs11: {slot: 1}}", "/keys"},
		{"no token", "keys: {pkcs11: {tokenLabel: ''}}", "/keys"},
		{"negative slot", "keys: {pkcs11: {slot: -1, tokenLabel: ''}}", "slot"},
		{"no volume", "keys: {pkcs11: {volume: null}}", "volume"},
		{"empty volume", "keys: {pkcs11: {volume: {}}}", "volume"},
		{"two volumes", "keys: {pkcs11: {volume: {image: {reference: 'r.example/m:1'}, hostPath: {path: /m}}}}", "volume"},
		{"emptyDir volume", "keys: {pkcs11: {volume: {emptyDir: {}}}}", "volume"},
		{"secret volume", "keys: {pkcs11: {volume: {secret: {secretName: m}}}}", "volume"},
		{"module as an absolute path", "keys: {pkcs11: {module: /usr/lib/libsofthsm2.so}}", "module"},
		{"module outside the volume", "keys: {pkcs11: {module: lib/../../usr/lib/libsofthsm2.so}}", "module"},
		{"mount over the chart's paths", "keys: {pkcs11: {mountPath: /etc/dialogtrust/hsm}}", "mountPath"},
		{"label too long", "tts: {keys: {label: " + strings.Repeat("x", 65) + "}}", "label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Fresh for each call: helm deletes the nulls of the values it is given.
			vals := func() map[string]any {
				base := values(t, pkcs11Values)
				if strings.Contains(tc.vals, "volume: {") {
					// A volume of the case's in place of the good one, not merged into it.
					delete(base["keys"].(map[string]any)["pkcs11"].(map[string]any), "volume")
				}
				return mergeValues(base, values(t, tc.vals))
			}
			lintErr := helmLint(chartDir, vals())
			_, tmplErr := helmTemplate(chartDir, helmRelease, helmNamespace, vals())
			if lintErr == nil || tmplErr == nil {
				t.Fatalf("accepted: lint %v, template %v", lintErr, tmplErr)
			}
			if !strings.Contains(tmplErr.Error(), tc.want) {
				t.Errorf("template error %q does not name %s", tmplErr, tc.want)
			}
		})
	}
}

// mergeValues merges over into a copy of base, as helm merges -f files: maps member by
// member; a null is passed on, and helm deletes the member (its default too).
func mergeValues(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range over {
		switch v := v.(type) {
		case nil:
			out[k] = nil // helm deletes the member, default included
		case map[string]any:
			if b, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(b, v)
				continue
			}
			out[k] = mergeValues(map[string]any{}, v)
		default:
			out[k] = v
		}
	}
	return out
}
