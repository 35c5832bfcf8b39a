package cluster

import (
	"encoding/json"
	"fmt"
)

// maxVersionBody bounds the /version answer read.
const maxVersionBody = 64 << 10

func parseVersion(body []byte) (string, error) {
	if len(body) > maxVersionBody {
		return "", fmt.Errorf("the /version answer is %d bytes", len(body))
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("reading /version: %w", err)
	}
	if v.GitVersion == "" {
		return "", fmt.Errorf("the /version answer has no gitVersion")
	}
	return v.GitVersion, nil
}
