// Command quantity reads quantity strings, one JSON string a line on stdin, and prints for
// each what k8s.io/apimachinery's resource.ParseQuantity makes of it, one JSON object a line:
// {"ok": true, "value": exact decimal, "canonical": Quantity.String()} or {"ok": false}.
// It is the oracle of webhook/kube/quantity.py.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/resource"
)

type answer struct {
	OK        bool   `json:"ok"`
	Value     string `json:"value,omitempty"`
	Canonical string `json:"canonical,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	for in.Scan() {
		var text string
		if err := json.Unmarshal(in.Bytes(), &text); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		a := answer{}
		if q, err := resource.ParseQuantity(text); err == nil {
			a = answer{OK: true, Value: q.AsDec().String(), Canonical: q.String()}
		}
		if err := encoder.Encode(a); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
