// monitoring-check: decodes the Prometheus Operator objects of a JSON list on stdin strictly into
// the operator's own Go types (github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring),
// as kubeconform -strict would against their CRD schemas: an unknown or misplaced field, or a
// field of the wrong type, is an error. Prints one line per error; exits 1 when there is any.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

func decode(raw json.RawMessage, into any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(into)
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "monitoring-check: cannot read stdin:", err)
		os.Exit(2)
	}
	var objects []json.RawMessage
	if err := json.Unmarshal(input, &objects); err != nil {
		fmt.Fprintln(os.Stderr, "monitoring-check: stdin is not a JSON list:", err)
		os.Exit(2)
	}
	failed := false
	for _, raw := range objects {
		var h header
		if err := json.Unmarshal(raw, &h); err != nil {
			fmt.Println("not an object:", err)
			failed = true
			continue
		}
		var into any
		switch {
		case h.APIVersion == "monitoring.coreos.com/v1" && h.Kind == "ServiceMonitor":
			into = &monitoringv1.ServiceMonitor{}
		case h.APIVersion == "monitoring.coreos.com/v1" && h.Kind == "PrometheusRule":
			into = &monitoringv1.PrometheusRule{}
		default:
			fmt.Printf("%s/%s: not a kind this check knows (%s)\n", h.Kind, h.Metadata.Name, h.APIVersion)
			failed = true
			continue
		}
		if err := decode(raw, into); err != nil {
			fmt.Printf("%s/%s: %v\n", h.Kind, h.Metadata.Name, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}
