// Package oauthmetrics is the Prometheus face of the token endpoint: an
// oauth.Observer that counts the tokens each grant handler issued and the requests it
// refused, under the metric names and labels the services have always exposed. It is
// the one place of the token endpoint layer that imports Prometheus (packages oauth and
// chaining do not); the TTS registers it on its registry (tts.Config.Registry).
//
// Everything is in metrics.go.
//
// It implements no spec section.
package oauthmetrics
