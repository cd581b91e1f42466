// Package deploy holds no code: its tests check the deployment kit in this directory.
//
//   - docker/: one multi-stage Dockerfile per command (static, non-root, distroless; target
//     hsm: built with cgo on distroless/cc, for keys in a PKCS#11 token);
//     checked textually, since the tests cannot run a container build.
//   - compose/: two trust domains (a.example, b.example) and Redis in containers; the
//     compose file is decoded strictly, and every configuration file it mounts must be
//     accepted by the real cmd/wit-issuer or cmd/tts (-check-config).
//   - k8s/: a kustomize base and two overlays, two-domains (a static signing key per
//     service from a Secret) and replicated (three replicas per service sharing a
//     rotating key ring in Redis, Redis with ACL users); every manifest is decoded
//     strictly into the Kubernetes API types, the overlays' JSON patches are applied
//     as kustomize would, and names, selectors, ports, mounts and configuration files
//     are checked against each other.
//   - helm/: two Helm charts, dialogtrust (one trust domain's wit-issuer, TTS and Redis,
//     keys from files or the shared ring, SPIRE, ServiceMonitors) and dialogtrust-agent
//     (an application with dialogtrust proxy as a native sidecar). The tests run helm
//     lint and helm template in process (helm.sh/helm/v4, a client-only dry run), decode
//     every object strictly, run the kustomize checks on them, and compare them with
//     k8s/base and k8s/overlays/replicated rendered for the same settings
//     (helm_test.go says which differences are allowed and why).
//   - local/: up.sh and down.sh run both domains as local processes with a throwaway
//     redis-server; the test obtains a WIT and a Txn-Token from them with the
//     dialogtrust command line and checks that down.sh leaves no process behind.
//
// It is a module of its own so that the Kubernetes API types and Helm, which only these
// tests need, stay out of the services' dependency graph: nothing k8s.io/api or
// k8s.io/apimachinery requires can change a dependency of a service binary. The tests build and run
// the commands of the main module from the repository root and import none of its
// packages. .ci/run vets and tests this module too.
package deploy
