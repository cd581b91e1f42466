package oauthmetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// Every grant's outcomes land in the metric names and labels the services expose.
func TestObserverNamesAndLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	o, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	refused := errcode.New(errcode.Replayed, "x")
	for _, r := range []*oauth.Record{
		{Handler: oauth.HandlerTxnToken, Grant: "token_exchange", SubjectTokenType: oauth.TokenTypeSelfSigned, Method: oauth.MethodWPT},
		{Handler: oauth.HandlerTxnToken, Err: refused, Error: oauth.ErrInvalidRequest, Code: errcode.InvalidRequest},
		{Handler: oauth.HandlerChainingGrants, Peer: "https://as.b.example"},
		{Handler: oauth.HandlerChainingAccessTokens, Err: refused, Error: oauth.ErrInvalidGrant, Code: errcode.Replayed},
	} {
		o.Observe(r)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			got[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = ""
		}
	}
	for _, w := range []string{
		"dialogtrust_tts_issued_total{grant=token_exchange,method=wit_wpt,subject_token_type=self_signed}",
		"dialogtrust_tts_refused_total{code=invalid_request,error=invalid_request,grant=none,subject_token_type=none}",
		"dialogtrust_tts_request_duration_seconds{}",
		"dialogtrust_chaining_grants_issued_total{peer=https://as.b.example}",
		"dialogtrust_chaining_access_tokens_refused_total{code=replayed,error=invalid_grant}",
	} {
		if _, ok := got[w]; !ok {
			t.Fatalf("no %s in %v", w, got)
		}
	}
	if len(got) != 5 {
		t.Fatalf("series %v", got)
	}
}

// Txn-Tokens issued are counted in their own series, every time, also once the series
// is cached.
func TestObserverCountsIssuedBySeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	o, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	wpt := &oauth.Record{Handler: oauth.HandlerTxnToken, Grant: "token_exchange", SubjectTokenType: oauth.TokenTypeSelfSigned, Method: oauth.MethodWPT}
	sig := &oauth.Record{Handler: oauth.HandlerTxnToken, Grant: "replacement", SubjectTokenType: oauth.TokenTypeTxnToken, Method: oauth.MethodHTTPSig}
	for range 3 {
		o.Observe(wpt)
	}
	o.Observe(sig)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "dialogtrust_tts_issued_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			got[strings.Join(labels, ",")] = m.GetCounter().GetValue()
		}
	}
	// Labels in name order: grant, method, subject_token_type.
	want := map[string]float64{"token_exchange,wit_wpt,self_signed": 3, "replacement,wit_httpsig,txn_token": 1}
	if len(got) != len(want) || got["token_exchange,wit_wpt,self_signed"] != 3 || got["replacement,wit_httpsig,txn_token"] != 1 {
		t.Fatalf("series %v, want %v", got, want)
	}
}
