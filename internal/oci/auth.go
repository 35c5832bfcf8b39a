package oci

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
)

// DockerConfigKey is the key of a kubernetes.io/dockerconfigjson Secret.
const DockerConfigKey = ".dockerconfigjson"

// dockerConfig is the part of a docker config.json that names credentials per registry.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// AuthFromDockerConfig returns the credentials that data (a .dockerconfigjson) holds for
// registry (host[:port]); authn.Anonymous when it holds none. Errors never quote the
// credentials.
func AuthFromDockerConfig(data []byte, registry string) (authn.Authenticator, error) {
	if len(data) == 0 {
		return nil, errors.New("no " + DockerConfigKey + " key")
	}
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, errors.New(DockerConfigKey + " is not a docker config JSON")
	}
	for host, a := range cfg.Auths {
		if normalizeHost(host) != registry {
			continue
		}
		conf := authn.AuthConfig{Username: a.Username, Password: a.Password,
			IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("the auth entry of %s is not base64", registry)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("the auth entry of %s is not user:password", registry)
			}
			conf.Username, conf.Password = user, pass
		}
		return authn.FromConfig(conf), nil
	}
	return authn.Anonymous, nil
}

// normalizeHost reads a config.json key (a host, or a URL as `docker login` once wrote
// them) as host[:port].
func normalizeHost(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	key, _, _ = strings.Cut(key, "/")
	if key == "index.docker.io" || key == "registry-1.docker.io" {
		return "index.docker.io"
	}
	return key
}
