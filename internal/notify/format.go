package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/forge"
)

// Commit status states (forge's).
const (
	StatePending = forge.StatePending
	StateSuccess = forge.StateSuccess
	StateFailure = forge.StateFailure
	StateError   = forge.StateError
)

// Message is one notification, ready to format for a provider. Secret values are
// already redacted from every text field.
type Message struct {
	Event     Event
	Summary   string
	CommitURL string
	// RepoURL is the GitRepository's URL (commit status providers parse owner/repo from it).
	RepoURL string
	// State and Context are set for commit status providers.
	State, Context string
	// Sources name each source's own revision (and its commit's page) when the event's
	// revision joins several (an Application of spec.sources).
	Sources []SourceFact
}

// SourceFact is one source's revision in a message: `GitRepository/a`, its revision
// and, for a commit on a known forge, the commit's page.
type SourceFact struct {
	Source, Revision, CommitURL string
}

// Title is the first line of a chat message: `Application/ns/name: Applied`.
func (m Message) Title() string { return m.Event.Subject() + ": " + m.Event.Reason }

// facts are the labelled fields every chat format shows.
func (m Message) facts() [][2]string {
	f := [][2]string{}
	if m.Event.Revision != "" {
		rev := m.Event.Revision
		if m.CommitURL != "" {
			rev += " (" + m.CommitURL + ")"
		}
		f = append(f, [2]string{"revision", rev})
	}
	for _, s := range m.Sources {
		rev := s.Revision
		if s.CommitURL != "" {
			rev += " (" + s.CommitURL + ")"
		}
		f = append(f, [2]string{"source " + s.Source, rev})
	}
	if c := m.Event.Chart; c != "" && m.Event.Revision != c+"@"+m.Event.ChartVersion {
		// A chart in Git: the revision is the commit; name the chart version too.
		f = append(f, [2]string{"chart", c + "@" + m.Event.ChartVersion})
	}
	if m.Summary != "" {
		f = append(f, [2]string{"summary", m.Summary})
	}
	return f
}

// text is the whole message as plain text.
func (m Message) text() string {
	var b strings.Builder
	b.WriteString(m.Title())
	b.WriteString("\n")
	b.WriteString(m.Event.Message)
	for _, f := range m.facts() {
		fmt.Fprintf(&b, "\n%s: %s", f[0], f[1])
	}
	return b.String()
}

// Target is where and how to send: the Provider's spec resolved with its Secret.
type Target struct {
	Type, Address, Channel, Token string
	Headers                       map[string]string
}

// Request builds the HTTP request of a message for the target's provider type, following
// each service's documented API.
func Request(ctx context.Context, t Target, m Message) (*http.Request, error) {
	var (
		endpoint = t.Address
		body     any
		header   = http.Header{}
	)
	switch t.Type {
	case gitsyncv1.ProviderSlack:
		body = slackBody(t, m)
		if t.Token != "" {
			// chat.postMessage: https://api.slack.com/methods/chat.postMessage
			if endpoint == "" {
				endpoint = "https://slack.com/api/chat.postMessage"
			}
			header.Set("Authorization", "Bearer "+t.Token)
		}
	case gitsyncv1.ProviderMSTeams:
		body = teamsBody(m)
	case gitsyncv1.ProviderDiscord:
		body = discordBody(t, m)
	case gitsyncv1.ProviderGeneric:
		body = genericBody(m)
	case gitsyncv1.ProviderGitHub, gitsyncv1.ProviderGitLab, gitsyncv1.ProviderGitea:
		return statusRequest(ctx, t, m)
	default:
		return nil, fmt.Errorf("unknown provider type %q", t.Type)
	}
	if endpoint == "" {
		return nil, fmt.Errorf("provider has no address (spec.address or the Secret's address)")
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding the message: %w", err)
	}
	if t.Type == gitsyncv1.ProviderGeneric && t.Token != "" {
		header.Set("X-Signature", Sign([]byte(t.Token), data))
	}
	return newRequest(ctx, endpoint, data, header, t.Headers)
}

// Sign is the generic provider's signature: `sha256=<hex HMAC-SHA256 of the body>`.
func Sign(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func newRequest(ctx context.Context, endpoint string, data []byte, header http.Header, extra map[string]string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(data))
	if err != nil {
		// The URL may come from the Secret: do not repeat it.
		return nil, fmt.Errorf("the provider's address is not a valid URL")
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gitsync-notification")
	return req, nil
}

// slackBody: an incoming webhook or chat.postMessage payload with one attachment
// (https://api.slack.com/messaging/webhooks, https://api.slack.com/reference/surfaces/formatting).
func slackBody(t Target, m Message) map[string]any {
	color := "good"
	if m.Event.Warning() {
		color = "danger"
	}
	fields := []map[string]any{}
	for _, f := range m.facts() {
		fields = append(fields, map[string]any{"title": f[0], "value": slackEscape(f[1]), "short": false})
	}
	title := slackEscape(m.Title())
	body := map[string]any{
		"text": title,
		"attachments": []map[string]any{{
			"color": color, "title": title, "text": slackEscape(m.Event.Message), "fields": fields,
			"mrkdwn_in": []string{"text"},
		}},
	}
	if t.Channel != "" {
		body["channel"] = t.Channel
	}
	if t.Token == "" {
		body["username"] = "gitsync"
	}
	return body
}

// teamsBody: an Adaptive Card message for a Teams incoming webhook / Workflows
// (https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using).
func teamsBody(m Message) map[string]any {
	facts := []map[string]string{}
	for _, f := range m.facts() {
		facts = append(facts, map[string]string{"title": f[0], "value": f[1]})
	}
	color := "Good"
	if m.Event.Warning() {
		color = "Attention"
	}
	return map[string]any{
		"type": "message",
		"attachments": []map[string]any{{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.4",
				"body": []map[string]any{
					{"type": "TextBlock", "text": m.Title(), "weight": "Bolder", "color": color, "wrap": true},
					{"type": "TextBlock", "text": m.Event.Message, "wrap": true},
					{"type": "FactSet", "facts": facts},
				},
			},
		}},
	}
}

// discordBody: an execute-webhook payload with one embed
// (https://discord.com/developers/docs/resources/webhook#execute-webhook).
func discordBody(t Target, m Message) map[string]any {
	color := 0x2eb886
	if m.Event.Warning() {
		color = 0xd93f0b
	}
	fields := []map[string]any{}
	for _, f := range m.facts() {
		fields = append(fields, map[string]any{"name": f[0], "value": discordEscape(f[1])})
	}
	name := "gitsync"
	if t.Channel != "" {
		name = t.Channel
	}
	embed := map[string]any{"title": discordEscape(m.Title()), "description": discordEscape(m.Event.Message), "color": color, "fields": fields}
	if m.CommitURL != "" {
		embed["url"] = m.CommitURL
	}
	// No text of the message may ping anyone (https://discord.com/developers/docs/resources/message#allowed-mentions-object).
	return map[string]any{"username": name, "embeds": []map[string]any{embed}, "allowed_mentions": map[string]any{"parse": []string{}}}
}

// GenericPayload is the JSON body of the generic provider.
type GenericPayload struct {
	InvolvedObject ObjectRef         `json:"involvedObject"`
	Severity       string            `json:"severity"`
	Timestamp      string            `json:"timestamp"`
	Reason         string            `json:"reason"`
	Action         string            `json:"action,omitempty"`
	Message        string            `json:"message"`
	Metadata       map[string]string `json:"metadata,omitempty"`
}

// ObjectRef names the object an event is about.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

func genericBody(m Message) GenericPayload {
	meta := map[string]string{}
	if m.Event.Revision != "" {
		meta["revision"] = m.Event.Revision
	}
	if m.CommitURL != "" {
		meta["commitURL"] = m.CommitURL
	}
	if m.Event.Chart != "" {
		meta["chart"], meta["chartVersion"] = m.Event.Chart, m.Event.ChartVersion
	}
	// Several sources: `revision.GitRepository/a`, `commitURL.GitRepository/a`, …
	for _, s := range m.Sources {
		meta["revision."+s.Source] = s.Revision
		if s.CommitURL != "" {
			meta["commitURL."+s.Source] = s.CommitURL
		}
	}
	if m.Summary != "" {
		meta["summary"] = m.Summary
	}
	return GenericPayload{
		InvolvedObject: ObjectRef{APIVersion: gitsyncv1.GroupVersion.String(), Kind: m.Event.Kind,
			Namespace: m.Event.Namespace, Name: m.Event.Name},
		Severity:  m.Event.Severity(),
		Timestamp: m.Event.Time.UTC().Format("2006-01-02T15:04:05Z"),
		Reason:    m.Event.Reason,
		Action:    m.Event.Action,
		Message:   m.Event.Message,
		Metadata:  meta,
	}
}

// statusRequest sets a commit status on the revision's commit (forge.StatusRequest).
func statusRequest(ctx context.Context, t Target, m Message) (*http.Request, error) {
	sha := Commit(m.Event.Revision)
	if sha == "" {
		return nil, fmt.Errorf("revision %q names no commit", m.Event.Revision)
	}
	repo, err := ParseRepo(m.RepoURL)
	if err != nil {
		return nil, err
	}
	desc := m.Event.Reason + ": " + firstLine(m.Event.Message)
	if m.Summary != "" {
		desc = m.Summary + " " + desc
	}
	ft := forge.Target{Type: t.Type, Address: t.Address, Token: t.Token, Headers: t.Headers, UserAgent: "gitsync-notification"}
	return forge.StatusRequest(ctx, ft, repo, sha, forge.Status{State: m.State, Context: m.Context, Description: desc, TargetURL: m.CommitURL})
}

// slackEscape makes Git's text (commit messages, errors, names) plain text in Slack: the
// control characters &, < and > are escaped as Slack documents, so that no `<!channel>`,
// `<!here>`, `<!everyone>`, `<@U123>` or link survives, and a bare @channel, @here or
// @everyone is broken by a zero-width space so that link_names cannot ping either.
func slackEscape(s string) string {
	s = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
	return breakMentions(s, "@channel", "@here", "@everyone")
}

// discordEscape breaks @everyone and @here (the payload's allowed_mentions already stops
// every ping; this keeps a client that ignores it from pinging too) and user or role
// mentions (<@…>, <@&…>).
func discordEscape(s string) string {
	s = strings.ReplaceAll(s, "<@", "<\u200b@")
	return breakMentions(s, "@everyone", "@here")
}

// breakMentions puts a zero-width space after the @ of each mention, case-insensitively.
func breakMentions(s string, mentions ...string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		hit := ""
		for _, m := range mentions {
			if len(s)-i >= len(m) && strings.EqualFold(s[i:i+len(m)], m) {
				hit = m
				break
			}
		}
		if hit == "" {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString("@\u200b")
		b.WriteString(s[i+1 : i+len(hit)])
		i += len(hit)
	}
	return b.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
