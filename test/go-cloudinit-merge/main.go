// go-cloudinit-merge merges cloud-init user data with the YAML and merge libraries the Go
// driver uses (github.com/ghodss/yaml over gopkg.in/yaml.v2, dario.cat/mergo with
// WithAppendSlice), so tests can compare our merge with Go's, byte by byte and by meaning.
//
// Input on stdin: {"cases":[{"name":"…","documents":["first", "merged into it", …]}]}.
// Each document after the first is merged into what came before, as the driver merges
// --harvester-user-data and then the --harvester-cloud-config file into its own part.
// Output on stdout: {"<name>":{"output":"…"} or {"error":"…"}}, one entry per case.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"dario.cat/mergo"
	"github.com/ghodss/yaml"
)

type input struct {
	Cases []struct {
		Name      string   `json:"name"`
		Documents []string `json:"documents"`
	} `json:"cases"`
}

type result struct {
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// merge parses both documents into maps, merges src into dst (maps key by key, lists
// appended, set values kept) and writes the result back as YAML.
func merge(dst, src string) (string, error) {
	into := map[string]interface{}{}
	from := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(src), &from); err != nil {
		return "", err
	}
	if err := yaml.Unmarshal([]byte(dst), &into); err != nil {
		return "", err
	}
	if err := mergo.Map(&into, from, mergo.WithAppendSlice); err != nil {
		return "", err
	}
	out, err := yaml.Marshal(into)
	return string(out), err
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "go-cloudinit-merge: reading the cases:", err)
		os.Exit(2)
	}
	results := map[string]result{}
	for _, c := range in.Cases {
		if len(c.Documents) == 0 {
			results[c.Name] = result{Error: "no documents"}
			continue
		}
		text := c.Documents[0]
		var err error
		for _, doc := range c.Documents[1:] {
			if text, err = merge(text, doc); err != nil {
				break
			}
		}
		if err != nil {
			results[c.Name] = result{Error: err.Error()}
		} else {
			results[c.Name] = result{Output: text}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		os.Exit(2)
	}
}
