package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/release"
)

// chartDir is the chart the tests render, from deploy/.
const chartDir = "helm/dialogtrust"

// helmKubeVersion is the Kubernetes version the chart is rendered for
// (Capabilities.KubeVersion): the release whose API types the tests decode into.
const helmKubeVersion = "v1.37.0"

// helmLint runs what `helm lint --strict` runs on dir with vals, in process: every
// message at warning severity or above is an error.
func helmLint(dir string, vals map[string]any) error {
	l := action.NewLint()
	l.Strict = true
	l.Namespace = "dialogtrust"
	kv, err := common.ParseKubeVersion(helmKubeVersion)
	if err != nil {
		return err
	}
	l.KubeVersion = kv
	res := l.Run([]string{dir}, vals)
	var msgs []string
	for _, m := range res.Messages {
		msgs = append(msgs, m.Error())
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("helm lint: %w\n%s", errors.Join(res.Errors...), strings.Join(msgs, "\n"))
	}
	return nil
}

// helmTemplate renders dir with vals as `helm template --namespace ns RELEASE dir`
// does: a client-only dry run of an install, no cluster, no network.
func helmTemplate(dir, releaseName, ns string, vals map[string]any) (string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return "", err
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
	in := action.NewInstall(cfg)
	in.DryRunStrategy = action.DryRunClient
	in.ReleaseName = releaseName
	in.Namespace = ns
	in.Replace = true
	kv, err := common.ParseKubeVersion(helmKubeVersion)
	if err != nil {
		return "", err
	}
	in.KubeVersion = kv
	rel, err := in.RunWithContext(context.Background(), ch, vals)
	if err != nil {
		return "", err
	}
	acc, err := release.NewAccessor(rel)
	if err != nil {
		return "", err
	}
	return acc.Manifest(), nil
}
