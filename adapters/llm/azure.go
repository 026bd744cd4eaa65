package llm

import (
	"fmt"
	"net/url"
	"strings"
)

// AzureConfig is an Azure OpenAI resource. Its requests carry the key in
// an "api-key" header instead of "Authorization: Bearer".
//
// Two URL schemes are spoken. With APIVersion "v1" (the default) the
// resource's v1 API is used: {Endpoint}/openai/v1/responses and
// {Endpoint}/openai/v1/chat/completions, the model field naming the
// deployment. With a dated APIVersion ("2024-10-21", "2025-03-01-preview")
// the deployment-style URLs are used:
// {Endpoint}/openai/deployments/{Deployment}/chat/completions?api-version=V
// and {Endpoint}/openai/responses?api-version=V.
type AzureConfig struct {
	// Endpoint is the resource's URL, such as
	// https://NAME.openai.azure.com. Default: $AZURE_OPENAI_ENDPOINT.
	Endpoint string
	// APIVersion is "v1" or a dated API version. Default:
	// $AZURE_OPENAI_API_VERSION, else $OPENAI_API_VERSION, else "v1".
	APIVersion string
	// Deployment is the deployment that serves the model; "" means
	// $AZURE_OPENAI_DEPLOYMENT, else a deployment named as the model.
	Deployment string
}

// isAzureBase reports whether a base URL names an Azure OpenAI resource.
func isAzureBase(base string) bool {
	u, err := url.Parse(base)
	return err == nil && isAzureHost(strings.ToLower(u.Hostname()))
}

// resolveAzure fills az's defaults from a base URL of the resource
// (https://NAME.openai.azure.com, …/openai/v1, or
// …/openai/deployments/DEPLOYMENT) and the environment.
func resolveAzure(az *AzureConfig, base string, getenv func(string) string) (*AzureConfig, error) {
	out := AzureConfig{}
	if az != nil {
		out = *az
	}
	if out.Endpoint == "" {
		out.Endpoint = base
	}
	if out.Endpoint == "" {
		out.Endpoint = getenv("AZURE_OPENAI_ENDPOINT")
	}
	u, err := url.Parse(out.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: config: Azure endpoint %q is not an http(s) URL such as https://NAME.openai.azure.com (set --base-url or AZURE_OPENAI_ENDPOINT)", out.Endpoint)
	}
	path := strings.Trim(u.Path, "/")
	switch {
	case path == "", path == "openai":
	case path == "openai/v1":
		if out.APIVersion == "" {
			out.APIVersion = "v1"
		}
	case strings.HasPrefix(path, "openai/deployments/"):
		dep := strings.TrimPrefix(path, "openai/deployments/")
		if dep == "" || strings.Contains(dep, "/") {
			return nil, fmt.Errorf("llm: config: Azure URL %q: want …/openai/deployments/DEPLOYMENT", out.Endpoint)
		}
		if out.Deployment == "" {
			out.Deployment = dep
		}
	default:
		return nil, fmt.Errorf("llm: config: Azure URL %q: want the resource's URL (https://NAME.openai.azure.com), …/openai/v1 or …/openai/deployments/DEPLOYMENT", out.Endpoint)
	}
	if v := u.Query().Get("api-version"); v != "" && out.APIVersion == "" {
		out.APIVersion = v
	}
	u.Path, u.RawPath, u.RawQuery = "", "", ""
	out.Endpoint = strings.TrimRight(u.String(), "/")
	if out.APIVersion == "" {
		out.APIVersion = getenv("AZURE_OPENAI_API_VERSION")
	}
	if out.APIVersion == "" {
		out.APIVersion = getenv("OPENAI_API_VERSION")
	}
	if out.APIVersion == "" {
		out.APIVersion = "v1"
	}
	if out.Deployment == "" {
		out.Deployment = getenv("AZURE_OPENAI_DEPLOYMENT")
	}
	return &out, nil
}

// v1 reports whether the resource's v1 API is used.
func (az *AzureConfig) v1() bool { return az.APIVersion == "v1" || az.APIVersion == "preview" }

// query is the api-version query parameter to send, "" for none.
func (az *AzureConfig) query() string {
	if az.APIVersion == "v1" {
		return ""
	}
	return az.APIVersion
}

// base is the base URL the services post "responses" and
// "chat/completions" to. With a dated API version, a Chat Completions
// request goes to chatDeploymentBase instead.
func (az *AzureConfig) base() string {
	if az.v1() {
		return az.Endpoint + "/openai/v1/"
	}
	return az.Endpoint + "/openai/"
}

// chatDeploymentBase is the base URL of a Chat Completions request for
// model under a dated API version ("" under v1, which needs none).
func (az *AzureConfig) chatDeploymentBase(model string) string {
	if az.v1() {
		return ""
	}
	return az.Endpoint + "/openai/deployments/" + url.PathEscape(az.deployment(model)) + "/"
}

// deployment is the deployment that serves model.
func (az *AzureConfig) deployment(model string) string {
	if az.Deployment != "" {
		return az.Deployment
	}
	return model
}
