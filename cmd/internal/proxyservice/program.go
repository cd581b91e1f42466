package proxyservice

import "github.com/dialogtrust/dialogtrust/cmd/internal/kit"

// Program is the proxy for the service runner (cmd/internal/kit): it reads the
// configuration, checks it (and warns of what an ingress will likely refuse), and
// builds the server; the runner serves and stops it. `dialogtrust proxy` runs it, and
// `dialogtrust dev --proxies` runs it twice with configurations of its own.
var Program = kit.Program[Config]{Name: "proxy", Config: configSpec, Check: checkProxy, Build: buildProxy, Warnings: proxyWarnings}
