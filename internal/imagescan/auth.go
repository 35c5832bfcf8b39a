package imagescan

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// DockerConfigKey is the key of a kubernetes.io/dockerconfigjson Secret.
const DockerConfigKey = ".dockerconfigjson"

// maxDockerConfig bounds the Secret's value that is decoded.
const maxDockerConfig = 1 << 20

type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
	Token    string `json:"identitytoken"`
}

// ErrNoCredentials: the dockerconfigjson holds no entry for the image's registry.
var ErrNoCredentials = errors.New("the secret holds no credentials for the registry")

// authFor returns the credentials of data (a .dockerconfigjson) for registry; anonymous
// when data is empty. Errors never quote the Secret's content.
func authFor(data []byte, registry name.Registry) (authn.Authenticator, error) {
	if len(data) == 0 {
		return authn.Anonymous, nil
	}
	if len(data) > maxDockerConfig {
		return nil, fmt.Errorf("%s is larger than %d bytes", DockerConfigKey, maxDockerConfig)
	}
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s does not parse as a docker config", DockerConfigKey)
	}
	for key, a := range cfg.Auths {
		if hostOf(key) != registry.RegistryStr() && !(registry.RegistryStr() == name.DefaultRegistry && hostOf(key) == "index.docker.io") {
			continue
		}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("the auth of %s in %s is not base64", key, DockerConfigKey)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("the auth of %s in %s is not user:password", key, DockerConfigKey)
			}
			a.Username, a.Password = user, pass
		}
		return authn.FromConfig(authn.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.Token}), nil
	}
	return nil, fmt.Errorf("%s: %w", registry.RegistryStr(), ErrNoCredentials)
}

// hostOf is the host[:port] of a docker config key (`ghcr.io`, `https://index.docker.io/v1/`).
func hostOf(key string) string {
	if strings.Contains(key, "://") {
		if u, err := url.Parse(key); err == nil {
			return u.Host
		}
	}
	host, _, _ := strings.Cut(key, "/")
	return host
}
